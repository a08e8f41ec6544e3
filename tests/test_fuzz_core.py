"""Fuzzing every public function that reaches the C core (issue 12).

Each case asserts "a clear exception (TypeError, ValueError, OverflowError)
or a correct result", where the result is checked against an oracle in
Python integers.  Inputs vary shape, dtype (int8..uint64, float, bool,
object), byte order, alignment (``np.frombuffer`` at offset 1), strides,
extremes (int64 min/max), NaN/inf, empty and huge sizes.  The default
profile keeps the file under ~30 s; ``BLOWFISH_FUZZ_LONG=1 pytest -m slow
tests/test_fuzz_core.py`` runs a longer one.
The same file runs under ASan/UBSan in ``.ci/sanitize``.
"""

from __future__ import annotations

import itertools
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blowfish_privacy import Domain, Generator, Ordinal, Policy, secrets, transform
from blowfish_privacy import _dawa, _isotonic, _kmeans, _policy_graph, _rng, _transform, _tree
from blowfish_privacy import mechanisms as M
from blowfish_privacy.policy.constraints import longest_cycle_and_path

CLEAR = (TypeError, ValueError, OverflowError)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
# noise this small is 0 with probability 1 - 2 exp(-2**31): results are exact
TINY = Fraction(1, 2**31)

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
EXTREMES = [0, 1, -1, 2, 2**31, 2**62, I64_MAX, I64_MIN, I64_MIN + 1, 2**63, 2**64 - 1]


# -- strategies ---------------------------------------------------------------


def _layout(arr: np.ndarray, how: str) -> np.ndarray:
    """The same values, laid out as ``how`` says (misaligned, strided, byte-swapped)."""
    if how == "misaligned" and arr.ndim == 1 and arr.dtype.itemsize > 1:
        buf = bytearray(arr.nbytes + 1)
        out = np.frombuffer(buf, dtype=arr.dtype, offset=1, count=arr.size)
        out[...] = arr
        return out
    if how == "strided" and arr.ndim == 1:
        wide = np.zeros(2 * arr.size, dtype=arr.dtype)
        wide[::2] = arr
        return wide[::2]
    if how == "swapped" and arr.dtype.itemsize > 1 and arr.dtype.kind in "iuf":
        return arr.astype(arr.dtype.newbyteorder())
    return arr


@st.composite
def int_vectors(draw, min_size=0, max_size=12, signed=True):
    """(array, exact Python values or None when the values are not integers)."""
    kind = draw(st.sampled_from(INT_DTYPES + ["f8", "bool", "object", "f8nan"]))
    n = draw(st.integers(min_size, max_size))
    if kind in INT_DTYPES:
        info = np.iinfo(kind)
        lo = info.min if signed else 0
        vals = draw(st.lists(st.one_of(st.integers(lo, info.max),
                                       st.sampled_from([v for v in EXTREMES if lo <= v <= info.max])),
                             min_size=n, max_size=n))
        arr = np.array(vals, dtype=kind)
        how = draw(st.sampled_from(["plain", "misaligned", "strided", "swapped"]))
        return _layout(arr, how), [int(v) for v in vals]
    if kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool), None
    if kind == "object":
        return np.array([draw(st.integers(-5, 5)) for _ in range(n)] + [None], dtype=object)[:n], None
    vals = draw(st.lists(st.floats(allow_nan=(kind == "f8nan"), allow_infinity=True), min_size=n, max_size=n))
    return np.array(vals, dtype=np.float64), None


def _fits(v: int) -> bool:
    return I64_MIN <= v <= I64_MAX


def _is_i8(arr) -> bool:
    """int64 (any byte order or layout): what the private kernels take, copied if need be."""
    return arr.dtype.kind == "i" and arr.dtype.itemsize == 8


def _call(fn, *args, **kw):
    """fn(...) or None when it raised a clear exception."""
    try:
        return fn(*args, **kw)
    except CLEAR:
        return None


# -- the sampler --------------------------------------------------------------


