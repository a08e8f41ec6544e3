"""Blowfish histograms through transformational equivalence (001 Sec 3-5).

``transformed_laplace``
    Laplace on x_G (one count per tree edge), mapped back: the data
    independent "Transformed + Laplace" of 001 Fig 4.
``dawa_transformed``
    001 Sec 4 + 5.1: DAWA's private partition, then transformed Laplace on
    the bucket counts under the merged policy graph G', then uniform
    expansion.
``matching_transformed``
    001 Sec 4 + 5.2: buckets of at most two values from a minimum-cost
    matching, then as above.

Privacy guarantee
    All three are (epsilon, G)-Blowfish for the policy's secret graph G
    (no constraints).  Transformed Laplace: a move along an edge (u, v) of G
    changes x_T on the d_T(u, v) edges of the tree path, at most the
    stretch l of the embedding (l = 1 when G is a tree: 001 Def 3.3), so
    noise of scale l/epsilon suffices (000 Thm 5.1).  The total n is public
    (bounded neighbours) and is not perturbed.  Data-dependent ones:
    sequential composition of an (eps1, G) partition and (eps2, G) bucket
    counts (001 Sec 4): a bounded-DP partition is (eps1, G) for every G, and
    answering the bucket counts x' under (eps2, G') -- G' is G with every
    bucket merged into one vertex -- is (eps2, G) for W_m x (001 Lemma 4.1).
Citation
    001 (Anuarbek) Sec 3-5; Haney, Machanavajjhala, Ding, VLDB 2015.
Runtime
    transform and inverse O(|T|); spanning trees of non-tree graphs
    O(|E| + |T| depth) on domains small enough to list their edges (the
    1-D distance-threshold graphs use the line, any size); the partition
    steps as in their functions.
Utility
    ``expected_squared_error``: exact noise variance summed over values (for
    the data-dependent mechanisms, given the buckets, without the bias of
    uniform expansion).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .._validation import check_epsilon
from ..noise import Generator, as_generator, discrete_laplace_variance
from ..transform import TreeEmbedding, inverse, line_tree, spanning_tree, spanning_tree_of_edges, transform
from ..transform import tree_from_parent as tf_tree_from_parent
from .dawa import dawa_partition
from .histogram import HistogramRelease, check_histogram, check_policy, check_ratio, uniform_expansion
from .laplace import calibrate

__all__ = ["dawa_transformed", "matching_transformed", "min_cost_pairs", "transformed_laplace"]

#: Largest domain for the literal 001 Sec 5.2 method (noise on every edge of
#: the complete graph and an exact search over all matchings).
EDGE_METHOD_LIMIT = 14


# ---------------------------------------------------------------------------
# transformed Laplace on any embedding


def _noisy_transformed(counts: np.ndarray, emb: TreeEmbedding, eps: Fraction, gen: Generator):
    """Integer noisy counts via x_T + Lap(stretch/eps); returns (noisy, calibration, per-value variance)."""
    cal = calibrate(emb.stretch, eps)
    xg = transform(counts, emb)
    nonroot = emb.parent >= 0
    noisy = xg.copy()
    noisy[nonroot] = gen.add_discrete_laplace(xg[nonroot], cal.scale)
    est = inverse(noisy, emb)
    var = discrete_laplace_variance(cal.scale)
    per_value = var * (nonroot.astype(np.float64) + emb.n_children())
    return est, cal, per_value


def transformed_laplace(
    hist, policy, epsilon, generator: Generator | None = None, *, tree: TreeEmbedding | None = None
) -> HistogramRelease:
    """Transformed + Laplace: discrete Laplace on x_G, mapped back exactly.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
        Its secret graph G; a tree gives stretch 1, other connected graphs
        are embedded in a spanning tree and pay its stretch.
    epsilon : float
    generator : Generator, optional
    tree : TreeEmbedding, optional
        A spanning tree of G to use instead of :func:`transform.spanning_tree`
        (its ``stretch`` must be correct for G).

    Returns
    -------
    HistogramRelease
        int64 noisy counts (unbiased, may be negative), summing to n.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, Generator, Policy, mechanisms, secrets
    >>> pol = Policy(Domain.ordinal("x", 0, 7), secrets.Line())
    >>> r = mechanisms.transformed_laplace(np.arange(8), pol, 1.0, Generator(seed=1))
    >>> int(r.histogram.sum()), r.stretch
    (28, 1)
    """
    hist = check_histogram(hist)
    check_policy(policy, hist)
    eps = check_epsilon(epsilon)
    gen = as_generator(generator)
    emb = spanning_tree(policy) if tree is None else tree
    if not isinstance(emb, TreeEmbedding) or emb.size != hist.size:
        raise ValueError(f"tree must be a TreeEmbedding on {hist.size} values, got {tree!r}")
    est, cal, per_value = _noisy_transformed(hist, emb, eps, gen)
    return HistogramRelease(
        histogram=est,
        mechanism="transformed_laplace",
        epsilon=cal.epsilon,
        epsilon_exact=cal.epsilon_exact,
        epsilon_parts={"counts": cal.epsilon_exact},
        guarantee=repr(policy.secrets),
        secure=gen.is_secure,
        stretch=emb.stretch,
        expected_squared_error=float(per_value.sum()),
        params={"scale": cal.scale},
    )


# ---------------------------------------------------------------------------
# merged policy graph G'


def _policy_edges(policy) -> tuple[np.ndarray, np.ndarray]:
    from ..secrets import DistanceThreshold

    domain = policy.domain
    g = policy.secrets
    if isinstance(g, DistanceThreshold) and domain.ndim == 1:
        theta = int(policy.sensitivity("cumulative"))
        N = domain.size
        if theta * N > 50_000_000:
            raise ValueError(f"the merged graph of a threshold {theta} on {N} values has too many edges to list")
        lo = np.concatenate([np.arange(N - d, dtype=np.int64) for d in range(1, theta + 1)] or [np.zeros(0, np.int64)])
        hi = np.concatenate([np.arange(d, N, dtype=np.int64) for d in range(1, theta + 1)] or [np.zeros(0, np.int64)])
        return lo, hi
    return g.iter_edges(domain)


def merged_tree(policy, buckets: np.ndarray, n_buckets: int) -> TreeEmbedding:
    """Spanning tree (with stretch) of G', the secret graph with every bucket merged.

    Contiguous buckets under a 1-D distance-threshold graph give the line
    over buckets; otherwise the merged edges are listed and a BFS tree
    from a central bucket is used.
    """
    from ..secrets import DistanceThreshold, FullDomain

    g = policy.secrets
    if n_buckets == 1:
        return line_tree(1)
    if isinstance(g, FullDomain):  # merging keeps the graph complete: a star, stretch 2
        parent = np.zeros(n_buckets, dtype=np.int64)
        parent[0] = -1
        t = tf_tree_from_parent(parent)
        return TreeEmbedding(t.parent, t.root, 2 if n_buckets > 2 else 1, t.order, t.is_line)
    contiguous = bool(np.all(np.diff(buckets) >= 0))
    if isinstance(g, DistanceThreshold) and policy.domain.ndim == 1 and contiguous:
        theta = int(policy.sensitivity("cumulative"))
        N = buckets.size
        far = buckets[np.minimum(np.arange(N) + theta, N - 1)] - buckets
        t = line_tree(n_buckets)
        return TreeEmbedding(t.parent, t.root, max(int(far.max()), 1), None, True)
    lo, hi = _policy_edges(policy)
    a, b = buckets[lo], buckets[hi]
    keep = a != b
    a, b = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    key = np.unique(a * n_buckets + b)
    return spanning_tree_of_edges(n_buckets, key // n_buckets, key % n_buckets)


def _bucket_release(hist, buckets, n_buckets, policy, eps2, gen):
    """Noisy bucket counts under (eps2, G'), by whichever of two data-independent
    options has the smaller total variance given the (public) buckets:
    transformed Laplace on a spanning tree of G' (stretch l), or plain
    Laplace on the bucket histogram (sensitivity 2 under G')."""
    counts = np.zeros(n_buckets, dtype=np.int64)
    np.add.at(counts, buckets, hist)
    if n_buckets == 1:  # the one bucket's count is the public total
        return counts, Fraction(0), "none", 0.0, 1
    emb = merged_tree(policy, buckets, n_buckets)
    sizes = np.bincount(buckets, minlength=n_buckets).astype(np.float64)
    cal_t = calibrate(emb.stretch, eps2)
    var_t = discrete_laplace_variance(cal_t.scale)
    nonroot = (emb.parent >= 0).astype(np.float64)
    tvar = var_t * (nonroot + emb.n_children())
    cal_l = calibrate(2, eps2)
    lvar = np.full(n_buckets, discrete_laplace_variance(cal_l.scale))
    if float(np.sum(tvar / sizes)) <= float(np.sum(lvar / sizes)):
        noisy, cal, per = _noisy_transformed(counts, emb, eps2, gen)
        return noisy, cal.epsilon_exact, "transformed", float(np.sum(per / sizes)), emb.stretch
    noisy = gen.add_discrete_laplace(counts, cal_l.scale)
    return noisy, cal_l.epsilon_exact, "laplace", float(np.sum(lvar / sizes)), emb.stretch


def dawa_transformed(
    hist, policy, epsilon, generator: Generator | None = None, *, ratio=0.5
) -> HistogramRelease:
    """DAWA + Transformed (001 Sec 4, 5.1): private intervals, transformed bucket counts.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
        The secret graph G (any connected graph; 1-D threshold graphs of any
        size, others small enough to list edges).
    epsilon : float
        Total, as (epsilon, G)-Blowfish.
    generator : Generator, optional
    ratio : float in (0, 1)
        eps1 = ratio * epsilon for the partition (001 uses 0.5).

    Returns
    -------
    HistogramRelease
        float64 histogram after uniform expansion; ``buckets`` the partition.

    Notes
    -----
    Step 1 is :func:`dawa_partition` at eps1 (bounded DP, "eps1/2 of DP" in
    001's unbounded terms), with DAWA's own penalty: the scale 2/eps2 of a
    DP bucket count (001 keeps DAWA's first step unchanged).  Step 2 uses
    the merged graph G' (a line of intervals for the line policy, stretch
    1); when G' embeds with a large stretch, plain Laplace on the bucket
    counts (sensitivity 2) is used if its variance is smaller -- both are
    (eps2, G')-Blowfish and the choice only depends on the public buckets.
    """
    hist = check_histogram(hist)
    check_policy(policy, hist)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    gen = as_generator(generator)
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibrate(2, eps2).scale)
    part = dawa_partition(hist, eps1, gen, penalty=penalty)
    noisy, e2, how, err, stretch = _bucket_release(hist, part.buckets, part.n_buckets, policy, eps2, gen)
    total = part.epsilon_exact + e2
    return HistogramRelease(
        histogram=uniform_expansion(noisy, part.buckets),
        mechanism="dawa_transformed",
        epsilon=float(total),
        epsilon_exact=total,
        epsilon_parts={"partition": part.epsilon_exact, "counts": e2},
        guarantee=repr(policy.secrets),
        secure=gen.is_secure,
        buckets=part.buckets,
        stretch=stretch,
        expected_squared_error=err,
        params={"ratio": float(r), "n_buckets": part.n_buckets, "counts_by": how},
    )


# ---------------------------------------------------------------------------
# matching


def min_cost_pairs(values, penalty: float) -> np.ndarray:
    """Exact minimum-cost partition of ``values`` into singletons and pairs.

    Cost of a pair {i, j}: |v_i - v_j| + penalty; of a singleton: penalty
    (001 Sec 5.2).  Some optimal partition pairs only neighbours in sorted
    order (uncrossing a crossing or nested pair, or a pair around a
    singleton, never raises the cost), so a dynamic program over the sorted
    values is exact: O(n log n).  Returns the bucket id of every value.
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    order = np.argsort(v, kind="stable")
    s = v[order]
    best = np.zeros(n + 1)
    take_pair = np.zeros(n + 1, dtype=bool)
    best[1] = penalty
    for i in range(2, n + 1):
        single = best[i - 1] + penalty
        pair = best[i - 2] + (s[i - 1] - s[i - 2]) + penalty
        if pair < single:
            best[i], take_pair[i] = pair, True
        else:
            best[i] = single
    bucket_sorted = np.empty(n, dtype=np.int64)
    i, b = n, 0
    groups = []
    while i > 0:
        if take_pair[i]:
            groups.append((i - 2, i))
            i -= 2
        else:
            groups.append((i - 1, i))
            i -= 1
    for b, (lo, hi) in enumerate(reversed(groups)):
        bucket_sorted[lo:hi] = b
    buckets = np.empty(n, dtype=np.int64)
    buckets[order] = bucket_sorted
    return _canonical(buckets)


def _canonical(buckets: np.ndarray) -> np.ndarray:
    """Renumber buckets in order of their first value."""
    _, first = np.unique(buckets, return_index=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[buckets]


def _exact_noisy_matching(hist: np.ndarray, penalty: float, noise: dict) -> np.ndarray:
    """Exact least noisy-cost partition into pairs and singletons (all matchings, memoised)."""
    n = hist.size
    x = hist.astype(np.float64)
    from functools import lru_cache

    full = (1 << n) - 1

    @lru_cache(maxsize=None)
    def f(mask: int) -> tuple[float, tuple]:
        if mask == full:
            return 0.0, ()
        i = (~mask & (mask + 1)).bit_length() - 1  # lowest free value
        c, rest = f(mask | (1 << i))
        best = (c + penalty, ((i,),) + rest)
        for j in range(i + 1, n):
            if not mask >> j & 1:
                c, rest = f(mask | (1 << i) | (1 << j))
                cand = c + abs(x[i] - x[j]) + penalty + noise[(i, j)]
                if cand < best[0]:
                    best = (cand, ((i, j),) + rest)
        return best

    _, groups = f(0)
    buckets = np.empty(n, dtype=np.int64)
    for b, grp in enumerate(groups):
        buckets[list(grp)] = b
    return _canonical(buckets)


def matching_transformed(
    hist, policy, epsilon, generator: Generator | None = None, *, ratio=0.5, method: str = "auto"
) -> HistogramRelease:
    """Matching + Transformed (001 Sec 4, 5.2): buckets of at most two values.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
    epsilon : float
        Total, as (epsilon, G)-Blowfish.
    generator : Generator, optional
    ratio : float in (0, 1)
        eps1 = ratio * epsilon for the matching.
    method : {"auto", "edges", "counts"}
        ``"edges"`` is 001 Sec 5.2 literally: integer Laplace noise on the
        cost |x_i - x_j| of every pair (weight of a primary edge of the
        complete graph), then the exact optimum over all matchings (max
        weight matching = min noisy cost partition, Thm 5.1); only for
        |T| <= 14.  Privacy: under adding/removing a record every partition
        has exactly one bucket containing the changed value and a pair cost
        moves by at most 1, so 001 Thm 5.2's argument needs scale 2/eps_u;
        bounded neighbours are two such steps: scale 4/eps1.
        ``"counts"`` (any size): the noisy histogram from
        :func:`transformed_laplace` at (eps1, G), then the exact minimum-cost
        pairing of the noisy counts by :func:`min_cost_pairs` -- post
        processing, so any pairing algorithm keeps the guarantee; edge
        weights |x~_i - x~_j| are computed from the noisy counts.
        ``"auto"``: edges up to 14 values, counts above.

    Returns
    -------
    HistogramRelease
    """
    hist = check_histogram(hist)
    check_policy(policy, hist)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    gen = as_generator(generator)
    if method not in ("auto", "edges", "counts"):
        raise ValueError(f"method must be 'auto', 'edges' or 'counts', got {method!r}")
    if method == "auto":
        method = "edges" if hist.size <= EDGE_METHOD_LIMIT else "counts"
    if method == "edges" and hist.size > EDGE_METHOD_LIMIT:
        raise ValueError(f"method='edges' searches every matching and is limited to |T| <= {EDGE_METHOD_LIMIT}, got {hist.size}")
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibrate(1, eps2).scale)  # 001: 1/eps2 per bucket
    if method == "edges":
        cal1 = calibrate(2, eps1 / 2)
        n = hist.size
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        z = gen.discrete_laplace(cal1.scale, size=len(pairs))  # before the data
        buckets = _exact_noisy_matching(hist, penalty, {p: float(v) for p, v in zip(pairs, z)})
        e1 = 2 * cal1.epsilon_exact
    else:
        first = transformed_laplace(hist, policy, eps1, gen)
        buckets = min_cost_pairs(first.histogram, penalty)
        e1 = first.epsilon_exact
    n_buckets = int(buckets.max()) + 1
    noisy, e2, how, err, stretch = _bucket_release(hist, buckets, n_buckets, policy, eps2, gen)
    total = e1 + e2
    return HistogramRelease(
        histogram=uniform_expansion(noisy, buckets),
        mechanism="matching_transformed",
        epsilon=float(total),
        epsilon_exact=total,
        epsilon_parts={"matching": e1, "counts": e2},
        guarantee=repr(policy.secrets),
        secure=gen.is_secure,
        buckets=buckets,
        stretch=stretch,
        expected_squared_error=err,
        params={"ratio": float(r), "method": method, "n_buckets": n_buckets, "counts_by": how},
    )
