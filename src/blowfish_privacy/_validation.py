"""Argument checks shared by the public API.

Validation happens once, at the API boundary; messages name the parameter,
the value received and what is allowed.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from .errors import ParameterError

_INT64_MAX = int(np.iinfo(np.int64).max)


def as_fraction(value, name: str, *, allow_zero: bool = False) -> Fraction:
    """Exact rational value of a real number parameter.

    Floats convert exactly (a float is a dyadic rational), so no rounding
    happens here; rounding, where needed, is done by the caller in the safe
    direction.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ParameterError(name, f"{name} must be a finite number, got {value!r}")
        frac = Fraction(float(value))
    else:
        frac = Fraction(value)
    bound = ">= 0" if allow_zero else "> 0"
    if frac < 0 or (frac == 0 and not allow_zero):
        raise ParameterError(name, f"{name} must be a finite number {bound}, got {value!r}")
    return frac


def check_epsilon(epsilon, name: str = "epsilon") -> Fraction:
    """Epsilon as an exact positive rational; rejects 0, negatives, NaN, inf."""
    return as_fraction(epsilon, name)


def as_int(value, name: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ParameterError(name, f"{name} must be an integer >= {minimum}, got {value}")
    return value


def as_int64_array(values, name: str) -> np.ndarray:
    """``values`` as an aligned, C-contiguous, native-endian int64 array of the
    same shape (0-d stays 0-d), copied once only when needed.

    Floating-point, boolean, complex and object arrays are refused: an
    integer mechanism must not silently round (put real data on a grid
    first, with a stated granularity).  Unsigned values above the int64
    maximum are refused instead of wrapping.
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"{name} must hold integers (an integer numpy dtype), got dtype {arr.dtype}; "
            "round real values onto an integer grid first"
        )
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and arr.size and int(arr.max()) > _INT64_MAX:
        raise ValueError(f"{name} has values above the int64 maximum {_INT64_MAX} (unsigned input does not fit int64)")
    if arr.dtype == np.dtype(np.int64) and arr.flags.c_contiguous and arr.flags.aligned:
        return arr
    # a fresh allocation is aligned, contiguous and native-endian
    return np.array(arr, dtype=np.int64, order="C", copy=True)


def as_c_int64(values, name: str) -> np.ndarray:
    """Alias of :func:`as_int64_array` for code that hands arrays to C."""
    return as_int64_array(values, name)


#: Most elements a generator call may return (8 TiB of int64): larger
#: sizes are refused before anything is allocated.
MAX_ELEMENTS = 2**40


def as_size(size, name: str = "size") -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (numbers.Integral, np.integer)) and not isinstance(size, bool):
        size = (int(size),)
    try:
        shape = tuple(as_int(s, name, minimum=0) for s in size)
    except TypeError:
        raise TypeError(f"{name} must be None, a non-negative int or a tuple of them, got {size!r}") from None
    if math.prod(shape) > MAX_ELEMENTS:
        raise ValueError(f"{name} must describe at most {MAX_ELEMENTS} elements, got {size!r} "
                         f"({math.prod(shape)} elements)")
    return shape
