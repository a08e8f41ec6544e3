"""DPBench's own protocol: the range sampler's law, the all-ranges error in closed form, the
neighbour conversion and the reference check (on a reference file written here, so no data needed)."""

import csv

import numpy as np
import pytest
from scipy import stats

from blowfish_privacy.experiments import dpbench as B
from blowfish_privacy.experiments import _dpbench_algorithms as A
from blowfish_privacy.experiments import _dpbench_data as D
from blowfish_privacy.experiments import _dpbench_tables as T
from blowfish_privacy.experiments import _dpbench_reference as R


def test_dpbench_ranges_law():
    """Length uniform in 1..k, then the start uniform among the k - length + 1 places (chi-square, alpha 1e-6)."""
    k, n = 7, 70_000
    r = D.random_ranges(k, 1, n, np.random.default_rng(3), "dpbench")
    lo, hi = r.T
    assert (0 <= lo).all() and (lo <= hi).all() and (hi < k).all()
    length = hi - lo + 1
    obs = np.bincount(length, minlength=k + 1)[1:]
    assert stats.chisquare(obs).pvalue > 1e-6
    # every (lo, hi) pair: P = 1/k * 1/(k - len + 1)
    pairs = [(a, b) for a in range(k) for b in range(a, k)]
    expected = np.array([n / k / (k - (b - a)) for a, b in pairs])
    counts = {p: 0 for p in pairs}
    for a, b in zip(lo.tolist(), hi.tolist()):
        counts[(a, b)] += 1
    assert stats.chisquare([counts[p] for p in pairs], expected).pvalue > 1e-6


def test_uniform_endpoint_ranges_law():
    k, n = 5, 50_000
    lo, hi = D.random_ranges(k, 1, n, np.random.default_rng(4), "uniform-endpoints").T
    length = hi - lo + 1
    # two uniform endpoints: P(len = 1) = 1/k, P(len = L > 1) = 2 (k - L + 1) / k^2
    p = np.array([1 / k] + [2 * (k - L + 1) / k**2 for L in range(2, k + 1)])
    assert stats.chisquare(np.bincount(length, minlength=k + 1)[1:], n * p).pvalue > 1e-6


def test_2d_ranges_per_axis_and_refusal():
    r = D.random_ranges(16, 2, 500, np.random.default_rng(5))
    assert r.shape == (500, 4)
    assert (r[:, 0] <= r[:, 1]).all() and (r[:, 2] <= r[:, 3]).all() and r.max() < 16 and r.min() >= 0
    with pytest.raises(ValueError, match="ranges must be one of"):
        D.random_ranges(16, 1, 5, np.random.default_rng(0), "gaussian")


@pytest.mark.parametrize("k", [1, 2, 5, 64])
def test_allranges_closed_form_against_brute_force(k):
    rng = np.random.default_rng(k)
    e = rng.normal(size=k) * 10 ** rng.integers(0, 6)
    cum = np.cumsum(e)
    sums = np.array([e[i:j + 1].sum() for i in range(k) for j in range(i, k)])
    l1, mse, n = D.allranges_1d(cum)
    assert n == k * (k + 1) // 2 == sums.size
    assert l1 == pytest.approx(np.abs(sums).mean(), rel=1e-9)
    assert mse == pytest.approx((sums ** 2).mean(), rel=1e-9)


def test_allranges_large_domain_is_not_quadratic():
    e = np.random.default_rng(0).normal(size=1 << 20)
    l1, mse, n = D.allranges_1d(np.cumsum(e))   # 5.5e11 ranges: only the closed form can do this
    assert n == (1 << 20) * ((1 << 20) + 1) // 2 and l1 > 0 and mse > 0


def test_neighbour_conversion():
    dp = A.ALGORITHMS[(1, "identity")]
    bf = A.ALGORITHMS[(1, "ordered")]
    assert B.plan_epsilon(dp, 0.1, "unbounded") == pytest.approx(0.2)
    assert B.plan_epsilon(dp, 0.1, "bounded") == 0.1
    assert B.plan_epsilon(bf, 0.1, "unbounded") == 0.1   # Blowfish neighbours are bounded by definition


def _run(tmp_path, **kw):
    opts = dict(dims=1, datasets=[D.SYNTHETIC], scales=[1000], domains=[256], epsilons=[1.0], repetitions=1,
                out_dir=tmp_path, progress=False, plot=False, queries=50, data_dir=tmp_path / "nodata",
                algorithms=["identity"], workloads=["random"])
    opts.update(kw)
    return B.run(**opts)


