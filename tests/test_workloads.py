"""Linear query workloads (blowfish_privacy.workloads).

Oracles: the dense query matrix built independently here (loops over the
queries, not the module's code) for gram(), answer(), frobenius_squared()
and n_queries; the DPBench sampler's law by a chi-square test; the
library's DPBench harness for the same draws; kron of grams for Kronecker.
"""

from __future__ import annotations

import doctest
import itertools
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from blowfish_privacy import workloads as wl
from blowfish_privacy.errors import ParameterError
from blowfish_privacy.workloads import (
    AllRanges,
    Explicit,
    Identity,
    Kronecker,
    Marginals,
    Prefix,
    RandomRanges,
    RandomRectangles,
    Ranges,
    Rectangles,
    Stack,
    Total,
    WorkloadTooLargeError,
)


# -- independent oracles -------------------------------------------------------------
def range_rows(n, ranges):
    M = np.zeros((len(ranges), n))
    for k, (lo, hi) in enumerate(ranges):
        M[k, lo:hi + 1] = 1.0
    return M


def rect_rows(shape, rects):
    M = np.zeros((len(rects), shape[0] * shape[1]))
    for k, (r1, r2, c1, c2) in enumerate(rects):
        cell = np.zeros(shape)
        cell[r1:r2 + 1, c1:c2 + 1] = 1.0
        M[k] = cell.ravel()
    return M


def marginal_rows(shape, axes_list):
    rows = []
    cells = list(itertools.product(*[range(n) for n in shape]))
    for axes in axes_list:
        for key in itertools.product(*[range(shape[a]) for a in sorted(axes)]):
            rows.append([1.0 if tuple(c[a] for a in sorted(axes)) == key else 0.0 for c in cells])
    return np.array(rows)


def oracle_matrix(w):
    """The query matrix from the definitions, independent of the module's code."""
    if isinstance(w, Identity):
        return np.eye(w.n)
    if isinstance(w, Total):
        return np.ones((1, w.n))
    if isinstance(w, Prefix):
        return range_rows(w.n, [(0, j) for j in range(w.n)])
    if isinstance(w, AllRanges):
        return range_rows(w.n, [(i, j) for i in range(w.n) for j in range(i, w.n)])
    if isinstance(w, Ranges):
        return range_rows(w.n, w.ranges().tolist())
    if isinstance(w, Rectangles):
        return rect_rows(w.shape, w.rects().tolist())
    if isinstance(w, Marginals):
        return marginal_rows(w.shape, w.axes_list)
    if isinstance(w, Kronecker):
        M = np.ones((1, 1))
        for f in w.factors():
            M = np.kron(M, oracle_matrix(f))
        return M
    if isinstance(w, Stack):
        return np.vstack([oracle_matrix(p) for p in w.parts()])
    if isinstance(w, Explicit):
        return w.matrix()
    raise AssertionError(type(w))


def check_all(w, x):
    M = oracle_matrix(w)
    assert w.n_queries == M.shape[0]
    assert w.size == M.shape[1] == math.prod(w.shape)
    W = w.matrix()
    assert W.dtype == np.float64 and W.shape == (w.n_queries, w.size)
    np.testing.assert_array_equal(W, M)
    G = w.gram()
    assert G.dtype == np.float64 and G.shape == (w.size, w.size)
    np.testing.assert_allclose(G, M.T @ M, rtol=0, atol=1e-9)
    np.testing.assert_allclose(G, G.T, rtol=0, atol=0)
    a = w.answer(x)
    assert a.dtype == np.float64 and a.shape == (w.n_queries,)
    np.testing.assert_allclose(a, M @ np.ravel(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(w.answer(np.ravel(x)), a)
    assert w.frobenius_squared() == pytest.approx(float(np.sum(M * M)), rel=1e-12)
    assert isinstance(repr(w), str) and type(w).__name__ in repr(w)


def small_workloads():
    rng = np.random.default_rng(7)
    yield Identity(5)
    yield Total(4)
    yield Prefix(6)
    yield AllRanges(1)
    yield AllRanges(7)
    yield Ranges(6, [[0, 5], [2, 2], [1, 4], [1, 4], [5, 5]])
    yield RandomRanges(9, 40, rng)
    yield RandomRanges(9, 40, rng, sampler="uniform-endpoints")
    yield Rectangles((3, 4), [[0, 2, 0, 3], [1, 1, 2, 3], [0, 1, 1, 1]])
    yield RandomRectangles((4, 5), 30, rng)
    yield RandomRectangles((5, 3), 30, rng, sampler="uniform-endpoints")
    yield Kronecker(Prefix(3), AllRanges(4))
    yield Kronecker(Identity(2), Total(3), Prefix(2))
    yield Kronecker(RandomRanges(5, 7, rng), Identity(3))
    yield Kronecker(Rectangles((2, 3), [[0, 1, 1, 2], [1, 1, 0, 0]]), Prefix(3))   # a 2-D factor: 3-D domain
    yield Kronecker(Identity(2), Marginals((2, 3), [(0,), (1,)]))
    yield Marginals((3, 4), [(0,), (1,), (0, 1), ()])
    yield Marginals((2, 3, 2), [(0, 2), (1,)])
    yield Stack(Identity(4), Prefix(4), Ranges(4, [[1, 2]]))
    yield Explicit(rng.normal(size=(5, 6)), shape=(2, 3))


@pytest.mark.parametrize("w", list(small_workloads()), ids=repr)
def test_against_dense_oracle(w):
    x = np.random.default_rng(1).integers(0, 100, w.shape)
    check_all(w, x)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), data=st.data())
