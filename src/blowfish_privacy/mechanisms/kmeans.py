"""SuLQ k-means under Blowfish policies, with exact per-iteration sensitivity.

Privacy guarantee
    :func:`kmeans` with policy P = (T, G, I_n) and ``epsilon`` satisfies
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
    accumulated exactly.  :func:`kmeans` is plan then measure.
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
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core
from .._validation import as_fraction, as_int, as_int64_array, check_epsilon
from ..domain import Domain, Ordinal
from ..noise import MAX_SCALE, Generator, as_generator, discrete_laplace_variance
from ..policy import Policy
from ..secrets import Attribute, DistanceThreshold, FullDomain, Partition
from .laplace import calibrate
from .plan import NoisePart, Plan, Release, int64_bytes

__all__ = [
    "KMeansIteration",
    "KMeansResult",
    "KMeansSensitivity",
    "kmeans",
    "kmeans_objective",
    "kmeans_sensitivity",
    "lloyd",
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
_MAX_K = _core.KMEANS_MAXK
#: Per-coordinate sums stay below this in int64 (room for the noise).
_SAFE = 2**61

_GUARANTEE = ("(epsilon, P)-Blowfish privacy: every round's noisy sizes and sums are calibrated to their "
              "sensitivity given that round's public centroids (000 Thm 5.1, with the cross-cluster correction "
              "of DESIGN.md sec 5); the rounds compose sequentially (000 Thm 4.1)")
_CITATION = ("He, Machanavajjhala, Ding, SIGMOD 2014, 000 Sec 6 (SuLQ k-means; Lemma 6.1 corrected for edges "
             "across clusters); SuLQ: Blum, Dwork, McSherry, Nissim, PODS 2005; sampler: CKS 2020 Alg. 2")
_ERROR_NOTE = ("data dependent: a centroid coordinate errs by about S_sum / (eps_sums * size) per round, with "
               "the per-round sensitivities in the history")


# ---------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class KMeansSensitivity:
    """Sensitivities of one round's sizes and sums, given public centroids.

    Attributes
    ----------
    size, sum : int
        L1 sensitivities of the cluster sizes and of the cluster sums
        relative to the reference points (value units).
    size_exact, sum_exact : bool
        True for the exact maximum over neighbours; False for a proven upper
        bound.
    method : str
        How they were computed: "cliques", "cliques, bounded same-cluster
        part", "edge offsets", "edge list", "bisector bound",
        "complete-graph bound", "box bound" or "no edges".
    same_cluster, cross_cluster : int
        The two parts of ``sum``: largest change by an edge inside one
        cluster, and by an edge across two clusters (-1: no such edge).
        ``same_cluster`` is an upper bound when a clique scan exceeded
        :data:`PROJECTION_SCAN_LIMIT` (``sum`` is still exact when
        ``sum_exact``); both are upper bounds for "box bound".
    """

    size: int
    sum: int
    size_exact: bool
    sum_exact: bool
    method: str
    same_cluster: int
    cross_cluster: int


@dataclass(frozen=True)
class KMeansIteration:
    """One round of private k-means: what it started from and what it released.

    Attributes
    ----------
    centroids : ndarray of float64, shape (k, d)
        Public centroids the round assigned points to.
    references : ndarray of int64, shape (k, d)
        Public reference points (the centroids rounded to the grid); the
        sums are released relative to them.
    sensitivity : KMeansSensitivity
    epsilon_sizes, epsilon_sums : fractions.Fraction
        Epsilon actually spent on the sizes and on the sums (0 when the
        sensitivity is 0: released without noise).
    scale_sizes, scale_sums : fractions.Fraction
        Discrete Laplace scales used (0: no noise).
    noisy_sizes : ndarray of int64, shape (k,)
    noisy_sums : ndarray of int64, shape (k, d)
    """

    centroids: np.ndarray
    references: np.ndarray
    sensitivity: KMeansSensitivity
    epsilon_sizes: Fraction
    epsilon_sums: Fraction
    scale_sizes: Fraction
    scale_sums: Fraction
    noisy_sizes: np.ndarray
    noisy_sums: np.ndarray


@dataclass(frozen=True)
class KMeansResult(Release):
    """The result of :func:`kmeans` (a :class:`~.plan.Release`).

    Attributes
    ----------
    centroids : ndarray of float64, shape (k, d)
        Final centroids (inside the domain's bounding box).
    initial_centroids : ndarray of float64, shape (k, d)
        The data-independent start (pass it to :func:`lloyd` to compare).
    history : list of KMeansIteration
        Every round, in order.
    sensitivities : list of (int, int)
        ``(size_sensitivity, sum_sensitivity)`` of every round.
    epsilon : float
        Epsilon actually spent (``<=`` the epsilon asked).
    epsilon_exact : fractions.Fraction
        The same, exactly: the sum of every round's spends (at most the
        plan's ``epsilon_exact``, which is what a ledger charges).
    secure : bool
        False when the generator was seeded (not for real releases).
    plan : Plan
        The plan that made it.
    """

    centroids: np.ndarray
    initial_centroids: np.ndarray
    history: list = field(repr=False)
    sensitivities: list
    epsilon: float
    epsilon_exact: Fraction
    secure: bool
    plan: Any = field(default=None, repr=False, compare=False)

    _values_field = "centroids"

    @property
    def mechanism(self) -> str:
        return "kmeans"

    @property
    def all_exact(self) -> bool:
        """Whether every sensitivity used was exact (not only a bound)."""
        return all(h.sensitivity.size_exact and h.sensitivity.sum_exact for h in self.history)

    def _common(self) -> dict:
        parts, scales, sens = {}, {}, {}
        for i, h in enumerate(self.history, 1):
            parts[f"sizes[{i}]"], parts[f"sums[{i}]"] = h.epsilon_sizes, h.epsilon_sums
            scales[f"sizes[{i}]"], scales[f"sums[{i}]"] = h.scale_sizes, h.scale_sums
            sens[f"sizes[{i}]"], sens[f"sums[{i}]"] = h.sensitivity.size, h.sensitivity.sum
        guarantee = self.plan.guarantee if self.plan is not None else _GUARANTEE
        return {"epsilon_parts": parts, "scales": scales, "sensitivity": sens, "guarantee": guarantee,
                "expected_error": {"note": _ERROR_NOTE}}


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
def _grid(domain: Domain) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    for attr in domain.attributes:
        if not isinstance(attr, Ordinal):
            raise ValueError(
                f"policy: k-means needs a domain of ordinal attributes (grid coordinates), got categorical "
                f"attribute {attr.name!r}"
            )
    if domain.ndim > _core.KMEANS_MAXDIM:
        raise ValueError(f"policy: k-means supports at most {_core.KMEANS_MAXDIM} attributes, got {domain.ndim}")
    shape = np.array(domain.shape, dtype=np.int64)
    low = np.array([a.low for a in domain.attributes], dtype=np.int64)
    width = np.array([a.bin_width for a in domain.attributes], dtype=np.int64)
    return shape, low, width


def _check_policy(policy) -> Policy:
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a Policy, got {policy!r} of type {type(policy).__name__}")
    return policy


def _domain_of(where) -> Domain:
    if isinstance(where, Policy):
        return where.domain
    if isinstance(where, Domain):
        return where
    raise TypeError(f"domain must be a Domain or a Policy, got {where!r} of type {type(where).__name__}")


def _check_points(points, domain: Domain) -> np.ndarray:
    """Points as an (n, d) int64 array of cells of ``domain`` (never fails on values).

    Only the public dtype and shape are checked.  Each coordinate is mapped
    to the bin containing it, clamped into the domain's box (NaN counts as
    the lowest value), so the sensitivities computed over the domain hold.
    """
    arr = np.asarray(points)
    d = domain.ndim
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"points must be a numeric array of grid values (integer or float dtype), got dtype {arr.dtype}")
    if arr.ndim == 1 and (d == 1 or arr.size == 0):
        arr = arr.reshape(-1, d)
    if arr.ndim != 2 or arr.shape[1] != d:
        raise ValueError(f"points must have shape (n, {d}) for a domain of {d} attributes, got shape {arr.shape}")
    out = np.empty(arr.shape, dtype=np.int64)
    for a, attr in enumerate(domain.attributes):
        lo, hi, w = attr.low, attr.last_value, attr.bin_width
        col = arr[:, a]
        if col.dtype.kind == "f":
            col = np.clip(np.nan_to_num(col.astype(np.float64), nan=lo, posinf=hi, neginf=lo), lo, hi)
            codes = np.clip(np.floor((col - lo) / w), 0, attr.size - 1).astype(np.int64)
        else:
            if col.dtype == np.uint64:
                col = np.minimum(col, np.uint64(max(hi, 0)))
            col = np.clip(col.astype(np.int64), lo, hi)
            codes = (col - lo) // w
        out[:, a] = lo + codes * w
    return out


def _chunk(domain: Domain) -> int:
    """Points per assignment call so that int64 sums cannot overflow (public)."""
    spans = sum(a.span for a in domain.attributes)
    # the C pass also sums raw coordinates and count * reference (both in the box)
    far = max(max(abs(a.low), abs(a.last_value)) for a in domain.attributes)
    return max(1, min(_SAFE // max(spans, 1), (2**63 - 1) // max(2 * far, 1)))


def _assign(pts: np.ndarray, centroids: np.ndarray, refs: np.ndarray, chunk: int):
    """(sizes, sums relative to refs); sums are int64, or exact Python ints
    (object array) when more than ``chunk`` points could overflow int64."""
    if pts.shape[0] <= chunk:
        counts, sums, _ = _core.kmeans_assign(pts, centroids, refs)
        return counts, sums
    k, d = centroids.shape
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros((k, d), dtype=object)
    for s in range(0, pts.shape[0], chunk):
        c, sm, _ = _core.kmeans_assign(pts[s : s + chunk], centroids, refs)
        counts += c
        sums += sm.astype(object)
    return counts, sums


def _noisy(values: np.ndarray, scale: Fraction, gen: Generator) -> np.ndarray:
    if scale == 0:
        return values.copy()
    if values.dtype == object:  # exact big sums: noise drawn apart, added as Python ints
        noise = gen.add_discrete_laplace(np.zeros(values.shape, dtype=np.int64), scale)
        return values + noise.astype(object)
    return gen.add_discrete_laplace(values, scale)


def _centroid_array(init, k: int, domain: Domain, name: str = "init") -> np.ndarray:
    arr = np.asarray(init)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be 'random' or a numeric array of shape ({k}, {domain.ndim}), got {init!r}")
    arr = np.array(arr, dtype=np.float64)
    if domain.ndim == 1 and arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.shape != (k, domain.ndim):
        raise ValueError(f"{name} must have shape (k, d) = ({k}, {domain.ndim}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    _, low, width = _grid(domain)
    high = np.array([a.last_value for a in domain.attributes], dtype=np.float64)
    if (arr < low).any() or (arr > high).any():
        raise ValueError(
            f"{name} must lie inside the domain's box {low.tolist()}..{high.tolist()}, got {arr.tolist()}"
        )
    return arr


def _random_init(domain: Domain, k: int, gen: Generator) -> np.ndarray:
    """k distinct uniformly random cells of the domain (data-independent)."""
    if k > domain.size:
        raise ValueError(f"k must be at most the domain size {domain.size} for init='random', got {k}")
    chosen: list[int] = []
    while len(chosen) < k:
        for c in gen.integers(domain.size, size=k).tolist():
            if c not in chosen and len(chosen) < k:
                chosen.append(int(c))
    vals = domain.values(np.array(chosen, dtype=np.int64))
    return np.stack([np.asarray(v, dtype=np.float64) for v in vals], axis=1)


def _round_to_grid(centroids: np.ndarray, low: np.ndarray, width: np.ndarray, shape: np.ndarray) -> np.ndarray:
    codes = np.clip(np.floor((centroids - low) / width + 0.5), 0, shape - 1).astype(np.int64)
    return low + codes * width


def _clamp(centroids: np.ndarray, domain: Domain) -> np.ndarray:
    low = np.array([a.low for a in domain.attributes], dtype=np.float64)
    high = np.array([a.last_value for a in domain.attributes], dtype=np.float64)
    return np.clip(centroids, low, high)


# ---------------------------------------------------------------------------
# sensitivity
# ---------------------------------------------------------------------------
def _combine(same: int, cross: int, exact: bool, method: str, size_exact: bool | None = None) -> KMeansSensitivity:
    size = 2 if cross >= 0 else 0
    total = max(same, cross, 0)
    return KMeansSensitivity(
        size=size,
        sum=int(total),
        size_exact=exact if size_exact is None else size_exact,
        sum_exact=exact,
        method=method,
        same_cluster=int(same),
        cross_cluster=int(cross),
    )


def _clique_masks(policy: Policy) -> list[int] | None:
    """Fixed-axis masks whose blocks cover every edge with cliques, or None."""
    g, d = policy.secrets, policy.domain.ndim
    full = (1 << d) - 1
    if isinstance(g, FullDomain):
        return [0]
    if isinstance(g, Attribute):
        if g.c >= d:
            return [0]
        return [full & ~sum(1 << a for a in free) for free in itertools.combinations(range(d), g.c)]
    if isinstance(g, Partition) and g.mode == "attributes":
        bound = g._binding(policy.domain)
        return [sum(1 << a for a in bound)]
    return None


def _table_groups(labels: np.ndarray, cost: np.ndarray, blocks: np.ndarray, values: np.ndarray, k: int) -> tuple[int, int]:
    """Exact clique statistics from per-cell tables: blocks[cell] is a clique id."""
    key = blocks.astype(np.int64) * k + labels
    order = np.argsort(key, kind="stable")
    key_s = key[order]
    starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]])
    d = values.shape[1]
    same = 0
    for bits in range(1 << (d - 1)):
        proj = values[:, 0].copy()
        for a in range(1, d):
            proj = proj - values[:, a] if (bits >> (a - 1)) & 1 else proj + values[:, a]
        p = proj[order]
        spread = np.maximum.reduceat(p, starts) - np.minimum.reduceat(p, starts)
        same = max(same, int(spread.max()))
    maxc = np.maximum.reduceat(cost[order], starts)
    grp_block = key_s[starts] // k
    # top two per block over clusters (groups are sorted by block, then cluster)
    cross = -1
    bstart = np.flatnonzero(np.r_[True, grp_block[1:] != grp_block[:-1]])
    bend = np.r_[bstart[1:], grp_block.shape[0]]
    multi = np.flatnonzero(bend - bstart >= 2)
    for b in multi.tolist():
        vals = np.sort(maxc[bstart[b] : bend[b]])
        cross = max(cross, int(vals[-1] + vals[-2]))
    return same, cross


def _domain_values(domain: Domain) -> np.ndarray:
    idx = np.arange(domain.size, dtype=np.int64)
    return np.stack([np.asarray(v, dtype=np.int64) for v in domain.values(idx)], axis=1)


def _offsets(policy: Policy) -> tuple[np.ndarray, np.ndarray] | None:
    """Edge offsets (code deltas, one of each +-pair) of a distance threshold
    graph, with their L1 lengths in value units; None if too many."""
    from ..secrets import _within  # exact integer threshold test shared with the graph

    g, domain = policy.secrets, policy.domain
    bound = g._binding(domain)
    caps = list(bound.caps)
    box = math.prod(2 * c + 1 for c in caps)
    if box > 4_000_000 or domain.size * max(box // 2, 1) > OFFSET_SCAN_LIMIT:
        return None
    ranges = [np.arange(-c, c + 1, dtype=np.int64) for c in caps]
    delta = np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1).reshape(-1, len(caps))
    # lexicographically positive half
    nz = delta != 0
    first = np.where(nz.any(axis=1), nz.argmax(axis=1), 0)
    positive = nz.any(axis=1) & (delta[np.arange(delta.shape[0]), first] > 0)
    delta = delta[positive]
    widths = np.array(bound.widths, dtype=np.int64)
    vals = np.abs(delta) * widths
    keep = _within(vals, g.metric, g._theta, int(vals.max()) if vals.size else 0)
    delta, vals = delta[keep], vals[keep]
    return np.ascontiguousarray(delta), vals.sum(axis=1)


def _edge_radius(policy: Policy) -> tuple[float, int, bool]:
    """(Euclidean bound on an edge's length, max L1 edge length, exact?) in value units."""
    g, domain = policy.secrets, policy.domain
    bound = g._binding(domain)
    widths = [a.bin_width for a in domain.attributes]
    l1, exact, _ = g._max_weighted_l1(domain, bound, widths)
    if g.metric == "l2":
        radius = float(g._theta)
    elif g.metric == "linf":
        radius = math.sqrt(sum(float(w * c) ** 2 for w, c in zip(bound.widths, bound.caps)))
    else:
        radius = float(l1)  # ||v||_2 <= ||v||_1
    return radius * (1 + 1e-12), int(l1), exact


def kmeans_sensitivity(policy: Policy, centroids, references) -> KMeansSensitivity:
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

    Cost model and budget
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

    Raises
    ------
    ValueError
        If the domain is not a grid of ordinal attributes, or centroids or
        references have the wrong shape, are not finite or not integral.
    OverflowError
        If costs relative to ``references`` could not fit int64 (references
        far outside the domain).
    """
    policy = _check_policy(policy)
    domain, g = policy.domain, policy.secrets
    shape, low, width = _grid(domain)
    c = np.asarray(centroids)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"centroids must be a numeric array of shape (k, {domain.ndim}), got dtype {c.dtype}")
    c = np.array(c, dtype=np.float64, order="C")
    r = _reference_array(references)
    if c.ndim != 2 or c.shape[1] != domain.ndim or r.shape != c.shape or c.shape[0] < 1:
        raise ValueError(
            f"centroids and references must both have shape (k, {domain.ndim}) with k >= 1, got {c.shape} "
            f"and {r.shape}"
        )
    if not np.isfinite(c).all():
        raise ValueError(f"centroids must be finite, got {c.tolist()}")
    k = c.shape[0]
    if not g.has_edge(domain):
        return KMeansSensitivity(0, 0, True, True, "no edges", 0, -1)
    try:
        return _sensitivity_scan(policy, shape, low, width, c, r)
    except OverflowError:
        raise OverflowError(
            f"references: costs |cell - reference|_1 on this domain do not fit int64 (2 * (max |cell|_1 + "
            f"max |reference|_1) must be below 2**63); got references {r.tolist()}"
        ) from None


def _reference_array(references) -> np.ndarray:
    """Reference points as int64: integers, or floats with integral values."""
    r = np.asarray(references)
    if r.dtype.kind == "f":
        if not np.isfinite(r).all() or (r != np.floor(r)).any() or (np.abs(r) >= 2.0**63).any():
            raise ValueError(f"references must be integers (grid values), got {r.tolist()}")
        return np.array(r, dtype=np.int64, order="C")
    if r.dtype.kind not in "iu":
        raise TypeError(f"references must be an integer array, got dtype {r.dtype}")
    return as_int64_array(r, "references")


def _box_bound(policy: Policy, shape, low, width, r, masks) -> KMeansSensitivity:
    """A proven bound without scanning: every edge (x, y) lies in the domain's
    box, inside one clique block for ``masks``; an edge inside one cluster
    changes the sums by ||x - y||_1 <= the block's L1 diameter (for a
    distance threshold: its longest edge); across clusters i != j by
    ||x - r_i||_1 + ||y - r_j||_1 <= C_i + C_j, C_j the largest L1 distance
    from r_j to the box."""
    hi = low + (shape - 1) * width
    span = [int(shape[a] - 1) * int(width[a]) for a in range(shape.size)]
    if masks is not None:
        same = max(sum(span[a] for a in range(shape.size) if not (m >> a) & 1) for m in masks)
    elif isinstance(policy.secrets, DistanceThreshold):
        same = _edge_radius(policy)[1]
    else:
        same = sum(span)
    far = sorted(sum(max(abs(int(low[a]) - int(rj[a])), abs(int(hi[a]) - int(rj[a]))) for a in range(shape.size))
                 for rj in r)
    cross = far[-1] + far[-2] if len(far) >= 2 else -1
    return _combine(same, cross, False, "box bound", size_exact=cross < 0)


def _scan_work(policy: Policy, k: int) -> int:
    """Steps of the labelling pass of the scan (cells * centroids * axes, per mask)."""
    masks = _clique_masks(policy)
    return policy.domain.size * k * policy.domain.ndim * (len(masks) if masks else 1)


def _sensitivity_scan(policy: Policy, shape, low, width, c, r) -> KMeansSensitivity:
    domain, g = policy.domain, policy.secrets
    k = c.shape[0]
    masks = _clique_masks(policy)
    if _scan_work(policy, k) > SCAN_WORK_LIMIT:
        return _box_bound(policy, shape, low, width, r, masks)

    if masks is not None:
        same, cross, bounded = 0, -1, 0
        for m in masks:
            free = domain.ndim - bin(m).count("1")
            exact_part = domain.size * (1 << max(free - 1, 0)) <= PROJECTION_SCAN_LIMIT
            s, x = _core.kmeans_clique_scan(shape, low, width, c, r, m, exact_part)
            cross = max(cross, x)
            if exact_part:
                same = max(same, s)
            else:
                bounded = max(bounded, s)
        exact = bounded <= max(same, cross)  # then the bounded part cannot change sum
        return _combine(max(same, bounded), cross, exact,
                        "cliques" if exact else "cliques, bounded same-cluster part", size_exact=True)

    if isinstance(g, Partition) and domain.size <= TABLE_SCAN_LIMIT:
        labels, cost = _core.kmeans_grid_label_cost(shape, low, width, c, r)
        blocks = g._block_ids(domain, g._binding(domain), np.arange(domain.size, dtype=np.int64))
        same, cross = _table_groups(labels, cost, blocks, _domain_values(domain), k)
        return _combine(same, cross, True, "cliques")

    if isinstance(g, DistanceThreshold):
        offs = _offsets(policy) if domain.size <= TABLE_SCAN_LIMIT else None
        if offs is not None:
            labels, cost = _core.kmeans_grid_label_cost(shape, low, width, c, r)
            same, cross = _core.kmeans_offset_scan(shape, labels, cost, offs[0], offs[1])
            return _combine(same, cross, True, "edge offsets")
        if k > _MAX_K:
            raise ValueError(f"k must be at most {_MAX_K} for the bisector bound on a large domain, got {k}")
        radius, l1, l1_exact = _edge_radius(policy)
        near, pair = _core.kmeans_bisector_scan(shape, low, width, c, r, radius)
        cross = -1
        for i in range(k):
            for j in range(i + 1, k):
                if near[i, j] < 0 or near[j, i] < 0:
                    continue  # no cell of one side can reach the other
                cand = min(near[i, j] + near[j, i], pair[i, j] + l1, pair[j, i] + l1)
                cross = max(cross, int(cand))
        # no pair near a bisector proves that no edge crosses: S_size = 0 is then exact
        return _combine(l1, cross, False, "bisector bound", size_exact=cross < 0)

    if domain.size <= EDGE_SCAN_LIMIT:
        i, j = g.iter_edges(domain, limit=EDGE_SCAN_LIMIT)
        labels, cost = _core.kmeans_grid_label_cost(shape, low, width, c, r)
        vals = _domain_values(domain)
        crossing = labels[i] != labels[j]
        same = int(np.abs(vals[i] - vals[j]).sum(axis=1)[~crossing].max(initial=0))
        cross = int((cost[i] + cost[j])[crossing].max(initial=-1))
        return _combine(same, cross, True, "edge list")
    # Every secret graph is a subgraph of the complete graph, so the complete
    # graph's (exact) value is a proven upper bound for any other graph.
    same, cross = _core.kmeans_clique_scan(shape, low, width, c, r, 0,
                                           domain.size << max(domain.ndim - 1, 0) <= PROJECTION_SCAN_LIMIT)
    return _combine(same, cross, False, "complete-graph bound", size_exact=cross < 0)


# ---------------------------------------------------------------------------
# the mechanisms
# ---------------------------------------------------------------------------
def _check_k(k) -> int:
    k = as_int(k, "k", minimum=1)
    if k > _MAX_K:
        raise ValueError(f"k must be at most {_MAX_K}, got {k}")
    return k


def _update(centroids, refs, sizes, sums):
    """New centroids ``ref + sum / size``; clusters with size < 1 keep theirs."""
    out = centroids.copy()
    ok = sizes >= 1
    out[ok] = refs[ok] + sums[ok] / sizes[ok, None]
    return out


def _scan_memory(policy: Policy, k: int) -> tuple[int, str]:
    """Peak bytes of one round's sensitivity scan, and its method (public)."""
    domain, g = policy.domain, policy.secrets
    size, d = domain.size, domain.ndim
    small = int64_bytes(4 * k * k + 8 * k * d)
    if not g.has_edge(domain):
        return 0, "no edges"
    if _scan_work(policy, k) > SCAN_WORK_LIMIT:
        return small, "box bound"
    if _clique_masks(policy) is not None:
        return small, "cliques"
    if isinstance(g, Partition) and size <= TABLE_SCAN_LIMIT:
        # label, cost, block id, values, sort key and order, projections
        return int64_bytes(size * (8 + d)) + small, "cliques"
    if isinstance(g, DistanceThreshold):
        offs = _offsets(policy) if size <= TABLE_SCAN_LIMIT else None
        if offs is not None:
            return int64_bytes(2 * size + 3 * offs[0].size) + small, "edge offsets"
        return small, "bisector bound"
    if size <= EDGE_SCAN_LIMIT:
        edges = size * (size - 1) // 2
        return int64_bytes(edges * (4 + d) + size * (2 + d)) + small, "edge list"
    return small, "complete-graph bound"


