"""Transformational equivalence for tree policy graphs (001 Sec 3).

Haney, Machanavajjhala and Ding (VLDB 2015) show that for a secret graph G
that is a tree, moving one record along an edge (u, v) of G changes exactly
one entry of the transformed database x_G = P_G^{-1} x by one: rooting the
tree, x_G holds, for every non-root vertex v, the number of records in the
subtree of v (the count carried by the edge from v to its parent).  So an
epsilon-DP mechanism for x_G (sensitivity 1 per edge move) is an
(epsilon, G)-Blowfish mechanism for x.  Here x_G has one entry per vertex:
``x_G[v]`` is the subtree count of v and ``x_G[root]`` the total n (public
under Blowfish's bounded neighbours; mechanisms never add noise to it).

For the line graph rooted at the last value, x_G is the cumulative
histogram.  A secret graph that is not a tree is embedded in a spanning
tree T; a move along an edge (u, v) of G then changes x_T on the d_T(u, v)
edges of the tree path, so the sensitivity is the *stretch*
l = max over edges (u, v) of G of d_T(u, v), and epsilon is paid l times
(001 Sec 2, approximate transformational equivalence).

Both directions take O(|T|) time by subtree sums (C kernels); no matrix is
ever formed or inverted.

:class:`TreeEmbedding` and its checks live in :mod:`._tree_embedding`; the
names listed in ``__all__`` here are this module's public API.
"""

from __future__ import annotations

import numbers
from collections import deque

import numpy as np
import numpy.typing as npt

from .. import _transform, _tree
from ._tree_embedding import TreeEmbedding, is_line_parent, as_c_int64, spanning_tree_of_edges
from .domain import Domain
from ._policy import Policy, require_policy

__all__ = [
    "TreeEmbedding",
    "inverse",
    "line_tree",
    "spanning_tree",
    "transform",
    "tree_from_parent",
    "tree_stretch",
]


def line_tree(size: int) -> TreeEmbedding:
    """The line 0 - 1 - ... - (size-1) rooted at the last vertex (stretch 1)."""
    if isinstance(size, bool) or not isinstance(size, (numbers.Integral, np.integer)) or int(size) < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    size = int(size)
    parent = np.arange(1, size + 1, dtype=np.int64)
    parent[-1] = -1
    parent.flags.writeable = False
    return TreeEmbedding._trusted(parent.view(), size - 1, 1, None, True)


def tree_from_parent(parent: npt.ArrayLike, *, stretch: int = 1) -> TreeEmbedding:
    """A :class:`TreeEmbedding` from a parent array, checked to be one rooted tree.

    Parameters
    ----------
    parent : array_like of int, shape (n,)
        ``parent[v]`` in [0, n) or -1 for exactly one vertex (the root).
    stretch : int >= 1
        Stretch of the embedding (1 when the secret graph is this tree).

    Raises
    ------
    ValueError
        If there is not exactly one root, a parent is out of range, or the
        parent links contain a cycle (some vertex is not reachable from the
        root).  O(n log depth), before anything reaches C.
    """
    p = np.asarray(parent)
    if p.ndim != 1 or p.size == 0 or p.dtype.kind not in "iu":
        raise ValueError(f"parent must be a non-empty 1-D integer array, got dtype {p.dtype} and shape {p.shape}")
    roots = np.flatnonzero(p.astype(np.int64, copy=False) == -1) if p.dtype.kind == "i" else np.zeros(0)
    if roots.size != 1:
        raise ValueError(f"parent must mark exactly one root with -1, got {roots.size} roots")
    root = int(roots[0])
    pp = as_c_int64(p, "parent") if p.dtype.kind == "i" else p
    return TreeEmbedding(pp, root, stretch, None, is_line_parent(np.asarray(pp), root))


def _bfs_parents(n: int, adj: list[list[int]], root: int) -> np.ndarray:
    parent = np.full(n, -2, dtype=np.int64)
    parent[root] = -1
    queue = deque([root])
    while queue:
        v = queue.popleft()
        for w in adj[v]:
            if parent[w] == -2:
                parent[w] = v
                queue.append(w)
    return parent


def spanning_tree(policy: Policy) -> TreeEmbedding:
    """A spanning tree of the policy's secret graph and its stretch.

    Parameters
    ----------
    policy : Policy
        Without constraints.  Graphs with a closed-form tree
        (:meth:`~blowfish_privacy.policy.secrets.SecretGraph.tree_embedding`)
        need no edge list: a 1-D ``Line()`` / ``DistanceThreshold`` gives the
        line (stretch = the threshold in bins), a complete graph
        (``FullDomain``) the star at value 0 (stretch 2), on any size of
        domain; other graphs are listed edge by edge, so their domain must
        be small enough for ``iter_edges``.

    Returns
    -------
    TreeEmbedding
        stretch 1 exactly when the secret graph is itself a tree.

    Raises
    ------
    ValueError
        If the secret graph is not connected.
    """
    require_policy(policy)
    domain: Domain = policy.domain
    g = policy.secrets
    closed = g.tree_embedding(domain)
    if closed is not None and closed[0] == "line":
        theta = closed[1]  # threshold in bins
        if theta < 1:
            raise ValueError(
                f"the secret graph {g!r} has no edges on this domain (bins wider than the threshold); "
                "nothing is secret and there is no tree to embed"
            )
        return line_tree(domain.size).with_stretch(theta)  # theta <= |T| - 1: exact for the line
    if closed is not None and closed[0] == "star":
        # The star at value 0: any two leaves are 2 apart (any size of domain).
        parent = np.zeros(domain.size, dtype=np.int64)
        parent[0] = -1
        return tree_from_parent(parent, stretch=closed[1])
    lo, hi = g.iter_edges(domain)
    return spanning_tree_of_edges(domain.size, lo, hi)