@FAST
@given(int_vectors(max_size=10), st.sampled_from(["0d", "1d", "2d"]))
def test_add_discrete_laplace(case, rank):
    arr, vals = case
    if rank == "0d" and arr.size:
        arr, vals = arr[:1].reshape(()), (vals[:1] if vals is not None else None)
    elif rank == "2d" and arr.size % 2 == 0 and arr.flags.c_contiguous:
        arr = arr.reshape(2, -1)
    g = Generator(seed=1)
    out = _call(g.add_discrete_laplace, arr, TINY)
    valid = vals is not None and all(_fits(v) for v in vals)
    if not valid:
        assert out is None
        return
    assert out is not None and out.dtype == np.int64 and out.shape == arr.shape
    assert [int(v) for v in out.reshape(-1)] == vals


@FAST
@given(st.one_of(st.none(), st.integers(-3, 5), st.integers(2**40 + 1, 2**70),
                 st.tuples(st.integers(0, 4), st.integers(0, 4)),
                 st.tuples(st.integers(2**30, 2**40), st.integers(2**30, 2**40))),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 10**6)))
def test_discrete_laplace_sizes_and_scales(size, scale):
    g = Generator(seed=2)
    out = _call(g.discrete_laplace, scale, size)
    if size is None:
        assert out is None or isinstance(out, int)
        return
    shape = (size,) if isinstance(size, int) else size
    ok_shape = all(s >= 0 for s in shape) and int(np.prod(shape, dtype=object)) <= 2**40
    if not ok_shape:
        assert out is None  # refused before anything is allocated
    elif out is not None:
        assert out.shape == shape and out.dtype == np.int64


def test_reproducer_0d_input_keeps_its_shape():
    g = Generator(seed=3)
    assert g.add_discrete_laplace(0, 2.5).shape == ()
    assert g.add_discrete_laplace(np.int16(-7), TINY) == -7
    assert g.add_discrete_laplace(np.zeros((2, 0), dtype=np.int32), 1).shape == (2, 0)


def test_reproducer_misaligned_values_reach_the_sampler_copied():
    buf = bytearray(8 * 6 + 1)
    vals = np.frombuffer(buf, dtype=np.int64, offset=1, count=6)
    vals[:] = [5, -3, I64_MAX, I64_MIN, 0, 1]
    assert not vals.flags.aligned
    out = Generator(seed=4).add_discrete_laplace(vals, TINY)
    assert out.tolist() == vals.tolist()
    stream = _rng.ChaChaStream(bytes(32))
    assert stream.add_discrete_laplace(vals, 1, 2**31).tolist() == vals.tolist()
    b = np.zeros(6, dtype=np.int64)
    _rng.add_int64_checked(vals, b)
    assert b.tolist() == vals.tolist()
    with pytest.raises(ValueError, match="out"):  # an output is never copied
        stream.fill_discrete_laplace(1, 1, vals)


# -- histogram mechanisms -------------------------------------------------------

LINE = {N: Policy(Domain([Ordinal("v", 0, N - 1)]), secrets.Line()) for N in range(1, 13)}


def _mechanisms(N):
    pol = LINE.get(N)
    out = [
        ("identity", lambda h, g: M.identity(h, 1.0, g)),
        ("hierarchical", lambda h, g: M.hierarchical(h, 1.0, g, fanout=2)),
        ("dawa", lambda h, g: M.dawa(h, 1.0, g)),
        ("privelet", lambda h, g: M.privelet(h, 1.0, g)),
    ]
    if pol is not None:
        out += [
            ("ordered", lambda h, g: M.ordered(h, pol, 1.0, g)),
            ("ordered_hierarchical", lambda h, g: M.ordered_hierarchical(h, pol, 1.0, g, fanout=2)),
            ("transformed_laplace", lambda h, g: M.transformed_laplace(h, pol, 1.0, g)),
        ]
    return out


@pytest.mark.slow
@FAST
@given(int_vectors(min_size=0, max_size=12, signed=True), st.integers(0, 6))
def test_histogram_mechanisms(case, which):
    arr, vals = case
    N = arr.size
    mechs = _mechanisms(N)
    name, fn = mechs[which % len(mechs)]
    valid = (vals is not None and N >= 1 and all(v >= 0 for v in vals)
             and sum(vals) <= I64_MAX)
    out = _call(fn, arr, Generator(seed=5))
    if not valid:
        assert out is None, name
        return
    if out is None:
        # a clear refusal of a valid histogram is allowed only for totals so
        # large that noisy values or sums could leave int64, or a one-value
        # line (no secret edge: no tree to embed)
        assert sum(vals) > 2**61 or (name == "transformed_laplace" and N == 1), name
        return
    n = getattr(out, "n", None)
    if n is not None:
        assert n == sum(vals), name


