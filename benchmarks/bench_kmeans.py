"""k-means: the fused assignment step, the sensitivity scan, and end to end.

Measured in the same process and run:
- one assignment-and-accumulate step, n = 10^6, d = 3, k = 4, one thread:
  ours (``_kmeans.kmeans_assign``, int64 grid points, exact int64 sums) against
  scikit-learn's Lloyd kernel ``lloyd_iter_chunked_dense`` with one thread
  (float64 points, labels and new centres) and against numpy (distance
  matrix, argmin, bincount);
- the sensitivity scan over the 256^3 colour cube for 4 centroids under
  DistanceThreshold(64) (bisector bound), FullDomain and Attribute (exact
  clique scans): time per scan;
- end to end on the full UCI Skin set (245,057 points), k = 4, 10
  iterations, epsilon 1: Blowfish SuLQ k-means (``method="sulq"``; the
  default grid mechanism is compared in bench_kmeans_policies.py) under
  theta = 64 and FullDomain against diffprivlib's ``KMeans`` (DP, continuous Laplace), time and
  objective ratio to non-private Lloyd from the same start.

scikit-learn and diffprivlib are optional: their rows say "not installed".

Run either way:
    python benchmarks/bench_kmeans.py          # prints the tables
    pytest benchmarks/bench_kmeans.py          # pytest-benchmark
"""

from __future__ import annotations

import numpy as np

from _timing import best_time, table
from blowfish_privacy import Generator, Policy, _kmeans, secrets
from blowfish_privacy.datasets import skin
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.mechanisms import kmeans_objective, kmeans_sensitivity, lloyd
from blowfish_privacy.mechanisms.clustering import kmeans
N, D, K = 1_000_000, 3, 4
REPEAT = 5


def step_inputs(seed=0):
    rng = np.random.default_rng(seed)
    pts = rng.integers(0, 256, size=(N, D)).astype(np.int64)
    cen = rng.uniform(0, 255, size=(K, D))
    refs = np.round(cen).astype(np.int64)
    return pts, cen, refs


def numpy_step(pts_f, cen, refs):
    d2 = ((pts_f[:, None, :] - cen[None, :, :]) ** 2).sum(axis=2)
    lab = d2.argmin(axis=1)
    counts = np.bincount(lab, minlength=K)
    sums = np.stack([np.bincount(lab, weights=pts_f[:, a], minlength=K) for a in range(D)], axis=1)
    return counts, sums - counts[:, None] * refs


def sklearn_step():
    """A closure running one sklearn Lloyd iteration on one thread, or None."""
    try:
        from sklearn.cluster._k_means_lloyd import lloyd_iter_chunked_dense
    except ImportError:
        return None
    pts, cen, _ = step_inputs()
    X = pts.astype(np.float64)
    w = np.ones(N)
    centers_new = np.empty_like(cen)
    weight = np.empty(K)
    labels = np.empty(N, dtype=np.int32)
    shift = np.empty(K)

    def run():
        lloyd_iter_chunked_dense(X, w, cen, centers_new, weight, labels, shift, 1, True)

    return run


def measure_step() -> dict:
    pts, cen, refs = step_inputs()
    pts_f = pts.astype(np.float64)
    counts, sums, _ = _kmeans.kmeans_assign(pts, cen, refs)
    c_np, s_np = numpy_step(pts_f, cen, refs)
    assert np.array_equal(counts, c_np) and np.array_equal(sums, s_np.astype(np.int64))
    t_ours = best_time(lambda: _kmeans.kmeans_assign(pts, cen, refs), REPEAT)
    t_np = best_time(lambda: numpy_step(pts_f, cen, refs), REPEAT)
    sk = sklearn_step()
    t_sk = best_time(sk, REPEAT) if sk is not None else None
    return {
        "n, d, k": f"{N:,}, {D}, {K}",
        "ours ms": f"{t_ours * 1e3:.1f}",
        "sklearn ms": f"{t_sk * 1e3:.1f}" if t_sk else "not installed",
        "numpy ms": f"{t_np * 1e3:.1f}",
        "sklearn/ours time": f"{t_sk / t_ours:.2f}" if t_sk else "-",
        "numpy/ours time": f"{t_np / t_ours:.2f}",
    }


CUBE = Domain([Ordinal(n, 0, 255) for n in ("b", "g", "r")])


def scan_centroids(seed=3):
    rng = np.random.default_rng(seed)
    cen = rng.uniform(0, 255, size=(4, 3))
    return cen, np.round(cen).astype(np.int64)


