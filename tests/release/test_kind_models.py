"""Every release kind declares the privacy model its plan states, and the declaration is held to the plan.

The spec's checks (the dataset's protection, parallel groups, whether a
release needs a policy) run before any plan exists and read the model a
kind declares (:meth:`Kind.privacy_model`).  Here every registered kind is
planned with every value of its model-choosing option (:class:`ModelBy`),
or with the neighbour harness's cases when its model is a constant, under
every harness policy that fits: the declared model must be the plan's.
"""

import dataclasses
import importlib.util
from pathlib import Path

import pytest
from release_specs import people_dataset, release, spec_toml

from blowfish_privacy import registry
from blowfish_privacy.mechanisms.plan import MODELS
from blowfish_privacy.release import SpecError, parse_spec
from blowfish_privacy.release.kinds import KINDS, Kind, ModelBy
from blowfish_privacy.release.runner import plan_spec

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("_neighbour_cases_models", HERE / "test_neighbours.py")
NB = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(NB)


def _choices():
    """(kind, the options that choose its model): one per declared value, or ``{}`` for a constant model."""
    for name, kind in registry.kinds().items():
        if isinstance(kind.model, ModelBy):
            for value in kind.model.models:
                yield name, {kind.model.option: value}
        else:
            yield name, {}


def _cases(kind: str, choice: dict) -> list:
    """The harness's (attributes, options, takes a policy) for ``kind`` agreeing with ``choice``, else its first
    case with ``choice`` set."""
    cases = list(NB.KIND_CASES.get(kind, {kind: NB.DEFAULT_CASE}).values())
    agree = [c for c in cases if all(c[1].get(k) == v for k, v in choice.items())]
    return agree or [(cases[0][0], {**cases[0][1], **choice}, cases[0][2])]


def _text(kind: str, attrs, options: dict, policy: str | None) -> str:
    policies = {"p": NB.POLICIES[policy]} if policy else {}
    dataset = people_dataset("data.csv", 1)
    if KINDS[kind].privacy_model(options) == "Pufferfish":
        # a Pufferfish release protects the pairs within its error: the dataset is protected by such a policy
        policies = {"p": {**NB.NEAR, "theta": 2, "attributes": list(attrs)}}
        dataset = {**dataset, "protect": "p"}
    rel = release("r", kind, attrs, NB.EPS, "p" if policy else None, **options)
    return spec_toml(dataset, {"age": NB.TEN, "sex": NB.SEX, "hours": NB.TEN}, policies, [rel])


def _plans(kind: str, choice: dict, tmp_path):
    """(options, plan) for every harness case and fitting policy of ``kind`` with ``choice``."""
    (tmp_path / "data.csv").write_text("age,sex,hours\n" + "".join(f"{a},{s},{h}\n" for a, s, h in NB._rows(False, False)))
    for attrs, options, uses_policy in _cases(kind, choice):
        for policy in (NB.POLICIES if uses_policy else [None]):
            try:
                spec = parse_spec(_text(kind, attrs, options, policy), str(tmp_path / "s.toml"), base_dir=tmp_path)
                plans = plan_spec(spec).plans
            except SpecError:  # the policy does not fit the kind's attributes
                continue
            (rel,) = spec.releases
            yield rel.options, plans[rel.name]


@pytest.mark.parametrize("kind,choice", list(_choices()), ids=lambda v: str(v) if not isinstance(v, dict) else
                         ",".join(f"{k}={x}" for k, x in v.items()) or "-")
def test_the_declared_model_is_the_model_of_the_plan_the_kind_builds(kind, choice, tmp_path):
    planned = 0
    for options, plan in _plans(kind, choice, tmp_path):
        declared = KINDS[kind].privacy_model(options)
        assert declared in MODELS and plan.model == declared, (kind, options, plan.mechanism, plan.model)
        planned += 1
    assert planned, f"kind {kind!r} with {choice} was planned under no harness policy: give it a case in " \
                    "test_neighbours.KIND_CASES"


def test_the_dp_baselines_and_pufferfish_are_declared_as_such():
    assert KINDS["histogram"].privacy_model({"mechanism": "dp_laplace"}) == "DP"
    assert KINDS["histogram"].privacy_model({"mechanism": "laplace"}) == "Blowfish"
    assert KINDS["cdf"].privacy_model({"mechanism": "identity"}) == "DP"
    assert KINDS["cdf"].privacy_model({"mechanism": "hierarchical"}) == "DP"
    assert KINDS["cdf"].privacy_model({"mechanism": "ordered"}) == "Blowfish"
    assert KINDS["dawa"].privacy_model({}) == KINDS["privelet"].privacy_model({}) == "DP"
    assert KINDS["pufferfish_sum"].privacy_model({"absolute_error": 2.0}) == "Pufferfish"
    # before validation the choosing option may be missing or unknown: no model yet
    assert KINDS["cdf"].privacy_model({}) is None
    assert KINDS["cdf"].privacy_model({"mechanism": ["identity"]}) is None


def test_a_model_outside_the_three_is_refused_where_the_kind_is_declared():
    with pytest.raises(ValueError, match="must be one of"):
        dataclasses.replace(KINDS["sum"], model="LDP")
    with pytest.raises(ValueError, match="option 'mechanism'"):
        ModelBy("mechanism", {"laplace": "Blowfish", "dp_laplace": "dp"})
    with pytest.raises(TypeError):
        Kind("k", "d", {}, "histogram", KINDS["sum"].validate, KINDS["sum"].make_plan, KINDS["sum"].run)


def test_a_plan_that_states_another_model_than_declared_is_refused(monkeypatch, tmp_path):
    wrong = dataclasses.replace(KINDS["histogram"], model=ModelBy("mechanism", {"laplace": "DP", "dp_laplace": "DP"}))
    monkeypatch.setitem(KINDS, "histogram", wrong)
    with pytest.raises(RuntimeError, match="declares model 'DP'.*states 'Blowfish'"):
        list(_plans("histogram", {"mechanism": "laplace"}, tmp_path))
