/* Longest simple cycle / path by bit-set depth-first search; see
 * policy_graph.h. */
#include "policy_graph.h"
#include "status.h"
#include "int_ops.h"

#include <stddef.h>

/* Vertices reachable from u by paths inside `avail` (u itself excluded
 * unless it is reachable through avail). */
static uint64_t reach_from(const uint64_t *adj, int u, uint64_t avail) {
    uint64_t seen = adj[u] & avail;
    uint64_t frontier = seen;
    while (frontier) {
        int v = (int)bf_ctz64(frontier);
        frontier &= frontier - 1;
        uint64_t next = adj[v] & avail & ~seen;
        seen |= next;
        frontier |= next;
    }
    return seen;
}

typedef struct {
    const uint64_t *adj;
    uint64_t radj[64]; /* in-neighbour bit sets */
    int root;      /* cycle: the root vertex; path: the target */
    int best;
    uint64_t nodes;
    uint64_t max_nodes;
    int stopped;
    int stack[65];  /* vertices of the current walk */
    int *order;     /* vertices of the best walk found (may be NULL) */
} search;

static void keep_best(search *s, int len_vertices) {
    if (s->order == NULL) return;
    for (int k = 0; k < len_vertices; k++) s->order[k] = s->stack[k];
}

static void fill_radj(search *s, int nv) {
    for (int v = 0; v < nv; v++) s->radj[v] = 0;
    for (int v = 0; v < nv; v++) {
        uint64_t out = s->adj[v];
        while (out) {
            int w = (int)bf_ctz64(out);
            out &= out - 1;
            s->radj[w] |= (uint64_t)1 << v;
        }
    }
}

/* Count one search node at depth len on vertex u; 0 once the work limit
 * is spent (the search then unwinds). */
static int enter(search *s, int u, int len) {
    if (s->stopped) return 0;
    if (++s->nodes > s->max_nodes) {
        s->stopped = 1;
        return 0;
    }
    s->stack[len] = u;
    return 1;
}

/* A search over adj (nv vertices) for best walks to root. */
static void search_init(search *s, const uint64_t *adj, int nv, int root, int best,
                        uint64_t max_nodes, int *order) {
    s->order = order;
    s->adj = adj;
    s->root = root;
    s->best = best;
    s->nodes = 0;
    s->max_nodes = max_nodes;
    s->stopped = 0;
    fill_radj(s, nv);
}

static int search_done(const search *s, int *best, uint64_t *nodes) {
    *best = s->best;
    *nodes = s->nodes;
    return s->stopped ? BF_ERR_LIMIT : BF_OK;
}

typedef void (*dfs_fn)(search *s, int u, uint64_t avail, int len);

/* Search from every vertex of `next` in increasing order, one level deeper,
 * until the work limit is spent. */
static inline void descend(search *s, uint64_t next, uint64_t avail, int len, dfs_fn dfs) {
    while (next && !s->stopped) {
        int v = (int)bf_ctz64(next);
        next &= next - 1;
        dfs(s, v, avail & ~((uint64_t)1 << v), len + 1);
    }
}

static void cycle_dfs(search *s, int u, uint64_t avail, int len) {
    if (!enter(s, u, len)) return;
    if (len >= 1 && (s->adj[u] >> s->root & 1u) && len + 1 > s->best) {
        s->best = len + 1;
        keep_best(s, len + 1);
    }
    uint64_t reach = reach_from(s->adj, u, avail);
    if (len + (int)bf_popcount64(reach) + 1 <= s->best) return;
    /* Only vertices on a path u -> w -> root can still be used. */
    uint64_t useful = reach & reach_from(s->radj, s->root, reach);
    if (len + (int)bf_popcount64(useful) + 1 <= s->best) return;
    descend(s, s->adj[u] & useful, avail, len, cycle_dfs);
}

int bf_longest_cycle(const uint64_t *adj, int nv, uint64_t max_nodes,
                     int *best, uint64_t *nodes, int *order) {
    search s;
    search_init(&s, adj, nv, 0, 0, max_nodes, order);
    for (int r = 0; r < nv && !s.stopped; r++) {
        if (nv - r <= s.best) break; /* cycles rooted at r have <= nv - r vertices */
        uint64_t avail = 0;
        for (int v = r + 1; v < nv; v++) avail |= (uint64_t)1 << v;
        s.root = r;
        cycle_dfs(&s, r, avail, 0);
    }
    return search_done(&s, best, nodes);
}

static void path_dfs(search *s, int u, uint64_t avail, int len) {
    if (!enter(s, u, len)) return;
    if (u == s->root) {
        if (len > s->best) {
            s->best = len;
            keep_best(s, len + 1);
        }
        return;
    }
    uint64_t reach = reach_from(s->adj, u, avail);
    if (!(reach >> s->root & 1u)) return;
    if (len + (int)bf_popcount64(reach) <= s->best) return;
    /* Only vertices on a path u -> w -> target can still be used. */
    uint64_t useful = reach & (reach_from(s->radj, s->root, reach) | ((uint64_t)1 << s->root));
    if (len + (int)bf_popcount64(useful) <= s->best) return;
    descend(s, s->adj[u] & useful, avail, len, path_dfs);
}

int bf_longest_path(const uint64_t *adj, int nv, int src, int dst,
                    uint64_t max_nodes, int *best, uint64_t *nodes, int *order) {
    search s;
    search_init(&s, adj, nv, dst, -1, max_nodes, order);
    uint64_t avail = 0;
    for (int v = 0; v < nv; v++)
        if (v != src) avail |= (uint64_t)1 << v;
    path_dfs(&s, src, avail, 0);
    return search_done(&s, best, nodes);
}
