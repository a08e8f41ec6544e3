/* Exact longest simple cycle and longest simple s-t path in a small
 * directed graph, for the policy graph of 000 Def 8.3 (alpha and xi of
 * Thm 8.2).  Both problems are NP-hard; this is depth-first search over
 * bit sets with a reachability bound: from the current vertex, the walk can
 * still gain at most the number of unvisited vertices reachable from it
 * (plus one edge to close a cycle), so branches that cannot beat the best
 * length found are cut.  Cycles are enumerated once each by rooting them at
 * their smallest vertex.
 *
 * The graph has nv <= 64 vertices; adj[v] is the bit set of the
 * out-neighbours of v (bit w set iff the edge v -> w exists; self-loops are
 * ignored).  max_nodes bounds the number of search nodes expanded (a
 * deterministic work limit); *nodes receives the number expanded.
 *
 * order (NULL or room for nv + 1 ints) receives the vertices of the best
 * walk found: for a cycle its `best` vertices starting at its smallest
 * vertex (the closing edge back to order[0] is implied), for a path its
 * `best + 1` vertices from src to dst.
 *
 * Return BF_OK when the value is exact, BF_ERR_LIMIT when the limit was hit
 * first (then *best is only the longest found so far, a lower bound).
 * Inputs are trusted (the bindings validate).
 */
#ifndef BF_POLICY_GRAPH_H
#define BF_POLICY_GRAPH_H

#include <stdint.h>

/* Longest simple directed cycle (number of edges; 0 when acyclic). */
int bf_longest_cycle(const uint64_t *adj, int nv, uint64_t max_nodes,
                     int *best, uint64_t *nodes, int *order);

/* Longest simple directed path from src to dst (number of edges; -1 when
 * dst is unreachable from src).  src != dst. */
int bf_longest_path(const uint64_t *adj, int nv, int src, int dst,
                    uint64_t max_nodes, int *best, uint64_t *nodes, int *order);

#endif
