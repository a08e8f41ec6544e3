"""Fuzzing the public functions that take edge lists or constraints (issue 23, item 5).

``constraints.longest_cycle_and_path`` (policy graphs: ``num_queries`` and a
set of directed edges), the spanning tree of an edge list
(``_tree_embedding.spanning_tree_of_edges``, used by the data-dependent
mechanisms), tree distances (``TreeEmbedding.distances``) and the count
constraints (``CountQuery``, ``RangeCount``, ``Marginal``, ``group_values``,
``policy_graph``) on hostile inputs: negative, out-of-range and huge
vertices, wrong shapes and dtypes, self-loops, duplicates, non-integers.
Each case asserts a clear exception (TypeError, ValueError, OverflowError)
or the right answer against a brute-force oracle.  The default profile is
small; ``BLOWFISH_FUZZ_LONG=1 pytest -m slow tests/test_fuzz_edges.py``
runs a longer one.  The file runs under ASan/UBSan in ``.ci/sanitize``.
"""

from __future__ import annotations

import itertools
import numbers
import os
from collections import deque

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blowfish_privacy import Domain, Ordinal
from blowfish_privacy.policy._tree_embedding import check_edges, spanning_tree_of_edges
from blowfish_privacy.policy.constraints import (
    CountQuery,
    Marginal,
    PolicyGraph,
    RangeCount,
    check_policy_graph,
    group_values,
    longest_cycle_and_path,
    policy_graph,
)
from blowfish_privacy.policy.transform import line_tree, tree_from_parent
from test_fuzz_core import _layout

CLEAR = (TypeError, ValueError, OverflowError)
FAST = settings(max_examples=int(os.environ.get("FUZZ_N", 60)), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
long_profile = pytest.mark.skipif(os.environ.get("BLOWFISH_FUZZ_LONG") != "1",
                                  reason="set BLOWFISH_FUZZ_LONG=1 for the long profile")


def _call(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except CLEAR:
        return None


def _is_int(v) -> bool:
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))


VERTEX = st.one_of(
    st.integers(-2, 8),
    st.sampled_from([2**31, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30, 10**5000]),
    st.sampled_from([np.int8(1), np.uint64(2), np.int64(-1), np.uint64(2**64 - 1)]),
    st.sampled_from([1.0, 0.5, float("nan"), True, None, "1", b"0"]),
)
EDGE = st.one_of(
    st.tuples(VERTEX, VERTEX),
    st.tuples(st.integers(0, 7), st.integers(0, 7)),
    st.lists(st.integers(0, 7), min_size=0, max_size=3).map(tuple),
    st.sampled_from([None, 3, "ab", (0, 1, 2), [0, 1]]),
)


# -- the policy-graph search -----------------------------------------------------------------------------------------


def _brute(nv, edges, s, t):
    """Longest simple cycle (>= 2 vertices) and longest simple s -> t path (in edges; -1: none), by enumeration."""
    adj = {u: set() for u in range(nv)}
    for u, v in edges:
        adj[u].add(v)
    cycle = 0
    for r in range(2, nv + 1):
        for perm in itertools.permutations(range(nv), r):
            if perm[0] == min(perm) and all(perm[(i + 1) % r] in adj[perm[i]] for i in range(r)):
                cycle = max(cycle, r)
    path, stack = -1, [(s, {s}, 0)]
    while stack:
        u, seen, ln = stack.pop()
        if u == t:
            path = max(path, ln)
            continue
        for v in adj[u]:
            if v not in seen:
                stack.append((v, seen | {v}, ln + 1))
    return cycle, path


@FAST
@given(st.one_of(st.integers(0, 5), VERTEX), st.lists(EDGE, max_size=9),
       st.sampled_from(["set", "list", "tuple", "generator", "array"]))
