"""release() from Python refuses every bad argument in Python words (the parameter, the value, what is allowed),
before a ledger is created or a row is read; Accountant states its real rule for the total budget."""

from pathlib import Path

import numpy as np
import pytest

from blowfish_privacy import Accountant
from blowfish_privacy.errors import LedgerError, SpecError
from blowfish_privacy.release import Ledger, LocalEngine, load_spec, release, run_spec
from blowfish_privacy.release.runner import plan_spec

SPEC = """
[dataset]
id = "inputs"
path = "people.csv"
total_epsilon = 1.0
protect = "near"

[domain.age]
type = "ordinal"
low = 0
high = 99

[policies.near]
secrets = "distance_threshold"
theta = 5

[[release]]
name = "ages"
kind = "histogram"
attributes = ["age"]
policy = "near"
epsilon = 0.5
"""


@pytest.fixture
def spec(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "people.csv").write_text("age\n30\n41\n52\n")
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path / "spec.toml"


def _nothing_done(tmp_path: Path) -> None:
    assert not (tmp_path / "l.sqlite").exists() and not (tmp_path / "out").exists()


def test_a_missing_ledger_names_new_ledger_true(spec, tmp_path):
    with pytest.raises(LedgerError) as info:
        release(spec, ledger=tmp_path / "l.sqlite", out_dir=tmp_path / "out")
    msg = str(info.value)
    assert "new_ledger=True" in msg and "--new-ledger" not in msg and "l.sqlite" in msg
    _nothing_done(tmp_path)


def test_an_out_dir_that_is_a_file_names_out_dir(spec, tmp_path):
    (tmp_path / "afile").write_text("mine")
    for out in (tmp_path / "afile", tmp_path / "afile" / "below"):
        with pytest.raises(SpecError) as info:
            release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=out)
        msg = str(info.value)
        assert msg.startswith("out_dir: ") and "--out" not in msg and "is a file, not a folder" in msg
    assert (tmp_path / "afile").read_text() == "mine" and not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize("limit, error, shown", [("1GB", TypeError, "'1GB' of type str"),
                                                 (1.5, TypeError, "1.5 of type float"),
                                                 (True, TypeError, "True of type bool"),
                                                 (-1, ValueError, "got -1"), (0, ValueError, "got 0"),
                                                 (np.int64(-5), ValueError, "got -5")])
def test_memory_limit_is_a_number_of_bytes(spec, tmp_path, limit, error, shown):
    with pytest.raises(error) as info:
        release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "out", memory_limit=limit)
    msg = str(info.value)
    assert msg.startswith("memory_limit must be a number of bytes (an int >= 1") and shown in msg
    assert "GiB available" not in msg and "invalid literal" not in msg
    _nothing_done(tmp_path)


def test_a_memory_limit_in_bytes_is_taken(spec, tmp_path):
    r = release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "out", plots=False,
                memory_limit=np.int64(2**30))
    assert [d["name"] for d in r.releases] == ["ages"]


@pytest.mark.parametrize("ledger", [5, 1.0, b"l.sqlite", ["l.sqlite"]])
def test_ledger_must_be_a_path_or_a_ledger(spec, tmp_path, ledger):
    with pytest.raises(TypeError) as info:
        release(spec, ledger=ledger, new_ledger=True, out_dir=tmp_path / "out")
    msg = str(info.value)
    assert msg.startswith("ledger must be a Ledger or the path of the ledger file (str or os.PathLike), got ")
    assert type(ledger).__name__ in msg and "expected str, bytes" not in msg
    _nothing_done(tmp_path)


def test_a_ledger_object_and_a_str_path_are_taken(spec, tmp_path):
    led = Ledger(tmp_path / "mine.sqlite")
    release(spec, ledger=led, out_dir=tmp_path / "a", plots=False)
    release(spec, ledger=str(tmp_path / "mine.sqlite"), out_dir=str(tmp_path / "b"), plots=False)
    assert led.remaining("inputs") == 0


