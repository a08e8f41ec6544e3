"""Every plan function of the library passes the exact audit (joint distribution of all it returns)."""

import numpy as np
import pytest

from blowfish_privacy import Domain, Policy, audit, mechanisms, secrets

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
