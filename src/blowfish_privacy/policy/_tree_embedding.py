"""The tree embedding of a secret graph: :class:`TreeEmbedding` and its checks.

A rooted spanning tree of a secret graph with its stretch (Anuarbek,
Data-Dependent Blowfish Private Algorithm for Histogram Queries, 001 Sec
2-3; Haney, Machanavajjhala, Ding, VLDB 2015), checked once when built and
stored as read-only arrays, plus :func:`as_c_int64`, the int64 array a C
kernel may trust, and :func:`spanning_tree_of_edges`, the breadth-first
spanning tree of an edge list (every edge list checked before it reaches
C).  :mod:`.transform` re-exports the tree type and builds trees
(:func:`~.transform.line_tree`, :func:`~.transform.spanning_tree`, ...) and
transforms histograms.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .. import _transform
from .._validation import as_int, check_memory

__all__ = ["TreeEmbedding", "as_c_int64", "check_edges", "spanning_tree_of_edges"]

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


def is_line_parent(p: np.ndarray, root: int) -> bool:
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

    def with_stretch(self, stretch: int) -> "TreeEmbedding":
        """The same tree carrying another stretch.

        The stretch is not checked against any graph: pass one proven for
        the policy at hand (:func:`~blowfish_privacy.policy.transform.tree_stretch`
        or a closed form of the graph), since the transformed mechanisms
        calibrate their noise with it.
        """
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
        u, v = as_c_int64(u, "u"), as_c_int64(v, "v")
        if u.shape != v.shape:
            raise ValueError(f"u and v must have one shape (pairs u[k], v[k]), got shapes {u.shape} and {v.shape}")
        u, v = u.ravel().copy(), v.ravel().copy()
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
        on_path = _transform.subtree_sums(e, self.parent, self.order) > 0  # x and its ancestors
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
    line = is_line_parent(p, r)
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
        order = _transform.tree_bfs_order(ptr, children, r)  # p is a verified tree: every vertex is reached
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


def _children_csr(parent: np.ndarray, root: int) -> tuple[np.ndarray, np.ndarray]:
    n = parent.size
    nonroot = np.flatnonzero(parent >= 0)
    order = np.argsort(parent[nonroot], kind="stable")
    children = np.ascontiguousarray(nonroot[order], dtype=np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent[nonroot], minlength=n), out=ptr[1:])
    return ptr, children


# -- spanning trees of edge lists ------------------------------------------------


def check_edges(n, lo, hi) -> tuple[int, np.ndarray, np.ndarray]:
    """An edge list ``(lo[k], hi[k])`` on the vertices ``0..n-1``, checked: ``(n, lo, hi)`` as flat int64.

    Parameters
    ----------
    n : int >= 1
        The number of vertices.
    lo, hi : array_like of int, one shape
        The end points of every edge (any order; repeats and self-loops
        are allowed and change nothing).

    Returns
    -------
    (int, numpy.ndarray, numpy.ndarray)
        n, and lo and hi as flat aligned int64 arrays.

    Raises
    ------
    TypeError
        ``n`` not an integer, ``lo`` or ``hi`` not of an integer dtype.
    ValueError
        ``n`` < 1, ``lo`` and ``hi`` of different shapes, an end point
        outside [0, n) (unsigned values above the int64 maximum included),
        or more vertices and edges than the memory available holds.
    """
    n = as_int(n, "n", minimum=1)
    lo, hi = as_c_int64(lo, "lo"), as_c_int64(hi, "hi")
    if lo.shape != hi.shape:
        raise ValueError(f"lo and hi must have one shape (edge k joins lo[k] and hi[k]), got shapes {lo.shape} and "
                         f"{hi.shape}")
    lo, hi = lo.reshape(-1), hi.reshape(-1)
    if lo.size and (min(int(lo.min()), int(hi.min())) < 0 or max(int(lo.max()), int(hi.max())) >= n):
        raise ValueError(f"lo and hi must hold vertices in [0, {n}), got an end point outside")
    # the adjacency (both directions), the BFS arrays and the tree: a few words per vertex and per edge
    check_memory(8 * (8 * n + 6 * lo.size), size=n, parameter="n", mechanism="a spanning tree of an edge list")
    return n, lo, hi


def _csr(n: int, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency in CSR form; the neighbours of v in the order of the edges (both directions interleaved)."""
    keep = lo != hi  # a self-loop joins nothing
    src = np.stack([lo[keep], hi[keep]], axis=1).reshape(-1)
    dst = np.stack([hi[keep], lo[keep]], axis=1).reshape(-1)
    order = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, np.ascontiguousarray(dst[order], dtype=np.int64)


def spanning_tree_of_edges(n, lo, hi, *, root=None) -> TreeEmbedding:
    """Breadth-first spanning tree of the graph with edges (lo[k], hi[k]) on n vertices, with its stretch.

    Parameters
    ----------
    n : int >= 1
        The number of vertices.
    lo, hi : array_like of int, one shape
        The edges, checked by :func:`check_edges`.
    root : int in [0, n), optional
        The root; by default the vertex in the middle of a long BFS path
        (two sweeps), whose BFS tree has a small depth (the stretch of an
        edge is at most twice the depth plus one).

    Returns
    -------
    TreeEmbedding
        A spanning tree whose ``stretch`` is max over the edges of their
        tree distance (at least 1).

    Raises
    ------
    TypeError, ValueError
        A bad edge list or root (:func:`check_edges`), or a graph that is
        not connected (no spanning tree exists).

    Notes
    -----
    O(n + |E|) in C (the search) and numpy (the adjacency), after the
    checks; the stretch is computed by :meth:`TreeEmbedding.distances`.
    """
    n, lo, hi = check_edges(n, lo, hi)
    if root is not None:
        root = as_int(root, "root", minimum=0)
        if root >= n:
            raise ValueError(f"root must be a vertex in [0, {n}), got {root}")
    ptr, adj = _csr(n, lo, hi)
    if root is None:
        # two sweeps: the middle of a long BFS path is a good centre
        _, order = _transform.graph_bfs(ptr, adj, 0)
        far = int(order[-1])
        par, order = _transform.graph_bfs(ptr, adj, far)
        root = 0
        if order.size == n:
            path = [int(order[-1])]
            while par[path[-1]] >= 0:
                path.append(int(par[path[-1]]))
            root = path[len(path) // 2]
    parent, order = _transform.graph_bfs(ptr, adj, root)
    if order.size != n:
        v = int(np.argmax(parent == -2))
        raise ValueError(
            f"the secret graph is not connected (value index {v} is not reachable from {root}); "
            "transformational equivalence needs a connected graph"
        )
    tree = TreeEmbedding(parent, root, 1, None, is_line_parent(parent, root))
    stretch = int(tree.distances(lo, hi).max()) if lo.size else 1
    return tree.with_stretch(max(stretch, 1))
