"""Tree kernels: building all levels of a 16-ary tree of counts, and the two
passes of weighted least squares consistency.

Baselines, measured in the same process and run:
- tree build: numpy ``level.reshape(-1, 16).sum(1)`` and
  ``np.einsum('ij->i', level.reshape(-1, 16))`` level by level (the ratio
  is taken to the faster of the two; the sides are interleaved);
- consistency: the same two-pass algorithm vectorised with numpy
  (``numpy_up_level`` / ``numpy_down_level`` below), run in place on the same
  fresh copies of the inputs.

Run either way:
    python benchmarks/bench_tree.py            # prints the ratio table
    pytest benchmarks/bench_tree.py            # pytest-benchmark
"""

from __future__ import annotations

import time

import numpy as np

from _timing import best_time, table, interleaved_best
from blowfish_privacy import _tree

F = 16
BUILD_H = 6
BUILD_M = 6  # 6 * 16**6 = 100,663,296 leaves (about 1e8)
WLS_H = 6  # one tree with 16**6 = 16,777,216 leaves, 17,895,697 nodes
REPEAT = 3


# -- numpy baselines ------------------------------------------------------------


def numpy_tree_levels(leaves: np.ndarray, f: int, h: int) -> list[np.ndarray]:
    levels = [leaves]
    for _ in range(h):
        levels.append(levels[-1].reshape(-1, f).sum(axis=1))
    return levels[::-1]


def einsum_tree_levels(leaves: np.ndarray, f: int, h: int) -> list[np.ndarray]:
    levels = [leaves]
    for _ in range(h):
        levels.append(np.einsum("ij->i", levels[-1].reshape(-1, f)))
    return levels[::-1]




def numpy_up_level(zc, vc, z, v, f):
    """``_tree.wls_up_level`` in numpy (in place on z, v)."""
    s = zc.reshape(-1, f).sum(axis=1)
    vs = vc.reshape(-1, f).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = 1.0 / v
        pb = 1.0 / vs
        p = pa + pb
        x = (z * pa + s * pb) / p
        vx = 1.0 / p
    # The special cases, lowest priority first (each later one wins).
    exact_children = vs == 0
    np.copyto(x, s, where=exact_children)
    np.copyto(vx, 0.0, where=exact_children)
    exact_own = v == 0
    np.copyto(x, z, where=exact_own)
    np.copyto(vx, 0.0, where=exact_own)
    unobserved_children = np.isinf(vs)
    np.copyto(x, z, where=unobserved_children)
    np.copyto(vx, v, where=unobserved_children)
    unobserved_own = np.isinf(v)
    np.copyto(x, s, where=unobserved_own)
    np.copyto(vx, vs, where=unobserved_own)
    z[...] = x
    v[...] = vx


def numpy_down_level(xp, zc, vc, f):
    """``_tree.wls_down_level`` in numpy (in place on zc)."""
    zcm = zc.reshape(-1, f)
    vcm = vc.reshape(-1, f)
    d = xp - zcm.sum(axis=1)
    vs = vcm.sum(axis=1)
    unobserved = np.isinf(vcm)
    if unobserved.any():
        n_unobserved = unobserved.sum(axis=1)
        has = n_unobserved > 0
        r = np.zeros_like(d)
        np.divide(d, vs, out=r, where=(vs > 0) & ~has)
        share = np.zeros_like(d)
        np.divide(d, n_unobserved, out=share, where=has)
        with np.errstate(invalid="ignore"):
            zcm += np.where(unobserved, share[:, None], vcm * r[:, None])
    else:
        r = np.zeros_like(d)
        np.divide(d, vs, out=r, where=vs > 0)
        zcm += vcm * r[:, None]


def two_pass(up, down, z, v, f):
    h = len(z) - 1
    for level in range(h - 1, -1, -1):
        up(z[level + 1], v[level + 1], z[level], v[level], f)
    for level in range(h):
        down(z[level], z[level + 1], v[level + 1], f)


# -- measurements -----------------------------------------------------------------


def _time_in_place(run, make_inputs, repeat=REPEAT) -> float:
    """Best wall time of ``run(inputs)`` on fresh inputs (setup not timed)."""
    best = float("inf")
    for _ in range(repeat):
        inputs = make_inputs()
        t0 = time.perf_counter()
        run(inputs)
        best = min(best, time.perf_counter() - t0)
    return best


def build_inputs(m=BUILD_M, h=BUILD_H, f=F):
    return np.random.default_rng(0).integers(0, 1000, size=m * f**h)


