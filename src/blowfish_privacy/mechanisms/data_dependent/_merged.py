"""Transformed counts and the merged policy graph G' shared by the transformed mechanisms.

Private, used by :mod:`.transformed` and :mod:`._matching` (Anuarbek,
Data-Dependent Blowfish Private Algorithm for Histogram Queries, 001 Sec
3-5): noisy counts through a tree embedding (x_T + Lap on every tree edge,
then the inverse), the merged graph G' of a bucketing (its edges, its
spanning tree), the bucket release and the plan of a data-dependent
mechanism whose second stage releases bucket counts.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ... import _streams
from ..cumulative._oh import stream_key, ts
from ...noise import Generator, calibration, discrete_laplace_variance
from ...policy._tree_embedding import spanning_tree_of_edges
from ...policy.transform import TreeEmbedding, inverse, line_tree, spanning_tree, transform
from ...policy.transform import tree_from_parent as tf_tree_from_parent
from ..histogram import check_histogram
from ..plan import NoisePart, Plan

#: Most merged edges listed for a 1-D threshold graph with non-contiguous buckets.
MERGED_EDGE_LIMIT = 50_000_000


def guarantee(policy, what: str) -> str:
    return f"(epsilon, P)-Blowfish privacy for P = {policy!r}, epsilon the plan's total ({what})"


def aggregate_check(size: int):
    def check(hist):
        return check_histogram(hist, "hist", size)

    return check


def noisy_transformed(counts: np.ndarray, emb: TreeEmbedding, scale: Fraction, gen: Generator) -> np.ndarray:
    """Integer noisy counts via x_T + Lap(scale) on every tree edge, mapped back.

    The noise of the non-root vertices (in vertex order, chunk g of
    ``_streams.STREAM_CELLS`` vertices from stream g of a key taken from
    ``gen``) is drawn inside the kernels, each chunk's before its values
    are read; the line tree takes one C pass (x_T never in memory), other
    trees subtree sums, the noise in place and the inverse.  Each non-root
    vertex's noise enters its own count and its parent's, so the summed
    variance is var * 2 (|T| - 1).
    """
    N = emb.size
    if scale == 0 or N == 1 or getattr(gen, "needs_values", False):
        # no noise, or the auditor's generators (they see each noisy value
        # with its true one): the same draws through add_discrete_laplace
        xg = transform(counts, emb)
        nonroot = emb.parent >= 0
        if scale != 0:
            xg[nonroot] = gen.add_discrete_laplace(xg[nonroot], scale)
        return inverse(xg, emb)
    # the noise is drawn in the kernels' threads, chunk by chunk of
    # vertices just before the chunk's values are read (stream g of a key
    # taken from gen for chunk g): no noise vector in memory
    t, s = ts(scale)
    threads = getattr(gen, "threads", 1)
    key = stream_key(gen)
    try:
        if emb.is_line:
            return _streams.line_noisy_counts_streams(counts, key, t, s, threads=threads)
        xg = transform(counts, emb)
        _streams.add_nonroot_streams(xg, emb.parent, key, t, s, threads=threads)
    finally:
        key.fill(0)
    return inverse(xg, emb)


# ---------------------------------------------------------------------------
# merged policy graph G'


def _policy_edges(policy) -> tuple[np.ndarray, np.ndarray]:
    domain = policy.domain
    g = policy.secrets
    theta = g.line_threshold(domain)
    if theta is not None:
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
    g = policy.secrets
    if n_buckets == 1:
        return line_tree(1)
    if g.is_complete():  # merging keeps the graph complete: a star, stretch 2
        parent = np.zeros(n_buckets, dtype=np.int64)
        parent[0] = -1
        return tf_tree_from_parent(parent, stretch=2 if n_buckets > 2 else 1)
    contiguous = bool(np.all(np.diff(buckets) >= 0))
    theta = g.line_threshold(policy.domain)
    if theta is not None and contiguous:
        N = buckets.size
        far = buckets[np.minimum(np.arange(N) + theta, N - 1)] - buckets
        return line_tree(n_buckets).with_stretch(max(int(far.max()), 1))
    return _tree_of_merged_edges(*_policy_edges(policy), buckets, n_buckets)


def _tree_of_merged_edges(lo, hi, buckets: np.ndarray, n_buckets: int) -> TreeEmbedding:
    """BFS spanning tree (with stretch) of G' from the edges (lo, hi) of G: buckets joined by an edge of G."""
    a, b = buckets[lo], buckets[hi]
    keep = a != b
    a, b = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    key = np.unique(a * n_buckets + b)
    return spanning_tree_of_edges(n_buckets, key // n_buckets, key % n_buckets)


def bucket_release(hist, buckets, n_buckets, policy, eps2, gen, edges=None):
    """Noisy bucket counts under (eps2, G'), by whichever of two data-independent
    options has the smaller total variance given the (public) buckets:
    transformed Laplace on a spanning tree of G' (stretch l, scale l/eps2), or
    plain Laplace on the bucket histogram (sensitivity 2 under G', scale
    2/eps2).  Each spends at most eps2.  ``edges`` (lo, hi): the edges of G
    when the caller lists them (the 2-D grids of :mod:`.hilbert`); G' is
    then built from them instead of from the policy.
    Returns (noisy counts, epsilon spent, method, noise variance summed over
    the values, stretch)."""
    counts = np.zeros(n_buckets, dtype=np.int64)
    np.add.at(counts, buckets, hist)
    if n_buckets == 1:  # the one bucket's count is the public total
        return counts, Fraction(0), "none", 0.0, 1
    emb = (merged_tree(policy, buckets, n_buckets) if edges is None
           else _tree_of_merged_edges(*edges, buckets, n_buckets))
    sizes = np.bincount(buckets, minlength=n_buckets).astype(np.float64)
    cal_t = calibration(emb.stretch, eps2)
    var_t = discrete_laplace_variance(cal_t.scale)
    nonroot = (emb.parent >= 0).astype(np.float64)
    tvar = var_t * (nonroot + emb.n_children())
    cal_l = calibration(2, eps2)
    lvar = np.full(n_buckets, discrete_laplace_variance(cal_l.scale))
    if float(np.sum(tvar / sizes)) <= float(np.sum(lvar / sizes)):
        noisy = noisy_transformed(counts, emb, cal_t.scale, gen)
        return noisy, cal_t.epsilon_exact, "transformed", float(np.sum(tvar / sizes)), emb.stretch
    noisy = gen.add_discrete_laplace(counts, cal_l.scale)
    return noisy, cal_l.epsilon_exact, "laplace", float(np.sum(lvar / sizes)), emb.stretch


def counts_part(eps2: Fraction) -> NoisePart:
    cal_l = calibration(2, eps2)
    return NoisePart(
        "counts", None, False,
        "bucket counts under (eps2, G'), G' the secret graph with every bucket merged "
        "(Lemma 4.1 of the data-dependent Blowfish report): transformed "
        f"Laplace of scale l'/eps2 (l' the stretch of G', known once the partition is released) or Laplace of "
        f"scale {cal_l.scale} (sensitivity 2), whichever has the smaller variance given the public buckets; "
        "either spends at most eps2; one noisy value per bucket (data dependent, at most |T|)",
        eps2, None, None)


def check_merged_graph(policy, contiguous: bool) -> None:
    """Refuse in the plan what merged_tree could not do in the measurement."""
    g = policy.secrets
    if g.is_complete():  # complete, any size: merged buckets embed as a star
        return
    theta = g.line_threshold(policy.domain)
    if theta is not None:
        if theta < 1:
            raise ValueError(f"policy: the secret graph {g!r} has no edges on this domain; nothing is secret")
        if not contiguous and theta * policy.domain.size > MERGED_EDGE_LIMIT:
            raise ValueError(
                f"policy: merging buckets under {g!r} on {policy.domain.size} values lists theta * |T| = "
                f"{theta * policy.domain.size} edges, more than {MERGED_EDGE_LIMIT}; use a smaller domain or dawa_transformed")
        return
    # other graphs: connected and listable (the same limit as the measurement's edge list)
    spanning_tree(policy)


def data_dependent_plan(mechanism, policy, eps, r, first: NoisePart, eps2, options, runtime, memory, run) -> Plan:
    N = policy.domain.size
    parts = (first, counts_part(eps2))
    return Plan(
        mechanism=mechanism, policy=policy,
        guarantee=guarantee(policy, f"sequential composition of the {first.name} at "
                                     f"{first.epsilon} and the bucket counts at {eps2}, "
                                     "Section 4 of the data-dependent Blowfish report"),
        citation=("Anuarbek, Data-Dependent Blowfish Private Algorithm for Histogram Queries, Sections 4-5 (Lemma 4.1, "
                  "Theorem 5.2); Haney, Machanavajjhala, Ding, VLDB 2015"),
        epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape ({N},), non-negative", aggregate_shape=(N,),
        expected_error={}, memory_bytes=memory, runtime=runtime,
        options={"ratio": r, **options}, check=aggregate_check(N), run=run,
    )
