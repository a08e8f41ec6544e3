"""The expected-error checks of DPBench's data-independent linear baselines (``--check-expected``).

In 1-D (:func:`check_expected`) the plans of identity, h, hierarchical, hb
and greedyh carry the exact mean squared error of a uniformly random range;
the check measures it on many releases.  In 2-D (``--dims 2``,
:func:`check_expected_2d`) the exact error is computed here.  Every mechanism
here releases ``est = B x + L z``: a fixed linear map of the histogram x
plus a fixed linear map of independent noise z of one variance v (discrete
Laplace of the plan's scale).  For a rectangle query q the error
q.(est - x) has the exact mean square

    (q.(B x - x))^2 + v ||L^T q||^2,

and the check compares its mean over a workload of rectangles with the
mean squared error measured on many releases.

``identity``
    Laplace on every cell: B = I, L = I, ||L^T q||^2 = area(q).
``hb2d`` / ``hb2d_qyl``
    The tensor product of two complete fan-out-f trees over the padded
    axes, every (row level, column level) node pair noisy with one
    variance, least squares by Hay et al.'s two passes per axis, i.e. the
    pseudo-inverse (H kron H)^+ = H^+ kron H^+ (unbiased: B = I).  A
    rectangle r x c gives ||L^T q||^2 = ||r^T H^+||^2 ||c^T H^+||^2, with
    H^+ computed from the explicit 1-D tree matrix.
``ugrid``
    m x m uniform grid, noisy cell counts spread uniformly: B x is the
    zero-noise release (its bias is data dependent but exact for the
    sample measured), L e_j the release of a zero histogram with unit noise
    on cell count j.  The grid size m is fixed from the sample's n (what
    the benchmark's UGrid picks for it).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import Generator, audit, baselines, mechanisms
from .._progress import progress_bar
from ..baselines import grids_2d
from ..baselines.grids_2d import ugrid_cells
from ..mechanisms import plan_laplace
from ..mechanisms._trees import tree_height
from ..mechanisms.grids import grid
from ..noise import discrete_laplace_variance
from ._dpbench_algorithms import pol_full2
from ._dpbench_data import (
    SYNTHETIC,
    allranges_1d,
    data_seed,
    default_data_dir,
    load_shape,
    merge,
    random_ranges,
    range_sums,
    sample,
)
from ._output import text_table

__all__ = ["EXPECTED_2D", "EXPECTED_FIELDS", "EXPECTED_PLANS", "allranges_mse", "check_expected", "check_expected_2d",
           "expected_setup", "expected_table", "measured_vs_expected", "tree_pinv"]

EXPECTED_2D = ("identity", "hb2d", "hb2d_qyl", "ugrid")


def tree_pinv(f: int, h: int) -> np.ndarray:
    """H^+ (shape (f^h, nodes)) of the complete fan-out-f tree of height h, nodes root first, level by level."""
    M = f ** h
    rows = []
    for d in range(h + 1):
        w = f ** (h - d)
        blk = np.zeros((f ** d, M))
        for j in range(f ** d):
            blk[j, j * w:(j + 1) * w] = 1.0
        rows.append(blk)
    return np.linalg.pinv(np.vstack(rows))


def _range_norms(P: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """||sum_{i=lo}^{hi} P[i, :]||^2 per range."""
    C = np.vstack([np.zeros((1, P.shape[1])), np.cumsum(P, axis=0)])
    V = C[hi + 1] - C[lo]
    return np.einsum("ij,ij->i", V, V)


def _rect_sums(img: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Sums of ``img`` over the inclusive rectangles (rows (r1, r2, c1, c2)) of ``ranges``."""
    return range_sums(img.cumsum(0).cumsum(1), ranges)


class _UnitNoise(audit.RecordingGenerator):
    """Adds 1 to the j-th noisy value (the response of the release to one unit of noise)."""

    def __init__(self, j):
        super().__init__()
        self.j = j

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, dtype=np.int64).ravel().copy()
        arr[self.j] += 1
        return arr.reshape(np.shape(values))


