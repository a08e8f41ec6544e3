# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Checks and status codes shared by the binding modules.

The C functions trust their inputs; the binding modules (``_rng``,
``_tree``, ``_transform``, ``_policy_graph``, ``_dawa``, ``_kmeans``) make
every call safe by construction with these helpers: arrays reach C only
aligned, C-contiguous and native-endian (inputs are copied once when they
are not; outputs must be), indices are checked to lie in range, and C
status codes become Python exceptions.  Argument checks with user-facing
messages live in the Python modules that call the bindings (noise.py,
mechanisms/).
"""

from libc.stdint cimport int64_t

import numpy as np


cdef void raise_status(int status) except *:
    """OSError for missing entropy, OverflowError for a noisy value out of int64."""
    if status == BF_ERR_ENTROPY:
        raise OSError("the operating system did not provide entropy for the secure generator")
    if status == BF_ERR_OVERFLOW:
        raise OverflowError("a noisy value does not fit a signed 64-bit integer")


cdef void check_overflow(int status, str what) except *:
    """OverflowError naming ``what`` unless ``status`` is BF_OK."""
    if status != BF_OK:
        raise OverflowError(f"{what} does not fit a signed 64-bit integer")


cdef object vector(object a, str name, object dtype, bint writable):
    """A one-dimensional ``dtype`` array C can take: aligned, C-contiguous,
    native-endian.  An input (``writable`` False) is copied once when it is
    not; an output must already be (and be writeable)."""
    want = np.dtype(dtype)
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a numpy array of dtype {want}, got {type(a).__name__}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind != want.kind or a.dtype.itemsize != want.itemsize:
        raise ValueError(f"{name} must have dtype {want}, got {a.dtype}")
    if a.flags.aligned and a.flags.c_contiguous and a.dtype.isnative:
        if writable and not a.flags.writeable:
            raise ValueError(f"{name} is written in place and must be writeable")
        return a
    if writable:
        raise ValueError(f"{name} is written in place and must be an aligned, C-contiguous, "
                         f"native-endian array of dtype {want}")
    return np.array(a, dtype=want, order="C", copy=True)


cdef object c_array(object a, str name, object dtype):
    """``a`` as an aligned, C-contiguous, native-endian ``dtype`` array (copied
    once if needed); only dtypes that convert exactly (numpy "safe" casting)
    are accepted."""
    want = np.dtype(dtype)
    arr = np.asarray(a)
    if arr.dtype != want and not np.can_cast(arr.dtype, want, "safe"):
        raise TypeError(f"{name} must hold values of dtype {want} (or one that converts exactly), "
                        f"got dtype {arr.dtype}")
    return np.require(arr, dtype=want, requirements=["C", "A"])


cdef object matrix(object a, str name, object dtype, Py_ssize_t cols):
    """``c_array`` of shape (m, cols) (any number of columns if ``cols < 0``)."""
    arr = c_array(a, name, dtype)
    if arr.ndim != 2 or (cols >= 0 and arr.shape[1] != cols):
        want = f"(m, {cols})" if cols >= 0 else "(m, d)"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    return arr


cdef object new_vector(Py_ssize_t n, object dtype):
    """An uninitialised output of ``n`` elements; ValueError if ``n < 0``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return np.empty(n, dtype=dtype)


cdef object apply_int64(object x, str name, int64_kernel kernel, str what):
    """``kernel`` on the int64 vector ``x`` into a new vector of its length,
    the GIL released; OverflowError naming ``what`` on a bad status."""
    cdef const int64_t[::1] xv = vector(x, name, np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = kernel(&xv[0], &o[0], <size_t>n)
    check_overflow(status, what)
    return out


cdef void check_index_range(object a, str name, object lo, object hi) except *:
    """Every entry of the int64 array ``a`` lies in [lo, hi)."""
    if a.size and (a.min() < lo or a.max() >= hi):
        raise ValueError(f"{name} must hold indices in [{lo}, {hi}), got one outside")


cdef void check_same_length(str name, Py_ssize_t n, str ref, Py_ssize_t n_ref) except *:
    if n != n_ref:
        raise ValueError(f"{name} must have the length of {ref} ({n_ref}), got {n}")


#: More threads than this gain nothing on a kernel bounded by memory bandwidth.
MAX_THREADS = 256


cdef object positive_count(object value, str name):
    """``value`` as an int in [1, 2**62] (numpy integers accepted); ``threads`` is capped at MAX_THREADS."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 2**62:
        raise ValueError(f"{name} must be a positive integer (at most 2**62), got {value!r}")
    return min(int(value), MAX_THREADS) if name == "threads" else int(value)