def test_longest_cycle_and_path_on_hostile_graphs(num_queries, edges, container):
    if container == "set":
        try:
            edges_in = set(edges)
        except TypeError:  # unhashable edges: a list instead
            edges_in = list(edges)
    elif container == "array":
        try:
            edges_in = np.array(edges)
        except (ValueError, TypeError, OverflowError):
            edges_in = list(edges)
        else:
            if edges_in.ndim == 2:  # numpy converted the values (True -> 1): judge what the graph holds
                edges = [tuple(row) for row in edges_in.tolist()]
    elif container == "generator":
        edges_in = (e for e in list(edges))
    else:
        edges_in = {"list": list, "tuple": tuple}[container](edges)
    graph = PolicyGraph(num_queries, edges_in)
    out = _call(longest_cycle_and_path, graph)
    valid_nq = _is_int(num_queries) and 0 <= int(num_queries) <= 62
    nv = int(num_queries) + 2 if valid_nq else None

    def ok(e):
        try:
            pair = tuple(e)
        except TypeError:
            return False
        return (not isinstance(e, (str, bytes)) and len(pair) == 2 and all(_is_int(v) for v in pair)
                and all(0 <= int(v) < nv for v in pair) and int(pair[0]) != int(pair[1]))

    valid = valid_nq and all(ok(e) for e in edges)
    if container == "array" and isinstance(edges_in, np.ndarray) and edges_in.ndim != 2:
        valid = valid and len(edges) == 0 and edges_in.size == 0
    if not valid:
        assert out is None
        return
    assert out is not None
    alpha, xi, exact = out
    pairs = [(int(a), int(b)) for a, b in edges]
    assert exact and (alpha, xi) == _brute(nv, pairs, nv - 2, nv - 1)


@FAST
@given(st.one_of(st.integers(-3, 10**8), VERTEX))
def test_node_limit(node_limit):
    graph = PolicyGraph(3, {(0, 1), (1, 2), (2, 0), (3, 0), (2, 4)})
    out = _call(longest_cycle_and_path, graph, node_limit)
    if node_limit is None or (_is_int(node_limit) and 1 <= int(node_limit) < 2**64):
        assert out is not None and out[0] <= 3 and out[1] <= 4
        if node_limit is None or int(node_limit) >= 1000:
            assert out == (3, 4, True)  # the cycle 0 1 2, the path v+ 0 1 2 v-
    else:
        assert out is None


def test_reproducer_negative_vertices_no_longer_index_from_the_end():
    # adj[-1] used to set a bit of v-: a silently wrong graph
    with pytest.raises(ValueError, match="edges"):
        longest_cycle_and_path(PolicyGraph(1, {(-1, 0)}))
    with pytest.raises(ValueError, match="self-loop"):
        longest_cycle_and_path(PolicyGraph(2, {(0, 0)}))
    with pytest.raises(ValueError, match="num_queries"):
        longest_cycle_and_path(PolicyGraph(70, {(0, 1)}))
    with pytest.raises(TypeError, match="graph"):
        longest_cycle_and_path([(0, 1)])
    with pytest.raises(ValueError, match="node_limit"):
        longest_cycle_and_path(PolicyGraph(1, set()), -1)
    assert check_policy_graph(1, [(np.int8(0), np.uint64(2)), (0, 2)]) == (3, [(0, 2), (0, 2)])


# -- spanning trees of edge lists ---------------------------------------------------------------------------------------


@st.composite
def edge_arrays(draw):
    kind = draw(st.sampled_from(["i8", "u8", "i4", "u1", ">i8", "f8", "bool", "object", "u8big", "i8neg"]))
    m = draw(st.integers(0, 10))
    vals = draw(st.lists(st.integers(0, 7), min_size=m, max_size=m))
    if kind == "u8big":
        arr = np.array(vals + [2**63], dtype=np.uint64)
    elif kind == "i8neg":
        arr = np.array(vals + [-1], dtype=np.int64)
    elif kind in ("f8", "bool", "object"):
        arr = np.array(vals, dtype={"f8": np.float64, "bool": bool, "object": object}[kind])
    else:
        arr = np.array(vals, dtype=kind)
    how = draw(st.sampled_from(["plain", "misaligned", "strided", "swapped", "2d"]))
    if how == "2d" and arr.size % 2 == 0 and arr.size:
        return arr.reshape(2, -1)
    return _layout(arr, how) if arr.dtype.kind in "iuf" else arr


def _tree_distance(parent, a, b):
    def path(v):
        out = [v]
        while parent[out[-1]] >= 0:
            out.append(int(parent[out[-1]]))
        return out

    pa, pb = path(a), path(b)
    common = set(pa) & set(pb)
    return min(pa.index(c) + pb.index(c) for c in common)


