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
    6.1, Fig 1); Machanavajjhala, He, Hay, CACM 2015, 002 (Fig 2); SuLQ:
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

import numpy as np

from .. import _core
from .._validation import as_fraction, as_int, check_epsilon
from ..domain import Domain, Ordinal
from ..noise import Generator, as_generator
from ..policy import Policy
from ..secrets import Attribute, DistanceThreshold, FullDomain, Partition
from .laplace import calibrate

__all__ = [
    "KMeansIteration",
    "KMeansResult",
    "KMeansSensitivity",
    "kmeans",
    "kmeans_objective",
    "kmeans_sensitivity",
    "lloyd",
    "OFFSET_SCAN_LIMIT",
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
_MAX_K = _core.KMEANS_MAXK
_SAFE = 2**62


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
        How they were computed: "cliques", "edge offsets", "edge list",
        "bisector bound", "complete-graph bound" or "no edges".
    same_cluster, cross_cluster : int
        The two parts of ``sum``: largest change by an edge inside one
        cluster, and by an edge across two clusters (-1: no such edge).
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
class KMeansResult:
    """The result of :func:`kmeans`.

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
        The same, exactly: the sum of every round's spends.
    secure : bool
        False when the generator was seeded (not for real releases).
    """

    centroids: np.ndarray
    initial_centroids: np.ndarray
    history: list = field(repr=False)
    sensitivities: list
    epsilon: float
    epsilon_exact: Fraction
    secure: bool

    @property
    def all_exact(self) -> bool:
        """Whether every sensitivity used was exact (not only a bound)."""
        return all(h.sensitivity.size_exact and h.sensitivity.sum_exact for h in self.history)


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


def _points(points, domain: Domain) -> np.ndarray:
    """Points as an (n, d) int64 array of grid values of ``domain``."""
    arr = np.asarray(points)
    d = domain.ndim
    if arr.ndim == 1 and d == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2 or arr.shape[1] != d:
        raise ValueError(f"points must have shape (n, {d}) for a domain of {d} attributes, got shape {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError("points must hold at least one point, got 0")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("points must be finite, got NaN or infinity")
        if not (arr == np.round(arr)).all():
            bad = tuple(np.argwhere(arr != np.round(arr))[0])
            raise ValueError(
                f"points must be integer grid values of the domain, got non-integer points{list(bad)} = "
                f"{arr[bad]!r}; put continuous data on a grid first (round to a chosen granularity and use an "
                f"Ordinal domain with that bin width)"
            )
        if np.abs(arr).max() >= 2.0**62:
            raise ValueError("points must lie inside the domain, got values beyond 2**62")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"points must be a numeric array of grid values, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    for a, attr in enumerate(domain.attributes):
        col = arr[:, a]
        lo, hi = int(col.min()), int(col.max())
        if lo < attr.low or hi > attr.last_value:
            i = int(np.argmax((col < attr.low) | (col > attr.last_value)))
            raise ValueError(
                f"points must lie inside the domain: attribute {attr.name!r} allows {attr.low}..{attr.last_value}, "
                f"got points[{i}, {a}] = {int(col[i])}"
            )
        if attr.bin_width != 1:
            off = (col - attr.low) % attr.bin_width
            if off.any():
                i = int(np.argmax(off != 0))
                raise ValueError(
                    f"points must be grid values (bin lower edges): attribute {attr.name!r} has bins of width "
                    f"{attr.bin_width} from {attr.low}, got points[{i}, {a}] = {int(col[i])}"
                )
    spans = sum(a.span for a in domain.attributes)
    if arr.shape[0] * max(spans, 1) >= _SAFE:
        raise ValueError(
            f"points: n * (sum of attribute spans) must stay below 2**62 so that sums fit int64, got "
            f"n = {arr.shape[0]} and spans summing to {spans}"
        )
    return arr


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
        (clique scans, O(|T| k d)), for DistanceThreshold when ``|T|`` times
        the number of edge offsets is at most :data:`OFFSET_SCAN_LIMIT`, and
        for any graph on at most 4096 values; otherwise a proven upper bound
        (``sum_exact=False``): for DistanceThreshold the bisector bound, for
        other graphs (a Custom graph or a listed Partition on a large
        domain) the complete graph's value, as every edge is one of its.

    Raises
    ------
    ValueError
        If the domain is not a grid of ordinal attributes.
    """
    policy = _check_policy(policy)
    domain, g = policy.domain, policy.secrets
    shape, low, width = _grid(domain)
    c = np.ascontiguousarray(centroids, dtype=np.float64)
    r = np.ascontiguousarray(references, dtype=np.int64)
    if c.ndim != 2 or c.shape[1] != domain.ndim or r.shape != c.shape:
        raise ValueError(
            f"centroids and references must both have shape (k, {domain.ndim}), got {c.shape} and {r.shape}"
        )
    k = c.shape[0]
    if not g.has_edge(domain):
        return KMeansSensitivity(0, 0, True, True, "no edges", 0, -1)

    masks = _clique_masks(policy)
    if masks is not None:
        same, cross = 0, -1
        for m in masks:
            s, x = _core.kmeans_clique_scan(shape, low, width, c, r, m)
            same, cross = max(same, s), max(cross, x)
        return _combine(same, cross, True, "cliques")

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
    same, cross = _core.kmeans_clique_scan(shape, low, width, c, r, 0)
    return _combine(same, cross, False, "complete-graph bound", size_exact=cross < 0)


# ---------------------------------------------------------------------------
# the mechanisms
# ---------------------------------------------------------------------------
def _check_k(k, n: int) -> int:
    k = as_int(k, "k", minimum=1)
    if k > n:
        raise ValueError(f"k must be at most the number of points n = {n}, got k = {k}")
    if k > _MAX_K:
        raise ValueError(f"k must be at most {_MAX_K}, got {k}")
    return k


def _update(centroids, refs, sizes, sums):
    """New centroids ``ref + sum / size``; clusters with size < 1 keep theirs."""
    out = centroids.copy()
    ok = sizes >= 1
    out[ok] = refs[ok] + sums[ok] / sizes[ok, None]
    return out


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

    Each of ``iterations`` rounds (budget ``epsilon / iterations``, split
    ``size_fraction`` : ``1 - size_fraction`` between sizes and sums)
    assigns every point to its nearest public centroid, releases noisy
    cluster sizes and noisy cluster sums relative to the centroids rounded
    to the grid, and sets each centroid to ``reference + sum / size``
    (clusters with a noisy size below 1 keep their centroid; centroids are
    clamped into the domain's box).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Records of the policy's domain as grid values (bin lower edges);
        integer-valued floats are accepted, other reals are refused: put
        continuous data on a grid first.
    policy : Policy
        Policy without constraints on a domain of ordinal attributes.
    epsilon : float or Fraction, > 0
        Total budget; the spend (``result.epsilon_exact``) is never more.
    generator : Generator, optional
        Noise and random initialisation; a new secure one when omitted.
    k : int, default 4
        Clusters, ``1 <= k <= min(n, 64)``.
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
        noisy releases), ``sensitivities`` and the exact epsilon spent.

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
    policy = _check_policy(policy)
    domain = policy.domain
    shape, low, width = _grid(domain)
    pts = _points(points, domain)
    k = _check_k(k, pts.shape[0])
    iterations = as_int(iterations, "iterations", minimum=1)
    eps = check_epsilon(epsilon)
    frac = as_fraction(size_fraction, "size_fraction")
    if not (0 < frac < 1):
        raise ValueError(f"size_fraction must lie strictly between 0 and 1, got {size_fraction!r}")
    gen = as_generator(generator)
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"init must be 'random' or an array of shape ({k}, {domain.ndim}), got {init!r}")
        start = _random_init(domain, k, gen)
    else:
        start = _centroid_array(init, k, domain)

    eps_round = eps / iterations
    eps_size, eps_sum = eps_round * frac, eps_round * (1 - frac)
    centroids = start.copy()
    history: list[KMeansIteration] = []
    spent = Fraction(0)
    for _ in range(iterations):
        refs = _round_to_grid(centroids, low, width, shape)
        sens = kmeans_sensitivity(policy, centroids, refs)
        cal_c = calibrate(sens.size, eps_size)
        cal_s = calibrate(sens.sum, eps_sum)
        counts, sums, _ = _core.kmeans_assign(pts, centroids, refs)
        noisy_c = counts if cal_c.scale == 0 else gen.add_discrete_laplace(counts, cal_c.scale)
        noisy_s = sums if cal_s.scale == 0 else gen.add_discrete_laplace(sums, cal_s.scale)
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
    )


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
    pts = _points(points, domain)
    arr = np.asarray(init)
    k = arr.shape[0] if arr.ndim >= 1 else 0
    k = _check_k(k, pts.shape[0])
    centroids = _centroid_array(init, k, domain)
    iterations = as_int(iterations, "iterations", minimum=1)
    for _ in range(iterations):
        refs = _round_to_grid(centroids, low, width, shape)
        counts, sums, _ = _core.kmeans_assign(pts, centroids, refs)
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
