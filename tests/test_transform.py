"""Transformational equivalence: x_G by subtree sums, inverse, spanning trees and stretch."""

import itertools

import numpy as np
import pytest

from blowfish_privacy import Domain, Policy, secrets
from blowfish_privacy import transform as tf
from oracles import bfs_distances


def random_tree(n, rng):
    """Parent array of a uniformly relabelled random recursive tree."""
    perm = rng.permutation(n)
    parent = np.full(n, -1, dtype=np.int64)
    for k in range(1, n):
        parent[perm[k]] = perm[rng.integers(0, k)]
    return parent


def naive_subtree_sums(x, parent):
    out = np.zeros_like(x)
    for v in range(x.size):
        u = v
        while u >= 0:  # v's count is below every ancestor
            out[u] += x[v]
            u = parent[u]
    return out


@pytest.mark.parametrize("seed", range(20))
def test_round_trip_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    parent = random_tree(n, rng)
    t = tf.tree_from_parent(parent)
    x = rng.integers(0, 50, n)
    xg = tf.transform(x, t)
    np.testing.assert_array_equal(xg, naive_subtree_sums(x, parent))
    assert xg[t.root] == x.sum()
    np.testing.assert_array_equal(tf.inverse(xg, t), x)
    # and the other way round, on arbitrary (noisy, negative) integer vectors
    y = rng.integers(-100, 100, n)
    np.testing.assert_array_equal(tf.transform(tf.inverse(y, t), t), y)


def test_line_transform_is_the_cumulative_histogram():
    x = np.random.default_rng(0).integers(0, 9, 1000)
    t = tf.line_tree(1000)
    np.testing.assert_array_equal(tf.transform(x, t), np.cumsum(x))
    np.testing.assert_array_equal(tf.inverse(np.cumsum(x), t), x)
    pol = Policy(Domain.ordinal("x", 0, 999), secrets.Line())
    np.testing.assert_array_equal(tf.transform(x, pol), np.cumsum(x))
    # a line given as an explicit parent array is recognised
    assert tf.tree_from_parent(t.parent).is_line


def unit_images(tree, n):
    return [tf.transform(np.eye(n, dtype=np.int64)[i], tree) for i in range(n)]


@pytest.mark.parametrize(
    "graph,n",
    [
        (secrets.Line(), 7),
        (secrets.DistanceThreshold(2), 7),
        (secrets.DistanceThreshold(3), 9),
        (secrets.FullDomain(), 6),
        (secrets.Custom([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)]), 6),  # a cycle
        (secrets.Custom([(0, 1), (0, 2), (0, 3), (3, 4), (3, 5)]), 6),  # a tree
    ],
)
def test_sensitivity_of_x_T_is_the_stretch_by_brute_force(graph, n):
    """Over every neighbour pair (one record moved along an edge of G, every
    database of up to 3 records) the L1 change of x_T equals at most the
    stretch, with equality for some pair; the stretch is the tree-path
    distance of the worst edge (checked with an independent BFS)."""
    pol = Policy(Domain.ordinal("x", 0, n - 1), graph)
    emb = tf.spanning_tree(pol)
    lo, hi = graph.iter_edges(pol.domain)
    tree_edges = {(int(min(v, p)), int(max(v, p))) for v, p in enumerate(emb.parent) if p >= 0}
    assert len(tree_edges) == n - 1
    assert tree_edges <= set(zip(lo.tolist(), hi.tolist()))  # a spanning tree *of G*
    dist = [bfs_distances(n, tree_edges)[a][b] for a, b in zip(lo, hi)]
    assert emb.stretch == max(dist)
    if graph.is_tree(pol.domain):
        assert emb.stretch == 1
    worst = 0
    for records in itertools.chain.from_iterable(itertools.combinations_with_replacement(range(n), k) for k in (1, 2, 3)):
        x1 = np.bincount(records, minlength=n)
        g1 = tf.transform(x1, emb)
        for a, b in zip(lo, hi):
            if x1[a] == 0:
                continue
            x2 = x1.copy()
            x2[a] -= 1
            x2[b] += 1
            worst = max(worst, int(np.abs(tf.transform(x2, emb) - g1).sum()))
    assert worst == emb.stretch


def test_line_policy_has_sensitivity_one_on_x_G():
    n = 8
    pol = Policy(Domain.ordinal("x", 0, n - 1), secrets.Line())
    imgs = unit_images(pol, n)
    assert all(np.abs(imgs[i] - imgs[i + 1]).sum() == 1 for i in range(n - 1))


def test_threshold_line_stretch_equals_theta_on_large_domains():
    pol = Policy(Domain.ordinal("x", 0, 10**6 - 1), secrets.DistanceThreshold(5))
    emb = tf.spanning_tree(pol)
    assert emb.is_line and emb.stretch == 5


def test_non_tree_graph_without_an_embedding_is_refused():
    pol = Policy(Domain.ordinal("x", 0, 5), secrets.DistanceThreshold(2))
    with pytest.raises(ValueError, match="not a tree.*spanning_tree"):
        tf.transform(np.ones(6, dtype=np.int64), pol)


def test_disconnected_graph_has_no_spanning_tree():
    pol = Policy(Domain.ordinal("x", 0, 4), secrets.Custom([(0, 1), (2, 3)]))
    with pytest.raises(ValueError, match="not connected"):
        tf.spanning_tree(pol)


def test_bad_trees_and_sizes():
    with pytest.raises(ValueError, match="exactly one root"):
        tf.tree_from_parent([1, 0, -1, -1])
    with pytest.raises(ValueError, match="not reachable"):
        tf.tree_from_parent([-1, 2, 1])  # 1 <-> 2 is a cycle
    with pytest.raises(ValueError, match="outside"):
        tf.tree_from_parent([-1, 7])
    t = tf.line_tree(4)
    with pytest.raises(ValueError, match="has 3 entries but the tree has 4"):
        tf.transform(np.ones(3, dtype=np.int64), t)
    with pytest.raises(TypeError, match="integers"):
        tf.inverse(np.ones(4), t)


def test_full_domain_embeds_as_a_star_with_stretch_two_on_any_size():
    for n in (3, 6):
        pol = Policy(Domain.ordinal("x", 0, n - 1), secrets.FullDomain())
        emb = tf.spanning_tree(pol)
        lo, hi = pol.secrets.iter_edges(pol.domain)
        assert emb.stretch == 2 == int(emb.distances(lo, hi).max())
    big = tf.spanning_tree(Policy(Domain.ordinal("x", 0, 99_999), secrets.FullDomain()))
    assert big.stretch == 2 and big.n_children()[0] == 99_999