def _connected(n, lo, hi):
    if n > len(lo) + 1:  # a connected graph has at least n - 1 edges
        return False
    adj = {v: set() for v in range(n)}
    for a, b in zip(lo, hi):
        adj[a].add(b)
        adj[b].add(a)
    seen, queue = {0}, deque([0])
    while queue:
        u = queue.popleft()
        for w in adj[u] - seen:
            seen.add(w)
            queue.append(w)
    return len(seen) == n


@FAST
@given(st.one_of(st.integers(-2, 9), VERTEX), edge_arrays(), edge_arrays(),
       st.one_of(st.none(), st.integers(-1, 9), VERTEX))
def test_spanning_tree_of_hostile_edge_lists(n, lo, hi, root):
    out = _call(spanning_tree_of_edges, n, lo, hi, root=root)
    ok_n = _is_int(n) and int(n) >= 1
    ok_arrays = lo.dtype.kind in "iu" and hi.dtype.kind in "iu" and lo.shape == hi.shape
    los = [int(v) for v in lo.ravel()] if ok_arrays else []
    his = [int(v) for v in hi.ravel()] if ok_arrays else []
    in_range = ok_n and all(0 <= v < int(n) for v in los + his)
    ok_root = root is None or (_is_int(root) and ok_n and 0 <= int(root) < int(n))
    if not (ok_n and ok_arrays and in_range and ok_root) or not _connected(int(n), los, his):
        assert out is None
        return
    assert out is not None
    n = int(n)
    parent = out.parent.tolist()
    assert out.size == n and parent.count(-1) == 1
    if root is not None:
        assert parent[int(root)] == -1
    edges = {frozenset((a, b)) for a, b in zip(los, his) if a != b}
    for v, p in enumerate(parent):  # every tree edge is an edge of the graph
        assert p == -1 or frozenset((v, p)) in edges
    want = max([_tree_distance(parent, a, b) for a, b in zip(los, his)] + [1])
    assert out.stretch == want


def test_reproducer_spanning_tree_of_hostile_edge_lists():
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        spanning_tree_of_edges(0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="lo and hi must hold vertices"):
        spanning_tree_of_edges(3, np.array([0, -1]), np.array([1, 2]))
    with pytest.raises(ValueError, match="int64 maximum"):
        spanning_tree_of_edges(3, np.array([2**63], dtype=np.uint64), np.array([1]))
    with pytest.raises(ValueError, match="one shape"):
        spanning_tree_of_edges(3, np.array([[0, 1]]), np.array([1, 2]))
    with pytest.raises(TypeError, match="n must be an integer"):
        spanning_tree_of_edges(2.5, np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="n"):  # a vertex count whose arrays do not fit in memory
        spanning_tree_of_edges(10**18, np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="root"):
        spanning_tree_of_edges(2, np.array([0]), np.array([1]), root=2)
    tree = spanning_tree_of_edges(3, np.array([0, 1, 1, 2]), np.array([1, 1, 2, 1]))  # a self-loop, repeats
    assert tree.stretch == 1 and sorted(tree.parent.tolist()).count(-1) == 1
    with pytest.raises(ValueError, match="not connected"):
        spanning_tree_of_edges(3, np.array([0]), np.array([1]))


@FAST
@given(st.integers(1, 8), st.data())
def test_tree_distances(n, data):
    parent = [-1] + [data.draw(st.integers(0, i - 1)) for i in range(1, n)]
    tree = data.draw(st.sampled_from(["random", "line"]))
    emb = tree_from_parent(np.array(parent)) if tree == "random" else line_tree(n)
    if tree == "line":
        parent = [v + 1 for v in range(n - 1)] + [-1]
    u, v = data.draw(edge_arrays()), data.draw(edge_arrays())
    out = _call(emb.distances, u, v)
    ok = u.dtype.kind in "iu" and v.dtype.kind in "iu" and u.shape == v.shape
    us = [int(x) for x in u.ravel()] if ok else []
    vs = [int(x) for x in v.ravel()] if ok else []
    if not ok or not all(0 <= x < n for x in us + vs):
        assert out is None
        return
    assert out is not None and out.tolist() == [_tree_distance(parent, a, b) for a, b in zip(us, vs)]


