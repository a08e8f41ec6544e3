"""Histogram kernels: DAWA's partition and the tree transform.

- DAWA partition (noise + costs of every dyadic-length interval + dynamic
  program) on |T| = 4096 (INCOME from DPBench when available, otherwise a
  synthetic histogram) and |T| = 10^6, against the O(n^2) numpy dynamic
  program ``dawa.exact_partition`` on 4096 (the reference's cost is checked
  equal; at 10^6 the reference is not feasible).
- ``transform`` for the line graph (x_G is the cumulative histogram) on
  |T| = 10^8 against ``np.cumsum`` on the same array; ``inverse`` against
  ``np.diff``; a random tree of 10^7 vertices against ``np.cumsum`` of the
  same size.  Target: the line transform within 1.5x of ``np.cumsum``.

Ratios are measured in the same run.  The DPBench data are read from
``$BLOWFISH_DATA/dpbench_1d``, else ../shared/data/dpbench_1d beside the repository (``_data.py``)
(``$BLOWFISH_DPBENCH_DIR``, the folder itself, is a deprecated alias).

Run:  python benchmarks/bench_histograms.py   or   pytest benchmarks/bench_histograms.py
"""

from __future__ import annotations

import importlib
import os

import numpy as np

from _timing import best_time, table
from blowfish_privacy import Generator, _dawa
from blowfish_privacy import transform as tf
import _data  # noqa: F401  (BLOWFISH_DATA beside the repository when unset)
from blowfish_privacy.experiments.histograms import default_data_dir

dw = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.dawa")

N_LINE = 10**8
N_TREE = 10**7
REPEAT = 3
PENALTY = 20.0
DATA = default_data_dir()  # the one variable of every benchmark's data: BLOWFISH_DATA


def histogram_4096() -> tuple[np.ndarray, str]:
    path = os.path.join(DATA, "INCOME.n4096.npy") if DATA else None
    if path and os.path.exists(path):
        return np.load(path).astype(np.int64), "INCOME"
    return np.random.default_rng(0).poisson(20.0, 4096).astype(np.int64), "synthetic Poisson(20)"


