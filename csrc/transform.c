#include "transform.h"
#include "int_ops.h"
#include "discrete_laplace.h"

void bf_tree_bfs_order(const int64_t *child_ptr, const int64_t *children,
                       int64_t root, int64_t *order, size_t n)
{
    size_t head = 0, tail = 0;
    if (n == 0)
        return;
    order[tail++] = root;
    while (head < tail) {
        int64_t v = order[head++];
        for (int64_t k = child_ptr[v]; k < child_ptr[v + 1]; k++)
            order[tail++] = children[k];
    }
}

size_t bf_graph_bfs(const int64_t *ptr, const int64_t *adj, int64_t root,
                    int64_t *parent, int64_t *order, size_t n)
{
    size_t head = 0, tail = 0;
    if (n == 0)
        return 0;
    for (size_t v = 0; v < n; v++)
        parent[v] = -2;
    parent[root] = -1;
    order[tail++] = root;
    while (head < tail) {
        int64_t v = order[head++];
        for (int64_t k = ptr[v]; k < ptr[v + 1]; k++) {
            int64_t w = adj[k];
            if (parent[w] == -2) {  /* each vertex is queued once: tail <= n */
                parent[w] = v;
                order[tail++] = w;
            }
        }
    }
    return tail;
}

int bf_subtree_sums(const int64_t *x, const int64_t *parent,
                    const int64_t *order, int64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i];
    for (size_t i = n; i-- > 1;) {
        int64_t v = order[i];
        int64_t p = parent[v];
        int64_t r;
        if (bf_add_ovf(out[p], out[v], &r))
            return BF_ERR_OVERFLOW;
        out[p] = r;
    }
    return BF_OK;
}

int bf_tree_inverse(const int64_t *xg, const int64_t *parent, int64_t *out,
                    size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = xg[i];
    for (size_t v = 0; v < n; v++) {
        int64_t p = parent[v];
        if (p >= 0) {
            int64_t r;
            if (bf_sub_ovf(out[p], xg[v], &r))
                return BF_ERR_OVERFLOW;
            out[p] = r;
        }
    }
    return BF_OK;
}

int bf_line_inverse(const int64_t *xg, int64_t *out, size_t n)
{
    if (n == 0)
        return BF_OK;
    int64_t prev = xg[0];
    out[0] = prev;
    for (size_t v = 1; v < n; v++) {
        int64_t cur = xg[v];
        if (bf_sub_ovf(cur, prev, &out[v]))
            return BF_ERR_OVERFLOW;
        prev = cur;
    }
    return BF_OK;
}

int bf_add_nonroot(int64_t *xg, const int64_t *parent, const int64_t *noise, size_t m, size_t n)
{
    int overflow = 0;
    size_t k = 0;
    for (size_t v = 0; v < n && k < m; v++) {
        if (parent[v] < 0)
            continue;
        overflow |= bf_add_ovf(xg[v], noise[k++], &xg[v]);
    }
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

int bf_line_noisy_counts(const int64_t *x, const int64_t *noise, int64_t *out, size_t n)
{
    /* x_G (the prefix sums), noise on every vertex but the root (the
     * last), then the differences: the three steps' results and checks in
     * one pass, without x_G in memory */
    int64_t s = 0, prev = 0;
    int overflow = 0;
    for (size_t v = 0; v < n; v++) {
        int64_t a;
        overflow |= bf_add_ovf(s, x[v], &s);
        a = s;
        if (v + 1 < n)
            overflow |= bf_add_ovf(s, noise[v], &a);
        overflow |= bf_sub_ovf(a, prev, &out[v]);
        prev = a;
    }
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

int bf_add_nonroot_streams(int64_t *xg, const int64_t *parent, size_t n, size_t chunk,
                           const uint32_t key[8], uint64_t t, uint64_t s, size_t g0, size_t g1,
                           int64_t *scratch)
{
    int overflow = 0;
    bf_rng rng;
    for (size_t g = g0; g < g1; g++) {
        size_t v0 = g * chunk, v1 = n - v0 < chunk ? n : v0 + chunk, m = 0;
        for (size_t v = v0; v < v1; v++)
            m += parent[v] >= 0;
        /* the chunk's noise first, then its values */
        bf_rng_init_stream(&rng, key, g);
        bf_discrete_laplace_fill(&rng, t, s, scratch, m);
        size_t k = 0;
        for (size_t v = v0; v < v1; v++) {
            if (parent[v] < 0)
                continue;
            overflow |= bf_add_ovf(xg[v], scratch[k++], &xg[v]);
        }
    }
    bf_rng_wipe(&rng);
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

int bf_line_noisy_counts_streams(const int64_t *x, size_t n, size_t chunk, const uint32_t key[8],
                                 uint64_t t, uint64_t s, size_t g0, size_t g1, const int64_t *base,
                                 int64_t *out, int64_t ends[2])
{
    int overflow = 0;
    bf_rng rng;
    int64_t prev = 0;
    for (size_t g = g0; g < g1; g++) {
        size_t v0 = g * chunk, v1 = n - v0 < chunk ? n : v0 + chunk;
        size_t m = (v1 < n ? v1 : n - 1) - v0;   /* the root, n - 1, has no noise */
        bf_rng_init_stream(&rng, key, g);
        bf_discrete_laplace_fill(&rng, t, s, out + v0, m);
        int64_t acc = base[g];
        for (size_t v = v0; v < v1; v++) {
            int64_t a;
            overflow |= bf_add_ovf(acc, x[v], &acc);
            a = acc;
            if (v + 1 < n)
                overflow |= bf_add_ovf(acc, out[v], &a);
            if (v == v0 && g == g0) {
                ends[0] = a;
                if (g0 > 0) {
                    out[v] = a;
                    prev = a;
                    continue;
                }
            }
            overflow |= bf_sub_ovf(a, prev, &out[v]);
            prev = a;
        }
    }
    ends[1] = prev;
    bf_rng_wipe(&rng);
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}