@pytest.mark.parametrize("fn", [
    lambda h: M.ordered(h, LINE[5], 1.0, Generator(seed=6)),
    lambda h: M.identity(h, 1.0, Generator(seed=6)),
    lambda h: M.hierarchical(h, 1.0, Generator(seed=6)),
    lambda h: M.ordered_hierarchical(h, LINE[5], 1.0, Generator(seed=6)),
])
def test_reproducer_int64_totals_refused_not_wrapped(fn):
    with pytest.raises(OverflowError, match="hist"):
        fn(np.array([2**62] * 4 + [5]))


def test_reproducer_identity_huge_counts_overflow_error_not_index_error():
    with pytest.raises(OverflowError, match="hist"):
        M.identity(np.array([2**60] * 8), 1.0, Generator(seed=7))


# -- transforms -----------------------------------------------------------------


@pytest.mark.slow
@FAST
@given(int_vectors(min_size=1, max_size=10), st.sampled_from(["line", "star", "random"]), st.data())
def test_transform_and_inverse(case, shape, data):
    arr, vals = case
    N = arr.size
    if shape == "line":
        parent = [-1] + list(range(N - 1))
    elif shape == "star":
        parent = [-1] + [0] * (N - 1)
    else:
        parent = [-1] + [data.draw(st.integers(0, i - 1)) for i in range(1, N)]
    tree = transform.tree_from_parent(np.array(parent))
    out = _call(transform.transform, arr, tree)
    if vals is None:
        assert out is None
        return
    sub = list(vals)
    for v in range(N - 1, 0, -1):  # parents precede children here
        sub[parent[v]] += sub[v]
    partial_ok = all(_fits(v) for v in vals) and all(_fits(s) for s in sub)
    if out is None:
        # refused: a value or a subtree sum (or an intermediate one) does not fit
        assert not partial_ok or any(abs(v) > 2**61 for v in vals)
        return
    assert [int(v) for v in out] == sub
    back = _call(transform.inverse, out, tree)
    assert back is not None and [int(v) for v in back] == vals


@FAST
@given(st.lists(st.integers(-3, 12), min_size=1, max_size=8))
def test_tree_from_parent_refuses_or_builds_a_tree(parent):
    tree = _call(transform.tree_from_parent, np.array(parent))
    n = len(parent)
    roots = [v for v in range(n) if parent[v] == -1]
    in_range = all(p == -1 or 0 <= p < n for p in parent)
    if tree is None:
        return
    assert len(roots) == 1 and in_range
    for v in range(n):  # every vertex reaches the root within n steps
        u, steps = v, 0
        while parent[u] != -1:
            u, steps = parent[u], steps + 1
            assert steps <= n


# -- isotonic regression --------------------------------------------------------


@FAST
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=12),
       st.sampled_from(["plain", "misaligned", "strided", "swapped", "f4", "int", "object"]),
       st.floats(-10, 10), st.floats(0, 10))
def test_isotonic(ys, how, lower, width):
    y = np.array(ys, dtype=np.float64)
    if how == "f4":
        with np.errstate(over="ignore"):
            y = y.astype(np.float32)
    elif how == "int":
        y = np.nan_to_num(y, nan=0, posinf=5, neginf=-5).clip(-1e6, 1e6).astype(np.int32)
    elif how == "object":
        y = y.astype(object)
    else:
        y = _layout(y, how)
    upper = lower + width
    out = _call(_isotonic.isotonic, y, None, lower, upper)
    vals = np.asarray(y, dtype=np.float64) if how != "object" else None
    if vals is None or not np.isfinite(vals).all():
        assert out is None
        return
    assert out is not None and out.shape == vals.shape
    assert (np.diff(out) >= 0).all() and (out >= lower).all() and (out <= upper).all()


