"""A release is its values and its plan: every privacy field is the plan's, stated once.

Every kind of the neighbour harness (every registered kind, every mechanism
option it names) is planned under every policy: the model the spec's checks
expect before planning (:meth:`Kind.privacy_model`) is the model the plan factory
set; a seeded run's document states the plan's description (model,
sensitivity, noise parts, guarantee, citation); the result types keep no copy
of a privacy field.
"""

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Policy, mechanisms, secrets
from blowfish_privacy.mechanisms.plan import MODELS, Release
from blowfish_privacy.release import SpecError, parse_spec, release
from blowfish_privacy.release.kinds import KINDS
from blowfish_privacy.release.runner import plan_spec

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("_neighbour_cases_plan", HERE / "test_neighbours.py")
NB = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(NB)

CASES = [(k, p) for k in NB.KINDS for p in (NB.POLICIES if NB.KINDS[k][2] else ["full"])]
#: The privacy fields a result type must read from its plan, never hold.
PRIVACY_FIELDS = {"mechanism", "epsilon", "epsilon_exact", "epsilon_parts", "scales", "sensitivity", "sensitivities",
                  "guarantee", "model", "scale", "variance", "expected_error"}


def _plans(kind, policy, tmp_path):
    (tmp_path / "data.csv").write_text("age,sex,hours\n" + "".join(f"{a},{s},{h}\n" for a, s, h in NB._rows(False, False)))
    try:
        spec = parse_spec(NB._spec(kind, policy, "plain"), str(tmp_path / "s.toml"), base_dir=tmp_path)
        return spec, plan_spec(spec)
    except SpecError:  # the policy does not fit the kind's attributes
        return None, None


@pytest.mark.parametrize("kind,policy", CASES)
def test_the_model_known_before_planning_is_the_plans(kind, policy, tmp_path):
    spec, splan = _plans(kind, policy, tmp_path)
    if splan is None:
        pytest.skip("refused at plan time")
    for rel in spec.releases:
        plan = splan.plans[rel.name]
        assert plan.model in MODELS
        assert plan.model == KINDS[rel.kind].privacy_model(rel.options), (rel.kind, rel.options)
        described = plan.describe()
        assert described["model"] == plan.model and described["sensitivity"] == plan.sensitivity_fields()


@pytest.mark.parametrize("kind", sorted(NB.KINDS))
def test_a_documents_privacy_fields_are_the_plans_description(kind, tmp_path):
    rows = NB._rows(False, False)
    table = {"age": np.array([r[0] for r in rows]), "sex": np.array([r[1] for r in rows]),
             "hours": np.array([r[2] for r in rows])}
    policy = "line" if NB.KINDS[kind][2] else "full"
    text = NB._spec(kind, policy, "plain").replace('path = "data.csv"\n', "")
    text = text.replace("[dataset]", "[dataset]\nallow_disclosures = true", 1) + "\n[run]\nseed = 7\n"
    spec, splan = _plans(kind, policy, tmp_path)
    if splan is None:
        pytest.skip("refused at plan time")
    res = release(text, table, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "o", plots=False,
                  allow_seeded=True)
    (doc,) = res.releases
    described = splan.plans[doc["name"]].describe()
    assert doc["privacy_model"] == described["model"]
    assert doc["citation"] == described["citation"]
    assert doc["guarantee_text"].endswith(f"(unseeded it would be: {described['guarantee']})")
    assert doc["noise_parts"] == described["parts"]
    if not (kind.startswith("kmeans") and doc.get("method", "sulq") != "sulq"):
        # a grid k-means plan fixes its cell (and sensitivity) from the public row count at the measurement
        assert doc["sensitivity"] == described["sensitivity"]


def test_the_registry_is_built_once_with_the_kinds_own_runs():
    from blowfish_privacy.release import _kinds_counts, _kinds_kmeans, _kinds_pufferfish

    assert KINDS["histogram"].run is _kinds_counts.hist_run
    assert KINDS["cdf"].run is _kinds_counts.cdf_run
    assert KINDS["kmeans"].run is _kinds_kmeans.km_run
    assert KINDS["pufferfish_sum"].run is _kinds_pufferfish.puff_run


