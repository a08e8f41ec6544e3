"""mechanisms.kmeans: one default (the grid mechanism, as BlowfishKMeans and the release kind), every method by name,
options of another method refused, and the same-centroid rule (a policy's sensitivity never above DP's)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from blowfish_privacy import Generator, Policy, secrets
from blowfish_privacy.mechanisms import KMeansGridResult, KMeansResult, kmeans_grid, kmeans_sensitivity, plan_kmeans
from blowfish_privacy.mechanisms.clustering import kmeans
from blowfish_privacy.mechanisms.clustering.methods import METHODS
from blowfish_privacy.mechanisms.clustering.kmeans_grid import grid_sensitivity
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.release._kinds_kmeans import km_validate
from blowfish_privacy.sklearn import BlowfishKMeans

DOM = Domain([Ordinal("x", 0, 15), Ordinal("y", 0, 11)])
POL = Policy(DOM, secrets.DistanceThreshold(2))
PTS = np.random.default_rng(0).integers(0, 12, size=(300, 2))


def test_one_default_everywhere():
    assert METHODS[0] == "grid"
    assert inspect.signature(kmeans).parameters["method"].default == "grid"
    assert inspect.signature(BlowfishKMeans).parameters["method"].default == "grid"
    assert km_validate({}, DOM, POL)["method"] == "grid"


@pytest.mark.parametrize("method,interpolation", [(None, "linear"), ("grid", "linear"), ("eugkm", "nearest")])
def test_grid_methods_are_kmeans_grid(method, interpolation):
    kw = {} if method is None else {"method": method}
    r = kmeans(PTS, POL, 0.8, Generator(seed=2), k=3, **kw)
    g = kmeans_grid(PTS, POL, 0.8, Generator(seed=2), k=3, interpolation=interpolation)
    assert isinstance(r, KMeansGridResult) and r.interpolation == interpolation
    np.testing.assert_array_equal(r.centroids, g.centroids)
    np.testing.assert_array_equal(r.noisy_weights, g.noisy_weights)
    # the grid options pass through
    c = kmeans(PTS, POL, 0.8, Generator(seed=2), k=3, cell=3, iterations=4, restarts=2, threshold=0, **kw)
    h = kmeans_grid(PTS, POL, 0.8, Generator(seed=2), k=3, cell=3, iterations=4, restarts=2, threshold=0,
                    interpolation=interpolation)
    assert c.cell == 3 and np.array_equal(c.centroids, h.centroids)


def test_sulq_by_name_is_plan_kmeans_with_its_defaults():
    r = kmeans(PTS, POL, 0.8, Generator(seed=2), method="sulq", k=3)
    p = plan_kmeans(POL, 0.8, k=3).measure(PTS, Generator(seed=2))
    assert isinstance(r, KMeansResult) and len(r.history) == 10
    np.testing.assert_array_equal(r.centroids, p.centroids)
    init = np.array([[2.0, 2.0], [8.0, 8.0], [14.0, 3.0]])
    r = kmeans(PTS, POL, 0.8, Generator(seed=2), method="sulq", k=3, iterations=2, init=init, size_fraction=0.3)
    p = plan_kmeans(POL, 0.8, k=3, iterations=2, init=init, size_fraction=0.3).measure(PTS, Generator(seed=2))
    np.testing.assert_array_equal(r.centroids, p.centroids)


@pytest.mark.parametrize("method,kw,match", [
    ("grid", {"init": "random"}, "init applies only to method='sulq'"),
    ("eugkm", {"size_fraction": 0.5}, "size_fraction applies only to method='sulq'"),
    ("sulq", {"cell": 2}, "cell applies only to methods 'grid' and 'eugkm'"),
    ("sulq", {"restarts": 2}, "restarts applies only"),
    ("sulq", {"n": 10}, "n applies only"),
    ("sulq", {"threshold": 1}, "threshold applies only"),
    ("kmeans++", {}, r"method must be one of \['grid', 'eugkm', 'sulq'\], got 'kmeans\+\+'"),
    (None, {}, "method must be one of"),
])
def test_options_of_another_method_are_refused(method, kw, match):
    with pytest.raises(ValueError, match=match):
        kmeans(PTS, POL, 1.0, Generator(seed=0), method=method, k=2, **kw)


def test_default_init_without_method_names_sulq():
    """A SuLQ-only option with the default method says how to get SuLQ (nothing is measured)."""
    with pytest.raises(ValueError, match="pass method='sulq'"):
        kmeans(PTS, POL, 1.0, Generator(seed=0), k=2, init=np.zeros((2, 2)))


# -- the same-centroid rule ------------------------------------------------------
SMALL = [
    (Domain([Ordinal("x", 0, 4), Ordinal("y", 0, 4)]), g)
    for g in (secrets.Attribute(1), secrets.DistanceThreshold(1), secrets.DistanceThreshold(2, "linf"),
              secrets.DistanceThreshold(1.5, "l2"), secrets.Partition.by_attributes(["x"]),
              secrets.Custom([((0, 0), (4, 4)), ((1, 2), (3, 1))]))
] + [(Domain([Ordinal("x", 0, 12, bin_width=2), Ordinal("y", -2, 2)]), secrets.DistanceThreshold(3)),
     (Domain.ordinal("v", 0, 11), secrets.Line())]


@pytest.mark.parametrize("domain,graph", SMALL, ids=[f"{d.shape}-{g!r}" for d, g in SMALL])
@pytest.mark.parametrize("seed", range(5))
def test_same_centroids_policy_sums_never_above_dp(domain, graph, seed):
    """Every edge of G is an edge of the complete graph, so with the same public centroids and references a
    policy's S_size and S_sum are at most DP's (exact scans on these small domains)."""
    rng = np.random.default_rng(seed)
    lo = np.array([a.low for a in domain.attributes], dtype=np.float64)
    hi = np.array([a.last_value for a in domain.attributes], dtype=np.float64)
    cents = lo + rng.random((3, domain.ndim)) * (hi - lo)
    w = np.array([a.bin_width for a in domain.attributes])
    refs = (lo + np.clip(np.round((cents - lo) / w), 0, np.array(domain.shape) - 1) * w).astype(np.int64)
    ours = kmeans_sensitivity(Policy(domain, graph), cents, refs)
    dp = kmeans_sensitivity(Policy(domain, secrets.FullDomain()), cents, refs)
    assert ours.sum_exact and dp.sum_exact
    assert ours.sum <= dp.sum and ours.size <= dp.size
    for interpolation in ("linear", "nearest"):  # the grid mechanisms obey it too
        assert grid_sensitivity(Policy(domain, graph), 2, interpolation)[0] <= \
            grid_sensitivity(Policy(domain, secrets.FullDomain()), 2, interpolation)[0]