def plan_kmeans(policy, epsilon, *, k: int = 4, iterations: int = 10, init="random", size_fraction=0.5) -> Plan:
    """Plan SuLQ k-means under a Blowfish policy (000 Sec 6) from public inputs.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy (000 Def 4.2).  Each of the
        ``iterations`` rounds releases noisy cluster sizes and noisy cluster
        sums (relative to the round's public reference points) with exact
        discrete Laplace noise calibrated to their sensitivity *given that
        round's public centroids* (000 Thm 5.1), with the cross-cluster
        correction of DESIGN.md sec 5 (000 Lemma 6.1's ``2 theta`` holds
        only for edges inside one cluster).  A round's centroids are
        post-processing of earlier releases, so the rounds compose
        sequentially (000 Thm 4.1): the spend is at most
        ``plan.epsilon_exact`` (= ``epsilon``).  The initial centroids are
        ``init`` or drawn from the domain with the generator, never from the
        points; the measurement never fails or branches visibly on the data
        (any n >= 0, including n < k: a cluster with noisy size below 1
        keeps its centroid).
    Citation
        He, Machanavajjhala, Ding, SIGMOD 2014, 000 Sec 6 (Lemma 6.1, Fig
        1); SuLQ: Blum, Dwork, McSherry, Nissim, PODS 2005; sampler: CKS
        2020 Algorithm 2.
    Runtime
        Per round, one assignment pass over the n points (O(n k d), C) and
        one sensitivity scan of the domain (see :func:`kmeans_sensitivity`);
        memory: the scan's (``plan.memory_bytes``, from the domain size)
        plus 16 d bytes per point (linear in n).
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
        ``_core.KMEANS_MAXDIM``).
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
    """
    policy = _check_policy(policy)
    domain = policy.domain
    if policy.constraints:
        raise ValueError("policy: k-means needs a policy without public constraints, got a policy with constraints")
    shape, low, width = _grid(domain)
    far = sum(max(abs(a.low), abs(a.last_value)) for a in domain.attributes)
    if 4 * far > 2**63 - 1:  # the scans' costs (cells and references in the box) must fit int64
        raise ValueError(f"policy: k-means needs the sum over attributes of max |value| below 2**61, got {far}")
    k = _check_k(k)
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
        start = _centroid_array(init, k, domain)
    eps_round = eps / iterations
    eps_size, eps_sum = eps_round * frac, eps_round * (1 - frac)
    # every round's sum sensitivity is at most 2 * (sum of spans): check its scale now, not mid-measurement
    spans = sum(a.span for a in domain.attributes)
    for name, top, e in (("sizes", 2, eps_size), ("sums", 2 * max(spans, 1), eps_sum)):
        if Fraction(top) / e > MAX_SCALE:
            raise ValueError(
                f"epsilon: a round's {name} noise scale could reach {float(Fraction(top) / e):.6g} "
                f"(sensitivity up to {top} over epsilon {float(e):.6g} per round), above the sampler's largest "
                f"scale {MAX_SCALE}; use a larger epsilon, fewer iterations or a domain with smaller spans"
            )
    mem, method = _scan_memory(policy, k)
    how = ("computed per round from that round's public centroids by a scan of the domain "
           f"({method}; 000 Sec 6 with the cross-cluster correction, DESIGN.md sec 5); spends at most this epsilon")
    parts = []
    first = None
    expected = {"note": _ERROR_NOTE}
    if start is not None:
        refs = _round_to_grid(start, low, width, shape)
        first = kmeans_sensitivity(policy, start, refs)
        cal_c, cal_s = calibrate(first.size, eps_size), calibrate(first.sum, eps_sum)
        h1 = f"round 1 from the given init by a scan of the domain ({first.method}; DESIGN.md sec 5)"
        parts += [NoisePart("sizes[1]", first.size, first.size_exact, h1, cal_c.epsilon_exact, cal_c.scale, k),
                  NoisePart("sums[1]", first.sum, first.sum_exact, h1, cal_s.epsilon_exact, cal_s.scale, k * domain.ndim)]
        expected["round_1_size_variance"] = discrete_laplace_variance(cal_c.scale)
        expected["round_1_sum_variance_per_coordinate"] = discrete_laplace_variance(cal_s.scale)
    for i in range(len(parts) // 2 + 1, iterations + 1):
        parts += [NoisePart(f"sizes[{i}]", None, False, how, eps_size, None, k),
                  NoisePart(f"sums[{i}]", None, False, how, eps_sum, None, k * domain.ndim)]
    d = domain.ndim
    guarantee = (f"(epsilon, P)-Blowfish privacy for P = {policy!r}: {iterations} rounds of noisy cluster sizes and "
                 "sums, each calibrated to its sensitivity given that round's public centroids (000 Thm 5.1, "
                 "cross-cluster correction of DESIGN.md sec 5), composed sequentially (000 Thm 4.1)")

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
        check=lambda points: _check_points(points, domain), run=run,
    )


