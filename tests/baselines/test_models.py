"""Every DP baseline's plan states the model "DP", and so does its release.

The plans are taken from :func:`blowfish_privacy.registry.plans` (family
``"baselines"``): a baseline registered without a small input here fails
:func:`test_every_baseline_has_a_small_input`.
"""

import numpy as np
import pytest

from blowfish_privacy import Domain, Ordinal, Policy, registry, secrets
from blowfish_privacy.noise import Generator

#: A small first argument (a size or a 2-D shape) and options of every baseline plan.
SMALL = {
    "plan_agrid": ((4, 4), {}),
    "plan_ahp": (8, {}),
    "plan_dawa_hilbert": ((4, 4), {}),
    "plan_dpcube": ((4, 4), {}),
    "plan_greedyh": (8, {}),
    "plan_hb": (8, {}),
    "plan_hb2d": ((4, 4), {}),
    "plan_hybridtree": ((4, 4), {}),
    "plan_mwem": (8, {"rounds": 2, "passes": 2}),
    "plan_mwem_2d": ((4, 4), {"rounds": 2, "passes": 2}),
    "plan_quadtree": ((4, 4), {}),
    "plan_ugrid": ((4, 4), {}),
    "plan_uniform": (8, {"noisy_total": True}),
}


def _baselines():
    families = registry.plan_families()
    return sorted(name for name, family in families.items() if family == "baselines")


def _policy(arg):
    """The FullDomain policy on the ordinal domain of ``arg`` (a size or a shape)."""
    shape = (arg,) if isinstance(arg, int) else arg
    return Policy(Domain([Ordinal(f"a{i}", 0, n - 1) for i, n in enumerate(shape)]), secrets.FullDomain())


def test_every_baseline_has_a_small_input():
    baselines = _baselines()
    assert baselines, "no plan of the baselines family is registered"
    assert set(baselines) <= set(SMALL), f"baselines without a small input here: {sorted(set(baselines) - set(SMALL))}"


@pytest.mark.parametrize("name", _baselines())
@pytest.mark.parametrize("given", ["shape", "policy"])
def test_baseline_plan_and_release_state_the_dp_model(name, given):
    arg, options = SMALL[name]
    plan = registry.plans()[name](arg if given == "shape" else _policy(arg), 1.0, **options)
    assert plan.model == "DP", f"{name} states the model {plan.model!r}"
    assert plan.describe()["model"] == "DP"
    shape = (arg,) if isinstance(arg, int) else arg
    hist = (np.arange(int(np.prod(shape)), dtype=np.int64) % 3).reshape(shape)
    release = plan.measure(hist, Generator(seed=5))
    assert release.model == "DP" and release.summary()["model"] == "DP"
    assert release.plan is plan
