# Shared by the binding modules (_rng, _tree, _transform, _policy_graph,
# _dawa, _kmeans): the status codes of csrc/status.h, status codes to
# exceptions, and the array checks that make a call into C safe.  The
# functions live in _common.pyx; the other modules cimport them.

cdef extern from "status.h" nogil:
    enum:
        BF_OK
        BF_ERR_ENTROPY
        BF_ERR_OVERFLOW
        BF_ERR_LIMIT


from libc.stdint cimport int64_t

# An elementwise int64 kernel: out[0..n) from x[0..n), a status code back.
ctypedef int (*int64_kernel)(const int64_t *x, int64_t *out, size_t n) noexcept nogil


cdef void raise_status(int status) except *
cdef void check_overflow(int status, str what) except *
cdef object vector(object a, str name, object dtype, bint writable)
cdef object c_array(object a, str name, object dtype)
cdef object matrix(object a, str name, object dtype, Py_ssize_t cols)
cdef object new_vector(Py_ssize_t n, object dtype)
cdef object apply_int64(object x, str name, int64_kernel kernel, str what)
cdef void check_index_range(object a, str name, object lo, object hi) except *
cdef void check_same_length(str name, Py_ssize_t n, str ref, Py_ssize_t n_ref) except *
cdef object positive_count(object value, str name)