def _kmeans_run(plan: Plan, pts: np.ndarray, gen: Generator, start, first, eps_size, eps_sum) -> KMeansResult:
    """The rounds: nothing here raises or branches visibly on the points."""
    policy = plan.policy
    domain = policy.domain
    shape, low, width = _grid(domain)
    k = plan.options["k"]
    # the random start comes from the generator alone, before any noise or data
    start = _random_init(domain, k, gen) if start is None else start.copy()
    chunk = _chunk(domain)
    centroids = start.copy()
    history: list[KMeansIteration] = []
    spent = Fraction(0)
    for r in range(plan.options["iterations"]):
        refs = _round_to_grid(centroids, low, width, shape)
        sens = first if (r == 0 and first is not None) else kmeans_sensitivity(policy, centroids, refs)
        cal_c = calibrate(sens.size, eps_size)
        cal_s = calibrate(sens.sum, eps_sum)
        counts, sums = _assign(pts, centroids, refs, chunk)
        noisy_c = _noisy(counts, cal_c.scale, gen)
        noisy_s = _noisy(sums, cal_s.scale, gen)
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
        centroids = _clamp(_update(centroids, refs, noisy_c.astype(np.float64), noisy_s.astype(np.float64)), domain)
    return KMeansResult(
        centroids=centroids,
        initial_centroids=start,
        history=history,
        sensitivities=[(h.sensitivity.size, h.sensitivity.sum) for h in history],
        epsilon=float(spent),
        epsilon_exact=spent,
        secure=gen.is_secure,
        plan=plan,
    )


