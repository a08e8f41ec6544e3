"""The result type shared by the histogram mechanisms (identity workload).

Used by ``transformed_laplace``, ``privelet``, ``dawa``,
``dawa_transformed`` and ``matching_transformed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

__all__ = ["HistogramRelease", "uniform_expansion"]


@dataclass(frozen=True)
class HistogramRelease:
    """A released histogram (one estimate per domain value).

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

    def mse(self, truth) -> float:
        """Mean squared error per value against ``truth`` (for experiments)."""
        t = np.asarray(truth, dtype=np.float64)
        return float(np.mean((self.histogram.astype(np.float64) - t) ** 2))


def uniform_expansion(bucket_counts: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """Spread every bucket's estimate evenly over its values (001 Sec 4, step 3)."""
    sizes = np.bincount(buckets, minlength=bucket_counts.size)
    return bucket_counts.astype(np.float64)[buckets] / sizes[buckets]


def check_histogram(hist, name: str = "hist") -> np.ndarray:
    """1-D, non-empty, non-negative integer counts as C-contiguous int64."""
    arr = np.asarray(hist)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of counts, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must have at least one bin, got an empty array")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer counts, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative counts, got {int(arr.min())} at index {int(arr.argmin())}")
    return arr


def check_ratio(ratio, name: str = "ratio") -> Fraction:
    """A budget split strictly inside (0, 1), exactly."""
    from .._validation import as_fraction

    msg = f"{name} must be strictly between 0 and 1 (the share of epsilon for the partition), got {ratio!r}"
    try:
        r = as_fraction(ratio, name, allow_zero=True)
    except ValueError:
        raise ValueError(msg) from None
    if not 0 < r < 1:
        raise ValueError(msg)
    return r


def check_policy(policy, hist: np.ndarray):
    from ..policy import Policy

    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a blowfish_privacy.Policy, got {type(policy).__name__}")
    if policy.domain.size != hist.size:
        raise ValueError(f"hist has {hist.size} bins but the policy's domain has {policy.domain.size} values")
    return policy
