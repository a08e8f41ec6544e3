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

import numbers
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from . import _core
from .domain import Domain

__all__ = [
    "TreeEmbedding",
    "inverse",
    "line_tree",
    "spanning_tree",
    "transform",
    "tree_from_parent",
    "tree_stretch",
]

_INT64_MAX = np.iinfo(np.int64).max


def as_c_int64(values, name: str) -> np.ndarray:
    """``values`` as an aligned, C-contiguous, native-endian int64 array (copied when needed).

    Integer dtypes only; unsigned values above the int64 maximum are refused
    instead of wrapping.  The result is safe to hand to a C kernel.

    Raises
    ------
    TypeError
        If ``values`` does not have an integer dtype.
    ValueError
        If an unsigned value does not fit int64.
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of integers, got dtype {arr.dtype} and shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and arr.size and int(arr.max()) > _INT64_MAX:
        raise ValueError(f"{name} has values above the int64 maximum {_INT64_MAX} (unsigned input does not fit int64)")
    if arr.dtype == np.dtype(np.int64) and arr.flags.c_contiguous and arr.flags.aligned:
        return arr
    # a fresh allocation is aligned, contiguous and native-endian
    return np.array(arr, dtype=np.int64, order="C", copy=True)


def _frozen(arr: np.ndarray) -> np.ndarray:
    """A read-only view whose base is read-only too (it cannot be made writeable again)."""
    base = np.array(arr, dtype=np.int64, order="C", copy=True)
    base.flags.writeable = False
    return base.view()


def _jump_to(parent: np.ndarray, fixed: np.ndarray):
    """Nearest ancestor in ``fixed`` of every vertex and the number of steps to it.

    Pointer doubling: O(n log depth) work, O(log depth) numpy passes.
    ``parent`` must be in range with every non-fixed vertex having a parent
    >= 0.  Returns None when some vertex never reaches ``fixed`` (a cycle).
    """
    n = parent.size
    idx = np.arange(n, dtype=np.int64)
    jump = np.where(fixed, idx, parent)
    steps = (~fixed).astype(np.int64)
    for _ in range(n.bit_length() + 2):
        nxt = jump[jump]
        if np.array_equal(nxt, jump):
            break
        steps += steps[jump]
        jump = nxt
    if not fixed[jump].all():
        return None
    return jump, steps


def _is_line_parent(p: np.ndarray, root: int) -> bool:
    n = p.size
    return n > 1 and root == n - 1 and bool(np.array_equal(p[:-1], np.arange(1, n, dtype=np.int64)))


@dataclass(frozen=True, eq=False)
class TreeEmbedding:
    """A rooted spanning tree of a secret graph, with its stretch.

    Checked when built: ``parent`` must describe one rooted tree on
    ``0..|T|-1`` and ``order`` (when given) must list every vertex once,
    parents before children.  The arrays are stored as read-only copies, so
    what reaches the C kernels is always a verified tree.  The ``stretch`` is
    the caller's claim; mechanisms recompute it against the policy
    (:func:`tree_stretch`) before calibrating.

    Attributes
    ----------
    parent : numpy.ndarray of int64, shape (|T|,)
        Parent of every vertex, -1 at the root.
    root : int
        The vertex whose parent is -1.
    stretch : int >= 1
        max over edges (u, v) of the secret graph of the tree distance
        d_T(u, v); 1 when the graph is this tree.
    order : numpy.ndarray of int64 or None
        Vertices from the root, parents before children (breadth-first when
        computed here); None for the line, or to have it computed.
    is_line : bool
        True for the path rooted at the last vertex (parent[v] = v + 1),
        whose transform is the cumulative histogram.

    Raises
    ------
    ValueError, TypeError
        If any field is inconsistent; the message names the field.
    """

    parent: np.ndarray
    root: int
    stretch: int
    order: np.ndarray | None
    is_line: bool
    _depth: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        p, root, order, depth = _check_tree(self.parent, self.root, self.order, self.is_line)
        stretch = self.stretch
        if isinstance(stretch, bool) or not isinstance(stretch, (numbers.Integral, np.integer)) or int(stretch) < 1:
            raise ValueError(f"stretch must be an integer >= 1 (a tree distance), got {stretch!r}")
        object.__setattr__(self, "parent", p)
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "stretch", int(stretch))
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "is_line", bool(self.is_line))
        object.__setattr__(self, "_depth", depth)

    @classmethod
    def _trusted(cls, parent, root, stretch, order, is_line, depth=None) -> "TreeEmbedding":
        # for arrays this module built or already verified (read-only)
        obj = object.__new__(cls)
        for k, v in (("parent", parent), ("root", int(root)), ("stretch", int(stretch)), ("order", order),
                     ("is_line", bool(is_line)), ("_depth", depth)):
            object.__setattr__(obj, k, v)
        return obj

    def _with_stretch(self, stretch: int) -> "TreeEmbedding":
        return TreeEmbedding._trusted(self.parent, self.root, stretch, self.order, self.is_line, self._depth)

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
        if self._depth is None:
            res = _jump_to(self.parent, self.parent < 0)
            object.__setattr__(self, "_depth", res[1])
        return self._depth

    def distances(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Tree distances d_T(u[k], v[k]).

        Climbs only the pairs not yet met: O(sum of the distances) work and
        O(max distance) numpy passes.
        """
        u = as_c_int64(u, "u").ravel().copy()
        v = as_c_int64(v, "v").ravel().copy()
        if u.shape != v.shape:
            raise ValueError(f"u and v must have one length, got {u.size} and {v.size}")
        n = self.size
        if u.size and (u.min() < 0 or v.min() < 0 or u.max() >= n or v.max() >= n):
            raise ValueError(f"u and v must be vertices in [0, {n})")
        if self.is_line:
            return np.abs(u - v)
        depth = self.depth()
        par = self.parent
        du, dv = depth[u], depth[v]
        dist = np.abs(du - dv)
        # lift the deeper endpoint to the other's depth
        k = np.flatnonzero(du != dv)
        while k.size:
            a = k[du[k] > dv[k]]
            b = k[dv[k] > du[k]]
            u[a] = par[u[a]]
            du[a] -= 1
            v[b] = par[v[b]]
            dv[b] -= 1
            k = k[du[k] != dv[k]]
        # then both, until they meet
        k = np.flatnonzero(u != v)
        while k.size:
            u[k] = par[u[k]]
            v[k] = par[v[k]]
            dist[k] += 2
            k = k[u[k] != v[k]]
        return dist

    def _distances_from(self, x: int) -> np.ndarray:
        """d_T(x, v) for every vertex v, in O(n log depth)."""
        n = self.size
        if self.is_line:
            return np.abs(np.arange(n, dtype=np.int64) - x)
        e = np.zeros(n, dtype=np.int64)
        e[x] = 1
        on_path = _core.subtree_sums(e, self.parent, self.order) > 0  # x and its ancestors
        meet, _ = _jump_to(self.parent, on_path)
        depth = self.depth()
        return depth[x] + depth - 2 * depth[meet]

    def diameter(self) -> int:
        """Longest tree distance between two vertices (two sweeps)."""
        if self.size == 1:
            return 0
        a = int(np.argmax(self._distances_from(self.root)))
        return int(self._distances_from(a).max())


