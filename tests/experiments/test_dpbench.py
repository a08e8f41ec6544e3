"""DPBench harness: tiny end-to-end runs on the built-in shape (no data needed), CSV schema,
resumability, refusals without data, and the metric against a hand computation."""

import csv

import numpy as np
import pytest

from blowfish_privacy.experiments import dpbench as B
from blowfish_privacy.experiments import _dpbench_algorithms as A
from blowfish_privacy.experiments import _dpbench_data as D
from blowfish_privacy.experiments import _dpbench_expected as E


def _run(tmp_path, dims, **kw):
    opts = dict(dims=dims, datasets=[D.SYNTHETIC], scales=[1000], domains=[256 if dims == 1 else 32],
                epsilons=[1.0], repetitions=1, out_dir=tmp_path, progress=False, plot=False, queries=50,
                data_dir=tmp_path / "nodata")
    opts.update(kw)
    return B.run(**opts)


@pytest.mark.slow  # 8-16 s: every DPBench algorithm end to end
@pytest.mark.parametrize("dims", [1, 2])
def test_end_to_end_schema(tmp_path, dims):
    res = _run(tmp_path, dims)
    with open(res.csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and list(rows[0]) == B.FIELDS
    algs = set(B.algorithm_names(dims))
    assert {r["algorithm"] for r in rows} == algs
    wls = set(B.WORKLOADS[dims])
    assert {r["workload"] for r in rows} == wls
    assert len(rows) == len(algs) * len(wls)
    for r in rows:
        assert float(r["scaled_l1"]) >= 0 and float(r["mse"]) >= 0 and float(r["seconds"]) >= 0
        assert r["privacy"] in ("DP", "Blowfish")
    assert "best DP" in res.table
    md = res.markdown_path.read_text()
    assert res.markdown_path.name == f"dpbench_{dims}d.md" and "| epsilon | records | best DP baseline |" in md
    assert all(f"| {a} |" in md for a in algs)


def test_resumes_from_csv(tmp_path):
    first = _run(tmp_path, 1, algorithms=["identity", "ordered"])
    again = _run(tmp_path, 1, algorithms=["identity", "ordered"])
    assert again.new_rows == 0 and again.skipped_runs == 2
    more = _run(tmp_path, 1, algorithms=["identity", "ordered"], repetitions=2)
    assert more.skipped_runs == 2 and more.new_rows == first.new_rows
    with open(first.csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    keys = [tuple(r[k] for k in B.KEY) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * first.new_rows


def test_data_sampling_is_deterministic(tmp_path):
    shape = D.merge(D.load_shape(D.SYNTHETIC, 1, None), 256)
    a = D.sample(shape, 1000, np.random.default_rng(D.data_seed(1, "X", 1000, 256, 0)))
    b = D.sample(shape, 1000, np.random.default_rng(D.data_seed(1, "X", 1000, 256, 0)))
    assert (a == b).all() and a.sum() == 1000


def test_missing_data_refused_without_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BLOWFISH_DATA", str(tmp_path / "absent"))
    import argparse

    p = argparse.ArgumentParser()
    B.add_arguments(p)
    rc = B.run_from_args(p.parse_args(["--dims", "2", "--out", str(tmp_path / "o")]))
    err = capsys.readouterr().err
    assert rc == 2 and "dpbench_2d" in err and str(tmp_path) not in err
    with pytest.raises(D.DataMissing) as exc:
        D.load_shape("HEPTH", 1, tmp_path / "absent")
    assert str(tmp_path) not in str(exc.value)


def test_metric_by_hand():
    truth = np.array([3, 0, 5, 2])
    est = np.array([4.0, -1.0, 5.0, 0.0])  # error e = [1, -1, 0, -2]
    ranges = np.array([[0, 1], [1, 3], [2, 2]])  # errors 0, -3, 0
    out = D.workload_errors(est, truth, ["identity", "prefix", "random", "allranges"], ranges)
    assert out["identity"][:2] == (1.0, 1.5)
    # prefix errors 1, 0, 0, -2
    assert out["prefix"][:2] == (0.75, 1.25)
    assert out["random"][:2] == (1.0, 3.0)
    e = est - truth
    allr = [e[i:j + 1].sum() for i in range(4) for j in range(i, 4)]
    assert out["allranges"][0] == pytest.approx(np.mean(np.abs(allr)))
    assert out["allranges"][1] == pytest.approx(np.mean(np.square(allr)))
    assert out["allranges"][2] == 10


def test_metric_2d_by_hand():
    truth = np.zeros((3, 3), np.int64)
    est = np.arange(9.0).reshape(3, 3)
    ranges = np.array([[0, 2, 0, 2], [1, 1, 1, 2], [0, 0, 0, 0]])  # sums 36, 4+5, 0
    out = D.workload_errors(est, truth, ["random", "prefix"], ranges)
    assert out["random"][0] == pytest.approx((36 + 9 + 0) / 3)
    quad = [est[:i + 1, :j + 1].sum() for i in range(3) for j in range(3)]
    assert out["prefix"][0] == pytest.approx(np.mean(quad))


def test_module_main_lists(capsys):
    assert B.main(["--list", "--dims", "2"]) == 0
    assert "axis_cumulative_rowline" in capsys.readouterr().out


def test_new_baselines_registered():
    assert {"uniform", "h", "hb", "mwem"} <= set(B.algorithm_names(1))
    assert {"uniform", "hb2d_qyl", "ugrid", "agrid"} <= set(B.algorithm_names(2))
    for (d, n), a in A.ALGORITHMS.items():
        if n in ("uniform", "h", "hb", "mwem", "hb2d_qyl", "ugrid", "agrid"):
            assert a.privacy == "DP"
            p = a.plan(256 if d == 1 else 32, 0.5)
            assert p.epsilon_exact <= 0.5


def test_allranges_mse_closed_form():
    rng = np.random.default_rng(1)
    e = rng.normal(size=37)
    cum = np.cumsum(e)
    brute = np.mean([e[i:j + 1].sum() ** 2 for i in range(37) for j in range(i, 37)])
    assert E.allranges_mse(cum) == pytest.approx(brute, rel=1e-10)
    assert E.allranges_mse(cum) == pytest.approx(D.allranges_1d(cum)[1], rel=1e-10)


def test_check_expected_command(tmp_path, capsys):
    rc = B.main(["--check-expected", "--domains", "256", "--repetitions", "5", "--quiet",
                 "--out", str(tmp_path), "--data", str(tmp_path / "nodata")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "hb" in out and "ratio" in out
    with open(tmp_path / "dpbench_expected_1d.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["algorithm"] for r in rows] == list(E.EXPECTED_PLANS)
    assert B.main(["--check-expected", "--dims", "2", "--domains", "16", "--repetitions", "3", "--quiet",
                   "--data", str(tmp_path / "nodata")]) == 0
    out2 = capsys.readouterr().out
    assert "hb2d_qyl" in out2 and "ugrid" in out2 and "random-rectangle" in out2
    assert B.main(["--check-expected", "--dims", "2", "--algorithms", "quadtree", "--repetitions", "3"]) == 2


@pytest.mark.slow
def test_measured_error_matches_expected_error():
    """200 releases each at |T| = 4096, eps = 0.1: measured / expected all-range MSE (pre-inference).

    The per-release MSE is a positive quadratic form of the noise; its mean over R = 200 releases is
    close to normal (CLT), so |ratio - 1| <= 4.9 standard errors (estimated from the sample) fails
    a correct mechanism with probability about 1e-6 (the repo's alpha).  Measured standard errors at
    R = 200: 1.4-2.4% for h, hierarchical and hb, 5-7% for identity (its all-range error is
    dominated by the long ranges of a random walk: few effective degrees of freedom).  The
    estimated s.e. itself varies from run to run, so the sanity cap that keeps the tolerance
    meaningful is loose (4.9 s.e. below 20% for the trees, 80% for identity; typical values are
    8% and 30%).  At 1000 releases the 5% target of issue 15 is checked by ``--check-expected``.
    """
    rows = E.check_expected(domain=4096, epsilon=0.1, repetitions=200, progress=False)
    for r in rows:
        tol = 4.9 * r["ratio_se"]
        assert tol < (0.80 if r["algorithm"] == "identity" else 0.20), r
        assert abs(r["ratio"] - 1) <= tol, r


def test_tables_follow_the_workloads_asked(tmp_path):
    res = _run(tmp_path, 1, workloads=["prefix"], algorithms=["identity", "ordered"])
    assert "workload 'prefix'" in res.table and "no rows" not in res.table
    assert "workload `prefix`" in res.markdown_path.read_text()


def test_bench_command_exit_status_is_the_benchmarks(capsys):
    from blowfish_privacy.cli import main

    # 3 cells per axis passes the option's check (a whole number in 2..4096) and is refused by the run
    # (it must divide 4096): the run's status 2 is the command's
    assert main(["bench", "dpbench", "--datasets", D.SYNTHETIC, "--domains", "3"]) == 2
    assert "domain 3: must divide 4096" in capsys.readouterr().err


@pytest.mark.parametrize("argv,what", [
    (["--scales", "1.5"], "whole number"),
    (["--scales", "1e20"], "scales"),
    (["--queries", "0"], "queries"),
    (["--queries", "-3"], "queries"),
])
def test_bad_options_are_refused_by_name(tmp_path, capsys, argv, what):
    import argparse

    p = argparse.ArgumentParser()
    B.add_arguments(p)
    try:
        args = p.parse_args(["--datasets", D.SYNTHETIC, "--out", str(tmp_path)] + argv)
    except SystemExit:
        assert what in capsys.readouterr().err
        return
    assert B.run_from_args(args) == 2
    assert what in capsys.readouterr().err


def test_list_shows_the_dimension_asked(capsys):
    import argparse

    p = argparse.ArgumentParser()
    B.add_arguments(p)
    assert B.run_from_args(p.parse_args(["--list", "--dims", "2"])) == 0
    out = capsys.readouterr().out
    assert "2-D" in out and "1-D" not in out