def test_check_edges_returns_flat_int64():
    n, lo, hi = check_edges(np.int16(4), np.array([[0, 1]], dtype=np.uint8), np.array([[2, 3]], dtype=">i4"))
    assert n == 4 and lo.dtype == hi.dtype == np.int64 and lo.tolist() == [0, 1] and hi.tolist() == [2, 3]


# -- count constraints -------------------------------------------------------------------------------------------------

DOM = Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 3)])
CORNER = st.one_of(st.integers(-1, 4), st.lists(st.integers(-1, 4), min_size=0, max_size=3), VERTEX,
                   st.sampled_from([[1.5, 2], np.array([1, 2], dtype=np.uint64), [[1, 2]], np.array([0.0, 1.0])]))
ANSWERS = st.one_of(st.none(), st.lists(st.integers(-2, 20), min_size=0, max_size=5).map(np.array),
                    st.sampled_from([np.array([2**63, 0, 0], dtype=np.uint64), np.array([1.5, 2, 3]), [[1, 2], [3]],
                                     np.array([4, 4, 4]), np.array([True, False, True]), "abc", 5]))


@pytest.mark.slow
@FAST
@given(CORNER, CORNER, st.one_of(st.none(), VERTEX), ANSWERS, st.sampled_from([["a"], ["b"], ["a", "b"], ["a", "a"],
                                                                             ["c"], [], "a", [1]]))
def test_constraints_on_hostile_arguments(low, high, answer, answers, attrs):
    rc = _call(RangeCount, low, high, answer=answer)
    if rc is not None:
        assert all(isinstance(v, int) for v in rc.low + rc.high)
        assert answer is None or (_is_int(answer) and 0 <= int(answer) <= 2**63 - 1)
        mask = _call(rc.mask, DOM)
        if mask is not None:
            vals = DOM.values(np.arange(DOM.size))
            want = np.ones(DOM.size, dtype=bool)
            for col, lo, hi in zip(vals, rc.low, rc.high):
                want &= (col >= lo) & (col <= hi)
            assert mask.tolist() == want.tolist()
    marg = _call(Marginal, attrs, answers=answers)
    if marg is not None:
        if marg.answers is not None:
            assert (marg.answers >= 0).all()
        ans = _call(marg.public_answers, DOM)
        if ans is not None:
            assert ans.dtype == np.int64 and (ans >= 0).all()
    cons = [c for c in (rc, marg) if c is not None]
    groups = _call(group_values, DOM, cons)
    if groups is not None:
        graph = _call(policy_graph, DOM, cons, groups)
        if graph is not None:
            out = longest_cycle_and_path(graph)
            assert out[2] and 0 <= out[0] <= graph.num_queries and -1 <= out[1] <= graph.num_queries + 1


def test_reproducer_constraint_arguments_are_never_truncated_or_wrapped():
    with pytest.raises(TypeError, match="low"):
        RangeCount(1.5, 3)  # was int(1.5) = 1
    with pytest.raises(TypeError, match="high"):
        RangeCount([0, 1], ["2", 3])
    with pytest.raises(ValueError, match="int64"):
        Marginal(["a"], answers=np.array([2**63, 0, 0], dtype=np.uint64))  # was wrapped to -2**63
    with pytest.raises(ValueError, match="answer"):
        CountQuery(np.ones(12, dtype=bool), answer=2**64)
    assert RangeCount(np.int8(0), np.uint64(2)).high == (2,)


# -- a longer profile ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
@long_profile
@LONG
@given(st.one_of(st.integers(0, 5), VERTEX), st.lists(EDGE, max_size=12),
       st.sampled_from(["set", "list", "tuple", "generator", "array"]))
def test_slow_longest_cycle_and_path(num_queries, edges, container):
    test_longest_cycle_and_path_on_hostile_graphs.hypothesis.inner_test(num_queries, edges, container)


@pytest.mark.slow
@long_profile
@LONG
@given(st.one_of(st.integers(-2, 9), VERTEX), edge_arrays(), edge_arrays(), st.one_of(st.none(), st.integers(-1, 9)))
def test_slow_spanning_tree(n, lo, hi, root):
    test_spanning_tree_of_hostile_edge_lists.hypothesis.inner_test(n, lo, hi, root)
