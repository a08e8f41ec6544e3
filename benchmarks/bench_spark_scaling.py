"""The Spark engine at scale: time and memory against the local and Dask engines on Parquet, and on DataFrames.

One run prints, for ROWS rows (default 10^8) of two integer columns
written once as FILES Parquet files in a temporary folder (deleted at the
end; under $BENCH_TMP when set), the 100 x 1000 histogram of
``bench_scaling.SPEC`` aggregated by

1. **the three engines**: ``LocalEngine`` (streaming, in this process),
   ``DaskEngine`` on a ``LocalCluster`` of 2 worker processes of one thread
   each (as bench_dask_scaling.py) and ``SparkEngine("local[2]")`` on a
   session started once before the runs and left running (as a standing
   cluster would be).  The sides are interleaved, REPEATS times each after a
   warm-up; printed: the best and median times, the ratios of the best
   times and the medians of the per-repeat ratios, and whether the
   histograms are identical.  Separately, what ``blowfish release --engine
   spark`` without a running session pays per command: in a fresh process,
   the engine's own session started, a tiny job run and the session stopped
   (the first call also launches the JVM), less the same tiny job on a
   standing session.
2. **peak memory**: this process (the driver: the rise of its high-water
   resident size, reset before each run), the Spark JVM (the java child of
   this process), the Spark Python workers (the Python processes under the
   JVM: pyspark's daemon and the workers it forks) and the Dask workers.
   The Spark processes' resident sizes are sampled through the Spark runs
   (the workers come and go, so the tree is looked up again as it runs);
   printed per process: the resident size before the runs ("idle"), the
   peak, and the rise.
3. **Spark DataFrame inputs**: a DataFrame read from the same folder
   (``spark.read.parquet``) aggregated (a) by the library
   (``SparkEngine(frame=df)``: every row through ``mapInArrow``, each
   partition folded with numpy) and (b) by Spark itself
   (``groupBy("age", "income").count().collect()``, scattered into the
   dense 100 x 1000 array); the times, (b)/(a), and whether the arrays are
   identical to the local engine's histogram.  (b) is what the library
   would gain by grouping first, which it does not do: the work and the
   shuffle records Spark reports for a groupBy follow the number of
   distinct rows, an exact statistic of the data.

    python benchmarks/bench_spark_scaling.py                           # 10^8 rows in 16 files
    python benchmarks/bench_spark_scaling.py --rows 2e5 --files 4 --repeats 1 --json out.json   # small (tests)
    BENCH_TMP=/big/disk python benchmarks/bench_spark_scaling.py --skip-dask

Without pyspark or Java it prints why it is skipped and exits 0.  Linux only (/proc).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_dask_scaling import NEED, _float_int, _reset_peak, _Sampler, _status, _write
from bench_scaling import SPEC

MASTER = "local[2]"
#: Rows of the tiny table that times the session's start and stop (its job is next to nothing).
TINY_ROWS = 1000


def _missing() -> str | None:
    """Why Spark cannot run here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'blowfish-privacy[spark]')"
    home = os.environ.get("JAVA_HOME")
    if not (os.access(os.path.join(home, "bin", "java"), os.X_OK) if home else shutil.which("java")):
        return "Java is not installed (java on the PATH or JAVA_HOME)"
    return None


def _children(pid: int) -> list:
    """The direct children of a process (``/proc/PID/task/*/children``; else each process's parent in its stat)."""
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(x) for x in fh.read().split()]
        return out
    except OSError:
        pass
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(name))
    return out


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _jvm() -> int | None:
    """The Spark JVM: the java child of this process (Dask's workers are Python children)."""
    return next((p for p in _children(os.getpid()) if _comm(p) == "java"), None)


def _spark_processes(jvm: int) -> dict:
    """``{label: pid}`` of the JVM and the Python processes under it (pyspark's daemon, the workers it forks)."""
    out = {"spark JVM": jvm}
    todo = [(p, 1) for p in _children(jvm)]
    while todo:
        pid, depth = todo.pop(0)
        if _comm(pid).startswith("python"):  # the JVM starts the daemon; the daemon forks the workers
            role = "daemon" if depth == 1 and "pyspark.daemon" in _cmdline(pid) else "worker"
            out[f"python {role} {pid}"] = pid
        todo += [(p, depth + 1) for p in _children(pid)]
    return out


