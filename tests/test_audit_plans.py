"""Every registered plan passes the exact audit (joint distribution of all it returns), or is refused for a
named reason.

The cases are checked against :func:`blowfish_privacy.registry.plans`: a plan made public without an audit
case that runs here, or without an entry in :data:`NOT_AUDITED` saying why the exact auditor cannot run it,
fails :func:`test_every_registered_plan_is_audited_or_refused_for_a_reason`.
"""

import dataclasses

import numpy as np
import pytest

from blowfish_privacy import (
    Domain,
    Ordinal,
    Policy,
    audit,
    baselines,
    mechanisms,
    registry,
    secrets,
)
from blowfish_privacy import workloads as W
from blowfish_privacy.mechanisms.cumulative.cumulative import plan_identity_projected
from blowfish_privacy.mechanisms.grids import grid
from blowfish_privacy.mechanisms.strategies import prefix_strategy

LINE = Policy(Domain.ordinal("x", 0, 4), secrets.Line())
LINE3 = Policy(Domain.ordinal("x", 0, 2), secrets.Line())
THRESH = Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(2))
THRESH3 = Policy(Domain.ordinal("x", 0, 2), secrets.DistanceThreshold(2))
FULL = Policy(Domain.ordinal("x", 0, 3), secrets.FullDomain())
FULL3 = Policy(Domain.ordinal("x", 0, 2), secrets.FullDomain())
SQUARE = Policy(Domain([Ordinal("r", 0, 1), Ordinal("c", 0, 1)]), secrets.FullDomain())
RECT = Policy(Domain([Ordinal("r", 0, 1), Ordinal("c", 0, 2)]), secrets.FullDomain())
GRID = grid.grid_policy(2, 3)
GRID_SQUARE = grid.grid_policy(2, 2)


def _bound(plan, *lead, **fixed):
    """``plan`` with its leading arguments (workload, strategy) fixed: a plan factory of (policy, epsilon)."""

    def plan_factory(policy, epsilon, **options):
        return plan(*lead, policy, epsilon, **fixed, **options)

    plan_factory.__name__ = plan.__name__  # the auditor recognises a plan factory by its name
    return plan_factory


def plan_laplace_of_the_histogram(policy, epsilon):
    """plan_laplace takes a shape and a sensitivity: here, those of the histogram under ``policy``."""
    return mechanisms.plan_laplace(policy.domain.shape, sensitivity=policy.sensitivity("histogram"),
                                   epsilon=epsilon, policy=policy)


def plan_kron_tiny(policy, epsilon):
    return mechanisms.plan_kronecker([np.array([[1, 0], [0, 1], [1, 1]]), np.array([[1, 0], [1, 1]])], policy,
                                     epsilon, resolution=1)


#: (registered plan, factory audited, policy, options).  A factory other than the registered function wraps
#: it (fixes a workload, a strategy, or the shape and sensitivity); n = 2 records everywhere.
CASES = [
    ("plan_histogram", mechanisms.plan_histogram, LINE, {}),
    ("plan_laplace", plan_laplace_of_the_histogram, LINE, {}),
    ("plan_constrained_histogram", mechanisms.plan_constrained_histogram, FULL3, {}),
    ("plan_ordered", mechanisms.plan_ordered, THRESH, {}),
    ("plan_ordered_hierarchical", mechanisms.plan_ordered_hierarchical, THRESH, {"fanout": 2}),
    ("plan_ordered_hierarchical", mechanisms.plan_ordered_hierarchical, LINE, {"fanout": 2}),
    ("plan_hierarchical", mechanisms.plan_hierarchical, FULL, {"fanout": 2}),
    ("plan_identity", mechanisms.plan_identity, FULL, {}),
    ("plan_identity_projected", plan_identity_projected, FULL, {}),
    ("plan_privelet", mechanisms.plan_privelet, FULL, {}),
    ("plan_transformed_laplace", mechanisms.plan_transformed_laplace, LINE, {}),
    ("plan_transformed_laplace", mechanisms.plan_transformed_laplace, THRESH, {}),
    ("plan_axis_cumulative", mechanisms.plan_axis_cumulative, GRID, {"fanout": 2}),
    ("plan_grid_hierarchical", mechanisms.plan_grid_hierarchical, RECT, {"fanout": 2}),
    ("plan_grid_transformed", mechanisms.plan_grid_transformed, GRID, {}),
    ("plan_kmeans", mechanisms.plan_kmeans, Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(1)),
     {"k": 2, "iterations": 1, "init": np.array([[1.0], [3.0]])}),
    ("plan_kmeans_grid", mechanisms.plan_kmeans_grid, Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(1)),
     {"k": 2, "cell": 2, "restarts": 1, "iterations": 3}),
    ("plan_kronecker", plan_kron_tiny, SQUARE, {}),
    ("plan_marginals", _bound(mechanisms.plan_marginals, W.Marginals((2, 2), [[0], [1]]), restarts=1), SQUARE, {}),
    ("plan_strategy", _bound(mechanisms.plan_strategy, prefix_strategy(3)), THRESH3, {}),
    ("plan_optimized", _bound(mechanisms.plan_optimized, W.AllRanges(3), restarts=1), LINE3, {}),
    ("plan_optimized_cdf", mechanisms.plan_optimized_cdf, THRESH3, {}),
    ("plan_greedyh", baselines.plan_greedyh, FULL, {}),
    ("plan_hb", baselines.plan_hb, FULL, {}),
    ("plan_uniform", baselines.plan_uniform, FULL, {"noisy_total": True}),
    ("plan_hb2d", baselines.plan_hb2d, RECT, {}),
    ("plan_ugrid", baselines.plan_ugrid, RECT, {"cells": 2}),
    ("plan_agrid", baselines.plan_agrid, RECT, {"cells1": 2, "cells2": 2}),
    ("plan_quadtree", baselines.plan_quadtree, RECT, {}),
    ("plan_dpcube", baselines.plan_dpcube, RECT, {}),
]

