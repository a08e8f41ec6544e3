"""Policy, secret graphs on domains and sensitivities against brute-force oracles."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blowfish_privacy.policy.secrets.lattice as lattice_module
import blowfish_privacy.policy.secrets.limits as secrets_limits
from blowfish_privacy.policy.domain import Categorical, Domain, Ordinal
from blowfish_privacy.policy._policy import Policy, Sensitivity
from blowfish_privacy.policy.secrets import (
    Attribute,
    Custom,
    DistanceThreshold,
    FullDomain,
    Line,
    Partition,
)
from oracles import (
    bfs_distances,
    cumulative_matrix,
    enumerate_domain,
    histogram_matrix,
    is_ordinal,
    oracle_edges,
    oracle_is_tree,
    oracle_sensitivity,
    sum_matrix,
)

THETAS = [0, 0.5, 1, 2, 3.5, 100]
METRICS = ["l1", "l2", "linf"]

DOMAINS = {
    "line10": Domain.ordinal("x", 0, 9),
    "line_w3": Domain.ordinal("x", 3, 33, bin_width=3),
    "single": Domain.ordinal("x", 5, 5),
    "pair": Domain.ordinal("x", -1, 0),
    "grid3x4": Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 3)]),
    "grid_w": Domain([Ordinal("a", 0, 5, bin_width=2), Ordinal("b", 1, 10, bin_width=3)]),
    "cube": Domain([Ordinal("a", 0, 3, bin_width=2), Ordinal("b", 0, 1), Ordinal("c", 0, 8, bin_width=3)]),
    "mixed": Domain([Categorical("c", ["u", "v", "w"]), Ordinal("b", 0, 6, bin_width=2)]),
    "cat2": Domain([Categorical("c", ["u", "v"]), Categorical("d", [1, 2, 3])]),
}


def _record(domain: Domain, values: tuple):
    return values[0] if domain.ndim == 1 else values


def _random_blocks(domain: Domain, rng: np.random.Generator, nblocks: int) -> list[list]:
    values = enumerate_domain(domain)
    label = rng.integers(0, nblocks, size=len(values))
    blocks = [[_record(domain, values[k]) for k in np.flatnonzero(label == b)] for b in range(nblocks)]
    return [b for b in blocks if b]


def _custom_graphs(domain: Domain, rng: np.random.Generator) -> list[Custom]:
    values = [_record(domain, v) for v in enumerate_domain(domain)]
    n = len(values)
    perm = rng.permutation(n).tolist()
    path = [(values[perm[k]], values[perm[k + 1]]) for k in range(n - 1)]
    graphs = [Custom([]), Custom(path)]
    if n >= 3:
        graphs.append(Custom(path + [(values[perm[-1]], values[perm[0]])]))  # cycle
        graphs.append(Custom([(values[0], values[k]) for k in range(1, n)]))  # star
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        pick = rng.choice(len(pairs), size=min(len(pairs), n), replace=False)
        graphs.append(Custom([(values[pairs[p][0]], values[pairs[p][1]]) for p in pick]))
    return graphs


def graphs_for(name: str) -> list:
    domain = DOMAINS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    graphs: list = [FullDomain(), Attribute(1), Attribute(2)]
    if domain.is_ordinal():
        graphs += [DistanceThreshold(t, m) for t in THETAS for m in METRICS]
        graphs += [DistanceThreshold(t, m) for t in (3, 4.5, 5, 6) for m in METRICS]
    if domain.ndim == 1 and domain.attributes[0].bin_width == 1:
        graphs.append(Line())
    graphs.append(Partition.by_attributes([]))
    graphs += [Partition.by_attributes([n]) for n in domain.names]
    if domain.ndim >= 2:
        graphs.append(Partition.by_attributes(list(domain.names[:2])))
    if domain.ndim == 1 and is_ordinal(domain.attributes[0]):
        attr = domain.attributes[0]
        graphs.append(Partition.intervals([attr.low, attr.high + 1]))
        inner = [b for b in (attr.low + 4, attr.low + 4.5, attr.low + 7) if b < attr.high + 3]
        graphs.append(Partition.intervals([attr.low - 10, *inner, attr.high + 3]))
    for nblocks in (1, 3, domain.size):
        graphs.append(Partition(_random_blocks(domain, rng, nblocks)))
    graphs += _custom_graphs(domain, rng)
    return graphs


CASES = [(name, g) for name in DOMAINS for g in graphs_for(name)]
IDS = [f"{name}-{g!r}" for name, g in CASES]


def queries_for(domain: Domain, rng: np.random.Generator):
    """(query, attribute, W for the oracle) triples."""
    size = domain.size
    out = [("histogram", None, histogram_matrix(size))]
    if domain.ndim == 1 and is_ordinal(domain.attributes[0]):
        out.append(("cumulative", None, cumulative_matrix(size)))
    if any(is_ordinal(a) for a in domain.attributes):
        out.append(("sum", None, sum_matrix(domain)))
        for a in domain.attributes:
            if is_ordinal(a):
                out.append(("sum", a.name, sum_matrix(domain, a.name)))
    for q in (1, 3):
        W = rng.integers(-5, 6, size=(q, size))
        out.append((W, None, W))
    Wf = rng.integers(-8, 9, size=(2, size)) / 4.0
    out.append((Wf, None, Wf))
    return out


@pytest.mark.parametrize("name,graph", CASES, ids=IDS)
def test_graph_matches_oracle(name, graph):
    domain = DOMAINS[name]
    edges = oracle_edges(domain, graph)
    policy = Policy(domain, graph)
    size = domain.size

    # edges: the explicit list and the vectorised mask
    i, j = graph.iter_edges(domain)
    assert set(zip(i.tolist(), j.tolist())) == edges
    assert len(set(zip(i.tolist(), j.tolist()))) == i.shape[0]
    I, J = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    expected = np.zeros((size, size), dtype=bool)
    for a, b in edges:
        expected[a, b] = expected[b, a] = True
    assert np.array_equal(policy.is_edge(I, J), expected)
    assert graph.has_edge(domain) == bool(edges)

    # distances: every pair against breadth-first search
    assert np.array_equal(policy.distance(I, J), bfs_distances(size, edges))
    assert graph.is_tree(domain) == oracle_is_tree(size, edges)

    # sensitivities
    rng = np.random.default_rng(7)
    for query, attribute, W in queries_for(domain, rng):
        info = policy.sensitivity_info(query, attribute=attribute)
        want = oracle_sensitivity(edges, W)
        assert info.exact, (query, attribute, info)
        assert info.value == want, (query, attribute)
        assert type(info.value) is type(want)
        assert policy.sensitivity(query, attribute=attribute) == want


@pytest.mark.parametrize("name,graph", [c for c in CASES if isinstance(c[1], DistanceThreshold)],
                         ids=[i for i, c in zip(IDS, CASES) if isinstance(c[1], DistanceThreshold)])
def test_sum_sensitivity_search_paths(name, graph, monkeypatch):
    """The knapsack DP and the upper bound agree with / dominate the oracle."""
    domain = DOMAINS[name]
    edges = oracle_edges(domain, graph)
    want = oracle_sensitivity(edges, sum_matrix(domain))
    monkeypatch.setattr(secrets_limits, "ENUM_LIMIT", 0)
    fresh = DistanceThreshold(graph.theta, graph.metric)
    info = Policy(domain, fresh).sensitivity_info("sum")
    assert info.exact and info.value == want
    monkeypatch.setattr(secrets_limits, "KNAPSACK_LIMIT", 0)
    info = Policy(domain, DistanceThreshold(graph.theta, graph.metric)).sensitivity_info("sum")
    assert info.value >= want
    if not info.exact:
        assert info.note


# ---------------------------------------------------------------------------
# distances on larger domains (exact dynamic program vs BFS)
# ---------------------------------------------------------------------------
DIST_DOMAINS = {
    "grid9x8_w23": Domain([Ordinal("a", 0, 16, bin_width=2), Ordinal("b", 0, 23, bin_width=3)]),
    "grid10x10": Domain([Ordinal("a", 0, 9), Ordinal("b", 0, 9)]),
    "cube_w123": Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 5, bin_width=2), Ordinal("c", 0, 14, bin_width=3)]),
    "line_w4": Domain.ordinal("x", 0, 99, bin_width=4),
}
DIST_CASES = [
    # the 10x10 grid takes most of the time, and thresholds above 5 add
    # little beside the smaller ones: those cases run with -m slow
    pytest.param(name, DistanceThreshold(t, m), marks=[pytest.mark.slow] if name == "grid10x10" or t > 5 else [],
                 id=f"{name}-{DistanceThreshold(t, m)!r}")
    for name in DIST_DOMAINS
    for t in (1, 2, 3, 3.5, 4, 4.5, 5, 6, 7, 8.5, 10, 13)
    for m in METRICS
]


@pytest.mark.parametrize("name,graph", DIST_CASES)
def test_threshold_distances_match_bfs(name, graph):
    domain = DIST_DOMAINS[name]
    edges = oracle_edges(domain, graph)
    want = bfs_distances(domain.size, edges)
    I, J = np.meshgrid(np.arange(domain.size), np.arange(domain.size), indexing="ij")
    assert np.array_equal(graph.distance_index(domain, I, J), want)
    # the dynamic program itself, also where a closed form is used
    bound = graph._binding(domain)
    codes = domain.codes(np.arange(domain.size))
    delta = np.abs(codes - codes[0])
    live = [a for a in range(domain.ndim) if bound.caps[a] >= 1 and domain.shape[a] >= 2]
    if len(live) == domain.ndim and domain.ndim >= 2:
        table = lattice_module._ReachTable(bound.widths, list(domain.shape), graph.metric, graph._theta)
        assert np.array_equal(table.lookup(delta), want[0])
    assert graph.is_tree(domain) == oracle_is_tree(domain.size, edges)


def test_distance_dp_refuses_huge_boxes():
    domain = Domain([Ordinal("a", 0, 99_999), Ordinal("b", 0, 99_999, bin_width=2)])
    graph = DistanceThreshold(3, "l1")
    with pytest.raises(ValueError, match="too costly"):
        graph.distance_index(domain, 0, domain.index_of((90_000, 90_000)))
    # single-attribute differences and small boxes stay exact
    assert graph.distance_index(domain, 0, domain.index_of((90_000, 0))) == 30_000
    assert graph.distance_index(domain, 0, domain.index_of((4, 2))) == 2


def test_distance_table_reused_across_calls():
    domain = DIST_DOMAINS["grid9x8_w23"]
    graph = DistanceThreshold(5, "l2")
    edges = oracle_edges(domain, graph)
    want = bfs_distances(domain.size, edges)
    small = [domain.index_of((2, 3)), domain.index_of((4, 0))]
    assert graph.distance_index(domain, 0, small).tolist() == want[0, small].tolist()
    assert graph.distance_index(domain, 0, np.arange(domain.size)).tolist() == want[0].tolist()
    assert graph.distance_index(domain, 0, small).tolist() == want[0, small].tolist()


# ---------------------------------------------------------------------------
# random small domains and graphs
# ---------------------------------------------------------------------------
@st.composite
def small_domains(draw):
    ndim = draw(st.integers(1, 2))
    attrs = []
    budget = 12
    for a in range(ndim):
        n = draw(st.integers(1, budget if ndim == 1 else 4))
        width = draw(st.integers(1, 3))
        low = draw(st.integers(-4, 4))
        last = draw(st.integers(0, width - 1))
        attrs.append(Ordinal(f"a{a}", low, low + (n - 1) * width + last, bin_width=width))
    return Domain(attrs)


@st.composite
def domain_and_graph(draw):
    domain = draw(small_domains())
    values = [_record(domain, v) for v in enumerate_domain(domain)]
    kind = draw(st.sampled_from(["threshold", "attribute", "custom", "blocks", "full"]))
    if kind == "threshold":
        theta = draw(st.one_of(st.sampled_from(THETAS), st.floats(0, 12, allow_nan=False), st.integers(0, 12)))
        graph = DistanceThreshold(theta, draw(st.sampled_from(METRICS)))
    elif kind == "attribute":
        graph = Attribute(draw(st.integers(1, 3)))
    elif kind == "full":
        graph = FullDomain()
    elif kind == "custom":
        n = len(values)
        pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20))
        graph = Custom([(values[a], values[b]) for a, b in pairs if a != b])
    else:
        labels = draw(st.lists(st.integers(0, 3), min_size=len(values), max_size=len(values)))
        blocks = [[v for v, lab in zip(values, labels) if lab == b] for b in range(4)]
        graph = Partition([b for b in blocks if b])
    return domain, graph


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(domain_and_graph())
def test_random_graphs_match_oracle(case):
    domain, graph = case
    edges = oracle_edges(domain, graph)
    size = domain.size
    policy = Policy(domain, graph)
    I, J = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    assert np.array_equal(policy.distance(I, J), bfs_distances(size, edges))
    i, j = graph.iter_edges(domain)
    assert set(zip(i.tolist(), j.tolist())) == edges
    assert graph.is_tree(domain) == oracle_is_tree(size, edges)
    assert policy.sensitivity("histogram") == oracle_sensitivity(edges, histogram_matrix(size))
    assert policy.sensitivity("sum") == oracle_sensitivity(edges, sum_matrix(domain))
    for attr in domain.names:
        assert policy.sensitivity("sum", attribute=attr) == oracle_sensitivity(edges, sum_matrix(domain, attr))
    if domain.ndim == 1:
        assert policy.sensitivity("cumulative") == oracle_sensitivity(edges, cumulative_matrix(size))


# ---------------------------------------------------------------------------
# closed forms named in the design, on large domains
# ---------------------------------------------------------------------------
def test_cumulative_closed_forms():
    d = Domain.ordinal("x", 0, 999)
    assert Policy(d, FullDomain()).sensitivity("cumulative") == 999
    assert Policy(d, Attribute()).sensitivity("cumulative") == 999
    assert Policy(d, DistanceThreshold(7.9)).sensitivity("cumulative") == 7
    assert Policy(d, DistanceThreshold(5000, "l2")).sensitivity("cumulative") == 999
    assert Policy(d, Line()).sensitivity("cumulative") == 1
    assert Policy(d, Partition.intervals([0, 10, 400, 1000])).sensitivity("cumulative") == 599
    dw = Domain.ordinal("x", 0, 999, bin_width=10)
    assert Policy(dw, DistanceThreshold(35)).sensitivity("cumulative") == 3
    assert Policy(dw, DistanceThreshold(35)).sensitivity("sum") == 30


def test_sum_paper_example():
    """000 Sec 5: a sum over [a, b] has sensitivity (b - a) under G^full and theta under G^{d,theta}."""
    d = Domain.ordinal("salary", 1000, 200_000)
    assert Policy(d, FullDomain()).sensitivity("sum") == 199_000
    assert Policy(d, DistanceThreshold(250)).sensitivity("sum") == 250


def test_large_domains_need_no_materialisation():
    domain = Domain([Ordinal("a", 0, 9999), Ordinal("b", 0, 9999)])  # 10^8 values
    assert domain.size == 10**8
    for graph in (Partition.by_attributes(["a"]), FullDomain(), Attribute(1), DistanceThreshold(3, "l2")):
        policy = Policy(domain, graph)
        assert policy.sensitivity("histogram") == 2
        assert isinstance(policy.sensitivity("sum"), int)
    assert Policy(domain, Partition.by_attributes(["a"])).sensitivity("sum") == 9999
    assert Policy(domain, Attribute(1)).sensitivity("sum") == 9999
    assert Policy(domain, FullDomain()).sensitivity("sum") == 19998
    assert Policy(domain, DistanceThreshold(3, "l2")).sensitivity("sum") == 4
    assert Policy(domain, DistanceThreshold(3, "linf")).sensitivity("sum") == 6
    p = Policy(domain, DistanceThreshold(2, "l2"))
    x, y = domain.index_of((5000, 5000)), domain.index_of((5003, 5003))
    assert p.distance(x, y) == 3
    assert p.is_edge(x, domain.index_of((5001, 5001)))
    line = Domain.ordinal("x", 0, 10**8 - 1)
    policy = Policy(line, Partition.intervals([0, 10, 10**6, 10**8]))
    assert policy.sensitivity("cumulative") == 10**8 - 10**6 - 1
    assert policy.distance(3, 9) == 1 and policy.distance(3, 10) == math.inf
    assert not policy.secrets.is_tree(line)
    assert Policy(line, DistanceThreshold(1)).secrets.is_tree(line)


@pytest.mark.parametrize("metric", ["l1", "l2"])
@pytest.mark.parametrize("theta", [20, 50.5, 137, 500.25])
def test_sum_exact_on_medium_domains(metric, theta):
    """Every difference vector within the box is realised by an edge, so S = max w.s over feasible s."""
    domain = Domain([Ordinal("a", 0, 300, bin_width=3), Ordinal("b", 0, 700, bin_width=7), Ordinal("c", 0, 9, bin_width=5)])
    w = np.array([3, 7, 5])
    steps = np.stack(np.meshgrid(*[np.arange(n) for n in domain.shape], indexing="ij"), axis=-1).reshape(-1, 3)
    vals = steps * w
    size = vals.sum(1) if metric == "l1" else (vals**2).sum(1)
    limit = math.floor(theta) if metric == "l1" else math.floor(theta**2)
    want = int(vals[(size <= limit) & (size > 0)].sum(1).max())
    info = Policy(domain, DistanceThreshold(theta, metric)).sensitivity_info("sum")
    assert info.exact and info.value == want
    per_a = int(vals[(size <= limit) & (size > 0), 0].max())
    assert Policy(domain, DistanceThreshold(theta, metric)).sensitivity("sum", attribute="a") == per_a


def test_sum_upper_bound_is_reported(monkeypatch):
    monkeypatch.setattr(secrets_limits, "ENUM_LIMIT", 0)
    monkeypatch.setattr(secrets_limits, "KNAPSACK_LIMIT", 0)
    domain = Domain([Ordinal("a", 0, 50, bin_width=2), Ordinal("b", 0, 50, bin_width=3)])
    info = Policy(domain, DistanceThreshold(10, "l1")).sensitivity_info("sum")
    assert not info.exact and "upper bound" in info.note
    assert info.value == 10
    info = Policy(domain, DistanceThreshold(10, "l2")).sensitivity_info("sum")
    assert not info.exact and info.value == 14  # floor(sqrt(2) * 10)
    monkeypatch.undo()
    exact = Policy(domain, DistanceThreshold(10, "l2")).sensitivity_info("sum")
    assert exact.exact and exact.value <= 14


def test_listed_partition_sign_search_and_bound(monkeypatch):
    domain = Domain([Ordinal("a", 0, 1), Ordinal("b", 0, 4, bin_width=2), Ordinal("c", 0, 1)])
    values = enumerate_domain(domain)
    graph = Partition([[values[0], values[4], values[9]], values[1:4], values[5:9], values[10:]])
    edges = oracle_edges(domain, graph)
    want = oracle_sensitivity(edges, sum_matrix(domain))
    info = Policy(domain, graph).sensitivity_info("sum")
    assert info.exact and info.value == want
    monkeypatch.setattr(secrets_limits, "SIGN_LIMIT", 0)
    bound = Policy(domain, Partition(graph.blocks)).sensitivity_info("sum")
    assert not bound.exact and bound.value >= want and "upper bound" in bound.note


# ---------------------------------------------------------------------------
# Policy API
# ---------------------------------------------------------------------------
def test_policy_scalar_results_and_guarantee():
    d = Domain.ordinal("x", 0, 9)
    p = Policy(d, DistanceThreshold(2))
    assert p.is_edge(0, 2) is True and p.is_edge(0, 3) is False
    assert p.distance(0, 9) == 5 and isinstance(p.distance(0, 9), int)
    assert p.guarantee(0, 9, 0.5) == 2.5
    assert p.guarantee(4, 4, 0.5) == 0.0
    q = Policy(d, Partition.intervals([0, 5, 10]))
    assert q.distance(0, 7) == math.inf
    assert q.guarantee(0, 7, 1.0) == math.inf
    assert q.guarantee([0, 1], [1, 9], 2.0).tolist() == [2.0, math.inf]
    assert p.secrets == DistanceThreshold(2) and p.constraints == ()
    assert "DistanceThreshold" in repr(p)


def test_policy_rejects_bad_arguments():
    d = Domain.ordinal("x", 0, 9)
    with pytest.raises(TypeError, match="domain"):
        Policy("x", FullDomain())
    with pytest.raises(TypeError, match="secrets"):
        Policy(d, "full")
    with pytest.raises(TypeError, match=r"constraints\[0\]"):
        Policy(d, FullDomain(), constraints=["x"])
    with pytest.raises(ValueError, match="categorical attribute 'c'"):
        Policy(DOMAINS["mixed"], DistanceThreshold(1))
    with pytest.raises(ValueError, match="bin_width"):
        Policy(DOMAINS["line_w3"], Line())
    with pytest.raises(ValueError, match="1-D ordinal"):
        Policy(DOMAINS["grid3x4"], Line())
    p = Policy(d, FullDomain())
    with pytest.raises(ValueError, match="epsilon"):
        p.guarantee(0, 1, 0)
    with pytest.raises(ValueError, match="epsilon"):
        p.guarantee(0, 1, float("nan"))
    with pytest.raises(ValueError, match=r"i must be integers in \[0, 10\): an index lies outside"):
        p.distance(10, 0)
    with pytest.raises(TypeError, match="j"):
        p.is_edge(0, 1.5)


def test_sensitivity_rejects_bad_queries():
    d = DOMAINS["mixed"]
    p = Policy(d, FullDomain())
    with pytest.raises(ValueError, match=r"query must be one of \['histogram', 'cumulative', 'sum'\]"):
        p.sensitivity("median")
    with pytest.raises(ValueError, match="query"):
        p.sensitivity(3)
    with pytest.raises(ValueError, match="cumulative' needs a 1-D ordinal domain"):
        p.sensitivity("cumulative")
    with pytest.raises(ValueError, match="attribute 'c' is categorical"):
        p.sensitivity("sum", attribute="c")
    with pytest.raises(ValueError, match="attribute must be one of"):
        p.sensitivity("sum", attribute="zz")
    with pytest.raises(ValueError, match="attribute applies only"):
        p.sensitivity("histogram", attribute="b")
    with pytest.raises(ValueError, match=r"W must have shape \(q, 12\)"):
        p.sensitivity(np.ones((2, 11)))
    with pytest.raises(ValueError, match="W must hold finite"):
        p.sensitivity(np.full((1, 12), np.nan))
    with pytest.raises(ValueError, match="needs an ordinal attribute"):
        Policy(DOMAINS["cat2"], FullDomain()).sensitivity("sum")
    big = Policy(Domain.ordinal("x", 0, 5000), FullDomain())
    with pytest.raises(ValueError, match="W: .*at most 4096"):
        big.sensitivity(np.ones((1, 5001)))


def test_sensitivity_value_types():
    d = Domain.ordinal("x", 0, 3)
    p = Policy(d, Line())
    assert type(p.sensitivity("histogram")) is int
    assert type(p.sensitivity(np.array([[0.5, 1.0, 1.5, 2.0]]))) is float
    assert type(p.sensitivity(np.array([[0.5, 1.5, 2.5, 3.5]]))) is int
    assert isinstance(p.sensitivity_info("sum"), Sensitivity)
    assert p.sensitivity(np.array([[True, False, False, True]])) == 1
