"""Optimised strategies under a policy (``plan_optimized``): expected error, time and memory.

The targets of the strategy-optimisation work, printed as ratios in one
run (expected total squared errors over the workload, epsilon 0.1, the
analytic formula of each plan; lower is better):

* 1-D, all ranges over 4096 cells, under the line and distance thresholds
  4 and 64: the optimum ÷ the ordered mechanism (prefix sums) and ÷ the
  ordered hierarchical mechanism (as a linear strategy with least
  squares), and ÷ the SVD lower bound on any data-independent linear
  mechanism under the policy.
* 2-D, 2000 DPBench random rectangles on 128 x 128 and 256 x 256: the grid
  policy's optimum (Kronecker, L1 theta 1) ÷ HDMM (Kronecker p-Identity
  under bounded DP) and ÷ the identity under bounded DP, with the lower
  bounds of both policies.

The empirical comparison with every DP baseline on the shared 2-D data is
``blowfish bench dpbench --dims 2 --algorithms hdmm,optimized_grid,...``.

Run:
    python benchmarks/bench_optimized.py [--quick]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from blowfish_privacy import Domain, Ordinal, Policy, secrets
from blowfish_privacy.mechanisms import plan_kronecker, plan_optimized
from blowfish_privacy.workloads import AllRanges, RandomRectangles

EPSILON = 0.1


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def one_dimensional(n: int) -> list[str]:
    W = AllRanges(n)
    lines = [f"1-D all ranges over {n} cells, epsilon {EPSILON}",
             "policy | chosen | opt/ordered | opt/OH | opt/lower bound | seconds (optimisation; with the bound) "
             "| peak MiB"]
    for name, graph in (("line", secrets.Line()), ("threshold 4", secrets.DistanceThreshold(4)),
                        ("threshold 64", secrets.DistanceThreshold(64))):
        policy = Policy(Domain.ordinal("x", 0, n - 1), graph)
        t = time.perf_counter()
        plan = plan_optimized(W, policy, EPSILON, restarts=1)
        sec = time.perf_counter() - t
        c = plan.options["candidates"]
        err = plan.expected_error["workload_total_squared_error"]
        oh = c.get("ordered-hierarchical")
        lb = plan.options["lower_bound"].get("value")
        lines.append(f"{name} | {plan.options['chosen']} | {err / c['prefix']:.3f} | "
                     f"{'-' if oh is None else f'{err / oh:.3f}'} | {'-' if not lb else f'{err / lb:.2f}'} | "
                     f"{plan.options['optimisation_seconds']:.1f}; {sec:.1f} | {_peak_mib():.0f}")
    return lines


def two_dimensional(k: int) -> list[str]:
    W = RandomRectangles((k, k), 2000, np.random.default_rng(0))
    dom = Domain([Ordinal("row", 0, k - 1), Ordinal("col", 0, k - 1)])
    grid = Policy(dom, secrets.DistanceThreshold(1))
    full = Policy(dom, secrets.FullDomain())
    t = time.perf_counter()
    g = plan_optimized(W, grid, EPSILON, restarts=1)
    t_grid = time.perf_counter() - t
    t = time.perf_counter()
    h = plan_optimized(W, full, EPSILON, restarts=1)
    t_dp = time.perf_counter() - t
    ident = plan_kronecker([np.eye(k), np.eye(k)], full, EPSILON, workload=W, total="none")
    eg = g.expected_error["workload_total_squared_error"]
    eh = h.expected_error["workload_total_squared_error"]
    ei = ident.expected_error["workload_total_squared_error"]
    lg = g.options["lower_bound"].get("value")
    lh = h.options["lower_bound"].get("value")
    return [f"2-D 2000 random rectangles on {k} x {k}, epsilon {EPSILON}",
            f"grid optimum ({g.options['chosen']}) / HDMM under bounded DP ({h.options['chosen']}): {eg / eh:.3f}",
            f"grid optimum / identity under bounded DP: {eg / ei:.3f};  HDMM / identity: {eh / ei:.3f}",
            f"grid optimum / its lower bound: {eg / lg:.2f};  HDMM / the bounded-DP lower bound: {eh / lh:.2f}"
            if lg and lh else "lower bounds: not computed",
            f"HDMM's lower bound / the grid's lower bound: {lh / lg:.2f} (the most any grid strategy can gain)"
            if lg and lh else "",
            f"optimisation seconds: grid {t_grid:.1f}, HDMM {t_dp:.1f}; peak MiB {_peak_mib():.0f}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1024 cells and 64 x 64 (a smoke run)")
    args = ap.parse_args(argv)
    sizes1 = [1024] if args.quick else [4096]
    sizes2 = [64] if args.quick else [128, 256]
    for n in sizes1:
        print("\n".join(one_dimensional(n)), flush=True)
    for k in sizes2:
        print("\n".join(line for line in two_dimensional(k) if line), flush=True)
    return 0


def test_quick_run_prints(capsys):
    """The smoke size runs and prints every ratio (no timing assertions)."""
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "opt/ordered" in out and "grid optimum" in out


if __name__ == "__main__":
    sys.exit(main())
