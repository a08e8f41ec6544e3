"""Public constraints: exact policy-graph search and consistency with two cuboids.

1. Exact alpha (longest simple cycle) and xi (longest simple v+ -> v- path)
   on random directed graphs of 16, 20 and 24 vertices (edge density 0.15,
   0.3 and 0.6), by the bit-set search in C.  Baseline, measured in the same
   run: xi by subset dynamic programming vectorised with numpy (one bit set
   of path ends per vertex subset, layer by layer; O(2^n n)).  Goal: under
   0.2 s at 20 vertices.
2. Least-squares consistency with two exact cuboids (C1 = {A0, A1},
   C2 = {A1, A2}) on a cube of 10^7 cells: the closed form (linear time,
   also timed at 10^6 cells), against scipy's conjugate gradient on the
   normal equations ``(A A^T) mu = A y - b`` with a sparse ``A``, and
   against a dense least-squares solve (numpy.linalg.lstsq) on a 576-cell
   cube where that fits.

Run either way:
    python benchmarks/bench_constraints.py     # prints the tables
    pytest benchmarks/bench_constraints.py     # pytest-benchmark
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from _timing import best_time, table
from blowfish_privacy import _policy_graph
from blowfish_privacy.policy.constraints import Marginal
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.mechanisms.counts.constrained import consistent_estimate

SIZES = (16, 20, 24)
DENSITIES = (0.15, 0.3, 0.6)
GRAPHS = 5
LIMIT = 10**9
BIG = (10, 100, 100, 100)  # 10^7 cells
MID = (10, 100, 100, 10)  # 10^6 cells
SMALL = (4, 6, 6, 4)  # 576 cells, dense solve fits
REPEAT = 3


# -- 1. exact search --------------------------------------------------------------
def random_graph(nv: int, p: float, rng) -> np.ndarray:
    A = rng.random((nv, nv)) < p
    np.fill_diagonal(A, False)
    return np.array([sum(1 << int(w) for w in np.flatnonzero(A[v])) for v in range(nv)], dtype=np.uint64)


def numpy_longest_path(adj: np.ndarray, src: int, dst: int) -> int:
    """xi by subset DP: ends[mask] = bit set of v with a simple src-path covering exactly mask ending at v."""
    nv = adj.size
    radj = np.zeros(nv, dtype=np.uint32)
    for v in range(nv):
        for w in range(nv):
            if int(adj[v]) >> w & 1:
                radj[w] |= np.uint32(1 << v)
    masks = np.arange(1 << nv, dtype=np.uint32)
    pop = np.zeros(masks.size, dtype=np.uint8)
    for v in range(nv):
        pop += ((masks >> v) & 1).astype(np.uint8)
    ends = np.zeros(masks.size, dtype=np.uint32)
    ends[1 << src] = 1 << src
    best = -1
    has_src = ((masks >> src) & 1).astype(bool)
    for k in range(1, nv + 1):
        layer = masks[(pop == k) & has_src]
        e = ends[layer]
        live = e != 0
        layer, e = layer[live], e[live]
        if layer.size == 0:
            break
        if ((e >> dst) & 1).any():
            best = k - 1
        stop = np.uint32(~(1 << dst) & 0xFFFFFFFF)  # a path may not continue past dst
        for v in range(nv):
            ok = (((e & stop) & radj[v]) != 0) & (((layer >> v) & 1) == 0)
            tgt = layer[ok] | np.uint32(1 << v)
            ends[tgt] |= np.uint32(1 << v)
    return best


def measure_search(nv: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed + nv)
    worst = total = 0.0
    worst_np = 0.0
    nodes = 0
    for p in DENSITIES:
        for _ in range(GRAPHS):
            adj = random_graph(nv, p, rng)
            t = best_time(lambda: (_policy_graph.longest_cycle(adj, LIMIT), _policy_graph.longest_path(adj, 0, nv - 1, LIMIT)), 1)
            a, ea, na, _ = _policy_graph.longest_cycle(adj, LIMIT)
            x, ex, nx, _ = _policy_graph.longest_path(adj, 0, nv - 1, LIMIT)
            assert ea and ex
            nodes = max(nodes, na + nx)
            worst = max(worst, t)
            total += t
            if nv <= 20:
                t_np = best_time(lambda: numpy_longest_path(adj, 0, nv - 1), 1)
                assert numpy_longest_path(adj, 0, nv - 1) == x
                worst_np = max(worst_np, t_np)
    count = len(DENSITIES) * GRAPHS
    return {
        "vertices": nv,
        "graphs": count,
        "ours worst s": f"{worst:.4f}",
        "ours mean s": f"{total / count:.5f}",
        "max nodes": nodes,
        "numpy DP (xi) worst s": f"{worst_np:.3f}" if worst_np else "n/a",
        "numpy/ours": f"{worst_np / worst:.0f}" if worst_np else "n/a",
    }


# -- 2. consistency with two cuboids ----------------------------------------------------
def cube_problem(shape, seed=0):
    d = Domain([Ordinal(f"A{i}", 0, s - 1) for i, s in enumerate(shape)])
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 5, size=shape)
    cons = [Marginal(["A0", "A1"], answers=h.sum(axis=(2, 3))), Marginal(["A1", "A2"], answers=h.sum(axis=(0, 3)))]
    y = (h + rng.normal(0, 3, size=shape)).ravel()
    return d, cons, y


def sparse_system(d, cons):
    rows, cols = [], []
    off = 0
    for c in cons:
        lab = c.labels(d)
        rows.append(lab + off)
        cols.append(np.arange(d.size))
        off += c.num_queries(d)
    A = sp.csr_matrix(
        (np.ones(sum(r.size for r in rows)), (np.concatenate(rows), np.concatenate(cols))), shape=(off, d.size)
    )
    b = np.concatenate([c.public_answers(d) for c in cons]).astype(np.float64)
    return A, b


def scipy_cg(A, b, y):
    M = spla.LinearOperator((A.shape[0],) * 2, matvec=lambda v: A @ (A.T @ v), dtype=np.float64)
    mu, _ = spla.cg(M, A @ y - b, rtol=1e-12, maxiter=1000)
    return y - A.T @ mu


def measure_consistency() -> list[dict]:
    out = []
    d, cons, y = cube_problem(SMALL)
    A, b = sparse_system(d, cons)
    Ad = A.toarray()
    ours = consistent_estimate(y, d, cons)[0]
    dense = y + np.linalg.lstsq(Ad, b - Ad @ y, rcond=None)[0]
    assert np.allclose(ours, dense, atol=1e-8)
    t_ours = best_time(lambda: consistent_estimate(y, d, cons), REPEAT)
    t_dense = best_time(lambda: np.linalg.lstsq(Ad, b - Ad @ y, rcond=None), REPEAT)
    out.append({"cells": f"{d.size:,}", "ours s": f"{t_ours:.4f}", "baseline": "numpy dense lstsq",
                "baseline s": f"{t_dense:.4f}", "baseline/ours": f"{t_dense / t_ours:.1f}"})
    for shape in (MID, BIG):
        d, cons, y = cube_problem(shape)
        t_ours = best_time(lambda: consistent_estimate(y, d, cons), REPEAT)
        A, b = sparse_system(d, cons)
        x_cg = scipy_cg(A, b, y)
        x = consistent_estimate(y, d, cons)[0]
        assert np.allclose(x, x_cg, atol=1e-6)
        t_cg = best_time(lambda: scipy_cg(A, b, y), 1 if shape == BIG else REPEAT)
        out.append({"cells": f"{d.size:,}", "ours s": f"{t_ours:.3f}", "baseline": "scipy CG (sparse A)",
                    "baseline s": f"{t_cg:.3f}", "baseline/ours": f"{t_cg / t_ours:.1f}"})
        del A
    return out


# -- pytest-benchmark entry points ---------------------------------------------------
def test_bench_search_20(benchmark):
    rng = np.random.default_rng(20)
    adj = random_graph(20, 0.3, rng)
    benchmark.pedantic(lambda: (_policy_graph.longest_cycle(adj, LIMIT), _policy_graph.longest_path(adj, 0, 19, LIMIT)),
                       rounds=REPEAT, iterations=1)
    t_np = best_time(lambda: numpy_longest_path(adj, 0, 19), 1)
    ratio = t_np / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_numpy_dp"] = ratio
    print(f"\nexact alpha+xi, 20 vertices: numpy-DP(xi only)/ours time ratio {ratio:.0f}")


def test_bench_two_cuboids(benchmark):
    d, cons, y = cube_problem(MID)
    benchmark.pedantic(lambda: consistent_estimate(y, d, cons), rounds=REPEAT, iterations=1)
    A, b = sparse_system(d, cons)
    t_cg = best_time(lambda: scipy_cg(A, b, y), 1)
    ratio = t_cg / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_scipy_cg"] = ratio
    print(f"\ntwo-cuboid consistency, {d.size:,} cells: scipy-CG/ours time ratio {ratio:.1f}")


if __name__ == "__main__":
    rows = [measure_search(nv) for nv in SIZES]
    print("Exact longest cycle + v+/v- path (worst over", GRAPHS * len(DENSITIES), "random graphs per size)")
    print(table(rows, list(rows[0])))
    print()
    rows = measure_consistency()
    print("Consistency with two exact cuboids")
    print(table(rows, list(rows[0])))
