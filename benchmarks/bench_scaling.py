"""Scaling of the streaming aggregation and of the whole release: time and peak memory, against the best alternative.

Aggregation rows: for each size (10^6, 10^7, 3x10^7 rows; 10^8 with
--huge) a table of two integer columns is written as CSV and as Parquet,
then each measurement runs in its own subprocess (so that the peak RSS,
``ru_maxrss``, is that run's alone):

* ``ours``: ``LocalEngine().aggregate`` of a 100 x 1000 histogram (streaming),
* ``pyarrow``: ``pyarrow.csv.read_csv`` / ``pyarrow.parquet.read_table`` of
  the same file (which holds the whole table) + numpy ``bincount`` of the
  flat cell index,
* ``polars`` (where installed): ``polars.read_csv`` / ``read_parquet`` +
  the same ``bincount``.

All children import the same modules (numpy, pyarrow, polars, pandas when
installed, blowfish_privacy) and parse the spec before the clock starts;
the peak RSS printed is the run's peak (``ru_maxrss``) above the resident
size at that point (the baseline, printed at the end).  Printed per size
and format: ours / pyarrow and ours / polars time, measured in this run
(the best of --repeat runs each, alternated), ours / the faster of them
("best"), ours' time over the previous size's, and the peak RSS above
baseline.  Linux only (/proc/self/statm).

Row ``release``: the whole ``blowfish release`` of one CDF over 10^7 cells
from a CSV of 10^6 rows (plan, aggregate, spend in a new ledger, measure,
write JSON + CSV + the ledger's copy) against the insecure scripts
producing the same CSV (read, ``bincount``, ``cumsum`` + numpy
``laplace``, write) with pyarrow and with polars; see bench_release.py.

    python benchmarks/bench_scaling.py                 # 10^6, 10^7, 3x10^7 and the release row
    python benchmarks/bench_scaling.py --huge          # also 10^8 (0.9 GB of files, a few minutes)
    BENCH_TMP=/big/disk python benchmarks/bench_scaling.py --sizes 100000000 --no-release
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """
[dataset]
id = "bench"
path = "{path}"
total_epsilon = 1

[domain.age]
type = "ordinal"
low = 0
high = 99

[domain.income]
type = "ordinal"
low = 0
high = 999

[policies.all]
secrets = "full_domain"

