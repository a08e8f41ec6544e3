"""The result type shared by the histogram mechanisms (identity workload).

Used by ``transformed_laplace``, ``privelet``, ``dawa``,
``dawa_transformed`` and ``matching_transformed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._validation import as_fraction, as_int
from ..policy import require_policy
from ..transform import as_c_int64
from .plan import Release

__all__ = ["HistogramRelease", "uniform_expansion"]


@dataclass(frozen=True)
class HistogramRelease(Release):
    """A released histogram (one estimate per domain value).

    For the data-dependent mechanisms (DAWA, matching) ``epsilon`` and
    ``epsilon_parts`` are the plan's: the mechanism as a whole is private
    at the planned epsilon, whichever branch the (private) partition took.

    Attributes
    ----------
    histogram : numpy.ndarray, shape (|T|,)
        The estimates: int64 when they are the noisy integers themselves,
        float64 after post-processing (uniform expansion, wavelet
        reconstruction).
    mechanism : str
    epsilon : float
        Epsilon actually spent (never more than asked), under ``guarantee``.
    epsilon_exact : fractions.Fraction
    epsilon_parts : dict
        Exact spend per step (e.g. partition and counts).
    guarantee : str
        The policy of the (epsilon, P)-Blowfish guarantee, e.g.
        ``"FullDomain"`` (bounded DP) or the secret graph's repr.
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
    plan : Plan or None
        The plan that made this release.
    """

    histogram: np.ndarray
    mechanism: str
    epsilon: float
    epsilon_exact: Fraction
    epsilon_parts: dict
    guarantee: str
    secure: bool
    buckets: np.ndarray | None = None
    stretch: int = 1
    expected_squared_error: float | None = None
    params: dict = field(default_factory=dict)
    plan: Any = field(default=None, repr=False, compare=False)

    _values_field = "histogram"

    def _common(self) -> dict:
        plan = self.plan
        if plan is not None:
            scales = {p.name: p.scale for p in plan.parts}
            sens = {p.name: p.sensitivity for p in plan.parts}
            guarantee = plan.guarantee
        else:
            scales = {"counts": self.params["scale"]} if "scale" in self.params else {}
            sens = {}
            guarantee = f"(epsilon, P)-Blowfish privacy for the secret graph {self.guarantee}"
        err = {} if self.expected_squared_error is None else {"total_squared_error": self.expected_squared_error}
        return {"epsilon_parts": dict(self.epsilon_parts), "scales": scales, "sensitivity": sens,
                "guarantee": guarantee, "expected_error": err}

    def mse(self, truth) -> float:
        """Mean squared error per value against ``truth`` (for experiments)."""
        t = np.asarray(truth, dtype=np.float64)
        return float(np.mean((self.histogram.astype(np.float64) - t) ** 2))


def uniform_expansion(bucket_counts: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """Spread every bucket's estimate evenly over its values (001 Sec 4, step 3)."""
    sizes = np.bincount(buckets, minlength=bucket_counts.size)
    return bucket_counts.astype(np.float64)[buckets] / sizes[buckets]


def shape_check(shape, *, nonnegative: bool = False):
    """A plan's check of the aggregate: integer counts of the public ``shape``.

    Returns a function of ``hist`` giving C-contiguous int64 counts; its
    messages name the dtype or the shape (public), never a count.  With
    ``nonnegative`` it also refuses a negative count (the message names
    no value).
    """
    shape = tuple(shape)

    def check(hist) -> np.ndarray:
        arr = np.asarray(hist)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"hist must hold integer counts, got dtype {arr.dtype}")
        if arr.shape != shape:
            raise ValueError(f"hist must have the planned shape {shape}, got shape {arr.shape}")
        if nonnegative and arr.size and arr.min() < 0:
            raise ValueError("hist must hold non-negative counts")
        return np.ascontiguousarray(arr, dtype=np.int64)

    return check


#: The message of a negative count (it names no count).
NEGATIVE_COUNT = "{name} must hold non-negative counts (a histogram); a negative entry was found"


def check_histogram(hist, name: str = "hist", size: int | None = None, *, signs: bool = True) -> np.ndarray:
    """1-D, non-empty, non-negative integer counts as aligned C-contiguous int64.

    Copies when the input is another integer dtype, misaligned, strided or
    byte-swapped, so what reaches C is always a native int64 buffer.
    Messages name the shape and dtype (public) but never a count (data).

    Parameters
    ----------
    hist : array_like of int
    name : str
    size : int, optional
        The exact length required (a plan's |T|).
    signs : bool
        False leaves the non-negativity check to the caller (one that sums
        the counts checks the signs in the same pass).
    """
    arr = np.asarray(hist)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of counts, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must have at least one bin, got an empty array")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer counts, got dtype {arr.dtype}")
    if size is not None and arr.size != size:
        raise ValueError(f"{name} must have the planned shape ({size},), got shape {arr.shape}")
    arr = as_c_int64(arr, name)
    if signs and arr.min() < 0:
        raise ValueError(NEGATIVE_COUNT.format(name=name))
    return arr


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
            f"(001 Sec 3 proves the stretch only there), got constraints={list(policy.constraints)!r}, "
            f"neighbours={policy.neighbours!r}"
        )
    if hist is not None and policy.domain.size != hist.size:
        raise ValueError(f"hist has {hist.size} bins but the policy's domain has {policy.domain.size} values")
    return policy


def check_size(size, name: str = "size") -> int:
    """A domain size |T| >= 1."""
    return as_int(size, name, minimum=1)
