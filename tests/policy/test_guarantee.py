"""The guarantee in numbers (blowfish_privacy.policy.guarantee): bounds, the distances that occur, examples.

Oracles: e^(eps d) computed here; the distances of every graph on tiny
domains by breadth-first search over the explicit edge list (all pairs),
against the table's distances, diameter, unbounded row and example pairs;
the words of threshold graphs against every pair at that distance.
"""

import doctest
import math
import re
import time
from collections import deque

import numpy as np
import pytest

from blowfish_privacy import Categorical, Domain, Ordinal, Policy, guarantee, secrets
from blowfish_privacy.policy.guarantee import (format_bound, guarantee_caption, guarantee_lines, guarantee_table,
                                        product_table)

INF = math.inf


# ---------------------------------------------------------------------------
# the oracle: all-pairs BFS over the explicit edge list
# ---------------------------------------------------------------------------
def _bfs_all(graph, domain):
    """``dist[i][j]`` (inf when disconnected) from the explicit edges, by BFS from every value."""
    n = domain.size
    adj = [[] for _ in range(n)]
    lo, hi = graph.iter_edges(domain)
    for a, b in zip(lo.tolist(), hi.tolist()):
        adj[a].append(b)
        adj[b].append(a)
    out = np.full((n, n), INF)
    for s in range(n):
        out[s, s] = 0
        q = deque([s])
        while q:
            v = q.popleft()
            for w in adj[v]:
                if out[s, w] == INF:
                    out[s, w] = out[s, v] + 1
                    q.append(w)
    return out


TINY = [
    (Domain.ordinal("x", 0, 11), secrets.Line()),
    (Domain.ordinal("x", 0, 11), secrets.DistanceThreshold(3)),
    (Domain.ordinal("x", 0, 12), secrets.DistanceThreshold(5)),
    (Domain.ordinal("x", 0, 20, bin_width=2), secrets.DistanceThreshold(4)),
    (Domain.ordinal("x", 0, 20, bin_width=3), secrets.DistanceThreshold(2)),  # no edge: every pair unbounded
    (Domain.ordinal("x", 0, 9), secrets.FullDomain()),
    (Domain.ordinal("x", 0, 9), secrets.Partition.intervals([0, 3, 4, 10])),
    (Domain.ordinal("x", 0, 9), secrets.Partition([[0, 5, 9], [1, 2], [3], [4, 6, 7, 8]])),
    (Domain([Ordinal("r", 0, 3), Ordinal("c", 0, 4)]), secrets.DistanceThreshold(1)),  # the grid
    (Domain([Ordinal("r", 0, 3), Ordinal("c", 0, 4)]), secrets.DistanceThreshold(2)),
    (Domain([Ordinal("r", 0, 4), Ordinal("c", 0, 4)]), secrets.DistanceThreshold(2, "l2")),
    (Domain([Ordinal("r", 0, 3), Ordinal("c", 0, 5)]), secrets.DistanceThreshold(1, "linf")),
    (Domain([Ordinal("r", 0, 6, bin_width=2), Ordinal("c", 0, 5)]), secrets.DistanceThreshold(3)),  # mixed widths
    (Domain([Ordinal("r", 0, 6, bin_width=3), Ordinal("c", 0, 5)]), secrets.DistanceThreshold(2)),  # a dead axis
    (Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 1), Categorical("s", ["f", "m", "x"])]), secrets.Attribute()),
    (Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 1), Categorical("s", ["f", "m", "x"])]), secrets.Attribute(2)),
    (Domain([Ordinal("a", 0, 3), Categorical("s", ["f", "m"])]), secrets.Partition.by_attributes(["s"])),
    (Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 2)]), secrets.Custom([((0, 0), (1, 0)), ((1, 0), (1, 1)),
                                                                      ((1, 1), (2, 2)), ((3, 2), (3, 1))])),
    (Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 4)]),
     secrets.Custom([((a, b), (a, b + 1)) for a in range(4) for b in range(4)])),  # row-line: a forest
    (Domain.ordinal("x", 0, 9), secrets.Custom([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (6, 7)])),  # a cycle
    (Domain([Ordinal("a", 0, 5), Ordinal("b", 0, 3)]),
     secrets.Intersection([secrets.DistanceThreshold(2), secrets.Partition.by_attributes(["b"])])),
    (Domain.ordinal("x", 0, 11), secrets.Intersection([secrets.DistanceThreshold(3),
                                                       secrets.Partition.intervals([0, 5, 12])])),
]


