"""The Laplace mechanism with policy-specific sensitivity, on integers.

Privacy guarantee
    (epsilon, P)-Blowfish privacy for any policy P whose policy-specific
    global sensitivity of the released query is at most ``sensitivity``
    (000 Thm 5.1; with P = (T, K, I_n), K complete, this is bounded
    epsilon-differential privacy, 000 Sec 4.2).  The noise is the exact
    discrete Laplace P(Z = z) proportional to exp(-|z|/scale) with
    scale >= sensitivity/epsilon: for two neighbours the output
    probabilities differ by at most exp(|f(D1) - f(D2)|_1 / scale)
    <= exp(epsilon), the discrete analogue of the continuous argument
    (Canonne, Kamath, Steinke 2020, Sec 2).
Citation
    He, Machanavajjhala, Ding, SIGMOD 2014 (000 Sec 5, Def 5.1, Thm 5.1);
    sampler: CKS 2020 Algorithm 2.
Runtime
    O(n) samples; about 20 million samples a second on one core (see
    benchmarks/bench_sampler.py).
Utility
    Per cell, unbiased with variance 2p/(1-p)^2, p = exp(-1/scale), just
    below the continuous Laplace's 2 scale^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._validation import as_fraction, as_int64_array, check_epsilon
from ..noise import Generator, as_generator, discrete_laplace_variance, round_scale_up


@dataclass(frozen=True)
class Calibration:
    """Noise scale for a sensitivity and an epsilon, with the exact spend.

    ``scale`` is ``sensitivity / epsilon`` rounded *up* to a ratio of
    integers below 2**32; ``epsilon_exact = sensitivity / scale`` is then
    never more than the epsilon asked.
    """

    sensitivity: Fraction
    epsilon_requested: Fraction
    scale: Fraction
    epsilon_exact: Fraction

    @property
    def epsilon(self) -> float:
        return float(self.epsilon_exact)


def calibrate(sensitivity, epsilon) -> Calibration:
    """Scale of discrete Laplace noise for ``sensitivity`` and ``epsilon``.

    A sensitivity of 0 needs no noise: the scale and the spend are 0.
    """
    sens = as_fraction(sensitivity, "sensitivity", allow_zero=True)
    eps = check_epsilon(epsilon)
    if sens == 0:
        return Calibration(sens, eps, Fraction(0), Fraction(0))
    scale = round_scale_up(sens / eps, "sensitivity / epsilon")
    return Calibration(sens, eps, scale, sens / scale)


@dataclass(frozen=True)
class LaplaceResult:
    """A release of the Laplace mechanism.

    Attributes
    ----------
    values : numpy.ndarray of int64
        The noisy values, same shape as the input.
    epsilon : float
        Epsilon actually spent (``<=`` the epsilon asked).
    epsilon_exact : fractions.Fraction
        The same, exactly.
    sensitivity : fractions.Fraction
        The sensitivity the noise was calibrated to.
    scale : fractions.Fraction
        Discrete Laplace scale used (0: released without noise).
    secure : bool
        False when the generator was seeded (not for real releases).
    variance : float
        Noise variance per value (the expected squared error of each one).
    """

    values: np.ndarray
    epsilon: float
    epsilon_exact: Fraction
    sensitivity: Fraction
    scale: Fraction
    secure: bool
    variance: float

    @property
    def expected_squared_error(self) -> float:
        """Sum over values of the expected squared error (000 Def 2.4)."""
        return self.variance * self.values.size


def laplace(values, *, sensitivity, epsilon, generator: Generator | None = None) -> LaplaceResult:
    """Release integer ``values`` with exact discrete Laplace noise.

    Parameters
    ----------
    values : array_like of int, any shape
        The exact aggregate (counts, integer sums).  Floating-point input is
        refused with TypeError.
    sensitivity : int, float or Fraction, >= 0
        The L1 policy-specific sensitivity of the query that produced
        ``values``, e.g. ``policy.sensitivity("histogram")``.
    epsilon : float or Fraction, > 0
        Privacy parameter.
    generator : Generator, optional
        Source of randomness; a new secure one when omitted.

    Returns
    -------
    LaplaceResult

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Generator, mechanisms
    >>> r = mechanisms.laplace(np.array([10, 20, 30]), sensitivity=2, epsilon=1.0,
    ...                        generator=Generator(seed=1))
    >>> r.values.shape, r.epsilon <= 1.0
    ((3,), True)
    """
    arr = as_int64_array(values, "values")
    cal = calibrate(sensitivity, epsilon)
    gen = as_generator(generator)
    if cal.scale == 0:
        noisy = arr.copy()
    else:
        noisy = gen.add_discrete_laplace(arr, cal.scale)
    return LaplaceResult(
        values=noisy,
        epsilon=cal.epsilon,
        epsilon_exact=cal.epsilon_exact,
        sensitivity=cal.sensitivity,
        scale=cal.scale,
        secure=gen.is_secure,
        variance=discrete_laplace_variance(cal.scale),
    )
