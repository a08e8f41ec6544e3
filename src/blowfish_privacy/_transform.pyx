# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of transformational equivalence on trees (csrc/transform.h),
used by transform.py.

A rooted tree is a parent array (int64, -1 at the root); the callers in
transform.py check that it is a tree before calling these.
"""

from libc.stdint cimport int64_t

from ._common cimport (BF_OK, apply_int64, check_overflow, vector, check_same_length,
                       check_index_range)

import numpy as np


def tree_bfs_order(child_ptr, children, int64_t root):
    """Vertices in breadth-first order from ``root`` (children lists in CSR form)."""
    cdef const int64_t[::1] cp = vector(child_ptr, "child_ptr", np.int64, False)  # IN
    cdef const int64_t[::1] ch = vector(children, "children", np.int64, False)  # IN
    cdef Py_ssize_t n = cp.shape[0] - 1
    if n < 1:
        raise ValueError("child_ptr must have at least 2 elements")
    check_same_length("children", ch.shape[0], "child_ptr minus 2", n - 1)
    if root < 0 or root >= n:
        raise ValueError(f"root must be in [0, {n}), got {root}")
    # A tree's CSR form: every vertex but the root is a child exactly once,
    # and the child lists tile ``children``; then the queue holds <= n.
    cpa, cha = np.asarray(cp), np.asarray(ch)
    if cpa[0] != 0 or cpa[n] != n - 1 or (np.diff(cpa) < 0).any():
        raise ValueError(f"child_ptr must be non-decreasing from 0 to len(children) = {n - 1}")
    check_index_range(cha, "children", 0, n)
    seen = np.bincount(cha, minlength=n)
    if (seen > 1).any() or seen[root] != 0:
        raise ValueError("children must list every vertex but the root exactly once")
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] ov = order  # OUT
    cdef const int64_t* chp = &ch[0] if n > 1 else NULL
    with nogil:
        bf_tree_bfs_order(&cp[0], chp, root, &ov[0], <size_t>n)
    return order


def graph_bfs(ptr, adj, int64_t root):
    """Breadth-first search of an undirected graph in CSR form: ``(parent, order)``.

    ptr : int64, shape (n + 1,), non-decreasing from 0 to len(adj)  # IN
    adj : int64, shape (ptr[n],), every entry in [0, n)  # IN
    root : int in [0, n)

    ``parent[v]`` is v's BFS parent (-1 at the root, -2 when not reached);
    ``order`` lists the reached vertices in BFS order (its length is the
    number reached).  Every index is checked here before the kernel runs.
    """
    cdef const int64_t[::1] pv = vector(ptr, "ptr", np.int64, False)  # IN
    cdef const int64_t[::1] av = vector(adj, "adj", np.int64, False)  # IN
    cdef Py_ssize_t n = pv.shape[0] - 1
    if n < 1:
        raise ValueError("ptr must have at least 2 elements (one vertex)")
    if root < 0 or root >= n:
        raise ValueError(f"root must be in [0, {n}), got {root}")
    pa = np.asarray(pv)
    if pa[0] != 0 or pa[n] != av.shape[0] or (np.diff(pa) < 0).any():
        raise ValueError(f"ptr must be non-decreasing from 0 to len(adj) = {av.shape[0]}")
    check_index_range(np.asarray(av), "adj", 0, n)
    parent = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] par = parent  # OUT
    cdef int64_t[::1] ov = order  # OUT
    cdef const int64_t* ap = &av[0] if av.shape[0] > 0 else NULL
    cdef size_t reached
    with nogil:
        reached = bf_graph_bfs(&pv[0], ap, root, &par[0], &ov[0], <size_t>n)
    return parent, order[:reached]


def subtree_sums(x, parent, order):
    """out[v] = sum of x over the subtree of v (order: parents before children)."""
    cdef const int64_t[::1] xv = vector(x, "x", np.int64, False)  # IN
    cdef const int64_t[::1] pv = vector(parent, "parent", np.int64, False)  # IN
    cdef const int64_t[::1] ov = vector(order, "order", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    check_same_length("parent", pv.shape[0], "x", n)
    check_same_length("order", ov.shape[0], "x", n)
    oa = np.asarray(ov)
    check_index_range(oa, "order", 0, n)
    check_index_range(np.asarray(pv)[oa[1:]], "parent (of order[1:])", 0, n)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_subtree_sums(&xv[0], &pv[0], &ov[0], &o[0], <size_t>n)
    check_overflow(status, "a subtree sum")
    return out


def tree_inverse(xg, parent):
    """out[v] = xg[v] - sum of xg over the children of v."""
    cdef const int64_t[::1] xv = vector(xg, "xg", np.int64, False)  # IN
    cdef const int64_t[::1] pv = vector(parent, "parent", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    check_same_length("parent", pv.shape[0], "xg", n)
    check_index_range(np.asarray(pv), "parent", -1, n)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_tree_inverse(&xv[0], &pv[0], &o[0], <size_t>n)
    check_overflow(status, "a difference")
    return out


def line_inverse(xg):
    """out[0] = xg[0], out[v] = xg[v] - xg[v - 1]: the inverse of prefix_sum."""
    return apply_int64(xg, "xg", bf_line_inverse, "a difference")


def add_nonroot(xg, parent, noise):
    """xg[v] += noise[k] for the k-th v with parent[v] >= 0, in place (checked)."""
    cdef int64_t[::1] xv = vector(xg, "xg", np.int64, True)  # IN/OUT
    cdef const int64_t[::1] pv = vector(parent, "parent", np.int64, False)  # IN
    cdef const int64_t[::1] nv = vector(noise, "noise", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    check_same_length("parent", pv.shape[0], "xg", n)
    check_same_length("noise", nv.shape[0], "the vertices with a parent", int(np.count_nonzero(np.asarray(pv) >= 0)))
    if np.may_share_memory(np.asarray(xv), np.asarray(nv)):
        raise ValueError("noise must not share memory with xg")
    cdef int status = BF_OK
    if n > 0 and nv.shape[0] > 0:
        with nogil:
            status = bf_add_nonroot(&xv[0], &pv[0], &nv[0], <size_t>nv.shape[0], <size_t>n)
    check_overflow(status, "a noisy subtree count")


def line_noisy_counts(x, noise):
    """The line tree's transformed noisy counts in one pass (csrc/transform.h).

    x : int64, shape (n,)  # IN
    noise : int64, shape (n - 1,)  # IN
    Returns int64 (n,): line_inverse(prefix_sum(x) + noise on all but the last).
    """
    cdef const int64_t[::1] xv = vector(x, "x", np.int64, False)  # IN
    cdef const int64_t[::1] nv = vector(noise, "noise", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    if n < 1:
        raise ValueError("x must have at least one value")
    check_same_length("noise", nv.shape[0], "len(x) - 1", n - 1)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef const int64_t *np_ = &nv[0] if n > 1 else NULL
    cdef int status
    with nogil:
        status = bf_line_noisy_counts(&xv[0], np_, &o[0], <size_t>n)
    check_overflow(status, "a noisy count")
    return out
