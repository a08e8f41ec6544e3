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
    O(n) samples; 35-60 million samples a second on one core, depending
    on the scale (see benchmarks/bench_sampler.py).
Utility
    Per cell, unbiased with variance 2p/(1-p)^2, p = exp(-1/scale), just
    below the continuous Laplace's 2 scale^2.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..._validation import as_int64_array
from ...noise import Calibration, Generator, calibrate, discrete_laplace_variance
from ...policy._policy import require_policy
from ..histogram import shape_check
from ..plan import NoisePart, Plan, Release, check_memory, int64_bytes
from ..._typing import Real

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = ["Calibration", "LaplaceResult", "calibrate", "laplace", "plan_laplace", "plan_histogram"]

_GUARANTEE = ("(epsilon, P)-Blowfish privacy for every policy P under which the query's L1 sensitivity is at most "
              "the sensitivity used (Theorem 5.1 of the Blowfish paper)")
_CITATION = ("He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014 (Section 5, Theorem 5.1); sampler: Canonne, "
             "Kamath, Steinke 2020 Alg. 2")


@dataclass(frozen=True)
class LaplaceResult(Release):
    """A release of the Laplace mechanism: the noisy values and their plan.

    Attributes
    ----------
    values : numpy.ndarray of int64
        The noisy values, same shape as the input.
    secure : bool
        False when the generator was seeded (not for real releases).
    plan : Plan
        The plan that made it; every privacy field below is read from it.
    epsilon, epsilon_exact : float, fractions.Fraction
        Epsilon actually spent (``<=`` the epsilon asked).
    sensitivity : fractions.Fraction
        The sensitivity the noise was calibrated to.
    scale : fractions.Fraction
        Discrete Laplace scale used (0: released without noise).
    variance : float
        Noise variance per value (the expected squared error of each one).
    """

    values: npt.NDArray[np.int64]
    secure: bool
    plan: Any = field(repr=False, compare=False)

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(self.plan.parts[0].sensitivity)

    @property
    def scale(self) -> Fraction:
        return self.plan.parts[0].scale

    @property
    def variance(self) -> float:
        return self.plan.expected_error["per_value_variance"]

    @property
    def expected_squared_error(self) -> float:
        """Sum over values of the expected squared error (000 Def 2.4)."""
        return self.variance * self.values.size


def _laplace_run(plan: Plan, arr: np.ndarray, gen: Generator) -> LaplaceResult:
    part = plan.parts[0]
    # the whole noise vector is drawn before the values are read (noise.py)
    noisy = arr.copy() if part.scale == 0 else gen.add_discrete_laplace(arr, part.scale)
    return LaplaceResult(values=noisy, secure=gen.is_secure, plan=plan)


def _shape(shape) -> tuple:
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    if any(isinstance(d, bool) or not isinstance(d, (numbers.Integral, np.integer)) for d in dims):
        raise TypeError(f"shape must be a tuple of non-negative integers, got {shape!r}")
    out = tuple(int(d) for d in dims)
    if any(d < 0 for d in out):
        raise ValueError(f"shape must be a tuple of non-negative integers, got {shape!r}")
    return out


