"""The 2-D exact expected errors of experiments/_dpbench_expected.py: the closed forms against the
error computed from the releases' own linear response to unit noise (exact, no sampling), and
(slow) the measured error of 1000 releases against the exact one."""

import importlib

import numpy as np
import pytest

from blowfish_privacy.experiments import _dpbench_data as data

E = importlib.import_module("blowfish_privacy.experiments._dpbench_expected")


def _response_error(plan, truth, ranges):
    """Exact mean over ``ranges`` of E[(q.(est - x))^2] from unit-noise responses (no closed form used)."""
    rec = E.audit.RecordingGenerator()
    r0 = plan.measure(truth, rec)
    est0 = np.asarray(r0.histogram if hasattr(r0, "histogram") else r0.values, float)
    bias = E._rect_sums(est0 - truth, ranges)
    (vals, scale), = rec.records
    zero = np.zeros_like(truth)
    noise = np.zeros(ranges.shape[0])
    for j in range(vals.size):
        r = plan.measure(zero, E._UnitNoise(j))
        img = np.asarray(r.histogram if hasattr(r, "histogram") else r.values, float)
        noise += E._rect_sums(img, ranges) ** 2
    return float(np.mean(bias ** 2 + E.discrete_laplace_variance(scale) * noise))


@pytest.mark.parametrize("alg", E.EXPECTED_2D)
@pytest.mark.parametrize("k", [4, 8])
def test_closed_forms_match_the_linear_response(alg, k):
    rng = np.random.default_rng(k)
    truth = rng.poisson(40, (k, k)).astype(np.int64)
    ranges = data.random_ranges(k, 2, 300, rng)
    plan, expected = E._plan_and_expected(alg, k, 0.5, truth, ranges)
    assert expected == pytest.approx(_response_error(plan, truth, ranges), rel=1e-9)


def test_tree_pinv_is_least_squares():
    P = E.tree_pinv(3, 2)
    assert P.shape == (9, 1 + 3 + 9)
    H = np.linalg.pinv(P)
    np.testing.assert_allclose(P @ H, np.eye(9), atol=1e-12)  # H has full column rank


def test_refusals():
    with pytest.raises(ValueError, match="covers"):
        E.check_expected_2d(algorithms=["dawa_hilbert"], repetitions=2)
    with pytest.raises(ValueError, match="repetitions"):
        E.check_expected_2d(repetitions=1)


@pytest.mark.slow
def test_measured_error_matches_exact():
    rows = E.check_expected_2d(domain=32, epsilon=0.1, scale=100_000, repetitions=1000, progress=False)
    for r in rows:
        # 5 standard errors of the mean (alpha about 1e-6); at this setting a standard error is 1-2%,
        # so an expected error off by 10% or more fails
        assert abs(r["ratio"] - 1) <= 5 * r["ratio_se"], r
