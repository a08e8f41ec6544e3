"""Exact aggregation throughput of the release engines, against numpy.bincount.

On generated rows (1-D: one ordinal column of 1,000 values; 3-D: ordinal
100 x ordinal 50 x categorical 8, |T| = 40,000):

* the local engine (validation of every value against the domain, flat
  index, bincount, in chunks of 2^22 rows) on in-memory columns;
* the plain numpy baseline on the same columns: ``np.bincount`` of the
  value (1-D) or of ``np.ravel_multi_index`` of the codes (3-D), no checks;
* the Dask engine on the same rows written as Parquet (8 files), with a
  two-worker LocalCluster (reading included), and the local engine reading
  the same Parquet files, for a like-for-like I/O comparison;
* ``blowfish demo`` wall time from a cold start (a new process);
* ``--csv``: the local engine streaming a CSV file (2 x 10^7 rows of two
  integer columns, a 100 x 1000 histogram) against ``polars.read_csv`` and
  ``pyarrow.csv.read_csv`` of the whole file + the same ``np.bincount``;
  each run is a new process (so its peak RSS, ``ru_maxrss``, above the
  resident size after the imports is its own), the three sides alternated,
  the best of --repeat runs each.  Prints ours / polars and ours / pyarrow
  time and the peak memory of each side.

Ratios are measured in the same run.  The default is 10^8 rows (several
GB of memory and minutes); pass a smaller count for a quick look.

Run:  python benchmarks/bench_aggregate.py [ROWS]   or   pytest benchmarks/bench_aggregate.py
      python benchmarks/bench_aggregate.py --csv [ROWS] [--repeat N] [--labels]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _timing import best_time, table
from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy._aggregate import plan_for
from blowfish_privacy.release.local_engine import LocalEngine

ROWS = 10**8


def _data(rows: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.integers(0, 1000, rows, dtype=np.int32),
        "y": rng.integers(0, 100, rows, dtype=np.int32),
        "z": rng.integers(0, 50, rows, dtype=np.int32),
        "c": rng.integers(0, 8, rows, dtype=np.int32),  # a categorical with integer labels 0..7
    }


_NEEDS = {"1-D": [("histogram", ("x",))], "3-D": [("histogram", ("y", "z", "c"))]}


def _int_domain() -> Domain:
    # the categorical column as integer labels 0..7, so in-memory columns need no strings
    return Domain([Ordinal("x", 0, 999), Ordinal("y", 0, 99), Ordinal("z", 0, 49), Categorical("c", range(8))])


def _numpy(data: dict, shape: str) -> np.ndarray:
    if shape == "1-D":
        return np.bincount(data["x"], minlength=1000)
    idx = np.ravel_multi_index((data["y"], data["z"], data["c"]), (100, 50, 8))
    return np.bincount(idx, minlength=40_000)


def measure_local(rows: int = ROWS) -> list[dict]:
    data = _data(rows)
    domain = _int_domain()
    engine = LocalEngine(progress=False)
    out = []
    for shape, needs in _NEEDS.items():
        plan = plan_for(domain, {n: n for n in domain.names}, needs)
        ours = engine.aggregate_table(data, plan)[0]
        assert np.array_equal(ours, _numpy(data, shape))
        t_np = best_time(lambda: _numpy(data, shape), repeat=2)
        t_us = best_time(lambda: engine.aggregate_table(data, plan), repeat=2)
        out.append({"engine": f"local {shape}", "rows": rows, "seconds": f"{t_us:.2f}",
                    "Mrows/s": f"{rows / t_us / 1e6:.0f}", "bincount s": f"{t_np:.2f}",
                    "time / bincount": f"{t_us / t_np:.2f}"})
    return out


def _spec_text(path: Path) -> str:
    return f"""
