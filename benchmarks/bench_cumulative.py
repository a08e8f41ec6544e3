"""A whole cumulative-histogram release on |T| = 10^7, end to end.

Ordered hierarchical (noise + consistency + isotonic regression, secure
generator) and the ordered mechanism, against the insecure numpy one-liner
``np.cumsum(h) + rng.laplace(...)`` (no inference, floating-point noise),
measured in the same run.  Target: OH within 3x of the one-liner.

Run:  python benchmarks/bench_cumulative.py   or   pytest benchmarks/bench_cumulative.py
"""

from __future__ import annotations

import numpy as np

from _timing import best_time, table
from blowfish_privacy import Domain, Generator, Policy, mechanisms, secrets

N = 10**7


def _data(n: int = N):
    rng = np.random.default_rng(0)
    hist = rng.poisson(3.0, size=n).astype(np.int64)
    return Domain.ordinal("x", 0, n - 1), hist


def measure(n: int = N, thetas=(1, 100, "full")) -> list[dict]:
    domain, hist = _data(n)
    gen = Generator()
    rng = np.random.default_rng()
    eps = 1.0
    t_np = best_time(lambda: np.cumsum(hist) + rng.laplace(0.0, 100.0 / eps, size=n))
    rows = []
    for t in thetas:
        theta = n if t == "full" else t
        pol = Policy(domain, secrets.DistanceThreshold(theta))
        t_oh = best_time(lambda: mechanisms.ordered_hierarchical(hist, pol, eps, gen), repeat=2)
        rows.append({"mechanism": f"OH theta={t}", "seconds": f"{t_oh:.3f}",
                     "numpy one-liner s": f"{t_np:.3f}", "time / numpy": f"{t_oh / t_np:.2f}"})
    pol = Policy(domain, secrets.DistanceThreshold(100))
    t_ord = best_time(lambda: mechanisms.ordered(hist, pol, eps, gen), repeat=2)
    rows.append({"mechanism": "ordered theta=100", "seconds": f"{t_ord:.3f}",
                 "numpy one-liner s": f"{t_np:.3f}", "time / numpy": f"{t_ord / t_np:.2f}"})
    return rows


def test_bench_ordered_hierarchical_release(benchmark):
    domain, hist = _data()
    pol = Policy(domain, secrets.DistanceThreshold(100))
    gen = Generator()
    rng = np.random.default_rng()
    benchmark.pedantic(lambda: mechanisms.ordered_hierarchical(hist, pol, 1.0, gen), rounds=2, iterations=1)
    t_np = best_time(lambda: np.cumsum(hist) + rng.laplace(0.0, 100.0, size=N))
    ratio = benchmark.stats.stats.min / t_np
    benchmark.extra_info["time_ratio_vs_numpy_one_liner"] = ratio
    print(f"\nOH release on 1e7 bins: {ratio:.2f}x the numpy one-liner's time")


if __name__ == "__main__":
    rows = measure()
    print(f"Cumulative histogram release, |T| = {N:.0e}, epsilon 1, secure generator, best of 2-3:")
    print(table(rows, list(rows[0])))