def test_ranges_property(n, data):
    q = data.draw(st.integers(1, 15))
    lo = data.draw(st.lists(st.integers(0, n - 1), min_size=q, max_size=q))
    hi = [data.draw(st.integers(a, n - 1)) for a in lo]
    w = Ranges(n, np.column_stack([lo, hi]))
    x = np.array(data.draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n)), dtype=float)
    check_all(w, x)


@settings(max_examples=40, deadline=None)
@given(n1=st.integers(1, 6), n2=st.integers(1, 6), data=st.data())
def test_rectangles_property(n1, n2, data):
    q = data.draw(st.integers(1, 10))
    rows = []
    for _ in range(q):
        r1 = data.draw(st.integers(0, n1 - 1))
        c1 = data.draw(st.integers(0, n2 - 1))
        rows.append([r1, data.draw(st.integers(r1, n1 - 1)), c1, data.draw(st.integers(c1, n2 - 1))])
    w = Rectangles((n1, n2), rows)
    x = np.random.default_rng(q).normal(size=(n1, n2))
    check_all(w, x)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 33])
def test_closed_forms(n):
    for w in (Identity(n), Prefix(n), AllRanges(n), Total(n)):
        np.testing.assert_array_equal(w.gram(), Ranges(n, w.ranges()).gram())   # counting path, same answer
        check_all(w, np.arange(n, dtype=float))
    assert AllRanges(n).n_queries == n * (n + 1) // 2 == AllRanges(n).ranges().shape[0]
    u = np.arange(n)
    np.testing.assert_array_equal(AllRanges(n).gram(), (np.minimum.outer(u, u) + 1) * (n - np.maximum.outer(u, u)))
    np.testing.assert_array_equal(Prefix(n).gram(), n - np.maximum.outer(u, u))


def test_allranges_gram_blocks():
    # sizes around the block width of the in-place construction
    for n in (511, 512, 513, 1030):
        u = np.arange(n)
        np.testing.assert_array_equal(AllRanges(n).gram(),
                                      (np.minimum.outer(u, u) + 1.0) * (n - np.maximum.outer(u, u)))


def test_ranges_gram_mirror_blocks():
    rng = np.random.default_rng(3)
    w = RandomRanges(600, 300, rng)
    M = range_rows(600, w.ranges().tolist())
    np.testing.assert_array_equal(w.gram(), M.T @ M)


def test_kronecker_gram_is_kron_of_grams():
    rng = np.random.default_rng(5)
    A, B = RandomRanges(6, 9, rng), AllRanges(5)
    K = Kronecker(A, B)
    np.testing.assert_array_equal(K.gram(), np.kron(A.gram(), B.gram()))
    assert K.factors() == (A, B)
    assert K.shape == (6, 5) and K.n_queries == 9 * 15
    assert K.frobenius_squared() == A.frobenius_squared() * B.frobenius_squared()


def test_all_ranges_frobenius_and_count_large():
    w = AllRanges(4096)
    assert w.n_queries == 4096 * 4097 // 2 == 8390656
    lo, hi = np.triu_indices(300)
    assert AllRanges(300).frobenius_squared() == float(np.sum(hi - lo + 1))


def test_answer_large_allranges_matches_prefix_sums():
    x = np.random.default_rng(2).integers(0, 10, 1000)
    a = AllRanges(1000).answer(x)
    C = np.concatenate([[0], np.cumsum(x)])
    lo, hi = np.triu_indices(1000)
    np.testing.assert_array_equal(a, C[hi + 1] - C[lo])


