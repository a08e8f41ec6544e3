"""DAWA over the Hilbert order with DAWA's workload step (baselines/dawa_hilbert.py, with the bucket helpers
of mechanisms/grids/hilbert.py): the workload statistics against a brute-force mapping of the rectangles to the
buckets, the share search and its criterion, the budget, the integer post-processing and a fixed-seed
regression."""

import importlib
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator
dawa = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.dawa")

H = importlib.import_module("blowfish_privacy.mechanisms.grids.hilbert")
DH = importlib.import_module("blowfish_privacy.baselines.dawa_hilbert")


def _brute_stats(rects, k, buckets_flat, h):
    """Per rectangle: the bucket weights f_j by counting cells, canonical nodes of the runs of full buckets."""
    order = H.hilbert_order(k)
    pos = np.empty(k * k, np.int64)
    pos[order] = np.arange(k * k)
    bucket_of = buckets_flat  # bucket of every Hilbert position
    m = int(bucket_of.max()) + 1
    sizes = np.bincount(bucket_of, minlength=m)
    nodes = np.zeros(h + 1, np.int64)
    f2 = 0.0
    for a, b, c, d in rects:
        cnt = np.zeros(m)
        for i in range(a, b + 1):
            for j in range(c, d + 1):
                cnt[bucket_of[pos[i * k + j]]] += 1
        f = cnt / sizes
        f2 += float(np.sum(f[(f > 0) & (f < 1)] ** 2))
        full = [j for j in range(m) if f[j] == 1]
        runs = []
        for j in full:
            if runs and runs[-1][1] == j - 1:
                runs[-1][1] = j
            else:
                runs.append([j, j])
        for lo, hi in runs:
            for level, _ in dawa._canonical_nodes(lo, hi, h):
                nodes[level] += 1
    return nodes, f2, pos, sizes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_workload_stats_match_brute_force(seed):
    k = 8
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, k * k), size=rng.integers(3, 20), replace=False))
    bucket_of = np.zeros(k * k, np.int64)
    bucket_of[cuts] = 1
    bucket_of = np.cumsum(bucket_of)
    m = int(bucket_of[-1]) + 1
    h = max(1, (m - 1).bit_length())
    r1 = rng.integers(0, k, 30)
    r2 = np.minimum(k - 1, r1 + rng.integers(0, k, 30))
    c1 = rng.integers(0, k, 30)
    c2 = np.minimum(k - 1, c1 + rng.integers(0, k, 30))
    rects = np.column_stack([r1, r2, c1, c2]).astype(np.int64)
    nodes, f2, pos, sizes = _brute_stats(rects.tolist(), k, bucket_of, h)
    got_nodes, got_f2 = H.bucket_workload_stats(rects, pos.reshape(k, k), bucket_of, sizes, h)
    np.testing.assert_array_equal(got_nodes, nodes)
    assert got_f2 == pytest.approx(f2)


def test_level_share_error_matches_dawa_criterion():
    # the criterion equals DAWA's up-pass workload error (dawa.workload_error) up to its factor, when m = 2^h
    h, m = 4, 16
    starts = np.arange(m)
    rng = np.random.default_rng(5)
    lo = rng.integers(0, m, 40)
    hi = np.minimum(m - 1, lo + rng.integers(0, m, 40))
    queries = dawa._bucket_workload(starts, m, lo, hi)
    nodes = np.zeros(h + 1, np.int64)
    f2 = 0.0
    for full_lo, full_hi, parts in queries:
        f2 += sum(frac * frac for _, frac in parts)  # dawa lists a one-bucket range as a part of weight 1
        if full_lo <= full_hi:
            for level, _ in dawa._canonical_nodes(full_lo, full_hi, h):
                nodes[level] += 1
    w = [0.5, 0.0, 0.25, 1.0]
    shares = [Fraction(x).limit_denominator() / Fraction(sum(w)).limit_denominator() for x in w]
    eps2 = Fraction(1, 100)  # a small epsilon: discrete and continuous Laplace variances agree to 1e-5
    ref = dawa.workload_error(shares, m, queries, eps2)
    ours = DH.level_share_error(w, nodes, f2) * 8 / float(eps2) ** 2
    assert ours == pytest.approx(ref, rel=1e-4)


