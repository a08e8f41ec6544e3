"""The Dask engine at scale: its time against the local engine's on Parquet files, and a run on generated rows.

One run prints

1. **Dask / local on Parquet**: ROWS rows (default 10^8) of two integer
   columns written once as FILES Parquet files in a temporary folder
   (deleted at the end), a 100 x 1000 histogram aggregated by
   ``LocalEngine`` (streaming, in this process) and by ``DaskEngine`` on a
   ``LocalCluster`` of WORKERS worker processes, one thread each (through
   ``--scheduler``'s path: each run connects its own client, as the command
   does).  The two sides are interleaved, REPEATS times each after a
   warm-up; the ratio of the best times and the median of the per-repeat
   ratios are printed, with the histograms checked identical.  Peak memory:
   each worker's high-water resident size (``VmHWM``, reset before the
   runs) and its rise above the worker's resident size before them; the
   local engine's rise in this process likewise.
2. **Generated rows**: GENERATED rows (default 10^9) aggregated by the Dask
   engine from parts whose rows each task draws from a seed (no files,
   :meth:`DaskEngine.aggregate_parts`).  Printed: the time, the rows per
   second, and each worker's resident size sampled through the run: its
   peak in each quarter of the run (flat when the quarters agree) and its
   high-water mark.  The counts are checked to sum to GENERATED exactly;
   ``--check`` also compares the histogram with the local map step over
   the same parts in this process (slow at 10^9).

    python benchmarks/bench_dask_scaling.py                        # 10^8 rows in 16 files, 10^9 generated
    python benchmarks/bench_dask_scaling.py --rows 1e6 --generated 1e7 --repeats 2 --check   # small (tests)

Run it as a script: the workers receive the generated parts by value (Dask pickles what ``__main__`` defines).
    BENCH_TMP=/big/disk python benchmarks/bench_dask_scaling.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_scaling import SPEC  # noqa: E402  (the same two-column table and 100 x 1000 histogram)

NEED = ("histogram", ("age", "income"))
#: Rows per batch of a generated part.
GENERATED_BATCH = 1 << 20


class Generated:
    """Part ``index`` of a generated table: ``rows`` rows drawn from ``seed`` on the worker, a batch at a time.

    Each row is one uniform draw of ``age * 1000 + income`` (age in 0..99,
    income in 0..999; from a double in [0, 1), so uniform up to 2**-53), so
    both columns are uniform and independent.  The arrays of a batch are
    filled again for the next (the engine folds a batch before it asks for
    the next): no allocation per batch.
    """

    def __init__(self, seed: int, index: int, rows: int) -> None:
        self.seed, self.index, self.rows = seed, index, rows

    def __call__(self, columns):
        import numpy as np

        rng = np.random.default_rng([self.seed, self.index])
        m = min(self.rows, GENERATED_BATCH)
        u, code, age, income = np.empty(m), np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
        left = self.rows
        while left:
            n = min(left, m)
            rng.random(out=u[:n])
            np.multiply(u[:n], 100_000, out=u[:n])
            np.copyto(code[:n], u[:n], casting="unsafe")  # truncation: floor of a value >= 0
            np.floor_divide(code[:n], 1000, out=age[:n])
            np.multiply(age[:n], 1000, out=income[:n])
            np.subtract(code[:n], income[:n], out=income[:n])
            yield {"age": age[:n], "income": income[:n]}, 16 * n
            left -= n


def _status(pid="self") -> dict:
    """``VmRSS`` and ``VmHWM`` of a process, in MiB."""
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line[:5]] = int(line.split()[1]) / 1024
    return out


def _reset_peak() -> dict:
    """Reset this process's high-water resident size (Linux ``clear_refs``); its status after."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:  # not allowed here: the peak then covers the process's whole life
        pass
    return _status()


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


