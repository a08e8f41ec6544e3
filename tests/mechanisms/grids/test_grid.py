"""2-D mechanisms (mechanisms/grids/grid.py): exact audits on a 2 x 3 grid, sensitivities against a
brute-force ||A(e_u - e_v)||_1 with A built as a matrix, least squares against numpy."""

import itertools

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Ordinal, Policy, audit, secrets
from blowfish_privacy.mechanisms.grids import grid as G
def _policies(r=2, c=3):
    dom = Domain([Ordinal("row", 0, r - 1), Ordinal("col", 0, c - 1)])
    return {
        "dp": Policy(dom, secrets.FullDomain()),
        "grid": G.grid_policy(r, c),
        "king": G.grid_policy(r, c, metric="linf"),
        "rowline": G.axis_line_policy(r, c),
    }


PLANS = [
    (G.plan_grid_hierarchical, {"fanout": 2}),
    (G.plan_grid_hierarchical, {"fanout": 2, "levels": "quadtree"}),
    (G.plan_grid_hierarchical, {"fanout": 3}),
    (G.plan_grid_transformed, {}),
    (G.plan_axis_cumulative, {"fanout": 2}),
]


@pytest.mark.parametrize("pname", ["dp", "grid", "rowline"])
@pytest.mark.parametrize("fn,opts", PLANS)
def test_exact_audit_2x3(pname, fn, opts):
    pol = _policies()[pname]
    rep = audit.exact(fn, pol, epsilon=1.0, n=2, **opts)
    assert rep.ok, str(rep)


def _strategy_matrix(plan, shape):
    """The released vector as a linear map, by measuring unit histograms with a zero-noise recorder."""
    cols = []
    for i in range(shape[0] * shape[1]):
        e = np.zeros(shape[0] * shape[1], np.int64)
        e[i] = 1
        rec = audit.RecordingGenerator()
        plan.measure(e.reshape(shape), rec)
        cols.append(np.concatenate([np.asarray(v, np.float64).ravel() for v, _ in rec.records]))
    return np.column_stack(cols)


def _brute_sensitivity(A, pol):
    m = pol.domain.size
    best = 0.0
    for u, v in itertools.combinations(range(m), 2):
        if pol.secrets.is_edge(pol.domain.record_of(u), pol.domain.record_of(v)):
            best = max(best, np.abs(A[:, u] - A[:, v]).sum())
    return best


@pytest.mark.parametrize("shape", [(2, 3), (3, 4), (4, 4)])
@pytest.mark.parametrize("pname", ["dp", "grid", "king", "rowline"])
@pytest.mark.parametrize("fn,opts", PLANS)
def test_sensitivity_is_exact_maximum(shape, pname, fn, opts):
    pol = _policies(*shape)[pname]
    plan = fn(pol, 1.0, **opts)
    A = _strategy_matrix(plan, shape)
    assert float(plan.parts[0].sensitivity) == _brute_sensitivity(A, pol)


class _FixedNoise(audit.RecordingGenerator):
    """Adds a given noise vector (records nothing useful): tests the post-processing only."""

    def __init__(self, noise):
        super().__init__()
        self.noise = noise

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, dtype=np.int64)
        return arr + self.noise.reshape(arr.shape)


@pytest.mark.parametrize("levels,f", [("tensor", 2), ("tensor", 3), ("quadtree", 2)])
def test_least_squares_matches_numpy(levels, f):
    shape = (4, 4) if f == 2 else (3, 3)
    pol = _policies(*shape)["grid"]
    plan = G.plan_grid_hierarchical(pol, 1.0, fanout=f, levels=levels)
    A = _strategy_matrix(plan, shape)
    x = np.arange(16 if f == 2 else 9).reshape(shape) % 5
    rec = audit.RecordingGenerator()
    plan.measure(x, rec)
    y = np.concatenate([np.asarray(v, np.float64).ravel() for v, _ in rec.records])
    noise = np.random.default_rng(3).integers(-5, 6, y.size)
    rel = plan.measure(x, _FixedNoise(noise))
    ls = np.linalg.lstsq(A, y + noise, rcond=None)[0]
    np.testing.assert_allclose(rel.histogram.ravel(), ls, atol=1e-8)


def test_axis_cumulative_rowline_is_height_plus_one():
    plan = G.plan_axis_cumulative(G.axis_line_policy(64, 64), 0.1, fanout=4)
    assert plan.parts[0].sensitivity == 4  # 4**3 = 64: levels 0..3


def test_grid_hierarchical_cheaper_than_dp_tensor():
    k = 64
    dp = G.plan_grid_hierarchical(_policies(k, k)["dp"], 0.1, fanout=4)
    gr = G.plan_grid_hierarchical(G.grid_policy(k, k), 0.1, fanout=4)
    assert dp.parts[0].sensitivity == 2 * (4 ** 2 - 1)
    assert gr.parts[0].sensitivity == 2 * 3 * 4  # split levels 1..3 of one axis x 4 levels of the other


def test_noise_free_when_exact_input_and_unbiased_shape():
    pol = G.grid_policy(8, 8)
    x = np.random.default_rng(0).integers(0, 9, (8, 8))
    rel = G.grid_hierarchical(x, pol, 1.0, Generator(seed=1), fanout=2)
    assert rel.histogram.shape == (8, 8)
    assert abs(rel.histogram.sum() - x.sum()) < 200


def test_refusals():
    with pytest.raises(ValueError):
        G.plan_grid_hierarchical(Policy(Domain.ordinal("x", 0, 7), secrets.Line()), 1.0)
    with pytest.raises(ValueError):
        G.plan_grid_hierarchical(G.grid_policy(4, 4), 1.0, levels="oct")
    with pytest.raises(ValueError):
        G.plan_grid_hierarchical(G.grid_policy(4, 4), 1.0, fanout=1)
    with pytest.raises(ValueError):
        G.plan_grid_hierarchical(G.grid_policy(4, 4), 0.0)