@FAST
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64) | st.floats(-50, 50), max_size=200),
       st.sampled_from(["plain", "misaligned", "strided", "swapped", "f4"]),
       st.sampled_from([None, 1, 3, 64, 128]), st.integers(1, 4))
def test_isotonic_unit_chunked(ys, how, chunk, threads):
    # the bitmap path: any layout is refused (it writes in place) or, for a
    # plain finite float64 array, the same answer as the serial regression
    y = np.array(ys, dtype=np.float64)
    if how == "f4":
        with np.errstate(over="ignore"):
            y = y.astype(np.float32)
    else:
        y = _layout(y, how)
    before = np.array(y, dtype=np.float64, copy=True)
    got = y.copy() if how == "plain" else y
    done = _call(_isotonic.isotonic_unit_chunked, got, -100.0, 100.0, threads=threads, chunk=chunk)
    ok_input = how == "plain" and np.isfinite(before).all() and np.abs(before).max(initial=0) < 1e300
    if how != "plain" or not np.isfinite(before).all():
        assert done is None
        if how == "plain":
            np.testing.assert_array_equal(got, before)  # refused before anything was written
        return
    if ok_input:
        np.testing.assert_allclose(got, _isotonic.isotonic(before, None, -100.0, 100.0), rtol=1e-9, atol=1e-9)


@pytest.mark.slow
@FAST
@given(int_vectors(min_size=0, max_size=40), int_vectors(min_size=0, max_size=40), st.integers(1, 3))
def test_ordered_cumulative(hcase, ncase, threads):
    (h, hv), (z, zv) = hcase, ncase
    out = _call(_tree.ordered_cumulative, h, z, threads=threads)
    valid = (hv is not None and zv is not None and _is_i8(h) and _is_i8(z) and len(hv) >= 1
             and len(zv) == len(hv) - 1 and all(v >= 0 for v in hv) and _fits(sum(hv)))
    noisy = []
    if valid:
        run = 0
        for i, v in enumerate(hv[:-1]):
            run += v
            noisy.append(run + zv[i])
        valid = all(_fits(v) for v in noisy)
    if not valid:
        assert out is None
        return
    assert out is not None
    cum, total = out
    assert total == sum(hv) and cum[-1] == float(total)
    want = _isotonic.isotonic(np.array(noisy, dtype=np.float64), None, 0.0, float(total)) if noisy else []
    np.testing.assert_allclose(cum[:-1], want, rtol=1e-12, atol=0)


@pytest.mark.slow
@FAST
@given(int_vectors(min_size=0, max_size=12), int_vectors(min_size=0, max_size=12), st.data())
def test_line_noisy_counts_and_add_nonroot(xcase, ncase, data):
    (x, xv), (z, zv) = xcase, ncase
    out = _call(_transform.line_noisy_counts, x, z)
    ok = xv is not None and zv is not None and _is_i8(x) and _is_i8(z) and len(xv) >= 1 and len(zv) == len(xv) - 1
    if ok:  # prefix sums, noise on all but the last, differences: each must fit
        a, run, prev, want = [], 0, 0, []
        for i, v in enumerate(xv):
            run += v
            ok &= _fits(run)
            ai = run + (zv[i] if i + 1 < len(xv) else 0)
            ok &= _fits(ai)
            want.append(ai - prev)
            ok &= _fits(ai - prev)
            prev = ai
    if not ok:
        assert out is None
    else:
        assert out is not None and [int(v) for v in out] == want
    # add_nonroot on a random tree: a clear refusal or the exact sums
    n = len(xv) if xv is not None else x.size
    parent = np.array([-1] + [data.draw(st.integers(-1, max(i - 1, 0))) if i else -1 for i in range(1, n)][:max(n - 1, 0)],
                      dtype=np.int64)[:n]
    xg = np.array(xv if xv is not None else [0] * n, dtype=object)
    target = np.zeros(n, dtype=np.int64) if not all(_fits(v) for v in xg) else xg.astype(np.int64)
    base = target.copy()
    res = _call(_transform.add_nonroot, target, parent, z)
    nonroot = [v for v in range(n) if parent[v] >= 0]
    if zv is None or not _is_i8(z) or len(zv) != len(nonroot):
        assert res is None
        return
    exact = [int(b) for b in base]
    for k, v in enumerate(nonroot):
        exact[v] += zv[k]
    if all(_fits(v) for v in exact):
        assert res is None and [int(v) for v in target] == exact  # returns None: in place