def measure_build(leaves=None, f=F, h=BUILD_H) -> dict:
    if leaves is None:
        leaves = build_inputs(h=h, f=f)
    ours = _tree.tree_levels(leaves, f, h)
    for ref in (numpy_tree_levels(leaves, f, h), einsum_tree_levels(leaves, f, h)):
        assert all(np.array_equal(a, b) for a, b in zip(ours, ref))
    del ours, ref
    t = interleaved_best({"ours": lambda: _tree.tree_levels(leaves, f, h),
                          "sum": lambda: numpy_tree_levels(leaves, f, h),
                          "einsum": lambda: einsum_tree_levels(leaves, f, h)}, REPEAT)
    best_np = min(t["sum"], t["einsum"])
    return {
        "leaves": f"{leaves.size:,}",
        "ours s": f"{t['ours']:.3f}",
        "numpy sum s": f"{t['sum']:.3f}",
        "numpy einsum s": f"{t['einsum']:.3f}",
        "ours GB/s": f"{leaves.nbytes / t['ours'] / 1e9:.1f}",
        "ours / best numpy time": f"{t['ours'] / best_np:.2f}",
    }


def wls_problem(h=WLS_H, f=F, seed=1):
    """Noisy counts on every node of one 16-ary tree: the leaves and the
    lower levels observed with per-level variances, the root unobserved."""
    rng = np.random.default_rng(seed)
    leaves = rng.integers(0, 100, size=f**h).astype(np.float64)
    truth = [leaves.reshape(-1, f ** (h - level)).sum(axis=1) for level in range(h + 1)]
    z, v = [], []
    for level, t in enumerate(truth):
        var = np.full(t.size, 2.0 * (1 + level))
        if level == 0:
            var[:] = np.inf
        z.append(t + rng.normal(0.0, 1.0, t.size) * np.sqrt(np.where(np.isinf(var), 0, var)))
        v.append(var)
    return z, v


def measure_consistency(h=WLS_H, f=F) -> dict:
    z0, v0 = wls_problem(h, f)
    fresh = lambda: ([a.copy() for a in z0], [a.copy() for a in v0])  # noqa: E731

    z_ours, v_ours = fresh()
    two_pass(_tree.wls_up_level, _tree.wls_down_level, z_ours, v_ours, f)
    z_np, v_np = fresh()
    two_pass(numpy_up_level, numpy_down_level, z_np, v_np, f)
    for a, b in zip(z_ours, z_np):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-6)
    del z_ours, v_ours, z_np, v_np

    run_ours = lambda zv: two_pass(_tree.wls_up_level, _tree.wls_down_level, *zv, f)  # noqa: E731
    run_np = lambda zv: two_pass(numpy_up_level, numpy_down_level, *zv, f)  # noqa: E731
    t_ours = _time_in_place(run_ours, fresh)
    t_np = _time_in_place(run_np, fresh)
    nodes = sum(a.size for a in z0)
    return {
        "nodes": f"{nodes:,}",
        "ours s": f"{t_ours:.3f}",
        "numpy s": f"{t_np:.3f}",
        "ours Mnodes/s": f"{nodes / t_ours / 1e6:.0f}",
        "numpy/ours time": f"{t_np / t_ours:.2f}",
    }


# -- pytest-benchmark entry points ------------------------------------------------


def test_bench_tree_build(benchmark):
    leaves = build_inputs()
    benchmark.pedantic(lambda: _tree.tree_levels(leaves, F, BUILD_H), rounds=REPEAT, iterations=1)
    t_np = min(best_time(lambda: numpy_tree_levels(leaves, F, BUILD_H), REPEAT),
               best_time(lambda: einsum_tree_levels(leaves, F, BUILD_H), REPEAT))
    ratio = t_np / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_numpy"] = ratio
    print(f"\ntree build, {leaves.size:,} leaves, f=16: best numpy (sum, einsum)/ours time ratio {ratio:.2f}")


def test_bench_consistency(benchmark):
    z0, v0 = wls_problem()

    def setup():
        return ([a.copy() for a in z0], [a.copy() for a in v0], F), {}

    benchmark.pedantic(
        lambda z, v, f: two_pass(_tree.wls_up_level, _tree.wls_down_level, z, v, f),
        setup=setup,
        rounds=REPEAT,
        iterations=1,
    )
    t_np = _time_in_place(
        lambda zv: two_pass(numpy_up_level, numpy_down_level, *zv, F),
        lambda: ([a.copy() for a in z0], [a.copy() for a in v0]),
    )
    ratio = t_np / benchmark.stats.stats.min
    benchmark.extra_info["ratio_vs_numpy"] = ratio
    print(f"\nconsistency, 16-ary tree of height {WLS_H}: numpy/ours time ratio {ratio:.2f}")


if __name__ == "__main__":
    build = measure_build()
    print(f"Tree build, fan-out {F}, all {BUILD_H + 1} levels, best of {REPEAT} interleaved "
          "(vs numpy reshape(-1, 16).sum(1) and einsum('ij->i') per level):")
    print(table([build], list(build)))
    wls = measure_consistency()
    print(f"\nLeast squares consistency, up + down passes, 16-ary tree with 16^{WLS_H} leaves, "
          f"best of {REPEAT} (vs the same two passes in numpy):")
    print(table([wls], list(wls)))
