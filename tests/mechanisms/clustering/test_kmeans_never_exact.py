"""k-means never releases a count exact under a private label, even where no neighbour changes it.

A partition policy whose blocks each fit in one grid cell (or in one
cluster) makes the cell counts (or the cluster sizes) the same on every
pair of neighbours: sensitivity 0.  Such a release would be
(0, P)-Blowfish private but exact; the release product refuses exact
values under a private label, and the grid side and the clusters are only
known during the measurement.  So a zero sensitivity is calibrated at a
safe upper bound (2, a histogram's) instead: noise above the sensitivity
never weakens the guarantee.
"""

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Ordinal, Policy, secrets
from blowfish_privacy.mechanisms.clustering.kmeans import plan_kmeans
from blowfish_privacy.mechanisms.clustering.kmeans_grid import grid_sensitivity, plan_kmeans_grid
from blowfish_privacy.sklearn import BlowfishKMeans

DOMAIN = Domain([Ordinal("x", 0, 19)])
PAIRS = Policy(DOMAIN, secrets.Partition.intervals(list(range(0, 21, 2))))  # blocks {0,1}, {2,3}, ...


@pytest.mark.parametrize("interpolation", ["nearest", "linear"])
def test_grid_cells_no_neighbour_changes_still_get_noise(interpolation):
    if interpolation == "nearest":
        assert grid_sensitivity(PAIRS, 2, "nearest")[0] == 0  # every block inside one cell of side 2
    plan = plan_kmeans_grid(PAIRS, 1.0, k=2, cell=2, interpolation=interpolation)
    part, = plan.parts
    assert part.sensitivity >= 2 and part.scale >= 2
    rng = np.random.default_rng(0)
    hist = np.bincount(rng.integers(0, 20, size=500), minlength=20)
    r = plan.measure(hist, Generator(seed=3))
    assert r.epsilon_exact == plan.parts[0].epsilon


def test_sulq_sizes_no_neighbour_changes_still_get_noise():
    halves = Policy(DOMAIN, secrets.Partition.intervals([0, 10, 20]))
    plan = plan_kmeans(halves, 1.0, k=2, iterations=3, init=[[4], [15]])
    sizes = plan.parts[0]
    assert sizes.name == "sizes[1]" and sizes.sensitivity == 2 and not sizes.sensitivity_exact
    rng = np.random.default_rng(1)
    pts = rng.integers(0, 20, size=(400, 1))
    r = plan.measure(pts, Generator(seed=5))
    assert all(it.scale_sizes > 0 and it.scale_sums > 0 for it in r.history)  # every round noisy


def test_the_estimator_under_such_a_policy_reports_noise():
    X = np.arange(20).repeat(10).reshape(-1, 1)
    km = BlowfishKMeans(policy=PAIRS, method="eugkm", n_clusters=2, cell=2).fit(X)
    grid, = km.privacy_["sensitivities"]
    assert grid["sensitivity"] == 2 and grid["scale"] > 0 and km.privacy_["private"]