@pytest.mark.slow
def test_allranges_4096_gram_memory():
    w = AllRanges(4096)
    with pytest.raises(WorkloadTooLargeError):
        w.matrix()
    tracemalloc.start()
    try:
        G = w.gram()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert G.shape == (4096, 4096)
    assert peak < 400 * 2**20, peak
    assert G[0, 0] == 4096 and G[4095, 4095] == 4096 and G[0, 4095] == 1 and G[100, 200] == 101 * (4096 - 200)
    assert G[200, 100] == G[100, 200]
    assert np.trace(G) == w.frobenius_squared()


@pytest.mark.slow
def test_random_ranges_4096_gram_memory():
    w = RandomRanges(4096, 2000, np.random.default_rng(0))
    tracemalloc.start()
    try:
        G = w.gram()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 400 * 2**20, peak
    assert np.trace(G) == w.frobenius_squared()
    lo, hi = w.ranges().T
    u, v = np.random.default_rng(1).integers(0, 4096, (2, 300))
    for a, b in zip(u, v):     # entries by the definition: the ranges covering both cells
        assert G[a, b] == np.sum((lo <= min(a, b)) & (hi >= max(a, b)))


# -- the samplers --------------------------------------------------------------------
def _chi2_pvalue(counts: dict, probs: dict, draws: int) -> float:
    keys = sorted(probs)
    assert set(counts) <= set(keys), "a range outside the support was drawn"
    obs = np.array([counts.get(k, 0) for k in keys], dtype=float)
    exp = np.array([probs[k] * draws for k in keys])
    assert exp.sum() == pytest.approx(draws)
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("n", [1, 5, 9])
def test_dpbench_sampler_law(n):
    draws = 60000
    r = RandomRanges(n, draws, np.random.default_rng(11 + n)).ranges()
    keys, cnt = np.unique(r, axis=0, return_counts=True)
    counts = {tuple(k): c for k, c in zip(keys.tolist(), cnt)}
    # length L uniform in 1..n, then the start uniform among n - L + 1 positions
    probs = {(a, b): 1.0 / (n * (n - (b - a))) for a in range(n) for b in range(a, n)}
    if n == 1:
        assert counts == {(0, 0): draws}
        return
    assert _chi2_pvalue(counts, probs, draws) > 1e-6


def test_uniform_endpoints_sampler_law():
    n, draws = 7, 60000
    r = RandomRanges(n, draws, np.random.default_rng(4), sampler="uniform-endpoints").ranges()
    keys, cnt = np.unique(r, axis=0, return_counts=True)
    counts = {tuple(k): c for k, c in zip(keys.tolist(), cnt)}
    probs = {(a, b): (1.0 if a == b else 2.0) / n**2 for a in range(n) for b in range(a, n)}
    assert _chi2_pvalue(counts, probs, draws) > 1e-6


def test_rectangle_sampler_axes_independent_law():
    shape, draws = (4, 3), 60000
    r = RandomRectangles(shape, draws, np.random.default_rng(9)).rects()
    keys, cnt = np.unique(r, axis=0, return_counts=True)
    counts = {tuple(k): c for k, c in zip(keys.tolist(), cnt)}

    def p(n, a, b):
        return 1.0 / (n * (n - (b - a)))
    probs = {(a, b, c, d): p(4, a, b) * p(3, c, d)
             for a in range(4) for b in range(a, 4) for c in range(3) for d in range(c, 3)}
    assert _chi2_pvalue(counts, probs, draws) > 1e-6


@pytest.mark.parametrize("how", ["dpbench", "uniform-endpoints"])
def test_same_draws_as_dpbench_harness(how):
    from blowfish_privacy.experiments._dpbench_data import random_ranges
    ours = RandomRanges(64, 500, np.random.default_rng(3), sampler=how).ranges()
    np.testing.assert_array_equal(ours, random_ranges(64, 1, 500, np.random.default_rng(3), how))
    ours2 = RandomRectangles((16, 16), 500, np.random.default_rng(4), sampler=how).rects()
    np.testing.assert_array_equal(ours2, random_ranges(16, 2, 500, np.random.default_rng(4), how))


# -- limits and validation -------------------------------------------------------------
def test_refuses_large_dense_arrays():
    with pytest.raises(WorkloadTooLargeError, match=r"8,390,656.*4,096") as e:
        AllRanges(4096).matrix()
    assert isinstance(e.value, MemoryError) and "answer(x)" in str(e.value)
    K = Kronecker(AllRanges(256), AllRanges(256))
    with pytest.raises(MemoryError, match=r"65,536, 65,536.*4,294,967,296 entries.*factors\(\)"):
        K.gram()
    assert [f.gram().shape for f in K.factors()] == [(256, 256), (256, 256)]
    with pytest.raises(WorkloadTooLargeError, match="4,294,967,296"):
        RandomRectangles((256, 256), 10, np.random.default_rng(0)).gram()
    with pytest.raises(WorkloadTooLargeError, match="max_entries"):
        Prefix(10).gram(max_entries=99)
    assert Prefix(10).gram(max_entries=100).shape == (10, 10)
    with pytest.raises(ParameterError, match="max_entries"):
        Prefix(10).gram(max_entries=-1)


