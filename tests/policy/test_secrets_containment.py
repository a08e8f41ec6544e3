"""Containment of secret graphs across a projection (uncovered_pair), against brute force.

The brute force enumerates every pair of values of a small inner domain,
asks the graphs themselves (``is_edge`` with the domain) which pairs are
edges, projects both values onto the outer domain's attributes and checks
that the projections are equal or an edge of the outer graph.  Every
answer of :func:`uncovered_pair` must agree, and every witness must be an
edge of the inner graph whose projections the outer graph does not join.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blowfish_privacy.policy.domain import Categorical, Domain, Ordinal
from blowfish_privacy.errors import UnsupportedPolicyError
from blowfish_privacy.policy.secrets import (
    Attribute,
    Custom,
    DistanceThreshold,
    FullDomain,
    Intersection,
    Line,
    Partition,
    SecretGraph,
    containment,
    limits,
    uncovered_pair,
)
from oracles import enumerate_domain


# ---------------------------------------------------------------------------
# brute force
# ---------------------------------------------------------------------------
def _records(domain: Domain) -> list:
    values = enumerate_domain(domain)
    return [v[0] for v in values] if domain.ndim == 1 else values


_EDGES: dict = {}


def edge_matrix(graph: SecretGraph, domain: Domain) -> np.ndarray:
    """``E[i, j]``: whether values ``i`` and ``j`` (flat order) are an edge, by ``graph.is_edge``."""
    key = (graph, domain)
    if key not in _EDGES:
        values = _records(domain)
        n = len(values)
        xs = [values[i] for i in range(n) for _ in range(n)]
        ys = [values[j] for _ in range(n) for j in range(n)]
        _EDGES[key] = np.asarray(graph.is_edge(xs, ys, domain=domain), dtype=bool).reshape(n, n)
    return _EDGES[key]


def projection(inner_domain: Domain, outer_domain: Domain) -> np.ndarray:
    """Flat index in ``outer_domain`` of the projection of each value of ``inner_domain``."""
    where = {v: k for k, v in enumerate(enumerate_domain(outer_domain))}
    pos = [inner_domain.names.index(n) for n in outer_domain.names]
    return np.array([where[tuple(v[p] for p in pos)] for v in enumerate_domain(inner_domain)])


def brute_contained(inner, inner_domain, outer, outer_domain) -> bool:
    E_in = edge_matrix(inner, inner_domain)
    E_out = edge_matrix(outer, outer_domain)
    p = projection(inner_domain, outer_domain)
    covered = (p[:, None] == p[None, :]) | E_out[p[:, None], p[None, :]]
    return not bool((E_in & ~covered).any())


def check_witness(inner, inner_domain, outer, outer_domain, pair) -> None:
    x, y = pair
    assert isinstance(x, tuple) and isinstance(y, tuple)
    assert len(x) == len(y) == inner_domain.ndim
    values = set(enumerate_domain(inner_domain))
    assert x in values and y in values
    assert inner.is_edge(x, y, domain=inner_domain), (inner, pair)
    px = tuple(x[inner_domain.names.index(n)] for n in outer_domain.names)
    py = tuple(y[inner_domain.names.index(n)] for n in outer_domain.names)
    assert px != py, (inner, outer, pair)
    assert not outer.is_edge(px, py, domain=outer_domain), (inner, outer, pair)


def agree(inner, inner_domain, outer, outer_domain) -> None:
    expected = brute_contained(inner, inner_domain, outer, outer_domain)
    got = uncovered_pair(inner, inner_domain, outer, outer_domain)
    assert (got is None) == expected, (inner, inner_domain, outer, outer_domain, got)
    if got is not None:
        check_witness(inner, inner_domain, outer, outer_domain, got)


# ---------------------------------------------------------------------------
# catalogues of graphs
# ---------------------------------------------------------------------------
def _fits(graph: SecretGraph, domain: Domain) -> bool:
    try:
        graph.validate(domain)
    except ValueError:
        return False
    return True


def catalogue(domain: Domain, *, full: bool, seed: int = 0) -> list[SecretGraph]:
    """Graphs of every built-in kind that fit ``domain``; a few parameter values each (more if ``full``)."""
    rng = random.Random(seed)
    names = list(domain.names)
    out: list[SecretGraph] = [FullDomain(), Attribute(1), Partition.by_attributes([]),
                              Partition.by_attributes(names[:1])]
    if full:
        out.append(Attribute(2))
        out += [Partition.by_attributes(list(sub)) for r in range(1, len(names) + 1)
                for sub in itertools.combinations(names, r)]
    if domain.is_ordinal():
        thetas = (0, 1, 2, 3, 4.5, 7) if full else (2, 3)
        out += [DistanceThreshold(t, m) for t in thetas for m in ("l1", "l2", "linf")]
        out.append(Line())
        if domain.ndim == 1:
            attr = domain.attributes[0]
            out.append(Partition.intervals([attr.low, attr.low + 3, attr.high + 1]))
            if full:
                out.append(Partition.intervals([attr.low - 1, attr.low + 2, attr.low + 5, attr.high + 5]))
                out.append(Partition.intervals([attr.low, attr.high + 1]))
    values = _records(domain)
    for _ in range(2 if full else 1):
        order = list(range(len(values)))
        rng.shuffle(order)
        cuts = sorted(rng.sample(range(1, len(values)), min(3, len(values) - 1)))
        out.append(Partition([[values[i] for i in order[a:b]] for a, b in zip([0] + cuts, cuts + [len(values)])]))
    for _ in range(2 if full else 1):
        pairs = {tuple(values[i] for i in rng.sample(range(len(values)), 2)) for _ in range(2 * len(values))}
        out.append(Custom(sorted(pairs, key=repr)))
    if full:
        out.append(Custom([(values[i], values[j]) for i in range(len(values)) for j in range(i + 1, len(values))]))
    graphs = [g for g in out if _fits(g, domain)]
    simple = list(graphs)
    for _ in range(8 if full else 3):
        graphs.append(Intersection(rng.sample(simple, 2)))
    return graphs


def kind(graph: SecretGraph) -> str:
    if isinstance(graph, Partition):
        return f"Partition.{graph.mode}"
    return type(graph).__name__


LINE9 = Domain([Ordinal("x", 0, 8)])
BINNED = Domain([Ordinal("x", 0, 16, bin_width=3)])
AGE_SEX = Domain([Ordinal("a", 0, 4), Categorical("c", ["u", "v", "w"])])
GRID = Domain([Ordinal("a", 0, 5), Ordinal("b", 0, 8, bin_width=3)])
CUBE = Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 4, bin_width=2), Ordinal("c", 0, 2)])
MIXED3 = Domain([Ordinal("a", 0, 2), Categorical("s", ["p", "q"]), Ordinal("b", 0, 5, bin_width=2)])


def _sub(domain: Domain, names: list[str]) -> Domain:
    return Domain([domain.attribute(n) for n in names])


#: (inner domain, outer domain): the whole domain, projections, a reordering
CASES = [
    (LINE9, LINE9),
    (BINNED, BINNED),
    (AGE_SEX, AGE_SEX),
    (AGE_SEX, _sub(AGE_SEX, ["a"])),
    (AGE_SEX, _sub(AGE_SEX, ["c"])),
    (AGE_SEX, _sub(AGE_SEX, ["c", "a"])),
    (GRID, GRID),
    (GRID, _sub(GRID, ["b"])),
    (CUBE, CUBE),
    (CUBE, _sub(CUBE, ["a", "c"])),
    (CUBE, _sub(CUBE, ["b"])),
    (MIXED3, MIXED3),
    (MIXED3, _sub(MIXED3, ["b", "s"])),
]


def _case_id(case) -> str:
    return f"{'x'.join(case[0].names)}->{'x'.join(case[1].names)}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_every_kind_pair_against_brute_force(case):
    inner_domain, outer_domain = case
    inner = catalogue(inner_domain, full=False)
    outer = catalogue(outer_domain, full=False, seed=1)
    for g in inner:
        for o in outer:
            agree(g, inner_domain, o, outer_domain)


def test_the_fast_cases_cover_every_kind_pair():
    kinds = {"FullDomain", "Attribute", "Partition.attributes", "Partition.intervals", "Partition.blocks",
             "DistanceThreshold", "Line", "Custom", "Intersection"}
    seen = set()
    for inner_domain, outer_domain in CASES:
        for g in catalogue(inner_domain, full=False):
            for o in catalogue(outer_domain, full=False, seed=1):
                seen.add((kind(g), kind(o)))
    assert seen == {(a, b) for a in kinds for b in kinds}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_every_kind_pair_against_brute_force_full_sweep(case):
    inner_domain, outer_domain = case
    inner = catalogue(inner_domain, full=True, seed=2)
    outer = catalogue(outer_domain, full=True, seed=3)
    for g in inner:
        for o in outer:
            agree(g, inner_domain, o, outer_domain)


def _listed(graph: SecretGraph) -> bool:
    members = graph.graphs if isinstance(graph, Intersection) else (graph,)
    return any(type(m) is Custom or (type(m) is Partition and m.mode == "blocks") for m in members)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_closed_forms_alone_decide_graphs_that_list_nothing(case, monkeypatch):
    """With no pair-by-pair search allowed, graphs that list no values are still decided exactly."""
    monkeypatch.setattr(limits, "PAIR_LIMIT", 0)
    inner_domain, outer_domain = case
    inner = [g for g in catalogue(inner_domain, full=False) if not _listed(g)]
    outer = [g for g in catalogue(outer_domain, full=False, seed=1) if not _listed(g)]
    for g in inner:
        for o in outer:
            agree(g, inner_domain, o, outer_domain)


# ---------------------------------------------------------------------------
# random monotone graphs (thresholds of mixed metrics, bins, Attribute, by_attributes)
# ---------------------------------------------------------------------------
@st.composite
def domains(draw):
    attrs = []
    for k in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 4)) == 0:
            attrs.append(Categorical(f"c{k}", list("pqrs")[: draw(st.integers(1, 4))]))
        else:
            low = draw(st.integers(-3, 3))
            attrs.append(Ordinal(f"o{k}", low, low + draw(st.integers(0, 9)),
                                 bin_width=draw(st.sampled_from([1, 1, 2, 3]))))
    return Domain(attrs)


def monotone_graphs(domain: Domain):
    thetas = st.sampled_from([0, 1, 2, 2.5, 3, 4, 5, 6, 7.5, 9, 12])
    parts = [st.builds(Attribute, st.integers(1, 3)),
             st.lists(st.sampled_from(domain.names), unique=True).map(Partition.by_attributes),
             st.just(FullDomain())]
    if domain.is_ordinal():
        parts.append(st.builds(DistanceThreshold, thetas, st.sampled_from(["l1", "l2", "linf"])))
    return st.lists(st.one_of(parts), min_size=1, max_size=3).map(Intersection)


@st.composite
def monotone_cases(draw):
    inner_domain = draw(domains())
    keep = draw(st.permutations(inner_domain.names))[: draw(st.integers(1, inner_domain.ndim))]
    outer_domain = _sub(inner_domain, list(keep))
    return inner_domain, draw(monotone_graphs(inner_domain)), outer_domain, draw(monotone_graphs(outer_domain))


def _check_monotone_case(case):
    inner_domain, inner, outer_domain, outer = case
    saved = limits.PAIR_LIMIT
    limits.PAIR_LIMIT = 0  # closed forms only
    try:
        agree(inner, inner_domain, outer, outer_domain)
    finally:
        limits.PAIR_LIMIT = saved


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monotone_cases())
def test_monotone_intersections_against_brute_force(case):
    _check_monotone_case(case)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monotone_cases())
def test_monotone_intersections_against_brute_force_many(case):
    _check_monotone_case(case)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monotone_cases())
def test_refusing_is_the_only_way_to_fail(case):
    """With every search cut short, the answer is exact or a refusal, never a wrong None."""
    inner_domain, inner, outer_domain, outer = case
    saved = limits.PAIR_LIMIT, limits.ENUM_LIMIT
    limits.PAIR_LIMIT, limits.ENUM_LIMIT = 0, 1
    try:
        agree(inner, inner_domain, outer, outer_domain)
    except UnsupportedPolicyError:
        pass
    finally:
        limits.PAIR_LIMIT, limits.ENUM_LIMIT = saved


# ---------------------------------------------------------------------------
# large domains: closed forms, no enumeration
# ---------------------------------------------------------------------------
BIG1 = Domain([Ordinal("x", 0, 10**9)])
BIG1_BINS = Domain([Ordinal("x", 0, 10**9, bin_width=10)])
BIG3 = Domain([Ordinal("a", 0, 999), Ordinal("b", 0, 9999, bin_width=10), Ordinal("c", 0, 999)])
BIG_CAT = Domain([Ordinal("a", 0, 99_999), Categorical("s", list(range(2000)))])


@pytest.fixture
def no_enumeration(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a large domain was enumerated")

    monkeypatch.setattr(containment, "_scan", refuse)


@pytest.mark.parametrize("inner,inner_domain,outer,outer_domain,contained", [
    # same metric, thresholds on bins: 15 and 10 join the same bins of width 10
    (DistanceThreshold(15), BIG1_BINS, DistanceThreshold(10), BIG1_BINS, True),
    (DistanceThreshold(20), BIG1_BINS, DistanceThreshold(19), BIG1_BINS, False),
    (Line(), BIG1, DistanceThreshold(1, "linf"), BIG1, True),
    (DistanceThreshold(2), BIG1, Line(), BIG1, False),
    (Line(), BIG1, Partition.intervals([0, 500, 10**9 + 1]), BIG1, False),
    (Intersection([Line(), Partition.intervals([0, 500, 10**9 + 1])]), BIG1,
     Partition.intervals([0, 500, 10**9 + 1]), BIG1, True),
    (Intersection([DistanceThreshold(3), Partition.intervals([0, 500, 10**9 + 1])]), BIG1,
     Intersection([DistanceThreshold(3), Partition.intervals([0, 100, 500, 10**9 + 1])]), BIG1, False),
    # metric pairs in 3-D with bins (b in bins of 10)
    (DistanceThreshold(10, "l1"), BIG3, DistanceThreshold(10, "l2"), BIG3, True),
    (DistanceThreshold(10, "l2"), BIG3, DistanceThreshold(10, "l1"), BIG3, False),
    (DistanceThreshold(10, "linf"), BIG3, DistanceThreshold(30, "l1"), BIG3, True),
    (DistanceThreshold(10, "linf"), BIG3, DistanceThreshold(29, "l1"), BIG3, False),
    (DistanceThreshold(100, "l2"), BIG3, DistanceThreshold(173, "l1"), BIG3, True),
    (DistanceThreshold(100, "l2"), BIG3, DistanceThreshold(172, "l1"), BIG3, False),
    (DistanceThreshold(9, "l1"), BIG3, Attribute(1), BIG3, False),
    (Intersection([Attribute(1), DistanceThreshold(9)]), BIG3, DistanceThreshold(9, "linf"), BIG3, True),
    (Partition.by_attributes(["a", "c"]), BIG3, DistanceThreshold(10**5), BIG3, True),
    (Partition.by_attributes(["a", "c"]), BIG3, DistanceThreshold(9989), BIG3, False),
    (Attribute(2), BIG3, Partition.by_attributes(["b"]), BIG3, False),
    # projections: the dropped attributes are kept equal
    (DistanceThreshold(12), BIG3, DistanceThreshold(12), _sub(BIG3, ["c", "a"]), True),
    (DistanceThreshold(12), BIG3, DistanceThreshold(11), _sub(BIG3, ["a"]), False),
    (Partition.by_attributes(["b"]), BIG3, FullDomain(), _sub(BIG3, ["a"]), True),
    (Partition.by_attributes(["b"]), BIG3, Partition.by_attributes(["a"]), _sub(BIG3, ["a", "b"]), False),
    (Intersection([DistanceThreshold(5), Partition.by_attributes(["b"])]), BIG3,
     Intersection([DistanceThreshold(5), Partition.by_attributes(["b"])]), _sub(BIG3, ["a", "b"]), True),
    # categorical attributes: any change of a label is one attribute changed
    (Partition.by_attributes(["a"]), BIG_CAT, Attribute(1), BIG_CAT, True),
    (Attribute(1), BIG_CAT, Partition.by_attributes(["s"]), _sub(BIG_CAT, ["s"]), False),
    (Partition.by_attributes(["s"]), BIG_CAT, Partition.by_attributes(["s"]), _sub(BIG_CAT, ["s"]), True),
    (Partition.by_attributes(["s"]), BIG_CAT, Line(), _sub(BIG_CAT, ["a"]), False),
    # listed edges on a large domain: every value needs one, so a gap is a witness
    (Line(), BIG1, Custom([(0, 1), (1, 2)]), BIG1, False),
    (Custom([(0, 1), (5, 10**9)]), BIG1, DistanceThreshold(10**9), BIG1, True),
])
def test_large_domains_in_closed_form(inner, inner_domain, outer, outer_domain, contained, no_enumeration):
    got = uncovered_pair(inner, inner_domain, outer, outer_domain)
    assert (got is None) == contained, got
    if got is not None:
        x, y = got
        assert inner.is_edge(x, y, domain=inner_domain)
        px = tuple(x[inner_domain.names.index(n)] for n in outer_domain.names)
        py = tuple(y[inner_domain.names.index(n)] for n in outer_domain.names)
        assert px != py and not outer.is_edge(px, py, domain=outer_domain)


def test_refuses_rather_than_guess():
    # The farthest L1 step within L2 distance 5000 in 3-D is 8660 (sqrt(3) * 5000 = 8660.25),
    # which no closed form here proves: refused, never answered wrongly.
    cube = Domain([Ordinal(n, 0, 10**4) for n in "abc"])
    with pytest.raises(UnsupportedPolicyError, match="cannot decide whether .* contains .*; "):
        uncovered_pair(DistanceThreshold(5000, "l2"), cube, DistanceThreshold(8660, "l1"), cube)
    # a step farther than 8659 in L1 exists, and is found
    x, y = uncovered_pair(DistanceThreshold(5000, "l2"), cube, DistanceThreshold(8659, "l1"), cube)
    assert sum(abs(a - b) for a, b in zip(x, y)) == 8660
    assert sum((a - b) ** 2 for a, b in zip(x, y)) <= 5000**2
    # on a small domain the same question is answered by checking every pair
    small = Domain([Ordinal(n, 0, 12) for n in "abc"])
    assert uncovered_pair(DistanceThreshold(7, "l2"), small, DistanceThreshold(12, "l1"), small) is None
    assert uncovered_pair(DistanceThreshold(7, "l2"), small, DistanceThreshold(11, "l1"), small) is not None


def test_unknown_graph_classes_are_checked_pair_by_pair_or_refused():
    class Even(SecretGraph):  # joins values of the same parity
        def _key(self):
            return ()

        def _record_edge(self, X, Y):
            return (X[:, 0] % 2 == Y[:, 0] % 2) & (X[:, 0] != Y[:, 0])

        def _record_distance(self, X, Y):
            return np.where(self._record_edge(X, Y), 1.0, np.inf)

        def _bind(self, domain):
            return True

        def _edge_mask(self, domain, bound, i, j):
            return (i % 2 == j % 2) & (i != j)

        def _distance_index(self, domain, bound, i, j):
            return np.where(self._edge_mask(domain, bound, i, j), 1.0, np.inf)

        def _has_edge(self, domain, bound):
            return domain.size >= 3

        def _max_weighted_l1(self, domain, bound, scale):
            return scale[0] * 2 * ((domain.size - 1) // 2), True, ""

    agree(Even(), LINE9, DistanceThreshold(8), LINE9)
    agree(Even(), LINE9, DistanceThreshold(5), LINE9)
    agree(Line(), LINE9, Even(), LINE9)
    agree(DistanceThreshold(2), LINE9, Intersection([Even(), DistanceThreshold(2)]), LINE9)
    assert uncovered_pair(Even(), BIG1, FullDomain(), BIG1) is None  # the complete graph covers anything
    with pytest.raises(UnsupportedPolicyError, match="cannot decide whether"):
        uncovered_pair(Even(), BIG1, Line(), BIG1)


# ---------------------------------------------------------------------------
# the answer's form and the arguments
# ---------------------------------------------------------------------------
def test_witness_is_a_pair_of_value_tuples():
    d = Domain([Ordinal("age", 0, 99, bin_width=10), Categorical("sex", ["f", "m"])])
    x, y = uncovered_pair(Attribute(1), d, Partition.by_attributes(["sex"]), d)
    assert x == (0, "f") and y == (0, "m")
    assert uncovered_pair(Line(), LINE9, DistanceThreshold(1), LINE9) is None
    x, y = uncovered_pair(DistanceThreshold(2), LINE9, Line(), LINE9)
    assert x == (0,) and y == (2,)
    # bins: values are the bins' lower edges
    age5 = Domain.ordinal("age", 0, 99, bin_width=5)
    x, y = uncovered_pair(DistanceThreshold(10), age5, DistanceThreshold(5), age5)
    assert (x, y) == ((0,), (10,))


def test_projection_keeps_the_dropped_attributes_equal():
    d = Domain([Ordinal("a", 0, 9), Ordinal("b", 0, 9)])
    # an L1 step of 3 may change a alone: the release on a must join a-values 3 apart
    assert uncovered_pair(DistanceThreshold(3), d, DistanceThreshold(3), _sub(d, ["a"])) is None
    x, y = uncovered_pair(DistanceThreshold(3), d, DistanceThreshold(2), _sub(d, ["a"]))
    assert x[1] == y[1] and abs(x[0] - y[0]) == 3
    # a policy on b alone says nothing about a: a pair that changes only a is covered (equal projections)
    assert uncovered_pair(Partition.by_attributes(["b"]), d, Partition.by_attributes(["b"]), _sub(d, ["b"])) is None


def test_bad_arguments():
    with pytest.raises(TypeError, match="inner must be a SecretGraph"):
        uncovered_pair("line", LINE9, Line(), LINE9)
    with pytest.raises(TypeError, match="outer_domain must be a Domain"):
        uncovered_pair(Line(), LINE9, Line(), "x")
    with pytest.raises(ValueError, match="outer_domain: attribute 'z' is not an attribute of inner_domain"):
        uncovered_pair(Line(), LINE9, Line(), Domain.ordinal("z", 0, 8))
    with pytest.raises(ValueError, match="outer_domain: attribute .* differs from inner_domain's"):
        uncovered_pair(Line(), LINE9, Line(), Domain.ordinal("x", 0, 9))
    with pytest.raises(ValueError, match="outer Line.. does not fit outer_domain: .*1-D ordinal"):
        uncovered_pair(FullDomain(), GRID, Line(), GRID)
    with pytest.raises(ValueError, match="inner DistanceThreshold.* does not fit inner_domain: .*categorical"):
        uncovered_pair(DistanceThreshold(1), AGE_SEX, FullDomain(), AGE_SEX)