def test_protocol_columns_and_resuming_per_protocol(tmp_path):
    a = _run(tmp_path)
    b = _run(tmp_path, ranges="uniform-endpoints")
    c = _run(tmp_path, neighbours="unbounded")
    assert a.new_rows == b.new_rows == c.new_rows == 1       # another protocol is another row, not a resume
    assert _run(tmp_path, neighbours="unbounded").new_rows == 0
    with open(tmp_path / "dpbench_1d.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["ranges"], r["neighbours"]) for r in rows] == [
        ("dpbench", "bounded"), ("uniform-endpoints", "bounded"), ("dpbench", "unbounded")]
    # the table shows this run's protocol only
    assert [r["neighbours"] for r in c.rows] == ["unbounded"]
    with pytest.raises(ValueError, match="neighbours must be one of"):
        _run(tmp_path, neighbours="add-remove")


def test_unbounded_runs_dp_baselines_at_twice_epsilon(tmp_path, monkeypatch):
    import dataclasses

    seen = []
    for name in ("identity", "ordered"):
        alg = A.ALGORITHMS[(1, name)]

        def plan(k, e, _orig=alg.plan, _name=name):
            seen.append((_name, e))
            return _orig(k, e)

        monkeypatch.setitem(A.ALGORITHMS, (1, name), dataclasses.replace(alg, plan=plan))
    _run(tmp_path, neighbours="unbounded", algorithms=["identity", "ordered"], epsilons=[0.25])
    assert sorted(seen) == [("identity", 0.5), ("ordered", 0.25)]