#: Most (edge, tree path) pairs :func:`tree_stretch` lists for a 1-D threshold graph.
STRETCH_EDGE_LIMIT = 50_000_000


def tree_stretch(tree: TreeEmbedding, policy: Policy) -> int:
    """The stretch of ``tree`` against ``policy``'s secret graph, recomputed.

    max over edges (u, v) of the secret graph G of d_T(u, v) (at least 1):
    the L1 sensitivity of x_T when one record moves along an edge of G
    (001 Sec 2), for any tree T on the domain.  The tree's own ``stretch``
    field is not read.

    Parameters
    ----------
    tree : TreeEmbedding
        Verified when it was built.
    policy : Policy
        Its domain must have ``tree.size`` values.

    Returns
    -------
    int

    Notes
    -----
    1-D threshold graphs: theta for the line tree (any size), otherwise every
    edge (theta |T| of them, at most :data:`STRETCH_EDGE_LIMIT`);
    complete graphs (``FullDomain``): the tree's diameter (two sweeps,
    O(|T| log depth));
    other graphs: every edge from ``iter_edges`` (small domains).

    Raises
    ------
    ValueError
        If the sizes differ, the graph has no edge, or its edges are too many
        to list.
    """
    if not isinstance(tree, TreeEmbedding):
        raise TypeError(f"tree must be a TreeEmbedding, got {type(tree).__name__}")
    require_policy(policy)
    domain: Domain = policy.domain
    n = domain.size
    if tree.size != n:
        raise ValueError(f"tree has {tree.size} vertices but the policy's domain has {n} values")
    if n == 1:
        return 1
    g = policy.secrets
    if g.is_complete():
        return max(tree.diameter(), 1)
    theta = g.line_threshold(domain)  # threshold in bins, <= |T| - 1
    if theta is not None:
        if theta < 1:
            raise ValueError(f"the secret graph {g!r} has no edges on this domain; there is no stretch to compute")
        if tree.is_line:
            return theta
        if theta * n > STRETCH_EDGE_LIMIT:
            raise ValueError(
                f"tree: checking a caller-supplied tree against {g!r} lists theta * |T| = {theta * n} edges, "
                f"more than {STRETCH_EDGE_LIMIT}; use tree=None (the line)"
            )
        worst = 0
        for d in range(1, theta + 1):
            lo = np.arange(n - d, dtype=np.int64)
            worst = max(worst, int(tree.distances(lo, lo + d).max()))
        return max(worst, 1)
    lo, hi = g.iter_edges(domain)
    if lo.size == 0:
        raise ValueError(f"the secret graph {g!r} has no edges on this domain; there is no stretch to compute")
    return max(int(tree.distances(lo, hi).max()), 1)


def _as_tree(tree) -> TreeEmbedding:
    if isinstance(tree, TreeEmbedding):
        return tree
    if isinstance(tree, Policy):
        if not tree.secrets.is_tree(tree.domain):
            raise ValueError(
                f"the secret graph {tree.secrets!r} is not a tree on this domain; embed it first with "
                "transform.spanning_tree(policy) (which reports the stretch that multiplies epsilon)"
            )
        emb = spanning_tree(tree)
        if emb.stretch != 1:
            raise ValueError(f"internal: a tree secret graph embedded with stretch {emb.stretch}")
        return emb
    raise TypeError(f"tree must be a TreeEmbedding or a Policy whose secret graph is a tree, got {type(tree).__name__}")


def _counts(values, name: str, size: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a 1-D array of integers, got dtype {arr.dtype} and shape {arr.shape}")
    if arr.size != size:
        raise ValueError(f"{name} has {arr.size} entries but the tree has {size} vertices")
    return as_c_int64(arr, name)


def transform(hist: npt.ArrayLike, tree: TreeEmbedding | npt.ArrayLike) -> np.ndarray:
    """x_G = P_G^{-1} x: the number of records below every tree edge.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Counts per domain value.
    tree : TreeEmbedding or Policy
        A policy whose secret graph is a tree, or an embedding from
        :func:`spanning_tree` / :func:`line_tree`.

    Returns
    -------
    numpy.ndarray of int64, shape (|T|,)
        ``x_G[v]`` = records in the subtree of v; ``x_G[root]`` = total.
        For the line tree this is ``np.cumsum(hist)``.

    Notes
    -----
    O(|T|): one pass in breadth-first order, children before parents.
    """
    t = _as_tree(tree)
    x = _counts(hist, "hist", t.size)
    if t.is_line:
        return _tree.prefix_sum(x)
    return _transform.subtree_sums(x, t.parent, t.order)


def inverse(xg: npt.ArrayLike, tree: TreeEmbedding | npt.ArrayLike) -> np.ndarray:
    """x = P_G x_G: ``x[v] = x_G[v] - sum of x_G over the children of v``.

    Exact inverse of :func:`transform` on any integer vector (noisy ones
    included), in O(|T|).
    """
    t = _as_tree(tree)
    v = _counts(xg, "xg", t.size)
    if t.is_line:
        return _transform.line_inverse(v)
    return _transform.tree_inverse(v, t.parent)
