# Declarations of csrc/policy_graph.h.

from libc.stdint cimport uint64_t


cdef extern from "policy_graph.h" nogil:
    int bf_longest_cycle(const uint64_t *adj, int nv, uint64_t max_nodes,
                         int *best, uint64_t *nodes, int *order)
    int bf_longest_path(const uint64_t *adj, int nv, int src, int dst,
                        uint64_t max_nodes, int *best, uint64_t *nodes, int *order)
