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
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from . import _core
from .domain import Domain

__all__ = ["TreeEmbedding", "inverse", "line_tree", "spanning_tree", "transform", "tree_from_parent"]


@dataclass(frozen=True, eq=False)
class TreeEmbedding:
    """A rooted spanning tree of a secret graph, with its stretch.

    Attributes
    ----------
    parent : numpy.ndarray of int64, shape (|T|,)
        Parent of every vertex, -1 at the root.
    root : int
    stretch : int
        max over edges (u, v) of the secret graph of the tree distance
        d_T(u, v); 1 when the graph is this tree.
    order : numpy.ndarray of int64 or None
        Vertices in breadth-first order from the root (None for the line).
    is_line : bool
        True for the path rooted at the last vertex (parent[v] = v + 1),
        whose transform is the cumulative histogram.
    """

    parent: np.ndarray
    root: int
    stretch: int
    order: np.ndarray | None
    is_line: bool

    @property
    def size(self) -> int:
        return int(self.parent.size)

    def n_children(self) -> np.ndarray:
        """Number of children of every vertex."""
        nonroot = self.parent[self.parent >= 0]
        return np.bincount(nonroot, minlength=self.size)

    def depth(self) -> np.ndarray:
        """Depth of every vertex (the root has depth 0)."""
        if self.is_line:
            return (self.size - 1 - np.arange(self.size)).astype(np.int64)
        depth = np.zeros(self.size, dtype=np.int64)
        order = self.order
        p = self.parent[order[1:]]
        for k in range(1, order.size):  # parents come first in BFS order
            depth[order[k]] = depth[p[k - 1]] + 1
        return depth

    def distances(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Tree distances d_T(u[k], v[k]) (vectorised climbing, O(len * depth))."""
        u = np.asarray(u, dtype=np.int64).copy()
        v = np.asarray(v, dtype=np.int64).copy()
        if self.is_line:
            return np.abs(u - v)
        depth = self.depth()
        dist = np.zeros(u.size, dtype=np.int64)
        # lift the deeper endpoint until both are at the same depth, then both
        while True:
            du, dv = depth[u], depth[v]
            a = du > dv
            b = dv > du
            if not (a.any() or b.any()):
                break
            u[a] = self.parent[u[a]]
            v[b] = self.parent[v[b]]
            dist += a | b
        while True:
            ne = u != v
            if not ne.any():
                break
            u[ne] = self.parent[u[ne]]
            v[ne] = self.parent[v[ne]]
            dist += 2 * ne
        return dist


def line_tree(size: int) -> TreeEmbedding:
    """The line 0 - 1 - ... - (size-1) rooted at the last vertex (stretch 1)."""
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size}")
    parent = np.arange(1, size + 1, dtype=np.int64)
    parent[-1] = -1
    return TreeEmbedding(parent, size - 1, 1, None, True)


def _children_csr(parent: np.ndarray, root: int) -> tuple[np.ndarray, np.ndarray]:
    n = parent.size
    nonroot = np.flatnonzero(parent >= 0)
    order = np.argsort(parent[nonroot], kind="stable")
    children = nonroot[order].astype(np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent[nonroot], minlength=n), out=ptr[1:])
    return ptr, children


def tree_from_parent(parent, *, stretch: int = 1) -> TreeEmbedding:
    """A :class:`TreeEmbedding` from a parent array, checked to be one rooted tree.

    Parameters
    ----------
    parent : array_like of int, shape (n,)
        ``parent[v]`` in [0, n) or -1 for exactly one vertex (the root).
    stretch : int
        Stretch of the embedding (1 when the secret graph is this tree).

    Raises
    ------
    ValueError
        If there is not exactly one root, a parent is out of range, or the
        parent links contain a cycle (some vertex is not reached from the root).
    """
    p = np.asarray(parent)
    if p.ndim != 1 or p.size == 0 or p.dtype.kind not in "iu":
        raise ValueError(f"parent must be a non-empty 1-D integer array, got {p.dtype} of shape {p.shape}")
    p = np.ascontiguousarray(p, dtype=np.int64)
    n = p.size
    roots = np.flatnonzero(p == -1)
    if roots.size != 1:
        raise ValueError(f"parent must mark exactly one root with -1, got {roots.size} roots")
    bad = (p < -1) | (p >= n)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"parent[{k}] = {int(p[k])} is outside [-1, {n})")
    root = int(roots[0])
    if n > 1 and np.array_equal(p[:-1], np.arange(1, n)) and root == n - 1:
        return TreeEmbedding(p, root, int(stretch), None, True)
    ptr, children = _children_csr(p, root)
    order = _core.tree_bfs_order(ptr, children, root) if n > 1 else np.array([root], dtype=np.int64)
    # A parent array with a cycle leaves the cycle unreachable: the BFS then
    # lists fewer than n vertices and repeats none, so check coverage.
    seen = np.zeros(n, dtype=bool)
    seen[order] = True
    if not seen.all():
        raise ValueError(f"parent does not describe a tree: vertex {int(np.argmin(seen))} is not reachable from the root")
    return TreeEmbedding(p, root, int(stretch), order, False)


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


def spanning_tree_of_edges(n: int, lo: np.ndarray, hi: np.ndarray, *, root: int | None = None) -> TreeEmbedding:
    """Breadth-first spanning tree of the graph with edges (lo[k], hi[k]) on n vertices, with its stretch.

    The root defaults to the vertex with the smallest eccentricity among a
    few candidates (the BFS tree from a central vertex has small depth, and
    the stretch of any edge is at most twice the depth plus one).

    Raises
    ------
    ValueError
        If the graph is not connected (no spanning tree exists).
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(lo.tolist(), hi.tolist()):
        adj[a].append(b)
        adj[b].append(a)
    if root is None:
        # two sweeps: the middle of a long BFS path is a good centre
        far = _bfs_far(n, adj, 0)
        path_end = _bfs_far(n, adj, far)
        par = _bfs_parents(n, adj, far)
        path = [path_end]
        while par[path[-1]] >= 0:
            path.append(int(par[path[-1]]))
        root = path[len(path) // 2] if (par >= -1).all() else 0
    parent = _bfs_parents(n, adj, root)
    if (parent == -2).any():
        v = int(np.argmax(parent == -2))
        raise ValueError(
            f"the secret graph is not connected (value index {v} is not reachable from {root}); "
            "transformational equivalence needs a connected graph"
        )
    tree = tree_from_parent(parent)
    stretch = int(tree.distances(lo, hi).max()) if lo.size else 1
    return TreeEmbedding(tree.parent, tree.root, max(stretch, 1), tree.order, tree.is_line)


def _bfs_far(n: int, adj: list[list[int]], start: int) -> int:
    dist = np.full(n, -1, dtype=np.int64)
    dist[start] = 0
    queue = deque([start])
    last = start
    while queue:
        v = queue.popleft()
        last = v
        for w in adj[v]:
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                queue.append(w)
    return last


def spanning_tree(policy) -> TreeEmbedding:
    """A spanning tree of the policy's secret graph and its stretch.

    Parameters
    ----------
    policy : Policy
        Without constraints.  For a 1-D ``Line()`` / ``DistanceThreshold``
        domain the tree is the line (stretch = the threshold in bins, any
        size of domain); ``FullDomain`` gives the star at value 0 (stretch
        2, any size); other graphs are listed edge by edge, so their domain
        must be small enough for ``iter_edges``.

    Returns
    -------
    TreeEmbedding
        stretch 1 exactly when the secret graph is itself a tree.

    Raises
    ------
    ValueError
        If the secret graph is not connected.
    """
    from .policy import Policy
    from .secrets import DistanceThreshold, FullDomain

    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a blowfish_privacy.Policy, got {type(policy).__name__}")
    domain: Domain = policy.domain
    g = policy.secrets
    if isinstance(g, DistanceThreshold) and domain.ndim == 1:
        theta = int(policy.sensitivity("cumulative"))  # threshold in bins
        if theta < 1:
            raise ValueError(
                f"the secret graph {g!r} has no edges on this domain (bins wider than the threshold); "
                "nothing is secret and there is no tree to embed"
            )
        t = line_tree(domain.size)
        return TreeEmbedding(t.parent, t.root, theta, None, True)
    if isinstance(g, FullDomain):
        # The star at value 0: any two leaves are 2 apart (any size of domain).
        parent = np.zeros(domain.size, dtype=np.int64)
        parent[0] = -1
        t = tree_from_parent(parent)
        return TreeEmbedding(t.parent, t.root, 2 if domain.size > 2 else 1, t.order, t.is_line)
    lo, hi = g.iter_edges(domain)
    return spanning_tree_of_edges(domain.size, lo, hi)


def _as_tree(tree) -> TreeEmbedding:
    from .policy import Policy

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
    return np.ascontiguousarray(arr, dtype=np.int64)


def transform(hist, tree) -> np.ndarray:
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
        return _core.prefix_sum(x)
    return _core.subtree_sums(x, t.parent, t.order)


def inverse(xg, tree) -> np.ndarray:
    """x = P_G x_G: ``x[v] = x_G[v] - sum of x_G over the children of v``.

    Exact inverse of :func:`transform` on any integer vector (noisy ones
    included), in O(|T|).
    """
    t = _as_tree(tree)
    v = _counts(xg, "xg", t.size)
    if t.is_line:
        return _core.line_inverse(v)
    return _core.tree_inverse(v, t.parent)