def plan_laplace(shape: int | tuple[int, ...], *, sensitivity: Real, epsilon: Real, policy: Policy | None = None,
                 how: str = "given by the caller", sensitivity_exact: bool = True,
                 model: str = "Blowfish") -> Plan[LaplaceResult]:
    """Plan the Laplace mechanism for integer values of a public ``shape``.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the values :meth:`Plan.measure` will take.
    sensitivity : int, float or Fraction, >= 0
    epsilon : float or Fraction, > 0
    policy : Policy, optional
        Only recorded in the plan (the caller proved the sensitivity).
    how : str
        How the sensitivity was obtained, for the plan's record.
    sensitivity_exact : bool
        Whether ``sensitivity`` is exact or an upper bound.
    model : str
        The privacy model the caller's sensitivity is proven in: ``"Blowfish"``
        (under ``policy``) or ``"DP"`` (the complete secret graph: a
        differential-privacy baseline).

    Returns
    -------
    Plan
        ``measure(values, generator)`` releases the int64 values of shape
        ``shape`` plus exact discrete Laplace noise of scale
        ``sensitivity / epsilon`` (rounded up) per value, as a
        :class:`LaplaceResult`.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for every policy P under which the query
    that produced the values has L1 sensitivity at most ``sensitivity``
    (000 Thm 5.1); with the complete secret graph this is bounded
    epsilon-differential privacy.  The spent epsilon is ``sensitivity /
    scale`` <= ``epsilon`` with the scale rounded up.

    Sensitivity
    -----------
    Given by the caller (``how`` records how it was obtained, e.g.
    ``policy.sensitivity("histogram")``); this plan does not check it.

    Runtime
    -------
    O(values): one exact discrete Laplace draw per value.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.* SIGMOD 2014 (paper 000), Sec 5, Def 5.1, Thm 5.1.
    .. [2] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Algorithm 2 (the exact discrete Laplace sampler).
    """
    shp = _shape(shape)
    cal = calibrate(sensitivity, epsilon)
    size = math.prod(shp)
    memory = check_memory(int64_bytes(3 * size), size=size, parameter="policy" if policy is not None else "shape",
                          mechanism="laplace")
    var = discrete_laplace_variance(cal.scale)
    part = NoisePart("values", cal.sensitivity, bool(sensitivity_exact), how, cal.epsilon_exact, cal.scale, size)

    def check(values):
        arr = as_int64_array(values, "values")
        if arr.shape != shp:
            raise ValueError(f"values must have the planned shape {shp}, got shape {arr.shape}")
        return arr

    return Plan(
        mechanism="laplace", policy=policy, guarantee=_GUARANTEE, citation=_CITATION,
        epsilon_requested=cal.epsilon_requested, parts=(part,),
        aggregate=f"int64 values of shape {shp}", aggregate_shape=shp,
        expected_error={"per_value_variance": var, "total_squared_error": var * size},
        memory_bytes=memory, runtime="O(values): one exact discrete Laplace draw per value",
        options={}, model=model, check=check, run=_laplace_run,
    )


def plan_histogram(policy: Policy, epsilon: Real) -> Plan[LaplaceResult]:
    """Plan a noisy complete histogram of ``policy``'s domain.

    Parameters
    ----------
    policy : Policy
    epsilon : float or Fraction, > 0

    Returns
    -------
    Plan
        ``measure(hist, generator)`` releases the int64 histogram of shape
        ``policy.domain.shape`` plus exact discrete Laplace noise per cell,
        as a :class:`LaplaceResult`.

    Privacy
    -------
    (epsilon, policy)-Blowfish privacy (000 Thm 5.1).

    Sensitivity
    -----------
    ``policy.sensitivity_info("histogram")``: 2 when the secret graph has
    an edge, 0 without (000 Sec 5, Def 5.1, exact); under public count
    constraints the proven bound of 000 Sec 8 with the corrections of
    Corrections to the papers (docs/explanation/corrections.md: the
    complete graph's bound, Thm 8.2 from an exact policy-graph
    search, or 2 (|Q| + 1)), refused when no bound is proven.

    Runtime
    -------
    O(|T|) draws; planning is O(1) without constraints, the policy-graph
    search (exponential in the number of constraints, at most about 24)
    with them.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.* SIGMOD 2014 (paper 000), Sec 5 (Thm 5.1) and Sec 8 (Thm 8.2).
    """
    require_policy(policy)
    info = policy.sensitivity_info("histogram")
    how = info.note or "exact maximum over the edges of the secret graph (Definition 5.1 of the Blowfish paper)"
    plan = plan_laplace(policy.domain.shape, sensitivity=info.value, epsilon=epsilon, policy=policy, how=how,
                        sensitivity_exact=info.exact)
    return _replace_plan(plan, mechanism="histogram",
                         guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r} "
                                   "(Theorem 5.1 of the Blowfish paper)",
                         aggregate=f"int64 histogram of shape {tuple(policy.domain.shape)}, non-negative",
                         check=shape_check(policy.domain.shape))


def _replace_plan(plan: Plan, **changes) -> Plan:
    return replace(plan, **changes)


def laplace(values: npt.ArrayLike, *, sensitivity: Real, epsilon: Real,
            generator: Generator | None = None) -> LaplaceResult:
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

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for every policy P under which the query
    that produced ``values`` has L1 sensitivity at most ``sensitivity``
    (000 Thm 5.1); the result's ``epsilon`` (<= ``epsilon``) is what was
    spent after rounding the scale up.

    Sensitivity
    -----------
    Given by the caller, e.g. ``policy.sensitivity("histogram")`` (2 for a
    histogram under any secret graph with an edge, 000 Def 5.1).

    Runtime
    -------
    O(values): one exact discrete Laplace draw per value (35-60 million a
    second on one core, depending on the scale; large batches use every
    core).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.* SIGMOD 2014 (paper 000), Sec 5, Thm 5.1.
    .. [2] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Algorithm 2 (the exact discrete Laplace sampler).

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
    return plan_laplace(arr.shape, sensitivity=sensitivity, epsilon=epsilon).measure(arr, generator)
