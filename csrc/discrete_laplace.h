/* Exact discrete Laplace sampling in integer arithmetic.
 *
 * Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
 * Privacy" (NeurIPS 2020), Algorithm 1 (Bernoulli(exp(-gamma)) for
 * rational gamma) and Algorithm 2 (discrete Laplace).  The scale is the
 * rational t/s; P(Z = z) is proportional to exp(-|z| * s / t).  No floating
 * point is used anywhere on the sampling path.
 *
 * Inputs are trusted (the bindings validate): 1 <= t, s <= BF_DLAP_MAX.
 */
#ifndef BF_DISCRETE_LAPLACE_H
#define BF_DISCRETE_LAPLACE_H

#include <stddef.h>
#include <stdint.h>

#include "csprng.h"

/* Largest numerator or denominator of a scale. */
#define BF_DLAP_MAX 0xFFFFFFFFu

/* One draw from the discrete Laplace distribution with scale t/s. */
int64_t bf_discrete_laplace(bf_rng *rng, uint64_t t, uint64_t s);

/* out[i] = independent draws, i in [0, n). */
void bf_discrete_laplace_fill(bf_rng *rng, uint64_t t, uint64_t s,
                              int64_t *out, size_t n);

/* out[i] = values[i] + noise[i].  The whole noise vector is drawn into
 * `out` before `values` is read, so the sampler's running time does not
 * depend on the data.  Returns BF_OK, or BF_ERR_OVERFLOW if a sum does not
 * fit int64 (then `out` holds no release: the caller must discard it).
 * `values` and `out` must not overlap. */
int bf_discrete_laplace_add(bf_rng *rng, uint64_t t, uint64_t s,
                            const int64_t *values, int64_t *out, size_t n);

/* out[i] = a[i] + b[i] for i in [0, n), every element checked.  Returns
 * BF_OK, or BF_ERR_OVERFLOW if some sum does not fit int64 (`out` then
 * holds no release).  `out` may alias `b` (adding data to noise in place). */
int bf_add_int64_checked(const int64_t *a, const int64_t *b, int64_t *out, size_t n);

/* Bernoulli(exp(-num/den)) for 0 <= num, 1 <= den (CKS Algorithm 1 with
 * the gamma > 1 reduction).  Exposed for tests. */
int bf_bernoulli_exp(bf_rng *rng, uint64_t num, uint64_t den);

#endif