def _plan_and_expected(alg: str, k: int, eps: float, truth: np.ndarray, ranges: np.ndarray):
    """(plan, exact expected MSE over ``ranges``) for one algorithm."""
    r1, r2, c1, c2 = ranges.T
    if alg == "identity":
        plan = plan_laplace((k, k), sensitivity=2, epsilon=eps, policy=pol_full2(k),
                            how="histogram under bounded DP: one record moves, two cells change")
        v = discrete_laplace_variance(plan.parts[0].scale)
        area = (r2 - r1 + 1) * (c2 - c1 + 1)
        return plan, float(v * area.mean())
    if alg in ("hb2d", "hb2d_qyl"):
        plan = (grid.plan_grid_hierarchical(pol_full2(k), eps, fanout=16, levels="tensor") if alg == "hb2d"
                else grids_2d.plan_hb2d((k, k), eps))
        f = plan.options["fanout"]
        P = tree_pinv(f, tree_height(k, f))
        v = plan.expected_error["per_node_variance"]
        return plan, float(v * np.mean(_range_norms(P, r1, r2) * _range_norms(P, c1, c2)))
    if alg == "ugrid":
        m = min(ugrid_cells(int(truth.sum()), eps), k)
        plan = grids_2d.plan_ugrid((k, k), eps, cells=m)
        bias = _rect_sums(plan.measure(truth, audit.RecordingGenerator()).histogram - truth, ranges)
        zero = np.zeros((k, k), dtype=np.int64)
        noise = np.zeros(ranges.shape[0])
        for j in range(m * m):
            noise += _rect_sums(plan.measure(zero, _UnitNoise(j)).histogram, ranges) ** 2
        v = discrete_laplace_variance(plan.parts[0].scale)
        return plan, float(np.mean(bias ** 2 + v * noise))
    raise ValueError(f"--check-expected --dims 2 covers {', '.join(EXPECTED_2D)}; got {alg!r}")


def expected_setup(algorithms, covered, flag: str, *, repetitions: int, domain: int, full: int, dataset: str,
                   dims: int, scale: int, seed: int, data_dir):
    """The public options of an expected-error check, checked, and its one data sample.

    ``algorithms`` (None: every one ``covered``) must be among ``covered``
    (the message names ``flag``), ``repetitions`` >= 2 (for a standard
    error), ``domain`` a divisor of ``full`` (the side of the stored data).
    Returns ``(algorithms, truth, rng)``: the sample of ``scale`` records
    (deterministic seed) and the generator it was drawn with, for a
    workload drawn next.
    """
    algorithms = tuple(covered if algorithms is None else algorithms)
    for a in algorithms:
        if a not in covered:
            raise ValueError(f"{flag} covers {', '.join(covered)}; got {a!r}")
    if repetitions < 2:
        raise ValueError(f"repetitions must be >= 2 for a standard error, got {repetitions}")
    if domain < 2 or full % domain:
        raise ValueError(f"domain {domain}: must divide {full}")
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    rng = np.random.default_rng(data_seed(seed, dataset, scale, domain, "expected"))
    truth = sample(merge(load_shape(dataset, dims, data_dir), domain), int(scale), rng)
    return algorithms, truth, rng


def measured_vs_expected(algorithms, plan_of, error_of, truth, *, label: str, progress, domain: int, epsilon,
                         scale: int, repetitions: int) -> list[dict]:
    """Per algorithm, the mean of ``repetitions`` measured errors against the exact expected one.

    ``plan_of(a)`` gives ``(plan, expected MSE)``, ``error_of(plan,
    release)`` the MSE of one release of ``truth`` (secure noise).  Rows
    with the fields of :data:`EXPECTED_FIELDS`: ``ratio`` is
    measured / expected, ``ratio_se`` its standard error (sample standard
    deviation of the per-release MSE / sqrt(repetitions) / expected).
    """
    gen = Generator()
    out = []
    with progress_bar(len(algorithms) * repetitions, label, enabled=progress) as bar:
        for a in algorithms:
            plan, expected = plan_of(a)
            vals = np.empty(repetitions)
            for r in range(repetitions):
                vals[r] = error_of(plan, plan.measure(truth, gen))
                bar.advance()
            mean, se = float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(repetitions))
            out.append({"algorithm": a, "domain": domain, "epsilon": float(epsilon), "scale": int(scale),
                        "repetitions": repetitions, "expected_mse": expected, "measured_mse": mean,
                        "standard_error": se, "ratio": mean / expected, "ratio_se": se / expected})
    return out