class _TreeSampler(_Sampler):
    """:class:`_Sampler` over the JVM and its Python processes, the tree looked up again every ``look`` seconds."""

    def __init__(self, jvm: int, every: float = 0.05, look: float = 0.5) -> None:
        super().__init__(_spark_processes(jvm), every)
        self.jvm, self.look, self._looked = jvm, look, time.perf_counter()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.perf_counter()
            if now - self._looked >= self.look:
                self._looked = now
                for k, pid in _spark_processes(self.jvm).items():
                    self.pids.setdefault(k, pid)
                    self.samples.setdefault(k, [])
            for k, pid in list(self.pids.items()):
                try:
                    self.samples[k].append((now, _status(pid)["VmRSS"]))
                except (OSError, KeyError):
                    pass
            self._stop.wait(self.every)

    def total_peak(self) -> float:
        """The peak of the Spark processes' summed resident size (samples of one tick added)."""
        ticks: dict = {}
        for series in self.samples.values():
            for t, r in series:
                ticks[t] = ticks.get(t, 0.0) + r
        return max(ticks.values(), default=float("nan"))


def _dense(rows) -> object:
    """``groupBy(...).count()`` rows scattered into 100 * 1000 int64 cells at age*1000+income (the engines' order)."""
    import numpy as np

    out = np.zeros(100 * 1000, np.int64)
    if rows:
        idx = np.fromiter((r[0] * 1000 + r[1] for r in rows), np.int64, len(rows))
        out[idx] = np.fromiter((r[2] for r in rows), np.int64, len(rows))
    return out


def _probe(folder: str) -> None:
    """In a fresh process: the engine's own session (start, tiny job, stop) twice; one JSON line of the seconds."""
    import pyspark  # noqa: F401  (imported before the clock: the session is timed, not the import)

    from blowfish_privacy.release import parse_spec
    from blowfish_privacy.release.spark_engine import SparkEngine

    spec = parse_spec(SPEC.format(path=Path(folder).as_posix()), "tiny.toml")
    times = []
    for _ in range(2):  # the first launches the JVM; the second finds it running (stopping a context leaves it)
        t0 = time.perf_counter()
        SparkEngine(MASTER).aggregate(spec, [NEED])
        times.append(time.perf_counter() - t0)
    print(json.dumps({"first": times[0], "second": times[1]}), flush=True)


def _session_cost(folder: Path, repeats: int) -> dict:
    """The best of ``repeats`` probes (each a fresh process, as each ``blowfish release`` is)."""
    best: dict = {}
    for _ in range(repeats):
        res = subprocess.run([sys.executable, __file__, "--probe-session", str(folder)], capture_output=True,
                             text=True, timeout=900, check=False)
        line = next((x for x in res.stdout.splitlines() if x.startswith("{")), None)
        if res.returncode or line is None:
            raise SystemExit(f"the session probe failed (exit {res.returncode}): {res.stderr[-2000:]}")
        for k, v in json.loads(line).items():
            best[k] = min(best.get(k, float("inf")), v)
    return best