[dataset]
id = "bench"
path = "{path.as_posix()}"
total_epsilon = 1
[domain.x]
type = "ordinal"
low = 0
high = 999
[domain.y]
type = "ordinal"
low = 0
high = 99
[domain.z]
type = "ordinal"
low = 0
high = 49
[domain.c]
type = "categorical"
labels = {list(range(8))}
[policies.full]
secrets = "full_domain"
[[release]]
name = "h"
kind = "histogram"
attributes = ["x"]
policy = "full"
epsilon = 1
"""


def measure_dask(rows: int = ROWS, workers: int = 2) -> list[dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from blowfish_privacy.release import DaskEngine, parse_spec

    tmp = Path(tempfile.mkdtemp(prefix="bench-aggregate-"))
    try:
        data = _data(rows)
        files = 8
        step = -(-rows // files)
        folder = tmp / "rows"
        folder.mkdir()
        for k in range(files):
            part = {c: v[k * step:(k + 1) * step] for c, v in data.items()}
            pq.write_table(pa.table(part), folder / f"part-{k}.parquet", row_group_size=1 << 22)
        spec = parse_spec(_spec_text(folder), "bench.toml")
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        dask_engine = DaskEngine(cluster.scheduler_address)
        local = LocalEngine(progress=False)
        out = []
        for shape, needs in _NEEDS.items():
            expect = _numpy(data, shape)
            t_np = best_time(lambda: _numpy(data, shape), repeat=2)
            got = {}
            t_dask = best_time(lambda: got.update(dask_engine.aggregate(spec, needs)), repeat=2)
            assert np.array_equal(got[needs[0]], expect)
            t_local = best_time(lambda: local.aggregate(spec, needs), repeat=1)
            out.append({"engine": f"dask {workers} workers {shape} (Parquet)", "rows": rows,
                        "seconds": f"{t_dask:.2f}", "Mrows/s": f"{rows / t_dask / 1e6:.0f}",
                        "bincount s": f"{t_np:.2f}", "time / bincount": f"{t_dask / t_np:.2f}"})
            out.append({"engine": f"local {shape} (Parquet)", "rows": rows,
                        "seconds": f"{t_local:.2f}", "Mrows/s": f"{rows / t_local / 1e6:.0f}",
                        "bincount s": f"{t_np:.2f}", "time / bincount": f"{t_local / t_np:.2f}"})
        cluster.close()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure_demo() -> dict:
    """Wall time of ``blowfish demo`` in a new process, and of ``import numpy`` for scale."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "blowfish_privacy.cli", "demo", "--quiet"], cwd=tmp, check=True,
                       capture_output=True)
        t_demo = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)
        t_np = time.perf_counter() - t0
    return {"engine": "blowfish demo (cold start)", "rows": 48842, "seconds": f"{t_demo:.2f}", "Mrows/s": "",
            "bincount s": "", "time / bincount": f"{t_demo / t_np:.1f}x a bare 'import numpy' process"}


def test_bench_local_aggregate_3d(benchmark):
    data = _data(2_000_000)
    domain = _int_domain()
    plan = plan_for(domain, {n: n for n in domain.names}, _NEEDS["3-D"])
    engine = LocalEngine(progress=False)
    result = benchmark(engine.aggregate_table, data, plan)
    assert np.array_equal(result[0], _numpy(data, "3-D"))


def test_bench_numpy_bincount_3d(benchmark):
    data = _data(2_000_000)
    benchmark(_numpy, data, "3-D")


CSV_ROWS = 2 * 10**7

_CSV_SPEC = """
[dataset]
id = "bench-csv"
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
[domain.sex]
type = "categorical"
labels = ["female", "male", "other", "unknown"]
[policies.all]
secrets = "full_domain"
[[release]]
name = "h"
kind = "histogram"
attributes = {attributes}
policy = "all"
epsilon = 1
"""


