"""Argument checks shared by the public API.

Validation happens once, at the API boundary; messages name the parameter,
the value received and what is allowed.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
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


#: Largest epsilon accepted: the largest finite float, so that every epsilon
#: (and every part of it that a plan spends) has a float value.
MAX_EPSILON = Fraction(sys.float_info.max)


def check_epsilon(epsilon, name: str = "epsilon") -> Fraction:
    """Epsilon as an exact positive rational; rejects 0, negatives, NaN, inf and values above :data:`MAX_EPSILON`."""
    eps = as_fraction(epsilon, name)
    if eps > MAX_EPSILON:
        raise ParameterError(name, f"{name} must be a finite number > 0 and at most {sys.float_info.max!r} (the "
                                   f"largest float), got a larger value")
    return eps


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


# -- memory ---------------------------------------------------------------------

#: Most working memory any plan may ask for, whatever the machine has
#: (1 TiB).  A plan also never asks for more than :func:`available_memory`.
MEMORY_CAP = 2**40


def available_memory() -> int | None:
    """Bytes of memory available to this process now (None when unknown).

    ``MemAvailable`` of ``/proc/meminfo`` where it exists, else the free
    physical pages (``SC_AVPHYS_PAGES``): the notion the release product's
    memory check uses.
    """
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def memory_limit() -> int:
    """The most working memory a plan may ask for: :data:`MEMORY_CAP`, or less when less is available."""
    avail = available_memory()
    return MEMORY_CAP if avail is None else min(int(avail), MEMORY_CAP)


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.3g} GiB"


def check_memory(nbytes, *, size, parameter: str = "size", mechanism: str = "this mechanism") -> int:
    """Refuse a plan whose measurement would need more than :func:`memory_limit` bytes.

    Called by every ``plan_<mechanism>`` as soon as the domain size is
    known, before anything proportional to it is allocated, by
    :class:`~blowfish_privacy.mechanisms.Plan` itself on the plan's final
    estimate, and by the helpers that list a graph's edges or vertices.

    Parameters
    ----------
    nbytes : int
        The estimated working memory of the measurement, in bytes.
    size : int
        The domain size |T| (named in the message).
    parameter : str
        The argument that fixes the domain (``"size"``, ``"shape"``,
        ``"policy"``).
    mechanism : str
        Named in the message.

    Returns
    -------
    int
        ``nbytes``.

    Raises
    ------
    ParameterError
        (a ``ValueError``) naming ``parameter``, the domain size, the
        memory needed and the limit.
    """
    nbytes = int(nbytes)
    limit = memory_limit()
    if nbytes > limit:
        which = "the cap of" if limit == MEMORY_CAP else "the"
        raise ParameterError(
            parameter,
            f"{parameter}: {mechanism} on a domain of {int(size):,} values needs about {_gib(nbytes)} of working "
            f"memory, more than {which} {_gib(limit)} available to a plan; use a coarser domain (a larger bin "
            "width) or fewer attributes")
    return nbytes
