"""MWEM (Hardt, Ligett, McSherry, NeurIPS 2012) for 2-D rectangle workloads: a DP baseline.

The algorithm of :mod:`.mwem` (the same core) with rectangles as the query
set: report-noisy-max with discrete Laplace noise picks the worst answered
rectangle, a discrete Laplace measurement of its count, and
multiplicative-weights passes over every measurement so far, on a 2-D
histogram.  DPBench's reference MWEM (``mwemND``) runs the same algorithm
on N-D data.  Bounded differential privacy, i.e. (epsilon,
FullDomain)-Blowfish privacy with n public.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import check_epsilon
from ..noise import Generator
from ..mechanisms._dp import dp_shape
from ..mechanisms._docs import guarantee_of
from ..mechanisms.histogram import HistogramRelease
from .mwem import DEFAULT_PASSES, DEFAULT_ROUNDS, check_boxes, plan_boxes, dyadic_range_count, dyadic_ranges
from ..mechanisms.plan import Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["plan_mwem_2d", "mwem_2d"]


def _dyadic_rectangles(rows: int, cols: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(lo, hi) of every product of a dyadic row range and a dyadic column range, shape (q, 2) each."""
    R, C = dyadic_ranges(rows), dyadic_ranges(cols)
    i = np.repeat(np.arange(R.shape[0]), C.shape[0])
    j = np.tile(np.arange(C.shape[0]), R.shape[0])
    lo = np.column_stack([R[i, 0], C[j, 0]])
    hi = np.column_stack([R[i, 1], C[j, 1]])
    return lo, hi