def histogram_large(n: int = 10**6) -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.repeat(rng.poisson(30.0, n // 64), 64)[:n].astype(np.int64) + rng.poisson(1.0, n)


def measure_dawa() -> list[dict]:
    gen = Generator(seed=1)
    rows = []
    h4, label = histogram_4096()
    zero = np.zeros(_dawa.dawa_n_intervals(h4.size))
    ours0 = dw.partition_with_noise(h4, zero, PENALTY)
    ref_cost, _ = dw.exact_partition(h4, PENALTY)
    assert abs(dw.partition_cost(h4, ours0, PENALTY) - ref_cost) <= 1e-9 * max(1.0, ref_cost)
    t_ref = best_time(lambda: dw.exact_partition(h4, PENALTY), 1)
    t_kernel = best_time(lambda: dw.partition_with_noise(h4, zero, PENALTY), REPEAT)
    t_full = best_time(lambda: dw.dawa_partition(h4, 0.1, gen, penalty=PENALTY), REPEAT)
    rows.append({"input": f"{label}, |T|=4096", "partition s": f"{t_full:.4f}", "kernel s": f"{t_kernel:.4f}",
                 "O(n^2) reference s": f"{t_ref:.3f}", "reference/kernel": f"{t_ref / t_kernel:.0f}"})
    hl = histogram_large()
    t_full = best_time(lambda: dw.dawa_partition(hl, 0.1, gen, penalty=PENALTY), 2)
    zero = np.zeros(_dawa.dawa_n_intervals(hl.size))
    t_kernel = best_time(lambda: dw.partition_with_noise(hl, zero, PENALTY), 2)
    rows.append({"input": "synthetic, |T|=10^6", "partition s": f"{t_full:.3f}", "kernel s": f"{t_kernel:.3f}",
                 "O(n^2) reference s": "infeasible", "reference/kernel": "-"})
    return rows


def line_input(n: int = N_LINE) -> np.ndarray:
    return np.random.default_rng(2).integers(0, 100, n)


def random_tree(n: int, seed: int = 3) -> tf.TreeEmbedding:
    rng = np.random.default_rng(seed)
    parent = np.empty(n, dtype=np.int64)
    parent[0] = -1
    parent[1:] = (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)  # random recursive tree
    return tf.tree_from_parent(parent)


def measure_transform() -> list[dict]:
    x = line_input()
    t = tf.line_tree(x.size)
    xg = tf.transform(x, t)
    assert np.array_equal(xg, np.cumsum(x))
    t_ours = best_time(lambda: tf.transform(x, t), REPEAT)
    t_np = best_time(lambda: np.cumsum(x), REPEAT)
    t_inv = best_time(lambda: tf.inverse(xg, t), REPEAT)
    t_diff = best_time(lambda: np.diff(xg, prepend=0), REPEAT)
    del xg
    rows = [
        {"operation": "transform, line, 10^8", "ours s": f"{t_ours:.3f}", "numpy": "np.cumsum",
         "numpy s": f"{t_np:.3f}", "ours/numpy time": f"{t_ours / t_np:.2f}"},
        {"operation": "inverse, line, 10^8", "ours s": f"{t_inv:.3f}", "numpy": "np.diff",
         "numpy s": f"{t_diff:.3f}", "ours/numpy time": f"{t_inv / t_diff:.2f}"},
    ]
    del x
    tree = random_tree(N_TREE)
    y = line_input(N_TREE)
    t_tree = best_time(lambda: tf.transform(y, tree), REPEAT)
    t_inv = best_time(lambda: tf.inverse(y, tree), REPEAT)
    t_np = best_time(lambda: np.cumsum(y), REPEAT)
    rows.append({"operation": "transform, random tree, 10^7", "ours s": f"{t_tree:.3f}", "numpy": "np.cumsum",
                 "numpy s": f"{t_np:.3f}", "ours/numpy time": f"{t_tree / t_np:.2f}"})
    rows.append({"operation": "inverse, random tree, 10^7", "ours s": f"{t_inv:.3f}", "numpy": "np.cumsum",
                 "numpy s": f"{t_np:.3f}", "ours/numpy time": f"{t_inv / t_np:.2f}"})
    return rows


# -- pytest-benchmark entry points ------------------------------------------------


def test_bench_line_transform(benchmark):
    x = line_input()
    t = tf.line_tree(x.size)
    benchmark.pedantic(lambda: tf.transform(x, t), rounds=REPEAT, iterations=1)
    ratio = benchmark.stats.stats.min / best_time(lambda: np.cumsum(x), REPEAT)
    benchmark.extra_info["time_ratio_vs_np_cumsum"] = ratio
    print(f"\nline transform on 1e8: {ratio:.2f}x np.cumsum's time")


def test_bench_dawa_partition(benchmark):
    h4, _ = histogram_4096()
    gen = Generator(seed=1)
    benchmark.pedantic(lambda: dw.dawa_partition(h4, 0.1, gen, penalty=PENALTY), rounds=REPEAT, iterations=1)
    zero = np.zeros(_dawa.dawa_n_intervals(h4.size))
    t_kernel = best_time(lambda: dw.partition_with_noise(h4, zero, PENALTY), REPEAT)
    ratio = best_time(lambda: dw.exact_partition(h4, PENALTY), 1) / t_kernel
    benchmark.extra_info["reference_over_kernel"] = ratio
    print(f"\nDAWA partition on 4096: O(n^2) reference / kernel time {ratio:.0f}")


if __name__ == "__main__":
    rows = measure_dawa()
    print(f"DAWA partition (dyadic intervals), best of {REPEAT} (10^6: best of 2):")
    print(table(rows, list(rows[0])))
    rows = measure_transform()
    print(f"\nTransformational equivalence, best of {REPEAT}:")
    print(table(rows, list(rows[0])))
