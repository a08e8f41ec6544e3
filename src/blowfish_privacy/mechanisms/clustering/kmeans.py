"""SuLQ k-means under Blowfish policies, with exact per-iteration sensitivity.

:func:`~.methods.kmeans` (in :mod:`.methods`) runs the grid mechanism by
default (:mod:`.kmeans_grid`, ``method="grid"``, or EUGkM's ``"eugkm"``)
and SuLQ with ``method="sulq"``; everything below is SuLQ's
(:func:`plan_kmeans`).

Privacy guarantee
    SuLQ with policy P = (T, G, I_n) and ``epsilon`` satisfies
    (epsilon, P)-Blowfish privacy (000 Def 4.2): each of the ``iterations``
    rounds releases the noisy cluster sizes and the noisy cluster sums
    (relative to public reference points) with the discrete Laplace
    mechanism calibrated to their policy-specific sensitivity *given the
    public centroids of that round* (000 Thm 5.1); the centroids of a round
    are post-processing of earlier releases, so the rounds compose
    sequentially (000 Thm 4.1) and ``result.epsilon_exact`` (the exact sum of
    the spends) is never more than ``epsilon``.  Only integer noise from the
    exact sampler reaches a release.
Plan, then measure
    :func:`plan_kmeans` validates everything from public inputs and fixes
    the per-round split (round 1's calibration too when ``init`` is given);
    ``plan.measure(points, generator)`` runs the rounds on any n >= 0
    points (n < k included) and never raises or branches visibly on them:
    a cluster whose noisy size is below 1 keeps its centroid, a random start
    is drawn from the domain with the generator, out-of-domain points are
    clamped into the domain's box, and sums that could overflow int64 are
    accumulated exactly.  ``kmeans(..., method="sulq")`` is plan then measure.
Sensitivity (DESIGN sec 5, the k-means erratum)
    000 Lemma 6.1 gives ``2 theta`` (``max_A 2|A|``, ``2 d(P)``) for the
    sums, which only covers an edge (x, y) whose ends fall in the *same*
    cluster (the sums change by ``x - y``).  When x falls in cluster i and y
    in cluster j != i, cluster i's sum loses ``x - r_i`` and cluster j's
    gains ``y - r_j``: the L1 change is ``||x - r_i||_1 + ||y - r_j||_1``,
    which can far exceed ``2 theta``.  Here::

        S_size = 2 if some edge of G crosses two clusters, else 0
        S_sum  = max over edges (x, y) of ||x - y||_1        (same cluster)
                                          ||x - r_i||_1 + ||y - r_j||_1   (else)

    computed by a C scan of the domain (:func:`kmeans_sensitivity`): exactly
    for FullDomain, Attribute and Partition (cliques: per block and cluster
    maxima), exactly for distance thresholds and custom graphs on small
    domains (every edge), and as a proven upper bound for distance
    thresholds on large domains (cells within the edge length of a
    bisector), marked as such in the history.
Citation
    He, Machanavajjhala, Ding, SIGMOD 2014, 000 Sec 6 (SuLQ k-means, Lemma
    6.1, Fig 1); Machanavajjhala, Kifer, CACM 2015, 002 (Fig 2); SuLQ:
    Blum, Dwork, McSherry, Nissim, PODS 2005.
Runtime
    Per iteration, one fused assignment pass over the n points (O(n k d),
    C, about as fast as scikit-learn's Lloyd kernel on one thread; see
    benchmarks/bench_kmeans.py) and one sensitivity scan of the domain:
    O(|T| k d) for cliques and for the bisector bound, O(|T| m) for the
    exact edge scan with m edge offsets.
Utility
    Every centroid coordinate is ``r + (sum + Z_s) / (size + Z_c)`` with
    discrete Laplace noise of scales ``S_sum / eps_sum`` and ``S_size /
    eps_size`` per round; the error of a centroid shrinks like
    ``S_sum / (eps_sum * size)``.  The experiment
    (:mod:`blowfish_privacy.experiments.kmeans`) reports the ratio of the
    k-means objective to the non-private one.
Modules
    The sensitivity scans live in :mod:`._scan`, the grid, point and Lloyd
    helpers in :mod:`._points`, the result types in :mod:`._results`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..._validation import as_fraction, as_int, check_epsilon
from ...errors import ParameterError
from ...noise import Generator, MAX_SCALE, calibration, discrete_laplace_variance
from ...policy._policy import Policy
from ._points import (
    assign,
    centroid_array,
    check_k,
    check_points,
    check_policy,
    chunk_points,
    clamp,
    grid,
    noisy,
    random_init,
    reference_array,
    round_to_grid,
    update,
)
from ._results import ERROR_NOTE, KMeansIteration, KMeansResult
from ._scan import KMeansSensitivity, ScanLimits, scan_memory, sensitivity_scan
from ..plan import NoisePart, Plan
from ..._typing import Real

__all__ = [
    "kmeans_sensitivity",
    "plan_kmeans",
    "OFFSET_SCAN_LIMIT",
    "PROJECTION_SCAN_LIMIT",
    "SCAN_WORK_LIMIT",
    "TABLE_SCAN_LIMIT",
]

#: Largest ``|T| * m`` (cells times edge offsets) scanned edge by edge for an
#: exact distance-threshold sensitivity; above it a proven bound is used.
OFFSET_SCAN_LIMIT = 300_000_000
#: Largest domain for scans that hold a label and a cost per cell
#: (listed or interval partitions, distance-threshold edge scans).
TABLE_SCAN_LIMIT = 50_000_000
#: Largest domain for an explicit edge list (Custom and other graphs).
EDGE_SCAN_LIMIT = 4096
#: Work budget of a scan's labelling pass, in cell * centroid * axis steps
#: (about 1 ns each): above it no scan runs and the box bound is used.
SCAN_WORK_LIMIT = 2**32
#: Work budget of the exact same-cluster part of a clique scan, in cell *
#: sign-pattern steps (|T| * 2**(f-1) per block shape with f free axes):
#: above it the same-cluster part is bounded by min(2 max cost, block
#: diameter), which leaves ``sum`` exact whenever that bound does not
#: exceed the cross-cluster part.
PROJECTION_SCAN_LIMIT = 2**28

_CITATION = ("He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014, Section 6 (SuLQ k-means; Lemma 6.1 corrected "
             "for edges across clusters); SuLQ: Blum, Dwork, McSherry, Nissim, PODS 2005; sampler: Canonne, Kamath, "
             "Steinke 2020, Algorithm 2")


def _scan_limits() -> ScanLimits:
    """The scan budgets above, read at call time (so setting them here takes effect)."""
    return ScanLimits(OFFSET_SCAN_LIMIT, TABLE_SCAN_LIMIT, EDGE_SCAN_LIMIT, SCAN_WORK_LIMIT, PROJECTION_SCAN_LIMIT)


# ---------------------------------------------------------------------------
# sensitivity
# ---------------------------------------------------------------------------
def kmeans_sensitivity(policy: Policy, centroids: npt.ArrayLike, references: npt.ArrayLike) -> KMeansSensitivity:
    """Sensitivity of one round's cluster sizes and sums given public centroids.

    Neighbours move one tuple along one edge (x, y) of the secret graph; a
    tuple is assigned to its nearest centroid (ties to the lowest index) and
    the sums are taken relative to ``references``.  See the module notes
    (the k-means erratum to 000 Lemma 6.1).

    Parameters
    ----------
    policy : Policy
        A policy without constraints on a domain of ordinal attributes.
    centroids : array_like of float, shape (k, d)
        Public centroids.
    references : array_like of int, shape (k, d)
        Public reference points, grid values (usually the rounded centroids).

    Returns
    -------
    KMeansSensitivity
        Exact for FullDomain, Attribute and Partition on any grid domain
        (clique scans), for DistanceThreshold when ``|T|`` times the number
        of edge offsets is at most :data:`OFFSET_SCAN_LIMIT`, and for any
        graph on at most 4096 values; otherwise a proven upper bound
        (``sum_exact=False``): for DistanceThreshold the bisector bound, for
        other graphs (a Custom graph or a listed Partition on a large
        domain) the complete graph's value, as every edge is one of its.

    Raises
    ------
    ValueError
        If the domain is not a grid of ordinal attributes, or centroids or
        references have the wrong shape, are not finite or not integral.
    OverflowError
        If costs relative to ``references`` could not fit int64 (references
        far outside the domain).

    Privacy
    -------
    Releases nothing: it reads only public inputs (the policy, the public
    centroids and references), never points.  :func:`plan_kmeans` calibrates
    every round's noise to its result.

    Sensitivity
    -----------
    This computes it: the L1 change of the round's cluster sizes and sums when
    one tuple moves along one secret edge, exact or a proven upper bound
    (``Returns``).

    Runtime
    -------
    Every scan first labels each cell: ``|T| k d`` steps per clique
    mask (Attribute(c) has C(d, c) masks).  Above
    :data:`SCAN_WORK_LIMIT` steps nothing is scanned and the "box bound"
    is returned (``sum_exact=False``, ``size`` 2 when k >= 2): the block
    (or domain) L1 diameter for the same-cluster part and, across
    clusters, the sum of the two largest distances from a reference
    point to the domain's box; every neighbour's change is within it.
    The exact same-cluster part of a clique scan costs ``|T| *
    2**(f-1)`` more steps (f the axes free within a block; computed in
    Gray-code order); above :data:`PROJECTION_SCAN_LIMIT` it is bounded
    by min(2 max cost, block diameter) instead, and ``sum`` stays exact
    whenever that bound is at most the exact cross-cluster part.  The
    budgets keep one call to about a second on one core.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 6, Lemma 6.1 (corrected: see docs/explanation/corrections.md).
    """
    policy = check_policy(policy)
    domain, g = policy.domain, policy.secrets
    shape, low, width = grid(domain)
    c = np.asarray(centroids)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"centroids must be a numeric array of shape (k, {domain.ndim}), got dtype {c.dtype}")
    c = np.array(c, dtype=np.float64, order="C")
    r = reference_array(references)
    if c.ndim != 2 or c.shape[1] != domain.ndim or r.shape != c.shape or c.shape[0] < 1:
        raise ValueError(
            f"centroids and references must both have shape (k, {domain.ndim}) with k >= 1, got {c.shape} "
            f"and {r.shape}"
        )
    if not np.isfinite(c).all():
        raise ValueError(f"centroids must be finite, got {c.tolist()}")
    if not g.has_edge(domain):
        return KMeansSensitivity(0, 0, True, True, "no edges", 0, -1)
    try:
        return sensitivity_scan(policy, shape, low, width, c, r, _scan_limits())
    except OverflowError:
        raise OverflowError(
            f"references: costs |cell - reference|_1 on this domain do not fit int64 (2 * (max |cell|_1 + "
            f"max |reference|_1) must be below 2**63); got references {r.tolist()}"
        ) from None


# the mechanisms
# ---------------------------------------------------------------------------
def plan_kmeans(
    policy: Policy, epsilon: Real, *, k: int = 4, iterations: int = 10, init: npt.ArrayLike = "random",
    size_fraction: float = 0.5,
) -> Plan[KMeansResult]:
    """Plan SuLQ k-means under a Blowfish policy (000 Sec 6) from public inputs.

    Utility
        A centroid coordinate is ``r + (sum + Z_s) / (size + Z_c)`` with
        noise scales ``S_sum / eps_sums`` and ``S_size / eps_sizes`` per
        round: its error shrinks like ``S_sum / (eps_sums * size)``.  The
        sensitivities depend on the round's public centroids, so the
        expected error is data dependent (reported per round in the result).

    Parameters
    ----------
    policy : Policy
        Without constraints, on a domain of ordinal attributes (at most
        ``_kmeans.KMEANS_MAXDIM``).
    epsilon : float or Fraction, > 0
        Total budget: ``epsilon / iterations`` per round, split
        ``size_fraction : 1 - size_fraction`` between sizes and sums.
    k : int, default 4
        Clusters, ``1 <= k <= 64`` (and at most the domain size for
        ``init="random"``).  Fewer points than clusters is fine.
    iterations : int, default 10
    init : "random" or array_like, shape (k, d)
        ``"random"``: k distinct cells of the domain drawn with the
        measurement's generator; an array is used as given (inside the
        domain's box).  With an array, round 1's sensitivity and scales are
        fixed here; later rounds' (and all rounds' for ``"random"``) are
        computed during the measurement from that round's public centroids.
    size_fraction : float, default 0.5
        In (0, 1).

    Returns
    -------
    Plan
        ``plan.measure(points, generator)`` takes an integer (or float)
        array of shape (n, d), any n >= 0, and returns a
        :class:`KMeansResult`.  Points are mapped to the domain cell
        containing them (clamped into the box, NaN to the lowest value).

    Raises
    ------
    TypeError, ValueError
        On any bad parameter; nothing about data is checked here.

    Privacy
    -------
    (epsilon, policy)-Blowfish privacy (000 Def 4.2).  Each of the
    ``iterations`` rounds releases noisy cluster sizes and noisy cluster
    sums (relative to the round's public reference points) with exact
    discrete Laplace noise calibrated to their sensitivity *given that
    round's public centroids* (000 Thm 5.1), with the cross-cluster
    correction explained in docs/explanation/corrections.md (000 Lemma 6.1's ``2 theta`` holds
    only for edges inside one cluster).  A round's centroids are
    post-processing of earlier releases, so the rounds compose
    sequentially (000 Thm 4.1): the spend is at most
    ``plan.epsilon_exact`` (= ``epsilon``).  The initial centroids are
    ``init`` or drawn from the domain with the generator, never from the
    points; the measurement never fails or branches visibly on the data
    (any n >= 0, including n < k: a cluster with noisy size below 1
    keeps its centroid).

    Sensitivity
    -----------
    Per round, from that round's public centroids and reference points, by
    :func:`kmeans_sensitivity`: sizes 2 if some secret edge crosses two
    clusters (else 0); sums the largest change over the secret edges, within
    a cluster ||x - y||_1 and across clusters ||x - r_i||_1 + ||y - r_j||_1
    (000 Lemma 6.1's 2 theta corrected, see Corrections to the papers, docs/explanation/corrections.md), found by
    an exact scan of the domain in C or a proven upper bound when the scan
    would be too large (recorded as ``sum_exact=False``).

    Runtime
    -------
    Per round, one assignment pass over the n points (O(n k d), C) and
    one sensitivity scan of the domain (see :func:`kmeans_sensitivity`);
    memory: the scan's (``plan.memory_bytes``, from the domain size)
    plus 16 d bytes per point (linear in n).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 6, Lemma 6.1, Fig 1 (corrected: see docs/explanation/corrections.md).
    .. [2] Blum, Dwork, McSherry, Nissim. *Practical Privacy: The SuLQ Framework.* PODS 2005.
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Algorithm 2
        (the exact discrete Laplace sampler).
    """
    policy = check_policy(policy)
    domain = policy.domain
    if policy.constraints:
        raise ValueError("policy: k-means needs a policy without public constraints, got a policy with constraints")
    shape, low, width = grid(domain)
    far = sum(max(abs(a.low), abs(a.last_value)) for a in domain.attributes)
    if 4 * far > 2**63 - 1:  # the scans' costs (cells and references in the box) must fit int64
        raise ValueError(f"policy: k-means needs the sum over attributes of max |value| below 2**61, got {far}")
    k = check_k(k)
    iterations = as_int(iterations, "iterations", minimum=1)
    eps = check_epsilon(epsilon)
    frac = as_fraction(size_fraction, "size_fraction")
    if not (0 < frac < 1):
        raise ValueError(f"size_fraction must lie strictly between 0 and 1, got {size_fraction!r}")
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"init must be 'random' or an array of shape ({k}, {domain.ndim}), got {init!r}")
        if k > domain.size:
            raise ValueError(f"k must be at most the domain size {domain.size} for init='random', got {k}")
        start = None
    else:
        start = centroid_array(init, k, domain)
    eps_round = eps / iterations
    eps_size, eps_sum = eps_round * frac, eps_round * (1 - frac)
    # every round's sum sensitivity is at most 2 * (sum of spans): check its scale now, not mid-measurement
    spans = sum(a.span for a in domain.attributes)
    for name, top, e in (("sizes", 2, eps_size), ("sums", 2 * max(spans, 1), eps_sum)):
        if Fraction(top) / e > MAX_SCALE:
            raise ParameterError(
                "epsilon",
                f"epsilon: a round's {name} noise scale could reach {float(Fraction(top) / e):.6g} "
                f"(sensitivity up to {top} over epsilon {float(e):.6g} per round), above the sampler's largest "
                f"scale {MAX_SCALE}; use a larger epsilon, fewer iterations or a domain with smaller spans"
            )
    mem, method = scan_memory(policy, k, _scan_limits())
    how = ("computed per round from that round's public centroids by a scan of the domain "
           f"({method}; Section 6 of the Blowfish paper, corrected for edges across clusters); "
           "spends at most this epsilon")
    parts = []
    first = None
    expected = {"note": ERROR_NOTE}
    if start is not None:
        refs = round_to_grid(start, low, width, shape)
        first = kmeans_sensitivity(policy, start, refs)
        s_c, s_s = noisy_floor(first.size, 2), noisy_floor(first.sum, 1)
        cal_c, cal_s = calibration(s_c, eps_size), calibration(s_s, eps_sum)
        h1 = f"round 1 from the given init by a scan of the domain ({first.method}; corrected for edges across clusters)"
        parts += [NoisePart("sizes[1]", s_c, first.size_exact and s_c == first.size, h1, cal_c.epsilon_exact,
                            cal_c.scale, k),
                  NoisePart("sums[1]", s_s, first.sum_exact and s_s == first.sum, h1, cal_s.epsilon_exact, cal_s.scale,
                            k * domain.ndim)]
        expected["round_1_size_variance"] = discrete_laplace_variance(cal_c.scale)
        expected["round_1_sum_variance_per_coordinate"] = discrete_laplace_variance(cal_s.scale)
    for i in range(len(parts) // 2 + 1, iterations + 1):
        parts += [NoisePart(f"sizes[{i}]", None, False, how, eps_size, None, k),
                  NoisePart(f"sums[{i}]", None, False, how, eps_sum, None, k * domain.ndim)]
    d = domain.ndim
    guarantee = (f"(epsilon, P)-Blowfish privacy for P = {policy!r}: {iterations} rounds of noisy cluster sizes and "
                 "sums, each calibrated to its sensitivity given that round's public centroids "
                 "(Theorem 5.1 of the Blowfish paper, corrected for edges across clusters), composed sequentially "
                 "(Theorem 4.1 of the Blowfish paper)")

    def run(plan: Plan, pts: np.ndarray, gen: Generator) -> KMeansResult:
        return _kmeans_run(plan, pts, gen, start, first, eps_size, eps_sum)

    return Plan(
        mechanism="kmeans", policy=policy, guarantee=guarantee, citation=_CITATION,
        epsilon_requested=eps, parts=tuple(parts),
        aggregate=(f"integer points of shape (n, {d}), any n >= 0 (grid values of the domain; others are mapped "
                   f"to their cell, clamped into the box); memory linear in n: 16*{d} bytes per point"),
        aggregate_shape=None, expected_error=expected, memory_bytes=mem,
        runtime=(f"per round: O(n k d) assignment in C and one sensitivity scan of the domain ({method}); "
                 f"{iterations} rounds; memory {mem} bytes for the scan plus {16 * d} bytes per point"),
        options={"k": k, "iterations": iterations, "init": "random" if start is None else start,
                 "size_fraction": frac},
        check=lambda points: check_points(points, domain), run=run,
    )


def noisy_floor(sensitivity: int, bound: int) -> int:
    """The sensitivity a round calibrates to: its own, or ``bound`` when it is 0.

    A round's sizes have sensitivity 0 when no edge of the secret graph
    crosses two clusters (e.g. clusters made of whole blocks of a
    partition): no neighbour changes them.  Releasing them exact would be
    (0, P)-Blowfish private, but an exact count under a private label is
    what the release product refuses; noise at a safe upper bound (2, a
    histogram's) keeps every released value noisy.  Noise above the
    sensitivity never weakens the guarantee.
    """
    return int(sensitivity) if sensitivity > 0 else bound


def _kmeans_run(plan: Plan, pts: np.ndarray, gen: Generator, start, first, eps_size, eps_sum) -> KMeansResult:
    """The rounds: nothing here raises or branches visibly on the points."""
    policy = plan.policy
    domain = policy.domain
    shape, low, width = grid(domain)
    k = plan.options["k"]
    # the random start comes from the generator alone, before any noise or data
    start = random_init(domain, k, gen) if start is None else start.copy()
    chunk = chunk_points(domain)
    centroids = start.copy()
    history: list[KMeansIteration] = []
    spent = Fraction(0)
    for r in range(plan.options["iterations"]):
        refs = round_to_grid(centroids, low, width, shape)
        sens = first if (r == 0 and first is not None) else kmeans_sensitivity(policy, centroids, refs)
        cal_c = calibration(noisy_floor(sens.size, 2), eps_size)
        cal_s = calibration(noisy_floor(sens.sum, 1), eps_sum)
        counts, sums = assign(pts, centroids, refs, chunk)
        noisy_c = noisy(counts, cal_c.scale, gen)
        noisy_s = noisy(sums, cal_s.scale, gen)
        spent += cal_c.epsilon_exact + cal_s.epsilon_exact
        history.append(
            KMeansIteration(
                centroids=centroids,
                references=refs,
                sensitivity=sens,
                epsilon_sizes=cal_c.epsilon_exact,
                epsilon_sums=cal_s.epsilon_exact,
                scale_sizes=cal_c.scale,
                scale_sums=cal_s.scale,
                noisy_sizes=noisy_c,
                noisy_sums=noisy_s,
            )
        )
        centroids = clamp(update(centroids, refs, noisy_c.astype(np.float64), noisy_s.astype(np.float64)), domain)
    return KMeansResult(centroids=centroids, initial_centroids=start, history=history, secure=gen.is_secure, plan=plan)