@pytest.mark.parametrize("domain,graph", TINY, ids=[f"{g!r}-{d.shape}" for d, g in TINY])
def test_distances_match_brute_force_bfs(domain, graph):
    dist = _bfs_all(graph, domain)
    finite = dist[np.isfinite(dist)]
    diameter = int(finite.max())
    wanted = tuple(range(1, 40))
    t = guarantee_table(Policy(domain, graph), 0.3, wanted)
    occurring = {int(v) for v in finite.tolist() if v > 0}
    assert occurring == set(range(1, diameter + 1))  # the oracle's own premise
    assert {d for d in t.distances if d != INF} == occurring
    assert t.unbounded == bool(np.isinf(dist).any()) == (INF in t.distances)
    assert t.diameter == (diameter or None) and t.diameter_exact
    index = {domain.record_of(i): i for i in range(domain.size)}
    for r in t.rows + ((t.largest,) if t.largest else ()):
        x, y = (index[v] for v in r.example)
        assert dist[x, y] == r.distance, (r, dist[x, y])
        assert r.bound == pytest.approx(math.exp(0.3 * r.distance)) if r.distance != INF else r.bound == INF
    if t.largest is not None:
        assert t.largest.distance == diameter


@pytest.mark.parametrize("theta,size,metric", [(1, 12, "l1"), (3, 14, "l1"), (4, 30, "l1"), (7, 9, "l1")])
def test_threshold_words_are_the_exact_set_of_differences(theta, size, metric):
    domain = Domain.ordinal("x", 0, size - 1)
    graph = secrets.Line() if theta == 1 else secrets.DistanceThreshold(theta, metric)
    dist = _bfs_all(graph, domain)
    t = guarantee_table(Policy(domain, graph), 0.1, tuple(range(1, size)))
    for r in t.rows:
        diffs = {abs(i - j) for i in range(size) for j in range(size) if dist[i, j] == r.distance}
        if theta == 1:
            assert r.pairs == f"values {r.distance} apart" and diffs == {r.distance}
        else:
            m = re.fullmatch(r"\|x - y\| in (\d+)(?:\.\.(\d+))?", r.pairs)
            lo = int(m.group(1))
            hi = int(m.group(2) or lo)
            assert diffs == set(range(lo, hi + 1)), (r.pairs, sorted(diffs))


def test_grid_words_say_l1_steps():
    domain = Domain([Ordinal("r", 0, 5), Ordinal("c", 0, 6)])
    t = guarantee_table(Policy(domain, secrets.DistanceThreshold(1)), 0.1)
    assert t.name == "grid"
    assert t.row(5).pairs == "cells 5 steps apart (L1)" and t.row(1).pairs == "cells 1 step apart (L1)"
    assert t.distances == (1, 2, 5, 10) and t.diameter == 11
    x, y = t.row(10).example
    assert abs(x[0] - y[0]) + abs(x[1] - y[1]) == 10


# ---------------------------------------------------------------------------
# the numbers the brief names
# ---------------------------------------------------------------------------
def test_bounds_are_exp_eps_d_with_three_figures():
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 4095), secrets.Line()), 0.1, name="line")
    for d in (1, 2, 5, 10, 50):
        assert t.row(d).bound == pytest.approx(math.exp(0.1 * d), rel=1e-12)
        assert t.row(d).log_bound == pytest.approx(0.1 * d)
    assert [t.row(d).bound_text for d in (1, 2, 5, 10, 50)] == ["1.11", "1.22", "1.65", "2.72", "148"]
    assert t.diameter == 4095 and t.largest.bound == pytest.approx(math.exp(409.5))
    assert t.dp_bound == pytest.approx(math.exp(0.1))
    assert t.compact() == ("line, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=4095 "
                           "6.98e+177; DP: 1.11 for every pair")


