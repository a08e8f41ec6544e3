"""Plan, then measure: the protocol every mechanism follows.

A release has two phases, and only the second one touches data:

1. ``plan_<mechanism>(policy, epsilon, **options) -> Plan`` works from
   public inputs alone (the domain and secret graph of the policy, the
   options, epsilon).  It validates everything once, fixes the epsilon
   split and every calibration (sensitivity, how it was proven, the noise
   scale), and states the guarantee, the citation, the expected error and
   the memory the measurement will need.  It reads no data, so whatever it
   refuses leaks nothing, and it raises before any budget is spent.  Its
   own cost is bounded whatever the domain: closed forms or capped
   searches, nothing listed per domain value (trees, edge lists, workloads
   are built by the measurement), and a measurement that would need more
   than the memory available or :data:`MEMORY_CAP` is refused
   (:func:`check_memory`, a ParameterError naming the domain size).
2. ``plan.measure(aggregate, generator) -> Release`` adds the noise the
   plan fixed to the exact aggregate and post-processes.  It checks only
   what is public about the aggregate (its shape and dtype) and does not
   fail or branch visibly on the values.

The functional API (``mechanisms.ordered(hist, policy, epsilon, ...)``) is
``plan_ordered(policy, epsilon, ...).measure(hist, generator)``.  The
release product, the auditor and ``explain`` work with plans, so a release
spec can be checked, priced and printed (``blowfish release --dry-run``)
without reading a row.

Every result type subclasses :class:`Release`: its values and its plan.
Every privacy field of a release is read from the plan, and
:meth:`Plan.describe` is the one description from which the release
product's documents and console text are made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .._validation import MEMORY_CAP, available_memory, check_memory, memory_limit
from ..noise import Generator, as_generator

__all__ = [
    "MEMORY_CAP",
    "MODELS",
    "NoisePart",
    "Plan",
    "Release",
    "available_memory",
    "check_memory",
    "int64_bytes",
    "memory_limit",
]

#: The privacy models a plan's guarantee can be stated in.
MODELS = ("Blowfish", "DP", "Pufferfish")

#: Bytes of one int64/float64 word.
_WORD = 8


#: The release type a plan's measurement returns (``Plan[CumulativeRelease]`` and so on).
R_co = TypeVar("R_co", bound="Release", covariant=True)


def int64_bytes(words: int) -> int:
    """Bytes of ``words`` 8-byte words (a memory estimate helper)."""
    return int(words) * _WORD


@dataclass(frozen=True)
class NoisePart:
    """One noisy measurement a plan makes.

    Attributes
    ----------
    name : str
        What is measured, e.g. ``"S"`` (the S nodes of OH), ``"cells"``.
    sensitivity : int, Fraction or None
        The L1 sensitivity the noise is calibrated to under the plan's
        policy; None when it is fixed only during the measurement from
        public intermediate outputs (k-means rounds: see ``how``).
    sensitivity_exact : bool
        True when ``sensitivity`` is the exact maximum, False for a proven
        upper bound.
    how : str
        How the sensitivity was proven (theorem, scan, bound).
    epsilon : Fraction
        The exact epsilon this part spends (``sensitivity / scale``).
    scale : Fraction or None
        Discrete Laplace scale (0: released without noise, None: fixed
        per round during the measurement).
    count : int or None
        Number of noisy values drawn (None when data dependent in shape,
        e.g. DAWA's buckets: the count is then bounded by the domain size).
    """

    name: str
    sensitivity: int | Fraction | None
    sensitivity_exact: bool
    how: str
    epsilon: Fraction
    scale: Fraction | None
    count: int | None = None

    def describe(self) -> dict:
        return {
            "name": self.name,
            "sensitivity": _num(self.sensitivity),
            "sensitivity_exact": self.sensitivity_exact,
            "how": self.how,
            "epsilon": str(self.epsilon),
            "scale": None if self.scale is None else str(self.scale),
            "count": self.count,
        }


def _num(v):
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else str(v)
    return str(v)


@dataclass(frozen=True, kw_only=True)
class Plan(Generic[R_co]):
    """A mechanism's measurement, fixed from public inputs only.

    Build one with a ``plan_<mechanism>`` function; run it with
    :meth:`measure`.  Everything here is public: printing a plan reveals
    nothing about any data.

    Attributes
    ----------
    mechanism : str
    policy : Policy or None
        The policy of the guarantee (None for Pufferfish, whose secrets are
        its own discriminative pairs).
    guarantee : str
        The guarantee in words (which policy, which epsilon).
    citation : str
    epsilon_requested : Fraction
    parts : tuple of NoisePart
        Sequentially composed: the plan spends the sum of their epsilons.
    aggregate : str
        What :meth:`measure` takes, e.g. "int64 histogram of shape (|T|,)".
    aggregate_shape : tuple or None
        The exact shape :meth:`measure` accepts (None: any 1-D length, for
        aggregates that are lists of values such as Pufferfish's column).
    expected_error : dict
        Analytic expected errors where they exist (keys say what).
    memory_bytes : int
        Estimated peak memory of the measurement (aggregate included).
    runtime : str
        Asymptotic cost of the measurement.
    options : dict
        The validated options the measurement uses.
    model : str
        The privacy model of the guarantee, set by the plan factory:
        ``"Blowfish"`` (the policy's secret graph), ``"DP"`` (a
        differential-privacy baseline: plain bounded DP, whatever policy a
        caller names) or ``"Pufferfish"`` (its own discriminative pairs).
    release_sensitivity : dict or None
        The sensitivity a reader is told (``value``, ``exact``, ``how``)
        when it is not the first noisy part's (:meth:`sensitivity_fields`).

    Raises
    ------
    ParameterError
        When built with a ``memory_bytes`` above :func:`memory_limit`
        (:func:`check_memory`): a plan never promises a measurement the
        machine cannot hold.
    """

    mechanism: str
    policy: Any
    guarantee: str
    citation: str
    epsilon_requested: Fraction
    parts: tuple[NoisePart, ...]
    aggregate: str
    aggregate_shape: tuple[int, ...] | None
    expected_error: dict[str, Any] = field(default_factory=dict)
    memory_bytes: int = 0
    runtime: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    model: str = "Blowfish"
    release_sensitivity: dict[str, Any] | None = None
    check: Callable | None = field(default=None, repr=False, compare=False)
    run: Callable[..., R_co] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {list(MODELS)}, got {self.model!r}")
        shape = self.aggregate_shape
        if self.policy is not None and hasattr(getattr(self.policy, "domain", None), "size"):
            size, parameter = self.policy.domain.size, "policy"
        else:
            size, parameter = (math.prod(shape) if shape else 1), ("shape" if shape and len(shape) > 1 else "size")
        check_memory(self.memory_bytes, size=size, parameter=parameter, mechanism=self.mechanism)

    @property
    def epsilon_exact(self) -> Fraction:
        """The exact epsilon the measurement spends (never more than requested)."""
        return sum((p.epsilon for p in self.parts), Fraction(0))

    @property
    def epsilon(self) -> float:
        return float(self.epsilon_exact)

    def measure(self, aggregate: Any, generator: Generator | None = None) -> R_co:
        """Add the planned noise to ``aggregate`` and post-process.

        Parameters
        ----------
        aggregate : numpy.ndarray
            The exact aggregate described by :attr:`aggregate`.  Only its
            shape and dtype are checked (they are public); the values are
            not inspected for anything but the computation.
        generator : Generator, optional
            A new secure one when omitted.

        Returns
        -------
        Release
            The mechanism's result type, with ``plan`` set to this plan.
        """
        if self.run is None:
            raise TypeError("this plan has no measurement attached")
        agg = self.check(aggregate) if self.check is not None else aggregate
        gen = as_generator(generator)
        return self.run(self, agg, gen)

    def sensitivity_fields(self) -> dict[str, Any]:
        """The sensitivity a reader is told: ``value``, ``exact`` and ``how``.

        :attr:`release_sensitivity` when the factory set one, else the first
        noisy part's; a plan without noisy parts says no pair changes the values.
        """
        if self.release_sensitivity is not None:
            s = self.release_sensitivity
            return {"value": _whole(s["value"]), "exact": bool(s["exact"]), "how": s["how"]}
        if not self.parts:
            return {"value": 0, "exact": True, "how": "no secret pair changes the released values: no noise needed"}
        p = self.parts[0]
        return {"value": _whole(p.sensitivity), "exact": p.sensitivity_exact, "how": p.how}

    def describe(self) -> dict[str, Any]:
        """A JSON-able description: what ``--dry-run`` prints and what a release document states.

        The privacy fields of every release document (model, sensitivity,
        noise parts, guarantee, citation) are taken from here.
        """
        return {
            "mechanism": self.mechanism,
            "model": self.model,
            "sensitivity": self.sensitivity_fields(),
            "guarantee": self.guarantee,
            "citation": self.citation,
            "epsilon_requested": str(self.epsilon_requested),
            "epsilon_spent": str(self.epsilon_exact),
            "parts": [p.describe() for p in self.parts],
            "aggregate": self.aggregate,
            "expected_error": {k: _jsonable(v) for k, v in self.expected_error.items()},
            "memory_bytes": int(self.memory_bytes),
            "runtime": self.runtime,
            "options": {k: _jsonable(v) for k, v in self.options.items()},
        }


def _whole(v):
    """A sensitivity for JSON: None or an int as is, a whole number as an int, anything else as text."""
    if v is None or isinstance(v, int):
        return v
    return int(v) if getattr(v, "denominator", 2) == 1 else str(v)


def _jsonable(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else str(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return v.tolist()
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    return str(v)


class Release:
    """Base type of every mechanism's result: the released values, the generator's kind, and the plan.

    A release is its values plus the :class:`Plan` that made them
    (``plan``): every privacy field is read from the plan, never copied
    (``mechanism``, ``model``, ``epsilon_exact`` and ``epsilon``,
    ``epsilon_parts``, ``scales``, ``sensitivities``, ``guarantee``,
    ``expected_error``).  Subclasses are frozen dataclasses holding the
    released values, ``secure`` (False for a seeded generator) and ``plan``;
    a mechanism whose spend depends on its public intermediate outputs
    (k-means rounds) overrides the fields it derives from them.
    :meth:`summary` gives the same fields for every release.
    """

    __slots__ = ()

    #: Name of the field holding the main released vector.
    _values_field = "values"

    @property
    def released_values(self) -> npt.NDArray[Any]:
        """The main released vector (counts, cumulative counts, centroids...)."""
        return np.asarray(getattr(self, self._values_field))

    @property
    def seeded(self) -> bool:
        """True when a seeded generator made it: NOT private (tests only)."""
        return not self.secure

    @property
    def mechanism(self) -> str:
        return self.plan.mechanism

    @property
    def model(self) -> str:
        """The plan's privacy model: ``"Blowfish"``, ``"DP"`` or ``"Pufferfish"``."""
        return self.plan.model

    @property
    def epsilon_exact(self) -> Fraction:
        """Epsilon actually spent, exactly (never more than requested)."""
        return self.plan.epsilon_exact

    @property
    def epsilon(self) -> float:
        """Epsilon actually spent (never more than requested)."""
        return float(self.epsilon_exact)

    @property
    def epsilon_parts(self) -> dict[str, Any]:
        """The exact spend of every noisy part of the plan."""
        return {p.name: p.epsilon for p in self.plan.parts}

    @property
    def scales(self) -> dict[str, Any]:
        """The discrete Laplace scale of every noisy part (0: no noise; None: fixed per round)."""
        return {p.name: p.scale for p in self.plan.parts}

    @property
    def sensitivities(self) -> dict[str, Any]:
        """The sensitivity every noisy part is calibrated to."""
        return {p.name: p.sensitivity for p in self.plan.parts}

    @property
    def guarantee(self) -> str:
        """The guarantee in words."""
        return self.plan.guarantee

    @property
    def expected_error(self) -> dict[str, Any]:
        """The plan's analytic expected errors (keys say what)."""
        return dict(self.plan.expected_error)

    def summary(self) -> dict[str, Any]:
        """The fields every release has, JSON-able.

        ``mechanism``, ``model``, ``epsilon_spent`` (float) and
        ``epsilon_spent_exact`` (str), ``epsilon_parts``, ``scales``,
        ``sensitivity`` (per noisy part), ``guarantee``, ``secure``,
        ``seeded`` ("seeded: NOT private" in words when True) and
        ``expected_error``.
        """
        return {
            "mechanism": self.mechanism,
            "model": self.model,
            "epsilon_spent": float(self.epsilon_exact),
            "epsilon_spent_exact": str(self.epsilon_exact),
            "epsilon_parts": _jsonable(self.epsilon_parts),
            "scales": _jsonable(self.scales),
            "sensitivity": _jsonable(self.sensitivities),
            "guarantee": self.plan.guarantee,
            "secure": bool(self.secure),
            "seeded": self.seeded,
            "privacy": "seeded: NOT private" if self.seeded else "private",
            "expected_error": _jsonable(self.expected_error),
        }
