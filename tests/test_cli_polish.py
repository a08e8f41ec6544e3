"""The command's and the API's messages: a closed pipe, refusals' exit codes, one flag and one error measure
across commands, and messages that name what the user gave (never a value from the data)."""

import argparse
import os
import re
import subprocess
import sys
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from blowfish_privacy import Domain, histogram
from blowfish_privacy.cli import BROKEN_PIPE, main
from blowfish_privacy.errors import DataError, SpecError, TableError
from blowfish_privacy.experiments import _dpbench_data as dpbench_data, dpbench, histograms
from blowfish_privacy.policy._domain_attributes import Categorical, MissingValues, Ordinal
from blowfish_privacy.release import Ledger, LocalEngine, load_spec, release, run_spec

DEMO = resources.files("blowfish_privacy").joinpath("data", "demo.toml").read_text(encoding="utf-8")

# a small spec on a CSV file: 0.6 of a total of 1.0, so a second run is refused
SMALL = """
[dataset]
id = "polish"
path = "people.csv"
total_epsilon = 1.0
protect = "near"

[domain.age]
type = "ordinal"
low = 0
high = 99

[domain.sex]
type = "categorical"
labels = ["f", "m"]

[policies.near]
secrets = "distance_threshold"
theta = 5

[[release]]
name = "ages"
kind = "histogram"
attributes = ["age"]
policy = "near"
epsilon = 0.6
"""

# the editable install's rebuild (in this checkout) prints to stdout unless told not to
QUIET_BUILD = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0"}


def _ours(stderr: str) -> str:
    """stderr without the lines of an editable install's rebuild."""
    return "\n".join(line for line in stderr.splitlines()
                     if not line.startswith(("ninja:", "-- ", "Running cmake")))


def _small(tmp_path, header="age,sex", sep=","):
    rows = [(30, "f"), (41, "m"), (52, "f")]
    (tmp_path / "people.csv").write_text(header + "\n" + "".join(f"{a}{sep}{s}\n" for a, s in rows))
    (tmp_path / "spec.toml").write_text(SMALL)
    return tmp_path / "spec.toml"


# -- 1. a closed stdout ends the command quietly --------------------------------------------------------------

