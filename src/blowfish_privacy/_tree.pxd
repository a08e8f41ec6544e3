# Declarations of csrc/tree.h and csrc/isotonic.h (same order and names as
# the headers), and the checked sum other binding modules cimport.

from libc.stdint cimport int64_t, uint32_t, uint64_t


cdef extern from "tree.h" nogil:
    int bf_prefix_sum_i64(const int64_t *x, int64_t *out, size_t n)
    int bf_sum_i64(const int64_t *x, size_t n, int64_t *out)
    int bf_sum_counts_i64(const int64_t *x, size_t n, int64_t *out, int *negative)
    int bf_noisy_cumulative(const int64_t *x, const int64_t *noise, size_t m, double *out)
    int bf_noisy_cumulative_streams(const int64_t *x, size_t m, size_t chunk, const uint32_t key[8],
                                    uint64_t t, uint64_t s, size_t g0, size_t g1,
                                    const int64_t *base, double *out)
    int bf_level_sums_i64(const int64_t *child, int64_t *out, size_t m, size_t f)
    void bf_wls_up_level(const double *zc, const double *vc,
                         double *z, double *v, size_t m, size_t f)
    void bf_wls_down_level(const double *xp, double *zc, const double *vc,
                           size_t m, size_t f)
    void bf_wls_chain(const double *ys, const double *vs, double *zr,
                      const double *vr, double *xs, double *work, size_t k)
    ctypedef struct bf_oh_noise:
        uint32_t key[8]
        uint64_t t_s, s_s, t_h, s_h
        size_t group

    size_t bf_oh_range_scratch_doubles(size_t c, size_t f, int h)
    size_t bf_oh_inner_doubles(size_t c, size_t f, int h)
    int bf_oh_up_range(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                       const int64_t *noise_h, double var_h, size_t b0, size_t b1,
                       double *zr, double *vr, int64_t *tot, double *inner, double *cum, double *scratch)
    size_t bf_oh_stream_noise_words(size_t c, size_t f, int h, size_t group)
    int bf_oh_up_streams(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                         const bf_oh_noise *noise, double var_h, size_t g0, size_t g1, int64_t *noise_s,
                         double *zr, double *vr, int64_t *tot, double *inner, double *cum, double *scratch,
                         int64_t *noise_buf)
    int bf_oh_chain(const int64_t *tot, const int64_t *noise_s, double var_s, size_t k,
                    double *zr, const double *vr, double *xs, double *work)
    void bf_oh_down_range(size_t N, size_t block, size_t f, int h, size_t c, double var_h,
                          size_t b0, size_t b1, const double *inner, const double *zr,
                          const double *xs, double *cum, double *scratch)


cdef object checked_sum(const int64_t[::1] x, str name)
cdef object _sum_counts(const int64_t[::1] x, str name)
cdef void check_oh_shape(Py_ssize_t N, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c) except *
