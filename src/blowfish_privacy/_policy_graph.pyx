# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the policy-graph search (csrc/policy_graph.h): the longest
simple cycle and path of 000 Thm 8.2, used by constraints.py."""

from libc.stdint cimport uint64_t

from ._common cimport BF_OK

import numpy as np


cdef inline const uint64_t[::1] _check_adjacency(adj) except *:
    a = np.asarray(adj)
    if a.dtype.kind not in "iu" or a.dtype.itemsize > 8:
        raise TypeError(f"adj must hold unsigned 64-bit bit sets, got dtype {a.dtype}")
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        raise ValueError(f"adj must hold non-negative bit sets, got {int(a.min())}")
    a = np.require(a, dtype=np.uint64, requirements=["C", "A"])
    if a.ndim != 1 or a.shape[0] < 1 or a.shape[0] > 64:
        raise ValueError(f"adj must be one-dimensional with 1 to 64 entries, got shape {a.shape}")
    cdef Py_ssize_t nv = a.shape[0]
    if nv < 64 and (a >> np.uint64(nv)).any():
        raise ValueError(f"adj entries must only have bits below nv = {nv} set")
    cdef const uint64_t[::1] view = a
    return view


def longest_cycle(adj, uint64_t max_nodes):
    """Longest simple directed cycle, exact within a work limit.

    Parameters
    ----------
    adj : array_like of uint64, shape (nv,), nv <= 64  # IN
        ``adj[v]`` has bit ``w`` set iff the edge ``v -> w`` exists.
    max_nodes : int
        Largest number of search nodes to expand.

    Returns
    -------
    (length, exact, nodes, cycle) : (int, bool, int, list of int)
        Number of edges of the longest cycle found (0 when acyclic); whether
        the search finished (else ``length`` is only a lower bound); nodes
        expanded; the cycle's vertices from its smallest one (the edge back
        to the first is implied; empty when acyclic).
    """
    cdef const uint64_t[::1] a = _check_adjacency(adj)
    cdef int best = 0, status
    cdef uint64_t nodes = 0
    cdef int nv = <int>a.shape[0]
    cdef int[::1] order = np.zeros(nv + 1, dtype=np.intc)
    with nogil:
        status = bf_longest_cycle(&a[0], nv, max_nodes, &best, &nodes, &order[0])
    return best, status == BF_OK, int(nodes), [int(v) for v in order[:best]]


def longest_path(adj, int src, int dst, uint64_t max_nodes):
    """Longest simple directed path from ``src`` to ``dst``, exact within a work limit.

    Parameters
    ----------
    adj : array_like of uint64, shape (nv,), nv <= 64  # IN
        As for :func:`longest_cycle`.
    src, dst : int
        Distinct vertices in ``[0, nv)``.
    max_nodes : int
        Largest number of search nodes to expand.

    Returns
    -------
    (length, exact, nodes, path) : (int, bool, int, list of int)
        Number of edges of the longest path found (-1 when ``dst`` is
        unreachable); whether the search finished; nodes expanded; the
        path's vertices from ``src`` to ``dst`` (empty when unreachable).
    """
    cdef const uint64_t[::1] a = _check_adjacency(adj)
    cdef int nv = <int>a.shape[0]
    if not (0 <= src < nv and 0 <= dst < nv) or src == dst:
        raise ValueError(f"src and dst must be distinct vertices in [0, {nv}), got src = {src}, dst = {dst}")
    cdef int best = -1, status
    cdef uint64_t nodes = 0
    cdef int[::1] order = np.zeros(nv + 1, dtype=np.intc)
    with nogil:
        status = bf_longest_path(&a[0], nv, src, dst, max_nodes, &best, &nodes, &order[0])
    return best, status == BF_OK, int(nodes), [int(v) for v in order[:best + 1]]