_DAWA = ("its partition stage draws noise apart from the values it protects (Generator.discrete_laplace on "
         "the noisy costs of candidate buckets); the exact auditor follows a noisy stage only through "
         "add_discrete_laplace and refuses any other noise")

#: Registered plans the exact auditor cannot run: plan -> (reason, probe).  The probe (policy, options,
#: exception, message) is run to show that the auditor itself refuses the plan for that reason; None where
#: there is nothing to refuse (the reason says why).
NOT_AUDITED = {
    "plan_mwem": (("adaptive: each round measures the query chosen from the earlier rounds' noisy answers, so "
                   "its draws are not independent releases"), (FULL, {}, audit.CannotAudit, "adaptive")),
    "plan_mwem_2d": ("adaptive, as plan_mwem", (RECT, {}, audit.CannotAudit, "adaptive")),
    "plan_ahp": ("adaptive: the second stage's clusters come from the first stage's noisy counts",
                 (FULL, {}, audit.CannotAudit, "adaptive")),
    "plan_hybridtree": (("adaptive: the kd-tree's splits are noisy medians, and the values given to later noise "
                         "draws depend on them"), (RECT, {}, audit.CannotAudit, "adaptive")),
    "plan_dawa": (_DAWA, (FULL, {}, TypeError, "draws noise apart from the data")),
    "plan_dawa_transformed": (_DAWA, (LINE3, {}, TypeError, "draws noise apart from the data")),
    "plan_matching_transformed": (("its matching is a noisy max over pair costs whose noise is drawn apart from "
                                   "the values (Generator.discrete_laplace, method 'edges', the default on small "
                                   "domains); with method 'counts' the bucket counts follow the noisy matching "
                                   "(adaptive)"), (LINE3, {}, TypeError, "draws noise apart from the data")),
    "plan_grid_dawa_transformed": (_DAWA, (GRID_SQUARE, {}, TypeError, "draws noise apart from the data")),
    "plan_dawa_hilbert": (_DAWA, (SQUARE, {}, TypeError, "draws noise apart from the data")),
    "plan_pufferfish_sum": (("it measures one attribute's values, not a histogram over a policy's domain, and "
                             "draws its noise on zero before adding the exact sum (as Python ints, so that no "
                             "int64 sum overflows), so no noisy stage carries the data; its sensitivity is "
                             "checked by brute force (Lemma 7.1) in tests/mechanisms/pufferfish/test_pufferfish.py"),
                            None),
}


def _case_id(case):
    name, _, policy, options = case
    return f"{name}-{type(policy.secrets).__name__}" + ("-" + "-".join(map(str, options)) if options else "")


def test_every_registered_plan_is_audited_or_refused_for_a_reason():
    audited = {c[0] for c in CASES}
    registered = set(registry.plans())
    assert not audited & set(NOT_AUDITED), "a plan is both audited and refused"
    assert all(reason.strip() for reason, _ in NOT_AUDITED.values())
    unknown = (audited | set(NOT_AUDITED)) - registered
    assert not unknown, f"cases for plans that are not registered: {sorted(unknown)}"
    missing = registered - audited - set(NOT_AUDITED)
    assert not missing, (f"registered plans with no exact-audit case and no reason in NOT_AUDITED: {sorted(missing)}")


@pytest.mark.parametrize("name,plan_fn,policy,options", CASES, ids=[_case_id(c) for c in CASES])
def test_every_plan_passes_the_exact_audit(name, plan_fn, policy, options):
    report = audit.exact(plan_fn, policy, epsilon=1.0, n=2, **options)
    assert report.ok, str(report)


#: The policies every case is audited under as well, on its own domain: a plan passes under each, or refuses
#: the policy when planning, naming it (a DP baseline needs FullDomain; a transformation a connected graph).
SWEEP = {1: {"line": secrets.Line(), "theta2": secrets.DistanceThreshold(2), "full": secrets.FullDomain(),
             "partition": secrets.Partition([[0, 1], [2, 3, 4]]), "attribute": secrets.Attribute()},
         2: {"full": secrets.FullDomain(), "grid": secrets.DistanceThreshold(1), "attribute": secrets.Attribute()}}
SLOW_PLANS = {"plan_marginals"}  # an optimisation per plan: seconds each
SWEPT = [pytest.param(case, graph_name, id=f"{_case_id(case)}-{graph_name}",
                      marks=pytest.mark.slow if case[0] in SLOW_PLANS else ())
         for case in CASES for graph_name in SWEEP[case[2].domain.ndim]]


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


PROBED = sorted(name for name, (_, probe) in NOT_AUDITED.items() if probe is not None)


@pytest.mark.parametrize("name", PROBED)
def test_the_plans_not_audited_are_refused_by_the_auditor_for_the_reason_given(name):
    """The reason given is the auditor's own: it refuses the plan rather than passing it."""
    policy, options, exception, message = NOT_AUDITED[name][1]
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