def _write_csv(path: Path, rows: int, labels: bool, quoted: bool = True) -> None:
    """Rows of ``age`` (0..99) and ``income`` (0..999), and ``sex`` (4 labels) with ``labels``, as pyarrow writes them.

    pyarrow quotes every text cell (and the header); ``quoted=False`` writes none.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(rows)
    names = np.array(["female", "male", "other", "unknown"])
    step = 10**7
    writer = None
    with pa.OSFile(str(path), "wb") as sink:
        for start in range(0, rows, step):
            m = min(step, rows - start)
            cols = {"age": rng.integers(0, 100, m), "income": rng.integers(0, 1000, m)}
            if labels:
                cols["sex"] = names[rng.integers(0, 4, m)]
            table = pa.table(cols)
            if writer is None:
                options = pcsv.WriteOptions(quoting_style="needed" if quoted else "none")
                writer = pcsv.CSVWriter(sink, table.schema, write_options=options)
            writer.write_table(table)
        writer.close()


def _csv_child(side: str, path: str, labels: bool) -> None:
    """One timed run in this (new) process; prints seconds, peak RSS above the post-import baseline, the sum."""
    import json
    import os
    import resource

    import polars as pl
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from blowfish_privacy.release import LocalEngine, parse_spec

    try:  # pyarrow's whole-table reader imports pandas: not in its time
        import pandas  # noqa: F401
    except ImportError:
        pass
    folder = Path(path).parent
    attrs = ["age", "income", "sex"] if labels else ["age", "income"]
    spec = parse_spec(_CSV_SPEC.format(path=Path(path).name, attributes=attrs), str(folder / "spec.toml"),
                      base_dir=folder)
    need = ("histogram", tuple(attrs))
    codes = {"female": 0, "male": 1, "other": 2, "unknown": 3}
    with open("/proc/self/statm") as fh:
        base = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime
    t0 = time.perf_counter()
    if side == "ours":
        hist = LocalEngine(progress=False).aggregate(spec, [need])[need]
    elif side == "polars":
        frame = pl.read_csv(path)
        cells = frame["age"].to_numpy() * 1000 + frame["income"].to_numpy()
        if labels:
            sex = frame["sex"].replace_strict(codes, return_dtype=pl.Int64).to_numpy()
            cells = cells * 4 + sex
        hist = np.bincount(cells, minlength=100 * 1000 * (4 if labels else 1))
        del frame, cells
    else:
        table = pcsv.read_csv(path)
        cells = table.column("age").to_numpy() * 1000 + table.column("income").to_numpy()
        if labels:
            sex = table.column("sex").combine_chunks().dictionary_encode()
            lookup = np.array([codes[v] for v in sex.dictionary.to_pylist()], dtype=np.int64)
            cells = cells * 4 + lookup[sex.indices.to_numpy()]
        hist = np.bincount(cells, minlength=100 * 1000 * (4 if labels else 1))
        del table, cells
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss = usage.ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime - cpu0, "above": rss - base,
                      "rows": int(hist.sum()), "pa": pa.__version__}))


def measure_csv(rows: int = CSV_ROWS, repeat: int = 3, labels: bool = False, quoted: bool = True) -> dict:
    """ours / polars and ours / pyarrow on one CSV file: new processes, the sides alternated, best of ``repeat``."""
    import json

    sides = ["ours", "polars", "pyarrow"]
    best = {s: None for s in sides}
    with tempfile.TemporaryDirectory(prefix="bench-aggregate-csv-") as tmp:
        path = Path(tmp) / "rows.csv"
        # written by a subprocess: a child's ru_maxrss starts at its parent's, so this process stays small
        subprocess.run([sys.executable, __file__, "--write-csv", str(rows), str(path)] + (["--labels"] if labels
                                                                                           else [])
                       + ([] if quoted else ["--unquoted"]), check=True)
        for _ in range(repeat):
            for side in sides:
                out = subprocess.run([sys.executable, __file__, "--csv-child", side, str(path)]
                                     + (["--labels"] if labels else []), check=True, capture_output=True, text=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                assert got["rows"] == rows, (side, got)
                old = best[side]
                if old is None:
                    best[side] = got
                else:
                    best[side] = {"seconds": min(old["seconds"], got["seconds"]), "cpu": min(old["cpu"], got["cpu"]),
                                  "above": max(old["above"], got["above"])}
        size = path.stat().st_size
    ours = best["ours"]["seconds"]
    columns = ("age, income, sex" if labels else "age, income") + ("" if quoted else " (no quotes)")
    return {"rows": rows, "file MiB": f"{size / 2**20:.0f}", "columns": columns,
            "ours / polars": f"{ours / best['polars']['seconds']:.2f}",
            "ours / pyarrow": f"{ours / best['pyarrow']['seconds']:.2f}",
            "ours s": f"{ours:.2f}", "CPU ours / polars": f"{best['ours']['cpu'] / best['polars']['cpu']:.2f}",
            "ours MiB": f"{best['ours']['above'] / 2**20:.0f}",
            "polars MiB": f"{best['polars']['above'] / 2**20:.0f}",
            "pyarrow MiB": f"{best['pyarrow']['above'] / 2**20:.0f}"}


def _csv_main(argv: list[str]) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="CSV aggregation against polars and pyarrow")
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("rows", nargs="?", type=float, default=CSV_ROWS)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side (best time, largest peak)")
    ap.add_argument("--labels", action="store_true", help="also a categorical column of 4 text labels")
    ap.add_argument("--unquoted", action="store_true", help="no quotes in the file (pyarrow quotes text cells)")
    args = ap.parse_args(argv)
    cols = ["rows", "columns", "file MiB", "ours / polars", "ours / pyarrow", "ours s", "CPU ours / polars", "ours MiB",
            "polars MiB", "pyarrow MiB"]
    print(table([measure_csv(int(args.rows), args.repeat, args.labels, not args.unquoted)], cols))
    print(f"(time: best of {args.repeat} alternated runs, each in a new process; CPU: user + system seconds, the "
          "work done whatever the load; MiB: largest peak RSS above the resident size after the imports)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--csv-child":
        _csv_child(sys.argv[2], sys.argv[3], "--labels" in sys.argv[4:])
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--write-csv":
        _write_csv(Path(sys.argv[3]), int(sys.argv[2]), "--labels" in sys.argv[4:], "--unquoted" not in sys.argv[4:])
        sys.exit(0)
    if "--csv" in sys.argv[1:]:
        _csv_main(sys.argv[1:])
        sys.exit(0)
    rows = int(float(sys.argv[1])) if len(sys.argv) > 1 else ROWS
    cols = ["engine", "rows", "seconds", "Mrows/s", "bincount s", "time / bincount"]
    rows_out = measure_local(rows)
    print(table(rows_out, cols), flush=True)
    dask_rows = measure_dask(rows)
    print(table(dask_rows, cols), flush=True)
    print(table([measure_demo()], cols))