[[release]]
name = "h"
kind = "histogram"
attributes = ["age", "income"]
policy = "all"
epsilon = 1
"""


def _child(mode: str, path: str) -> None:
    import resource

    import numpy as np
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from blowfish_privacy.release import LocalEngine, parse_spec

    if _have_polars():  # imported in every mode: the same baseline
        import polars  # noqa: F401

    try:  # pyarrow's whole-table readers import pandas (for its schema metadata): not in their time
        import pandas  # noqa: F401
    except ImportError:
        pass
    folder = Path(path).parent
    spec = parse_spec(SPEC.format(path=Path(path).name), str(folder / "spec.toml"), base_dir=folder)
    need = ("histogram", ("age", "income"))
    with open("/proc/self/statm") as fh:  # the resident size now, after the same imports in both modes
        base = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    if mode == "ours":
        t = time.perf_counter()
        total = int(LocalEngine(progress=False).aggregate(spec, [need])[need].sum())
        dt = time.perf_counter() - t
    elif mode == "pyarrow":
        t = time.perf_counter()
        table = pcsv.read_csv(path) if path.endswith(".csv") else pq.read_table(path)
        cells = table.column("age").to_numpy() * 1000 + table.column("income").to_numpy()
        total = int(np.bincount(cells, minlength=100 * 1000).sum())
        dt = time.perf_counter() - t
        del table, cells
    else:
        import polars as pl

        t = time.perf_counter()
        frame = pl.read_csv(path) if path.endswith(".csv") else pl.read_parquet(path)
        cells = frame["age"].to_numpy() * 1000 + frame["income"].to_numpy()
        total = int(np.bincount(cells, minlength=100 * 1000).sum())
        dt = time.perf_counter() - t
        del frame, cells
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": dt, "rss": rss, "base": base, "above": rss - base, "rows": total,
                      "np": np.__version__}))


def _have_polars() -> bool:
    # found, not imported: this process must stay small (its children's ru_maxrss starts at its own)
    return importlib.util.find_spec("polars") is not None


def _measure(mode: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(path)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _best(path: Path, repeat: int, modes: list[str]) -> dict:
    """Alternated runs of each mode: the least time and the largest peak of each."""
    runs: dict = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode in runs:
            runs[mode].append(_measure(mode, path))
    return {mode: {"seconds": min(r["seconds"] for r in rs), "above": max(r["above"] for r in rs),
                   "base": max(r["base"] for r in rs), "rows": rs[0]["rows"]} for mode, rs in runs.items()}


def _release_row(repeat: int, cells: int, rows: int) -> None:
    """The whole command against the insecure scripts (pyarrow, and polars where installed), alternated."""
    import bench_release

    sides_doc = "pyarrow" + (" / polars" if _have_polars() else "")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        folder = Path(tmp)
        bench_release._data(folder, rows, cells)
        bench_release._ours(folder, 99)  # warm-up: imports, first touch (not timed)
        sides = {"ours": lambda i: bench_release._ours(folder, i),
                 "pyarrow": lambda i: bench_release._insecure(folder, i, cells)}
        if _have_polars():
            sides["polars"] = lambda i: _insecure_polars(folder, i, cells)
        t = bench_release._best_alternated(sides, repeat)
    alts = {k: v for k, v in t.items() if k != "ours"}
    best = min(alts, key=alts.get)
    ratios = "  ".join(f"ours/{k} {t['ours'] / v:.2f}x" for k, v in alts.items())
    print(f"release {cells:.0e} cells from {rows:.0e} CSV rows ({sides_doc} insecure scripts): ours "
          f"{t['ours']:.2f} s  {ratios}  best ({best}) {t['ours'] / alts[best]:.2f}x", flush=True)


def _insecure_polars(folder: Path, i: int, cells: int) -> None:
    import numpy as np
    import polars as pl

    x = pl.read_csv(folder / "data.csv")["x"].to_numpy()
    cum = np.cumsum(np.bincount(x, minlength=cells)) + np.random.default_rng().laplace(0, 100.0, cells)
    pl.DataFrame({"value": np.arange(cells), "cumulative": cum}).write_csv(folder / f"insecure_pl{i}.csv")


def _write(folder: Path, n: int) -> tuple[Path, Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(n)
    csv_path, pq_path = folder / f"t{n}.csv", folder / f"t{n}.parquet"
    writer = pq_writer = None
    step = 10**7
    with pa.OSFile(str(csv_path), "wb") as sink:
        for start in range(0, n, step):
            m = min(step, n - start)
            table = pa.table({"age": rng.integers(0, 100, m), "income": rng.integers(0, 1000, m)})
            if writer is None:
                writer = pcsv.CSVWriter(sink, table.schema)
                pq_writer = pq.ParquetWriter(str(pq_path), table.schema)
            writer.write_table(table)
            pq_writer.write_table(table)
        writer.close()
        pq_writer.close()
    return csv_path, pq_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--write", nargs=2, metavar=("ROWS", "FOLDER"), help=argparse.SUPPRESS)
    ap.add_argument("--huge", action="store_true", help="also 10^8 rows")
    ap.add_argument("--sizes", type=int, nargs="*", help="row counts (default 10^6 10^7 3x10^7)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement (best time, largest peak)")
    ap.add_argument("--no-release", action="store_true", help="skip the whole-release row")
    ap.add_argument("--release-cells", type=int, default=10**7, help="cells of the release row's CDF")
    ap.add_argument("--release-rows", type=int, default=10**6, help="CSV rows of the release row")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.write:
        _write(Path(args.write[1]), int(args.write[0]))
        return
    sizes = args.sizes or [10**6, 10**7, 3 * 10**7] + ([10**8] if args.huge else [])
    modes = ["ours", "pyarrow"] + (["polars"] if _have_polars() else [])
    print(f"{'format':8} {'rows':>10} {'ours/pyarrow':>13} {'ours/polars':>12} {'ours/best':>10} "
          f"{'x prev size':>12} {'ours s':>7} {'ours MiB':>9} {'pyarrow MiB':>12} {'polars MiB':>11} {'file MiB':>9}")
    print(f"{'':8} {'':>10} {'(time, + bincount)':>36} {'':>12} {'':>7} {'(peak RSS above baseline)':>34}")
    prev: dict = {}
    base = 0
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        for n in sizes:
            need = n * 9  # bytes: about 6.8 a row of CSV, 2.2 of Parquet
            free = shutil.disk_usage(tmp).free
            if free < 2 * need:
                print(f"{n:.0e} rows skipped: {free >> 20} MiB free in {tmp}, about {need >> 20} MiB needed "
                      "(set BENCH_TMP)")
                continue
            # written by a subprocess: a child's ru_maxrss starts at its parent's (Linux keeps it across fork
            # and exec), so this process must stay small
            subprocess.run([sys.executable, __file__, "--write", str(n), tmp], check=True)
            csv_path, pq_path = Path(tmp) / f"t{n}.csv", Path(tmp) / f"t{n}.parquet"
            try:
                for fmt, path in (("csv", csv_path), ("parquet", pq_path)):
                    runs = _best(path, args.repeat, modes)
                    ours, ref, pol = runs["ours"], runs["pyarrow"], runs.get("polars")
                    assert all(r["rows"] == n for r in runs.values())
                    step = f"{ours['seconds'] / prev[fmt]:.2f}" if fmt in prev else "-"
                    prev[fmt] = ours["seconds"]
                    base = max(base, *(r["base"] for r in runs.values()))
                    fastest = min(r["seconds"] for mode, r in runs.items() if mode != "ours")
                    vs_pol = f"{ours['seconds'] / pol['seconds']:.2f}" if pol else "n/a"
                    pol_mib = f"{pol['above'] / 2**20:.0f}" if pol else "n/a"
                    print(f"{fmt:8} {n:>10.0e} {ours['seconds'] / ref['seconds']:>13.2f} {vs_pol:>12} "
                          f"{ours['seconds'] / fastest:>10.2f} {step:>12} {ours['seconds']:>7.2f} "
                          f"{ours['above'] / 2**20:>9.0f} {ref['above'] / 2**20:>12.0f} {pol_mib:>11} "
                          f"{path.stat().st_size / 2**20:>9.0f}", flush=True)
            finally:
                csv_path.unlink()
                pq_path.unlink()
    print(f"baseline (resident after the imports, the largest of the runs): {base / 2**20:.0f} MiB")
    if not args.no_release:  # last: it runs in this process, whose peak RSS the children above would inherit
        _release_row(max(args.repeat, 2), args.release_cells, args.release_rows)


if __name__ == "__main__":
    main()
