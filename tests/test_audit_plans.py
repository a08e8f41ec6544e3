"""Every registered plan passes the exact audit (joint distribution of all it returns), or is refused for a
named reason.

The cases are each registered plan's entry in ``tests/plan_cases.py``, checked against
:func:`blowfish_privacy.registry.plans`: a plan made public without an entry there, with an audit case that
runs here or the :class:`~plan_cases.Reason` the exact auditor cannot run it, fails
:func:`test_every_registered_plan_is_audited_or_refused_for_a_reason`.
"""

import dataclasses

import numpy as np
import pytest
from plan_cases import AUDIT_CASES, LINE, NOT_AUDITED, uncovered

from blowfish_privacy import Domain, Policy, audit, mechanisms, registry, secrets

#: (registered plan, factory audited, policy, options), from tests/plan_cases.py.  A factory other than the
#: registered function wraps it (fixes a workload, a strategy, or the shape and sensitivity); n = 2 records
#: everywhere.
CASES = [(name, factory, policy, options) for name, factory, policy, options, _ in AUDIT_CASES]


def _case_id(case):
    name, _, policy, options = case
    return f"{name}-{type(policy.secrets).__name__}" + ("-" + "-".join(map(str, options)) if options else "")


def test_every_registered_plan_is_audited_or_refused_for_a_reason():
    missing, unknown = uncovered(registry.plans())
    assert not missing, f"registered plans with no entry in tests/plan_cases.py: {missing}"
    assert not unknown, f"entries in tests/plan_cases.py for plans that are not registered: {unknown}"
    audited = {c[0] for c in CASES}
    assert audited | set(NOT_AUDITED) == set(registry.plans())
    assert all(reason.text.strip() for reason in NOT_AUDITED.values()), "a plan is refused for no reason"


@pytest.mark.parametrize("name,plan_fn,policy,options", CASES, ids=[_case_id(c) for c in CASES])
def test_every_plan_passes_the_exact_audit(name, plan_fn, policy, options):
    report = audit.exact(plan_fn, policy, epsilon=1.0, n=2, **options)
    assert report.ok, str(report)


#: The policies every case is audited under as well, on its own domain: a plan passes under each, or refuses
#: the policy when planning, naming it (a DP baseline needs FullDomain; a transformation a connected graph).
SWEEP = {1: {"line": secrets.Line(), "theta2": secrets.DistanceThreshold(2), "full": secrets.FullDomain(),
             "partition": secrets.Partition([[0, 1], [2, 3, 4]]), "attribute": secrets.Attribute()},
         2: {"full": secrets.FullDomain(), "grid": secrets.DistanceThreshold(1), "attribute": secrets.Attribute()}}
SWEPT = [pytest.param(case[:4], graph_name, id=f"{_case_id(case[:4])}-{graph_name}",
                      marks=pytest.mark.slow if case[4] else ())  # audit_slow: an optimisation per plan
         for case in AUDIT_CASES for graph_name in SWEEP[case[2].domain.ndim]]


@pytest.mark.parametrize("case,graph_name", SWEPT)
def test_every_plan_passes_or_refuses_under_every_policy(case, graph_name):
    name, plan_fn, policy, options = case
    graph = SWEEP[policy.domain.ndim][graph_name]
    if policy.domain.size < 5 and graph_name == "partition":
        graph = secrets.Partition([list(range(policy.domain.size // 2)),
                                   list(range(policy.domain.size // 2, policy.domain.size))])
    swept = Policy(policy.domain, graph)
    try:
        report = audit.exact(plan_fn, swept, epsilon=1.0, n=2, **options)
    except audit.CannotAudit:
        raise  # a refusal of the auditor, not of the policy
    except (ValueError, NotImplementedError) as exc:
        assert "policy" in str(exc) or "secret graph" in str(exc), f"{name} under {graph!r}: {exc}"
        return
    assert report.ok, str(report)


PROBED = sorted(name for name, reason in NOT_AUDITED.items() if reason.probe is not None)


@pytest.mark.parametrize("name", PROBED)
def test_the_plans_not_audited_are_refused_by_the_auditor_for_the_reason_given(name):
    """The reason given is the auditor's own: it refuses the plan rather than passing it."""
    policy, options, exception, message = NOT_AUDITED[name].probe
    with pytest.raises(exception, match=message):
        audit.exact(registry.plans()[name], policy, epsilon=1.0, n=2, **options)


def test_a_plan_claiming_half_its_sensitivity_fails():
    def plan_half(policy, epsilon):
        return mechanisms.plan_laplace(policy.domain.shape, sensitivity=1, epsilon=epsilon, policy=policy)

    report = audit.exact(plan_half, LINE, epsilon=1.0, n=2)
    assert not report.ok


# -- leaks hidden from a naive comparison of results -----------------------------
_LINE3 = Policy(Domain.ordinal("a", 0, 2), secrets.Line())


def _honest(h, policy, eps, gen):
    return gen.add_discrete_laplace(np.asarray(h, dtype=np.int64), 2 / eps)


def _leak_closure(h, policy, eps, gen):
    noisy = gen.add_discrete_laplace(np.asarray(h, dtype=np.int64), 2 / eps)
    raw = np.array(h)
    return {"values": noisy, "raw": (lambda: raw)}


class _Box:
    def __init__(self, v, raw):
        self.v, self.raw = v, raw

    def __eq__(self, other):  # compares only the noisy part
        return np.array_equal(self.v, other.v)


def _leak_eq(h, policy, eps, gen):
    return _Box(gen.add_discrete_laplace(np.asarray(h, dtype=np.int64), 2 / eps), np.array(h))


@dataclasses.dataclass(frozen=True)
class _R:
    values: np.ndarray


def _leak_extra(h, policy, eps, gen):
    r = _R(gen.add_discrete_laplace(np.asarray(h, dtype=np.int64), 2 / eps))
    object.__setattr__(r, "raw", np.array(h))  # outside the declared fields
    return r


def test_an_honest_mechanism_passes():
    assert audit.exact(_honest, _LINE3, epsilon=1.0, n=1).ok


@pytest.mark.parametrize("leaky", [_leak_closure, _leak_eq, _leak_extra], ids=["closure", "own-eq", "extra-attr"])
def test_leaks_hidden_in_closures_custom_eq_or_extra_attributes_fail(leaky):
    report = audit.exact(leaky, _LINE3, epsilon=1.0, n=1)
    assert not report.ok, str(report)
