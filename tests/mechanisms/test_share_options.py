"""Budget-share options that are not finite numbers: one clear error naming the option.

The cases are every option of every registered plan (:func:`blowfish_privacy.registry.plans`) whose name
is one of :data:`SHARES`, so a plan made public with such an option is checked without being listed.
"""

import inspect
import math

import pytest

from blowfish_privacy import Domain, Policy, registry, secrets
from blowfish_privacy.mechanisms.grids import grid

#: Options that split a budget or weigh one stage against another (fractions of epsilon, of the data).
SHARES = ("alpha", "eta", "median_share", "ratio", "size_fraction")


def _first_argument(name: str, parameter: str):
    """A valid first argument of a plan, from the name of its first parameter."""
    if parameter == "size":
        return 8
    if parameter == "shape":
        return (8, 8)
    if "grid" in name:
        return grid.grid_policy(8, 8)
    return Policy(Domain.ordinal("x", 0, 7), secrets.Line())


def _cases():
    out = []
    for name, plan in registry.plans().items():
        params = inspect.signature(plan).parameters
        first = next(iter(params))
        out.extend((name, first, option) for option in params if option in SHARES)
    return out


CASES = _cases()


def test_the_cases_include_the_known_share_options():
    assert {("plan_dpcube", "alpha"), ("plan_agrid", "alpha"), ("plan_hybridtree", "median_share"),
            ("plan_dawa", "ratio")} <= {(name, option) for name, _, option in CASES}


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name,first,option", CASES, ids=[f"{n}-{o}" for n, _, o in CASES])
def test_a_share_that_is_not_finite_is_refused_naming_the_option(name, first, option, value):
    plan = registry.plans()[name]
    with pytest.raises(ValueError, match=option):
        plan(_first_argument(name, first), 1.0, **{option: value})
