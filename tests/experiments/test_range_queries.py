import csv

import numpy as np
import pytest

from blowfish_privacy.datasets import adult_capital_loss
from blowfish_privacy.experiments import range_queries


def test_bundled_adult_capital_loss():
    domain, hist = adult_capital_loss()
    assert domain.size == 4357 and hist.shape == (4357,)
    assert hist.sum() == 48842  # adult.data + adult.test
    assert hist[0] > 40000 and hist[4356] > 0


@pytest.mark.slow
def test_experiment_writes_csv_and_png_and_orders_the_methods(tmp_path):
    res = range_queries.run(
        str(tmp_path), thetas=(1, 100, "full"), epsilons=(0.1, 1.0), repetitions=3, queries=2000, progress=False
    )
    with open(res.csv_path) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * 2
    have_mpl = __import__("importlib.util").util.find_spec("matplotlib") is not None
    assert not have_mpl or (res.png_path is not None and (tmp_path / "range_queries.png").stat().st_size > 10_000)
    for eps in (0.1, 1.0):
        line = res.mse("OH theta=1", eps)
        mid = res.mse("OH theta=100", eps)
        dp = res.mse("OH theta=|T| (hierarchical)", eps)
        ident = res.mse("DP identity", eps)
        assert line < mid < dp < ident
    # the analytic pre-inference error is reported and positive
    assert all(float(r["analytic_pre_inference_mse"]) > 0 for r in rows)
    # the CSV keeps the mean squared error and adds its root, the error the figure and console show
    assert all(abs(float(r["rmse"]) - float(r["mse"]) ** 0.5) <= 1e-9 * float(r["rmse"]) for r in rows)
    assert res.rmse("DP identity", 0.1) == pytest.approx(res.mse("DP identity", 0.1) ** 0.5)


def test_experiment_on_a_given_histogram_without_output():
    hist = np.random.default_rng(0).integers(0, 5, size=64)
    res = range_queries.run(None, thetas=(1, "full"), epsilons=(0.5,), repetitions=2, queries=100, progress=False, hist=hist)
    assert res.csv_path is None and len(res.rows) == 3


@pytest.mark.slow
def test_module_run_prints_what_it_wrote(tmp_path, capsys):
    range_queries.main(["--out", str(tmp_path), "--repetitions", "1", "--queries", "50", "--epsilons", "1.0",
                        "--thetas", "1", "full", "--quiet"])
    out = capsys.readouterr().out
    assert "RMSE per range query" in out and "people" in out and f"wrote {tmp_path / 'range_queries.csv'}" in out
