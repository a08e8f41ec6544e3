"""The histogram and cumulative release types hold values and their plan: privacy fields are not keywords."""

import numpy as np
import pytest

from blowfish_privacy import Domain, Policy, mechanisms, secrets
from blowfish_privacy.mechanisms.cumulative._common import CumulativeRelease
from blowfish_privacy.mechanisms.histogram import HistogramRelease
from blowfish_privacy.noise import Generator

LINE = Policy(Domain.ordinal("x", 0, 3), secrets.Line())


@pytest.mark.parametrize("copy", ["mechanism", "epsilon", "epsilon_exact", "epsilon_parts", "guarantee",
                                  "sensitivity"])
def test_histogram_release_refuses_a_copy_of_a_plan_field(copy):
    plan = mechanisms.plan_transformed_laplace(LINE, 1.0)
    with pytest.raises(TypeError, match=copy):
        HistogramRelease(histogram=np.zeros(4), secure=False, plan=plan, **{copy: 1})


@pytest.mark.parametrize("copy", ["mechanism", "epsilon", "epsilon_parts", "scales", "sensitivity"])
def test_cumulative_release_refuses_a_copy_of_a_plan_field(copy):
    plan = mechanisms.plan_ordered(LINE, 1.0)
    with pytest.raises(TypeError, match=copy):
        CumulativeRelease(cumulative=np.zeros(4), n=0, secure=False, params={}, plan=plan, **{copy: 1})


def test_a_spend_below_the_plan_is_kept_and_the_plan_spend_is_read_from_the_plan():
    plan = mechanisms.plan_transformed_laplace(LINE, 1.0)
    same = HistogramRelease(histogram=np.zeros(4), secure=False, plan=plan, spent_parts=plan.measure(
        np.ones(4, np.int64), Generator(1)).epsilon_parts)
    assert same.spent_parts is None and same.epsilon_parts == {p.name: p.epsilon for p in plan.parts}
    less = HistogramRelease(histogram=np.zeros(4), secure=False, plan=plan, spent_parts={"counts": 0})
    assert less.epsilon_parts == {"counts": 0}
