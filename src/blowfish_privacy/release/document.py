"""A release's JSON document: the plan's description, the kind's output layout, the run's facts.

Every privacy field of a document (the model, the sensitivity and how it
was proven, the noise parts with their scales and epsilons, the guarantee,
the citation) is read from one :meth:`~blowfish_privacy.mechanisms.Plan.describe`,
the same description ``blowfish release --dry-run`` prints; the kind adds
its released values and their layout (:class:`~._kinds_base.Output`), the
runner the run's facts (seed, engine, time).  :func:`exact_reason` says in
words why a plan's release would be exact, for the refusal of an exact
release not marked public and for the document of one that is.
"""

from __future__ import annotations

import math

import numpy as np

from .. import __version__
from .spec import ZERO_NOISE_LIMIT

__all__ = ["exact_reason", "jsonable", "policy_text", "release_document", "small_noise_probability"]


def jsonable(v):
    """A value a kind laid out, as JSON takes it: numpy scalars as Python numbers, non-finite floats as null."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def small_noise_probability(scale, step: float = 1.0) -> float:
    """P(|Z * step| < 1/2) for discrete Laplace noise Z of ``scale``: the noise is lost in the rounding of an
    integer-valued statistic whose noise comes in units of ``step`` (1 for counts and sums)."""
    if scale is None:
        return 0.0
    t = float(scale)
    if t <= 0:
        return 1.0
    m = max(0, math.ceil(0.5 / step) - 1)  # the largest |Z| with |Z| * step < 1/2
    return 1.0 - 2.0 * math.exp(-(m + 1) / t) / (1.0 + math.exp(-1.0 / t))


def exact_reason(plan) -> str:
    """Why a plan's release would be exact (empty when every noisy part is noisy enough).

    Exact: a policy whose secret graph has no edge (it protects nothing, so
    every part is noiseless whatever the measurement decides), a plan with no
    noisy part, a part of sensitivity 0, or noise below half a unit.

    The noise of a Pufferfish sum with an absolute error comes in grid steps
    of its granularity: it is judged in units of the (integer) values.
    """
    pol = plan.policy
    if pol is not None and getattr(pol, "neighbours", "blowfish") == "blowfish" and not pol.secrets.has_edge(pol.domain):
        # decided from the policy alone: parts whose sensitivity is fixed during the measurement (k-means) or a
        # plan with no noisy part at all (a CDF at distance 0) would otherwise pass as private
        return "the policy protects no pair of values (its secret graph has no edge on this domain)"
    if not plan.parts:
        return "the plan adds no noise (no part of the release depends on a protected pair)"
    step = 1.0
    if plan.mechanism == "pufferfish_sum" and plan.options.get("absolute_error") is not None:
        step = float(plan.options["granularity"])
    for part in plan.parts:
        if part.sensitivity is not None and part.sensitivity == 0:
            return f"the sensitivity of {part.name!r} is 0 under its policy (the policy protects no pair it changes)"
        p0 = small_noise_probability(part.scale, step)
        if p0 > ZERO_NOISE_LIMIT:
            unit = "" if step == 1.0 else f" in steps of {step:.3g}"
            return (f"the noise on {part.name!r} (discrete Laplace scale {float(part.scale):.3g}{unit}) is below "
                    f"half a unit of the values with probability {p0:.6g} > {ZERO_NOISE_LIMIT}")
    return ""


def policy_text(rel, plan) -> str:
    """The policy a release's spend is recorded under, in words, by the model of its plan."""
    if plan.model == "DP":
        return (f"differential privacy baseline ({rel.options.get('mechanism', plan.mechanism)}) on "
                f"{list(rel.attributes)}")
    if plan.model == "Pufferfish":
        return f"Pufferfish ({rel.kind}) on {list(rel.attributes)}"
    return f"{rel.policy_name}: {rel.policy.secrets!r} on {list(rel.attributes)}"


def _model_fields(rel, described: dict) -> dict:
    model = described["model"]
    out = {"privacy_model": model}
    if model == "DP" and rel.policy_name:
        out["privacy_model_note"] = (
            f"a differential-privacy baseline: its guarantee is plain (bounded) DP on {list(rel.attributes)}; "
            f"the policy {rel.policy_name!r} named in the spec does not change its calibration")
    return out


def release_document(spec, rel, plan, output, engine_name: str, seeded: bool, now: str, run_id: str) -> dict:
    """The JSON document of one measured release (its long vectors are added at export)."""
    described = plan.describe()
    guarantee = described["guarantee"]
    doc = {
        "name": rel.name,
        "kind": rel.kind,
        "dataset": spec.dataset_id,
        "attributes": list(rel.attributes),
        "policy": {"name": rel.policy_name or None, "secrets": repr(rel.policy.secrets),
                   **({"note": rel.policy_note} if rel.policy_note else {})},
        "options": rel.options,
        "where": dict(rel.where) or None,
        "parallel_group": rel.parallel,
        "epsilon_requested": float(rel.epsilon),
        "epsilon_requested_exact": str(rel.epsilon),
        "sensitivity": described["sensitivity"],
        "noise_parts": described["parts"],
        "guarantee_text": (f"NONE: a seeded test run, NOT private (unseeded it would be: {guarantee})"
                           if seeded else f"NONE: exact, not private (public = true; {exact_reason(plan)})"
                           if rel.public else guarantee),
        "dataset_policy": spec.protection.text,
        "dataset_guarantee": ("none (not private)" if seeded or rel.public else
                              f"({float(rel.epsilon):.6g}, dataset policy)-Blowfish private: the release's own "
                              f"policy protects every pair of the dataset's policy {spec.protection.text}, so its "
                              "epsilon composes with the dataset's other releases under that one policy"),
        "epsilon_charged": 0.0 if seeded or rel.public else float(rel.epsilon),
        "citation": described["citation"],
        "vectors_format": spec.vectors_format,
    }
    doc.update({k: jsonable(v) for k, v in {**_model_fields(rel, described), **output.fields}.items()})
    doc.update({
        "seeded": seeded,
        "privacy": ("seeded: NOT private (a test run; nothing spent)" if seeded else
                    "exact: not private (public = true; recorded in the ledger as a disclosure)" if rel.public
                    else "private"),
        "seed": spec.seed,
        "engine": engine_name,
        "library_version": __version__,
        "spec_sha256": spec.sha256,
        "run": run_id,
        "time": now,
    })
    return doc
