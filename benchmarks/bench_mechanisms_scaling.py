"""Time and peak memory of the mechanisms as |T| grows (issue 13).

For |T| = 10^5, 10^6, 10^7 (and 10^8 with ``--huge``) it runs, each size and
mechanism in its own subprocess (so peak RSS belongs to that run alone):

numpy runs once untimed, ours once for the peak memory (timed only for
DAWA from 10^7 cells, its one run), then the two run interleaved, best of
``--repeat`` runs each (two at 10^8 cells); peak memory is read after the first run of ours, before the
baseline allocates.

- ``oh``: ordered hierarchical under DistanceThreshold(100), default fan-out;
- ``ordered``: the ordered mechanism under DistanceThreshold(100);
- ``transform``: transformed Laplace under DistanceThreshold(100)'s line tree;
- ``dawa``: DAWA (identity workload);
- ``release``: the whole ``blowfish release`` of a one-CDF spec (OH under
  DistanceThreshold(100), two ranges and a quantile; reading a CSV of 10^5
  rows, aggregation, the ledger, JSON and CSV outputs, no plot), run
  through the command's ``main`` in the child;
- opt-in (``--mechanisms``): ``dawa_distinct``, DAWA on counts that are all
  distinct (the window mean crosses many values at every step), and
  ``dawa_reference``, the previous partition path (the whole noise vector
  and every interval's score in memory, a Fenwick tree over the whole
  domain: ``_dawa.dawa_partition``) for before/after ratios in one run;
  ``oh_noise_first``, the previous OH path (the whole noise vector drawn on
  the generator's threads, then the kernel), against ``oh`` whose kernel
  draws each block's noise in its own threads.

and prints, per row: best wall time, the ratio to the previous size, the
ratio to a numpy baseline measured in the same subprocess (the insecure
one-liner ``np.cumsum(h) + rng.laplace(0, b, n)`` for the cumulative
mechanisms, ``h + rng.laplace(0, b, n)`` for the others), and the peak
memory above the input (peak RSS during the runs minus RSS before them,
and per cell).

Run:  python benchmarks/bench_mechanisms_scaling.py [--huge] [--sizes 1e5,1e6]
      [--mechanisms oh,dawa] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MECHANISMS = ("oh", "ordered", "transform", "dawa", "release")

RELEASE_SPEC = """
[dataset]
id = "bench"
path = "rows.csv"
total_epsilon = 1000

[domain.x]
type = "ordinal"
low = 0
high = {high}

[policies.near]
secrets = "distance_threshold"
theta = 100