def _session(log_config: Path):
    """The standing local[2] SparkSession (quiet: Spark's errors only, on stderr)."""
    from pyspark.sql import SparkSession

    from blowfish_privacy.release.spark_engine import LOG4J2

    log_config.write_text(LOG4J2)
    spark = (SparkSession.builder.master(MASTER).appName("bench-spark")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config.as_posix()}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _line(name: str, times: list) -> str:
    return f"  {name:<44} best {min(times):7.2f} s  median {statistics.median(times):7.2f} s"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=_float_int, default=10**8, help="rows of the Parquet files (default 1e8)")
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-dask", action="store_true", help="no Dask side (machines without distributed)")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--probe-session", help=argparse.SUPPRESS)  # the child that times a session's start and stop
    args = ap.parse_args(argv)
    if args.probe_session:
        _probe(args.probe_session)
        return {}
    why = _missing()
    if why:
        print(f"bench_spark_scaling: skipped: {why}")
        return {}
    use_dask = not args.skip_dask
    if use_dask and importlib.util.find_spec("distributed") is None:
        print("Dask: skipped (distributed is not installed)")
        use_dask = False

    import contextlib

    import numpy as np

    from blowfish_privacy.release import LocalEngine, parse_spec
    from blowfish_privacy.release.spark_engine import SparkEngine

    report: dict = {"rows": args.rows, "files": args.files, "repeats": args.repeats}
    tmp = Path(tempfile.mkdtemp(prefix="bench-spark-", dir=os.environ.get("BENCH_TMP")))
    try:
        folder, tiny = tmp / "rows", tmp / "tiny"
        folder.mkdir()
        tiny.mkdir()
        t0 = time.perf_counter()
        _write(folder, args.rows, args.files)
        _write(tiny, TINY_ROWS, 1)
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"wrote {args.rows:,} rows as {args.files} Parquet files ({size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)

        cost = _session_cost(tiny, args.repeats)  # before the standing session and the cluster: an idle machine

        spec = parse_spec(SPEC.format(path=folder.as_posix()), "bench.toml")
        local = LocalEngine(progress=False)
        with contextlib.ExitStack() as stack:
            dask = client = None
            if use_dask:
                from distributed import Client, LocalCluster

                from blowfish_privacy.release import DaskEngine

                cluster = stack.enter_context(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                           dashboard_address=":0"))
                client = stack.enter_context(Client(cluster))
                dask = DaskEngine(cluster.scheduler_address, progress=False)
            spark = _session(tmp / "log4j2.properties")
            stack.callback(spark.stop)
            engine = SparkEngine(MASTER)  # finds the standing session's context and leaves it running
            jvm = _jvm()

            tiny_spec = parse_spec(SPEC.format(path=tiny.as_posix()), "tiny.toml")
            engine.aggregate(tiny_spec, [NEED])  # the Python workers started
            t0 = time.perf_counter()
            engine.aggregate(tiny_spec, [NEED])
            cost["job"] = time.perf_counter() - t0
            start_stop = cost["first"] - cost["job"]
            report["session"] = {**cost, "start_stop": start_stop}

            want = local.aggregate(spec, [NEED])[NEED]  # the warm-up of every side, and the reference
            same = {"spark": bool(np.array_equal(engine.aggregate(spec, [NEED])[NEED], want))}
            if dask:
                same["dask"] = bool(np.array_equal(dask.aggregate(spec, [NEED])[NEED], want))
            idle = {k: _status(p)["VmRSS"] for k, p in _spark_processes(jvm).items()} if jvm else {}
            dask_before = client.run(_reset_peak) if dask else {}
            times: dict = {"local": [], "dask": [], "spark": []}
            rise = {"local": 0.0, "spark": 0.0}
            samplers = []
            for _ in range(args.repeats):
                base = _reset_peak()["VmRSS"]
                t0 = time.perf_counter()
                local.aggregate(spec, [NEED])
                times["local"].append(time.perf_counter() - t0)
                rise["local"] = max(rise["local"], _status()["VmHWM"] - base)
                if dask:
                    t0 = time.perf_counter()
                    got = dask.aggregate(spec, [NEED])[NEED]
                    times["dask"].append(time.perf_counter() - t0)
                    same["dask"] = same["dask"] and bool(np.array_equal(got, want))
                base = _reset_peak()["VmRSS"]
                with _TreeSampler(jvm) if jvm else contextlib.nullcontext() as sampler:
                    t0 = time.perf_counter()
                    got = engine.aggregate(spec, [NEED])[NEED]
                    times["spark"].append(time.perf_counter() - t0)
                rise["spark"] = max(rise["spark"], _status()["VmHWM"] - base)
                same["spark"] = same["spark"] and bool(np.array_equal(got, want))
                if sampler is not None:
                    samplers.append(sampler)
            dask_after = client.run(_status) if dask else {}

            sides = ["local"] + (["dask"] if dask else []) + ["spark"]
            print(f"\nParquet: {args.rows:,} rows in {args.files} files, histogram of {want.size:,} cells, "
                  f"{args.repeats} interleaved repeats after a warm-up")
            print(_line("local (streaming, this process)", times["local"]))
            if dask:
                print(_line("dask (LocalCluster, 2 workers x 1 thread)", times["dask"]))
            print(_line(f"spark ({MASTER}, session already running)", times["spark"]))
            ratios = {}
            for a, b in (("spark", "local"), ("dask", "local"), ("spark", "dask")):
                if a in sides and b in sides:
                    best = min(times[a]) / min(times[b])
                    med = statistics.median(x / y for x, y in zip(times[a], times[b]))
                    ratios[f"{a}/{b}"] = {"best": best, "median": med}
                    print(f"  {a} / {b}: {best:.2f} (best times), {med:.2f} (median of the per-repeat ratios)")
            for k in sides[1:]:
                print(f"  {k} identical to local: {same[k]}")
            print("\nSpark session per command (--engine spark without a running session; each in a fresh "
                  f"process, best of {args.repeats}):")
            for label, key in (("own session, first in the process (JVM launch + start + tiny job + stop)", "first"),
                               ("own session, JVM already running (start + tiny job + stop)", "second"),
                               (f"the tiny job ({TINY_ROWS} rows) on the standing session", "job")):
                print(f"  {label:<73} {cost[key]:6.2f} s")
            print(f"  => start + stop paid per command: {start_stop:.2f} s; spark best + that: "
                  f"{min(times['spark']) + start_stop:.2f} s", flush=True)
            report.update(times=times, ratios=ratios, identical=same)

            print("\nPeak memory (MiB):")
            print(f"  driver (this process), rise of its high-water mark: local runs {rise['local']:.0f}, "
                  f"spark runs {rise['spark']:.0f}")
            mem: dict = {"driver_rise": rise, "spark": {}, "dask": {}}
            if jvm is None:
                print("  spark JVM: not found among this process's children")
            else:
                peaks: dict = {}
                for s in samplers:
                    for k, series in s.samples.items():
                        if series:
                            peaks[k] = max(peaks.get(k, 0.0), max(r for _, r in series))
                for k in sorted(peaks, key=lambda k: (k != "spark JVM", "worker" in k, k)):
                    if k in idle:
                        print(f"  {k:<28} idle {idle[k]:6.0f}  peak {peaks[k]:6.0f}  rise {peaks[k] - idle[k]:6.0f}")
                    else:
                        print(f"  {k:<28} (started during the runs)  peak {peaks[k]:6.0f}")
                    mem["spark"][k] = {"idle": idle.get(k), "peak": peaks[k]}
                total = max(s.total_peak() for s in samplers)
                print(f"  spark processes together: idle {sum(idle.values()):.0f}, peak {total:.0f} "
                      f"(sampled every 50 ms)")
                mem["spark_total"] = {"idle": sum(idle.values()), "peak": total}
            for i, addr in enumerate(sorted(dask_after)):
                b, a = dask_before[addr]["VmRSS"], dask_after[addr]["VmHWM"]
                print(f"  dask worker {i + 1:<16} idle {b:6.0f}  peak {a:6.0f}  rise {a - b:6.0f}  (high-water mark)")
                mem["dask"][f"worker {i + 1}"] = {"idle": b, "peak": a}
            report["memory"] = mem

            frame = spark.read.parquet(folder.as_posix())
            by_engine = SparkEngine(MASTER, frame=frame)

            def ours():
                return by_engine.aggregate(spec, [NEED])[NEED]

            def spark_own():
                return _dense(frame.groupBy("age", "income").count().collect())

            sides = (("engine", ours), ("groupBy", spark_own))
            ok = {k: bool(np.array_equal(fn(), want)) for k, fn in sides}
            t_df: dict = {k: [] for k, _ in sides}
            for _ in range(args.repeats):
                for k, fn in sides:
                    t0 = time.perf_counter()
                    got = fn()
                    t_df[k].append(time.perf_counter() - t0)
                    ok[k] = ok[k] and bool(np.array_equal(got, want))
            n_parts = frame.rdd.getNumPartitions()
            print(f"\nSpark DataFrame (spark.read.parquet of the same folder, {n_parts} partitions), "
                  f"{args.repeats} interleaved repeats after a warm-up:")
            print(_line("(a) SparkEngine(frame=df): mapInArrow + fold", t_df["engine"]))
            print(_line("(b) df.groupBy(age, income).count().collect()", t_df["groupBy"]))
            ratios = {}
            for k in ("groupBy",):
                r_best = min(t_df[k]) / min(t_df["engine"])
                r_med = statistics.median(b / a for a, b in zip(t_df["engine"], t_df[k]))
                ratios[k] = {"best": r_best, "median": r_med}
                print(f"  (b) / (a): {r_best:.2f} (best times), {r_med:.2f} (median of the per-repeat ratios)")
            for k, label in (("engine", "a"), ("groupBy", "b")):
                print(f"  ({label}) identical to local: {ok[k]}")
            report["frame"] = {"times": t_df, "ratios": ratios, "identical": ok, "partitions": n_parts}
        if args.json:
            args.json.write_text(json.dumps(report, indent=1))
        if not all(same.values()) or not all(ok.values()):
            sys.exit("an aggregate differs from the local engine's")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


if __name__ == "__main__":
    main()
