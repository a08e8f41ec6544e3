"""Every plan function of the library passes the exact audit (joint distribution of all it returns)."""

import dataclasses

import numpy as np
import pytest

from blowfish_privacy import Domain, Policy, audit, mechanisms, secrets
from blowfish_privacy import baselines

LINE = Policy(Domain.ordinal("x", 0, 4), secrets.Line())
THRESH = Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(2))
FULL = Policy(Domain.ordinal("x", 0, 3), secrets.FullDomain())

CASES = [
    (mechanisms.plan_histogram, LINE, {}),
    (mechanisms.plan_ordered, THRESH, {}),
    (mechanisms.plan_ordered_hierarchical, THRESH, {"fanout": 2}),
    (mechanisms.plan_ordered_hierarchical, LINE, {"fanout": 2}),
    (mechanisms.plan_hierarchical, FULL, {"fanout": 2}),
    (mechanisms.plan_identity, FULL, {}),
    (mechanisms.plan_transformed_laplace, LINE, {}),
    (mechanisms.plan_transformed_laplace, THRESH, {}),
    (mechanisms.plan_privelet, FULL, {}),
    (baselines.plan_greedyh, FULL, {}),
    (mechanisms.plan_kmeans, Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(1)),
     {"k": 2, "iterations": 1, "init": np.array([[1.0], [3.0]])}),
]


@pytest.mark.parametrize("plan_fn,policy,options", CASES,
                         ids=[f"{c[0].__name__}-{type(c[1].secrets).__name__}" for c in CASES])
def test_every_plan_passes_the_exact_audit(plan_fn, policy, options):
    report = audit.exact(plan_fn, policy, epsilon=1.0, n=2, **options)
    assert report.ok, str(report)


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