def _write_reference(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(R.REFERENCE_FIELDS)
        w.writerows(rows)


def test_compare_is_a_geometric_mean_of_per_dataset_ratios():
    ref = [R.ReferenceRow(1, "A", 1000, 0.1, "h", 2.0, 1), R.ReferenceRow(1, "B", 1000, 0.1, "h", 1.0, 3),
           R.ReferenceRow(1, "C", 1000, 0.1, "h", 1.0, 3)]          # C: no run of ours, left out
    ours = {(1, "A", 1000, 0.1, "h"): 4.0, (1, "B", 1000, 0.1, "h"): 0.5}
    (row,) = R.compare(ref, ours)
    assert row["datasets"] == 2 and row["ratio"] == pytest.approx(1.0)     # sqrt(2 * 0.5)
    assert row["worst_dataset_ratio"] == 2.0 and row["pass"]
    (row,) = R.compare(ref, {(1, "A", 1000, 0.1, "h"): 4.0})
    assert row["ratio"] == 2.0 and not row["pass"]


def test_read_reference_refuses_bad_files(tmp_path):
    p = tmp_path / "ref.csv"
    p.write_text("dims,dataset\n1,X\n")
    with pytest.raises(ValueError, match="missing column"):
        R.read_reference(p)
    _write_reference(p, [[1, "X", 1000, 0.1, "h", "abc", 1]])
    with pytest.raises(ValueError, match="line 2"):
        R.read_reference(p)
    _write_reference(p, [[3, "X", 1000, 0.1, "h", 1.0, 1]])
    with pytest.raises(ValueError, match="dims must be 1 or 2"):
        R.read_reference(p)
    with pytest.raises(FileNotFoundError) as exc:
        R.read_reference(tmp_path / "absent.csv")
    assert str(tmp_path) not in str(exc.value)


def _fake_data(tmp_path):
    """A data folder with one 1-D data set: the built-in shape under another name."""
    d = tmp_path / "data" / "dpbench_1d"
    d.mkdir(parents=True)
    np.save(d / "TOY.n4096.npy", D.load_shape(D.SYNTHETIC, 1, None))
    return tmp_path / "data"


def test_check_reference_command_passes_and_fails(tmp_path, capsys):
    data = _fake_data(tmp_path)
    ours = B.run(dims=1, datasets=["TOY"], scales=[1000], domains=[4096], epsilons=[0.1], algorithms=["h"],
                 workloads=["random"], repetitions=3, data_dir=data, progress=False, plot=False).rows
    mine = np.mean([r["scaled_l1"] for r in ours])
    ref = tmp_path / "ref.csv"
    # a reference twice ours passes; a reference a fifth of ours fails (exit 1), whatever the noise
    _write_reference(ref, [[1, "TOY", 1000, 0.1, "h", 2 * mine, 1]])
    assert B.main(["--check-reference", str(ref), "--data", str(data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1-D   h" in out and "FAIL" not in out and "within 1.15" in out
    _write_reference(ref, [[1, "TOY", 1000, 0.1, "h", mine / 5, 1]])
    assert B.main(["--check-reference", str(ref), "--data", str(data), "--quiet",
                   "--out", str(tmp_path / "o")]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "1-D h at 1e+03" in out
    with open(tmp_path / "o" / "dpbench_reference_check.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["algorithm"] == "h" and row["pass"] == "False"


def test_check_reference_refusals(tmp_path, capsys):
    data = _fake_data(tmp_path)
    ref = tmp_path / "ref.csv"
    _write_reference(ref, [[1, "ABSENT", 1000, 0.1, "h", 1.0, 1]])
    assert B.main(["--check-reference", str(ref), "--data", str(data), "--quiet"]) == 2
    assert "ABSENT" in capsys.readouterr().err
    _write_reference(ref, [[1, "TOY", 1000, 0.1, "h", 1.0, 1]])
    assert B.main(["--check-reference", str(ref), "--data", str(data), "--algorithms", "nosuch"]) == 2
    assert "no 1-D algorithm" in capsys.readouterr().err
    assert B.main(["--check-reference", str(tmp_path / "absent.csv"), "--data", str(data)]) == 2
    assert str(tmp_path) not in capsys.readouterr().err


@pytest.mark.slow
def test_baselines_hold_against_the_dpbench_reference():
    """Every 1-D DP baseline against the DPBench reference errors (shared data; skipped without it).

    The command's target is ours / reference <= 1.15; single reference runs are noisy (a plain Laplace
    identity reads 0.96-1.17 across runs), so this regression guard fails above 1.35: a baseline that
    loses its published strength (MWEM on dyadic ranges read 2-13, AHP and DAWA 1.4-1.7) is caught.
    """
    data = D.default_data_dir()
    ref = None if data is None else data / "dpbench_reference" / "reference_scaled_l1.csv"
    if ref is None or not ref.is_file() or not (data / "dpbench_1d").is_dir():
        pytest.skip("the DPBench data and reference errors (../shared/data) are not on this machine")
    rows = B.check_reference(ref, dims=(1,), repetitions=2, data_dir=data, progress=False)
    assert {r["algorithm"] for r in rows} >= {"identity", "h", "hb", "privelet", "dawa", "greedyh", "mwem", "ahp"}
    weak = [(r["algorithm"], r["scale"], round(r["ratio"], 2)) for r in rows if r["ratio"] > 1.35]
    assert not weak, weak


def test_read_reference_names_the_file_and_line_of_bad_bytes_and_values(tmp_path):
    p = tmp_path / "ref.csv"
    p.write_bytes(b"\x00\xff\xfe not a csv")
    with pytest.raises(ValueError, match="ref.csv") as exc:
        R.read_reference(p)
    assert str(tmp_path) not in str(exc.value)
    for row in ([1, "X", 1000, "nan", "h", 1.0, 1], [1, "X", 1000, -1, "h", 1.0, 1], [1, "X", 1000, 0.1, "h", 1.0, -3]):
        _write_reference(p, [row])
        with pytest.raises(ValueError, match="ref.csv line 2"):
            R.read_reference(p)


@pytest.mark.parametrize("extra,option", [(["--ranges", "uniform-endpoints"], "--ranges"),
                                          (["--neighbours", "unbounded"], "--neighbours"),
                                          (["--domains", "256"], "--domains"), (["--queries", "10"], "--queries"),
                                          (["--epsilons", "1"], "--epsilons"),
                                          (["--workloads", "prefix"], "--workloads"),
                                          (["--datasets", "TOY"], "--datasets")])
def test_check_reference_refuses_the_protocol_options_it_would_ignore(tmp_path, capsys, extra, option):
    data = _fake_data(tmp_path)
    ref = tmp_path / "ref.csv"
    _write_reference(ref, [[1, "TOY", 1000, 0.1, "h", 1.0, 1]])
    assert B.main(["--check-reference", str(ref), "--data", str(data), "--quiet"] + extra) == 2
    err = capsys.readouterr().err
    assert option in err and str(tmp_path) not in err


def test_unbounded_runs_show_the_dp_baselines_at_the_bounded_epsilon_they_ran_at(tmp_path):
    # under --neighbours unbounded the DP baselines run as 2 eps bounded-DP: a change of one record's value
    # moves the odds by e^(2 eps), not e^eps; the guarantee beside the gains must say so
    c = _run(tmp_path, neighbours="unbounded", algorithms=["identity", "ordered"], epsilons=[0.25])
    text = T.summary_table(c.rows, 1)
    assert "DP baselines at eps 0.5: 1.65 for every pair" in text
    assert "DP, eps 0.25: 1.28 for every pair" not in text
    b = _run(tmp_path / "b", algorithms=["identity", "ordered"], epsilons=[0.25])
    assert "DP, eps 0.25: 1.28 for every pair" in T.summary_table(b.rows, 1)


def test_unbounded_markdown_says_what_the_dp_baselines_guarantee():
    from blowfish_privacy.experiments._dpbench_report import headline_markdown

    rows = [{"dataset": "S", "dims": 1, "scale": 1000, "domain": 256, "workload": "random", "ranges": "dpbench",
             "neighbours": "unbounded", "epsilon": 0.25, "algorithm": a, "policy": p, "privacy": q,
             "repetition": 0, "scaled_l1": v}
            for a, p, q, v in (("identity", "DP", "DP", 0.2), ("ordered", "line", "Blowfish", 0.002))]
    text = headline_markdown(rows, 1, epsilon=0.25)
    assert "0.5-DP under bounded neighbours" in text and "1.65" in text
