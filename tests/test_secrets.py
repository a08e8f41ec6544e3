"""Secret graphs on records (no domain), their validation and error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blowfish_privacy.domain import Categorical, Domain, Ordinal
from blowfish_privacy.secrets import (
    Attribute,
    Custom,
    DistanceThreshold,
    FullDomain,
    Line,
    Partition,
    SecretGraph,
)
from oracles import bfs_distances, enumerate_domain, oracle_edges


# ---------------------------------------------------------------------------
# record-level rules
# ---------------------------------------------------------------------------
def test_full_domain_records():
    g = FullDomain()
    assert g.is_edge(1, 2) is True
    assert g.is_edge(3, 3) is False
    assert g.is_edge(("a", 1), ("a", 2)) is True
    assert g.distance(("a", 1), ("b", 2)) == 1
    assert g.distance("x", "x") == 0
    assert g.is_edge(np.array([1, 2, 3]), 2).tolist() == [True, False, True]
    assert g.distance(np.array([1, 2, 3]), np.array([1, 5, 3])).tolist() == [0.0, 1.0, 0.0]


def test_attribute_records():
    g = Attribute()
    assert g.is_edge((1, 2, 3), (1, 2, 4)) is True
    assert g.is_edge((1, 2, 3), (0, 2, 4)) is False
    assert g.distance((1, 2, 3), (0, 0, 0)) == 3
    assert Attribute(2).distance((1, 2, 3), (0, 0, 0)) == 2
    assert Attribute(2).is_edge((1, 2, 3), (0, 0, 3)) is True
    assert Attribute(3).distance((1, "m", 3), (0, "f", 0)) == 1
    X = np.array([[0, 0], [0, 1], [1, 1]])
    assert g.is_edge(X, (0, 0)).tolist() == [False, True, False]
    assert g.distance(X, (0, 0)).tolist() == [0.0, 1.0, 2.0]
    assert g.is_edge([(0, "a"), (1, "b")], (0, "b")).tolist() == [True, True]


def test_partition_records():
    g = Partition([[1, 2, 3], [4], [5, 6]])
    assert g.is_edge(1, 3) and not g.is_edge(3, 4) and not g.is_edge(2, 2)
    assert g.distance(5, 6) == 1 and g.distance(1, 6) == math.inf and g.distance(4, 4) == 0
    assert g.is_edge(9, 1) is False and g.distance(9, 10) == math.inf
    assert g.is_edge(np.array([1, 2, 4]), np.array([2, 5, 4])).tolist() == [True, False, False]
    g2 = Partition([[(0, "a"), (0, "b")], [(1, "a"), (1, "b")]])
    assert g2.is_edge((0, "a"), (0, "b")) and not g2.is_edge((0, "a"), (1, "a"))
    by_pos = Partition.by_attributes([0])
    assert by_pos.is_edge((0, 1), (0, 2)) and not by_pos.is_edge((0, 1), (1, 1))
    assert by_pos.distance((0, 1), (1, 1)) == math.inf
    whole = Partition.by_attributes([])
    assert whole.is_edge((0, 1), (3, 2)) and whole.distance((0, 1), (3, 2)) == 1
    iv = Partition.intervals([0, 10, 20.5])
    assert iv.is_edge(0, 9) and not iv.is_edge(9, 10) and iv.is_edge(10, 20)
    assert not iv.is_edge(-1, 0) and not iv.is_edge(21, 22)
    assert iv.distance(3, 15) == math.inf and iv.distance(12, 20) == 1


def test_partition_by_names_needs_a_domain_without_positions():
    g = Partition.by_attributes(["a"])
    with pytest.raises(ValueError, match="names.*needs a domain"):
        g.is_edge((0, 1), (0, 2))
    d = Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 3)])
    assert g.is_edge((0, 1), (0, 2), domain=d) is True
    assert g.is_edge((0, 1), (1, 1), domain=d) is False
    assert g.distance((0, 1), (1, 1), domain=d) == math.inf


def test_threshold_records():
    g = DistanceThreshold(5, "l2")
    assert g.is_edge((0, 0), (3, 4)) is True
    assert DistanceThreshold(4.999, "l2").is_edge((0, 0), (3, 4)) is False
    assert DistanceThreshold(7, "l1").is_edge((0, 0), (3, 4)) is True
    assert DistanceThreshold(6.5, "l1").is_edge((0, 0), (3, 4)) is False
    assert DistanceThreshold(4, "linf").is_edge((0, 0), (3, 4)) is True
    assert DistanceThreshold(3.9, "linf").is_edge((0, 0), (3, 4)) is False
    assert g.is_edge((1, 1), (1, 1)) is False
    assert DistanceThreshold(0.5).is_edge(0.25, 0.5) is True
    assert DistanceThreshold(0).is_edge(1, 2) is False
    assert DistanceThreshold(1.5, "l2").distance((0, 0), (5, 7)) == 7
    assert DistanceThreshold(2).distance(0, 9) == 5
    assert DistanceThreshold(0.5).distance(0, 1) == math.inf
    assert DistanceThreshold(3, "linf").distance((0, 0, 0), (7, 1, -9)) == 3
    mask = DistanceThreshold(2).is_edge(np.arange(5), 2)
    assert mask.tolist() == [True, True, False, True, True]
    assert DistanceThreshold(2).distance(np.arange(5), 0).tolist() == [0, 1, 1, 2, 2]
    assert DistanceThreshold(2**61, "l2").is_edge((0, 0), (2**60, 2**60)) is True
    assert DistanceThreshold(2**61 - 1, "l1").is_edge((0, 0), (2**60, 2**60)) is False


def test_line_records():
    g = Line()
    assert g.theta == 1 and g.metric == "l1"
    assert g.is_edge(4, 5) and not g.is_edge(4, 6)
    assert g.distance(-3, 10) == 13
    assert repr(g) == "Line()"
    with pytest.raises(ValueError, match="x must hold 1-D records"):
        g.is_edge((1, 2), (1, 3))


def test_custom_records():
    g = Custom([(1, 2), (2, 3), ("a", 3), (2, 1)])
    assert len(g.edges) == 3
    assert g.is_edge(2, 1) and g.is_edge(3, "a") and not g.is_edge(1, 3)
    assert g.distance(1, "a") == 3 and g.distance(1, 9) == math.inf and g.distance(9, 9) == 0
    assert g.distance(np.array([1, 2, 3]), 1).tolist() == [0, 1, 2]
    t = Custom([((0, 0), (0, 1)), ((0, 1), (1, 1))])
    assert t.distance((0, 0), (1, 1)) == 2


@pytest.mark.parametrize(
    "graph",
    [
        FullDomain(),
        Attribute(1),
        Attribute(2),
        DistanceThreshold(1),
        DistanceThreshold(1.5, "l2"),
        DistanceThreshold(2, "l2"),
        DistanceThreshold(2.9, "l2"),
        DistanceThreshold(3, "l1"),
        DistanceThreshold(2, "linf"),
        Partition.by_attributes([1]),
        Custom([((0, 0), (1, 1)), ((1, 1), (2, 3)), ((2, 3), (3, 3)), ((0, 2), (0, 3))]),
    ],
    ids=repr,
)
def test_records_agree_with_domain_and_bfs(graph):
    """On unit bins, record-level answers equal index-level ones and BFS."""
    domain = Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 3)])
    values = enumerate_domain(domain)
    edges = oracle_edges(domain, graph)
    want = bfs_distances(domain.size, edges)
    X = np.array(values)
    n = len(values)
    I, J = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    mask = graph.is_edge(X[I], X[J])
    expected = np.zeros((n, n), dtype=bool)
    for a, b in edges:
        expected[a, b] = expected[b, a] = True
    assert np.array_equal(mask.reshape(n, n), expected)
    assert np.array_equal(graph.distance(X[I], X[J]).reshape(n, n), want)
    assert np.array_equal(graph.distance(X[I], X[J], domain=domain).reshape(n, n), want)
    assert graph.distance(values[0], values[-1], domain=domain) == want[0, -1]


def test_domain_records_with_bins():
    d = Domain.ordinal("x", 0, 99, bin_width=10)
    g = DistanceThreshold(10)
    assert g.is_edge(0, 10, domain=d) is True
    assert g.is_edge(5, 17, domain=d) is True  # bins 0 and 10
    assert g.distance(0, 95, domain=d) == 9
    assert g.distance(np.array([0, 20, 95]), 0, domain=d).tolist() == [0, 2, 9]
    cat = Domain([Categorical("s", ["f", "m"]), Ordinal("age", 0, 9)])
    assert Attribute().distance(("f", 1), ("m", 2), domain=cat) == 2
    assert Partition.by_attributes(["s"]).is_edge(("f", 1), ("f", 2), domain=cat) is True


# ---------------------------------------------------------------------------
# domain-level helpers
# ---------------------------------------------------------------------------
def test_has_edge_and_is_tree():
    line = Domain.ordinal("x", 0, 9)
    grid = Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 2)])
    assert Line().is_tree(line) and DistanceThreshold(1).is_tree(line)
    assert not DistanceThreshold(2).is_tree(line)
    assert not DistanceThreshold(1).is_tree(grid)
    assert not DistanceThreshold(0.5).has_edge(line)
    assert not DistanceThreshold(0.5).is_tree(line)
    assert FullDomain().is_tree(Domain.ordinal("x", 0, 1))
    assert not FullDomain().is_tree(line)
    assert Custom([(k, k + 1) for k in range(9)]).is_tree(line)
    assert not Custom([(k, k + 1) for k in range(8)]).is_tree(line)
    assert not Custom([(k, k + 1) for k in range(8)] + [(0, 2)]).is_tree(line)
    assert Partition([[0, 1]]).is_tree(Domain.ordinal("x", 0, 1))
    assert not Partition([[0], [1]]).has_edge(Domain.ordinal("x", 0, 1))


def test_edge_mask_broadcasts():
    d = Domain.ordinal("x", 0, 9)
    m = DistanceThreshold(2).edge_mask(d, np.arange(10)[:, None], np.arange(10)[None, :])
    assert m.shape == (10, 10)
    assert m.sum() == 2 * (9 + 8)
    assert not m.diagonal().any()


def test_iter_edges_limit():
    d = Domain.ordinal("x", 0, 5000)
    with pytest.raises(ValueError, match="limit=4096"):
        FullDomain().iter_edges(d)
    i, j = Line().iter_edges(d, limit=10_000)
    assert i.shape[0] == 5000 and (j - i == 1).all()


# ---------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make,exc,match",
    [
        (lambda: DistanceThreshold(-1), ValueError, r"theta must be a finite number >= 0, got -1"),
        (lambda: DistanceThreshold(float("nan")), ValueError, "theta"),
        (lambda: DistanceThreshold(float("inf")), ValueError, "theta"),
        (lambda: DistanceThreshold("1"), TypeError, "theta"),
        (lambda: DistanceThreshold(True), TypeError, "theta"),
        (lambda: DistanceThreshold(1, "l3"), ValueError, r"metric must be one of \['l1', 'l2', 'linf'\], got 'l3'"),
        (lambda: Attribute(0), ValueError, r"c must be an int >= 1, got 0"),
        (lambda: Attribute(1.5), TypeError, "c must be an int"),
        (lambda: Attribute(True), TypeError, "c must be an int"),
        (lambda: Partition([[1, 2], [2, 3]]), ValueError, r"blocks must be disjoint, got value 2"),
        (lambda: Partition([]), ValueError, "blocks must be a non-empty"),
        (lambda: Partition([[1], []]), ValueError, r"blocks\[1\] must be a non-empty"),
        (lambda: Partition("ab"), TypeError, "blocks"),
        (lambda: Partition([[{1: 2}]]), TypeError, r"blocks\[0\] holds an unhashable record"),
        (lambda: Partition.intervals([0]), ValueError, "boundaries must hold at least 2"),
        (lambda: Partition.intervals([0, 5, 5]), ValueError, "boundaries must be strictly increasing"),
        (lambda: Partition.intervals([0, float("nan")]), ValueError, "boundaries"),
        (lambda: Partition.by_attributes(["a", "a"]), ValueError, "names must be distinct"),
        (lambda: Partition.by_attributes([1.5]), TypeError, "names"),
        (lambda: Custom([(1, 1)]), ValueError, r"edges must join two different values, got \(1, 1\)"),
        (lambda: Custom([(1, 2, 3)]), ValueError, r"edges\[0\] must be a pair"),
        (lambda: Custom([1]), TypeError, r"edges\[0\]"),
    ],
)
def test_bad_parameters(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_bad_parameters_against_domains():
    line = Domain.ordinal("x", 0, 9)
    grid = Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 2)])
    mixed = Domain([Categorical("c", ["u", "v"]), Ordinal("b", 0, 2)])
    binned = Domain.ordinal("x", 0, 9, bin_width=2)
    with pytest.raises(ValueError, match="domain: Line needs a 1-D ordinal domain"):
        Line().validate(grid)
    with pytest.raises(ValueError, match="bin_width"):
        Line().validate(binned)
    with pytest.raises(ValueError, match="categorical attribute 'c'"):
        DistanceThreshold(1).validate(mixed)
    with pytest.raises(ValueError, match=r"blocks must cover the domain, got no block for value 9"):
        Partition([list(range(9))]).validate(line)
    with pytest.raises(ValueError, match="blocks must hold values of the domain.*value 10"):
        Partition([list(range(11))]).validate(line)
    with pytest.raises(ValueError, match="blocks must be disjoint.*same domain value 0"):
        Partition([[0], [1], [2, 3], [4, 5], [6, 7], [8, 9]]).validate(binned)
    with pytest.raises(ValueError, match="boundaries must cover the domain"):
        Partition.intervals([1, 10]).validate(line)
    with pytest.raises(ValueError, match="boundaries must cover the domain"):
        Partition.intervals([0, 9]).validate(line)
    Partition.intervals([0, 8.5]).validate(binned)  # last bin value is 8
    with pytest.raises(ValueError, match="domain: Partition.intervals needs a 1-D ordinal domain"):
        Partition.intervals([0, 10]).validate(grid)
    with pytest.raises(ValueError, match="names must be attribute names"):
        Partition.by_attributes(["z"]).validate(grid)
    with pytest.raises(ValueError, match="names: attribute position 2"):
        Partition.by_attributes([2]).validate(grid)
    with pytest.raises(ValueError, match="edges must join values of the domain.*value 10"):
        Custom([(9, 10)]).validate(line)
    with pytest.raises(ValueError, match="edges must join two different values.*same bin"):
        Custom([(0, 1)]).validate(binned)
    with pytest.raises(TypeError, match="domain must be a Domain"):
        FullDomain().validate("x")
    with pytest.raises(ValueError, match=r"i must be integers in \[0, 10\), got -1"):
        FullDomain().edge_mask(line, -1, 0)
    with pytest.raises(ValueError, match="i and j must have broadcastable shapes"):
        FullDomain().edge_mask(line, [0, 1], [0, 1, 2])


def test_bad_records():
    with pytest.raises(TypeError, match="x must hold numeric records"):
        DistanceThreshold(1).is_edge("a", "b")
    with pytest.raises(ValueError, match="integer values"):
        DistanceThreshold(1).distance(0.5, 2)
    with pytest.raises(ValueError, match="y must have records of the same length"):
        FullDomain().is_edge((1, 2), (1, 2, 3))
    with pytest.raises(ValueError, match="x and y must hold the same number of records"):
        FullDomain().is_edge(np.arange(3), np.arange(4))
    with pytest.raises(ValueError, match="Partition.intervals works on 1-D numeric records"):
        Partition.intervals([0, 1]).is_edge((0, 1), (0, 2))


def test_identity_and_repr():
    assert DistanceThreshold(2) == DistanceThreshold(2.0, "l1")
    assert DistanceThreshold(2) != DistanceThreshold(2, "l2")
    assert Line() != DistanceThreshold(1)
    assert Attribute(2) == Attribute(2) and hash(Attribute(2)) == hash(Attribute(2))
    assert Custom([(1, 2), (2, 3)]) == Custom([(3, 2), (2, 1)])
    assert Partition([[1], [2]]) == Partition([[1], [2]])
    assert Partition.by_attributes(["a"]) != Partition.by_attributes(["b"])
    for g in (FullDomain(), Attribute(2), DistanceThreshold(0.5, "linf"), Line(), Partition([[1, 2]]),
              Partition.by_attributes(["a"]), Partition.intervals([0, 5]), Custom([(1, 2)])):
        assert isinstance(g, SecretGraph)
        assert type(g).__name__.split(".")[-1] in repr(g) or "Partition" in repr(g)
    assert repr(DistanceThreshold(0.5, "linf")) == "DistanceThreshold(theta=0.5, metric='linf')"


# ---------------------------------------------------------------------------
# describe(): what stays secret, in plain words
# ---------------------------------------------------------------------------
_AGE = Domain.ordinal("age", 0, 99)
_AGE_SEX = Domain([Ordinal("age", 17, 90), Categorical("sex", ["F", "M"])])
_BINNED = Domain([Ordinal("a", 0, 20, bin_width=5), Ordinal("b", 0, 9)])
DESCRIBE_CASES = [
    (FullDomain(), _AGE, ["bounded differential privacy"]),
    (Attribute(), _AGE_SEX, ["differ in one attribute", "age and sex", "d_G = h"]),
    (Attribute(2), _AGE_SEX, ["every two values are secret"]),
    (Attribute(2), Domain([Ordinal("a", 0, 1), Ordinal("b", 0, 1), Ordinal("c", 0, 1)]), ["ceil(h / 2)"]),
    (Partition.by_attributes(["sex"]), _AGE_SEX, ["agree on sex", "any change of age", "NOT protected"]),
    (Partition.by_attributes([]), _AGE_SEX, ["bounded differential privacy"]),
    (Partition.intervals([0, 18, 65, 100]), _AGE, ["age", "0, 18, 65 and 100", "NOT protected"]),
    (Partition([[0, 1], [2]]), Domain.ordinal("x", 0, 2), ["2 listed blocks", "NOT protected"]),
    (DistanceThreshold(5), _AGE, ["age within 5 of each other", "distance threshold 5"]),
    (DistanceThreshold(3, "l2"), _BINNED, ["L2", "(a, b)", "lower edges of the bins", "bins of a are wider than 3"]),
    (Line(), _AGE, ["Consecutive values of age", "e^(epsilon |x - y|)"]),
    (Custom([(0, 1), (1, 2), (5, 6)]), Domain.ordinal("x", 0, 9),
     ["3 listed edges", "5 of the 10 values are on no edge", "2 separate groups"]),
]


@pytest.mark.parametrize("graph,domain,words", DESCRIBE_CASES, ids=[repr(c[0]) for c in DESCRIBE_CASES])
def test_describe_says_what_stays_secret(graph, domain, words):
    text = graph.describe(domain)
    assert isinstance(text, str) and text.endswith(".")
    for w in words:
        assert w in text, (w, text)
    assert "inf" not in text.split()  # plain words, no symbols for "not protected"


@pytest.mark.parametrize("graph,domain", [
    (DistanceThreshold(0), _AGE),
    (DistanceThreshold(2), Domain.ordinal("x", 0, 30, bin_width=3)),
    (Partition.by_attributes(["age", "sex"]), _AGE_SEX),
    (Custom([]), _AGE),
])
def test_describe_graph_without_edges(graph, domain):
    assert not graph.has_edge(domain)
    assert "nothing is protected" in graph.describe(domain)


def test_describe_checks_the_domain():
    with pytest.raises(ValueError, match="1-D ordinal"):
        Line().describe(_AGE_SEX)
    with pytest.raises(ValueError, match="ordinal"):
        DistanceThreshold(1).describe(Domain([Categorical("c", ["a", "b"])]))
    with pytest.raises(TypeError, match="Domain"):
        FullDomain().describe("age")


def test_describe_default_speaks_of_edges():
    # a graph class that does not override describe() still gets words
    assert "edge" in SecretGraph.describe(Custom([(0, 1)]), Domain.ordinal("x", 0, 1))


def test_secrets_modules_stay_below_policy():
    """The secrets package imports only the domain layer (no policy, explain or mechanisms)."""
    import ast
    import pathlib

    import blowfish_privacy.secrets as pkg

    for path in pathlib.Path(pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                # inside the package, or the domain layer below it
                assert node.level == 1 or (node.level == 2 and node.module == "domain"), (path.name, node.module)
            assert not isinstance(node, ast.Import) or all(
                a.name.split(".")[0] in ("abc", "math", "numbers", "numpy") for a in node.names
            ), (path.name, ast.dump(node))
