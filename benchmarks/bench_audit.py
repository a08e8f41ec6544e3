"""Time of the exact auditor: a 6-value domain, n = 3, the OH mechanism.

There is no external equivalent to compare with; the figure reported is
the wall time of one full audit (all neighbour pairs, recorded noisy
stages, exact log-ratios), and, as a reference measured in the same run,
the time of one OH release on the same tiny domain.

Run:  python benchmarks/bench_audit.py   or   pytest benchmarks/bench_audit.py
"""

import numpy as np

from _timing import best_time
from blowfish_privacy import Domain, Generator, Policy, audit, mechanisms, secrets


def _policy():
    return Policy(Domain.ordinal("x", 0, 5), secrets.DistanceThreshold(2))


def measure():
    pol = _policy()
    t_audit = best_time(lambda: audit.exact(mechanisms.ordered_hierarchical, pol, epsilon=1.0, n=3, fanout=2))
    hist = np.array([1, 0, 2, 0, 0, 0])
    gen = Generator(seed=0)
    t_one = best_time(lambda: mechanisms.ordered_hierarchical(hist, pol, 1.0, gen, fanout=2), repeat=20)
    return t_audit, t_one


def test_bench_audit_oh(benchmark):
    pol = _policy()
    rep = benchmark.pedantic(
        lambda: audit.exact(mechanisms.ordered_hierarchical, pol, epsilon=1.0, n=3, fanout=2), rounds=3, iterations=1
    )
    assert rep.ok


if __name__ == "__main__":
    t_audit, t_one = measure()
    print(f"exact audit of OH, |T| = 6, n = 3: {t_audit:.3f} s "
          f"({t_audit / t_one:.0f} single OH releases' worth, one release {t_one * 1e3:.2f} ms)")