def test_full_domain_has_only_distance_one():
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 999), secrets.FullDomain()), 0.5)
    assert t.distances == (1,) and t.diameter == 1 and not t.unbounded
    assert t.row(1).pairs == "any two different values"
    assert t.compact() == "DP (full domain), eps 0.5: 1.65 for every pair (as DP)"
    # a threshold at least the domain's span is the complete graph too
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 9), secrets.DistanceThreshold(9)), 0.5, name="wide")
    assert t.compact() == "wide, eps 0.5: 1.65 for every pair (as DP)"


def test_line_on_ten_values_stops_at_nine():
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 9), secrets.Line()), 1.0)
    assert t.distances == (1, 2, 5) and t.diameter == 9
    with pytest.raises(KeyError):
        t.row(10)
    assert "d=10" not in t.compact() and "d=50" not in t.compact() and "largest d=9 8.1e+03" in t.compact()


def test_partition_is_unbounded_across_blocks():
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 99), secrets.Partition.intervals([0, 10, 50, 100])), 0.1)
    assert t.distances == (1, INF) and t.unbounded
    assert t.row(INF).bound == INF and t.row(INF).bound_text == "inf"
    assert t.row(INF).example == (0, 10)
    assert "unbounded" in t.text() and "| unbounded | inf |" in t.markdown()
    assert "unbounded (inf) for values in different intervals" in t.compact()


def test_distance_threshold_4_on_100_values():
    p = Policy(Domain.ordinal("x", 0, 99), secrets.DistanceThreshold(4))
    t = guarantee_table(p, 0.1)
    assert t.distances == (1, 2, 5, 10) and t.diameter == 25  # ceil(99 / 4)
    assert t.row(5).pairs == "|x - y| in 17..20" and t.row(1).pairs == "|x - y| in 1..4"
    x, y = t.row(5).example
    assert p.distance(x, y) == 5 and 17 <= abs(x - y) <= 20
    assert t.largest.pairs == "|x - y| in 97..99"


def test_binned_threshold_speaks_in_values():
    # bins of width 5 (lower edges 0, 5, ...), theta 10: one step covers two bins
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 99, bin_width=5), secrets.DistanceThreshold(10)), 0.1)
    assert t.row(2).pairs == "|x - y| in 15..20 (bin lower edges)"
    x, y = t.row(2).example
    assert abs(x - y) == 15


def test_attribute_words_and_diameter():
    dom = Domain([Ordinal("a", 0, 9), Ordinal("b", 0, 9), Ordinal("c", 0, 0), Categorical("s", ["f", "m"])])
    t = guarantee_table(Policy(dom, secrets.Attribute()), 0.1)
    assert t.distances == (1, 2) and t.diameter == 3  # c has one value: it never differs
    assert t.row(2).pairs == "values differing in 2 attributes"
    t2 = guarantee_table(Policy(dom, secrets.Attribute(2)), 0.1)
    assert t2.distances == (1, 2) and t2.row(1).pairs == "values differing in 1..2 attributes"


def test_format_bound_beyond_the_float_range():
    assert format_bound(0.1) == "1.11"
    assert format_bound(5.0) == "148"
    assert format_bound(math.log(10) * 1000) == "1.00e+1000"
    assert format_bound(1000.0) == "1.97e+434"
    assert format_bound(INF) == "inf"
    assert format_bound(math.log(9.9996) + 800 * math.log(10)) == "1.00e+801"  # mantissa rounds up


# ---------------------------------------------------------------------------
# scale: never |T| x |T|
# ---------------------------------------------------------------------------
def test_huge_domains_use_the_closed_forms():
    t0 = time.perf_counter()
    line = guarantee_table(Policy(Domain.ordinal("x", 0, 10**8 - 1), secrets.Line()), 0.1)
    thr = guarantee_table(Policy(Domain.ordinal("x", 0, 10**8 - 1), secrets.DistanceThreshold(4)), 0.1)
    grid = guarantee_table(Policy(Domain([Ordinal("r", 0, 9999), Ordinal("c", 0, 9999)]),
                                  secrets.DistanceThreshold(1)), 0.1)
    attr = guarantee_table(Policy(Domain([Ordinal(f"a{i}", 0, 99) for i in range(4)]), secrets.Attribute()), 0.1)
    assert time.perf_counter() - t0 < 2
    assert line.diameter == 10**8 - 1 and line.distances == (1, 2, 5, 10, 50)
    assert thr.diameter == 25_000_000 and thr.row(50).pairs == "|x - y| in 197..200"
    assert grid.diameter == 19998 and grid.largest.example == ((0, 0), (9999, 9999))
    assert attr.diameter == 4