[[release]]
name = "x-cdf"
kind = "cdf"
attributes = ["x"]
policy = "near"
epsilon = 1
ranges = [[0, {mid}]]
quantiles = [0.5]
"""


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    # VmHWM: the high-water mark, reset below so it covers the runs only
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _child(mech: str, n: int, repeat: int) -> dict:
    import time

    import numpy as np

    from blowfish_privacy import Domain, Generator, Policy, mechanisms, secrets

    rng = np.random.default_rng(0)
    hist = rng.poisson(3.0, size=n).astype(np.int64)
    domain = Domain.ordinal("x", 0, n - 1)
    pol = Policy(domain, secrets.DistanceThreshold(100))
    gen = Generator()
    eps = 1.0
    if mech == "oh":
        run = lambda: mechanisms.ordered_hierarchical(hist, pol, eps, gen)  # noqa: E731
        base = lambda: np.cumsum(hist) + rng.laplace(0.0, 100.0 / eps, size=n)  # noqa: E731
    elif mech == "ordered":
        run = lambda: mechanisms.ordered(hist, pol, eps, gen)  # noqa: E731
        base = lambda: np.cumsum(hist) + rng.laplace(0.0, 100.0 / eps, size=n)  # noqa: E731
    elif mech == "transform":
        plan = mechanisms.plan_transformed_laplace(pol, eps)
        run = lambda: plan.measure(hist, gen)  # noqa: E731
        base = lambda: hist + rng.laplace(0.0, 2.0 / eps, size=n)  # noqa: E731
    elif mech in ("dawa", "dawa_distinct"):
        if mech == "dawa_distinct":
            hist = rng.permutation(n).astype(np.int64) * 3
        plan = mechanisms.plan_dawa(n, eps)
        run = lambda: plan.measure(hist, gen)  # noqa: E731
        base = lambda: hist + rng.laplace(0.0, 2.0 / eps, size=n)  # noqa: E731
    elif mech == "release":
        import tempfile
        from pathlib import Path

        from blowfish_privacy import cli

        folder = Path(tempfile.mkdtemp(prefix="bench-release-"))
        rows = rng.integers(0, n, size=10**5)
        (folder / "rows.csv").write_text("x\n" + "\n".join(map(str, rows.tolist())) + "\n")
        (folder / "spec.toml").write_text(RELEASE_SPEC.format(high=n - 1, mid=n // 2))
        runs = iter(range(1000))

        def run():
            out = folder / f"out{next(runs)}"
            with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
                code = cli.main(["release", str(folder / "spec.toml"), "--out", str(out), "--no-plots", "--quiet",
                                 "--ledger", str(out) + ".ledger", "--new-ledger"])
            if code not in (0, None):
                raise RuntimeError(f"blowfish release exited with {code}")
            shutil.rmtree(out)

        base = lambda: np.cumsum(hist) + rng.laplace(0.0, 100.0 / eps, size=n)  # noqa: E731
    elif mech == "oh_noise_first":
        sys.path.insert(0, HERE)
        from bench_cumulative import oh_noise_first

        plan = mechanisms.plan_ordered_hierarchical(pol, eps)
        run = lambda: oh_noise_first(hist, plan, gen)  # noqa: E731
        base = lambda: np.cumsum(hist) + rng.laplace(0.0, 100.0 / eps, size=n)  # noqa: E731
    elif mech == "dawa_reference":
        import importlib

        from blowfish_privacy import _dawa

        dp = importlib.import_module("blowfish_privacy.mechanisms.data_dependent._dawa_partition")
        plan = mechanisms.plan_dawa(n, eps)
        scale, pen = plan.parts[0].scale, plan.options["penalty"]

        def run():
            noise = gen.discrete_laplace(scale, size=_dawa.dawa_n_intervals(n))
            rank, sorted_vals = dp.ranks(hist)
            return _dawa.dawa_partition(hist, rank.astype(np.int64), sorted_vals, np.array(noise, dtype=np.float64), pen)

        base = lambda: hist + rng.laplace(0.0, 2.0 / eps, size=n)  # noqa: E731
    else:
        raise ValueError(mech)
    base()  # warm up numpy and the pages of a result
    before = _rss_bytes()
    exact_peak = _reset_peak()
    # the first run gives the peak memory; it faults in fresh memory, which
    # on a virtual machine can cost more than the work at 10^8 cells, so it
    # is timed only where it is the one run (DAWA from 10^7 cells)
    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    peak = _peak_rss_bytes() if exact_peak else 0
    reps = repeat if n <= 10**7 else 2
    t_ours = t_np = float("inf")
    if mech.startswith("dawa") and n >= 10**7:
        reps, t_ours = 0, first
        t0 = time.perf_counter()
        base()
        t_np = time.perf_counter() - t0
    for _ in range(reps):
        # interleaved with the baseline, so a slow spell of the machine
        # hits both sides alike
        t0 = time.perf_counter()
        run()
        t_ours = min(t_ours, time.perf_counter() - t0)
        t0 = time.perf_counter()
        base()
        t_np = min(t_np, time.perf_counter() - t0)
    return {"mech": mech, "n": n, "seconds": t_ours, "numpy": t_np,
            "peak_above_input": max(peak - before, 0) if exact_peak else None}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--huge", action="store_true", help="also run 10^8 cells (needs ~4 GB and minutes)")
    ap.add_argument("--sizes", default=None, help="comma-separated sizes, e.g. 1e5,1e6")
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(a.child[0], int(float(a.child[1])), a.repeat)))
        return
    sizes = [int(float(s)) for s in a.sizes.split(",")] if a.sizes else [10**5, 10**6, 10**7]
    if a.huge and 10**8 not in sizes:
        sizes.append(10**8)
    mechs = [m for m in a.mechanisms.split(",") if m]
    sys.path.insert(0, HERE)
    from _timing import table

    rows = []
    for mech in mechs:
        prev = None
        for n in sizes:
            out = subprocess.run([sys.executable, __file__, "--repeat", str(a.repeat), "--child", mech, str(n)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                rows.append({"mechanism": mech, "cells": f"{n:.0e}", "seconds": "failed",
                             "x previous": "", "/ numpy": "", "peak MiB": "", "bytes/cell": ""})
                print(out.stderr[-2000:], file=sys.stderr)
                prev = None
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            peak = r["peak_above_input"]
            rows.append({
                "mechanism": mech, "cells": f"{n:.0e}", "seconds": f"{r['seconds']:.3f}",
                "x previous": f"{r['seconds'] / prev:.1f}" if prev else "",
                "/ numpy": f"{r['seconds'] / r['numpy']:.2f}",
                "peak MiB": "n/a" if peak is None else f"{peak / 2**20:.0f}",
                "bytes/cell": "n/a" if peak is None else f"{peak / n:.1f}",
            })
            prev = r["seconds"]
            print(table(rows[-1:], list(rows[-1])), file=sys.stderr)
    print("Mechanisms by |T| (each row its own process; time = best of runs; numpy baselines in the same process;")
    print("peak = peak RSS during the runs above the RSS before them):")
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
