"""Public count constraints: sensitivities against the Def 4.1 oracle (000 Sec 8, docs/explanation/corrections.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from blowfish_privacy import _policy_graph
from blowfish_privacy.policy.constraints import (
    CountQuery,
    Marginal,
    NoProvenSensitivityError,
    NotSparseError,
    RangeCount,
    longest_cycle_and_path,
    policy_graph,
)
from blowfish_privacy.policy.domain import Categorical, Domain, Ordinal
from blowfish_privacy.policy._policy import Policy
from blowfish_privacy.policy.secrets import Attribute, Custom, FullDomain, Line
from oracles_constraints import (
    blowfish_sensitivity,
    check_neighbours,
    complete_edges,
    move_sensitivity,
)

EX_DOMAIN = Domain(
    [Categorical("A1", ["a1", "a2"]), Categorical("A2", ["b1", "b2"]), Categorical("A3", ["c1", "c2", "c3"])]
)


def _masks(domain, constraints):
    rows = []
    for c in constraints:
        lab = c.labels(domain)
        rows.extend(lab == q for q in range(c.num_queries(domain)))
    return np.array(rows, dtype=bool).reshape(-1, domain.size)


def _edges(policy):
    size = policy.domain.size
    i, j = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    return np.asarray(policy.is_edge(i.ravel(), j.ravel())).reshape(size, size)


# -- 000 Examples 8.1-8.3 -----------------------------------------------------------
@pytest.mark.slow
def test_example_8_1_to_8_3():
    q = [Marginal(["A1", "A2"])]
    pg = policy_graph(EX_DOMAIN, q)  # sparse (Example 8.1): no error
    alpha, xi, exact = longest_cycle_and_path(pg)
    assert (alpha, xi, exact) == (4, 1, True)  # Example 8.2
    # only (v+, v-) touches v+ / v-
    assert {e for e in pg.edges if pg.v_plus in e or pg.v_minus in e} == {(pg.v_plus, pg.v_minus)}
    policy = Policy(EX_DOMAIN, FullDomain(), q)
    rep = policy.sensitivity_report()
    oracle = blowfish_sensitivity(12, complete_edges(12), _masks(EX_DOMAIN, q), 4)
    assert oracle.value == 8 == rep.value and rep.tight  # Example 8.3
    enc = lambda rows: [EX_DOMAIN.index_of(r) for r in rows]  # noqa: E731
    d1 = enc([("a1", "b1", "c1"), ("a1", "b2", "c1"), ("a2", "b1", "c1"), ("a2", "b2", "c1")])
    d2 = enc([("a1", "b2", "c2"), ("a2", "b1", "c2"), ("a2", "b2", "c2"), ("a1", "b1", "c2")])
    assert check_neighbours(12, complete_edges(12), _masks(EX_DOMAIN, q), d1, d2)


# -- errata of docs/explanation/corrections.md as regression tests -----------------------------------
def test_erratum_cor_8_3_off_by_one():
    d = Domain.ordinal("x", 0, 5)
    q = [CountQuery(np.isin(np.arange(6), [0, 1])), CountQuery(np.isin(np.arange(6), [2, 3]))]
    masks = _masks(d, q)
    assert check_neighbours(6, complete_edges(6), masks, (0, 2, 4), (3, 5, 1))
    oracle = blowfish_sensitivity(6, complete_edges(6), masks, 3)
    assert oracle.value == 6 > 2 * len(q)  # Cor 8.3's 2 max(|Q|, 1) = 4 is too small
    rep = Policy(d, FullDomain(), q).sensitivity_report()
    assert rep.value == 6 and (rep.alpha, rep.xi) == (2, 3) and rep.tight


@pytest.mark.slow
def test_erratum_thm_8_5_attribute_secrets_two_marginals():
    d = Domain([Ordinal(f"A{i}", 0, 1) for i in range(3)])
    q = [Marginal(["A0"]), Marginal(["A1"])]
    policy = Policy(d, Attribute(1), q)
    edges, masks = _edges(policy), _masks(d, q)
    assert check_neighbours(8, edges, masks, (0, 2, 4, 7), (3, 5, 6, 1))
    assert blowfish_sensitivity(8, edges, masks, 4).value == 8  # not Thm 8.5's 4
    with pytest.raises(NotSparseError, match="lifts"):
        policy.sensitivity("histogram")


def test_erratum_thm_8_6_line_and_ranges():
    d = Domain.ordinal("x", 0, 7)
    q = [RangeCount(0, 1), RangeCount(2, 3), RangeCount(5, 6)]
    policy = Policy(d, Line(), q)
    edges, masks = _edges(policy), _masks(d, q)
    assert check_neighbours(8, edges, masks, (0, 2, 4, 5), (7, 1, 6, 3))
    assert blowfish_sensitivity(8, edges, masks, 4).value == 8  # not Thm 8.6's 6
    rep = policy.sensitivity_report()
    assert rep.value >= 8 and not rep.tight


# -- random policies against the oracle ----------------------------------------------
def _random_case(rng):
    size = int(rng.integers(3, 7))
    kind = rng.integers(0, 3)
    if kind == 0:
        secrets = FullDomain()
    elif kind == 1:
        secrets = Line()
    else:
        pairs = [(a, b) for a in range(size) for b in range(a + 1, size) if rng.random() < 0.4]
        secrets = Custom(pairs or [(0, 1)])
    nq = int(rng.integers(1, 4))
    constraints = []
    for _ in range(nq):
        mask = rng.random(size) < 0.4
        if mask.any():
            constraints.append(CountQuery(mask))
    if not constraints:
        constraints = [CountQuery(np.arange(size) == 0)]
    n = int(rng.integers(1, 5 if size <= 5 else 4))
    return Domain.ordinal("x", 0, size - 1), secrets, constraints, n


@pytest.mark.slow
def test_random_policies_never_below_oracle():
    rng = np.random.default_rng(20260511)
    checked = refused = tight = 0
    for _ in range(300):
        d, secrets, constraints, n = _random_case(rng)
        policy = Policy(d, secrets, constraints)
        oracle = blowfish_sensitivity(d.size, _edges(policy), _masks(d, constraints), n)
        try:
            rep = policy.sensitivity_report()
        except NoProvenSensitivityError:
            refused += 1
            continue
        checked += 1
        assert rep.value >= oracle.value, (constraints, secrets, n, oracle)
        if rep.tight and n >= rep.value // 2:
            tight += 1
            assert rep.value == oracle.value, (constraints, secrets, n, oracle)
    assert checked >= 150 and refused >= 10 and tight >= 10


def _random_marginal_case(rng):
    shape = [(2, 2), (2, 3), (3, 2), (2, 2, 2)][int(rng.integers(0, 4))]
    d = Domain([Ordinal(f"A{i}", 0, s - 1) for i, s in enumerate(shape)])
    kind = int(rng.integers(0, 3))
    if kind == 0:
        secrets = FullDomain()
    elif kind == 1:
        secrets = Attribute(1)
    else:
        recs = [d.record_of(i) for i in range(d.size)]
        pairs = [(recs[a], recs[b]) for a in range(d.size) for b in range(a + 1, d.size) if rng.random() < 0.3]
        secrets = Custom(pairs or [(recs[0], recs[1])])
    attrs = [f"A{int(rng.integers(0, len(shape)))}"]
    n = int(rng.integers(2, 5 if d.size <= 6 else 4))
    return d, secrets, [Marginal(attrs)], n


@pytest.mark.slow
def test_random_marginal_policies_against_oracle():
    rng = np.random.default_rng(99)
    for _ in range(40):
        d, secrets, constraints, n = _random_marginal_case(rng)
        policy = Policy(d, secrets, constraints)
        oracle = blowfish_sensitivity(d.size, _edges(policy), _masks(d, constraints), n)
        rep = policy.sensitivity_report()
        assert rep.value >= oracle.value
        if rep.tight and n >= rep.value // 2:
            assert rep.value == oracle.value


@pytest.mark.slow
def test_tiny_domains_up_to_five_tuples():
    rng = np.random.default_rng(5)
    for _ in range(25):
        size = int(rng.integers(3, 5))
        masks = [rng.random(size) < 0.5 for _ in range(int(rng.integers(1, 3)))]
        cons = [CountQuery(m) for m in masks if m.any()] or [CountQuery(np.arange(size) == 0)]
        d = Domain.ordinal("x", 0, size - 1)
        for secrets in (FullDomain(), Line()):
            policy = Policy(d, secrets, cons)
            try:
                value = policy.sensitivity("histogram")
            except NoProvenSensitivityError:
                continue
            assert value >= blowfish_sensitivity(size, _edges(policy), _masks(d, cons), 5).value


def _brute_policy_graph(size, masks):
    """Def 8.2/8.3 under the complete graph, pair by pair; None when not sparse."""
    nq = masks.shape[0]
    edges = {(nq, nq + 1)}
    for x in range(size):
        for y in range(size):
            if x == y:
                continue
            lift = [q for q in range(nq) if not masks[q, x] and masks[q, y]]
            lower = [q for q in range(nq) if masks[q, x] and not masks[q, y]]
            if len(lift) > 1 or len(lower) > 1:
                return None
            if lift and lower:
                edges.add((lower[0], lift[0]))
            elif lift:
                edges.add((nq, lift[0]))
            elif lower:
                edges.add((lower[0], nq + 1))
    return edges


def test_policy_graph_matches_pairwise_definition():
    rng = np.random.default_rng(3)
    seen_sparse = seen_dense = 0
    for _ in range(150):
        size = int(rng.integers(2, 10))
        cons = [CountQuery(rng.random(size) < 0.4) for _ in range(int(rng.integers(1, 5)))]
        d = Domain.ordinal("x", 0, size - 1)
        expected = _brute_policy_graph(size, _masks(d, cons))
        if expected is None:
            seen_dense += 1
            with pytest.raises(NotSparseError):
                policy_graph(d, cons)
        else:
            seen_sparse += 1
            assert policy_graph(d, cons).edges == expected
    assert seen_sparse > 20 and seen_dense > 20


def test_one_marginal_tight_against_oracle():
    for shape in [(2, 2), (3, 2), (2, 3), (2, 2, 2)]:
        d = Domain([Ordinal(f"A{i}", 0, s - 1) for i, s in enumerate(shape)])
        q = [Marginal(["A0"])]
        rep = Policy(d, FullDomain(), q).sensitivity_report()
        n = min(shape[0], 4)
        oracle = blowfish_sensitivity(d.size, complete_edges(d.size), _masks(d, q), n)
        assert rep.tight and rep.value == 2 * shape[0] == oracle.value


def test_safe_for_every_secret_graph_with_one_marginal():
    d = Domain([Ordinal("A0", 0, 2), Ordinal("A1", 0, 2)])
    q = [Marginal(["A0"])]
    for secrets in (Attribute(1), Attribute(2), Custom([((0, 0), (1, 1)), ((1, 1), (2, 2))])):
        policy = Policy(d, secrets, q)
        oracle = blowfish_sensitivity(9, _edges(policy), _masks(d, q), 3)
        assert policy.sensitivity("histogram") >= oracle.value


# -- the exact search in C against brute force ----------------------------------------
def _brute_cycle_path(adj_sets, nv, src, dst):
    best_c, best_p = 0, -1
    for r in range(2, nv + 1):
        for perm in itertools.permutations(range(nv), r):
            if perm[0] != min(perm):
                continue
            if all(perm[k + 1] in adj_sets[perm[k]] for k in range(r - 1)) and perm[0] in adj_sets[perm[-1]]:
                best_c = max(best_c, r)
    stack = [(src, {src}, 0)]
    while stack:
        u, seen, ln = stack.pop()
        if u == dst:
            best_p = max(best_p, ln)
            continue
        for v in adj_sets[u]:
            if v not in seen:
                stack.append((v, seen | {v}, ln + 1))
    return best_c, best_p


def test_longest_cycle_and_path_match_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(60):
        nv = int(rng.integers(2, 7))
        A = rng.random((nv, nv)) < rng.uniform(0.1, 0.7)
        np.fill_diagonal(A, False)
        adj_sets = [set(np.flatnonzero(A[v]).tolist()) for v in range(nv)]
        adj = np.array([sum(1 << w for w in s) for s in adj_sets], dtype=np.uint64)
        c, p = _brute_cycle_path(adj_sets, nv, 0, nv - 1)
        length, exact, _, cyc = _policy_graph.longest_cycle(adj, 10**7)
        assert (length, exact) == (c, True) and len(cyc) == c == len(set(cyc))
        assert all(cyc[(k + 1) % c] in adj_sets[cyc[k]] for k in range(c))
        length, exact, _, path = _policy_graph.longest_path(adj, 0, nv - 1, 10**7)
        assert (length, exact) == (p, True)
        if p >= 0:
            assert path[0] == 0 and path[-1] == nv - 1 and len(path) == p + 1 == len(set(path))
            assert all(path[k + 1] in adj_sets[path[k]] for k in range(p))


def test_search_limit_reports_inexact_and_policy_falls_back():
    nv = 24
    adj = np.array([((1 << nv) - 1) & ~(1 << v) for v in range(nv)], dtype=np.uint64)
    length, exact, nodes, _ = _policy_graph.longest_path(adj, 0, nv - 1, 5)
    assert not exact and nodes >= 5
    with pytest.raises(ValueError, match="src and dst"):
        _policy_graph.longest_path(adj, 0, 0, 5)


def test_policy_uses_safe_bound_when_search_is_cut(monkeypatch):
    import blowfish_privacy.policy.constraints as cmod

    d = Domain.ordinal("x", 0, 5)
    q = [CountQuery(np.isin(np.arange(6), [0, 1])), CountQuery(np.isin(np.arange(6), [2, 3]))]
    monkeypatch.setattr(cmod, "SEARCH_NODE_LIMIT", 1)
    rep = Policy(d, FullDomain(), q).sensitivity_report()
    assert rep.exact_search is False and "safe bound" in rep.rule and rep.value == 2 * (2 + 1)
    monkeypatch.setattr(cmod, "EXACT_VERTEX_LIMIT", 3)
    rep = Policy(d, FullDomain(), q).sensitivity_report()
    assert rep.exact_search is False and "beyond the exact search limit" in rep.rule and rep.value == 6
    # one count query over every value: v+ only reaches v-, so 2 max(|Q|, 1)
    rep = Policy(d, FullDomain(), [CountQuery(np.arange(6) < 6)]).sensitivity_report()
    assert rep.value == 2


# -- 004 move model against Lemma 4.2 ---------------------------------------------------
@pytest.mark.parametrize(
    "shape, cuboids, n",
    [
        ((2, 3), [["A0"]], 3),
        ((2, 2), [["A0"], ["A1"]], 4),
        ((2, 3), [["A0"], ["A1"]], 4),
        ((3, 3), [["A0"], ["A1"]], 4),
        ((2, 2, 2), [["A0", "A1"], ["A1", "A2"]], 4),
        ((2, 2, 2), [["A0"], ["A0", "A1"]], 3),
    ],
)
def test_move_model_matches_lemma_4_2(shape, cuboids, n):
    d = Domain([Ordinal(f"A{i}", 0, s - 1) for i, s in enumerate(shape)])
    q = [Marginal(c) for c in cuboids]
    rep = Policy(d, FullDomain(), q, neighbours="moves").sensitivity_report()
    assert rep.neighbours == "moves" and "Lemma 4.2" in rep.rule and "of the exact-cuboids draft" in rep.rule
    assert move_sensitivity(d.size, _masks(d, q), n).value == rep.value


# -- the 000 Sec 3.2 / 004 Ex 3.1 constraints: public pair sums ------------------------
@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_pair_sums_true_sensitivity(k):
    """With n known and the k-1 sums c(r_i) + c(r_{i+1}) public, S = k for even k, 0 for odd k."""
    d = Domain.ordinal("r", 1, k)
    q = [CountQuery(np.isin(np.arange(k), [i, i + 1])) for i in range(k - 1)]
    n = 4 if k <= 4 else 3
    oracle = blowfish_sensitivity(k, complete_edges(k), _masks(d, q), n)
    expected = (k if n >= k // 2 else 0) if k % 2 == 0 else 0
    assert oracle.value == expected
    if k >= 4:  # overlapping: r_1 -> r_3 lifts two sums
        with pytest.raises(NotSparseError):
            Policy(d, FullDomain(), q).sensitivity("histogram")
    else:  # k <= 3 is sparse and the bound applies
        assert Policy(d, FullDomain(), q).sensitivity("histogram") >= oracle.value


# -- bad input ------------------------------------------------------------------------
def test_bad_constraints():
    d = Domain.ordinal("x", 0, 5)
    with pytest.raises(ValueError, match="mask has length 4"):
        Policy(d, FullDomain(), [CountQuery(np.ones(4, dtype=bool))])
    with pytest.raises(ValueError, match="not in the domain"):
        Policy(d, FullDomain(), [Marginal(["y"])])
    with pytest.raises(ValueError, match="low <= high"):
        RangeCount(3, 1)
    with pytest.raises(ValueError, match="answer"):
        CountQuery(np.ones(6, dtype=bool), answer=-1)
    with pytest.raises(ValueError, match="neighbours"):
        Policy(d, FullDomain(), [CountQuery(np.ones(6, dtype=bool))], neighbours="moves")
    with pytest.raises(NoProvenSensitivityError, match="histogram"):
        Policy(d, Line(), [RangeCount(0, 1)]).sensitivity("cumulative")
    cat = Domain([Categorical("c", ["a", "b"])])
    with pytest.raises(ValueError, match="ordinal"):
        Policy(cat, FullDomain(), [RangeCount(0, 1)])


def test_predicate_count_query_and_public_histogram():
    d = Domain([Ordinal("age", 0, 9), Categorical("sex", ["f", "m"])])
    q = CountQuery(lambda v: v["age"] >= 5, name="older")
    assert q.mask(d).sum() == 10
    rep = Policy(d, FullDomain(), [q]).sensitivity_report()
    assert rep.value == 2 * max(rep.alpha, rep.xi) and rep.exact_search
    assert Policy(d, FullDomain(), [Marginal(["age", "sex"])]).sensitivity("histogram") == 0