def _into_closed_pipe(*args, cwd):
    """Run ``blowfish ARGS`` with a stdout whose reader is already gone: every write fails."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "blowfish_privacy", *args], check=False, stdout=w, stderr=subprocess.PIPE,
                              text=True, cwd=cwd, env=QUIET_BUILD, timeout=300)
    finally:
        os.close(w)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["plan", "ledger"])
def test_a_closed_stdout_ends_quietly(tmp_path, command):
    (tmp_path / "spec.toml").write_text(DEMO)
    ledger = tmp_path / "budget.sqlite"
    assert main(["ledger", "init", str(ledger), "--spec", str(tmp_path / "spec.toml")]) == 0
    args = {"plan": ["plan", "spec.toml", "--json", "--ledger", str(ledger)],
            "ledger": ["ledger", str(ledger), "--json"]}[command]
    p = _into_closed_pipe(*args, cwd=tmp_path)
    assert _ours(p.stderr) == "" and p.returncode == BROKEN_PIPE == 141


@pytest.mark.slow
def test_piped_into_head_prints_no_traceback(tmp_path):
    # as users run it; whether head has gone before the write is a race, which the closed pipe above is not
    (tmp_path / "spec.toml").write_text(DEMO)
    cmd = f"{sys.executable} -m blowfish_privacy plan spec.toml --json --new-ledger --ledger new.sqlite | head -1"
    p = subprocess.run(["sh", "-c", cmd], check=False, capture_output=True, text=True, cwd=tmp_path, env=QUIET_BUILD, timeout=300)
    assert p.returncode == 0 and p.stdout == "{\n"
    assert _ours(p.stderr) == ""


# -- 2. a dry run the ledger would refuse exits as the refusal does -------------------------------------------

def test_dry_run_exits_nonzero_when_the_ledger_would_refuse(tmp_path, capsys):
    spec = _small(tmp_path)
    ledger = str(tmp_path / "budget.sqlite")
    common = ["--ledger", ledger, "--no-plots", "--quiet"]
    assert main(["release", str(spec), "--new-ledger", "--out", str(tmp_path / "o1"), *common]) == 0
    capsys.readouterr()
    assert main(["release", str(spec), "--dry-run", *common]) == 2
    out, err = capsys.readouterr()
    assert "the ledger would refuse this run" in out
    assert err.startswith("blowfish: error: dataset 'polish': the releases need epsilon 0.6 but only 0.4 of 1")
    assert main(["plan", str(spec), "--ledger", ledger, "--json"]) == 2  # the same in JSON
    capsys.readouterr()
    real = main(["release", str(spec), "--out", str(tmp_path / "o2"), *common])
    assert real == 2 and "only 0.4 of 1 remains" in capsys.readouterr().err  # the exit code of the real refusal


# -- 3. one progress flag: --quiet ----------------------------------------------------------------------------

def test_dpbench_takes_quiet_and_still_its_old_flag(capsys):
    assert dpbench.main(["--list", "--quiet"]) == 0
    assert "1-D" in capsys.readouterr().out
    assert dpbench.main(["--list", "--no-progress"]) == 0
    assert "--no-progress is deprecated: use --quiet" in capsys.readouterr().err
    p = argparse.ArgumentParser()
    dpbench.add_arguments(p)
    assert "--quiet" in p.format_help() and "--no-progress" not in p.format_help()


# -- 4. one error measure: RMSE in counts ---------------------------------------------------------------------

def test_plan_and_demo_print_rmse_in_counts(tmp_path, capsys, monkeypatch):
    (tmp_path / "spec.toml").write_text(DEMO)
    assert main(["plan", str(tmp_path / "spec.toml"), "--new-ledger", "--ledger", str(tmp_path / "l.sqlite")]) == 0
    plan = capsys.readouterr().out
    assert "expected error: RMSE 64.46 counts of a range count" in plan
    assert "RMSE 5.642 counts of one count" in plan
    assert "mse" not in plan.lower().replace("rmse", "") and "variance" not in plan
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--quiet", "--no-plots", "--out", "demo"]) == 0
    demo = capsys.readouterr().out
    assert "(64.5 vs 134 counts;" in demo and " rows;" not in demo
    assert "expected error: RMSE 64.46 counts of a range count" in demo


# -- 5. the Python API speaks Python ---------------------------------------------------------------------------

def test_release_names_the_python_argument_for_a_full_folder(tmp_path):
    spec = _small(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "earlier.json").write_text("{}")
    with pytest.raises(SpecError) as info:
        release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "out")
    msg = str(info.value)
    assert "overwrite=True" in msg and "--overwrite" not in msg and msg.startswith("out_dir: ")
    assert not (tmp_path / "l.sqlite").exists()  # refused before the ledger is made


def test_release_names_the_python_argument_for_a_seeded_spec(tmp_path):
    spec = _small(tmp_path)
    spec.write_text(spec.read_text() + "\n[run]\nseed = 7\n")
    with pytest.raises(SpecError) as info:
        release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "out")
    msg = str(info.value)
    assert "allow_seeded=True" in msg and "--seeded-test" not in msg
    assert not (tmp_path / "l.sqlite").exists() and not (tmp_path / "out").exists()


def test_run_spec_names_both_spellings(tmp_path):
    spec = load_spec(_small(tmp_path))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "earlier.json").write_text("{}")
    with pytest.raises(SpecError) as info:
        run_spec(spec, engine=LocalEngine(progress=False), ledger=Ledger(tmp_path / "l.sqlite"), out_dir=tmp_path / "out")
    assert "--overwrite" in str(info.value) and "overwrite=True in Python" in str(info.value)


# -- 6. missing values are named as such -----------------------------------------------------------------------

MISSING = "has missing values (NaN/null"


def _tables():
    pd = pytest.importorskip("pandas")
    out = [pd.DataFrame({"age": [31.0, np.nan, 45.0]}), pd.DataFrame({"age": pd.array([31, None, 45], dtype="Int64")})]
    try:
        import polars as pl
    except ImportError:
        return out
    return out + [pl.DataFrame({"age": [31, None, 45]})]


def test_histogram_says_missing_values_for_nan_na_and_null():
    for table in _tables():
        with pytest.raises(TableError) as info:
            histogram(table, Domain.ordinal("age", 0, 99))
        msg = str(info.value)
        assert MISSING in msg and "31" not in msg and "45" not in msg, type(table)
        assert "outside the domain" not in msg  # nothing else is wrong with the column


def test_missing_and_out_of_range_values_are_both_named():
    pd = pytest.importorskip("pandas")
    with pytest.raises(TableError) as info:
        histogram(pd.DataFrame({"age": [31.0, np.nan, 450.0]}), Domain.ordinal("age", 0, 99))
    msg = str(info.value)
    assert MISSING in msg and "has values outside the domain or not integers" in msg and "450" not in msg


def test_missing_labels_and_a_label_that_looks_missing():
    pd = pytest.importorskip("pandas")
    dom = Domain([Categorical("sex", ["f", "m"])])
    with pytest.raises(TableError) as info:
        histogram(pd.DataFrame({"sex": ["f", None]}), dom)
    assert "not among the labels ['f', 'm']: missing values (NaN/null" in str(info.value)
    with pytest.raises(TableError) as info:  # "NA" is a label here: the unknown value is not a missing one
        histogram(pd.DataFrame({"sex": ["NA", "x"]}), Domain([Categorical("sex", ["NA", "f"])]))
    assert "missing" not in str(info.value)


def test_domain_encode_says_missing_values():
    dom = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"])])
    for records, attr in [({"age": [31.0, np.nan], "sex": ["f", "m"]}, "age"),
                          ({"age": [31, None], "sex": ["f", "m"]}, "age"),
                          ({"age": [31, 45], "sex": ["f", None]}, "sex")]:
        with pytest.raises(MissingValues) as info:  # a ValueError, said apart
            dom.encode(records)
        assert f"attribute {attr!r} has missing values (NaN/null" in str(info.value)
        assert "31" not in str(info.value)


def test_domain_encode_of_a_table_says_missing_values():
    pd = pytest.importorskip("pandas")
    dom = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"])])
    for table, attr in [(pd.DataFrame({"age": [31.0, np.nan], "sex": ["f", "m"]}), "age"),
                        (pd.DataFrame({"age": pd.array([31, None], dtype="Int64"), "sex": ["f", "m"]}), "age"),
                        (pd.DataFrame({"age": [31, 45], "sex": ["f", None]}), "sex")]:
        with pytest.raises(TableError) as info:
            dom.encode(table)
        msg = str(info.value)
        assert f"attribute {attr!r}: column {attr!r} has missing values (NaN/null; allowed: " in msg
        assert "31" not in msg and "outside the domain" not in msg


def test_release_product_says_missing_values(tmp_path):
    pd = pytest.importorskip("pandas")
    spec = _small(tmp_path)
    spec.write_text(SMALL.replace("[dataset]", '[dataset]\ninvalid = "error"\nallow_disclosures = true'))
    table = pd.DataFrame({"age": [31.0, np.nan], "sex": ["f", "m"]})
    with pytest.raises(DataError) as info:
        release(spec, table, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "o")
    assert "domain.age: column 'age' has missing values (NaN/null" in str(info.value)
    (tmp_path / "people.csv").write_text("age,sex\n31,f\n,m\n")  # an empty cell in a CSV file
    with pytest.raises(DataError) as info:
        release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "o")
    assert "domain.age: column 'age' has missing values" in str(info.value) and "31" not in str(info.value)


# -- 7. a reversed range says so -------------------------------------------------------------------------------

def test_a_reversed_range_is_called_reversed(tmp_path, capsys):
    (tmp_path / "spec.toml").write_text(DEMO.replace("ranges = [[0, 1000], [1500, 2000], [1800, 1999]]\nquantiles",
                                                     "ranges = [[100, 0]]\nquantiles"))
    assert main(["plan", str(tmp_path / "spec.toml")]) == 2
    err = capsys.readouterr().err
    assert "release[0].ranges: element 0 = [100, 0] is reversed (low > high)" in err
    assert "(release 'capital-loss-cdf')" in err and "outside the domain" not in err


# -- 8. a CSV file with another delimiter ----------------------------------------------------------------------

@pytest.mark.parametrize("sep, name", [(";", "';'"), ("\t", "a tab")])
def test_another_delimiter_is_hinted_without_quoting_the_header(tmp_path, capsys, sep, name):
    spec = _small(tmp_path, header=f"age{sep}sex", sep=sep)
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out",
                 str(tmp_path / "o"), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "column 'age' not found" in err
    assert f"the header seems to use {name} as its delimiter: CSV data must be comma-separated" in err
    shown = err.replace(str(tmp_path), "")  # the folder's name may hold any digits (pytest-730)
    assert f"age{sep}sex" not in shown and "30" not in shown


def test_no_delimiter_hint_when_the_names_are_not_there(tmp_path, capsys):
    spec = _small(tmp_path, header="years;sex", sep=";")
    assert main(["plan", str(spec), "--new-ledger", "--ledger", str(tmp_path / "l.sqlite")]) == 0  # nothing read
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out",
                 str(tmp_path / "o"), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "column 'age' not found" in err and "seems to use" not in err


# -- 9. histogram() refuses a domain too large before allocating ------------------------------------------------

def test_histogram_refuses_a_huge_domain_before_allocating():
    dom = Domain.ordinal("x", 0, 10**12 - 1)
    with pytest.raises(ValueError) as info:
        histogram({"x": np.array([1, 2])}, dom)
    msg = str(info.value)
    assert msg.startswith("domain: ") and "1,000,000,000,000 values" in msg and "GiB" in msg
    assert "coarser domain" in msg


# -- 10. huge numbers are printed readably ---------------------------------------------------------------------

LONG = re.compile(r"\d{20,}")


def test_huge_epsilons_are_printed_readably(tmp_path, capsys):
    eps = DEMO.replace('epsilon = 0.5\nmechanism = "ordered_hierarchical"', 'epsilon = 1e300\nmechanism = "ordered_hierarchical"')
    (tmp_path / "eps.toml").write_text(eps)
    assert main(["plan", str(tmp_path / "eps.toml")]) == 2
    err = capsys.readouterr().err
    assert "release[0].epsilon: 1e+300 is above 10" in err and not LONG.search(err)
    both = eps.replace("total_epsilon = 1.5", "total_epsilon = 1e300").replace(
        "mechanism = \"ordered_hierarchical\"", "mechanism = \"ordered_hierarchical\"\nlarge_epsilon = true")
    (tmp_path / "both.toml").write_text(both.replace("epsilon = 0.5\nmechanism = \"hierarchical\"",
                                                     "epsilon = 1e300\nlarge_epsilon = true\nmechanism = \"hierarchical\""))
    assert main(["plan", str(tmp_path / "both.toml")]) == 2
    err = capsys.readouterr().err
    assert "ask for epsilon 2e+300 in total, more than dataset.total_epsilon = 1e+300" in err and not LONG.search(err)
    (tmp_path / "total.toml").write_text(DEMO.replace("total_epsilon = 1.5", "total_epsilon = 1e300"))
    assert main(["explain", str(tmp_path / "total.toml")]) == 0
    out = capsys.readouterr().out
    assert "d=1 10^(4.34e+299)" in out and not LONG.search(out)


def test_a_huge_domain_bound_is_printed_readably(tmp_path, capsys):
    (tmp_path / "high.toml").write_text(DEMO.replace("high = 4356", f"high = {10**300}"))
    assert main(["plan", str(tmp_path / "high.toml")]) == 2
    err = capsys.readouterr().err
    assert "high must be an int in [-(2**62 - 1), 2**62 - 1], got 1.00000e+300 (an integer of 301 digits)" in err
    assert not LONG.search(err)


def test_a_huge_bin_width_is_refused_readably(tmp_path, capsys):
    (tmp_path / "w.toml").write_text(DEMO.replace("high = 4356", f"high = 4356\nbin_width = {10**300}"))
    assert main(["plan", str(tmp_path / "w.toml")]) == 2
    err = capsys.readouterr().err
    assert "domain.capital_loss: bin_width must be an int in [1, 2**62 - 1], got 1.00000e+300" in err
    assert not LONG.search(err)


@pytest.mark.parametrize("bin_width", [None, 2**60])
def test_a_domain_too_large_for_int64_is_a_spec_error_not_a_traceback(tmp_path, capsys, bin_width):
    # binned, the domain fits; its raw values (where the policies speak) do not: refused as the spec's error
    extra = f"high = {2**61}" + ("" if bin_width is None else f"\nbin_width = {bin_width}")
    (tmp_path / "big.toml").write_text(DEMO.replace("high = 4356", extra))
    assert main(["plan", str(tmp_path / "big.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ": domain: attributes span " in err and "at most 2**63 - 1" in err


# -- 11. one environment variable for the benchmarks' data ------------------------------------------------------

def test_histograms_read_blowfish_data_and_the_old_variable_warns(tmp_path, monkeypatch):
    (tmp_path / "dpbench_1d").mkdir()
    monkeypatch.delenv("BLOWFISH_DPBENCH_DIR", raising=False)
    monkeypatch.setenv("BLOWFISH_DATA", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert histograms.default_data_dir() == str(tmp_path / "dpbench_1d")
    monkeypatch.setenv("BLOWFISH_DATA", str(tmp_path / "absent"))
    assert histograms.default_data_dir() is None
    monkeypatch.setenv("BLOWFISH_DPBENCH_DIR", str(tmp_path / "dpbench_1d"))
    with pytest.warns(DeprecationWarning, match="BLOWFISH_DPBENCH_DIR is deprecated: set BLOWFISH_DATA"):
        assert histograms.default_data_dir() == str(tmp_path / "dpbench_1d")


def test_the_package_reads_the_benchmark_data_from_the_variable_only(monkeypatch):
    # no guess at a folder layout beside the installation: unset means "say --data"
    monkeypatch.delenv("BLOWFISH_DATA", raising=False)
    monkeypatch.delenv("BLOWFISH_DPBENCH_DIR", raising=False)
    assert dpbench_data.default_data_dir() is None and histograms.default_data_dir() is None


def test_bench_histograms_names_blowfish_data(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("BLOWFISH_DPBENCH_DIR", raising=False)
    monkeypatch.setenv("BLOWFISH_DATA", str(tmp_path / "absent"))
    assert main(["bench", "histograms", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "$BLOWFISH_DATA (the folder holding dpbench_1d/)" in err and "DPBENCH_DIR" not in err


# -- 12. the demo never replaces the user's files --------------------------------------------------------------

def test_demo_refuses_a_folder_holding_the_users_files(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "spec.toml").write_text("# my own spec\n")
    (out / "summary.json").write_text('{"mine": true}\n')
    assert main(["demo", "--quiet", "--no-plots", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds files the demo did not write (spec.toml, summary.json)" in err
    assert "--overwrite" in err
    assert (out / "spec.toml").read_text() == "# my own spec\n" and (out / "summary.json").read_text() == '{"mine": true}\n'
    assert sorted(p.name for p in out.iterdir()) == ["spec.toml", "summary.json"]


def test_demo_help_and_reference_name_overwrite(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "--overwrite" in capsys.readouterr().out
    text = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "command.md").read_text(encoding="utf-8")
    assert "blowfish demo [-h] [--out DIR] [--no-plots] [--quiet] [--overwrite]" in text
    assert "| `--overwrite` | write into `--out` even if it holds other files" in text


@pytest.mark.slow
def test_demo_runs_again_into_its_own_folder_and_keeps_an_edited_spec(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--quiet", "--no-plots"]) == 0
    assert main(["demo", "--quiet", "--no-plots"]) == 0  # its own earlier output is replaced
    spec = tmp_path / "blowfish-demo" / "spec.toml"
    spec.write_text(spec.read_text() + "\n# my change\n")
    capsys.readouterr()
    assert main(["demo", "--quiet", "--no-plots"]) == 2
    assert "holds files the demo did not write (spec.toml)" in capsys.readouterr().err
    assert spec.read_text().endswith("# my change\n")
    assert main(["demo", "--quiet", "--no-plots", "--overwrite"]) == 0
    assert spec.read_text() == DEMO


# -- 13. explain, plan and demo print one error measure ----------------------------------------------------------

def test_explain_prints_rmse_in_counts_as_plan_does(tmp_path, capsys):
    (tmp_path / "spec.toml").write_text(DEMO)
    assert main(["explain", str(tmp_path / "spec.toml")]) == 0
    out = capsys.readouterr().out
    assert "squared error" not in out.lower() and "4155" not in out
    assert "as RMSE in counts" in out
    row = next(line for line in out.splitlines() if line.startswith("ordered hierarchical vs hierarchical"))
    assert row.split()[4:6] == ["64.46", "133.9"]  # the plan's "RMSE 64.46 counts" and the DP baseline's


# -- 14. option values and ledger actions ------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_workers_below_one_is_refused_by_the_parser(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["release", str(tmp_path / "spec.toml"), "--engine", "dask", "--workers", value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --workers: must be a whole number >= 1, got {value!r}" in err


def test_a_mistyped_ledger_action_lists_the_actions(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["ledger", "frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'frobnicate' is not an action (init, show, export)" in err
    assert "blowfish ledger [PATH] | init PATH | show [PATH] | export RUN [PATH]" in err
    assert main(["ledger", "missing.sqlite"]) == 2  # a path keeps the ledger's own message
    assert "ledger 'missing.sqlite' does not exist" in capsys.readouterr().err
    assert main(["ledger", "init", "budget"]) == 0  # a ledger file named by a bare word still works
    capsys.readouterr()
    assert main(["ledger", "budget"]) == 0
    assert not (tmp_path / "frobnicate").exists()


def test_the_plan_of_a_sum_gives_its_error_in_the_attributes_units(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('[dataset]\nid = "s"\nbundled = "adult"\ntotal_epsilon = 1\n\n[domain.age]\ntype = "ordinal"\n'
                    'low = 17\nhigh = 90\n\n[policies.near]\nsecrets = "distance_threshold"\ntheta = 5\n\n'
                    '[[release]]\nname = "s"\nkind = "sum"\nattributes = ["age"]\nepsilon = 0.5\npolicy = "near"\n')
    assert main(["plan", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "RMSE 14.14 of the released value (in the attribute's units)" in out and "of one count" not in out