@pytest.mark.slow
@FAST
@given(st.integers(1, 60), st.sampled_from([(2, 1), (2, 2), (3, 2), (16, 2), (4, 3)]), st.integers(1, 9),
       st.integers(0, 3), st.sampled_from([0.0, 1e-200, 1.0, 7.5, 1e200, 1e-201, -1.0, float("nan")]),
       st.integers(1, 3), st.booleans(), st.integers(0, 2**32 - 1))
def test_oh_cumulative(N, fh, block, extra, var, threads, overwrite, seed):
    # random shapes and noise lengths: a clear refusal, or oh_estimate then
    # the chunked regression, bit for bit
    f, h = fh
    rng = np.random.default_rng(seed)
    block = min(block, N)
    c = max(1, min(f, -(-block // f ** (h - 1))))
    hist = rng.integers(0, 50, size=N).astype(np.int64)
    k = -(-N // block)
    last = N - block * (k - 1)
    width = c * f ** (h - 1)
    count, wL = 0, width
    for L in range(1, h + 1):
        wL //= c if L == 1 else f
        count += (k - 1) * (-(-block // max(wL, 1))) + (-(-last // max(wL, 1)))
    ns = rng.integers(-30, 30, size=max(k - 1, 0))
    nh = rng.integers(-30, 30, size=count + (extra if extra < 2 else 0))
    est = _call(_tree.oh_estimate, hist, block, f, h, c, ns, nh, 1.0, var, threads=threads)
    mine = nh.copy()
    got = _call(_tree.oh_cumulative, hist, block, f, h, c, ns, mine, 1.0, var, threads=threads,
                overwrite_noise_h=overwrite)
    if est is None:
        assert got is None
        return
    assert got is not None
    want = est.copy()
    if N > 1:
        _isotonic.isotonic_unit_chunked(want[:-1], 0.0, float(hist.sum()))
    want[-1] = hist.sum()
    np.testing.assert_array_equal(got[0], want)
    assert got[1] == int(hist.sum())


# -- DAWA -----------------------------------------------------------------------


@pytest.mark.slow
@FAST
@given(int_vectors(min_size=0, max_size=12))
def test_dawa_partition(case):
    arr, vals = case
    out = _call(M.dawa_partition, arr, 1.0, Generator(seed=8), penalty=1.0)
    valid = vals is not None and len(vals) >= 1 and all(v >= 0 for v in vals) and sum(vals) <= I64_MAX
    if not valid:
        assert out is None
        return
    if out is None:  # mechanisms/data_dependent/dawa.py refuses max count * |T| >= 2**62
        assert max(vals) * len(vals) >= 2**62
        return
    starts = [int(s) for s in out.starts]
    assert starts[0] == 0 and starts == sorted(set(starts)) and starts[-1] < len(vals)


def test_reproducer_private_dawa_bindings_validate():
    x = np.arange(6, dtype=np.int64)
    rank = np.arange(6, dtype=np.int64)
    with pytest.raises(ValueError, match="rank"):
        _dawa.dawa_deviations(x, np.array([-1, 1, 2, 3, 4, 5]), x, 2)
    with pytest.raises(ValueError, match="rank"):
        _dawa.dawa_deviations(x, np.array([0, 1, 2, 3, 4, 6]), x, 2)
    with pytest.raises(ValueError, match="non-negative"):
        _dawa.dawa_deviations(-x, rank, x, 2)
    with pytest.raises(OverflowError, match="x"):
        _dawa.dawa_deviations(np.full(6, 2**62), rank, np.full(6, 2**62), 2)
    scores = np.zeros(_dawa.dawa_n_intervals(6))
    with pytest.raises(ValueError, match="rank"):
        _dawa.dawa_partition(x, -rank, x, scores, 1.0)
    # large counts whose total fits: the mean test never forms v * L
    big = np.array([2**62, 0, 0, 2**61, 1, 1], dtype=np.int64)
    order = np.argsort(big, kind="stable")
    rk = np.empty(6, dtype=np.int64)
    rk[order] = np.arange(6)
    dev = _dawa.dawa_deviations(big, rk, big[order], 6)
    mean = Fraction(int(big.sum()), 6)
    assert dev[0] == pytest.approx(float(sum(abs(Fraction(int(v)) - mean) for v in big)), rel=1e-12)


# -- tree kernels: private bindings ------------------------------------------------


def test_reproducer_private_tree_bindings_validate():
    x = np.arange(4, dtype=np.int64)
    with pytest.raises(ValueError, match="parent"):
        _transform.subtree_sums(x, np.array([-1, 0, 9, 1]), np.arange(4))
    with pytest.raises(ValueError, match="order"):
        _transform.subtree_sums(x, np.array([-1, 0, 0, 1]), np.array([0, 1, 2, 10**9]))
    with pytest.raises(ValueError, match="parent"):
        _transform.tree_inverse(x, np.array([-1, 0, 4, 1]))
    with pytest.raises(ValueError, match="child_ptr"):
        _transform.tree_bfs_order(np.array([0, 5, 5, 5, 5]), np.array([1, 2, 3]), 0)
    with pytest.raises(ValueError, match="children"):
        _transform.tree_bfs_order(np.array([0, 3, 3, 3, 3]), np.array([1, 1, 2]), 0)
    with pytest.raises(ValueError, match="children"):
        _transform.tree_bfs_order(np.array([0, 3, 3, 3, 3]), np.array([1, 2, 7]), 0)
    with pytest.raises(ValueError, match="h must be"):
        _tree.tree_levels(np.zeros(0, dtype=np.int64), 2, 10**12)
    order = _transform.tree_bfs_order(np.array([0, 2, 3, 3, 3]), np.array([1, 2, 3]), 0)
    assert order.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("how", ["misaligned", "strided", "swapped"])
def test_kernels_take_any_layout_of_int64_and_float64(how):
    v = _layout(np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64), how)
    assert _tree.prefix_sum(v).tolist() == np.cumsum(v).tolist()
    assert _tree.level_sums(v, 2).tolist() == [4, 5, 14, 8]
    assert [a.tolist() for a in _tree.tree_levels(v, 2, 1)] == [[4, 5, 14, 8], v.tolist()]
    assert _transform.line_inverse(v).tolist() == np.diff(v, prepend=0).tolist()
    assert _tree.sum_int64(v) == 31
    f = _layout(np.array([1.0, 3.0, 2.0, 4.0]), how)
    assert _isotonic.isotonic(f).tolist() == [1.0, 2.5, 2.5, 4.0]
    z, var = np.zeros(2), np.ones(2)
    _tree.wls_up_level(f, _layout(np.ones(4), how), z, var, 2)
    # (0 with variance 1) and (child sums 4, 6 with variance 2): weights 1 and 1/2
    assert z.tolist() == pytest.approx([4 / 3, 2.0]) and var.tolist() == pytest.approx([2 / 3, 2 / 3])
    out = _layout(np.zeros(2), how)
    if how != "strided" or not out.flags.c_contiguous:
        with pytest.raises(ValueError, match="z"):  # outputs must already be C-ready
            _tree.wls_up_level(f, np.ones(4), out, var, 2)


# -- k-means ----------------------------------------------------------------------


def test_reproducer_kmeans_assign_many_columns_no_stack_array():
    d = 2_000_000
    pts = np.ones((1, d), dtype=np.int64)
    counts, sums, _ = _kmeans.kmeans_assign(pts, np.zeros((1, d)), np.zeros((1, d), dtype=np.int64))
    assert counts.tolist() == [1] and int(sums.sum()) == d


@pytest.mark.slow
@FAST
@given(st.integers(0, 6), st.integers(1, 5), st.integers(1, 3), st.data())
def test_kmeans_assign(n, d, k, data):
    coord = st.one_of(st.integers(-50, 50), st.sampled_from([I64_MIN, I64_MAX, 2**62, -(2**62)]))
    pts = np.array(data.draw(st.lists(st.lists(coord, min_size=d, max_size=d), min_size=n, max_size=n)),
                   dtype=np.int64).reshape(n, d)
    refs = np.array(data.draw(st.lists(st.lists(coord, min_size=d, max_size=d), min_size=k, max_size=k)),
                    dtype=np.int64)
    cen = np.array(data.draw(st.lists(st.lists(st.floats(-60, 60), min_size=d, max_size=d),
                                      min_size=k, max_size=k)))
    if data.draw(st.booleans()):
        cen[0, 0] = data.draw(st.sampled_from([np.nan, np.inf]))
    out = _call(_kmeans.kmeans_assign, pts, cen, refs, True)
    if out is None:
        assert not np.isfinite(cen).all() or any(
            abs(int(v)) > 2**40 for v in itertools.chain(pts.ravel(), refs.ravel()))
        return
    counts, sums, labels = out
    dist = ((pts[:, None, :].astype(np.float64) - cen[None, :, :]) ** 2).sum(axis=2)
    assert labels.tolist() == dist.argmin(axis=1).tolist() if n else True
    for j in range(k):
        members = [i for i in range(n) if labels[i] == j]
        assert counts[j] == len(members)
        for a in range(d):
            assert int(sums[j, a]) == sum(int(pts[i, a]) - int(refs[j, a]) for i in members)


def _oracle_full_domain(dom, cen, refs):
    """S_sum under FullDomain by brute force over every pair of cells."""
    cells = np.array(list(itertools.product(*[range(a.low, a.last_value + 1, a.bin_width)
                                              for a in dom.attributes])), dtype=np.int64)
    lab = ((cells[:, None, :] - cen[None]) ** 2).sum(axis=2).argmin(axis=1)
    cost = [sum(abs(int(c) - int(r)) for c, r in zip(cells[i], refs[lab[i]])) for i in range(len(cells))]
    best = 0
    for i in range(len(cells)):
        for j in range(i + 1, len(cells)):
            if lab[i] == lab[j]:
                best = max(best, int(np.abs(cells[i] - cells[j]).sum()))
            else:
                best = max(best, cost[i] + cost[j])
    return best


@pytest.mark.slow
@FAST
@given(st.integers(1, 3), st.integers(1, 3), st.data())
def test_kmeans_sensitivity(k, d, data):
    dom = Domain([Ordinal(f"a{i}", 0, 2) for i in range(d)])
    coord = st.one_of(st.integers(-4, 6), st.sampled_from([I64_MIN, I64_MAX, 2**62, -(2**61)]))
    refs = np.array(data.draw(st.lists(st.lists(coord, min_size=d, max_size=d), min_size=k, max_size=k)))
    cen = np.array(data.draw(st.lists(st.lists(st.floats(-1, 3), min_size=d, max_size=d),
                                      min_size=k, max_size=k)))
    graph = data.draw(st.sampled_from([secrets.FullDomain(), secrets.Attribute(c=1), secrets.Line()
                                       if d == 1 else secrets.DistanceThreshold(1)]))
    out = _call(M.kmeans_sensitivity, Policy(dom, graph), cen, refs)
    if out is None:
        assert np.abs(refs.astype(object)).max() > 2**60
        return
    if isinstance(graph, secrets.FullDomain):
        want = _oracle_full_domain(dom, cen, refs)
        assert out.sum >= want and (out.sum == want or not out.sum_exact)


def test_reproducer_kmeans_references_outside_the_grid():
    dom = Domain([Ordinal("x", 0, 4), Ordinal("y", 0, 4)])
    cen = np.array([[0.0, 0.0], [4.0, 4.0]])
    for graph in [secrets.FullDomain(), secrets.Attribute(c=1), secrets.DistanceThreshold(1)]:
        with pytest.raises(OverflowError, match="references"):
            M.kmeans_sensitivity(Policy(dom, graph), cen, np.array([[2**62, 0], [4, 4]]))
    far = np.array([[-100, 7], [4, 40]])  # outside the box but representable: exact
    got = M.kmeans_sensitivity(Policy(dom, secrets.FullDomain()), cen, far)
    assert got.sum_exact and got.sum == _oracle_full_domain(dom, cen, far)


def test_kmeans_scan_budgets_fall_back_to_proven_bounds(monkeypatch):
    import importlib

    km = importlib.import_module("blowfish_privacy.mechanisms.clustering.kmeans")

    dom = Domain([Ordinal(f"a{i}", 0, 1) for i in range(4)])
    rng = np.random.default_rng(3)
    cen = rng.random((3, 4))
    refs = np.round(cen).astype(np.int64)
    pol = Policy(dom, secrets.FullDomain())
    exact = M.kmeans_sensitivity(pol, cen, refs)
    assert exact.sum_exact and exact.sum == _oracle_full_domain(dom, cen, refs)
    monkeypatch.setattr(km, "PROJECTION_SCAN_LIMIT", 1)
    part = M.kmeans_sensitivity(pol, cen, refs)
    assert part.sum >= exact.sum and (part.sum == exact.sum or not part.sum_exact)
    monkeypatch.setattr(km, "SCAN_WORK_LIMIT", 1)
    box = M.kmeans_sensitivity(pol, cen, refs)
    assert box.method == "box bound" and not box.sum_exact and box.sum >= exact.sum and box.size == 2


# -- policy-graph search ------------------------------------------------------------


def _brute_cycle(adj, nv):
    best = 0
    for r in range(2, nv + 1):
        for perm in itertools.permutations(range(nv), r):
            if perm[0] == min(perm) and all(adj[perm[i]] >> perm[(i + 1) % r] & 1 for i in range(r)):
                best = max(best, r)
    return best


@pytest.mark.slow
@FAST
@given(st.integers(1, 6), st.data())
def test_longest_cycle_and_path(nv, data):
    rows = data.draw(st.lists(st.integers(0, 2**nv - 1), min_size=nv, max_size=nv))
    rows = [r & ~(1 << v) for v, r in enumerate(rows)]
    dtype = data.draw(st.sampled_from(["u8", "i8", ">u8", "u4", "f8", "object", "i8neg"]))
    if dtype == "i8neg":
        adj = np.array(rows, dtype=np.int64)
        adj[0] = -1
    else:
        adj = np.array(rows, dtype=dtype)
    out = _call(_policy_graph.longest_cycle, adj, 10**6)
    if dtype in ("f8", "object", "i8neg"):
        assert out is None
        return
    length, exact, _, cyc = out
    assert exact and length == _brute_cycle(rows, nv) and len(cyc) == length
    for i in range(length):
        assert rows[cyc[i]] >> cyc[(i + 1) % length] & 1
    if nv >= 2:
        plen, pexact, _, path = _policy_graph.longest_path(adj, 0, nv - 1, 10**6)
        assert pexact and (plen == -1 or (path[0] == 0 and path[-1] == nv - 1 and len(path) == plen + 1))
    assert _call(_policy_graph.longest_path, adj, 0, 0, 10) is None


def test_policy_graph_search_budget_scales_with_vertices(monkeypatch):
    import blowfish_privacy.policy.constraints as cmod

    class Graph:  # 64 vertices, dense enough to need many nodes
        num_queries = 62
        v_plus, v_minus = 62, 63

        def adjacency(self):
            rng = np.random.default_rng(0)
            a = rng.random((64, 64)) < 0.06
            np.fill_diagonal(a, False)
            return np.array([sum(1 << int(j) for j in np.flatnonzero(r)) for r in a], dtype=np.uint64)

    monkeypatch.setattr(cmod, "SEARCH_WORK_LIMIT", 64 * 1000)
    alpha, xi, exact = longest_cycle_and_path(Graph())
    assert not exact and 0 <= alpha <= 64 and -1 <= xi <= 63


# -- a longer profile ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("BLOWFISH_FUZZ_LONG") != "1", reason="set BLOWFISH_FUZZ_LONG=1 for the long profile")
@LONG
@given(int_vectors(max_size=40), st.integers(0, 6))
def test_slow_histograms_and_sampler(case, which):
    test_add_discrete_laplace.hypothesis.inner_test(case, "1d")
    test_histogram_mechanisms.hypothesis.inner_test(case, which)
