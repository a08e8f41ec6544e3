"""Exact expected error of the 2-D data-independent linear DPBench baselines, and its check.

Part of :mod:`.dpbench` (``--check-expected --dims 2``).  Every mechanism
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

from .. import Generator, audit
from .._progress import progress_bar
from ..baselines import grids_2d
from ..mechanisms import plan_laplace
from ..mechanisms.grids import grid
from ..baselines.grids_2d import ugrid_cells
from ..mechanisms._trees import tree_height
from ..noise import discrete_laplace_variance
from ._dpbench_algorithms import pol_full2
from ._dpbench_data import (
    SYNTHETIC,
    data_seed,
    default_data_dir,
    load_shape,
    merge,
    random_ranges,
    range_sums,
    sample,
)

__all__ = ["EXPECTED_2D", "check_expected_2d", "expected_setup", "measured_vs_expected", "tree_pinv"]

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
    with the fields of :data:`.dpbench.EXPECTED_FIELDS`: ``ratio`` is
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
    :data:`.dpbench.EXPECTED_FIELDS` (``ratio`` = measured / expected,
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