class _Sampler:
    """Resident sizes of some processes (``pids``), read every ``every`` seconds on a thread."""

    def __init__(self, pids: dict, every: float = 0.05) -> None:
        self.pids, self.every = pids, every
        self.samples: dict = {k: [] for k in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.perf_counter()
            for k, pid in self.pids.items():
                try:
                    self.samples[k].append((now, _status(pid)["VmRSS"]))
                except (OSError, KeyError):
                    pass
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def quarters(self, key, t0: float, t1: float) -> list:
        """The peak resident size (MiB) in each quarter of ``[t0, t1]``."""
        out = []
        for q in range(4):
            a, b = t0 + (t1 - t0) * q / 4, t0 + (t1 - t0) * (q + 1) / 4
            vals = [r for t, r in self.samples[key] if a <= t <= b]
            out.append(max(vals) if vals else float("nan"))
        return out


def _float_int(text: str) -> int:
    return int(float(text))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=_float_int, default=10**8, help="rows of the Parquet files (default 1e8)")
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--generated", type=_float_int, default=10**9, help="generated rows (default 1e9; 0: skip)")
    ap.add_argument("--part-rows", type=_float_int, default=10**7, help="generated rows per part (one task each)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="compare the generated run with the local map step")
    args = ap.parse_args(argv)

    import numpy as np
    from distributed import Client, LocalCluster

    from blowfish_privacy import _aggregate
    from blowfish_privacy.release import DaskEngine, LocalEngine, parse_spec

    report: dict = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-dask-", dir=os.environ.get("BENCH_TMP")))
    try:
        folder = tmp / "rows"
        folder.mkdir()
        t0 = time.perf_counter()
        _write(folder, args.rows, args.files)
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"wrote {args.rows:,} rows as {args.files} Parquet files ({size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)
        spec = parse_spec(SPEC.format(path=folder.as_posix()), "bench.toml")
        local = LocalEngine(progress=False)
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            dask = DaskEngine(cluster.scheduler_address, progress=False)
            pids = client.run(os.getpid)
            want = local.aggregate(spec, [NEED])[NEED]  # warm-up of both sides, and the check
            same = bool(np.array_equal(dask.aggregate(spec, [NEED])[NEED], want))
            before = client.run(_reset_peak)
            t_local, t_dask, local_rise = [], [], 0.0
            for _ in range(args.repeats):
                base = _reset_peak()["VmRSS"]
                t0 = time.perf_counter()
                local.aggregate(spec, [NEED])
                t_local.append(time.perf_counter() - t0)
                local_rise = max(local_rise, _status()["VmHWM"] - base)
                t0 = time.perf_counter()
                got = dask.aggregate(spec, [NEED])[NEED]
                t_dask.append(time.perf_counter() - t0)
                same = same and bool(np.array_equal(got, want))
            after = client.run(_status)
            best, med = min(t_dask) / min(t_local), statistics.median(d / x for d, x in zip(t_dask, t_local))
            print(f"\nParquet: {args.rows:,} rows, histogram {want.shape}, {args.repeats} interleaved repeats; "
                  f"Dask identical to local: {same}")
            print(f"  local (streaming, this process)  best {min(t_local):6.2f} s  median "
                  f"{statistics.median(t_local):6.2f} s  peak rise {local_rise:5.0f} MiB")
            print(f"  dask ({args.workers} workers x 1 thread)      best {min(t_dask):6.2f} s  median "
                  f"{statistics.median(t_dask):6.2f} s")
            for i, addr in enumerate(sorted(after)):
                print(f"    worker {i + 1}: resident {before[addr]['VmRSS']:5.0f} MiB before, peak "
                      f"{after[addr]['VmHWM']:5.0f} MiB (rise {after[addr]['VmHWM'] - before[addr]['VmRSS']:4.0f})")
            print(f"  dask / local: {best:.2f} (best times), {med:.2f} (median of the per-repeat ratios)", flush=True)
            report.update(parquet_identical=same, parquet_ratio_best=best, parquet_ratio_median=med)
            shutil.rmtree(folder)  # the generated run reads no file; the spec's path is only checked to exist
            folder.mkdir()

            if args.generated:
                n_parts = max(1, -(-args.generated // args.part_rows))
                sizes = [args.generated // n_parts + (k < args.generated % n_parts) for k in range(n_parts)]
                parts = [Generated(26, k, n) for k, n in enumerate(sizes)]
                before = client.run(_reset_peak)
                with _Sampler({addr: pids[addr] for addr in pids}) as sampler:
                    t0 = time.perf_counter()
                    hist = dask.aggregate_parts(spec, [NEED], parts)[NEED]
                    t1 = time.perf_counter()
                after = client.run(_status)
                total = int(hist.sum())
                print(f"\nGenerated: {args.generated:,} rows in {n_parts} parts (drawn on the workers), "
                      f"{t1 - t0:.1f} s, {args.generated / (t1 - t0) / 1e6:.0f} M rows/s; "
                      f"counts sum to the rows: {total == args.generated}")
                flat = True
                for i, addr in enumerate(sorted(pids)):
                    qs = sampler.quarters(addr, t0, t1)
                    flat = flat and max(qs[1:]) <= qs[0] + 64
                    print(f"    worker {i + 1}: resident {before[addr]['VmRSS']:5.0f} MiB before; peak per quarter "
                          f"of the run {' / '.join(f'{q:.0f}' for q in qs)} MiB; high-water "
                          f"{after[addr]['VmHWM']:5.0f} MiB")
                report.update(generated_seconds=t1 - t0, generated_total=total,
                              generated_peaks={a: after[a]["VmHWM"] for a in after}, generated_flat=flat)
                if args.check:
                    plan = _aggregate.spec_plan(spec, [NEED])
                    cols = _aggregate.plan_columns(plan)
                    ref = sum(_aggregate.fold(p(cols), plan, cols)[0] for p in parts)
                    ok = bool(np.array_equal(ref, hist))
                    print(f"  identical to the local map step over the same parts: {ok}")
                    report["generated_identical"] = ok
        if not same or (args.generated and report["generated_total"] != args.generated) or \
                not report.get("generated_identical", True):
            sys.exit("the Dask and local aggregates differ")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


if __name__ == "__main__":
    main()
