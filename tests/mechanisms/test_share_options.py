"""Budget-share options (alpha, median_share) that are not finite numbers: one clear error naming the option."""

import math

import pytest

from blowfish_privacy.baselines.grids_2d import plan_agrid
from blowfish_privacy.baselines.dpcube import plan_dpcube
from blowfish_privacy.baselines.hybridtree import plan_hybridtree

CASES = [(plan_dpcube, "alpha"), (plan_agrid, "alpha"), (plan_hybridtree, "median_share")]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("plan,option", CASES)
def test_a_share_that_is_not_finite_is_refused_naming_the_option(plan, option, value):
    with pytest.raises(ValueError, match=option):
        plan((8, 8), 1.0, **{option: value})
