"""Optional dependencies: the features that need scipy refuse in one line, naming the extra, when it is absent."""

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Ordinal, Policy, _optional, audit, secrets
from blowfish_privacy.cli import main
from blowfish_privacy.errors import MissingDependencyError
from blowfish_privacy.mechanisms import optimize_marginals, optimize_p_identity, plan_optimized
from blowfish_privacy.mechanisms.strategies import dp_lower_bound, linear_lower_bound
from blowfish_privacy.workloads import AllRanges, Marginals

NEEDS = "needs scipy, which is not installed: pip install 'blowfish-privacy[scipy]'"


@pytest.fixture
def no_scipy(monkeypatch):
    real = _optional.installed
    monkeypatch.setattr(_optional, "installed", lambda name: False if name == "scipy" else real(name))


def _policy2():
    return Policy(Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 2)]), secrets.FullDomain())


def _policy(n=8, theta=2):
    return Policy(Domain([Ordinal("x", 0, n - 1)]), secrets.DistanceThreshold(theta))


def test_every_entry_point_that_needs_scipy_refuses_before_any_work(no_scipy):
    pol = _policy()
    calls = [
        lambda: plan_optimized(AllRanges(8), pol, 1.0),
        lambda: optimize_p_identity(np.eye(8), "bounded", 2),
        lambda: optimize_marginals(Marginals((3, 3), [[0], [1]]), _policy2()),
        lambda: linear_lower_bound(AllRanges(8), pol, 1.0),
        lambda: dp_lower_bound(AllRanges(8), 1.0),
        lambda: audit.sampled(lambda d, g: d, np.zeros(3), np.zeros(3), epsilon=1.0, runs=10),
    ]
    for call in calls:
        with pytest.raises(MissingDependencyError) as info:
            call()
        assert NEEDS in str(info.value) and isinstance(info.value, ImportError)


SPEC = """
[dataset]
id = "opt"
path = "rows.csv"
total_epsilon = 1

[domain.x]
type = "ordinal"
low = 0
high = 7

[policies.near]
secrets = "distance_threshold"
theta = THETA

[[release]]
name = "r"
kind = "cdf"
mechanism = "optimized"
attributes = ["x"]
epsilon = 0.5
policy = "near"
"""


def test_the_command_refuses_the_optimized_mechanism_in_one_line_without_scipy(no_scipy, tmp_path, capsys):
    (tmp_path / "spec.toml").write_text(SPEC.replace("THETA", "2"))
    (tmp_path / "rows.csv").write_text("x\n1\n5\n")
    assert main(["plan", str(tmp_path / "spec.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "release[0]: the optimized mechanism (its strategy search) " + NEEDS in err


def test_a_policy_that_protects_nothing_is_refused_at_plan_time(tmp_path, capsys):
    with pytest.raises(ValueError, match="has no edge on this domain: it protects no pair of values"):
        plan_optimized(AllRanges(8), _policy(theta=0), 1.0)
    (tmp_path / "spec.toml").write_text(SPEC.replace("THETA", "0"))
    (tmp_path / "rows.csv").write_text("x\n1\n5\n")
    assert main(["plan", str(tmp_path / "spec.toml")]) == 2  # once a KeyError from the OH strategy's plan
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "protects no pair of values" in err and "Traceback" not in err
