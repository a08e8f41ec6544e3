"""DAWA over the Hilbert order with GreedyH's per-node shares (baselines/dawa_hilbert.py, ``weights="node"``): the
workload matrix over the buckets against counting cells, the budget (largest root-to-leaf path sum, and the
privacy loss of every bounded neighbour by brute force over bucket pairs), the estimate against a dense
weighted least-squares oracle, and a fixed-seed regression."""

import importlib
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator
from blowfish_privacy.noise import discrete_laplace_variance

H = importlib.import_module("blowfish_privacy.mechanisms.grids.hilbert")
DH = importlib.import_module("blowfish_privacy.baselines.dawa_hilbert")
G = importlib.import_module("blowfish_privacy.mechanisms.data_dependent._greedy_nodes")

K = 8


def _data(seed=3):
    rng = np.random.default_rng(seed)
    x = rng.poisson(3, (K, K)).astype(np.int64)
    x[1:4, 2:6] += 60
    x[5:8, 0:3] += 25
    x[6, 6] += 200
    return x


def _rects(seed=7, q=25):
    rng = np.random.default_rng(seed)
    r1 = rng.integers(0, K, q)
    r2 = np.minimum(K - 1, r1 + rng.integers(0, K, q))
    c1 = rng.integers(0, K, q)
    c2 = np.minimum(K - 1, c1 + rng.integers(0, K, q))
    return np.column_stack([r1, r2, c1, c2]).astype(np.int64)


def _positions():
    order = H.hilbert_order(K)
    pos = np.empty(K * K, np.int64)
    pos[order] = np.arange(K * K)
    return order, pos


def _bucket_of(release, order):
    """The bucket of every Hilbert position, from the released (k, k) buckets."""
    return release.buckets.ravel()[order]


def _node_plan(release, rects, eps2):
    """Recompute, from the released buckets and the public rectangles only, the node shares and calibrations."""
    order, pos = _positions()
    bucket_of = _bucket_of(release, order)
    m = int(bucket_of.max()) + 1
    sizes = np.bincount(bucket_of, minlength=m)
    Q = H.bucket_workload_matrix(rects, pos.reshape(K, K), bucket_of, sizes, 1 << (m - 1).bit_length())
    w, collapsed, _ = G.node_greedy(Q, m)
    scales, spends, spent = G.node_calibrations(w, eps2)
    return m, sizes, Q, scales, spends, spent, collapsed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bucket_workload_matrix_counts_cells(seed):
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, K * K), size=rng.integers(3, 30), replace=False))
    bucket_of = np.zeros(K * K, np.int64)
    bucket_of[cuts] = 1
    bucket_of = np.cumsum(bucket_of)
    m = int(bucket_of[-1]) + 1
    sizes = np.bincount(bucket_of)
    rects = _rects(seed, 30)
    order, pos = _positions()
    width = 1 << max(1, (m - 1).bit_length())
    got = H.bucket_workload_matrix(rects, pos.reshape(K, K), bucket_of, sizes, width)
    assert got.shape == (30, width)
    want = np.zeros((30, width))
    for i, (a, b, c, d) in enumerate(rects.tolist()):
        for r in range(a, b + 1):
            for col in range(c, d + 1):
                want[i, bucket_of[pos[r * K + col]]] += 1
        want[i, :m] /= sizes
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


@pytest.mark.parametrize("eps,ratio", [(1.0, 0.5), (Fraction(3), Fraction(1, 4)), (0.1, 0.5)])
def test_node_budget_is_the_largest_path_sum_and_bounds_every_neighbour(eps, ratio):
    x, rects = _data(), _rects()
    p = DH.plan_dawa_hilbert((K, K), eps, ratio=ratio, workload=rects)
    assert p.options["weights"] == "node"
    eps_f = Fraction(eps)
    eps2 = eps_f - eps_f * Fraction(ratio)
    assert p.epsilon_exact <= eps_f
    r = p.measure(x, Generator(seed=5))
    assert r.params["weights"] == "node" and r.epsilon_exact == p.epsilon_exact
    counts = r.epsilon_parts["counts"]
    assert r.epsilon_parts["partition"] + counts <= eps_f
    m, _sizes, _Q, _scales, spends, spent, _c = _node_plan(r, rects, eps2)
    assert m == r.params["n_buckets"]
    if m == 1:
        assert counts == 0
        return
    assert counts == spent <= eps2
    # a bounded neighbour moves one record from bucket a to bucket b: the nodes on the two root-to-leaf paths
    # below their common ancestor change by one each, a node of spend e at scale 2/e' (e <= e') costing e / 2
    h = len(spends) - 1
    worst = Fraction(0)
    for a in range(m):
        for b in range(m):
            if a == b:
                continue
            loss = Fraction(0)
            for level in range(1, h + 1):
                ga, gb = a >> (h - level), b >> (h - level)
                if ga != gb:
                    loss += (spends[level][ga] + spends[level][gb]) / 2
            worst = max(worst, loss)
    assert worst <= spent
    # the calibrations spend what they claim: scale 2 / e with e the node's exact spend
    for level in range(1, h + 1):
        for sc, e in zip(_scales[level], spends[level]):
            assert (sc is None) == (e == 0)
            if sc is not None:
                assert Fraction(sc) * e >= 2