def kmeans(
    points,
    policy: Policy,
    epsilon,
    generator: Generator | None = None,
    *,
    k: int = 4,
    iterations: int = 10,
    init="random",
    size_fraction=0.5,
) -> KMeansResult:
    """SuLQ k-means under a Blowfish policy (000 Sec 6), exact sensitivities.

    ``plan_kmeans(policy, epsilon, k=k, iterations=iterations, init=init,
    size_fraction=size_fraction).measure(points, generator)``.

    Each of ``iterations`` rounds (budget ``epsilon / iterations``, split
    ``size_fraction`` : ``1 - size_fraction`` between sizes and sums)
    assigns every point to its nearest public centroid, releases noisy
    cluster sizes and noisy cluster sums relative to the centroids rounded
    to the grid, and sets each centroid to ``reference + sum / size``
    (clusters with a noisy size below 1 keep their centroid; centroids are
    clamped into the domain's box).

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy: per round, sizes and sums are
        calibrated to their exact (or proven upper bound) sensitivity given
        the round's public centroids, with the cross-cluster correction to
        000 Lemma 6.1 (DESIGN.md sec 5); rounds compose sequentially (000
        Thm 4.1); ``result.epsilon_exact <= epsilon``.  Nothing fails or
        branches visibly on the points (n = 0 and n < k work).
    Citation
        000 Sec 6 (He, Machanavajjhala, Ding, SIGMOD 2014); SuLQ (Blum et
        al., PODS 2005); sampler: CKS 2020 Algorithm 2.
    Runtime
        Per round O(n k d) in C plus one sensitivity scan of the domain.
    Utility
        Centroid error about ``S_sum / (eps_sums * size)`` per coordinate
        and round (data dependent; per-round sensitivities in the history).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Records of the policy's domain as grid values (bin lower edges), any
        n >= 0.  Other values are mapped to the cell containing them,
        clamped into the domain's box (NaN to the lowest value): no error
        depends on the values.
    policy : Policy
        Policy without constraints on a domain of ordinal attributes.
    epsilon : float or Fraction, > 0
        Total budget; the spend (``result.epsilon_exact``) is never more.
    generator : Generator, optional
        Noise and random initialisation; a new secure one when omitted.
    k : int, default 4
        Clusters, ``1 <= k <= 64``.
    iterations : int, default 10
        Rounds, ``>= 1``.
    init : "random" or array_like, shape (k, d)
        Data-independent initial centroids: ``"random"`` draws k distinct
        cells of the domain from ``generator``; an array is used as given
        (inside the domain's box).
    size_fraction : float, default 0.5
        Share of each round's budget for the sizes, in (0, 1).

    Returns
    -------
    KMeansResult
        ``centroids``, ``history`` (per round: centroids, references,
        sensitivities and whether they are exact, epsilons, scales and the
        noisy releases), ``sensitivities``, the exact epsilon spent and the
        ``plan``.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, Generator, Policy, secrets
    >>> from blowfish_privacy.domain import Ordinal
    >>> dom = Domain([Ordinal("x", 0, 15), Ordinal("y", 0, 15)])
    >>> pts = np.random.default_rng(0).integers(0, 16, size=(500, 2))
    >>> r = kmeans(pts, Policy(dom, secrets.DistanceThreshold(2)), 1.0, Generator(seed=1), k=3)
    >>> r.centroids.shape, r.epsilon <= 1.0
    ((3, 2), True)
    """
    plan = plan_kmeans(policy, epsilon, k=k, iterations=iterations, init=init, size_fraction=size_fraction)
    return plan.measure(points, generator)


