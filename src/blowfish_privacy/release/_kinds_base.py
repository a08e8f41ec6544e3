"""The release kinds' common ground: :class:`Kind`, :class:`Output`, the privacy model, shared fields.

What every kind of :mod:`.kinds` builds on: the :class:`Kind` record (its
``plan`` refuses a ``where`` selection crossed by a secret edge when the
kind treats the row count as public, judged under the model of the plan's
guarantee), the :class:`Output` of a run, the model a kind's plan will
state (:meth:`Kind.privacy_model`, for the spec's checks before planning), and
the value labels, vectors and RMSE fields the kinds share.  A kind is its
option schema (``options``, ``validate``), its declared privacy model
(``model``: a constant, or :class:`ModelBy` one option's value), its plan
factory (``make_plan``) and its output layout (``run``); every privacy field
of a release document comes from the plan
(:meth:`~blowfish_privacy.mechanisms.Plan.describe`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..policy.domain import Ordinal
from ..errors import OptionError, ParameterError
from ..mechanisms.plan import MODELS, Plan
from ..policy._policy import Policy
from ..policy.secrets import FullDomain
from .selection import crosses_boundary

__all__ = ["Kind", "ModelBy", "UNAVAILABLE_KINDS", "Output"]


#: Kinds of the design whose mechanisms are not part of this version.
UNAVAILABLE_KINDS = {"constrained_histogram"}


@dataclass
class Output:
    """What a release produced: JSON fields, vectors, and how to plot them."""

    fields: dict
    vectors: dict = field(default_factory=dict)  # name -> 1-D numpy array
    plot: Callable | None = None  # plot(ax) draws the release


@dataclass(frozen=True)
class ModelBy:
    """A kind's privacy model chosen by the value of one option, e.g. a mechanism that is a DP baseline.

    ``models`` maps every value the kind accepts for ``option`` to the model
    its plan states (``"Blowfish"``, ``"DP"`` or ``"Pufferfish"``).
    """

    option: str
    models: dict  # option value -> model

    def __post_init__(self):
        wrong = {v: m for v, m in self.models.items() if m not in MODELS}
        if not self.models or wrong:
            raise ValueError(f"models must map each value of option {self.option!r} to one of {list(MODELS)}, "
                             f"got {self.models!r}")

    def of(self, options: dict) -> str | None:
        """The model for ``options``; ``None`` while the option is missing or not a value declared here."""
        value = options.get(self.option)
        return self.models.get(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    options: dict  # option name -> what it is
    aggregate: str  # "histogram" or "column"
    validate: Callable  # (options, domain, policy) -> options
    make_plan: Callable  # (release, crossing) -> Plan, from public inputs; raises OptionError
    run: Callable  # (release, aggregate, generator, plan) -> Output
    uses_policy: bool = True
    needs_public_total: bool = True  # the mechanism treats the row count as public
    # the model the plan states: "Blowfish", "DP" (a baseline: plain bounded DP, whatever policy the
    # spec names), "Pufferfish", or a ModelBy of one option; declared, so the spec's checks know it unplanned
    model: str | ModelBy = field(kw_only=True)

    def __post_init__(self):
        if not isinstance(self.model, ModelBy) and self.model not in MODELS:
            raise ValueError(f"model of kind {self.name!r} must be one of {list(MODELS)} or a ModelBy, "
                             f"got {self.model!r}")

    def privacy_model(self, options: dict) -> str | None:
        """The model the plan for ``options`` will state (``Plan.model``), known before planning.

        The spec's checks, which run before any plan exists, ask this; every
        release reads its model from its plan, and :meth:`plan` refuses a
        plan that states another model.  ``None`` only for options not yet
        validated whose model-choosing option is missing or unknown.
        """
        return self.model.of(options) if isinstance(self.model, ModelBy) else self.model

    def plan(self, rel) -> Plan:
        """The release's plan; raises :class:`OptionError` before anything is read or spent."""
        crossing = crosses_boundary(rel.policy, rel.where) if rel.where else False
        try:
            plan = self.make_plan(rel, crossing)
        except OptionError:
            raise
        except ParameterError as exc:  # a mechanism's argument, named by the mechanism: its spec key
            raise OptionError(self.spec_key(exc.parameter), str(exc)) from None
        except (TypeError, OverflowError) as exc:
            raise OptionError("policy", str(exc)) from None
        # any other ValueError or NotImplementedError: the policy is not supported (the runner says so)
        declared = self.privacy_model(rel.options)
        if plan.model != declared:  # the spec's checks admitted the release under the declared model
            raise RuntimeError(f"kind {self.name!r} declares model {declared!r} for options {rel.options!r}, but "
                               f"its plan {plan.mechanism!r} states {plan.model!r}; fix the kind's model")
        if rel.where and self.needs_public_total:
            # the selection is judged under the policy of the plan's guarantee: a DP baseline's (and a
            # Pufferfish release's) is the complete graph, whatever policy the spec names
            dp = plan.model != "Blowfish"
            guarantee_policy = Policy(rel.domain, FullDomain()) if dp else rel.policy
            if crosses_boundary(guarantee_policy, rel.where) if dp else crossing:
                fix = ("a DP baseline's guarantee is plain DP, under which every selection is crossed: remove where"
                       if dp else f"use a policy with no secret edge across the selection (secrets = \"partition\" "
                       f"with by including {[k for k, _ in rel.where]}) or remove where")
                raise OptionError(
                    "where",
                    f"kind {self.name!r} treats the number of selected rows as public, but a secret edge of "
                    f"{guarantee_policy.secrets!r} joins selected and unselected values, so that number would be "
                    f"released exactly; {fix}",
                )
        return plan

    def spec_key(self, parameter: str) -> str:
        """The spec key of a mechanism parameter: epsilon, one of the kind's options, else the policy."""
        if parameter in _EPSILON_PARAMETERS:
            return "epsilon"
        return parameter if parameter in self.options else "policy"