def check_expected_2d(*, domain: int = 64, epsilon: float = 0.1, scale: int = 100_000, repetitions: int = 1000,
                      algorithms=None, dataset: str = SYNTHETIC, data_dir=None, seed: int = 2016,
                      queries: int = 2000, progress: bool | None = None) -> list[dict]:
    """Measured vs exact expected MSE of random rectangles (``queries`` of them), per 2-D algorithm.

    One data sample and one workload (deterministic seeds); ``repetitions``
    releases with secure noise.  Returns rows with the fields of
    :data:`EXPECTED_FIELDS` (``ratio`` = measured / expected,
    ``ratio_se`` its standard error).
    """
    algorithms, truth, rng = expected_setup(
        algorithms, EXPECTED_2D, "--check-expected --dims 2", repetitions=repetitions, domain=domain, full=256,
        dataset=dataset, dims=2, scale=scale, seed=seed, data_dir=data_dir)
    ranges = random_ranges(domain, 2, int(queries), rng)

    def error_of(plan, rel):
        est = np.asarray(rel.histogram if hasattr(rel, "histogram") else rel.values, dtype=np.float64)
        return float(np.mean(_rect_sums(est - truth, ranges) ** 2))

    return measured_vs_expected(algorithms, lambda a: _plan_and_expected(a, domain, epsilon, truth, ranges),
                                error_of, truth, label="expected error 2-D", progress=progress, domain=domain,
                                epsilon=epsilon, scale=scale, repetitions=repetitions)


# -- 1-D: the plans carry the exact error ----------------------------------------------------------------


#: 1-D data-independent linear baselines whose plans carry the exact pre-inference all-range MSE.
EXPECTED_PLANS = {
    "identity": lambda k, e: mechanisms.plan_identity(k, e, keep_noisy=True),
    "h": lambda k, e: mechanisms.plan_hierarchical(k, e, fanout=2, keep_noisy=True),
    "hierarchical": lambda k, e: mechanisms.plan_hierarchical(k, e, fanout=16, keep_noisy=True),
    "hb": lambda k, e: baselines.plan_hb(k, e, keep_noisy=True),
    "greedyh": lambda k, e: baselines.plan_greedyh(k, e),   # after least squares: "range_query_mse"
}
EXPECTED_FIELDS = ["algorithm", "domain", "epsilon", "scale", "repetitions", "expected_mse", "measured_mse",
                   "standard_error", "ratio", "ratio_se"]


def allranges_mse(err_cum: np.ndarray) -> float:
    """Mean of (P[j] - P[i])^2 over 0 <= i < j <= k, P = (0, err_cum): every range [i, j-1], in O(k)
    (the closed form of :func:`._dpbench_data._allranges_1d`)."""
    return allranges_1d(np.asarray(err_cum, dtype=np.float64))[1]


def check_expected(*, domain: int = 4096, epsilon: float = 0.1, scale: int = 100_000, repetitions: int = 1000,
                   algorithms=None, dataset: str = SYNTHETIC, data_dir=None, seed: int = 2016,
                   progress: bool | None = None) -> list[dict]:
    """Measured vs exact expected all-range MSE of the pre-inference release, per algorithm.

    One data sample (deterministic seed; the error of these mechanisms does
    not depend on the data), ``repetitions`` releases with secure noise.
    Returns one dict per algorithm (:data:`EXPECTED_FIELDS`): ``ratio`` is
    measured / expected, ``ratio_se`` its standard error (sample standard
    deviation of the per-release MSE / sqrt(repetitions) / expected).
    """
    algorithms, truth, _ = expected_setup(
        algorithms, EXPECTED_PLANS, "--check-expected", repetitions=repetitions, domain=domain, full=4096,
        dataset=dataset, dims=1, scale=scale, seed=seed, data_dir=data_dir)
    true_cum = np.cumsum(truth).astype(np.float64)
    pre_key = "range_query_mse_before_inference"

    def plan_of(a):
        plan = EXPECTED_PLANS[a](domain, epsilon)
        return plan, float(plan.expected_error[pre_key if pre_key in plan.expected_error else "range_query_mse"])

    def error_of(plan, rel):
        pre = pre_key in plan.expected_error
        return allranges_mse((rel.noisy_cumulative if pre else np.cumsum(rel.histogram)) - true_cum)

    return measured_vs_expected(algorithms, plan_of, error_of, truth, label="expected error", progress=progress,
                                domain=domain, epsilon=epsilon, scale=scale, repetitions=repetitions)


def expected_table(rows: list[dict], what: str = "all-range MSE of the pre-inference release") -> str:
    head = ["algorithm", "expected MSE", "measured MSE", "ratio", "+- s.e.", "within 5%"]
    lines = [head] + [[r["algorithm"], f"{r['expected_mse']:.4g}", f"{r['measured_mse']:.4g}", f"{r['ratio']:.4f}",
                       f"{r['ratio_se']:.4f}", "yes" if abs(r["ratio"] - 1) <= 0.05 else "NO"] for r in rows]
    r0 = rows[0] if rows else {}
    return text_table(f"Expected-error check: {what}, domain {r0.get('domain')}, "
                      f"epsilon {r0.get('epsilon')}, {r0.get('repetitions')} releases each", lines)
