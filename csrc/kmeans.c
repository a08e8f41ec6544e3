/* k-means kernels; see kmeans.h.  Compiled with -fno-trapping-math (set in
 * CMakeLists.txt for this file only) so the distance loops vectorise; no
 * result depends on floating-point exceptions. */
#include "kmeans.h"

#include <math.h>

/* Nearest centroid of the point v (d doubles), ties to the lowest index. */
static inline size_t nearest(const double *v, size_t d, const double *c, size_t k)
{
    size_t best = 0;
    double bd = INFINITY;
    for (size_t j = 0; j < k; j++) {
        const double *cj = c + j * d;
        double s = 0.0;
        for (size_t a = 0; a < d; a++) {
            double t = v[a] - cj[a];
            s += t * t;
        }
        if (s < bd) {
            bd = s;
            best = j;
        }
    }
    return best;
}

static inline int64_t l1_to(const int64_t *x, const int64_t *r, size_t d)
{
    int64_t s = 0;
    for (size_t a = 0; a < d; a++) {
        int64_t t = x[a] - r[a];
        s += t < 0 ? -t : t;
    }
    return s;
}

/* The first cell of a grid walk: codes 0, values low (and their doubles
 * in v unless v is NULL). */
static inline void grid_start(const bf_kmeans_grid *g, int64_t *code, int64_t *x, double *v)
{
    for (size_t a = 0; a < g->d; a++) {
        code[a] = 0;
        x[a] = g->low[a];
        if (v) v[a] = (double)x[a];
    }
}

/* One step of a walk over the grid along the axes ax[0..m-1] (the last
 * fastest; ax NULL: the axes 0..m-1): code, the values x and (unless v is
 * NULL) their doubles move to the next cell; an axis that runs past its
 * end restarts at code 0.  Returns 0 when every one of the m axes
 * restarted (the walk is over). */
static inline int grid_step(const bf_kmeans_grid *g, const size_t *ax, size_t m,
                            int64_t *code, int64_t *x, double *v)
{
    for (size_t b = m; b-- > 0;) {
        size_t a = ax ? ax[b] : b;
        if (++code[a] < g->shape[a]) {
            x[a] += g->width[a];
            if (v) v[a] = (double)x[a];
            return 1;
        }
        code[a] = 0;
        x[a] = g->low[a];
        if (v) v[a] = (double)x[a];
    }
    return 0;
}

/* The assignment loop.  D is a compile-time constant for small d: the
 * point is converted once into the stack array v[D].  For any other d
 * (the default case, any size) there is no stack copy: VX(a) converts in
 * place, which gives the same doubles. */
#define BF_ASSIGN_BODY(D, DECL, VX)                                            \
    for (size_t i = 0; i < n; i++) {                                           \
        const int64_t *x = points + i * (D);                                   \
        DECL                                                                   \
        size_t best = 0;                                                       \
        double bd = INFINITY;                                                  \
        for (size_t j = 0; j < k; j++) {                                       \
            const double *cj = centroids + j * (D);                            \
            double s = 0.0;                                                    \
            for (size_t a = 0; a < (D); a++) {                                 \
                double t = VX(a) - cj[a];                                      \
                s += t * t;                                                    \
            }                                                                  \
            /* branch-free running minimum, strict: ties to the lowest j */     \
            best = s < bd ? j : best;                                          \
            bd = s < bd ? s : bd;                                              \
        }                                                                      \
        if (labels) labels[i] = (int32_t)best;                                 \
        counts[best] += 1;                                                     \
        int64_t *sb = sums + best * (D);                                       \
        for (size_t a = 0; a < (D); a++) sb[a] += x[a];                        \
    }
#define BF_V_DECL(D) double v[D]; for (size_t a = 0; a < (D); a++) v[a] = (double)x[a];
#define BF_V_ARR(a) v[a]
#define BF_V_CONV(a) ((double)x[a])

void bf_kmeans_assign_accumulate(const int64_t *points, size_t n, size_t d,
                                 const double *centroids, const int64_t *refs,
                                 size_t k, int32_t *labels, int64_t *counts,
                                 int64_t *sums)
{
    for (size_t j = 0; j < k; j++) counts[j] = 0;
    for (size_t j = 0; j < k * d; j++) sums[j] = 0;
    switch (d) {
    case 1: BF_ASSIGN_BODY(1, BF_V_DECL(1), BF_V_ARR) break;
    case 2: BF_ASSIGN_BODY(2, BF_V_DECL(2), BF_V_ARR) break;
    case 3: BF_ASSIGN_BODY(3, BF_V_DECL(3), BF_V_ARR) break;
    case 4: BF_ASSIGN_BODY(4, BF_V_DECL(4), BF_V_ARR) break;
    default: BF_ASSIGN_BODY(d, , BF_V_CONV) break;
    }
    /* relative to the reference points: sum (x - r) = sum x - count * r */
    for (size_t j = 0; j < k; j++)
        for (size_t a = 0; a < d; a++)
            sums[j * d + a] -= counts[j] * refs[j * d + a];
}

