"""Scaling of the streaming aggregation: time and peak memory per size, CSV and Parquet.

For each size (10^5, 10^6, 10^7 rows; 10^8 with --huge) a table of two
integer columns is written as CSV and as Parquet, then each measurement
runs in its own subprocess (so that the peak RSS, ``ru_maxrss``, is that
run's alone):

* ``ours``: ``LocalEngine().aggregate`` of a 100 x 1000 histogram (streaming),
* ``pyarrow``: ``pyarrow.csv.read_csv`` / ``pyarrow.parquet.read_table`` of
  the same file (which holds the whole table), the baseline.

Printed: seconds are shown only as the ratio ours / pyarrow measured in this
run, the ratio of ours to the previous size, and peak RSS (MiB; the
interpreter with numpy and pyarrow imported is about 100 MiB of it).

    python benchmarks/bench_scaling.py            # 10^5 .. 10^7
    python benchmarks/bench_scaling.py --huge     # also 10^8 (about 1 GB of CSV, several minutes)
"""

from __future__ import annotations

import argparse
import json
import os
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
    import pyarrow.csv  # noqa: F401  (imported before the clock in both modes)
    import pyarrow.parquet  # noqa: F401

    if mode == "ours":
        from blowfish_privacy.release import LocalEngine, parse_spec

        folder = Path(path).parent
        spec = parse_spec(SPEC.format(path=Path(path).name), str(folder / "spec.toml"), base_dir=folder)
        need = ("histogram", ("age", "income"))
        t = time.perf_counter()
        total = int(LocalEngine(progress=False).aggregate(spec, [need])[need].sum())
        dt = time.perf_counter() - t
    else:
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        t = time.perf_counter()
        table = pcsv.read_csv(path) if path.endswith(".csv") else pq.read_table(path)
        total = table.num_rows
        dt = time.perf_counter() - t
        del table
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": dt, "rss": rss, "rows": total, "np": np.__version__}))


def _measure(mode: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(path)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


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
    ap.add_argument("--huge", action="store_true", help="also 10^8 rows")
    ap.add_argument("--sizes", type=int, nargs="*", help="row counts (default 10^5 10^6 10^7)")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    sizes = args.sizes or [10**5, 10**6, 10**7] + ([10**8] if args.huge else [])
    print(f"{'format':8} {'rows':>10} {'ours/pyarrow time':>18} {'x prev size':>12} {'ours MiB':>9} "
          f"{'pyarrow MiB':>12} {'file MiB':>9}")
    prev: dict = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        for n in sizes:
            csv_path, pq_path = _write(Path(tmp), n)
            for fmt, path in (("csv", csv_path), ("parquet", pq_path)):
                ours, base = _measure("ours", path), _measure("pyarrow", path)
                assert ours["rows"] == base["rows"] == n
                step = f"{ours['seconds'] / prev[fmt]:.2f}" if fmt in prev else "-"
                prev[fmt] = ours["seconds"]
                print(f"{fmt:8} {n:>10.0e} {ours['seconds'] / base['seconds']:>18.2f} {step:>12} "
                      f"{ours['rss'] / 2**20:>9.0f} {base['rss'] / 2**20:>12.0f} {path.stat().st_size / 2**20:>9.0f}",
                      flush=True)
            csv_path.unlink()
            pq_path.unlink()


if __name__ == "__main__":
    main()