def test_custom_graph_beyond_the_exact_limit_says_what_was_searched():
    # a cycle of 300 values and a separate edge: BFS from two values finds half the cycle
    dom = Domain.ordinal("x", 0, 301)
    g = secrets.Custom([(i, (i + 1) % 300) for i in range(300)] + [(300, 301)])
    t = guarantee_table(Policy(dom, g), 0.1)
    assert not t.diameter_exact and t.diameter == 150 and t.unbounded
    assert t.distances == (1, 2, 5, 10, 50, INF)
    assert "largest found" in t.text() and any("breadth-first search" in n for n in t.notes)


@pytest.mark.slow
def test_forest_of_edges_is_exact_at_scale():
    # the row-line graph of DPBench's 2-D benchmark: 128 paths of 128 cells, one per row
    from blowfish_privacy.mechanisms.grids.grid import axis_line_policy

    t0 = time.perf_counter()
    t = guarantee_table(axis_line_policy(128, 128), 0.1)
    assert time.perf_counter() - t0 < 2
    assert t.diameter_exact and t.diameter == 127 and t.unbounded and not t.notes
    x, y = t.largest.example
    assert x[0] == y[0] and abs(x[1] - y[1]) == 127
    x, y = t.row(INF).example
    assert x[0] != y[0]
    # a path with a value on no edge
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 9), secrets.Custom([(i, i + 1) for i in range(8)])), 0.1)
    assert t.diameter == 8 and t.row(INF).example == (0, 9)


# ---------------------------------------------------------------------------
# several policies, product of disjoint parts
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_product_of_disjoint_parts_matches_bfs_on_the_whole_record():
    dom = Domain([Ordinal("a", 0, 7), Ordinal("b", 0, 5), Categorical("s", ["f", "m"])])
    ga, gb = secrets.DistanceThreshold(2), secrets.Partition.intervals([0, 3, 6])
    pa, pb = Policy(Domain([dom.attribute("a")]), ga), Policy(Domain([dom.attribute("b")]), gb)
    # the whole-record graph: each part equal or an edge, not all equal
    n = dom.size
    recs = [dom.record_of(i) for i in range(n)]

    def edge(x, y):
        return x != y and (x[0] == y[0] or ga.is_edge(x[0], y[0], domain=pa.domain)) and \
            (x[1] == y[1] or gb.is_edge(x[1], y[1], domain=pb.domain))

    edges = [(recs[i], recs[j]) for i in range(n) for j in range(i + 1, n) if edge(recs[i], recs[j])]
    whole = secrets.Custom(edges)
    dist = _bfs_all(whole, dom)
    t = product_table([(pa, ("a",)), (pb, ("b",))], dom, 0.2, tuple(range(1, 20)), name="both")
    finite = {int(v) for v in dist[np.isfinite(dist)].tolist() if v > 0}
    assert {d for d in t.distances if d != INF} == finite and t.diameter == max(finite) == 4
    assert t.unbounded == bool(np.isinf(dist).any()) is True
    index = {r: i for i, r in enumerate(recs)}
    for r in t.rows + (t.largest,):
        assert dist[index[r.example[0]], index[r.example[1]]] == r.distance
    with pytest.raises(ValueError, match="disjoint"):
        product_table([(pa, ("a",)), (pa, ("a",))], dom, 0.2)


def test_lines_and_caption_for_several_policies():
    dom = Domain.ordinal("x", 0, 99)
    pols = {"line": Policy(dom, secrets.Line()), "distance threshold 4": Policy(dom, secrets.DistanceThreshold(4))}
    text = guarantee_lines(pols, 0.1)
    assert text.count("DP  ") >= 2 and "line: Line() on 100 values" in text and "|x - y| in 17..20" in text
    md = guarantee_lines(pols, 0.1, markdown=True)
    assert md.count("| DP | 1.11 |") == 2 and "| \\|x - y\\| in 17..20 |" in md
    assert "| |x" not in md  # the pipes of |x - y| are escaped
    cap = guarantee_caption(pols, 0.1)
    assert cap.splitlines() == [
        "line, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=99 2.0e+04".replace(
            "2.0e+04", format_bound(9.9)),
        "distance threshold 4, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, largest d=25 12.2",
        "DP, eps 0.1: 1.11 for every pair",
    ]


