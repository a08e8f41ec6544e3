"""The ledger's copy of a release's results: every layout reads back exactly, old blobs stay readable,
and ``blowfish ledger export`` writes the files of the run again byte for byte."""

import io
import json
import sqlite3
import zipfile

import numpy as np
import pytest
from release_specs import release, spec_toml

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger
from blowfish_privacy.release._ledger_blob import PACK_SAMPLE, pack_result, unpack_result

#: Values enough for a float64 vector to have its layout chosen by sampling (longer than 4 windows).
LONG = 4 * PACK_SAMPLE // 8 + 1000


def _old_blob(doc: dict, vectors: dict) -> bytes:
    """A blob as written before the layouts: every member a deflated (level 1) ``.npy``."""
    buf = io.BytesIO()
    arrays = {"__doc__": np.array(json.dumps(doc, default=str))}
    arrays.update({f"v_{k}": np.asarray(v) for k, v in vectors.items()})
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, arr, allow_pickle=False)
    return buf.getvalue()


def _members(blob: bytes) -> dict:
    return {i.filename: i.compress_type for i in zipfile.ZipFile(io.BytesIO(blob)).infolist()}


def _vectors():
    rng = np.random.default_rng(9)
    return {
        "value": np.arange(LONG),  # shuffled: byte j of consecutive integers barely changes
        "noise": rng.standard_normal(LONG),  # full entropy: stored
        "cumulative": np.repeat(np.cumsum(rng.random(LONG // 500)), 500),  # long flat runs: deflated
        "short": np.array([0.5, -0.0, np.nan]),
        "big_endian": np.arange(4 * LONG, dtype=">i4").reshape(-1, 4)[:, ::-1],  # 2-D, not contiguous
        "f32": np.arange(2 * LONG, dtype=np.float32) / 8,
        "flags": rng.random(LONG) < 0.01,
        "empty": np.array([], dtype=np.int64),
    }


def _same(got: dict, want: dict) -> None:
    assert list(got) == list(want)  # the CSV's column order
    for k, v in want.items():
        v = np.asarray(v)
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        assert np.array_equal(got[k], v, equal_nan=v.dtype.kind == "f"), k
        assert np.array_equal(np.signbit(got[k]), np.signbit(v)) if v.dtype.kind == "f" else True


def test_each_layout_reads_back_exactly_in_order():
    doc = {"name": "r", "x": [1, 2.5, "three"]}
    vectors = _vectors()
    blob = pack_result(doc, vectors)
    members = _members(blob)
    assert members["s_value.npy"] == zipfile.ZIP_DEFLATED and "v_value.npy" not in members
    assert members["v_noise.npy"] == zipfile.ZIP_STORED
    assert members["v_cumulative.npy"] == zipfile.ZIP_DEFLATED and members["v_short.npy"] == zipfile.ZIP_DEFLATED
    assert "s_big_endian.npy" in members and "s_f32.npy" in members
    got_doc, got = unpack_result(blob)
    assert got_doc == doc
    _same(got, vectors)
    assert len(blob) < 0.4 * sum(np.asarray(v).nbytes for v in vectors.values())


def test_a_blob_of_the_earlier_layout_reads_the_same():
    doc = {"name": "old", "kind": "cdf"}
    vectors = _vectors()
    old = _old_blob(doc, vectors)
    assert set(_members(old).values()) == {zipfile.ZIP_DEFLATED} and "__shuffled__.npy" not in _members(old)
    got_doc, got = unpack_result(old)
    assert got_doc == doc
    _same(got, vectors)


def test_small_results_are_deflated_as_before():
    vectors = {"counts": np.arange(50.0), "cells": np.arange(3)}
    blob = pack_result({"n": 1}, vectors)
    assert _members(blob) == {"__doc__.npy": 8, "v_counts.npy": 8, "v_cells.npy": 8}
    _same(unpack_result(blob)[1], vectors)


@pytest.mark.slow
def test_ledger_export_writes_the_run_again_byte_for_byte(tmp_path, capsys):
    rng = np.random.default_rng(4)
    high = LONG + 5000  # the value and cumulative columns take the sampled layouts
    (tmp_path / "d.csv").write_text("x\n" + "\n".join(map(str, rng.integers(0, high, 3000))) + "\n")
    (tmp_path / "spec.toml").write_text(spec_toml(
        {"id": "d", "path": "d.csv", "total_epsilon": 1.0},
        {"x": {"type": "ordinal", "low": 0, "high": high}},
        {"near": {"secrets": "distance_threshold", "theta": 50}},
        [release("x-cdf", "cdf", ["x"], 0.5, "near"), release("x-hist", "histogram", ["x"], 0.5, "near")]))
    led = tmp_path / "l.sqlite"
    assert main(["release", str(tmp_path / "spec.toml"), "--ledger", str(led), "--new-ledger", "--out",
                 str(tmp_path / "o"), "--no-plots", "--quiet"]) == 0
    run = Ledger(led).runs()[0]["run"]
    assert main(["ledger", "export", run, str(led), "--out", str(tmp_path / "again")]) == 0
    capsys.readouterr()
    stored = [bytes(r[0]) for r in sqlite3.connect(led).execute("SELECT payload FROM results")]
    assert any("s_value.npy" in _members(b) for b in stored)  # the shuffled layout went through the ledger

    def files(folder):  # summary.json names its folder; plots are not results
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".csv", ".json")
                and p.name != "summary.json"}

    written, again = files(tmp_path / "o"), files(tmp_path / "again")
    assert {"x-cdf.csv", "x-cdf.json", "x-hist.csv", "x-hist.json"} <= set(written)
    assert again == written
    header = written["x-cdf.csv"].split(b"\n", 1)[0]
    assert header == b"value,cumulative" and written["x-cdf.csv"].count(b"\n") == high + 2