def plan_mwem_2d(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, rounds: int = DEFAULT_ROUNDS,
    rectangles: npt.ArrayLike | None = None, passes: int = DEFAULT_PASSES, average: bool = False,
) -> Plan[HistogramRelease]:
    """Plan MWEM (Hardt, Ligett, McSherry 2012) for a workload of 2-D rectangle counts.

    As :func:`~blowfish_privacy.baselines.plan_mwem` with rectangles:
    T = ``rounds`` rounds, each with epsilon / T, half to select the worst
    answered rectangle of the (public) workload by report-noisy-max, half
    to measure its count with discrete Laplace noise (a measured rectangle
    is no candidate again until every one has been measured); after each
    round ``passes`` multiplicative-weights passes over every measurement
    so far update the estimate A (total n, public; uniform at the start).
    Returns the last A (as DPBench's MWEM) or the average of the T
    estimates (``average=True``).  Defaults: DPBench's reference MWEM (10
    rounds, half of epsilon to the selections, 100 passes).

    Parameters
    ----------
    shape : (rows, cols) of ints >= 1 or a 2-D FullDomain Policy
        The grid (public).
    epsilon : float or Fraction, > 0
    rounds : int >= 1
        T.
    rectangles : int array of shape (q, 4), optional
        The workload, rows (r1, r2, c1, c2): the rows r1..r2 and the
        columns c1..c2, inclusive (public; DPBench's layout).  Default:
        every product of a dyadic row range and a dyadic column range
        (:func:`~blowfish_privacy.baselines.mwem.dyadic_ranges` per axis).
    passes : int >= 1
        Multiplicative-weights passes over all measurements after each
        round.
    average : bool
        Release the average of the T estimates instead of the last.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of shape
        (rows, cols) and returns a :class:`HistogramRelease` whose
        ``histogram`` is the estimate A (float64, shape (rows, cols),
        summing to n); ``params`` holds the chosen rectangles (row indices
        of the workload) and their noisy measurements.

    Raises
    ------
    ValueError, TypeError
        A shape that is not two positive sizes, a policy that is not 2-D
        ``FullDomain`` on an ordinal domain without constraints, an epsilon
        that is not positive and finite, rounds outside [1,
        :data:`~blowfish_privacy.baselines.mwem.MAX_ROUNDS`], passes
        outside [1, :data:`~blowfish_privacy.baselines.mwem.MAX_PASSES`],
        more than :data:`~blowfish_privacy.baselines.mwem.MAX_UPDATES`
        updates in all, rectangles not of shape (q, 4) inside the grid, an ``average``
        that is not a bool, or a grid whose measurement needs more memory
        than a plan may ask for.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public.  Round t spends
    epsilon / (2T) on the selection (report-noisy-max, discrete Laplace of
    scale 2 / eps_s) and epsilon / (2T) on the measurement (discrete
    Laplace of scale 1 / eps_m), scales rounded up; the steps read only
    earlier noisy outputs and n, so they compose adaptively: the spend is
    at most epsilon.  The proof of the selection is in the Notes of
    :func:`~blowfish_privacy.baselines.plan_mwem`; the update passes are
    post-processing.

    Sensitivity
    -----------
    Measurement: 1, exact: a record moved from cell u to cell v changes a
    rectangle's count by 1_R(v) - 1_R(u), in {-1, 0, 1}.  Selection: the
    scores |round(q_i(A)) - q_i(x)| have sensitivity 1 in every coordinate,
    in any directions; calibrated as 2 (recorded as 2 x 1, a bound), as in
    1-D.

    Runtime
    -------
    O(T (q + |T|) + P T^2 |T|) for q rectangles, |T| = rows x cols cells
    and P passes: the q scores of a round from a 2-D prefix-sum table (four
    look-ups each), each update touching its rectangle only.

    References
    ----------
    .. [1] Hardt, Ligett, McSherry. *A Simple and Practical Algorithm for Differentially Private Data
        Release.* NeurIPS 2012, Fig. 1 (MWEM) and its practical improvements (every measurement reused in
        repeated multiplicative-weights updates).
    .. [2] Dwork, Roth. *The Algorithmic Foundations of Differential Privacy.* Foundations and Trends in
        Theoretical Computer Science 9(3-4), 2014, Sec 3.3 (report noisy max, Claim 3.9).
    .. [3] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (MWEM among the 2-D baselines, run on N-D data with the
        workload as its query set).
    """
    shp, pol = dp_shape(shape, dims=2)
    rows, cols = shp
    eps = check_epsilon(epsilon)
    boxes: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | Callable[[], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    if rectangles is None:
        nq = dyadic_range_count(rows) * dyadic_range_count(cols)
        check_memory(int64_bytes(8 * nq), size=rows * cols, parameter="shape", mechanism="mwem_2d")

        def dyadic() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
            return _dyadic_rectangles(rows, cols)
        boxes = dyadic
    else:
        boxes = check_boxes(rectangles, shp, "rectangles")
        nq = int(boxes[0].shape[0])
    return plan_boxes(shp, pol, eps, rounds=rounds, passes=passes, boxes=boxes, nq=nq, average=average,
                       mechanism="mwem_2d", workload="dyadic rectangles" if rectangles is None else "given",
                       aggregate_words=5 * rows * cols + 2 * (rows + cols))


@guarantee_of(plan_mwem_2d)
def mwem_2d(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, rounds: int = DEFAULT_ROUNDS,
    rectangles: npt.ArrayLike | None = None, passes: int = DEFAULT_PASSES, average: bool = False,
) -> HistogramRelease:
    """MWEM for 2-D rectangle workloads, with report-noisy-max over discrete Laplace noise.

    ``plan_mwem_2d(hist.shape, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal grid.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    rounds, rectangles, passes, average
        As :func:`plan_mwem_2d`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (rows, cols), summing to n).
    """
    h = np.asarray(hist)
    if h.ndim != 2:
        raise ValueError(f"hist must be a 2-D array of counts, got shape {h.shape}")
    return plan_mwem_2d(h.shape, epsilon, rounds=rounds, rectangles=rectangles, passes=passes,
                        average=average).measure(h, generator)