def test_rectangles_axis_ranges():
    w = RandomRectangles((5, 4), 20, np.random.default_rng(8))
    rows, cols = w.axis_ranges()
    G = sum(np.kron(np.outer(a, a), np.outer(b, b)) for a, b in zip(rows.matrix(), cols.matrix()))
    np.testing.assert_array_equal(G, w.gram())


@pytest.mark.parametrize("call, err, pattern", [
    (lambda: Identity(0), ParameterError, "n must be an integer >= 1"),
    (lambda: Prefix(2.0), TypeError, "n must be an integer"),
    (lambda: AllRanges(True), TypeError, "n must be an integer"),
    (lambda: Ranges(5, [[0, 5]]), ParameterError, r"ranges\[0\].*outside \[0, 4\]"),
    (lambda: Ranges(5, [[1, 2], [3, 2]]), ParameterError, r"ranges\[1\].*lo > hi"),
    (lambda: Ranges(5, [[-1, 2]]), ParameterError, r"ranges\[0\]"),
    (lambda: Ranges(5, [[0.0, 2.0]]), TypeError, "ranges must hold integers"),
    (lambda: Ranges(5, [[0, 1, 2]]), ParameterError, r"ranges must have shape \(q, 2\)"),
    (lambda: RandomRanges(5, 3, 42), TypeError, "rng must be a numpy.random.Generator"),
    (lambda: RandomRanges(5, 3, np.random.RandomState(0)), TypeError, "rng must be"),
    (lambda: RandomRanges(5, 3, np.random.default_rng(), sampler="uniform"), ParameterError, "sampler must be"),
    (lambda: RandomRanges(5, 0, np.random.default_rng()), ParameterError, "count must be"),
    (lambda: RandomRanges(5, 2.5, np.random.default_rng()), TypeError, "count must be an integer"),
    (lambda: Rectangles((3,), [[0, 0, 0, 0]]), ParameterError, "shape must have 2 axes"),
    (lambda: Rectangles((3, 4), [[0, 2, 1, 4]]), ParameterError, r"rects\[0\].*column range.*outside \[0, 3\]"),
    (lambda: Rectangles((3, 4), [[2, 1, 0, 0]]), ParameterError, r"rects\[0\].*row range.*lo > hi"),
    (lambda: RandomRectangles((3, 0), 2, np.random.default_rng()), ParameterError, r"shape\[1\]"),
    (lambda: RandomRectangles((3, 3), 2, None), TypeError, "rng must be"),
    (lambda: Kronecker(), ParameterError, "at least one factor"),
    (lambda: Kronecker(Prefix(3), np.eye(3)), TypeError, r"factors\[1\] must be a Workload"),
    (lambda: Stack(Prefix(3), Prefix(4)), ParameterError, "one domain"),
    (lambda: Marginals((3, 4), [(2,)]), ParameterError, "axes must be distinct and in 0 .. 1"),
    (lambda: Marginals((3, 4), [(0, 0)]), ParameterError, "distinct"),
    (lambda: Marginals((3, 4), []), ParameterError, "at least one marginal"),
    (lambda: Explicit(np.ones((2, 6)), shape=(4, 2)), ParameterError, "shape"),
    (lambda: Explicit([[1.0, np.nan]]), ParameterError, "finite"),
    (lambda: Explicit([["a"]]), TypeError, "real numbers"),
    (lambda: Prefix(4).answer(np.ones(5)), ParameterError, r"x must have shape \(4,\)"),
    (lambda: Prefix(4).answer(np.ones(4, dtype=complex)), TypeError, "x must hold real numbers"),
])
def test_validation(call, err, pattern):
    with pytest.raises(err, match=pattern):
        call()


def test_reprs():
    assert repr(AllRanges(8)) == "AllRanges(8)"
    assert repr(Kronecker(Prefix(3), Identity(2))) == "Kronecker(Prefix(3), Identity(2))"
    assert repr(RandomRanges(9, 4, np.random.default_rng(0))) == "RandomRanges(n=9, count=4, sampler='dpbench')"
    assert repr(Marginals((2, 3), [(1, 0)])) == "Marginals(shape=(2, 3), axes_list=[(0, 1)])"


@pytest.mark.slow
def test_module_doctest():
    res = doctest.testmod(wl)
    assert res.attempted > 0 and res.failed == 0
