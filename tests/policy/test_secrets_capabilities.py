"""The capabilities of secret graphs, each checked against brute force on tiny domains.

A capability answers a question a caller would otherwise ask by the class
of a graph (the threshold of a 1-D line, the cliques of a partition, a
closed-form spanning tree, whether a selection is crossed, ...); None
means "no fast answer".  Every answer given is compared here with the
graph's own edges, listed pair by pair.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy.policy._policy import Policy
from blowfish_privacy.policy.domain import Categorical, Domain, Ordinal
from blowfish_privacy.policy.secrets import (
    Attribute,
    Custom,
    DistanceThreshold,
    FullDomain,
    Intersection,
    Line,
    Partition,
    SecretGraph,
    ThresholdSteps,
    graph_class,
)
from blowfish_privacy.policy.secrets.canonical import monotone_form
from blowfish_privacy.policy.secrets.registry import SPEC_GRAPHS, spec_names

GRID = Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 2)])
BINNED = Domain([Ordinal("a", 0, 9, 2), Ordinal("b", 0, 5)])
MIXED = Domain([Ordinal("a", 0, 2), Categorical("s", ["f", "m"]), Ordinal("b", 0, 1)])
LINE = Domain([Ordinal("x", 0, 9)])
LINE_BINNED = Domain([Ordinal("x", 0, 19, 3)])


def _graphs():
    """(graph, domain) cases covering every class and mode."""
    return [
        (FullDomain(), MIXED),
        (FullDomain(), LINE),
        (Attribute(1), MIXED),
        (Attribute(2), MIXED),
        (Attribute(3), MIXED),
        (Partition.by_attributes(["s"]), MIXED),
        (Partition.by_attributes(["a", "b"]), MIXED),
        (Partition.by_attributes([]), MIXED),
        (Partition.intervals([0, 3, 7, 10]), LINE),
        (Partition([[0, 1, 2], [3], [4, 5, 6, 7, 8, 9]]), LINE),
        (DistanceThreshold(0), GRID),
        (DistanceThreshold(1), GRID),
        (DistanceThreshold(2, "l1"), BINNED),
        (DistanceThreshold(2.5, "l2"), GRID),
        (DistanceThreshold(3, "linf"), BINNED),
        (DistanceThreshold(4), LINE_BINNED),
        (DistanceThreshold(3), LINE),
        (Line(), LINE),
        (Custom([(0, 1), (1, 5), (7, 8)]), LINE),
        (Custom([((0, 0), (0, 1)), ((1, 2), (3, 2))]), GRID),
        (Intersection([DistanceThreshold(2), Partition.by_attributes(["b"])]), GRID),
    ]


CASES = _graphs()
IDS = [f"{g!r}-{d.names}" for g, d in CASES]


def _pairs(domain):
    i, j = np.triu_indices(domain.size, k=1)
    return i.astype(np.int64), j.astype(np.int64)


def _edges(graph, domain):
    i, j = _pairs(domain)
    mask = graph.edge_mask(domain, i, j)
    return i[mask], j[mask]


def _codes(domain):
    return domain.codes(np.arange(domain.size, dtype=np.int64))


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_is_complete_means_every_pair_is_an_edge(graph, domain):
    i, j = _pairs(domain)
    every = bool(graph.edge_mask(domain, i, j).all())
    if graph.is_complete():
        for other in (LINE, GRID, MIXED):  # complete by definition: on every domain
            a, b = _pairs(other)
            assert graph.edge_mask(other, a, b).all()
    else:
        # only the graphs complete by definition say so; those complete on one domain by chance do not
        assert not every or type(graph) is Attribute


def test_is_complete_answers():
    assert FullDomain().is_complete() and Partition.by_attributes([]).is_complete()
    assert not any(g.is_complete() for g in (Attribute(5), Line(), DistanceThreshold(9), Custom([(0, 1)]),
                                             Partition([[0, 1]]), Partition.by_attributes(["a"])))


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_threshold_steps_give_exactly_the_edges(graph, domain):
    steps = graph.threshold_steps(domain)
    if steps is None:
        assert graph.edge_threshold() is None
        return
    assert isinstance(steps, ThresholdSteps)
    metric, theta = graph.edge_threshold()
    assert (steps.metric, steps.theta) == (metric, Fraction(theta))
    assert list(steps.widths) == [a.bin_width for a in domain.attributes]
    i, j = _pairs(domain)
    codes = _codes(domain)
    delta = np.abs(codes[i] - codes[j])
    rule = (delta <= np.array(steps.caps)).all(axis=1) & steps.within(delta * np.array(steps.widths))
    np.testing.assert_array_equal(graph.edge_mask(domain, i, j), rule & delta.any(axis=1))
    # caps: the longest edge along one attribute alone
    for a in range(domain.ndim):
        alone = (np.delete(delta, a, axis=1) == 0).all(axis=1) & graph.edge_mask(domain, i, j)
        assert steps.caps[a] == int(delta[alone, a].max(initial=0))
    # maximal steps: each is an edge step, and every edge step lies below one of them
    top = steps.maximal_steps()
    ei, ej = _edges(graph, domain)
    for row in top:
        assert steps.within((row * np.array(steps.widths))[None, :])[0] and (row <= np.array(steps.caps)).all()
    for d in np.abs(codes[ei] - codes[ej]):
        assert any((d <= row).all() for row in top)


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_line_threshold_is_the_band_width_and_the_cumulative_sensitivity(graph, domain):
    theta = graph.line_threshold(domain)
    if theta is None:
        assert domain.ndim > 1 or graph.threshold_steps(domain) is None
        return
    i, j = _pairs(domain)
    np.testing.assert_array_equal(graph.edge_mask(domain, i, j), np.abs(i - j) <= theta)
    assert theta == int(Policy(domain, graph).sensitivity("cumulative"))


def _tree_distance(parent, u, v):
    def path(x):
        out = [x]
        while parent[out[-1]] >= 0:
            out.append(int(parent[out[-1]]))
        return out

    pu, pv = path(u), path(v)
    common = set(pu) & set(pv)
    return min(pu.index(c) + pv.index(c) for c in common)


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_tree_embedding_stretch_is_the_longest_tree_path_of_an_edge(graph, domain):
    tree = graph.tree_embedding(domain)
    if tree is None:
        assert not graph.is_complete() and graph.line_threshold(domain) is None
        return
    shape, stretch = tree
    n = domain.size
    if shape == "star":
        parent = np.zeros(n, dtype=np.int64)
    else:
        assert shape == "line"
        parent = np.arange(1, n + 1, dtype=np.int64)
    parent[0 if shape == "star" else n - 1] = -1
    ei, ej = _edges(graph, domain)
    if ei.size == 0:
        assert shape == "line" and stretch == 0
        return
    assert stretch == max(_tree_distance(parent, int(u), int(v)) for u, v in zip(ei, ej))


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_agreement_cliques_give_exactly_the_edges(graph, domain):
    cliques = graph.agreement_cliques(domain)
    if cliques is None:
        return
    i, j = _pairs(domain)
    codes = _codes(domain)
    same = codes[i] == codes[j]
    rule = np.zeros(i.shape[0], dtype=bool)
    for fixed in cliques:
        rule |= same[:, list(fixed)].all(axis=1) if fixed else True
    np.testing.assert_array_equal(graph.edge_mask(domain, i, j), rule)


def test_agreement_cliques_of_attribute_leave_out_c_attributes():
    assert Attribute(1).agreement_cliques(MIXED) == [(1, 2), (0, 2), (0, 1)]
    assert Attribute(3).agreement_cliques(MIXED) == [()]
    assert Partition.by_attributes(["b", "s"]).agreement_cliques(MIXED) == [(2, 1)]
    assert DistanceThreshold(1).agreement_cliques(GRID) is None and Custom([(0, 1)]).agreement_cliques(LINE) is None


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_block_ids_group_exactly_the_cliques(graph, domain):
    ids = graph.block_ids(domain)
    if ids is None:
        return
    assert ids.shape == (domain.size,) and ids.dtype == np.int64
    i, j = _pairs(domain)
    np.testing.assert_array_equal(graph.edge_mask(domain, i, j), ids[i] == ids[j])
    np.testing.assert_array_equal(graph.block_ids(domain, [[3, 1]]), ids[[[3, 1]]])


def _selections(domain):
    for k in (1, 2):
        for positions in itertools.combinations(range(domain.ndim), k):
            for codes in itertools.product(*[range(domain.shape[p]) for p in positions]):
                yield dict(zip(positions, codes))


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_crosses_selection_against_every_edge(graph, domain):
    ei, ej = _edges(graph, domain)
    codes = _codes(domain)
    answered = 0
    for sel in _selections(domain):
        got = graph.crosses_selection(domain, sel)
        if got is None:
            continue
        answered += 1
        inside = np.ones(domain.size, dtype=bool)
        for pos, code in sel.items():
            inside &= codes[:, pos] == code
        assert got == bool(np.any(inside[ei] != inside[ej])), sel
    fast = graph.agreement_cliques(domain) is not None or graph.threshold_steps(domain) is not None
    assert (answered > 0) == fast


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_public_edge_questions_match_brute_force(graph, domain):
    ei, ej = _edges(graph, domain)
    chunks = list(graph.edge_chunks(domain, 7))
    got = sorted(zip(np.concatenate([c[0] for c in chunks] or [[]]).tolist(),
                     np.concatenate([c[1] for c in chunks] or [[]]).tolist()))
    assert got == sorted(zip(ei.tolist(), ej.tolist()))
    codes = _codes(domain)
    scale = [a + 1 for a in range(domain.ndim)]
    value, exact, _ = graph.max_weighted_l1(domain, scale)
    brute = int((np.abs(codes[ei] - codes[ej]) * np.array(scale)).sum(axis=1).max(initial=0))
    assert value == brute if exact else value >= brute
    assert graph.lists_edges() == (type(graph) is Custom)


def test_edge_chunks_refuses_a_bad_chunk_size():
    with pytest.raises(ValueError, match="max_pairs"):
        list(Line().edge_chunks(LINE, 0))


@pytest.mark.parametrize("graph", [DistanceThreshold(3), DistanceThreshold(4, "linf"), DistanceThreshold(5, "l2")])
def test_on_bins_keeps_every_pair_of_raw_values_secret(graph):
    binned = Domain([Ordinal("a", 0, 11, 3), Ordinal("b", 0, 7, 2)])
    raw = Domain([Ordinal("a", 0, 11), Ordinal("b", 0, 7)])
    wide, note = graph.on_bins(binned)
    assert "widened" in note
    ri, rj = _edges(graph, raw)
    # raw values are the raw domain's codes (low 0, width 1); encoding them in the binned domain finds their bins
    bx = binned.encode([tuple(int(v) for v in r) for r in raw.codes(ri)])
    by = binned.encode([tuple(int(v) for v in r) for r in raw.codes(rj)])
    moved = bx != by
    assert moved.any() and wide.edge_mask(binned, bx[moved], by[moved]).all()
    assert graph.on_bins(raw) == (graph, "")


def test_on_bins_of_intervals_and_other_graphs():
    binned = Domain([Ordinal("x", 0, 19, 4)])
    assert Partition.intervals([0, 8, 20]).on_bins(binned) == (Partition.intervals([0, 8, 20]), "")
    with pytest.raises(ValueError, match="interval boundary 6 falls inside a bin"):
        Partition.intervals([0, 6, 20]).on_bins(binned)
    for g in (FullDomain(), Attribute(1), Line(), Custom([(0, 4)])):
        assert g.on_bins(binned) == (g, "")


def test_registry_names_every_spec_graph():
    assert spec_names() == sorted(SPEC_GRAPHS)
    for name in spec_names():
        cls = graph_class(name)
        assert issubclass(cls, SecretGraph) and cls.spec_name == name
        assert all(p.name != "secrets" for p in cls.spec_parameters)
    assert graph_class("custom") is None and graph_class("nope") is None
    assert graph_class("attribute").from_spec(c=2) == Attribute(2)
    assert graph_class("distance_threshold").from_spec(theta=3, metric="linf") == DistanceThreshold(3, "linf")
    assert graph_class("line").from_spec() == Line() and graph_class("full_domain").from_spec() == FullDomain()
    part = graph_class("partition")
    assert part.from_spec(by=["a"]) == Partition.by_attributes(["a"])
    assert part.from_spec(intervals=[0, 5, 10]) == Partition.intervals([0, 5, 10])
    assert part.from_spec(blocks=[[0], [1]]) == Partition([[0], [1]])
    with pytest.raises(ValueError, match="exactly one of by"):
        part.from_spec(by=["a"], intervals=[0, 1])
    both = graph_class("intersection").from_spec(of=[Line(), DistanceThreshold(3)])
    assert both == Intersection([Line(), DistanceThreshold(3)])


def test_line_threshold_with_bins_counts_bins():
    assert DistanceThreshold(7).line_threshold(LINE_BINNED) == 2  # bins of width 3: 0, 3, 6 within 7
    assert DistanceThreshold(2).line_threshold(LINE_BINNED) == 0
    assert DistanceThreshold(100).line_threshold(LINE) == 9  # at most |T| - 1
    assert math.isinf(DistanceThreshold(2).distance(0, 3, domain=LINE_BINNED))


@pytest.mark.parametrize("graph,domain", CASES, ids=IDS)
def test_monotone_form_gives_exactly_the_edges(graph, domain):
    form = monotone_form(graph, domain)
    monotone = graph.agreement_cliques(domain) is not None or graph.threshold_steps(domain) is not None
    if form is None:
        assert not monotone
        return
    i, j = _pairs(domain)
    np.testing.assert_array_equal(form.edge_mask(domain, i, j), graph.edge_mask(domain, i, j))


def _concrete_graph_classes():
    """Every secret-graph class the package defines (public, not the base)."""
    import inspect

    from blowfish_privacy.policy import secrets as package

    return {obj for name in package.__all__ if inspect.isclass(obj := getattr(package, name))
            and issubclass(obj, SecretGraph) and obj is not SecretGraph}


def test_every_graph_class_has_capability_cases():
    """A new secret-graph class is checked here against its own edges before anything may ask it."""
    covered = {type(g) for g, _ in CASES}
    missing = _concrete_graph_classes() - covered
    assert not missing, f"add (graph, domain) cases to _graphs() for {sorted(c.__name__ for c in missing)}"
    assert set(SPEC_GRAPHS.values()) <= _concrete_graph_classes()
