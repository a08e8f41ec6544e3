"""DP baselines of the DPBench protocol (Hay et al., SIGMOD 2016) not elsewhere in the library.

Every plan here is a bounded differential privacy baseline, i.e.
(epsilon, FullDomain)-Blowfish privacy: two datasets are neighbours when
one record changes its value, so the number of records n is public (He,
Machanavajjhala, Ding, SIGMOD 2014, 000 Sec 4.2).  A plan's first argument
is the public size (1-D: an int), shape (a tuple) or a
:class:`~blowfish_privacy.Policy` whose secrets are ``FullDomain`` on an
ordinal domain (the shape is then its domain's; this lets ``audit.exact``
call the plan with a policy).  ``measure`` adds integer noise from the
library's exact discrete Laplace sampler only; the post-processing is
float.  Each plan's docstring states its guarantee, sensitivity, runtime
and papers; each functional form (``hb(hist, epsilon, generator)`` is
``plan_hb(hist.size, epsilon).measure(hist, generator)``) shows its plan's.

This module holds Uniform (any shape) and the 1-D baselines:

``plan_uniform``
    The estimate n / |T| in every cell: free under bounded DP, or
    DPBench's Uniform with a noisy total.
``plan_hb``
    HB (Qardaji, Yang, Li, PVLDB 2013): the hierarchical method with the
    branching factor of :func:`hb_branching`.
``plan_mwem`` (in :mod:`.mwem`)
    MWEM (Hardt, Ligett, McSherry, NeurIPS 2012) for 1-D range workloads,
    with report-noisy-max over discrete Laplace noise in place of the
    exponential mechanism, so no real-valued sampling reaches a release.

The 2-D baselines (``plan_hb2d``, ``plan_ugrid``, ``plan_agrid`` and their
functional forms) are in :mod:`.grids_2d`, the quadtree in :mod:`.quadtree`;
:mod:`blowfish_privacy.baselines` exports every baseline.
``tests/baselines/test_dp_baselines.py`` audits the plans exactly with
``audit.exact`` on tiny domains and checks MWEM's selection step by exact
enumeration.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import as_int, check_epsilon
from ..noise import Generator, calibration, discrete_laplace_variance
from ..mechanisms._dp import (
    CITE_HB,
    CITE_UNIFORM,
    DP,
    dp_shape,
    release,
)
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of, not_a_release
from ..mechanisms._trees import best_branching
from ..mechanisms.cumulative.cumulative import CumulativeRelease, plan_hierarchical
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["hb", "hb_branching", "plan_hb", "plan_uniform", "uniform"]

# ---------------------------------------------------------------------------
# Uniform


def plan_uniform(
    shape: int | tuple[int, ...] | Policy, epsilon: Real, *, noisy_total: bool = False,
) -> Plan[HistogramRelease]:
    """Plan Uniform: the total spread evenly over every cell (DPBench's plainest baseline).

    Parameters
    ----------
    shape : int, tuple of int, or a FullDomain Policy
        The public shape of the histogram (any number of axes).
    epsilon : float or Fraction, > 0
    noisy_total : bool
        Measure the total with noise (DPBench's Uniform) instead of using
        the public n.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of that shape and
        returns a :class:`HistogramRelease` whose ``histogram`` (float64,
        same shape) holds total / |T| in every cell.

    Raises
    ------
    ValueError, TypeError
        A shape with a side < 1, a policy that is not ``FullDomain`` on an
        ordinal domain without constraints, an epsilon that is not positive
        and finite, or a ``noisy_total`` that is not a bool.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public.  Default: the output reads
    only n, the same for every pair of neighbours, so nothing is spent
    (epsilon spent 0, no noise part).  ``noisy_total=True``: the total gets
    discrete Laplace noise of scale 1/epsilon (rounded up: the epsilon
    spent is at most epsilon) and is clipped at 0, which is epsilon-DP even
    when records are added or removed (000 Thm 5.1).

    Sensitivity
    -----------
    Default: 0, exact (no noise): n does not change between bounded
    neighbours.  ``noisy_total=True``: 1, recorded as an upper bound: adding
    or removing a record changes the total by 1 (DPBench's unbounded
    setting); under bounded DP it does not change at all.

    Runtime
    -------
    O(|T|): one sum, at most one draw, one fill.

    References
    ----------
    .. [1] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (the Uniform baseline).
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 4.2 (bounded DP as Blowfish privacy under the complete graph), Thm 5.1.
    """
    shp, pol = dp_shape(shape)
    eps = check_epsilon(epsilon)
    if not isinstance(noisy_total, bool):
        raise TypeError(f"noisy_total must be a bool, got {noisy_total!r}")
    cells = math.prod(shp)
    memory = check_memory(int64_bytes(2 * cells), size=cells, parameter="shape" if len(shp) > 1 else "size",
                          mechanism="uniform")
    parts: tuple[NoisePart, ...]
    if noisy_total:
        cal = calibration(1, eps)
        scale = cal.scale
        parts = (NoisePart("total", 1, False, "upper bound: add/remove one record changes the total by 1 "
                           "(DPBench's Uniform); under bounded DP the total is public and does not change",
                           cal.epsilon_exact, scale, 1),)
        var = discrete_laplace_variance(scale)
    else:
        scale, parts, var = Fraction(0), (), 0.0

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        n = int(hist.sum())
        if noisy_total:
            total = max(float(gen.add_discrete_laplace(np.array([n], dtype=np.int64), scale)[0]), 0.0)
        else:
            total = float(n)
        est = np.full(shp, total / cells, dtype=np.float64)
        return release(plan, est, gen, {"noisy_total": noisy_total, "scale": scale})

    return Plan(
        mechanism="uniform", policy=pol,
        guarantee=DP + ("; the total measured with noise of scale 1/epsilon" if noisy_total
                         else "; reads only n, spends epsilon 0"),
        citation=CITE_UNIFORM, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"total_variance": var, "note": "plus the data-dependent bias of uniform spreading"},
        memory_bytes=memory, runtime="O(|T|)",
        options={"noisy_total": noisy_total}, model="DP", check=check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# HB


@not_a_release(
    'O(log^2 |T|): one candidate b per tree height (the smallest b of that height), in exact integers.',
    "Qardaji, Yang, Li. *Understanding Hierarchical Methods for Differentially Private Histograms.* PVLDB 6(14), 2013, eq. 3 (HB's choice of the branching factor).",
    'Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private Algorithms using DPBench.* SIGMOD 2016 (HB among the 1-D baselines). ',
)
def hb_branching(size: int) -> int:
    """HB's branching factor: the b in 2..size minimising Qardaji, Yang and Li's eq. 3.

    V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3 with h = ceil(log_b size), the
    average variance (in units of one level's noise) of a random range
    query answered by a b-ary tree, compared as 3 V(b) in exact integer
    arithmetic; ties go to the smaller b.  V grows with b for a fixed h, so
    only the smallest b of each height is compared (ceil(log2 size)
    candidates): the same choice as trying every b, for any size.  For 4096 and for 256 this is 16,
    for small sizes the flat tree b = size (h = 1); 2 for sizes 1 and 2.
    DPBench chooses HB's branching the same way.

    Parameters
    ----------
    size : int >= 1
        The number of values |T| (public).

    Returns
    -------
    int
        The branching factor b >= 2.

    Raises
    ------
    ValueError, TypeError
        ``size`` not an integer >= 1.
    """
    N = as_int(size, "size")
    if N < 1:
        raise ValueError(f"size must be >= 1, got {N}")
    return best_branching(N, lambda b, h: 3 * (b - 1) * h ** 3 - 2 * (b + 1) * h ** 2)   # 3 V(b)


def plan_hb(size: int | Policy, epsilon: Real, *, keep_noisy: bool = False) -> Plan[CumulativeRelease]:
    """Plan HB in 1-D: the hierarchical method with the branching factor b = :func:`hb_branching`.

    :func:`~blowfish_privacy.mechanisms.plan_hierarchical` with
    ``fanout=b``: noisy counts of every node of a b-ary tree below its
    root, least-squares consistency, isotonic regression of the cumulative
    counts.

    Parameters
    ----------
    size : int >= 1 or a 1-D FullDomain Policy
        The number of values |T| (public).
    epsilon : float or Fraction, > 0
    keep_noisy : bool
        Keep the pre-inference cumulative estimates in the release.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of shape (|T|,) and
        returns a :class:`CumulativeRelease` (float64 cumulative counts,
        shape (|T|,), non-decreasing, last = n); ``plan.options["branching"]``
        is b.

    Raises
    ------
    ValueError, TypeError
        A size < 1, a policy that is not 1-D ``FullDomain`` on an ordinal
        domain without constraints, or an epsilon that is not positive and
        finite.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public: the root (n) is public and
    gets no noise; every node of the h = ceil(log_b |T|) levels below it
    gets discrete Laplace noise of scale 2h/epsilon (rounded up: the
    epsilon spent is at most epsilon), 000 Thm 5.1.  b depends on the
    public size only.  No noise when |T| = 1 (h = 0).

    Sensitivity
    -----------
    2h, exact (2 per level): a moved record leaves one node and enters one
    node of every level below the root, changing two counts of the level
    by one each (none when both values share the node), and two values in
    different top-level subtrees reach 2h.

    Runtime
    -------
    O(log^2 |T|) to choose b; the measurement is O(|T|): one draw per node,
    tree sums, two-pass least squares and isotonic regression, in C.

    References
    ----------
    .. [1] Qardaji, Yang, Li. *Understanding Hierarchical Methods for Differentially Private Histograms.*
        PVLDB 6(14), 2013 (HB: the branching factor of eq. 3).
    .. [2] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010 (the hierarchical method and least-squares consistency).
    .. [3] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (HB among the 1-D baselines).
    """
    shp, pol = dp_shape(size, dims=1)
    N = shp[0]
    b = hb_branching(N)
    p = plan_hierarchical(N, epsilon, fanout=b, keep_noisy=keep_noisy)
    return replace(p, mechanism="hb", policy=pol, citation=CITE_HB,
                   options={**p.options, "branching": b,
                            "branching_rule": "QYL VLDB 2013 eq. 3 minimised over b = 2..|T|"})


@guarantee_of(plan_uniform)
def uniform(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, noisy_total: bool = False,
) -> HistogramRelease:
    """Uniform: the total spread evenly over every cell.

    ``plan_uniform(hist.shape, epsilon, noisy_total=noisy_total).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, any shape
        Exact non-negative counts.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    noisy_total : bool
        As :func:`plan_uniform`.

    Returns
    -------
    HistogramRelease
        float64 of the shape of ``hist``, total / |T| in every cell.
    """
    h = np.asarray(hist)
    return plan_uniform(h.shape, epsilon, noisy_total=noisy_total).measure(h, generator)


@guarantee_of(plan_hb)
def hb(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, keep_noisy: bool = False,
) -> CumulativeRelease:
    """HB in 1-D: the hierarchical method with HB's branching factor, with consistency.

    ``plan_hb(hist.size, epsilon, keep_noisy=keep_noisy).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts of the 1-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    keep_noisy : bool
        As :func:`plan_hb`.

    Returns
    -------
    CumulativeRelease
        The consistent cumulative counts (float64, shape (|T|,), last = n).
    """
    h = np.asarray(hist)
    return plan_hb(h.size, epsilon, keep_noisy=keep_noisy).measure(h, generator)
