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
apart round to grid points less than 4k/granularity + 1 apart, plus a
margin for the floating-point error of value/granularity, so the
sensitivity in grid units is floor(4k/granularity + 1 + margin).

Plan, then measure: :func:`plan_pufferfish_sum` fixes the sensitivity from
public inputs only, the declared ``bounds`` of the attribute, k and the
granularity (the margin is 1e-9 + 1e-15 * max|bound| / granularity, 1e-14
for logarithms).  The
measurement clamps values into the bounds (never an error), sums the grid
values exactly (Python integers: no overflow whatever n and the values) and
adds the noise exactly.

``bounds`` is required, by the plan and by :func:`pufferfish_sum` alike:
bounds taken from the values (their maximum, or minimum and maximum) would
be data, shown in the result, its ``repr`` and ``plan.options``, and the
margin of the sensitivity would move with them.  No field of a result
depends on the values but the noisy sum (``value``, ``grid_sum``,
``geometric_mean``) and ``n``, the number of values, which this Pufferfish
model treats as public (its secrets are the values, not who is counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._validation import as_fraction
from ...errors import ParameterError
from ...noise import Generator, calibrate, discrete_laplace_variance
from ..plan import NoisePart, Plan, Release, int64_bytes
from .._docs import guarantee_of
from ..._typing import Real

__all__ = ["PufferfishSum", "plan_pufferfish_sum", "pufferfish_sum"]

_CITATION = ("Kifer, Machanavajjhala, Pufferfish, PODS 2012 (Lemma 7.1, Section 7.1.2); sampler: Canonne, Kamath, "
             "Steinke 2020 Alg. 2")
#: Largest max|bound| / granularity: grid values must stay finite floats.
_MAX_GRID = 1e300
#: Floating-point error allowance, relative to max|bound| / granularity, for two
#: values together: t/g is one correctly rounded division (2 * 2**-53 < 1e-15);
#: log t adds a few ulps (numpy's SIMD log: allow 1e-14).
_FP_ABSOLUTE = Fraction(1, 10**15)
_FP_RELATIVE = Fraction(1, 10**14)


@dataclass(frozen=True)
class PufferfishSum(Release):
    """A released Pufferfish sum (a :class:`~.plan.Release`).

    Attributes
    ----------
    value : float
        The noisy sum in the original units (absolute variant), or the noisy
        sum of natural logarithms (relative variant); +-inf only if it
        exceeds the float range.
    geometric_mean : float or None
        exp(value / n) for the relative variant (NaN when n = 0).
    grid_sum : int
        The released noisy sum in grid units (an exact Python int).
    granularity : float
        The grid step (public: from k or as given).
    n : int
        Number of values summed (public under this Pufferfish model: the
        secrets are the values, not who is in the column; the noise does
        not hide it).
    secure : bool
    plan : Plan
        The plan that made it; the fields below are read from it.
    epsilon, epsilon_exact : float, Fraction
        Spent (never more than asked).
    sensitivity : int
        In grid units: floor(4k / granularity + 1 + margin), from the
        bounds, k and the granularity only.
    scale : Fraction
        Discrete Laplace scale in grid units.
    variance : float
        Noise variance in the units of ``value``.
    guarantee : str
        The protection in words.
    bounds : tuple of float
        The declared (low, high) range values were clamped into: a public
        input, never computed from the values.
    """

    value: float
    geometric_mean: float | None
    grid_sum: int
    n: int
    secure: bool
    plan: Any = field(repr=False, compare=False)

    _values_field = "value"

    @property
    def granularity(self) -> float:
        return self.plan.options["granularity"]

    @property
    def bounds(self) -> tuple:
        return self.plan.options["bounds"]

    @property
    def sensitivity(self) -> int:
        return self.plan.parts[0].sensitivity

    @property
    def scale(self) -> Fraction:
        return self.plan.parts[0].scale

    @property
    def variance(self) -> float:
        return self.plan.expected_error["variance"]


_BOUNDS_NEEDED = (
    "bounds is required: the attribute's declared public range (low, high), 0 <= low <= high (low > 0 for "
    "relative_error), fixed without looking at the values; values outside it are clamped into it (bounds "
    "taken from the values would disclose them)"
)


def _bounds(bounds, relative: bool) -> tuple[float, float]:
    if bounds is None:
        raise ParameterError("bounds", _BOUNDS_NEEDED)
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair (low, high) of numbers, got {bounds!r}") from None
    lo = float(as_fraction(low, "bounds[0] (low)", allow_zero=True))
    hi = float(as_fraction(high, "bounds[1] (high)", allow_zero=True))
    if relative and lo <= 0:
        raise ValueError(f"bounds: low must be > 0 for relative_error (logarithms), got bounds = ({lo!r}, {hi!r})")
    if hi < lo:
        raise ValueError(f"bounds: high must be >= low, got bounds = ({lo!r}, {hi!r})")
    return lo, hi


def _safe_float(numerator: int, g: float) -> float:
    """numerator * g as a float; +-inf beyond the float range (never raises)."""
    try:
        return float(Fraction(numerator) * Fraction(g))
    except OverflowError:
        return math.copysign(math.inf, numerator)


def _int64_sum(a: np.ndarray) -> int:
    """Exact sum of int64 values below 2**53 in magnitude, as a Python int."""
    m = a.size // 1024 * 1024
    total = int(a[m:].sum())
    if m:  # 1024 values below 2**53 sum below 2**63
        total += sum(a[:m].reshape(-1, 1024).sum(axis=1).tolist())
    return total


def _exact_sum(x: np.ndarray) -> int:
    """Exact sum of integer-valued finite float64 values, as a Python int."""
    small = np.abs(x) < 2.0**53
    total = _int64_sum(x[small].astype(np.int64))
    big = x[~small]
    if big.size:
        mant, exp = np.frexp(big)  # big = mant * 2**exp, exp > 53: mant * 2**53 is an exact integer
        mant = (mant * 2.0**53).astype(np.int64)
        for e in np.unique(exp).tolist():
            total += _int64_sum(mant[exp == e]) << (e - 53)
    return total


def plan_pufferfish_sum(
    epsilon: Real, *, bounds: tuple[float, float] | None = None, absolute_error: float | None = None,
    relative_error: float | None = None, granularity: float | None = None,
) -> Plan[PufferfishSum]:
    """Plan a Pufferfish sum of one attribute with a declared public range.

    Utility
        Unbiased up to grid rounding (each value moves by at most half a
        step); noise variance about 2 (4k/epsilon)^2 in value units,
        independent of n.  Values outside ``bounds`` are clamped into them.

    Parameters
    ----------
    epsilon : float or Fraction, > 0
    bounds : (low, high)
        Required: the declared public range of the attribute, ``0 <= low
        <= high`` (``low > 0`` for the relative variant), fixed without
        looking at the values.  The measurement clamps values into it; the
        floating-point margin of the sensitivity is computed from it.
    absolute_error : float, optional
        k > 0: protect every value to within +-k.
    relative_error : float, optional
        r > 0: protect every value to within a factor 1 + r.
    granularity : float, optional
        Grid step (in the units summed: values, or natural logs for the
        relative variant).  Default k/16: the sensitivity is then 65 grid
        steps for moderate bounds.

    Returns
    -------
    Plan
        ``plan.measure(column, generator)`` takes a 1-D numeric array of
        any length (n = 0 included) and returns a :class:`PufferfishSum`.

    Raises
    ------
    ParameterError
        (a ``ValueError``) without ``bounds`` (``bounds=None``), or for a
        parameter outside what is allowed.

    Privacy
    -------
    epsilon-Pufferfish with discriminative pairs "value in [x-k, x+k)"
    vs "value in [x+k, x+3k)" for every individual and every x, against
    adversaries who believe records independent (003 Sec 7.1.1, Lemma
    7.1).  With ``relative_error=r`` the pairs are the multiplicative
    intervals [y/(1+r), y(1+r)) vs [y(1+r), y(1+r)^3): inference to
    within a factor 1+r is not possible (003 Sec 7.1.2).  The noise is
    calibrated to floor(4k/granularity + 1 + margin) grid steps, where
    the margin covers floating-point rounding and depends only on the
    declared ``bounds`` and the granularity, never on the data.

    Sensitivity
    -----------
    floor(4k/granularity + 1 + margin) grid steps (003 Lemma 7.1: two
    values in the discriminative pair differ by less than 4k, plus one step of
    grid rounding), the margin covering floating-point rounding computed from
    the declared ``bounds`` and the granularity only (DEVELOPERS.md,
    "Pufferfish on a grid": a brute-force check found the off-by-one of
    ceil(4k/g)).

    Runtime
    -------
    O(n) for n values; about 32 bytes of working memory per value
    (linear in n).

    References
    ----------
    .. [1] Kifer, Machanavajjhala. *A Rigorous and Customizable Framework for Privacy.* PODS 2012 (Pufferfish,
        paper 003), Sec 7.1, Lemma 7.1, Sec 7.1.2.
    .. [2] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Algorithm 2
        (the exact discrete Laplace sampler).
    """
    if bounds is None:
        raise ParameterError("bounds", _BOUNDS_NEEDED)
    if (absolute_error is None) == (relative_error is None):
        raise ValueError("give exactly one of absolute_error (k > 0) or relative_error (r > 0)")
    relative = relative_error is not None
    lo, hi = _bounds(bounds, relative)
    if relative:
        r = as_fraction(relative_error, "relative_error")
        # half-width on the log scale, rounded up: never protect less than asked
        k = math.nextafter(math.log1p(float(r)), math.inf)
        top = max(abs(math.log(lo)), abs(math.log(hi)))
        what = f"a factor {1 + float(r):g} (relative error {float(r):g})"
        unit = "natural logarithms"
    else:
        k = float(as_fraction(absolute_error, "absolute_error"))
        top = hi
        what = f"+-{k:g}"
        unit = "value units"
    g = k / 16 if granularity is None else float(as_fraction(granularity, "granularity"))
    if g <= 0 or not math.isfinite(k / g):
        raise ValueError(f"granularity must be > 0 and not tiny against k, got {g!r} for k = {k!r}")
    if top / g > _MAX_GRID:
        raise ValueError(f"granularity: max|bounds| / granularity must be at most {_MAX_GRID:g}, got "
                         f"{top / g:.6g} (bounds = ({lo!r}, {hi!r}), granularity = {g!r})")
    # |t - t'| < 4k  =>  |rint(t/g) - rint(t'/g)| <= 4k/g + 1, plus the
    # floating-point error of t/g (and of log t) for both values, bounded
    # from the declared bounds; one more unit when 4k/g is an integer.
    margin = Fraction(1, 10**9) + (_FP_RELATIVE if relative else _FP_ABSOLUTE) * Fraction(top) / Fraction(g)
    sens = math.floor(Fraction(4 * k) / Fraction(g) + 1 + margin)
    cal = calibrate(sens, epsilon)
    part = NoisePart("sum", sens, False,
                     "Lemma 7.1 of the Pufferfish paper: 4k/granularity + 1 grid steps "
                     "plus a floating-point margin from the "
                     "declared bounds", cal.epsilon_exact, cal.scale, 1)
    variance = discrete_laplace_variance(cal.scale) * g * g
    guarantee = (
        f"epsilon = {cal.epsilon:.6g} Pufferfish: no adversary who believes records independent can infer "
        f"any individual's value to within {what}; the odds between neighbouring intervals move by at most "
        f"e^epsilon (Section 7.1 of the Pufferfish paper)."
    )

    def check(values):
        arr = np.asarray(values)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"values must be a numeric array (integer or float dtype), got dtype {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"values must be a 1-D array, got shape {arr.shape}")
        return arr

    def run(plan: Plan, arr: np.ndarray, gen: Generator) -> PufferfishSum:
        # noise first, apart from the data; added exactly as Python ints
        noise = int(gen.add_discrete_laplace(np.zeros(1, dtype=np.int64), cal.scale)[0])
        x = np.clip(np.nan_to_num(arr.astype(np.float64), nan=lo, posinf=hi, neginf=lo), lo, hi)
        if relative:
            x = np.log(x)
        total = _exact_sum(np.rint(x / g))
        noisy = total + noise
        value = _safe_float(noisy, g)
        n = int(arr.size)
        geo = None
        if relative:
            try:
                geo = math.exp(value / n) if n else math.nan
            except OverflowError:
                geo = math.inf
        return PufferfishSum(value=value, geometric_mean=geo, grid_sum=noisy, n=n, secure=gen.is_secure, plan=plan)

    return Plan(
        mechanism="pufferfish_sum", policy=None, guarantee=guarantee, citation=_CITATION,
        epsilon_requested=cal.epsilon_requested, parts=(part,),
        aggregate=(f"1-D numeric column of any length (summed in {unit}; values clamped into the bounds "
                   f"[{lo:g}, {hi:g}], NaN to the low bound); memory linear in n: about 32 bytes per value"),
        aggregate_shape=None,
        expected_error={"variance": variance, "rounding_per_value": g / 2},
        memory_bytes=int64_bytes(64),
        runtime="O(n): clamp, grid and an exact integer sum; one discrete Laplace draw; about 32 bytes per value",
        options={"bounds": (lo, hi), "absolute_error": absolute_error, "relative_error": relative_error,
                 "granularity": g, "k": k},
        model="Pufferfish", check=check, run=run,
    )


@guarantee_of(plan_pufferfish_sum)
def pufferfish_sum(
    values: npt.ArrayLike,
    *,
    absolute_error: float | None = None,
    relative_error: float | None = None,
    epsilon: Real,
    generator: Generator | None = None,
    granularity: float | None = None,
    bounds: tuple[float, float] | None = None,
) -> PufferfishSum:
    """Sum of unbounded values, protected to +-k (003 Lemma 7.1).

    ``plan_pufferfish_sum(epsilon, bounds=bounds, ...).measure(values,
    generator)``.  ``bounds``, the attribute's declared public range, is
    required: bounds taken from the values would be data (shown in the
    result and its plan) and would move the sensitivity with them.

    Utility
        Unbiased up to grid rounding; noise variance about 2 (4k/epsilon)^2,
        independent of n and of how large the values are.

    Parameters
    ----------
    values : array_like of float, shape (n,)
        A 1-D numeric array (only its shape and dtype are checked): every
        value is clamped into ``bounds`` (NaN to the low bound), never
        refused.
    absolute_error : float, optional
        k > 0: protect every value to within +-k.
    relative_error : float, optional
        r > 0: protect every value to within a factor 1 + r.
    epsilon : float
    generator : Generator, optional
    granularity : float, optional
        Grid step (in the units summed: values, or natural logs for the
        relative variant).  Default k/16: the sensitivity is then 65 grid
        steps (4k plus one step for rounding) for moderate bounds.
        Rounding moves each value by at most half a step (the sum by at
        most n/2 steps).
    bounds : (low, high)
        Required (a keyword with no usable default): the declared public
        range, ``0 <= low <= high`` (``low > 0`` for the relative variant).

    Returns
    -------
    PufferfishSum
        ``value``: the noisy sum in value units (``relative_error``: the
        noisy sum of natural logs, with ``geometric_mean``); ``grid_sum`` the
        released integer in grid units, with the epsilon spent, the
        sensitivity in grid steps and the noise variance.

    Raises
    ------
    ParameterError
        (a ``ValueError``) without ``bounds``, before the values are read;
        or for a parameter outside what is allowed.

    Privacy
    -------
    epsilon-Pufferfish with discriminative
    pairs "value in [x-k, x+k)" vs "value in [x+k, x+3k)" for every
    individual and every x, against adversaries who believe records
    independent (003 Sec 7.1.1).  With ``relative_error=r`` the pairs
    are the multiplicative intervals [y/(1+r), y(1+r)) vs [y(1+r),
    y(1+r)^3): inference to within a factor 1+r is not possible (003
    Sec 7.1.2).

    Sensitivity
    -----------
    floor(4k/granularity + 1 + margin) grid steps (003 Lemma 7.1 plus one
    step of rounding); the margin comes from the declared ``bounds`` and the
    granularity, never from the values.
    """
    if bounds is None:  # before anything reads the values
        raise ParameterError("bounds", _BOUNDS_NEEDED)
    plan = plan_pufferfish_sum(epsilon, bounds=bounds, absolute_error=absolute_error, relative_error=relative_error,
                               granularity=granularity)
    return plan.measure(values, generator)