def test_out_dir_must_be_a_path(spec, tmp_path):
    with pytest.raises(TypeError, match=r"^out_dir must be the path of the output folder \(str or os.PathLike\), "
                                        r"got 5 of type int"):
        release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=5)
    assert not (tmp_path / "l.sqlite").exists()


@pytest.mark.parametrize("flag", ["plots", "overwrite", "allow_seeded", "new_ledger"])
@pytest.mark.parametrize("value", ["no", 0, None, "False"])
def test_flags_must_be_bools(spec, tmp_path, flag, value):
    kw = {"new_ledger": True, flag: value}
    with pytest.raises(TypeError) as info:
        release(spec, ledger=tmp_path / "l.sqlite", out_dir=tmp_path / "out", **kw)
    assert str(info.value) == f"{flag} must be True or False, got {value!r} of type {type(value).__name__}"
    _nothing_done(tmp_path)


def test_progress_is_a_bool_or_none(spec, tmp_path):
    with pytest.raises(TypeError, match=r"^progress must be True, False or None \(on a terminal\), got 'yes'"):
        release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "out", progress="yes")
    _nothing_done(tmp_path)


def test_plots_false_as_a_numpy_bool_writes_no_plots(spec, tmp_path):
    r = release(spec, ledger=tmp_path / "l.sqlite", new_ledger=True, out_dir=tmp_path / "out", plots=np.False_)
    assert r.releases and not list((tmp_path / "out").glob("*.png"))


# -- Accountant ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("total", [-1, 0, 0.0, "0", "-1", float("inf")])
def test_accountant_states_the_real_rule_for_its_total(total):
    with pytest.raises(ValueError) as info:
        Accountant(total)
    msg = str(info.value)
    assert msg.startswith("total_epsilon must be a finite number > 0") and ">= 0" not in msg
    assert repr(total) in msg


@pytest.mark.parametrize("text", ["1/0", "0/0", "abc"])
def test_accountant_refuses_a_bad_fraction_string_by_name(text):
    with pytest.raises(ValueError) as info:
        Accountant(text)
    assert str(info.value) == f'total_epsilon must be a number or a decimal string (e.g. 0.5 or "0.5"), got {text!r}'
    acct = Accountant(1)
    with pytest.raises(ValueError, match=r"^epsilon must be a number or a decimal string"):
        acct.spend(text)
    assert acct.spent == 0


@pytest.mark.parametrize("bad,error", [("1GB", TypeError), (True, TypeError), (0, ValueError), (-1, ValueError)])
def test_plan_spec_and_run_spec_check_memory_limit_as_release_does(spec, tmp_path, bad, error):
    spec = load_spec(spec)
    with pytest.raises(error, match="memory_limit must be a number of bytes"):
        plan_spec(spec, memory_limit=bad)
    with pytest.raises(error, match="memory_limit must be a number of bytes"):
        run_spec(spec, engine=LocalEngine(progress=False), ledger=Ledger(tmp_path / "l.sqlite"), out_dir=tmp_path / "o",
                 memory_limit=bad)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("field,value,message", [
    ("allow_seeded", "no", "allow_seeded must be True or False"),
    ("plots", "no", "plots must be True or False"),
    ("overwrite", "no", "overwrite must be True or False"),
    ("engine", "local", "engine must be an engine object"),
    ("ledger", "x.sqlite", "ledger must be a Ledger"),
    ("spec", "[dataset]\nid = 'x'", "spec must be a parsed spec"),
])
def test_run_spec_checks_what_a_python_caller_passes(spec, tmp_path, field, value, message):
    args = {"spec": load_spec(spec), "engine": LocalEngine(progress=False), "ledger": Ledger(tmp_path / "l.sqlite"),
            "out_dir": tmp_path / "o", field: value}
    with pytest.raises(TypeError, match=message):
        run_spec(args.pop("spec"), **args)
    assert not (tmp_path / "o").exists()


def test_a_small_memory_limit_is_named_in_the_refusal(spec, tmp_path):
    with pytest.raises(SpecError, match=r"GiB of memory_limit; use a coarser domain") as info:
        plan_spec(load_spec(spec), memory_limit=10)
    assert "available" not in str(info.value)