#: Mechanism parameters that are the release's epsilon (the noise scale is sensitivity / epsilon).
_EPSILON_PARAMETERS = frozenset({"epsilon", "scale", "sensitivity / epsilon"})


def is_num(v: Any) -> bool:
    return isinstance(v, (numbers.Real,)) and not isinstance(v, bool) and math.isfinite(v)


def one_ordinal(domain, kind: str) -> Ordinal:
    if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
        raise OptionError(
            "attributes",
            f"release kind {kind!r} needs exactly one ordinal attribute, got {list(domain.names)} "
            f"({', '.join(a.kind for a in domain.attributes)})",
        )
    return domain.attributes[0]


def common_fields(r) -> dict:
    s = r.summary()
    return {"epsilon_spent": s["epsilon_spent"], "epsilon_spent_exact": s["epsilon_spent_exact"],
            "secure": s["secure"], "privacy": s["privacy"]}


def value_labels(attr) -> np.ndarray:
    """The value of every bin (an ordinal bin by its lower edge) or label."""
    if isinstance(attr, Ordinal):
        return attr.bin_values()
    return np.array([str(v) for v in attr.labels])


def bin_highs(attr) -> np.ndarray:
    """The inclusive upper edge of every bin of an ordinal attribute."""
    return np.minimum(attr.bin_values() + attr.bin_width - 1, attr.high)


def tick_labels(attr) -> list[str]:
    """Readable labels: a binned attribute's bins as ranges ("17-21"), else the values or labels."""
    if isinstance(attr, Ordinal) and attr.bin_width > 1:
        return [f"{lo}-{hi}" if hi > lo else f"{lo}" for lo, hi in zip(attr.bin_values(), bin_highs(attr))]
    return [str(v) for v in value_labels(attr)]


def value_vectors(attr) -> dict:
    """``value`` (lower edge or label) and, for a binned attribute, ``value_high`` (inclusive upper edge)."""
    out = {"value": value_labels(attr)}
    if isinstance(attr, Ordinal) and attr.bin_width > 1:
        out["value_high"] = bin_highs(attr)
    return out


def rmse_fields(variance, of: str) -> dict:
    """The expected error in the units of the answer: ``rmse`` and what it is the error of."""
    if variance is None or not isinstance(variance, (int, float)) or not math.isfinite(variance):
        return {"rmse": None, "rmse_of": of}
    return {"rmse": math.sqrt(max(float(variance), 0.0)), "rmse_of": of}


def num(v):
    v = v.item() if isinstance(v, np.generic) else v
    return int(v) if isinstance(v, float) and v.is_integer() else v