def measure_scans() -> list[dict]:
    cen, refs = scan_centroids()
    rows = []
    for label, graph in (
        ("L1 theta=64", secrets.DistanceThreshold(64)),
        ("FullDomain", secrets.FullDomain()),
        ("Attribute", secrets.Attribute()),
    ):
        pol = Policy(CUBE, graph)
        s = kmeans_sensitivity(pol, cen, refs)
        t = best_time(lambda: kmeans_sensitivity(pol, cen, refs), 3)
        rows.append(
            {
                "policy": label,
                "cells": f"{CUBE.size:,}",
                "scan s": f"{t:.3f}",
                "S_size": s.size,
                "S_sum": s.sum,
                "exact": s.sum_exact,
                "method": s.method,
            }
        )
    return rows


def measure_end_to_end(eps=1.0, iterations=10) -> list[dict]:
    domain, pts = skin()
    init = np.array([[40.0, 60, 80], [120, 140, 160], [200, 210, 220], [90, 180, 60]])
    base = kmeans_objective(pts, lloyd(pts, domain, init, iterations=iterations))
    rows = []
    for label, graph in (("Blowfish L1 theta=64", secrets.DistanceThreshold(64)), ("Blowfish FullDomain", secrets.FullDomain())):
        pol = Policy(domain, graph)
        res = {}

        def run(pol=pol, res=res):
            res["r"] = kmeans(pts, pol, eps, Generator(seed=1), method="sulq", k=4, iterations=iterations, init=init)

        t = best_time(run, 1)
        rows.append(
            {
                "method": label,
                "time s": f"{t:.2f}",
                "objective ratio": f"{kmeans_objective(pts, res['r'].centroids) / base:.3f}",
                "mean S_sum": f"{np.mean([s for _, s in res['r'].sensitivities]):.0f}",
            }
        )
    try:
        from diffprivlib.models import KMeans as DPKMeans
    except ImportError:
        rows.append({"method": "diffprivlib KMeans", "time s": "not installed", "objective ratio": "-", "mean S_sum": "-"})
        return rows
    import warnings

    bounds = (np.zeros(3), np.full(3, 255.0))
    X = pts.astype(np.float64)
    res = {}

    def run_dp():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = DPKMeans(n_clusters=4, epsilon=eps, bounds=bounds, random_state=1)
            m.fit(X)
        res["c"] = m.cluster_centers_

    t = best_time(run_dp, 1)
    rows.append(
        {
            "method": "diffprivlib KMeans (DP)",
            "time s": f"{t:.2f}",
            "objective ratio": f"{kmeans_objective(pts, res['c']) / base:.3f}",
            "mean S_sum": "-",
        }
    )
    return rows


# -- pytest-benchmark entry points ------------------------------------------------


def test_bench_kmeans_step(benchmark):
    pts, cen, refs = step_inputs()
    benchmark.pedantic(lambda: _kmeans.kmeans_assign(pts, cen, refs), rounds=REPEAT, iterations=1)
    pts_f = pts.astype(np.float64)
    t_np = best_time(lambda: numpy_step(pts_f, cen, refs), REPEAT)
    benchmark.extra_info["ratio_vs_numpy"] = t_np / benchmark.stats.stats.min
    sk = sklearn_step()
    if sk is not None:
        benchmark.extra_info["ratio_vs_sklearn"] = best_time(sk, REPEAT) / benchmark.stats.stats.min
    print(f"\nk-means step: {benchmark.extra_info}")


def test_bench_kmeans_scan(benchmark):
    cen, refs = scan_centroids()
    pol = Policy(CUBE, secrets.DistanceThreshold(64))
    benchmark.pedantic(lambda: kmeans_sensitivity(pol, cen, refs), rounds=3, iterations=1)


def main() -> None:
    print("One assignment-and-accumulate step (one thread):")
    print(table([measure_step()], ["n, d, k", "ours ms", "sklearn ms", "numpy ms", "sklearn/ours time", "numpy/ours time"]))
    print("\nSensitivity scan over the 256^3 colour cube, 4 centroids:")
    print(table(measure_scans(), ["policy", "cells", "scan s", "S_size", "S_sum", "exact", "method"]))
    print("\nEnd to end on UCI Skin (245,057 points), k = 4, 10 iterations, epsilon 1:")
    print(table(measure_end_to_end(), ["method", "time s", "objective ratio", "mean S_sum"]))


if __name__ == "__main__":
    main()
