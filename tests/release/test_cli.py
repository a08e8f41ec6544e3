"""Each `blowfish` subcommand end to end on the bundled data."""

import argparse
import importlib.util
import json
import math
import subprocess
import sys

import pytest

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger, load_spec

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAVE_MPL, reason="needs matplotlib (pip install 'blowfish-privacy[plot]')")


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    here = tmp_path_factory.mktemp("demo")
    old = __import__("os").getcwd()
    __import__("os").chdir(here)
    try:
        assert main(["demo", "--quiet"]) == 0
    finally:
        __import__("os").chdir(old)
    return here / "blowfish-demo"


@pytest.mark.slow
def test_demo_writes_json_png_and_its_spec(demo_dir):
    names = {p.name for p in demo_dir.iterdir()}
    for rel in ("capital-loss-cdf", "capital-loss-cdf-dp", "age-histogram"):
        assert f"{rel}.json" in names and (f"{rel}.png" in names or not HAVE_MPL)
        doc = json.loads((demo_dir / f"{rel}.json").read_text())
        assert doc["secure"] is True and doc["seeded"] is False
        assert 0 < doc["epsilon_spent"] <= doc["epsilon_requested"] == 0.5
        assert doc["library_version"] and len(doc["spec_sha256"]) == 64
        assert "value" in doc["sensitivity"] and "how" in doc["sensitivity"]
        assert doc["expected_error"]
    cdf = json.loads((demo_dir / "capital-loss-cdf.json").read_text())
    assert cdf["sensitivity"]["value"] == 100  # theta = 100 values of capital loss
    assert cdf["vectors_file"] == "capital-loss-cdf.csv"  # 4,357 values go to CSV
    rows = (demo_dir / "capital-loss-cdf.csv").read_text().splitlines()
    assert rows[0] == "value,cumulative" and len(rows) == 4358
    assert float(rows[-1].split(",")[1]) == 48842  # ends at the public n
    hist = json.loads((demo_dir / "age-histogram.json").read_text())
    assert len(hist["counts"]) == 15 and hist["value"][:2] == [17, 22]
    assert hist["value_high"][:2] == [21, 26] and hist["value_high"][-1] == 90  # bins by their ranges
    assert hist["expected_error"]["rmse"] == pytest.approx(hist["expected_error"]["per_cell_variance"] ** 0.5)
    dp = json.loads((demo_dir / "capital-loss-cdf-dp.json").read_text())
    oh_err = cdf["expected_error"]["range_query_mse_before_inference"]
    assert dp["expected_error"]["range_query_mse_before_inference"] > 2 * oh_err
    assert load_spec(demo_dir / "spec.toml").dataset_id == "uci-adult-demo"
    assert dp["privacy_model"] == "DP" and cdf["privacy_model"] == "Blowfish" and "plain (bounded) DP" in dp[
        "privacy_model_note"]


@needs_matplotlib
def test_demo_draws_blowfish_and_dp_on_one_figure(demo_dir):
    assert (demo_dir / "demo-comparison.png").stat().st_size > 20_000


