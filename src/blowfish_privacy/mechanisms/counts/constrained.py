"""Histograms under public count constraints, with consistency (000 Sec 8, 004 Sec 6).

``constrained_histogram`` adds exact discrete Laplace noise calibrated to the
policy's sensitivity of the complete histogram under its constraints, then
(optionally) projects the noisy histogram onto the histograms that agree
with the public answers, in least squares.

Privacy guarantee
    (epsilon, P)-Blowfish privacy for the policy ``P = (T, G, I_Q)`` (000
    Def 4.2) when the sensitivity used is at least ``S(h, P)``: the Laplace
    mechanism (000 Thm 5.1) with the value of
    :meth:`~blowfish_privacy.Policy.sensitivity_report`, which is a proven
    upper bound under Def 4.1 read literally (see
    Corrections to the papers (docs/explanation/corrections.md)), or, with
    ``neighbours="moves"``, the guarantee of 004 Sec 3-4 for exact cuboids
    (004 Lemma 4.2).  Consistency only uses the noisy release and the public
    answers, so it is post-processing and costs nothing.  A sensitivity
    passed by the caller is recorded as asserted by the caller; values below
    a proven bound are refused.
Citation
    He, Machanavajjhala, Ding, SIGMOD 2014 (000 Sec 8, Thm 8.2, 8.4); the
    cube draft (004 Lemma 4.2; Sec 6.1, eqs. 6-7 for one cuboid, eqs. 10-12
    for two); Corrections to the papers (docs/explanation/corrections.md) for the corrected bounds.
Runtime
    O(|T|) for the noise and for consistency with one or two cuboids
    (closed forms over the reshaped cube); O(|T| * constraints) per
    conjugate-gradient iteration otherwise, at most ``|Q|`` iterations in
    exact arithmetic.
Utility
    Before consistency each cell has the discrete Laplace variance of scale
    ``S / epsilon``.  The projection onto the affine set ``{x : A x = b}``
    (which holds the truth) never increases the L2 error, and for
    independent noise of variance ``v`` the expected total squared error
    after it is ``v (|T| - rank A)`` (reported as
    ``expected_squared_error``).
Modules
    The least-squares consistency step (:func:`consistent_estimate`) lives
    in :mod:`._consistency`; every public name is importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._validation import as_fraction
from ...policy.constraints import Constraint, NoProvenSensitivityError
from ...noise import Generator, calibrate, discrete_laplace_variance
from ...policy._policy import Policy, require_policy
from ..histogram import check_domain_counts
from ..plan import NoisePart, Plan, Release, check_memory, int64_bytes
from .._docs import guarantee_of
from ._consistency import public_answers, consistent_estimate
from ..._typing import Real

__all__ = ["ConstrainedRelease", "constrained_histogram", "consistent_estimate", "plan_constrained_histogram"]

_CITATION = (
    "He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014 (Section 8, Theorems 8.2 and 8.4) with the "
    "library's corrections (checked by brute force against Definition 4.1); exact cuboids: the exact-cuboids draft (Lemma 4.2, Section 6.1); sampler: Canonne, Kamath, "
    "Steinke 2020 Alg. 2"
)


@dataclass(frozen=True)
class ConstrainedRelease(Release):
    """A histogram released under public constraints: the estimate, the noisy counts and their plan.

    Attributes
    ----------
    values : numpy.ndarray of float64
        The estimate (consistent with the public answers when
        ``consistent=True``; else the noisy counts as floats), shape of the
        input.
    noisy : numpy.ndarray of int64
        The noisy release before consistency.
    secure : bool
        False when the generator was seeded.
    method : str
        Consistency method: "none", "one cuboid", "two cuboids",
        "conjugate gradient" (with "+ non-negative" when asked).
    rank : int or None
        Rank of the constraint matrix when known.
    plan : Plan
        The plan that made this release; every privacy field below is read from it.
    epsilon, epsilon_exact : float, Fraction
        Epsilon actually spent.
    sensitivity : Fraction
        The sensitivity the noise was calibrated to.
    sensitivity_rule : str
        How it was obtained (the policy's rule, or "asserted by the caller").
    sensitivity_tight : bool
        Whether it is known to be attained.
    scale : Fraction
        Discrete Laplace scale.
    variance : float
        Noise variance per cell before consistency.
    """

    _values_field = "values"

    values: npt.NDArray[np.float64]
    noisy: npt.NDArray[np.int64]
    secure: bool
    method: str
    rank: int | None
    plan: Any = field(repr=False, compare=False)

    @property
    def sensitivity(self) -> Fraction:
        return Fraction(self.plan.parts[0].sensitivity)

    @property
    def sensitivity_rule(self) -> str:
        return self.plan.parts[0].how

    @property
    def sensitivity_tight(self) -> bool:
        return self.plan.parts[0].sensitivity_exact

    @property
    def scale(self) -> Fraction:
        return self.plan.parts[0].scale

    @property
    def variance(self) -> float:
        return self.plan.expected_error["per_cell_variance"]

    @property
    def expected_squared_error(self) -> float | None:
        """Expected total squared error: ``variance * (|T| - rank)`` (None when the rank is unknown)."""
        return _expected_squared_error(self.variance, self.values.size, self.method, self.rank)


def _expected_squared_error(variance: float, size: int, method: str, rank: int | None) -> float | None:
    if method == "none":
        return variance * size
    if rank is None or "non-negative" in method:
        return None
    return variance * (size - rank)


# ---------------------------------------------------------------------------
# the mechanism
# ---------------------------------------------------------------------------
def _check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def plan_constrained_histogram(
    policy: Policy,
    epsilon: Real,
    consistent: bool = True,
    *,
    nonnegative: bool = False,
    sensitivity: Real | None = None,
    method: str = "auto",
) -> Plan[ConstrainedRelease]:
    """Plan a complete histogram under a policy with public count constraints.

    Everything is fixed from public inputs (the policy with its constraints
    and their public answers, epsilon, the options): the sensitivity and how
    it was proven, the noise scale, the consistency method and the rank of
    the constraints.  Contradictory public answers, a bad option or a
    constraint set with no proven bound are refused here, before any data.

    Utility
        Discrete Laplace variance ``v`` of scale ``S / epsilon`` per cell
        before consistency; the projection never increases the L2 error and
        leaves an expected total squared error of ``v (|T| - rank A)``
        (``expected_error["total_squared_error"]``; None with
        ``nonnegative`` or an unknown rank).

    Parameters
    ----------
    policy : Policy
    epsilon : float or Fraction, > 0
    consistent, nonnegative, sensitivity, method
        As for :func:`constrained_histogram`.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes the exact int64 histogram (|T|
        cells, flat or in the domain's shape) and returns a
        :class:`ConstrainedRelease` of the same shape.

    Raises
    ------
    NoProvenSensitivityError
        No proven bound and no ``sensitivity``.
    ValueError, TypeError
        Bad options, missing or contradictory public answers, an asserted
        sensitivity below the proven bound.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for ``P = (T, G, I_Q)`` (000 Def 4.2):
    the Laplace mechanism (000 Thm 5.1) with the proven bound of
    :meth:`~blowfish_privacy.Policy.sensitivity_report` on ``S(h, P)``
    (000 Sec 8, Thm 8.2 and 8.4, only where the errata allow them, see
    Corrections to the papers (docs/explanation/corrections.md);
    ``neighbours="moves"``: 004 Lemma 4.2).  An
    asserted ``sensitivity`` gives the guarantee only if it is at least
    ``S(h, P)``; values below a proven bound are refused.  Consistency
    uses the noisy counts and the public answers only: post-processing.

    Sensitivity
    -----------
    ``policy.sensitivity_report("histogram")``: the bound of the complete
    secret graph K (S(h, (T, G, Q)) <= S(h, (T, K, Q))), from Thm 8.2 with an
    exact search of the policy graph's longest cycle and path when Q is sparse
    w.r.t. K, else the corrected Cor 8.3 bound 2 (|Q| + 1); one marginal:
    2 size(C) (Thm 8.4); ``neighbours="moves"``: 004 Lemma 4.2.  Constraint
    sets with no proven bound are refused unless ``sensitivity`` is asserted
    (never below a proven bound).

    Runtime
    -------
    Planning: the sensitivity (policy-graph search up to ~24 queries)
    and one projection of a zero histogram to check the public answers.
    Measurement: O(|T|) noise; O(|T|) consistency for one or two
    cuboids, O(|T| |Q|) per conjugate-gradient iteration otherwise.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 8, Def 8.2-8.4, Thm 8.2, Thm 8.4 (with the errata in
        Corrections to the papers (docs/explanation/corrections.md)).
    .. [2] *Background Knowledge in Differential Privacy: Exact Cuboids in a Noisy Data Cube.* Unpublished draft
        (paper 004), Sec 4 (Lemma 4.2) and Sec 6.1 (eqs. 6-7, 10-12).
    """
    require_policy(policy)
    consistent = _check_bool(consistent, "consistent")
    nonnegative = _check_bool(nonnegative, "nonnegative")
    if method not in ("auto", "cuboids", "cg"):
        raise ValueError(f"method must be 'auto', 'cuboids' or 'cg', got {method!r}")
    domain = policy.domain
    # before the constraints label the domain (O(|T|)): the measurement needs at least 6 words per cell
    check_memory(int64_bytes(6 * domain.size), size=domain.size, parameter="policy", mechanism="constrained_histogram")
    try:
        rep = policy.sensitivity_report("histogram")
    except NoProvenSensitivityError:
        if sensitivity is None:
            raise
        rep = None
    if sensitivity is not None:
        sens = as_fraction(sensitivity, "sensitivity", allow_zero=True)
        if rep is not None and sens < rep.value:
            raise ValueError(
                f"sensitivity={sensitivity!r} is below the proven bound {rep.value} ({rep.rule}); calibrating "
                f"below a proven bound is refused"
            )
        rule, tight = "asserted by the caller (not checked by the library)", False
    else:
        sens, rule, tight = Fraction(rep.value), rep.rule, rep.tight
    constraints: tuple[Constraint, ...] = policy.constraints
    cal = calibrate(sens, epsilon)
    size = domain.size
    project = consistent and bool(constraints)
    answers, rank, method_name = None, None, "none"
    if consistent:
        answers = public_answers(domain, constraints)
    if project:
        # public inputs only: contradictory answers and a bad method fail here
        _, method_name, rank = consistent_estimate(np.zeros(size), domain, constraints, method=method)
        if nonnegative:
            method_name += " + non-negative"
    var = discrete_laplace_variance(cal.scale)
    nq = sum(int(c.num_queries(domain)) for c in constraints)
    part = NoisePart("cells", cal.sensitivity, tight, rule, cal.epsilon_exact, cal.scale, size)

    def check(hist):
        arr = check_domain_counts(hist, tuple(domain.shape))
        if consistent:
            flat = arr.reshape(-1)
            for k, (c, b) in enumerate(zip(constraints, answers)):
                if not np.array_equal(c.answers_of(domain, flat), b):
                    raise ValueError(
                        f"the data does not satisfy constraints[{k}] ({c!r}): the policy's public answers must be "
                        "the true answers on hist"
                    )
        return arr

    if sensitivity is not None:
        guarantee = (f"(epsilon, P)-Blowfish privacy for P = {policy!r} only if the asserted sensitivity {sens} is "
                     "at least S(h, P) (Theorem 5.1 of the Blowfish paper)")
    else:
        guarantee = (f"(epsilon, P)-Blowfish privacy for P = {policy!r} "
                     f"(Theorem 5.1 of the Blowfish paper; S(h, P) <= {sens}: {rule})")
    return Plan(
        mechanism="constrained_histogram", policy=policy, guarantee=guarantee, citation=_CITATION,
        epsilon_requested=cal.epsilon_requested, parts=(part,),
        aggregate=f"int64 histogram of {size} cells (flat or of shape {tuple(domain.shape)})",
        aggregate_shape=tuple(domain.shape),
        expected_error={"per_cell_variance": var,
                        "total_squared_error": _expected_squared_error(var, size, method_name, rank)},
        memory_bytes=int64_bytes(6 * size + 4 * nq),
        runtime=("O(|T|) noise; consistency " + {"none": "none", "one cuboid": "O(|T|)", "two cuboids": "O(|T|)"}
                 .get(method_name.replace(" + non-negative", ""), "O(|T| |Q|) per conjugate-gradient iteration")
                 + (", up to 2000 Dykstra rounds" if nonnegative and project else "")),
        options={"consistent": consistent, "nonnegative": nonnegative, "sensitivity": sensitivity,
                 "method": method, "consistency": method_name, "rank": rank},
        check=check, run=_run,
    )


def _run(plan: Plan, arr: np.ndarray, gen: Generator) -> ConstrainedRelease:
    part, opts, domain = plan.parts[0], plan.options, plan.policy.domain
    flat = arr.reshape(-1)
    # the whole noise vector is drawn before the values are read (noise.py)
    noisy = flat.copy() if part.scale == 0 else gen.add_discrete_laplace(flat, part.scale)
    constraints = plan.policy.constraints
    rank = None
    if opts["consistent"] and constraints:
        values, method_used, rank = consistent_estimate(
            noisy, domain, constraints, method=opts["method"], nonnegative=opts["nonnegative"]
        )
    else:
        values, method_used = noisy.astype(np.float64), "none"
    return ConstrainedRelease(values=values.reshape(arr.shape), noisy=noisy.reshape(arr.shape), secure=gen.is_secure,
                              method=method_used, rank=rank, plan=plan)


@guarantee_of(plan_constrained_histogram)
def constrained_histogram(
    hist: npt.ArrayLike,
    policy: Policy,
    epsilon: Real,
    generator: Generator | None = None,
    consistent: bool = True,
    *,
    nonnegative: bool = False,
    sensitivity: Real | None = None,
    method: str = "auto",
) -> ConstrainedRelease:
    """Release a complete histogram under a policy with public count constraints.

    ``plan_constrained_histogram(policy, epsilon, ...).measure(hist,
    generator)``; :func:`plan_constrained_histogram` gives the utility.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,) or ``policy.domain.shape``
        The exact histogram; it must satisfy the public answers.
    policy : Policy
        With its constraints (each carrying its public answers when
        ``consistent``).
    consistent : bool, default True
        Project onto the histograms with the public answers (post-processing).
    nonnegative : bool, default False
        Also require non-negative estimates.
    sensitivity : int or Fraction, optional
        A sensitivity asserted by the caller, for constraints with no proven
        bound (recorded as such in the result).  Refused when below the
        policy's proven bound.
    method : {"auto", "cuboids", "cg"}
        Consistency method, see :func:`consistent_estimate`.

    Returns
    -------
    ConstrainedRelease

    Raises
    ------
    NoProvenSensitivityError
        When the policy has no proven bound and no ``sensitivity`` is given.
    ValueError
        Bad shapes, missing or contradictory public answers, answers the
        data does not satisfy, or an asserted sensitivity below the proven
        bound.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, Generator, Policy, Ordinal, mechanisms
    >>> from blowfish_privacy.policy.constraints import Marginal
    >>> from blowfish_privacy.policy.secrets import FullDomain
    >>> d = Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 3)])
    >>> h = np.arange(12).reshape(3, 4)
    >>> p = Policy(d, FullDomain(), [Marginal(["a"], answers=h.sum(axis=1))])
    >>> r = mechanisms.constrained_histogram(h, p, 1.0, Generator(seed=3))
    >>> int(r.sensitivity), np.allclose(r.values.reshape(3, 4).sum(axis=1), h.sum(axis=1))
    (6, True)
    """
    plan = plan_constrained_histogram(
        policy, epsilon, consistent, nonnegative=nonnegative, sensitivity=sensitivity, method=method
    )
    return plan.measure(hist, generator)
