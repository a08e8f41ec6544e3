"""Throughput of the secure exact discrete Laplace sampler.

Baselines, measured in the same process and run:
- ``numpy.random.default_rng().laplace`` (PCG64, floating point, not secure,
  not exact): the speed a user compares us with;
- OpenDP's exact integer Laplace (``make_laplace`` on an int vector), when
  the ``opendp`` package is installed (``pip install '.[bench]'``).

Run either way:
    python benchmarks/bench_sampler.py            # prints the ratio table
    pytest benchmarks/bench_sampler.py            # pytest-benchmark
"""

from __future__ import annotations


import numpy as np
import pytest

from _timing import best_time, table, interleaved_best
from blowfish_privacy import Generator

N = 10**7
# Integer scales 1 to 10^6 and a float scale: 1/0.3 becomes the rational
# t/s nearest above it with t, s < 2^32 (t near 2^32, s > 1).
SCALES = (1, 10, 100, 1000, 10**4, 10**5, 10**6, 1 / 0.3)
REPEAT = 5
N_OPENDP = 200_000  # OpenDP is ~100x slower; a smaller n keeps the run short




def _opendp_sampler(scale):
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=float(scale)
    )
    zeros = [0] * N_OPENDP
    return lambda: meas(zeros)


def measure_sampling(n: int = N, scales=SCALES, repeat: int = REPEAT) -> list[dict]:
    one = Generator(threads=1)  # secure: what a release uses; one core
    many = Generator()  # secure, all cores this process may use
    rng = np.random.default_rng()
    rows = []
    for scale in scales:
        best = interleaved_best(
            {
                "ours": lambda: one.discrete_laplace(scale, size=n),
                "numpy": lambda: rng.laplace(0.0, scale, size=n),
                "many": lambda: many.discrete_laplace(scale, size=n),
            },
            repeat,
        )
        t_ours, t_np, t_many = best["ours"], best["numpy"], best["many"]
        eff = Generator.effective_scale(scale)
        row = {
            "scale": f"{scale:g}" if eff.denominator == 1 else f"{scale:.4g} (t/s={eff})",
            "ours 1 core M/s": f"{n / t_ours / 1e6:.1f}",
            "numpy M/s": f"{n / t_np / 1e6:.1f}",
            "ours/numpy 1 core": f"{t_np / t_ours:.2f}",
            f"ours/numpy {many._threads} threads": f"{t_np / t_many:.2f}",
            "opendp M/s": "n/a",
            "ours/opendp": "n/a",
        }
        od = _opendp_sampler(scale)
        if od is not None:
            t_od = best_time(od, repeat=2) * n / N_OPENDP
            row["opendp M/s"] = f"{n / t_od / 1e6:.3f}"
            row["ours/opendp"] = f"{t_od / t_ours:.0f}"
        rows.append(row)
    return rows


def measure_add(n: int = N, scale: float = 20.0) -> dict:
    """Noise on 10^7 counts end to end: validation, sampling, addition."""
    from blowfish_privacy import mechanisms

    counts = np.random.default_rng(0).integers(0, 1000, size=n)
    gen = Generator()
    rng = np.random.default_rng()
    t_ours = best_time(
        lambda: mechanisms.laplace(counts, sensitivity=2, epsilon=2 / scale, generator=gen)
    )
    t_np = best_time(lambda: counts + rng.laplace(0.0, scale, size=n))
    return {
        "n": n,
        "ours s": f"{t_ours:.3f}",
        "numpy s": f"{t_np:.3f}",
        "ours/numpy speed": f"{t_np / t_ours:.2f}",
    }


# -- pytest-benchmark entry points -----------------------------------------


@pytest.mark.parametrize("scale", SCALES)
def test_bench_discrete_laplace(benchmark, scale):
    gen = Generator(threads=1)
    rng = np.random.default_rng()
    benchmark.pedantic(lambda: gen.discrete_laplace(scale, size=N), rounds=3, iterations=1)
    t_np = best_time(lambda: rng.laplace(0.0, scale, size=N))
    ratio = t_np / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_numpy_laplace"] = ratio
    print(f"\nscale {scale}: ours/numpy throughput ratio {ratio:.2f}")


def test_bench_add_noise(benchmark):
    from blowfish_privacy import mechanisms

    counts = np.random.default_rng(0).integers(0, 1000, size=N)
    gen = Generator()
    rng = np.random.default_rng()
    benchmark.pedantic(
        lambda: mechanisms.laplace(counts, sensitivity=2, epsilon=0.1, generator=gen),
        rounds=3,
        iterations=1,
    )
    t_np = best_time(lambda: counts + rng.laplace(0.0, 20.0, size=N))
    ratio = t_np / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_numpy"] = ratio
    print(f"\nadd noise to 1e7 counts: ours/numpy throughput ratio {ratio:.2f}")


if __name__ == "__main__":
    rows = measure_sampling()
    print(
        f"Discrete Laplace, {N:.0e} samples, best of {REPEAT} rounds with the sides interleaved "
        f"(OpenDP on {N_OPENDP:.0e}):"
    )
    print(table(rows, list(rows[0])))
    add = measure_add()
    print("\nAdd noise to 1e7 counts end to end (mechanisms.laplace vs counts + rng.laplace):")
    print(table([add], list(add)))