def test_demo_console_summary(tmp_path, capsys):
    assert main(["demo", "--quiet", "--no-plots", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "capital-loss-cdf-dp: cdf of capital_loss -- plain DP (baseline), epsilon 0.5" in out
    assert "Blowfish, policy 'loss_within_100'" in out
    assert "noise S (" in out and "scale 16 (sensitivity 8, eps 0.5)" in out  # the scales actually used
    assert "expected error: RMSE" in out and "of a range count" in out and "of one count" in out
    assert "counts 17-21: " in out


def test_release_of_the_demo_spec_then_ledger(demo_dir, tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    out = tmp_path / "out"
    code = main(["release", str(demo_dir / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out", str(out),
                 "--no-plots", "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "released 3 statistics of 'uci-adult-demo'" in printed
    assert not list(out.glob("*.png"))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["remaining_epsilon"] == 0 and len(summary["releases"]) == 3

    # the whole budget is spent: a second run is refused, spends nothing, writes nothing
    out2 = tmp_path / "out2"
    code = main(["release", str(demo_dir / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out", str(out2)])
    err = capsys.readouterr().err
    assert code == 2 and "only 0 of 1.5 remains" in err and not out2.exists()
    assert err.startswith(f"blowfish: error: {demo_dir / 'spec.toml'}: dataset: ") and str(ledger) in err

    assert main(["ledger", str(ledger), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    entry = data["uci-adult-demo"]
    assert (entry["total"], entry["spent"], entry["remaining"]) == (1.5, 1.5, 0)
    assert [e["release"] for e in entry["entries"]] == ["capital-loss-cdf", "capital-loss-cdf-dp", "age-histogram"]
    assert "differential privacy baseline" in entry["entries"][1]["policy"]

    assert main(["ledger", str(ledger)]) == 0
    text = capsys.readouterr().out
    assert ("dataset 'uci-adult-demo': epsilon 1.5 spent of 1.5 under policy demo_protection" in text
            and "(remaining 0); no non-private disclosures" in text)


def test_default_ledger_location(demo_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "xdg"))
    assert main(["release", str(demo_dir / "spec.toml"), "--out", str(tmp_path / "o"), "--no-plots",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["ledger", "--json"]) == 0
    assert "uci-adult-demo" in json.loads(capsys.readouterr().out)


def test_explain(demo_dir, capsys):
    assert main(["explain", str(demo_dir / "spec.toml")]) == 0
    out = capsys.readouterr().out
    assert "policy 'loss_within_100' on ['capital_loss']" in out
    assert "policy 'age_within_stage' on ['age']" in out
    assert "Expected error of one random range count at epsilon 0.5, as RMSE in counts" in out  # the mechanisms' part
    assert "asks for epsilon 1.5 of the dataset's total 1.5" in out


@pytest.mark.slow
def test_bench_range_queries(tmp_path, capsys):
    assert main(["bench", "range-queries", "--out", str(tmp_path / "rq"), "--repetitions", "1", "--quiet"]) == 0
    assert (tmp_path / "rq" / "range_queries.csv").exists()
    assert (tmp_path / "rq" / "range_queries.png").exists() or not HAVE_MPL


def test_bench_errors(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("BLOWFISH_DPBENCH_DIR", raising=False)
    monkeypatch.setenv("BLOWFISH_DATA", str(tmp_path / "absent"))  # not ../shared/data beside the checkout
    assert main(["bench", "histograms"]) == 2
    assert "needs --data" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["bench", "nope"])
    assert info.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_every_option_has_help_and_every_command_an_example():
    from blowfish_privacy.cli import build_parser

    ap = build_parser()
    sub = next(a for a in ap._actions if a.dest == "command")
    parsers = dict(sub.choices)
    bench = parsers["bench"]
    parsers.update({f"bench {k}": v for k, v in next(a for a in bench._actions if a.dest == "bench").choices.items()
                    if k in ("range-queries", "kmeans", "histograms", "dpbench")})
    for name, p in parsers.items():
        assert p.epilog and "example" in p.epilog, name
        for action in p._actions:
            assert action.help, (name, action.dest)
    # one name per idea: repetitions everywhere
    for name in ("bench range-queries", "bench kmeans", "bench histograms"):
        opts = {o for a in parsers[name]._actions for o in a.option_strings}
        assert {"--repetitions", "--out", "--epsilons", "--quiet"} <= opts and "--trials" not in opts, name
    # one progress flag across commands: --quiet (dpbench's old --no-progress is taken but not listed)
    for name in ("demo", "release", "bench range-queries", "bench kmeans", "bench histograms", "bench dpbench"):
        listed = {o for a in parsers[name]._actions if a.help != argparse.SUPPRESS for o in a.option_strings}
        assert "--quiet" in listed and "--no-progress" not in listed, name


@pytest.mark.slow
def test_python_dash_m_runs_the_command():
    p = subprocess.run([sys.executable, "-m", "blowfish_privacy", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "usage: blowfish" in p.stdout and "examples:" in p.stdout


def test_ledger_shows_how_a_parallel_group_was_counted(workdir, capsys):
    spec = importlib.util.spec_from_file_location("_test_parallel", __file__.replace("test_cli.py", "test_parallel.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    GROUP = mod.GROUP

    (workdir / "spec.toml").write_text(GROUP)
    ledger = workdir / "l.sqlite"
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out",
                 str(workdir / "o"), "--no-plots", "--quiet"]) == 0
    f = json.loads((workdir / "o" / "age-f.json").read_text())
    assert f["shape"] == [1, 100] and len(f["counts"]) == 100  # only the selected cells
    assert f["cell_sex"] == ["f"] * 100 and "known zeros" in f["selected_cells"]
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    text = capsys.readouterr().out
    assert "parallel group by-sex@" in text and "2 releases (age-f, age-m)" in text
    assert "counted once at their largest epsilon 0.5, not their sum 0.9" in text


def test_seeded_release_is_reproducible_and_says_so(workdir, capsys):
    from release_specs import SEEDED

    (workdir / "spec.toml").write_text((workdir / "spec.toml").read_text() + SEEDED)
    # a seeded spec is a test: refused without --seeded-test, nothing spent
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / "o"), "--no-plots", "--quiet"]) == 2
    assert "run.seed" in capsys.readouterr().err and not (workdir / "o").exists()
    outs = []
    for k in range(2):
        assert main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / f"l{k}.sqlite"), "--new-ledger",
                     "--out", str(workdir / f"o{k}"), "--no-plots", "--quiet", "--seeded-test"]) == 0
        outs.append(json.loads((workdir / f"o{k}" / "age-sex.json").read_text()))
        s = Ledger(workdir / f"l{k}.sqlite").summary()["people"]  # a test run spends nothing, and is recorded
        assert s["spent"] == 0 and s["disclosures"] == 1 and not s["entries"][0]["private"]
    console = capsys.readouterr().out
    assert "NOT private" in console and "nothing spent, recorded as a disclosure" in console
    assert outs[0]["counts"] == outs[1]["counts"]
    assert outs[0]["seeded"] is True and outs[0]["secure"] is False
    assert outs[0]["privacy"].startswith("seeded: NOT private")
    summary = json.loads((workdir / "o0" / "summary.json").read_text())
    assert summary["privacy"].startswith("seeded: NOT private")
    assert outs[0]["epsilon_charged"] == 0 and outs[0]["guarantee_text"].startswith("NONE: a seeded test run")
    # the plan of a seeded spec says so and spends nothing; a seeded run needs a ledger (it is recorded there)
    assert main(["plan", str(workdir / "spec.toml")]) == 0
    out = capsys.readouterr().out
    assert "NOT private" in out and "0.5 after" not in out and "disclosure" in out
    missing = workdir / "never.sqlite"
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(missing), "--out", str(workdir / "o9"),
                 "--no-plots", "--quiet", "--seeded-test"]) == 2
    assert not missing.exists() and "does not exist" in capsys.readouterr().err
    cdf = json.loads((workdir / "o0" / "age-cdf.json").read_text())
    assert cdf["sensitivity"]["value"] == 5 and len(cdf["ranges"]) == 1 and len(cdf["quantiles"]) == 1
    # partition by sex: the histogram over (sex, age) still has sensitivity 2 (an age can move within a sex)
    assert outs[0]["sensitivity"]["value"] == 2 and outs[0]["shape"] == [2, 100]


def test_sum_and_pufferfish_kinds(workdir):
    text = (workdir / "spec.toml").read_text().split("[[release]]")[0] + """
[[release]]
name = "age-sum"
kind = "sum"
attributes = ["age"]
policy = "near"
epsilon = 0.25

[[release]]
name = "age-puff"
kind = "pufferfish_sum"
attributes = ["age"]
epsilon = 0.25
absolute_error = 10

[run]
seed = 3
"""
    (workdir / "spec.toml").write_text(text)
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / "o"), "--quiet", "--seeded-test"]) == 0
    s = json.loads((workdir / "o" / "age-sum.json").read_text())
    assert s["sensitivity"]["value"] == 5 and isinstance(s["value"], int)
    assert "raw values" in s["summed"] and s["expected_error"]["rmse"] > 0
    p = json.loads((workdir / "o" / "age-puff.json").read_text())
    assert p["sensitivity"]["value"] == 65 and p["policy"]["name"] is None and math.isfinite(p["value"])


def test_sum_of_a_binned_attribute_adds_the_raw_values(workdir):
    """Not the bin lower edges: the raw (clamped) values, calibrated to S on the edges + bin_width - 1."""
    text = (workdir / "spec.toml").read_text().split("[[release]]")[0].replace(
        "high = 99\n", "high = 99\nbin_width = 10\n", 1) + """
[[release]]
name = "age-sum"
kind = "sum"
attributes = ["age"]
policy = "near"
epsilon = 1.0

[run]
seed = 5
"""
    (workdir / "spec.toml").write_text(text)
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / "o"), "--quiet", "--no-plots", "--seeded-test"]) == 0
    s = json.loads((workdir / "o" / "age-sum.json").read_text())
    from release_specs import people

    age, _ = people()
    # theta = 5 joins no two bins of width 10: S on the edges is 0, the raw values inside a bin differ by <= 9
    assert s["sensitivity"] == {"value": 9, "exact": False, "how": s["sensitivity"]["how"]}
    assert "bin_width - 1" in s["sensitivity"]["how"] and s["n"] == len(age)
    scale = float(s["noise_parts"][0]["scale"].split("/")[0]) / float((s["noise_parts"][0]["scale"] + "/1").split("/")[1])
    assert abs(s["value"] - int(age.sum())) < 60 * scale  # centred on the raw sum, not on the bin edges
    assert int(age.sum()) - int((age // 10 * 10).sum()) > 60 * scale  # (the edges would be far off)


def test_an_interrupt_wrapped_by_a_class_body_is_an_interrupt(monkeypatch, capsys):
    # Ctrl-C inside an import that defines classes (matplotlib's) arrives as RuntimeError("Error calling
    # __set_name__ ...") from the KeyboardInterrupt: the command reports an interrupt (130), not a traceback
    from blowfish_privacy import cli

    class Raises:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def interrupted(args):
        type("Defined", (), {"attr": Raises()})

    def other(args):
        raise RuntimeError("not an interrupt")

    for func, code in ((interrupted, 130), (other, None)):
        parsed = type("Args", (), {"func": staticmethod(func)})
        monkeypatch.setattr(cli, "build_parser", lambda: type("P", (), {"parse_args": lambda self, a: parsed})())
        if code is None:
            with pytest.raises(RuntimeError, match="not an interrupt"):
                cli.main([])
        else:
            assert cli.main([]) == code
            assert "interrupted" in capsys.readouterr().err
