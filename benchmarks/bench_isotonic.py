"""Isotonic regression of 10^7 noisy cumulative counts (the post-processing
of a noisy cumulative histogram).

Baseline, measured in the same process and run:
``scipy.optimize.isotonic_regression`` (pool-adjacent-violators in C++),
with unit weights and with explicit weights.

Run either way:
    python benchmarks/bench_isotonic.py            # prints the ratio table
    pytest benchmarks/bench_isotonic.py            # pytest-benchmark
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import isotonic_regression

from _timing import best_time, table
from blowfish_privacy import _isotonic

N = 10**7
NOISE_SCALE = 20.0  # Laplace scale of the noise on each cumulative count


def noisy_cumulative_counts(n: int = N, scale: float = NOISE_SCALE, seed: int = 0):
    rng = np.random.default_rng(seed)
    counts = rng.poisson(3.0, size=n)
    return np.cumsum(counts).astype(np.float64) + rng.laplace(0.0, scale, size=n)


def _weights(n: int, seed: int = 1):
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=n)


def measure(n: int = N) -> list[dict]:
    y = noisy_cumulative_counts(n)
    rows = []
    for label, w in (("unit", None), ("weighted", _weights(n))):
        ours = _isotonic.isotonic(y, w)
        ref = isotonic_regression(y, weights=w).x
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-6)
        n_blocks = int(np.count_nonzero(np.diff(ours))) + 1
        del ours, ref
        t_ours = best_time(lambda: _isotonic.isotonic(y, w))
        t_scipy = best_time(lambda: isotonic_regression(y, weights=w))
        rows.append(
            {
                "weights": label,
                "n": f"{n:,}",
                "blocks": f"{n_blocks:,}",
                "ours s": f"{t_ours:.3f}",
                "scipy s": f"{t_scipy:.3f}",
                "scipy/ours time": f"{t_scipy / t_ours:.2f}",
            }
        )
    return rows


# -- pytest-benchmark entry points ------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_bench_isotonic(benchmark, weighted):
    y = noisy_cumulative_counts()
    w = _weights(N) if weighted else None
    benchmark.pedantic(lambda: _isotonic.isotonic(y, w), rounds=3, iterations=1)
    t_scipy = best_time(lambda: isotonic_regression(y, weights=w))
    ratio = t_scipy / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_scipy"] = ratio
    print(f"\nisotonic, {N:.0e} noisy cumulative counts, weighted={weighted}: "
          f"scipy/ours time ratio {ratio:.2f}")


if __name__ == "__main__":
    rows = measure()
    print(f"Isotonic regression of {N:.0e} noisy cumulative counts (Laplace scale "
          f"{NOISE_SCALE:g}), best of 3, vs scipy.optimize.isotonic_regression:")
    print(table(rows, list(rows[0])))