def _results():
    pol = Policy(Domain.ordinal("x", 0, 15), secrets.DistanceThreshold(3))
    hist = np.arange(16, dtype=np.int64) % 5
    g = Generator(seed=3)
    yield mechanisms.plan_histogram(pol, 1.0).measure(hist, g)
    yield mechanisms.ordered_hierarchical(hist, pol, 1.0, g, fanout=4)
    yield mechanisms.ordered(hist, pol, 1.0, g)
    yield mechanisms.hierarchical(hist, 1.0, g)
    yield mechanisms.dawa(hist, 1.0, g)
    yield mechanisms.privelet(hist, 1.0, g)
    yield mechanisms.pufferfish_sum(np.array([1.5, 2.0, 7.25]), epsilon=1.0, generator=g, bounds=(0, 10),
                                    absolute_error=2.0)
    pts = np.array([[0, 1], [2, 3], [5, 5], [6, 7]], dtype=np.int64)
    pol2 = Policy(Domain([Domain.ordinal("a", 0, 7).attributes[0], Domain.ordinal("b", 0, 7).attributes[0]]),
                  secrets.DistanceThreshold(2))
    yield mechanisms.kmeans(pts, pol2, 1.0, g, k=2, iterations=2)


@pytest.mark.parametrize("r", list(_results()), ids=lambda r: type(r).__name__ + ":" + r.plan.mechanism)
def test_a_result_holds_values_and_its_plan_and_no_copy(r):
    assert isinstance(r, Release)
    names = {f.name for f in dataclasses.fields(r)}
    assert "plan" in names and not names & PRIVACY_FIELDS, names & PRIVACY_FIELDS
    plan = r.plan
    assert r.mechanism == plan.mechanism and r.model == plan.model
    assert r.epsilon == float(r.epsilon_exact) and r.epsilon_exact <= plan.epsilon_requested
    s = r.summary()
    assert s["model"] == plan.model and s["guarantee"] == plan.guarantee
    if not isinstance(r, mechanisms.KMeansResult):  # SuLQ's spends are per round, from the public centroids
        assert r.epsilon_exact == plan.epsilon_exact
        assert r.epsilon_parts == {p.name: p.epsilon for p in plan.parts}
        assert r.scales == {p.name: p.scale for p in plan.parts}
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.plan = None


def test_dp_baselines_state_dp_and_pufferfish_states_pufferfish():
    assert mechanisms.plan_dawa(16, 1.0).model == "DP"
    assert mechanisms.plan_privelet(16, 1.0).model == "DP"
    assert mechanisms.plan_hierarchical(16, 1.0).model == "DP"
    assert mechanisms.plan_identity(16, 1.0).model == "DP"
    assert mechanisms.plan_pufferfish_sum(1.0, bounds=(0, 10), absolute_error=2.0).model == "Pufferfish"
    pol = Policy(Domain.ordinal("x", 0, 15), secrets.Line())
    assert mechanisms.plan_ordered(pol, 1.0).model == "Blowfish"
    assert mechanisms.plan_laplace(3, sensitivity=2, epsilon=1.0, model="DP").model == "DP"
    with pytest.raises(ValueError, match="model must be one of"):
        mechanisms.plan_laplace(3, sensitivity=2, epsilon=1.0, model="LDP")


def test_the_dp_laplace_histogram_states_dp(tmp_path):
    text = NB._spec("histogram", "attribute", "plain").replace('kind = "histogram"', 'kind = "histogram"\nmechanism = "dp_laplace"')
    assert 'mechanism = "dp_laplace"' in text
    (tmp_path / "data.csv").write_text("age,sex,hours\n0,f,1\n")
    spec = parse_spec(text, str(tmp_path / "s.toml"), base_dir=tmp_path)
    (rel,) = spec.releases
    plan = plan_spec(spec).plans[rel.name]
    assert plan.model == KINDS[rel.kind].privacy_model(rel.options) == "DP"
