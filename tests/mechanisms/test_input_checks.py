"""One input check for every histogram mechanism (mechanisms.histogram.check_counts).

Integer dtype, the planned shape, int64 range without wrapping, non-negative
counts whose total fits int64: the Blowfish mechanisms and every DP
baseline refuse the same inputs with the same exception type, naming the
parameter, and accept every integer dtype with the same result.  Degenerate
budgets (a huge epsilon) give a right answer, never a ZeroDivisionError.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from plan_cases import ONE_D, TWO_D

from blowfish_privacy import Domain, Generator, Ordinal, Policy, baselines, secrets
from blowfish_privacy import mechanisms as M
from blowfish_privacy.baselines import grids_2d

I64_MAX = 2**63 - 1


def _line(n, g=None):
    return Policy(Domain([Ordinal("v", 0, n - 1)]), g if g is not None else secrets.Line())


#: Every histogram mechanism (one case per registered plan that measures a histogram,
#: tests/plan_cases.py), called on a histogram of 4 cells (1-D) or 2 x 2 (2-D).
ALL = {**{k: (v, (4,)) for k, v in ONE_D.items()}, **{k: (v, (2, 2)) for k, v in TWO_D.items()}}

#: (what, values, exception): refused before any noise, whatever the mechanism.
BAD = [
    ("uint64 count of 2**63", np.array([2**63, 1, 0, 0], dtype=np.uint64), ValueError),
    ("uint64 count of 2**64 - 1", np.array([2**64 - 1, 0, 0, 0], dtype=np.uint64), ValueError),
    ("a negative count", np.array([3, -1, 0, 2]), ValueError),
    ("int64 minimum", np.array([-(2**63), 0, 0, 0]), ValueError),
    ("floats with a fraction", np.array([1.5, 2.0, 0.0, 1.0]), TypeError),
    ("integral floats", np.array([1.0, 2.0, 0.0, 1.0]), TypeError),
    ("NaN", np.array([np.nan, 1.0, 0.0, 1.0]), TypeError),
    ("bool", np.array([True, False, True, True]), TypeError),
    ("object", np.array([1, 2, 3, 4], dtype=object), TypeError),
    ("complex", np.array([1, 2, 3, 4], dtype=complex), TypeError),
    ("a total above int64", np.array([2**62, 2**62, 1, 0]), OverflowError),
]


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_histogram_mechanism_refuses_the_same_inputs(name):
    fn, shape = ALL[name]
    for what, values, exc in BAD:
        with pytest.raises(exc, match="hist") as info:
            fn(values.reshape(shape), 1.0, Generator(seed=1))
        assert "2**63" not in str(info.value) or what.startswith("uint64"), (name, what)
    for what, values in [("a list of lists", [[1, 2], [3]]), ("a string", "1234")]:
        with pytest.raises((TypeError, ValueError)):
            fn(values, 1.0, Generator(seed=1))


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_integer_dtype_gives_the_int64_result(name):
    fn, shape = ALL[name]
    base = np.array([3, 5, 0, 2], dtype=np.int64).reshape(shape)
    want = np.asarray(fn(base, 1.0, Generator(seed=4)).released_values)
    for dtype in ("i1", "u1", "i2", "u2", "i4", "u4", "u8", ">i8"):
        got = np.asarray(fn(base.astype(dtype), 1.0, Generator(seed=4)).released_values)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype}")


def test_reproducer_shape_check_no_longer_wraps_uint64_counts():
    # the baselines' check converted with np.ascontiguousarray(arr, dtype=np.int64): 2**63 became -2**63
    plan = baselines.plan_uniform(4, 1.0)
    with pytest.raises(ValueError, match="hist"):
        plan.measure(np.array([2**63, 0, 0, 0], dtype=np.uint64), Generator(seed=1))
    with pytest.raises(ValueError, match="non-negative"):
        baselines.ugrid(np.array([[3, -1], [0, 2]]), 1.0, Generator(seed=1))


@pytest.mark.parametrize("epsilon", [2**20, 2**40, 1e300, sys.float_info.max], ids=["2^20", "2^40", "1e300", "max"])
def test_reproducer_greedyh_with_a_huge_epsilon_is_exact(epsilon):
    # the per-level variance is 0: the exact all-range error divided by it (ZeroDivisionError)
    for hist in ([3, 5, 0, 0], [3, 5, 1], [7], [0, 0, 0, 0, 0]):
        rel = baselines.greedyh(np.array(hist), epsilon, Generator(seed=2))
        np.testing.assert_allclose(rel.histogram, hist, atol=1e-9)


@pytest.mark.parametrize("epsilon", [2**20, 1e300, sys.float_info.max], ids=["2^20", "1e300", "max"])
def test_reproducer_agrid_with_a_huge_epsilon_is_finite(epsilon):
    # both levels exact: the inverse-variance mean was 0/0, the level-2 grid size overflowed int64
    hist = np.array([[3, 5, 0], [0, 1, 9]])
    rel = baselines.agrid(hist, epsilon, Generator(seed=3))
    assert np.isfinite(rel.histogram).all()
    assert rel.histogram.sum() == pytest.approx(hist.sum())


def test_constrained_and_kmeans_grid_take_the_flat_or_the_domain_shape_only():
    pol = Policy(Domain([Ordinal("a", 0, 1), Ordinal("b", 0, 2)]), secrets.FullDomain())
    plan = M.plan_constrained_histogram(pol, 1.0)
    for ok in (np.ones(6, dtype=np.int64), np.ones((2, 3), dtype=np.int64)):
        assert plan.measure(ok, Generator(seed=1)).values.size == 6
    with pytest.raises(ValueError, match="hist must have 6 cells"):
        plan.measure(np.ones((3, 2), dtype=np.int64), Generator(seed=1))
    kplan = M.plan_kmeans_grid(pol, 1.0, k=1, cell=1)
    with pytest.raises(ValueError, match="hist must have 6 cells"):
        kplan.measure(np.ones((3, 2), dtype=np.int64), Generator(seed=1))


def test_plan_histogram_refuses_negative_counts():
    plan = M.plan_histogram(_line(3), 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        plan.measure(np.array([1, -2, 3]), Generator(seed=1))
    # plain Laplace on values (not a histogram) takes any int64
    assert M.laplace(np.array([-5, 7]), sensitivity=1, epsilon=2**40).values.tolist() == [-5, 7]


def test_ugrid_and_agrid_cell_rules_take_huge_epsilons():
    assert grids_2d.ugrid_cells(100, sys.float_info.max) > 1
    assert grids_2d.agrid_first_cells(10**400, 1e300) >= 10
    with pytest.raises(ValueError, match="epsilon"):
        grids_2d.ugrid_cells(100, float("nan"))
    with pytest.raises(TypeError, match="n"):
        grids_2d.agrid_first_cells(2.5, 1.0)


@pytest.mark.parametrize("name", sorted(ALL))
def test_epsilons_without_a_float_value_are_refused(name):
    fn, shape = ALL[name]
    hist = np.array([3, 5, 0, 2]).reshape(shape)
    for epsilon in (2**2000, 10**400):
        with pytest.raises(ValueError, match="epsilon must be a finite number > 0 and at most"):
            fn(hist, epsilon, Generator(seed=1))