#undef BF_V_DECL
#undef BF_V_ARR
#undef BF_V_CONV
#undef BF_ASSIGN_BODY

void bf_kmeans_grid_label_cost(const bf_kmeans_grid *g, int32_t *labels, int64_t *cost)
{
    size_t d = g->d, f = 0;
    int64_t code[BF_KMEANS_MAXDIM], x[BF_KMEANS_MAXDIM];
    double v[BF_KMEANS_MAXDIM];
    grid_start(g, code, x, v);
    do {
        size_t j = nearest(v, d, g->centroids, g->k);
        labels[f] = (int32_t)j;
        cost[f] = l1_to(x, g->refs + j * d, d);
        f++;
    } while (grid_step(g, NULL, d, code, x, v));
}

void bf_kmeans_clique_scan(const bf_kmeans_grid *g, uint32_t fixed_mask, int projections,
                           int64_t *scratch, int64_t *same, int64_t *cross)
{
    const size_t d = g->d, k = g->k;
    const int64_t *shape = g->shape, *width = g->width;
    size_t fixed[BF_KMEANS_MAXDIM], freeax[BF_KMEANS_MAXDIM];
    size_t nf = 0, nv = 0;
    for (size_t a = 0; a < d; a++) {
        if (fixed_mask & (1u << a)) fixed[nf++] = a;
        else freeax[nv++] = a;
    }
    size_t ns = nv > 0 ? ((size_t)1 << (nv - 1)) : 1;
    int64_t *maxc = scratch;            /* k */
    int64_t *pmax = scratch + k;        /* k * ns */
    int64_t *pmin = scratch + k + k * ns;
    int64_t best_same = 0, best_cross = -1;
    int64_t code[BF_KMEANS_MAXDIM], x[BF_KMEANS_MAXDIM];
    double v[BF_KMEANS_MAXDIM];
    grid_start(g, code, x, v);
    size_t blocks = 1, inner = 1;
    for (size_t b = 0; b < nf; b++) blocks *= (size_t)shape[fixed[b]];
    int64_t diam = 0; /* L1 diameter of a block's box */
    for (size_t b = 0; b < nv; b++) {
        inner *= (size_t)shape[freeax[b]];
        diam += (shape[freeax[b]] - 1) * width[freeax[b]];
    }
    for (size_t blk = 0; blk < blocks; blk++) {
        for (size_t j = 0; j < k; j++) {
            maxc[j] = -1;
            for (size_t s = 0; s < ns; s++) {
                pmax[j * ns + s] = INT64_MIN;
                pmin[j * ns + s] = INT64_MAX;
            }
        }
        /* the free axes start at code 0 */
        for (size_t c = 0; c < inner; c++) {
            size_t j = nearest(v, d, g->centroids, k);
            int64_t cst = l1_to(x, g->refs + j * d, d);
            if (cst > maxc[j]) maxc[j] = cst;
            if (projections) {
                /* p_s = x_f0 +- x_f1 ... (bit b-1 of s: minus on free axis
                 * b), visited in Gray-code order: one update per sign. */
                int64_t *px = pmax + j * ns, *pn = pmin + j * ns;
                int64_t p = 0;
                for (size_t b = 0; b < nv; b++) p += x[freeax[b]];
                size_t s = 0;
                for (size_t g = 0;;) {
                    if (p > px[s]) px[s] = p;
                    if (p < pn[s]) pn[s] = p;
                    if (++g >= ns) break;
                    size_t b = 0; /* lowest set bit of g: the sign that flips */
                    while (!((g >> b) & 1u)) b++;
                    s ^= (size_t)1 << b;
                    int64_t t = 2 * x[freeax[b + 1]];
                    p += ((s >> b) & 1u) ? -t : t;
                }
            }
            grid_step(g, freeax, nv, code, x, v);
        }
        /* reduce the block */
        int64_t top1 = -1, top2 = -1;
        for (size_t j = 0; j < k; j++) {
            if (maxc[j] < 0) continue;
            if (maxc[j] > top1) {
                top2 = top1;
                top1 = maxc[j];
            } else if (maxc[j] > top2) {
                top2 = maxc[j];
            }
            if (projections) {
                for (size_t s = 0; s < ns; s++) {
                    int64_t w = pmax[j * ns + s] - pmin[j * ns + s];
                    if (w > best_same) best_same = w;
                }
            } else {
                /* ||x - y||_1 <= cost(x) + cost(y) and <= the block's box */
                int64_t w = 2 * maxc[j] < diam ? 2 * maxc[j] : diam;
                if (w > best_same) best_same = w;
            }
        }
        if (top2 >= 0 && top1 + top2 > best_cross) best_cross = top1 + top2;
        grid_step(g, fixed, nf, code, x, v); /* next block */
    }
    *same = best_same;
    *cross = best_cross;
}