class _Recording:
    """A seeded Generator whose discrete Laplace additions are recorded (input, output, scale)."""

    def __init__(self, seed):
        self.gen = Generator(seed=seed)
        self.calls = []
        inner = self.gen.add_discrete_laplace

        def add(values, scale):
            out = inner(values, scale)
            self.calls.append((np.array(values, copy=True), np.array(out, copy=True), scale))
            return out

        self.gen.add_discrete_laplace = add


def _oracle(m, sizes, scales, collapsed, calls, bcounts, n):
    """Dense weighted least squares of the bucket counts on the recorded node measurements, sum = n exactly.

    The minimum-norm solution (a node measured only as one total gets its estimate spread equally)."""
    h = len(scales) - 1
    rows, ys, ws = [], [], []
    it = iter(calls)
    for level in range(1, h + 1):
        width = 1 << (h - level)
        groups = {}
        for g, sc in enumerate(scales[level]):
            if sc is not None and (g << (h - level)) < m:
                groups.setdefault(sc, []).append(g)
        for sc, idx in groups.items():
            values, noisy, scale = next(it)
            assert scale == sc
            for g, v, z in zip(idx, values.tolist(), noisy.tolist()):
                a, b = g * width, min((g + 1) * width, m)
                assert v == bcounts[a:b].sum()  # the measured count is the node's true count
                row = np.zeros(m)
                row[a:b] = 1.0
                rows.append(row)
                ys.append(float(z))
                ws.append(1.0 / np.sqrt(discrete_laplace_variance(sc)))
    A = np.array(rows) * np.array(ws)[:, None]
    y = np.array(ys) * np.array(ws)
    # the constraint sum = n: x = n/m + N z, N an orthonormal basis of the vectors summing to 0
    base = np.full(m, n / m)
    u, _s, vt = np.linalg.svd(np.ones((1, m)))
    N = vt[1:].T
    z = np.linalg.lstsq(A @ N, y - A @ base, rcond=1e-10)[0]
    return base + N @ z


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_node_estimate_is_the_dense_least_squares_solution(seed):
    x, rects = _data(seed), _rects(seed + 10)
    eps = Fraction(2)
    rec = _Recording(seed)
    p = DH.plan_dawa_hilbert((K, K), eps, ratio=Fraction(1, 4), workload=rects)
    r = p.measure(x, rec.gen)
    m, sizes, _Q, scales, _spends, _spent, collapsed = _node_plan(r, rects, eps * Fraction(3, 4))
    assert m > 4
    if seed == 2:  # this case measures internal nodes and nodes as one total (collapsed)
        assert any(c.any() for c in collapsed)
        assert any(sc is not None for lv in scales[1:-1] for sc in lv)
    order, _pos = _positions()
    bucket_of = _bucket_of(r, order)
    bcounts = np.bincount(bucket_of, weights=x.ravel()[order], minlength=m).astype(np.int64)
    # the partition's noise is drawn before (other calls); the hierarchy's are the last ones
    n_hier = sum(len({sc for g, sc in enumerate(scales[lv]) if sc is not None and (g << (len(scales) - 1 - lv)) < m})
                 for lv in range(1, len(scales)))
    calls = rec.calls[len(rec.calls) - n_hier:]
    want = _oracle(m, sizes, scales, collapsed, calls, bcounts, int(x.sum()))
    got_flat = r.histogram.ravel()[order]
    got = np.bincount(bucket_of, weights=got_flat, minlength=m)  # the bucket estimates (uniform expansion)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-7)


def test_node_regression_and_level_still_selectable():
    x, rects = _data(), _rects()
    a = DH.plan_dawa_hilbert((K, K), 1.0, ratio=0.5, workload=rects, integer="round").measure(x, Generator(seed=11))
    b = DH.plan_dawa_hilbert((K, K), 1.0, ratio=0.5, workload=rects, integer="round").measure(x, Generator(seed=11))
    np.testing.assert_array_equal(a.histogram, b.histogram)
    assert a.params["weights"] == "node" and "level_shares" not in a.params
    assert a.histogram.sum() == pytest.approx(x.sum(), abs=K * K)
    assert REGRESSION == (a.params["n_buckets"], a.histogram.ravel()[:: 7].astype(int).tolist())
    lv = DH.plan_dawa_hilbert((K, K), 1.0, ratio=0.5, workload=rects, weights="level").measure(x, Generator(seed=11))
    assert lv.params["weights"] == "level" and "level_shares" in lv.params
    assert not np.array_equal(lv.histogram, a.histogram)
    with pytest.raises(ValueError, match="weights"):
        DH.plan_dawa_hilbert((K, K), 1.0, workload=rects, weights="per-node")


REGRESSION = (20, [3, 2, 5, 65, 65, 3, 24, 30, 33, 2])
