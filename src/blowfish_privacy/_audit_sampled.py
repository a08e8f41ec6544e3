"""The statistical privacy auditor: many seeded runs on one neighbour pair.

For outputs with no exact distribution (post-processed or real-valued):
a one-sided Clopper-Pearson test of the ratio of output frequencies per
bin, Bonferroni-corrected over bins and directions.  A PASS is not a
proof; a FAIL means the ratio exceeds e^epsilon in some bin with the
stated confidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._optional import require_scipy
from ._validation import as_int, check_epsilon
from ._typing import Real
from .noise import Generator

__all__ = ["SampledAuditReport", "sampled"]


@dataclass(frozen=True)
class SampledAuditReport:
    """Verdict of :func:`sampled`.

    ``ok`` is False only when some output bin's log-ratio is above epsilon
    with the stated confidence (a one-sided test, Bonferroni-corrected over
    bins); ``max_log_ratio`` is the point estimate, ``lower_bound`` the
    largest confidence lower bound, ``witness`` the bin attaining it.
    """

    ok: bool
    max_log_ratio: float
    lower_bound: float
    epsilon: float
    confidence: float
    runs: int
    witness: object


def _clopper_pearson(k: int, n: int, alpha: float, side: str) -> float:
    from scipy.stats import beta

    if side == "lower":
        return 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    return 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))


def sampled(
    mechanism: Callable[[Any, Generator], Any],
    d1: Any,
    d2: Any,
    *,
    epsilon: Real,
    runs: int = 20_000,
    statistic: Callable[[Any], float] | None = None,
    bins: int | Sequence[float] | None = None,
    confidence: float = 0.99,
    seed: int = 0,
) -> SampledAuditReport:
    """Statistical audit of any mechanism on one neighbour pair.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, generator)`` returning an output.
    d1, d2 : object
        The two neighbouring inputs.
    epsilon : float
        The claimed epsilon.
    runs : int
        Seeded runs per input.
    statistic : callable, optional
        Maps an output to a number (default: the output itself).
    bins : int or sequence, optional
        Histogram bins for real-valued statistics (default: exact values).
    confidence : float
        Confidence of the one-sided test.
    seed : int
        Seeds the runs (reproducible audit).

    Notes
    -----
    A PASS is not a proof (only exact audits prove); a FAIL means the ratio
    exceeds e^epsilon in some bin with the stated confidence.
    """
    require_scipy("the sampled audit (its Clopper-Pearson intervals)")
    eps = float(check_epsilon(epsilon))
    runs = as_int(runs, "runs", minimum=10)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    stat = statistic if statistic is not None else (lambda o: o)
    g1, g2 = Generator(seed=seed), Generator(seed=seed + 1)
    x1 = np.array([float(stat(mechanism(d1, g1))) for _ in range(runs)])
    x2 = np.array([float(stat(mechanism(d2, g2))) for _ in range(runs)])
    if bins is None:
        values = np.unique(np.concatenate([x1, x2]))
        c1 = np.searchsorted(values, x1)
        c2 = np.searchsorted(values, x2)
        k1 = np.bincount(c1, minlength=values.size)
        k2 = np.bincount(c2, minlength=values.size)
        labels = values
    else:
        edges = np.histogram_bin_edges(np.concatenate([x1, x2]), bins=bins)
        k1 = np.histogram(x1, edges)[0]
        k2 = np.histogram(x2, edges)[0]
        labels = list(zip(edges[:-1], edges[1:]))
    alpha = (1 - confidence) / max(len(k1), 1) / 2  # Bonferroni over bins and directions
    best_point, best_lower, witness = 0.0, -math.inf, None
    for idx in range(len(k1)):
        for ka, kb in ((k1[idx], k2[idx]), (k2[idx], k1[idx])):
            if ka == 0:
                continue
            point = math.log(ka / kb) if kb else math.inf
            lower = math.log(max(_clopper_pearson(int(ka), runs, alpha, "lower"), 1e-300)) - math.log(
                _clopper_pearson(int(kb), runs, alpha, "upper")
            )
            best_point = max(best_point, point)
            if lower > best_lower:
                best_lower, witness = lower, labels[idx]
    return SampledAuditReport(
        ok=best_lower <= eps,
        max_log_ratio=best_point,
        lower_bound=best_lower,
        epsilon=eps,
        confidence=confidence,
        runs=runs,
        witness=witness,
    )