void bf_kmeans_offset_scan(size_t d, const int64_t *shape, const int32_t *labels,
                           const int64_t *cost, const int64_t *offsets,
                           const int64_t *length, size_t m, int64_t *same,
                           int64_t *cross)
{
    int64_t stride[BF_KMEANS_MAXDIM];
    int64_t code[BF_KMEANS_MAXDIM] = {0};
    size_t total = 1;
    for (size_t a = d; a-- > 0;) {
        stride[a] = (int64_t)total;
        total *= (size_t)shape[a];
    }
    int64_t best_same = 0, best_cross = -1;
    for (size_t f = 0; f < total; f++) {
        int32_t lf = labels[f];
        int64_t cf = cost[f];
        for (size_t o = 0; o < m; o++) {
            const int64_t *off = offsets + o * d;
            int64_t g = (int64_t)f;
            int inside = 1;
            for (size_t a = 0; a < d; a++) {
                int64_t c = code[a] + off[a];
                if (c < 0 || c >= shape[a]) {
                    inside = 0;
                    break;
                }
                g += off[a] * stride[a];
            }
            if (!inside) continue;
            if (labels[g] == lf) {
                if (length[o] > best_same) best_same = length[o];
            } else if (cf + cost[g] > best_cross) {
                best_cross = cf + cost[g];
            }
        }
        for (size_t a = d; a-- > 0;) {
            if (++code[a] < shape[a]) break;
            code[a] = 0;
        }
    }
    *same = best_same;
    *cross = best_cross;
}

void bf_kmeans_bisector_scan(const bf_kmeans_grid *g, double radius, int64_t *near,
                             int64_t *pair)
{
    const size_t d = g->d, k = g->k;
    const double *centroids = g->centroids;
    const int64_t *refs = g->refs;
    /* gap[i*k+j] = 2 * radius * ||mu_j - mu_i||_2, the largest admissible
     * difference of squared distances; skip[i*k+j] for equal centroids. */
    double gap[64 * 64];
    unsigned char skip[64 * 64];
    double dist[64];
    int64_t cst[64];
    for (size_t i = 0; i < k * k; i++) {
        near[i] = -1;
        pair[i] = -1;
    }
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++) {
            double s = 0.0;
            for (size_t a = 0; a < d; a++) {
                double t = centroids[j * d + a] - centroids[i * d + a];
                s += t * t;
            }
            skip[i * k + j] = (i == j) || s == 0.0;
            gap[i * k + j] = 2.0 * radius * sqrt(s);
        }
    /* Rows along the last axis L: the squared distance of a cell is the
     * row's partial sum over axes 0..L-1 (accumulated from 0.0 in axis
     * order) plus the last term, exactly the operations of nearest(), so
     * labels agree bit for bit; the L1 costs split the same way. */
    size_t L = d - 1;
    int64_t code[BF_KMEANS_MAXDIM], x[BF_KMEANS_MAXDIM];
    double part[64];
    int64_t cpart[64];
    size_t rows = 1;
    grid_start(g, code, x, NULL);
    for (size_t a = 0; a < L; a++) rows *= (size_t)g->shape[a];
    for (size_t row = 0; row < rows; row++) {
        for (size_t j = 0; j < k; j++) {
            double sp = 0.0;
            int64_t cp = 0;
            for (size_t a = 0; a < L; a++) {
                double t = (double)x[a] - centroids[j * d + a];
                sp += t * t;
                int64_t u = x[a] - refs[j * d + a];
                cp += u < 0 ? -u : u;
            }
            part[j] = sp;
            cpart[j] = cp;
        }
        int64_t xl = g->low[L];
        for (int64_t c = 0; c < g->shape[L]; c++, xl += g->width[L]) {
            double vl = (double)xl;
            size_t best = 0;
            double bd = INFINITY;
            for (size_t j = 0; j < k; j++) {
                double t = vl - centroids[j * d + L];
                double s = part[j] + t * t;
                dist[j] = s;
                best = s < bd ? j : best;
                bd = s < bd ? s : bd;
                int64_t u = xl - refs[j * d + L];
                cst[j] = cpart[j] + (u < 0 ? -u : u);
            }
            size_t i = best;
            for (size_t j = 0; j < k; j++) {
                if (skip[i * k + j]) continue;
                /* (dist_j - dist_i) / (2 ||mu_j - mu_i||) <= radius, with a
                 * relative slack far above the rounding error of the sums */
                double tol = 1e-9 * (1.0 + dist[i] + dist[j] + gap[i * k + j]);
                if (dist[j] - dist[i] <= gap[i * k + j] + tol) {
                    if (cst[i] > near[i * k + j]) near[i * k + j] = cst[i];
                    if (cst[i] + cst[j] > pair[i * k + j]) pair[i * k + j] = cst[i] + cst[j];
                }
            }
        }
        grid_step(g, NULL, L, code, x, NULL); /* next row */
    }
}
