"""Grid k-means (mechanisms.kmeans_grid): weights, sensitivities by brute force, exact audit."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from blowfish_privacy import Generator, Policy, audit, secrets
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.mechanisms.clustering.kmeans_grid import (
    KMeansGridResult,
    grid_sensitivity,
    grid_weights,
    kmeans_grid,
    plan_kmeans_grid,
)
from blowfish_privacy.mechanisms.clustering._grid_geometry import node_positions
from blowfish_privacy.mechanisms.plan import Release

# the module (mechanisms.kmeans_grid is the function, as for the other mechanisms)
kg = importlib.import_module("blowfish_privacy.mechanisms.clustering.kmeans_grid")

D2 = Domain([Ordinal("x", 0, 6), Ordinal("y", 0, 4)])
D3 = Domain([Ordinal("a", 0, 4), Ordinal("b", 0, 3), Ordinal("c", 0, 2)])
WIDE = Domain([Ordinal("x", 0, 12, bin_width=2), Ordinal("y", 10, 14)])


def _graphs(domain):
    out = [secrets.FullDomain(), secrets.Attribute(), secrets.DistanceThreshold(1), secrets.DistanceThreshold(2),
           secrets.DistanceThreshold(3), secrets.DistanceThreshold(2, "linf"), secrets.DistanceThreshold(2.5, "l2")]
    if domain.ndim == 2:
        vals = [tuple(int(v) for v in r) for r in zip(*domain.values(np.arange(domain.size)))]
        out.append(secrets.Partition([[v for v in vals if v[0] < domain.attributes[0].low + 2 * domain.attributes[0].bin_width],
                                      [v for v in vals if v[0] >= domain.attributes[0].low + 2 * domain.attributes[0].bin_width]]))
    return out


def _brute(policy, cell, interpolation):
    """max over every edge of ||W e_x - W e_y||_1, W from grid_weights of unit histograms."""
    dom = policy.domain
    cols = [grid_weights(np.eye(dom.size, dtype=np.int64)[t], dom, cell, interpolation) for t in range(dom.size)]
    W = np.stack(cols, axis=1)
    I, J = policy.secrets.iter_edges(dom)
    if I.size == 0:
        return 0
    return int(np.abs(W[:, I] - W[:, J]).sum(axis=0).max())


def _points(domain, n, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, domain.size, n)
    return np.column_stack(domain.values(idx)).astype(np.int64), np.bincount(idx, minlength=domain.size)


@pytest.mark.parametrize("domain", [D2, D3, WIDE])
@pytest.mark.parametrize("interpolation", ["linear", "nearest"])
@pytest.mark.parametrize("cell", [1, 2, 3, 4])
def test_weights_from_points_equal_histogram_query(domain, interpolation, cell):
    pts, h = _points(domain, 40, cell)
    w = grid_weights(h, domain, cell, interpolation)
    assert np.array_equal(w, kg.weights_from_points(pts, domain, cell, interpolation))
    mass = cell**domain.ndim if interpolation == "linear" else 1
    assert w.sum() == 40 * mass and w.min() >= 0


@pytest.mark.parametrize("cell", [1, 2, 3, 5])
def test_hat_weights_preserve_the_first_moment(cell):
    pts, h = _points(D3, 30, 7)
    w = grid_weights(h, D3, cell, "linear")
    pos = node_positions(D3, cell, "linear")
    assert np.allclose(w @ pos, cell**3 * pts.sum(axis=0))


@pytest.mark.parametrize("domain", [D2, D3, WIDE])
@pytest.mark.parametrize("interpolation", ["linear", "nearest"])
@pytest.mark.parametrize("cell", [1, 2, 3, 4])
def test_sensitivity_against_every_edge(domain, interpolation, cell):
    for g in _graphs(domain):
        policy = Policy(domain, g)
        truth = _brute(policy, cell, interpolation)
        exact, is_exact, _ = grid_sensitivity(policy, cell, interpolation)
        assert is_exact and exact == truth, (g, exact, truth)
        bound, bound_exact, how = grid_sensitivity(policy, cell, interpolation, exact_limit=0)
        assert bound >= truth, (g, bound, truth, how)
        if bound_exact:
            assert bound == truth, (g, bound, truth, how)


@pytest.mark.parametrize("theta", [1, 2, 3, 4])
def test_hat_sensitivity_falls_with_theta(theta):
    """L1 theta <= s: 2 s^(d-1) theta, i.e. 2 theta / s points, exact (a point on a node moved along an axis)."""
    dom = Domain([Ordinal("x", 0, 9), Ordinal("y", 0, 8)])
    policy = Policy(dom, secrets.DistanceThreshold(theta))
    s = 4
    value, exact, _ = grid_sensitivity(policy, s, "linear", exact_limit=0)
    assert value == 2 * s * theta and exact
    assert _brute(policy, s, "linear") == value
    # under DP the same release needs 2 points' worth
    assert _brute(Policy(dom, secrets.FullDomain()), s, "linear") == 2 * s * s


def test_nearest_grid_coarser_than_partition_is_calibrated_at_the_floor():
    dom = Domain([Ordinal("x", 0, 7)])
    blocks = secrets.Partition([[0, 1, 2, 3], [4, 5, 6, 7]])
    assert grid_sensitivity(Policy(dom, blocks), 4, "nearest")[:2] == (0, True)
    # no neighbour changes the counts, but an exact count is never released under a private label
    plan = plan_kmeans_grid(Policy(dom, blocks), 1.0, k=2, cell=4, interpolation="nearest")
    assert plan.parts[0].sensitivity == 2 and plan.parts[0].scale == 2 and plan.epsilon_exact == 1


AUDIT_CASES = [
    (Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(1)), dict(k=2, cell=2)),
    (Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(1)), dict(k=2, cell=2, interpolation="nearest")),
    (Policy(Domain.ordinal("x", 0, 4), secrets.FullDomain()), dict(k=2, cell=3)),
    (Policy(Domain([Ordinal("x", 0, 2), Ordinal("y", 0, 2)]), secrets.DistanceThreshold(1)), dict(k=2, cell=2)),
    (Policy(Domain([Ordinal("x", 0, 2), Ordinal("y", 0, 1)]), secrets.Attribute()), dict(k=2, cell=2)),
]


@pytest.mark.parametrize("policy, options", AUDIT_CASES)
def test_exact_audit(policy, options):
    report = audit.exact(plan_kmeans_grid, policy, epsilon=1.0, n=2, restarts=1, iterations=3, **options)
    assert report.ok, report


def test_exact_audit_catches_half_sensitivity(monkeypatch):
    real = kg.grid_sensitivity

    def half(policy, cell, interpolation="linear", **kw):
        s, e, h = real(policy, cell, interpolation, **kw)
        return max(1, s // 2), e, h

    monkeypatch.setattr(kg, "grid_sensitivity", half)
    policy, options = AUDIT_CASES[0]
    report = audit.exact(plan_kmeans_grid, policy, epsilon=1.0, n=2, restarts=1, iterations=3, **options)
    assert not report.ok


def test_points_api_equals_plan_on_histogram():
    policy = Policy(D3, secrets.DistanceThreshold(2))
    pts, h = _points(D3, 60, 3)
    a = kmeans_grid(pts, policy, 0.7, Generator(seed=5), k=3, cell=2)
    b = plan_kmeans_grid(policy, 0.7, k=3, cell=2).measure(h, Generator(seed=5))
    assert np.array_equal(a.noisy_weights, b.noisy_weights) and np.array_equal(a.centroids, b.centroids)
    assert isinstance(a, KMeansGridResult) and isinstance(a, Release)
    assert a.epsilon_exact <= 0.7 and a.summary()["sensitivity"] == {"nodes": a.sensitivity}


@pytest.mark.parametrize("n", [0, 1, 2])
def test_measure_never_fails_on_few_points(n):
    policy = Policy(D2, secrets.DistanceThreshold(1))
    pts = np.zeros((n, 2), dtype=np.int64)
    r = kmeans_grid(pts, policy, 1.0, Generator(seed=1), k=4, cell=2)
    lo, hi = np.array([0, 0]), np.array([6, 4])
    assert r.centroids.shape == (4, 2) and (r.centroids >= lo).all() and (r.centroids <= hi).all()


def test_out_of_box_points_are_clamped():
    policy = Policy(D2, secrets.DistanceThreshold(1))
    pts = np.array([[-5.0, 99.0], [np.nan, 2.0], [3.0, 1.0]])
    r = kmeans_grid(pts, policy, 1.0, Generator(seed=1), k=2, cell=2)
    assert np.isfinite(r.centroids).all()


def test_plan_refusals():
    policy = Policy(D2, secrets.DistanceThreshold(1))
    with pytest.raises(ValueError, match="cell or n"):
        plan_kmeans_grid(policy, 1.0)
    with pytest.raises(ValueError, match="interpolation"):
        plan_kmeans_grid(policy, 1.0, cell=2, interpolation="cubic")
    with pytest.raises(ValueError, match="k must be"):
        plan_kmeans_grid(policy, 1.0, cell=2, k=65)
    with pytest.raises(ValueError, match="cell"):
        plan_kmeans_grid(policy, 1.0, cell=0)


def test_cell_rule_is_public_and_coarser_for_dp_at_small_epsilon():
    dom = Domain([Ordinal(n, 0, 255) for n in "bgr"])
    dp = kg.choose_cell(Policy(dom, secrets.FullDomain()), 0.1, 2451, "nearest")
    th = kg.choose_cell(Policy(dom, secrets.DistanceThreshold(8)), 0.1, 2451, "linear")
    assert dp == 71 and 8 < th < dp