def lloyd(points, domain, init, *, iterations: int = 10) -> np.ndarray:
    """Non-private Lloyd k-means with the same assignment rule and update.

    Not private: for comparisons only (e.g. ``init=result.initial_centroids``
    of a :func:`kmeans` run).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Grid values of ``domain`` (as for :func:`kmeans`).
    domain : Domain or Policy
    init : array_like, shape (k, d)
        Initial centroids inside the domain's box.
    iterations : int, default 10

    Returns
    -------
    ndarray of float64, shape (k, d)
        The centroids after ``iterations`` rounds (an empty cluster keeps its
        centroid).
    """
    domain = _domain_of(domain)
    shape, low, width = _grid(domain)
    pts = _check_points(points, domain)
    arr = np.asarray(init)
    k = _check_k(arr.shape[0] if arr.ndim >= 1 else 0)
    centroids = _centroid_array(init, k, domain)
    iterations = as_int(iterations, "iterations", minimum=1)
    chunk = _chunk(domain)
    for _ in range(iterations):
        refs = _round_to_grid(centroids, low, width, shape)
        counts, sums = _assign(pts, centroids, refs, chunk)
        centroids = _update(centroids, refs, counts.astype(np.float64), sums.astype(np.float64))
    return centroids


def kmeans_objective(points, centroids) -> float:
    """The k-means objective (000 eq. 10): sum of squared Euclidean distances
    of the points to their nearest centroid.

    Parameters
    ----------
    points : array_like of real, shape (n, d)
    centroids : array_like of real, shape (k, d)

    Returns
    -------
    float
    """
    p = np.asarray(points, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    if p.ndim == 1:
        p = p.reshape(-1, 1)
    if c.ndim == 1 and p.shape[1] == 1:
        c = c.reshape(-1, 1)
    if p.ndim != 2 or c.ndim != 2 or p.shape[1] != c.shape[1] or c.shape[0] < 1:
        raise ValueError(f"points (n, d) and centroids (k, d) must agree on d, got {p.shape} and {c.shape}")
    if not (np.isfinite(p).all() and np.isfinite(c).all()):
        raise ValueError("points and centroids must be finite")
    total = 0.0
    step = max(1, (1 << 20) // c.shape[0])
    for s in range(0, p.shape[0], step):
        chunk = p[s : s + step]
        d2 = ((chunk[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        total += float(d2.min(axis=1).sum())
    return total
