"""The result type shared by the histogram mechanisms (identity workload).

Used by ``transformed_laplace``, ``privelet``, ``dawa``,
``dawa_transformed`` and ``matching_transformed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _tree
from .._validation import as_fraction, as_int
from ..policy._tree_embedding import as_c_int64
from ..policy._policy import require_policy
from .plan import Release

__all__ = ["HistogramRelease", "check_counts", "check_histogram", "shape_check", "uniform_expansion"]


@dataclass(frozen=True, init=False)
class HistogramRelease(Release):
    """A released histogram (one estimate per domain value).

    For the data-dependent mechanisms (DAWA, matching) the epsilon is the
    plan's: the mechanism as a whole is private at the planned epsilon,
    whichever branch the (private) partition took.

    Attributes
    ----------
    histogram : numpy.ndarray, shape (|T|,)
        The estimates: int64 when they are the noisy integers themselves,
        float64 after post-processing (uniform expansion, wavelet
        reconstruction).
    secure : bool
        False when the generator was seeded (not for real releases).
    buckets : numpy.ndarray of int64 or None
        For data-dependent mechanisms: the bucket of every value.
    stretch : int
        Stretch of the spanning-tree embedding used (1: none needed).
    expected_squared_error : float or None
        Sum over values of the expected squared error where an analytic
        value exists (data-independent mechanisms); for data-dependent
        ones, the noise part given the released buckets (the bias of
        uniform expansion is not included).
    params : dict
    spent_parts : dict or None
        The exact spend per step when the measurement spent less than its
        plan on some step (a budget fixed from the released partition, e.g.
        DAWA's node shares over the buckets); None when it spent the plan's.
    plan : Plan
        The plan that made this release: ``mechanism``, ``epsilon`` and
        ``epsilon_exact`` are read from it, and ``epsilon_parts`` (the exact
        spend per step, e.g. partition and counts) unless ``spent_parts``
        says otherwise.
    guarantee : str
        The policy of the guarantee in short, from the plan: the secret
        graph's repr, or for a DP plan ``"FullDomain"`` (bounded DP) or
        ``"add/remove DP"`` (a plan with ``neighbours="add_remove"``); the
        guarantee in words is ``plan.guarantee``.
    """

    histogram: npt.NDArray[np.int64] | npt.NDArray[np.float64]
    secure: bool
    buckets: np.ndarray | None
    stretch: int
    expected_squared_error: float | None
    params: dict[str, Any]
    spent_parts: dict[str, Any] | None
    plan: Any = field(repr=False, compare=False)

    _values_field = "histogram"

    def __init__(self, histogram: npt.NDArray[np.int64] | npt.NDArray[np.float64], secure: bool,
                 buckets: np.ndarray | None = None, stretch: int = 1, expected_squared_error: float | None = None,
                 params: dict[str, Any] | None = None, plan: Any = None,
                 spent_parts: dict[str, Any] | None = None) -> None:
        if plan is None:
            raise TypeError("HistogramRelease needs the plan that made it")
        spent = None if spent_parts is None else dict(spent_parts)
        if spent == {p.name: p.epsilon for p in plan.parts}:
            spent = None  # the plan's own spend: read from the plan
        for name, value in (("histogram", histogram), ("secure", secure), ("buckets", buckets),
                            ("stretch", stretch), ("expected_squared_error", expected_squared_error),
                            ("params", {} if params is None else params),
                            ("spent_parts", spent), ("plan", plan)):
            object.__setattr__(self, name, value)

    @property
    def epsilon_parts(self) -> dict[str, Any]:
        return dict(self.spent_parts) if self.spent_parts is not None else super().epsilon_parts

    @property
    def guarantee(self) -> str:
        plan = self.plan
        if plan.model != "Blowfish" or plan.policy is None:
            return "add/remove DP" if plan.options.get("neighbours") == "add_remove" else "FullDomain"
        return repr(plan.policy.secrets)

    @property
    def expected_error(self) -> dict[str, Any]:
        if self.expected_squared_error is None:
            return dict(self.plan.expected_error)
        return {**self.plan.expected_error, "total_squared_error": self.expected_squared_error}

    def mse(self, truth: npt.ArrayLike) -> float:
        """Mean squared error per value against ``truth`` (for experiments)."""
        t = np.asarray(truth, dtype=np.float64)
        return float(np.mean((self.histogram.astype(np.float64) - t) ** 2))


def uniform_expansion(bucket_counts: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """Spread every bucket's estimate evenly over its values (001 Sec 4, step 3)."""
    sizes = np.bincount(buckets, minlength=bucket_counts.size)
    return bucket_counts.astype(np.float64)[buckets] / sizes[buckets]


def shape_check(shape, *, nonnegative: bool = True):
    """A plan's check of the aggregate: :func:`check_counts` of the public ``shape``.

    Returns a function of ``hist`` giving C-contiguous int64 counts.  Every
    histogram mechanism checks its input this one way (integer dtype, the
    planned shape, int64 range without wrapping, non-negative counts whose
    total fits int64); ``nonnegative`` is kept for callers that pass it and
    must be True.
    """
    if nonnegative is not True:
        raise ValueError("shape_check: counts are always checked to be non-negative")
    shape = tuple(int(d) for d in shape)

    def check(hist) -> np.ndarray:
        return check_counts(hist, "hist", shape)

    return check


#: The message of a negative count (it names no count).
NEGATIVE_COUNT = "{name} must hold non-negative counts (a histogram); a negative entry was found"
#: The message of a total that does not fit int64 (it names no count).
TOTAL_TOO_LARGE = "{name}: the total count does not fit a signed 64-bit integer (at most {limit} allowed)"


def check_counts(hist, name: str = "hist", shape: tuple | None = None) -> np.ndarray:
    """Exact counts as an aligned C-contiguous int64 array: the one input check of every histogram mechanism.

    Parameters
    ----------
    hist : array_like of int
        The exact counts.
    name : str
        The parameter named in the messages.
    shape : tuple of int, optional
        The exact shape required (a plan's public shape); any non-empty
        shape when omitted.

    Returns
    -------
    numpy.ndarray of int64
        ``hist`` itself when it already is an aligned C-contiguous native
        int64 array, else a copy.

    Raises
    ------
    TypeError
        A dtype that is not an integer one: floating point (even with
        integral values: put real data on a grid first), bool, complex,
        object, strings.
    ValueError
        Not an array, the wrong shape, no cell, an unsigned count above the
        int64 maximum (never wrapped), a negative count.
    OverflowError
        A total that does not fit int64.

    Notes
    -----
    The messages name the parameter, the shape and the dtype (public), never
    a count or its position (data).
    """
    try:
        arr = np.asarray(hist)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be an array of integer counts (a regular, non-ragged array)") from None
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer counts (integers of an integer numpy dtype), got dtype "
                        f"{arr.dtype}; round real values onto an integer grid first")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name} must have the planned shape {tuple(shape)}, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must have at least one cell, got shape {arr.shape}")
    arr = as_c_int64(arr, name)  # unsigned counts above the int64 maximum are refused, not wrapped
    try:
        _tree.sum_counts(arr.reshape(-1))  # signs, and the total fits int64: one pass in C
    except ValueError:
        raise ValueError(NEGATIVE_COUNT.format(name=name)) from None
    except OverflowError:
        raise OverflowError(TOTAL_TOO_LARGE.format(name=name, limit=2**63 - 1)) from None
    return arr


