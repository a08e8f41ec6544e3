import csv
import os

import numpy as np
import pytest

from blowfish_privacy.datasets import skin
from blowfish_privacy.experiments import kmeans as experiment

SHARED_SKIN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "uci_skin", "Skin_NonSkin.txt")


def test_bundled_skin_and_samples():
    domain, pts = skin()
    assert domain.shape == (256, 256, 256) and pts.shape == (245057, 3)
    assert pts.min() >= 0 and pts.max() <= 255 and pts.dtype == np.int64
    _, s10 = skin(0.1)
    _, s01 = skin(0.01)
    assert s10.shape == (24506, 3) and s01.shape == (2451, 3)
    np.testing.assert_array_equal(skin(0.01)[1], s01)  # the seed fixes the sample
    with pytest.raises(ValueError, match="fraction must be a number in"):
        skin(0)


def test_bundled_skin_matches_the_shared_file():
    if not os.path.exists(SHARED_SKIN):
        pytest.skip("needs the UCI Skin file (place it in ../shared/data/uci_skin)")
    raw = np.loadtxt(SHARED_SKIN, delimiter=",", skiprows=1, dtype=np.int64)
    np.testing.assert_array_equal(skin()[1], raw[:, :3])


def test_synthetic_set_on_a_grid():
    domain, pts = experiment.synthetic(seed=1)
    assert pts.shape == (1000, 4) and domain.shape == (21, 21, 21, 21)
    assert pts.min() >= 0 and pts.max() <= 20


HAVE_MPL = __import__("importlib.util").util.find_spec("matplotlib") is not None


@pytest.mark.slow
def test_experiment_writes_csv_and_png(tmp_path):
    res = experiment.run(
        str(tmp_path), datasets=("synthetic",), epsilons=(0.2, 1.0), repetitions=3, iterations=3,
        thetas=(5, 2), progress=False, threads=1, mechanism="sulq",
    )
    with open(res.csv_path) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * 2  # FullDomain, two thresholds, Attribute; two epsilons
    assert not HAVE_MPL or (res.png_path is not None and (tmp_path / "kmeans.png").stat().st_size > 10_000)
    for r in res.rows:
        assert r["ratio_q25"] <= r["ratio_median"] <= r["ratio_q75"]
        assert r["ratio_mean"] >= 0.99  # Lloyd from the same start is a local optimum
        assert r["epsilon_spent"] <= r["epsilon"]
    for label in ("FullDomain (DP)", "L1 theta=5", "L1 theta=2", "Attribute"):
        # each run's sensitivity is taken at its own noisy centroids, so runs under different policies are not
        # compared here (at the same centroids a policy's is never above DP's: tests/mechanisms/clustering/test_kmeans.py);
        # any centroids in the 21^4 grid bound it by two L1 diameters
        assert 0 < res.row("synthetic", label, 1.0)["sum_sensitivity"] <= 2 * 4 * 20
    # by the erratum, well above the paper's 2 theta
    assert res.row("synthetic", "L1 theta=2", 1.0)["sum_sensitivity"] > 4 * 4


def test_experiment_is_reproducible_without_output():
    kw = dict(datasets=("synthetic",), epsilons=(0.5,), repetitions=2, iterations=2, thetas=(2,), progress=False)
    a = experiment.run(None, **kw)
    b = experiment.run(None, **kw)
    assert a.csv_path is None and [r["ratio_mean"] for r in a.rows] == [r["ratio_mean"] for r in b.rows]


@pytest.mark.slow
def test_command_line_prints_what_it_wrote(tmp_path, capsys):
    experiment.main(["--out", str(tmp_path), "--epsilons", "1.0", "--repetitions", "2", "--iterations", "2",
                     "--thetas", "2", "--quiet"])
    captured = capsys.readouterr()
    assert "quick setting" in captured.err and "--full" in captured.err
    assert f"wrote {tmp_path / 'kmeans.csv'}" in captured.out


def test_grid_experiment_sensitivity_falls_with_theta(tmp_path):
    res = experiment.run(
        None, datasets=("synthetic",), epsilons=(0.5,), repetitions=2, thetas=(2,), progress=False, threads=1,
    )
    by = {r["policy"]: r for r in res.rows}
    dp = next(r for name, r in by.items() if name.startswith("FullDomain"))
    theta2 = next(r for name, r in by.items() if "theta=2" in name)
    assert dp["mechanism"] == "grid" and dp["sum_sensitivity"] == 2.0  # two points' worth under DP
    assert theta2["sum_sensitivity"] < dp["sum_sensitivity"]
    assert all(r["epsilon_spent"] <= r["epsilon"] for r in res.rows)
