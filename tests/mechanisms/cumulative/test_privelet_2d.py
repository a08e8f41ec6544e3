"""2-D Privelet (tensor Haar) baseline: sensitivity by brute force, an independent matrix oracle, exact error."""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator, mechanisms
from blowfish_privacy.mechanisms.cumulative.privelet import plan_privelet, privelet_2d_sensitivity


def haar_matrix(h):
    """Unnormalised Haar analysis matrix of 2^h values, rows [total, level 0, level 1, ...] (slow, explicit)."""
    m = 1 << h
    rows = [np.ones(m, dtype=np.int64)]
    for level in range(h):
        w = m >> (level + 1)  # width of a child
        for j in range(1 << level):
            r = np.zeros(m, dtype=np.int64)
            r[2 * j * w : 2 * j * w + w] = 1
            r[2 * j * w + w : 2 * j * w + 2 * w] = -1
            rows.append(r)
    return np.array(rows)


def heights(shape):
    return tuple(int(np.ceil(np.log2(s))) if s > 1 else 0 for s in shape)


@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (4, 1), (2, 2), (2, 4), (4, 4), (3, 5), (4, 8), (5, 3)])
def test_sensitivity_is_the_brute_force_maximum_over_every_move(shape):
    R, C = shape
    h1, h2 = heights(shape)
    H1, H2 = haar_matrix(h1)[:, :R], haar_matrix(h2)[:, :C]  # the padded cells hold no record
    worst = 0
    for (a, b), (a2, b2) in itertools.product(itertools.product(range(R), range(C)), repeat=2):
        delta = np.zeros((R, C), dtype=np.int64)
        delta[a, b] -= 1
        delta[a2, b2] += 1
        change = H1 @ delta @ H2.T
        assert change[0, 0] == 0  # the total is public and never moves
        worst = max(worst, int(np.abs(change).sum()))
    assert privelet_2d_sensitivity(h1, h2) == worst
    plan = plan_privelet(shape, 1.0)
    assert plan.parts[0].sensitivity == worst and plan.parts[0].sensitivity_exact


def test_closed_form_values():
    assert privelet_2d_sensitivity(0, 0) == 0
    assert privelet_2d_sensitivity(0, 3) == 6          # one row: the 1-D 2h
    assert privelet_2d_sensitivity(1, 1) == 4
    assert privelet_2d_sensitivity(7, 7) == 2 * (64 - 2)  # 128 x 128
    with pytest.raises(ValueError, match="h1 and h2"):
        privelet_2d_sensitivity(-1, 2)


def test_release_equals_an_independent_matrix_implementation():
    x = np.random.default_rng(3).integers(0, 40, (5, 6))
    eps = 0.7
    plan = plan_privelet((5, 6), eps)
    got = plan.measure(x, Generator(seed=11)).histogram
    # oracle: explicit matrices, the same noise draws (every coefficient but the total, row-major)
    h1, h2 = heights((5, 6))
    H1, H2 = haar_matrix(h1), haar_matrix(h2)
    pad = np.zeros((8, 8), dtype=np.int64)
    pad[:5, :6] = x
    coef = H1 @ pad @ H2.T
    flat = coef.reshape(-1).copy()
    flat[1:] = Generator(seed=11).add_discrete_laplace(flat[1:], plan.parts[0].scale)
    est = np.linalg.solve(H1.astype(float), np.linalg.solve(H2.astype(float), flat.reshape(8, 8).T.astype(float)).T)
    np.testing.assert_allclose(got, est[:5, :6], atol=1e-9)
    assert est.sum() == pytest.approx(x.sum())  # the padded grid keeps the public total


def test_noise_free_limit_reconstructs_exactly():
    x = np.random.default_rng(1).integers(0, 100, (7, 11))
    r = mechanisms.privelet(x, 1e9, Generator(seed=1))
    assert r.histogram.shape == (7, 11)
    np.testing.assert_allclose(r.histogram, x, atol=1e-6)


def test_measured_squared_error_matches_the_planned_expected_error():
    x = np.random.default_rng(2).integers(0, 20, (6, 7))
    eps = 1.0
    plan = plan_privelet((6, 7), eps)
    gen = Generator(seed=5)
    errs = np.array([plan.measure(x, gen).histogram - x for _ in range(1500)])
    v = plan.expected_error["per_value_variance"]
    # 63,000 squared errors (correlated within a release): relative sd a few per cent
    assert np.mean(errs**2) == pytest.approx(v, rel=0.08)
    assert abs(errs.mean()) < 0.05 * np.sqrt(v)
    assert plan.expected_error["total_squared_error"] == pytest.approx(42 * v)


def test_expected_error_closed_form_against_the_matrix_oracle():
    for shape in [(5, 6), (8, 8), (1, 9), (3, 16)]:
        plan = plan_privelet(shape, 0.5)
        h1, h2 = heights(shape)
        inv1 = np.linalg.inv(haar_matrix(h1).astype(float))[: shape[0]]
        inv2 = np.linalg.inv(haar_matrix(h2).astype(float))[: shape[1]]
        w = np.einsum("xi,yj->xyij", inv1**2, inv2**2)
        w[:, :, 0, 0] = 0.0  # the total is exact
        from blowfish_privacy.noise import discrete_laplace_variance

        per_cell = discrete_laplace_variance(plan.parts[0].scale) * w.sum(axis=(2, 3))
        np.testing.assert_allclose(per_cell, plan.expected_error["per_value_variance"], rtol=1e-12)


def test_budget_and_plan_fields():
    plan = plan_privelet((128, 128), 0.1)
    (part,) = plan.parts
    assert plan.epsilon_exact == sum(p.epsilon for p in plan.parts) <= Fraction(1, 10)
    assert part.count == 128 * 128 - 1 and part.sensitivity == 124 and part.scale == 1240
    one = plan_privelet((1, 1), 1.0)
    assert one.epsilon_exact == 0 and one.measure(np.array([[7]])).histogram.tolist() == [[7.0]]
    with pytest.raises(ValueError, match=r"shape"):
        plan_privelet((0, 4), 1.0)
    with pytest.raises(ValueError, match=r"epsilon"):
        plan_privelet((4, 4), 0)
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        plan_privelet((4, 4), 1.0).measure(np.zeros((4, 5), dtype=np.int64))


def test_one_dimensional_behaviour_is_unchanged():
    x = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)
    a = plan_privelet((16,), 1.0).measure(x, Generator(seed=7)).histogram
    b = mechanisms.privelet(x, 1.0, Generator(seed=7)).histogram
    np.testing.assert_array_equal(a, b)
    assert b[:2].tolist() == [12.1875, 0.1875]


def test_seeded_regression_2d():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    r = mechanisms.privelet(x, 2.0, Generator(seed=7))
    assert r.guarantee == "FullDomain" and r.epsilon <= 2.0 and r.params["heights"] == (2, 2)
    np.testing.assert_array_equal(r.histogram, REGRESSION)


REGRESSION = [[2.6875, 1.6875, 1.6875, -0.3125], [-0.5625, 3.4375, 5.4375, 7.4375], [7.9375, 12.4375, 11.9375, 16.4375]]
