"""The whole ``blowfish release`` of one CDF against an insecure script writing the same CSV.

Row ``release``: ``blowfish release`` (plan, aggregate, spend in a new
temporary ledger, measure, write JSON + CSV + the ledger's copy of the
results) of one CDF over 10^7 cells from a CSV of 10^6 rows, against an
insecure numpy/pyarrow script producing the same CSV (columns ``value``
and ``cumulative``): pyarrow ``read_csv``, numpy ``bincount``, ``cumsum``
+ numpy ``laplace``, pyarrow ``write_csv``.  Both run in this process, alternated, best of ``--repeat``.

Row ``writer``: the release's CSV writer alone
(:func:`blowfish_privacy.release.vector_files.write_csv`) on the same kind of
vector (10^7 non-decreasing integer-valued floats), 10^7 fractional floats
(``repr`` text, every value distinct) and 10^7 fractional floats in runs
of 25 equal values (the flats of a CDF after isotonic regression), each
against ``pyarrow.csv.write_csv`` of that vector, and the old pure-Python
writer (``write_csv_reference``) and the Parquet output
(``run.vectors = "parquet"``) on each.

Printed: seconds and ratios (ours / the insecure side).  No timed
assertions: the machine may be shared.

    python benchmarks/bench_release.py [--cells 10000000] [--rows 1000000] [--repeat 3]
    python benchmarks/bench_release.py --before --only release   # the same row with the earlier outputs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from pathlib import Path

SPEC = """
[dataset]
id = "bench-release"
path = "{path}"
total_epsilon = 100

[domain.x]
type = "ordinal"
low = 0
high = {high}

[policies.near]
secrets = "distance_threshold"
theta = 100
metric = "l1"

[[release]]
name = "x-cdf"
kind = "cdf"
attributes = ["x"]
policy = "near"
epsilon = 1
"""


def _data(folder: Path, rows: int, cells: int) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(12345)
    path = folder / "data.csv"
    pcsv.write_csv(pa.table({"x": rng.integers(0, cells, rows)}), str(path))
    (folder / "spec.toml").write_text(SPEC.format(path=path.name, high=cells - 1))
    return path


def _ours(folder: Path, i: int) -> None:
    from blowfish_privacy.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["release", str(folder / "spec.toml"), "--ledger", str(folder / f"l{i}.sqlite"), "--new-ledger",
                     "--out", str(folder / f"o{i}"), "--no-plots", "--quiet"])
    assert code == 0, code


def _insecure(folder: Path, i: int, cells: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    x = pcsv.read_csv(str(folder / "data.csv")).column("x").to_numpy()
    cum = np.cumsum(np.bincount(x, minlength=cells)) + np.random.default_rng().laplace(0, 100.0, cells)
    pcsv.write_csv(pa.table({"value": np.arange(cells), "cumulative": cum}), str(folder / f"insecure{i}.csv"))


def _pack_all_deflated(doc: dict, vectors: dict) -> bytes:
    """The ledger's result blob as written before the layouts of :func:`_ledger_blob.pack_result`: every member
    a deflated (level 1) ``.npy``."""
    import json
    import zipfile

    import numpy as np

    buf = io.BytesIO()
    arrays = {"__doc__": np.array(json.dumps(doc, default=str))}
    arrays.update({f"v_{k}": np.asarray(v) for k, v in vectors.items()})
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, arr, allow_pickle=False)
    return buf.getvalue()


def _best_alternated(sides: dict, repeat: int) -> dict:
    best = {k: float("inf") for k in sides}
    for i in range(repeat):
        for name, fn in sides.items():
            t = time.perf_counter()
            fn(i)
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def _writer_rows(folder: Path, cells: int, repeat: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from blowfish_privacy.release import vector_files

    rng = np.random.default_rng(7)
    integral = np.cumsum(rng.integers(0, 3, cells)).astype(np.float64)  # a CDF after inference: whole counts
    fractional = np.cumsum(rng.random(cells))  # repr text for every cell

    def write(fn, vec, name):
        with open(folder / name, "w", encoding="utf-8", newline="") as fh:
            fn(fh, {"cumulative": vec})

    flats = np.repeat(np.cumsum(rng.random(-(-cells // 25))), 25)[:cells]  # runs of 25 equal fractional values
    for label, vec in (("integer-valued", integral), ("fractional", fractional), ("flat runs", flats)):
        sides = {
            "ours": lambda i, v=vec: write(vector_files.write_csv, v, "w_ours.csv"),
            "pyarrow": lambda i, v=vec: pcsv.write_csv(pa.table({"cumulative": v}), str(folder / "w_pa.csv")),
            "old": lambda i, v=vec: write(vector_files.write_csv_reference, v, "w_old.csv"),
            "parquet": lambda i, v=vec: _write_binary(vector_files.write_parquet, v, folder / "w.parquet"),
        }
        t = _best_alternated(sides, repeat)
        extra = (f"  old {t['old']:.2f} s ({t['old'] / t['pyarrow']:.2f}x)"
                 f"  ours as Parquet {t['parquet']:.2f} s ({t['parquet'] / t['pyarrow']:.2f}x)")
        print(f"writer  {label:15} ours {t['ours']:.2f} s  pyarrow write_csv {t['pyarrow']:.2f} s  "
              f"ratio {t['ours'] / t['pyarrow']:.2f}x{extra}", flush=True)


def _write_binary(fn, vec, path: Path) -> None:
    with open(path, "wb") as fh:
        fn(fh, {"cumulative": vec})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, default=10**7)
    ap.add_argument("--rows", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=("release", "writer"), help="one row only")
    ap.add_argument("--before", action="store_true",
                    help="the release row with the earlier outputs: the pure-Python CSV writer "
                         "(write_csv_reference) and every ledger member deflated")
    args = ap.parse_args()
    # the editable install's rebuild check, outside the clock
    from blowfish_privacy.release import runner, vector_files

    if args.before:  # runner writes through the names it imported: replace them there
        runner.write_csv = vector_files.write_csv_reference
        runner.pack_result = _pack_all_deflated

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        folder = Path(tmp)
        _data(folder, args.rows, args.cells)
        if args.only in (None, "release"):
            _ours(folder, 99)  # warm-up: imports, first-touch of the modules (not timed)
            t = _best_alternated({"ours": lambda i: _ours(folder, i),
                                  "insecure": lambda i: _insecure(folder, i, args.cells)}, args.repeat)
            print(f"release {args.cells:.0e} cells, {args.rows:.0e} rows: ours {t['ours']:.2f} s  insecure "
                  f"{t['insecure']:.2f} s  ratio {t['ours'] / t['insecure']:.2f}x", flush=True)
        if args.only in (None, "writer"):
            _writer_rows(folder, args.cells, args.repeat)


if __name__ == "__main__":
    main()
