# Mirrors csrc/isotonic.h; the cdef helpers below are cimported by _tree and _streams (the chunked regression on
# their own threads).

from libc.stdint cimport uint64_t


cdef extern from "isotonic.h" nogil:
    void bf_isotonic(const double *y, const double *w, double *out,
                     double *block_weight, size_t *block_end, size_t n,
                     double lower, double upper)
    void bf_isotonic_unit_inplace(double *y, double *block_weight, size_t n,
                                  double lower, double upper)
    void bf_pava_bits_stack(double *y, uint64_t *bits, size_t c0, size_t c1, int *nonfinite)
    size_t bf_pava_bits_join(double *y, uint64_t *bits, size_t n, size_t chunk, size_t *heads)
    void bf_pava_bits_fill(double *y, const uint64_t *bits, size_t start, size_t stop,
                           double lower, double upper)
    size_t bf_first_nonfinite(const double *x, size_t n)
    size_t bf_first_nonpositive(const double *x, size_t n)


cdef void check_finite(const double[::1] y, str name) except *
cdef bint isotonic_threads(object yarr, double lower, double upper, object threads, Py_ssize_t clen,
                           bint scan_first) except -1
cdef bint isotonic_chunks(object yarr, double lower, double upper, Py_ssize_t clen,
                          object pool, bint scan_first) except -1
