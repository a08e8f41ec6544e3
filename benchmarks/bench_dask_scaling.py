"""The Dask engine on partitioned Parquet: identical aggregate to the local engine, per-worker peak memory.

Writes ROWS rows (default 10^8) of two integer columns as FILES Parquet files
(generated file by file, so the writer never holds the whole table), then
aggregates a 100 x 1000 histogram with

* ``DaskEngine`` on a ``LocalCluster`` of two worker processes (one thread
  each), and
* ``LocalEngine`` (streaming, in this process),

checks that the two histograms are identical, and prints each one's time
and peak memory: per worker, the peak resident size during the run
(``ru_maxrss`` of the worker process read before and after; the printed
figure is the peak and its rise above the worker's resident size before
the run, after a warm-up run on one file has loaded the libraries), and
for the local engine the peak RSS of a child process above
its baseline.  The aggregate itself is 100 x 1000 int64 = 0.8 MB.

    python benchmarks/bench_dask_scaling.py                 # 10^8 rows (about 1 GB of files)
    python benchmarks/bench_dask_scaling.py --rows 10000000 --files 8
    BENCH_TMP=/big/disk python benchmarks/bench_dask_scaling.py
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

from bench_scaling import SPEC  # the same two-column table and 100 x 1000 histogram

NEED = ("histogram", ("age", "income"))


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _write(folder: Path, rows: int, files: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    step = -(-rows // files)
    for k in range(files):
        n = max(0, min(step, rows - k * step))
        rng = np.random.default_rng(k)
        table = pa.table({"age": rng.integers(0, 100, n, dtype=np.int64),
                          "income": rng.integers(0, 1000, n, dtype=np.int64)})
        pq.write_table(table, folder / f"part-{k:03d}.parquet", row_group_size=1 << 22)


def _local_child(folder: str, out: str) -> None:
    import numpy as np

    from blowfish_privacy.release import LocalEngine, parse_spec

    spec = parse_spec(SPEC.format(path=Path(folder).as_posix()), "bench.toml")
    engine = LocalEngine(progress=False)
    base = _rss_mib()
    t0 = time.perf_counter()
    agg = engine.aggregate(spec, [NEED])[NEED]
    seconds = time.perf_counter() - t0
    np.save(out, agg)
    print(json.dumps({"seconds": seconds, "peak_mib": _peak_mib(), "base_mib": base}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**8)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--local-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.local_child:
        _local_child(*args.local_child)
        return

    import numpy as np
    from distributed import Client, LocalCluster

    from blowfish_privacy.release import DaskEngine, parse_spec

    tmp = Path(tempfile.mkdtemp(prefix="bench-dask-", dir=os.environ.get("BENCH_TMP")))
    try:
        folder = tmp / "rows"
        folder.mkdir()
        t0 = time.perf_counter()
        _write(folder, args.rows, args.files)
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"wrote {args.rows:,} rows as {args.files} Parquet files ({size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)

        # local engine in a child process: its peak RSS is this run's alone
        out = tmp / "local.npy"
        res = subprocess.run([sys.executable, __file__, "--local-child", str(folder), str(out)],
                             check=True, capture_output=True, text=True)
        local = json.loads(res.stdout.strip().splitlines()[-1])
        local_hist = np.load(out)

        spec = parse_spec(SPEC.format(path=folder.as_posix()), "bench.toml")
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            engine = DaskEngine(cluster.scheduler_address, progress=False)
            # warm-up on one file: the workers import pandas, pyarrow and this
            # package, so the rise below is the aggregation's own memory
            first = sorted(folder.iterdir())[0]
            engine.aggregate(parse_spec(SPEC.format(path=first.as_posix()), "bench.toml"), [NEED])
            before = client.run(lambda: {"rss": _rss_mib(), "peak": _peak_mib()})
            t0 = time.perf_counter()
            dask_hist = engine.aggregate(spec, [NEED])[NEED]
            t_dask = time.perf_counter() - t0
            after = client.run(lambda: {"rss": _rss_mib(), "peak": _peak_mib()})
        same = bool(np.array_equal(np.asarray(dask_hist), local_hist))
        print(f"\n{args.rows:,} rows, histogram {local_hist.shape}; Dask result identical to local: {same}")
        print(f"{'engine':>22} {'seconds':>8} {'peak MiB':>9} {'rise MiB':>9}")
        print(f"{'local (streaming)':>22} {local['seconds']:8.2f} {local['peak_mib']:9.0f} "
              f"{local['peak_mib'] - local['base_mib']:9.0f}")
        for i, addr in enumerate(sorted(after)):
            b, a = before[addr], after[addr]
            print(f"{f'dask worker {i + 1}':>22} {t_dask:8.2f} {a['peak']:9.0f} {max(a['peak'] - b['rss'], 0):9.0f}")
        print(f"\ndask / local time: {t_dask / local['seconds']:.2f} "
              f"({args.workers} worker processes, one thread each, on {os.cpu_count()} cores)")
        if not same:
            sys.exit("the Dask and local aggregates differ")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