def test_validation_names_the_parameter():
    p = Policy(Domain.ordinal("x", 0, 9), secrets.Line())
    with pytest.raises(ValueError, match="epsilon"):
        guarantee_table(p, 0)
    with pytest.raises(ValueError, match="distances"):
        guarantee_table(p, 0.1, (0, 1))
    with pytest.raises(TypeError, match="distances"):
        guarantee_table(p, 0.1, "12")
    with pytest.raises(TypeError, match="policy"):
        guarantee_table("line", 0.1)


def test_result_is_immutable():
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 9), secrets.Line()), 0.1)
    with pytest.raises(AttributeError):
        t.epsilon = 1.0
    with pytest.raises(AttributeError):
        t.rows[0].bound = 2.0
    assert isinstance(t.rows, tuple)


def test_explanation_carries_the_table():
    p = Policy(Domain.ordinal("x", 0, 99), secrets.DistanceThreshold(4))
    ex = p.explain(0.1)
    assert ex.guarantee == guarantee_table(p, 0.1)
    assert "The guarantee in numbers" in str(ex) and "|x - y| in 17..20" in str(ex)


def test_doctests():
    assert doctest.testmod(guarantee, raise_on_error=False).failed == 0


def test_concepts_doc_example_runs_as_written():
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "concepts.md"
    if not doc.exists():
        pytest.skip("docs/concepts.md is not beside the tests (installed-only run)")
    text = doc.read_text()
    section = text[text.index("## What a gain costs: the guarantee in numbers"):]
    block = re.search(r"```pycon\n(.*?)```", section, re.S).group(1)
    test = doctest.DocTestParser().get_doctest(block, {}, "concepts.md", str(doc), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 8


def test_constraints_and_moves_are_named_in_the_notes():
    from blowfish_privacy.policy.constraints import Marginal, RangeCount

    dom = Domain([Ordinal("a", 0, 3), Categorical("s", ["f", "m"])])
    t = guarantee_table(Policy(dom, secrets.FullDomain(), [Marginal(["s"])]), 0.1)
    assert any("public constraints" in n for n in t.notes) and "note: the policy has public constraints" in t.text()
    t = guarantee_table(Policy(dom, secrets.FullDomain(), [Marginal(["s"])], neighbours="moves"), 0.1)
    assert any("another neighbour notion" in n for n in t.notes)
    t = guarantee_table(Policy(Domain.ordinal("x", 0, 9), secrets.Line(), [RangeCount(0, 4)]), 0.1)
    assert t.distances == (1, 2, 5) and len(t.notes) == 1


def test_distances_not_computed_are_never_read_as_no_protected_pair():
    # L2 thresholds on a 10^4 x 10^4 grid: the exact distance is beyond the dynamic program's limit
    big = Domain([Ordinal("a", 0, 9999), Ordinal("b", 0, 9999)])
    graph = secrets.DistanceThreshold(1.5, "l2")
    assert graph.has_edge(big)
    t = guarantee_table(Policy(big, graph), 0.1)
    assert not t.rows and t.largest is None and t.notes
    line = t.compact()
    assert "no protected pair" not in line and "not computed" in line
    table = guarantee.guarantee_comparison({"l2": Policy(big, graph)}, 0.1)
    assert "| unbounded | none | not computed |" in table
    # a graph without an edge still says so
    none = guarantee_table(Policy(Domain.ordinal("x", 0, 20, bin_width=3), secrets.DistanceThreshold(2)), 0.1)
    assert "not computed" not in none.compact()


@pytest.mark.parametrize("fn", [guarantee_lines, guarantee_caption, guarantee.guarantee_comparison])
def test_policies_that_are_not_a_mapping_are_refused_by_name(fn):
    p = Policy(Domain.ordinal("x", 0, 9), secrets.Line())
    with pytest.raises(TypeError, match="policies must be a mapping"):
        fn([p], 0.1)