def _check_tree(parent, root, order, is_line):
    """Verify a rooted tree; returns (parent, root, order, depth) as read-only arrays."""
    p = np.asarray(parent)
    if p.ndim != 1 or p.size == 0 or p.dtype.kind not in "iu":
        raise ValueError(f"parent must be a non-empty 1-D integer array, got dtype {p.dtype} and shape {p.shape}")
    if p.dtype.kind == "u" and int(p.max()) >= p.size:
        k = int(np.argmax(p >= p.size))
        raise ValueError(f"parent[{k}] = {int(p[k])} is outside [0, {p.size}) (and -1 marks the root)")
    p = as_c_int64(p, "parent")
    n = p.size
    bad = (p < -1) | (p >= n)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"parent[{k}] = {int(p[k])} is outside [0, {n}) (and -1 marks the root)")
    roots = np.flatnonzero(p == -1)
    if roots.size != 1:
        raise ValueError(f"parent must mark exactly one root with -1, got {roots.size} roots")
    r = int(roots[0])
    if isinstance(root, bool) or not isinstance(root, (numbers.Integral, np.integer)) or int(root) != r:
        raise ValueError(f"root must be the vertex whose parent is -1, i.e. {r}, got {root!r}")
    if not isinstance(is_line, (bool, np.bool_)):
        raise TypeError(f"is_line must be a bool, got {is_line!r}")
    line = _is_line_parent(p, r)
    if is_line and not (line or n == 1):
        raise ValueError("is_line=True needs parent[v] = v + 1 for every v < |T| - 1 (the line rooted at the last value)")
    self_loop = p == np.arange(n, dtype=np.int64)
    if self_loop.any():
        raise ValueError(f"parent does not describe a tree: parent[{int(np.argmax(self_loop))}] points to itself")
    depth = None
    if not line:
        res = _jump_to(p, p < 0)
        if res is None:
            raise ValueError("parent does not describe a tree: some vertex is not reachable from the root (a cycle)")
        depth = _frozen(res[1])
    p = _frozen(p)
    if order is None:
        if is_line or n == 1:
            return p, r, None if is_line else _frozen(np.array([r])), depth
        ptr, children = _children_csr(p, r)
        order = _core.tree_bfs_order(ptr, children, r)  # p is a verified tree: every vertex is reached
        return p, r, _frozen(order), depth
    o = np.asarray(order)
    if o.ndim != 1 or o.dtype.kind not in "iu" or o.size != n:
        raise ValueError(f"order must be a 1-D integer array of length |T| = {n}, got dtype {o.dtype} and shape {o.shape}")
    o = as_c_int64(o, "order")
    if (o < 0).any() or (o >= n).any() or not (np.bincount(o, minlength=n) == 1).all():
        raise ValueError(f"order must list every vertex 0..{n - 1} exactly once")
    if int(o[0]) != r:
        raise ValueError(f"order must start at the root {r}, got {int(o[0])}")
    pos = np.empty(n, dtype=np.int64)
    pos[o] = np.arange(n, dtype=np.int64)
    nonroot = np.flatnonzero(p >= 0)
    if (pos[p[nonroot]] >= pos[nonroot]).any():
        raise ValueError("order must list every parent before its children")
    return p, r, _frozen(o), depth