def check_domain_counts(hist, shape, name: str = "hist") -> np.ndarray:
    """:func:`check_counts` of a domain's histogram given flat, shape (|T|,), or in the domain's ``shape``.

    Returns the checked int64 array in the shape it was given.
    """
    shape = tuple(int(d) for d in shape)
    flat = (math.prod(shape),)
    try:
        arr = np.asarray(hist)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be an array of integer counts (a regular, non-ragged array)") from None
    if arr.dtype.kind in "iu" and arr.shape not in (flat, shape):
        raise ValueError(f"{name} must have {flat[0]} cells, flat (shape {flat}) or of the domain's shape {shape}, "
                         f"got shape {arr.shape}")
    return check_counts(arr, name, arr.shape)


def check_histogram(hist, name: str = "hist", size: int | None = None) -> np.ndarray:
    """1-D :func:`check_counts`: non-empty, non-negative integer counts as aligned C-contiguous int64.

    Copies when the input is another integer dtype, misaligned, strided or
    byte-swapped, so what reaches C is always a native int64 buffer; the
    total fits int64.  Messages name the shape and dtype (public) but never
    a count (data).

    Parameters
    ----------
    hist : array_like of int
    name : str
    size : int, optional
        The exact length required (a plan's |T|).
    """
    try:
        arr = np.asarray(hist)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be a 1-D array of integer counts (a regular, non-ragged array)") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of counts, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must have at least one bin, got an empty array")
    return check_counts(arr, name, None if size is None else (int(size),))


def check_ratio(ratio, name: str = "ratio") -> Fraction:
    """A budget split strictly inside (0, 1), exactly."""
    msg = f"{name} must be strictly between 0 and 1 (the share of epsilon for the partition), got {ratio!r}"
    try:
        r = as_fraction(ratio, name, allow_zero=True)
    except ValueError:
        raise ValueError(msg) from None
    if not 0 < r < 1:
        raise ValueError(msg)
    return r


def check_policy(policy, hist: np.ndarray | None = None):
    """A :class:`Policy` without constraints, under Blowfish neighbours (optionally of ``hist``'s size)."""
    require_policy(policy)
    if policy.constraints or policy.neighbours != "blowfish":
        raise ValueError(
            f"policy must have no constraints and neighbours='blowfish' for transformational equivalence "
            "(Section 3 of the data-dependent Blowfish report proves the stretch only there), "
            f"got constraints={list(policy.constraints)!r}, "
            f"neighbours={policy.neighbours!r}"
        )
    if hist is not None and policy.domain.size != hist.size:
        raise ValueError(f"hist has {hist.size} bins but the policy's domain has {policy.domain.size} values")
    return policy


def check_size(size, name: str = "size") -> int:
    """A domain size |T| >= 1."""
    return as_int(size, name, minimum=1)