def test_share_search():
    nodes = np.array([0, 0, 3, 0, 10, 50])
    s = DH.greedy_bucket_shares(nodes, 2.0, 5)
    assert len(s) == 5 and sum(s) <= 1 and s[-1] > 0 and all(isinstance(x, Fraction) for x in s)
    # never worse than all on the buckets
    assert DH.level_share_error([float(x) for x in s], nodes, 2.0) <= DH.level_share_error([0, 0, 0, 0, 1], nodes, 2.0)
    # a workload of single buckets only: everything on the buckets
    assert DH.greedy_bucket_shares(np.array([0, 0, 0, 7]), 0.0, 3) == [0, 0, 1]


@pytest.mark.parametrize("eps,ratio", [(0.1, 0.25), (1.0, 0.5), (Fraction(1, 3), Fraction(2, 3))])
def test_budget(eps, ratio):
    k = 16
    rects = np.array([[0, 15, 0, 15], [1, 9, 3, 12], [4, 4, 0, 15], [0, 7, 8, 15]], np.int64)
    x = np.random.default_rng(1).poisson(4, (k, k)).astype(np.int64)
    x[3:7, 2:9] += 40
    p = DH.plan_dawa_hilbert((k, k), eps, ratio=ratio, workload=rects, weights="level")
    assert p.epsilon_exact <= Fraction(eps)
    r = p.measure(x, Generator(seed=2))
    assert r.epsilon_exact == p.epsilon_exact
    assert r.epsilon_parts["partition"] + r.epsilon_parts["counts"] <= Fraction(eps)
    assert r.epsilon_parts["counts"] <= Fraction(eps) * (1 - Fraction(ratio))
    assert abs(r.histogram.sum() - x.sum()) < 1e-6 * x.sum()  # the root is n (public)
    m = r.params["n_buckets"]
    assert len(r.params["level_shares"]) == (0 if m == 1 else max(1, (m - 1).bit_length()))


def test_integer_output_and_regression():
    k = 16
    rects = np.array([[0, 15, 0, 15], [1, 9, 3, 12]], np.int64)
    x = np.random.default_rng(4).poisson(2, (k, k)).astype(np.int64)
    a = DH.plan_dawa_hilbert((k, k), 1.0, workload=rects).measure(x, Generator(seed=9))
    b = DH.plan_dawa_hilbert((k, k), 1.0, workload=rects, integer="round").measure(x, Generator(seed=9))
    c = DH.plan_dawa_hilbert((k, k), 1.0, workload=rects, integer="truncate").measure(x, Generator(seed=9))
    np.testing.assert_array_equal(b.histogram, np.rint(a.histogram))
    np.testing.assert_array_equal(c.histogram, np.trunc(a.histogram))
    d = DH.plan_dawa_hilbert((k, k), 1.0, workload=rects).measure(x, Generator(seed=9))
    np.testing.assert_array_equal(a.histogram, d.histogram)  # fixed seed: same release
    e = DH.plan_dawa_hilbert((k, k), 1.0, integer="round").measure(x, Generator(seed=9))  # identity workload
    assert np.all(e.histogram == np.rint(e.histogram))


def test_refusals():
    with pytest.raises(ValueError, match="integer"):
        DH.plan_dawa_hilbert((8, 8), 1.0, integer="floor")
    with pytest.raises(ValueError, match="workload"):
        DH.plan_dawa_hilbert((8, 8), 1.0, workload=np.array([[0, 8, 0, 0]]))
    with pytest.raises(ValueError, match="workload"):
        DH.plan_dawa_hilbert((8, 8), 1.0, workload=np.array([[0.0, 1, 0, 0]]))
