"""Long vectors as Parquet (``run.vectors = "parquet"``): the same values as the CSV, exported again byte for byte."""

import io
import json

import numpy as np
import pytest

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger, SpecError, parse_spec
from blowfish_privacy.release import vector_files

pa = pytest.importorskip("pyarrow", reason="Parquet output needs pyarrow (the parquet extra)")
pq = pytest.importorskip("pyarrow.parquet", reason="Parquet output needs pyarrow (the parquet extra)")

SPEC = """
[dataset]
id = "long"
path = "data.csv"
total_epsilon = 10
allow_disclosures = true

[domain.x]
type = "ordinal"
low = 0
high = 4999

[policies.near]
secrets = "distance_threshold"
theta = 50

[[release]]
name = "x-cdf"
kind = "cdf"
attributes = ["x"]
policy = "near"
epsilon = 1

[[release]]
name = "x-counts"
kind = "histogram"
attributes = ["x"]
policy = "near"
epsilon = 1

[run]
{run}
"""


def _folder(tmp_path, run: str):
    rng = np.random.default_rng(3)
    (tmp_path / "data.csv").write_text("x\n" + "\n".join(map(str, rng.integers(0, 5000, 3000))) + "\n")
    (tmp_path / "spec.toml").write_text(SPEC.format(run=run))
    return tmp_path


def _release(folder, out, *extra):
    return main(["release", str(folder / "spec.toml"), "--ledger", str(folder / "l.sqlite"), "--out",
                 str(folder / out), "--no-plots", "--quiet", *extra])


def test_parquet_holds_the_csv_values(tmp_path):
    folder = _folder(tmp_path, 'seed = 5\nvectors = "parquet"')
    assert _release(folder, "pq", "--new-ledger", "--seeded-test") == 0
    (folder / "spec.toml").write_text(SPEC.format(run="seed = 5"))
    assert _release(folder, "csv", "--seeded-test") == 0
    for name in ("x-cdf", "x-counts"):
        doc = json.loads((folder / "pq" / f"{name}.json").read_text())
        assert doc["vectors_format"] == "parquet" and doc["vectors_file"] == f"{name}.parquet"
        assert not (folder / "pq" / f"{name}.csv").exists()
        table = pq.read_table(folder / "pq" / f"{name}.parquet")
        text = (folder / "csv" / f"{name}.csv").read_text().splitlines()
        assert table.column_names == text[0].split(",")
        # the same seeded noise: every column equals the CSV's, cell by cell, and keeps its type
        for j, col in enumerate(table.column_names):
            values = table.column(col).to_numpy()
            assert values.size == len(text) - 1 == 5000
            assert np.array_equal(values, np.array([float(row.split(",")[j]) for row in text[1:]]))


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_ledger_exports_the_same_bytes(tmp_path, capsys, fmt):
    folder = _folder(tmp_path, f'vectors = "{fmt}"')
    assert _release(folder, "o", "--new-ledger") == 0
    run = Ledger(folder / "l.sqlite").runs()[0]["run"]
    capsys.readouterr()
    assert main(["ledger", "export", run, str(folder / "l.sqlite"), "--out", str(folder / "again")]) == 0
    for name in ("x-cdf", "x-counts"):
        doc = json.loads((folder / "o" / f"{name}.json").read_text())
        assert doc["vectors_format"] == fmt and doc["vectors_file"] == f"{name}.{fmt}"
        assert json.loads((folder / "again" / f"{name}.json").read_text()) == doc
        assert (folder / "again" / f"{name}.{fmt}").read_bytes() == (folder / "o" / f"{name}.{fmt}").read_bytes()
    assert sorted(p.name for p in (folder / "o").iterdir()) == sorted(
        [f"{n}.{e}" for n in ("x-cdf", "x-counts") for e in ("json", fmt)] + ["summary.json"])


@pytest.mark.parametrize("value", ['"xlsx"', '"CSV"', "1", "true"])
def test_an_unknown_vectors_format_is_refused_with_its_key(tmp_path, value):
    with pytest.raises(SpecError, match=r"run\.vectors") as err:
        parse_spec(SPEC.format(run=f"vectors = {value}"), str(_folder(tmp_path, "") / "s.toml"), base_dir=tmp_path)
    assert "csv" in str(err.value) and "parquet" in str(err.value)


def test_parquet_without_pyarrow_is_refused_when_the_spec_is_read(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    with pytest.raises(SpecError, match=r"run\.vectors.*pyarrow.*blowfish-privacy\[parquet\]"):
        parse_spec(SPEC.format(run='vectors = "parquet"'), str(_folder(tmp_path, "") / "s.toml"), base_dir=tmp_path)


def test_shorter_vectors_are_padded_with_nulls_and_labels_kept_as_text():
    buf = io.BytesIO()
    vectors = {"a": np.arange(5, dtype=np.float64) / 3, "b": np.array([True, False]), "c": np.array(["x", "y,z"]),
               "d": np.array([-(2**63), 2**63 - 1], dtype=np.int64)}
    vector_files.write_parquet(buf, vectors)
    table = pq.read_table(pa.BufferReader(buf.getvalue()))
    assert table.column_names == ["a", "b", "c", "d"] and table.num_rows == 5
    assert table.column("a").to_pylist() == (np.arange(5) / 3).tolist()
    assert table.column("b").to_pylist() == [True, False, None, None, None]
    assert table.column("c").to_pylist() == ["x", "y,z", None, None, None]
    assert table.column("d").to_pylist() == [-(2**63), 2**63 - 1, None, None, None]
    again = io.BytesIO()
    vector_files.write_parquet(again, vectors)
    assert again.getvalue() == buf.getvalue()
