"""Scaling of the streaming aggregation: time and peak memory per size, CSV and Parquet.

For each size (10^6, 10^7, 3x10^7 rows; 10^8 with --huge) a table of two
integer columns is written as CSV and as Parquet, then each measurement
runs in its own subprocess (so that the peak RSS, ``ru_maxrss``, is that
run's alone):

* ``ours``: ``LocalEngine().aggregate`` of a 100 x 1000 histogram (streaming),
* ``pyarrow``: ``pyarrow.csv.read_csv`` / ``pyarrow.parquet.read_table`` of
  the same file (which holds the whole table), the reference.

Both children import the same modules (numpy, pyarrow, pandas when
installed, blowfish_privacy) and parse the spec before the clock starts;
the peak RSS printed is the run's peak (``ru_maxrss``) above the resident
size at that point (the baseline, printed at the end).  Printed per size
and format: ours / pyarrow time, measured in this run (the best of
--repeat runs each, alternated), ours' time over the previous size's, and
the peak RSS above baseline of both.  The issue's targets at 10^8 rows: at
most 1 GiB peak RSS (printed above the baseline: add the baseline) and at
most 1.3x pyarrow's time.  Linux only (/proc/self/statm).

    python benchmarks/bench_scaling.py                 # 10^6, 10^7, 3x10^7
    python benchmarks/bench_scaling.py --huge          # also 10^8 (0.9 GB of files, a few minutes)
    BENCH_TMP=/big/disk python benchmarks/bench_scaling.py --sizes 100000000
"""

from __future__ import annotations

import argparse
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
    else:
        t = time.perf_counter()
        table = pcsv.read_csv(path) if path.endswith(".csv") else pq.read_table(path)
        total = table.num_rows
        dt = time.perf_counter() - t
        del table
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": dt, "rss": rss, "base": base, "above": rss - base, "rows": total,
                      "np": np.__version__}))


def _measure(mode: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(path)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _best(path: Path, repeat: int) -> tuple[dict, dict]:
    """``(ours, pyarrow)``: alternated runs, the least time and the largest peak of each."""
    runs: dict = {"ours": [], "pyarrow": []}
    for _ in range(repeat):
        for mode in runs:
            runs[mode].append(_measure(mode, path))
    return tuple({"seconds": min(r["seconds"] for r in rs), "above": max(r["above"] for r in rs),
                  "base": max(r["base"] for r in rs), "rows": rs[0]["rows"]} for rs in runs.values())


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
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.write:
        _write(Path(args.write[1]), int(args.write[0]))
        return
    sizes = args.sizes or [10**6, 10**7, 3 * 10**7] + ([10**8] if args.huge else [])
    print(f"{'format':8} {'rows':>10} {'ours/pyarrow time':>18} {'x prev size':>12} {'ours s':>7} "
          f"{'ours MiB':>9} {'pyarrow MiB':>12} {'file MiB':>9}")
    print(f"{'':8} {'':>10} {'':>18} {'':>12} {'':>7} {'(peak RSS above baseline)':>22}")
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
                    ours, ref = _best(path, args.repeat)
                    assert ours["rows"] == ref["rows"] == n
                    step = f"{ours['seconds'] / prev[fmt]:.2f}" if fmt in prev else "-"
                    prev[fmt] = ours["seconds"]
                    base = max(base, ours["base"], ref["base"])
                    print(f"{fmt:8} {n:>10.0e} {ours['seconds'] / ref['seconds']:>18.2f} {step:>12} "
                          f"{ours['seconds']:>7.2f} {ours['above'] / 2**20:>9.0f} {ref['above'] / 2**20:>12.0f} "
                          f"{path.stat().st_size / 2**20:>9.0f}", flush=True)
            finally:
                csv_path.unlink()
                pq_path.unlink()
    print(f"baseline (resident after the imports, the largest of the runs): {base / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
