"""The registries the coverage tests are generated from: every plan and every release kind, by name."""

import inspect

from blowfish_privacy import baselines, mechanisms, registry
from blowfish_privacy.mechanisms.cumulative import cumulative
from blowfish_privacy.release import kinds


def test_plans_are_every_exported_plan_factory_of_both_families():
    plans = registry.plans()
    assert list(plans) == sorted(plans)
    exported = {n for pkg in (mechanisms, baselines) for n in pkg.__all__ if n.startswith("plan_")}
    assert exported <= set(plans)
    assert all(name.startswith("plan_") and inspect.isfunction(fn) and fn.__name__ == name
               for name, fn in plans.items())


def test_a_plan_exported_by_its_module_only_is_registered():
    """plan_identity_projected (the cdf kind's projected identity) is in its module's __all__, not the package's."""
    assert "plan_identity_projected" not in mechanisms.__all__
    assert registry.plans()["plan_identity_projected"] is cumulative.plan_identity_projected


def test_families_name_where_each_plan_lives():
    families = registry.plan_families()
    assert set(families) == set(registry.plans())
    assert families["plan_histogram"] == "mechanisms" and families["plan_mwem"] == "baselines"
    assert all(registry.plans()[n].__module__.startswith(f"blowfish_privacy.{f}.") for n, f in families.items())


def test_kinds_are_the_release_kinds():
    assert set(registry.kinds()) == set(kinds.KINDS)
    assert {"histogram", "cdf", "kmeans", "pufferfish_sum"} <= set(registry.kinds())
