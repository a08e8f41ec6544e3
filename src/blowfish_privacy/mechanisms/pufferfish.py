"""Sums of unbounded values protected to an absolute or relative error (003 Sec 7.1).

Pufferfish (Kifer and Machanavajjhala, PODS 2012; file 003) protects an
unbounded continuous attribute by making neighbouring intervals of one
individual's value indistinguishable: [x-k, x+k) against [x+k, x+3k) for
every x (003 eq. 8-9), so an adversary cannot infer the value to within
+-k.  Lemma 7.1: releasing sum(t_i) + Laplace(4k/epsilon) satisfies
epsilon-Pufferfish for adversaries who believe records are independent
(003 eq. 10): two values in neighbouring intervals differ by less than 4k.
Relative error (003 Sec 7.1.2) reduces to absolute error on logarithms:
t in [c y, y/c] iff log t in [log y + log c, log y - log c].

Here the values are first put on a grid of the stated ``granularity``
(nearest grid point), the grid-unit sum gets exact discrete Laplace noise,
and the sensitivity accounts for the rounding: two values less than 4k
apart round to grid points less than 4k/granularity + 1 apart (plus a
margin for floating-point error), so the sensitivity in grid units is
floor(4k/granularity + 1 + margin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._validation import as_fraction
from ..noise import Generator, as_generator, discrete_laplace_variance
from .laplace import calibrate

__all__ = ["PufferfishSum", "pufferfish_sum"]


@dataclass(frozen=True)
class PufferfishSum:
    """A released Pufferfish sum.

    Attributes
    ----------
    value : float
        The noisy sum in the original units (absolute variant), or the noisy
        sum of natural logarithms (relative variant).
    geometric_mean : float or None
        exp(value / n) for the relative variant.
    grid_sum : int
        The released noisy sum in grid units (the integer the sampler
        produced).
    granularity : float
    n : int
    epsilon, epsilon_exact : float, Fraction
        Spent (never more than asked).
    sensitivity : int
        In grid units: floor(4k / granularity + 1 + margin).
    scale : Fraction
        Discrete Laplace scale in grid units.
    variance : float
        Noise variance in the units of ``value``.
    guarantee : str
        The protection in words.
    secure : bool
    """

    value: float
    geometric_mean: float | None
    grid_sum: int
    granularity: float
    n: int
    epsilon: float
    epsilon_exact: Fraction
    sensitivity: int
    scale: Fraction
    variance: float
    guarantee: str
    secure: bool


def pufferfish_sum(
    values,
    *,
    absolute_error=None,
    relative_error=None,
    epsilon,
    generator: Generator | None = None,
    granularity=None,
) -> PufferfishSum:
    """Sum of non-negative unbounded values, protected to +-k (003 Lemma 7.1).

    Privacy guarantee
        epsilon-Pufferfish with discriminative pairs "value in [x-k, x+k)"
        vs "value in [x+k, x+3k)" for every individual and every x, against
        adversaries who believe records independent (003 Sec 7.1.1).  With
        ``relative_error=r`` the pairs are the multiplicative intervals
        [y/(1+r), y(1+r)) vs [y(1+r), y(1+r)^3): inference to within a
        factor 1+r is not possible (003 Sec 7.1.2).
    Citation
        003 Lemma 7.1 and Sec 7.1.2; sampler: CKS 2020 Algorithm 2.
    Runtime
        O(n).
    Utility
        Unbiased up to grid rounding; noise variance about 2 (4k/epsilon)^2,
        independent of n and of how large the values are.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        Non-negative (strictly positive for the relative variant), finite.
    absolute_error : float, optional
        k > 0: protect every value to within +-k.
    relative_error : float, optional
        r > 0: protect every value to within a factor 1 + r.
    epsilon : float
    generator : Generator, optional
    granularity : float, optional
        Grid step (in the units summed: values, or natural logs for the
        relative variant).  Default k/16: the sensitivity is then 65 grid
        steps (4k plus one step for rounding).  Rounding moves each value
        by at most half a step (the sum by at most n/2 steps).
    """
    if (absolute_error is None) == (relative_error is None):
        raise ValueError("give exactly one of absolute_error (k > 0) or relative_error (r > 0)")
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite (no NaN or infinity)")
    relative = relative_error is not None
    if relative:
        r = as_fraction(relative_error, "relative_error")
        if (arr <= 0).any():
            raise ValueError(
                f"values must be > 0 for relative_error (logarithms), got {float(arr[arr <= 0][0])}"
            )
        k = math.log1p(float(r))  # half-width of the interval on the log scale
        data = np.log(arr)
        what = f"a factor {1 + float(r):g} (relative error {float(r):g})"
    else:
        k = float(as_fraction(absolute_error, "absolute_error"))
        if (arr < 0).any():
            raise ValueError(f"values must be >= 0, got {float(arr[arr < 0][0])}")
        data = arr
        what = f"+-{k:g}"
    g = k / 16 if granularity is None else float(as_fraction(granularity, "granularity"))
    grid = np.rint(data / g)
    if np.abs(grid).max() * arr.size >= 2**62:
        raise ValueError("values / granularity are too large to sum exactly in int64; use a coarser granularity")
    grid = grid.astype(np.int64)
    # |t - t'| < 4k  =>  |rint(t/g) - rint(t'/g)| < 4k/g + 1, plus the
    # floating-point error of t/g and of k itself: take the largest integer
    # below that with a margin (one more unit when 4k/g is an integer).
    slack = 1e-9 + 1e-15 * float(np.abs(data).max() / g)
    sens = math.floor(Fraction(4 * k) / Fraction(g) + 1 + Fraction(slack))
    cal = calibrate(sens, epsilon)
    gen = as_generator(generator)
    total = int(grid.sum())
    noisy = int(gen.add_discrete_laplace(np.array([total]), cal.scale)[0])
    value = noisy * g
    guarantee = (
        f"epsilon = {cal.epsilon:.6g} Pufferfish: no adversary who believes records independent can infer "
        f"any individual's value to within {what}; the odds between neighbouring intervals move by at most "
        f"e^epsilon (003 Sec 7.1)."
    )
    return PufferfishSum(
        value=value,
        geometric_mean=math.exp(value / arr.size) if relative else None,
        grid_sum=noisy,
        granularity=g,
        n=int(arr.size),
        epsilon=cal.epsilon,
        epsilon_exact=cal.epsilon_exact,
        sensitivity=sens,
        scale=cal.scale,
        variance=discrete_laplace_variance(cal.scale) * g * g,
        guarantee=guarantee,
        secure=gen.is_secure,
    )