def line_tree(size: int) -> TreeEmbedding:
    """The line 0 - 1 - ... - (size-1) rooted at the last vertex (stretch 1)."""
    if isinstance(size, bool) or not isinstance(size, (numbers.Integral, np.integer)) or int(size) < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    size = int(size)
    parent = np.arange(1, size + 1, dtype=np.int64)
    parent[-1] = -1
    parent.flags.writeable = False
    return TreeEmbedding._trusted(parent.view(), size - 1, 1, None, True)


def _children_csr(parent: np.ndarray, root: int) -> tuple[np.ndarray, np.ndarray]:
    n = parent.size
    nonroot = np.flatnonzero(parent >= 0)
    order = np.argsort(parent[nonroot], kind="stable")
    children = np.ascontiguousarray(nonroot[order], dtype=np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent[nonroot], minlength=n), out=ptr[1:])
    return ptr, children


def tree_from_parent(parent, *, stretch: int = 1) -> TreeEmbedding:
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
    return TreeEmbedding(pp, root, stretch, None, _is_line_parent(np.asarray(pp), root))


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
    lo = as_c_int64(lo, "lo").ravel()
    hi = as_c_int64(hi, "hi").ravel()
    if lo.size != hi.size:
        raise ValueError(f"lo and hi must have one length, got {lo.size} and {hi.size}")
    if lo.size and (min(lo.min(), hi.min()) < 0 or max(lo.max(), hi.max()) >= n):
        raise ValueError(f"edge end points lo and hi must be vertices in [0, {n})")
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
    return tree._with_stretch(max(stretch, 1))


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
        return line_tree(domain.size)._with_stretch(theta)  # theta <= |T| - 1: exact for the line
    if isinstance(g, FullDomain):
        # The star at value 0: any two leaves are 2 apart (any size of domain).
        parent = np.zeros(domain.size, dtype=np.int64)
        parent[0] = -1
        return tree_from_parent(parent, stretch=2 if domain.size > 2 else 1)
    lo, hi = g.iter_edges(domain)
    return spanning_tree_of_edges(domain.size, lo, hi)


#: Most (edge, tree path) pairs :func:`tree_stretch` lists for a 1-D threshold graph.
STRETCH_EDGE_LIMIT = 50_000_000


def tree_stretch(tree: TreeEmbedding, policy) -> int:
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
    ``FullDomain``: the tree's diameter (two sweeps, O(|T| log depth));
    other graphs: every edge from ``iter_edges`` (small domains).

    Raises
    ------
    ValueError
        If the sizes differ, the graph has no edge, or its edges are too many
        to list.
    """
    from .policy import Policy
    from .secrets import DistanceThreshold, FullDomain

    if not isinstance(tree, TreeEmbedding):
        raise TypeError(f"tree must be a TreeEmbedding, got {type(tree).__name__}")
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a blowfish_privacy.Policy, got {type(policy).__name__}")
    domain: Domain = policy.domain
    n = domain.size
    if tree.size != n:
        raise ValueError(f"tree has {tree.size} vertices but the policy's domain has {n} values")
    if n == 1:
        return 1
    g = policy.secrets
    if isinstance(g, FullDomain):
        return max(tree.diameter(), 1)
    if isinstance(g, DistanceThreshold) and domain.ndim == 1:
        theta = int(policy.sensitivity("cumulative"))  # threshold in bins, <= |T| - 1
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
    return as_c_int64(arr, name)


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
