"""Blowfish histograms through transformational equivalence (001 Sec 3-5).

``transformed_laplace``
    Laplace on x_G (one count per tree edge), mapped back: the data
    independent "Transformed + Laplace" of 001 Fig 4.
``dawa_transformed``
    001 Sec 4 + 5.1: DAWA's private partition, then transformed Laplace on
    the bucket counts under the merged policy graph G', then uniform
    expansion.
``matching_transformed``
    001 Sec 4 + 5.2: buckets of at most two values from a minimum-cost
    matching, then as above.

Privacy guarantee
    All three are (epsilon, G)-Blowfish for the policy's secret graph G
    (no constraints).  Transformed Laplace: a move along an edge (u, v) of G
    changes x_T on the d_T(u, v) edges of the tree path, at most the
    stretch l of the embedding (l = 1 when G is a tree: 001 Def 3.3), so
    noise of scale l/epsilon suffices (000 Thm 5.1).  The total n is public
    (bounded neighbours) and is not perturbed.  Data-dependent ones:
    sequential composition of an (eps1, G) partition and (eps2, G) bucket
    counts (001 Sec 4): a bounded-DP partition is (eps1, G) for every G, and
    answering the bucket counts x' under (eps2, G') -- G' is G with every
    bucket merged into one vertex -- is (eps2, G) for W_m x (001 Lemma 4.1).
Citation
    001 (Anuarbek) Sec 3-5; Haney, Machanavajjhala, Ding, VLDB 2015.
Runtime
    transform and inverse O(|T|); spanning trees of non-tree graphs
    O(|E| + |T| depth) on domains small enough to list their edges (the
    1-D distance-threshold graphs use the line, any size); the partition
    steps as in their functions.
Utility
    ``expected_squared_error``: exact noise variance summed over values (for
    the data-dependent mechanisms, given the buckets, without the bias of
    uniform expansion).
Modules
    The merged graph G' and the shared transformed counts live in
    :mod:`._merged`, the matching engine in :mod:`._matching`; every
    name is importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fractions import Fraction

import numpy.typing as npt

from ... import _dawa
from ..._validation import check_epsilon
from ...noise import Generator, calibration, discrete_laplace_variance
from ...policy.transform import TreeEmbedding, spanning_tree, tree_stretch
from ._matching import exact_noisy_matching, min_cost_pairs
from ._merged import (
    aggregate_check,
    bucket_release,
    check_merged_graph,
    data_dependent_plan,
    guarantee,
    noisy_transformed,
    )
from .dawa import partition_part, run_partition
from ..histogram import HistogramRelease, check_policy, check_ratio, uniform_expansion
from ..plan import NoisePart, Plan, check_memory, int64_bytes
from .._docs import guarantee_of
from ..._typing import Real

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = [
    "dawa_transformed",
    "matching_transformed",
    "min_cost_pairs",
    "plan_dawa_transformed",
    "plan_matching_transformed",
    "plan_transformed_laplace",
    "transformed_laplace",
]

#: Largest domain for the literal 001 Sec 5.2 method (noise on every edge of
#: the complete graph and an exact search over all matchings).
EDGE_METHOD_LIMIT = 14

_CITATION = ("Anuarbek, Data-Dependent Blowfish Private Algorithm for Histogram Queries, Section 3 (transformational "
             "equivalence, Definition 3.3); Haney, Machanavajjhala, Ding, VLDB 2015")


# ---------------------------------------------------------------------------
# transformed Laplace on any embedding


def _library_stretch(policy) -> int | None:
    """Stretch of ``spanning_tree(policy)`` in closed form, without building it (None: build it to know).

    1-D threshold graphs embed in the line (stretch theta in bins), the
    complete graph in the star at value 0 (2, or 1 on two values): the
    values :func:`~blowfish_privacy.policy.transform.spanning_tree` gives them.
    """
    g, dom = policy.secrets, policy.domain
    tree = g.tree_embedding(dom)
    if tree is None:
        return None
    shape, stretch = tree
    if shape == "line" and stretch < 1:
        raise ValueError(f"the secret graph {g!r} has no edges on this domain (bins wider than the threshold); "
                         "nothing is secret and there is no tree to embed")
    return stretch


def _embedding(policy, tree):
    """(the tree, or a function building it; its stretch computed by the library, never the caller's; how)."""
    if tree is None:
        stretch = _library_stretch(policy)
        how = (f"stretch {{}} of the library's spanning tree of the secret graph: a move along an edge (u, v) "
               "changes x_T on the d_T(u, v) tree edges of its path "
               "(Sections 2-3 of the data-dependent Blowfish report)")
        if stretch is not None:  # the line or the star: built by the measurement, O(|T|) there
            built = {}

            def get():
                if "tree" not in built:
                    built["tree"] = spanning_tree(policy)
                return built["tree"]

            return get, stretch, how.format(stretch)
        emb = spanning_tree(policy)
        return (lambda: emb), emb.stretch, how.format(emb.stretch)
    if not isinstance(tree, TreeEmbedding):
        raise TypeError(f"tree must be None or a transform.TreeEmbedding, got {type(tree).__name__}")
    if tree.size != policy.domain.size:
        raise ValueError(f"tree must span the policy's domain: it has {tree.size} vertices, the domain {policy.domain.size} values")
    s = tree_stretch(tree, policy)
    emb = tree.with_stretch(s)
    return (lambda: emb), s, (
        f"stretch {s} of the caller's tree, recomputed against the secret graph (max over its edges of the tree "
        f"distance; the tree's declared stretch {tree.stretch} is not used), "
        "Sections 2-3 of the data-dependent Blowfish report")


def plan_transformed_laplace(
    policy: Policy, epsilon: Real, *, tree: TreeEmbedding | None = None,
) -> Plan[HistogramRelease]:
    """Plan Transformed + Laplace from public inputs (policy, epsilon, tree).

    Parameters
    ----------
    policy : Policy
        Without constraints; its secret graph G must be connected.
    epsilon : float or Fraction, > 0
    tree : TreeEmbedding, optional
        A tree on the domain to use instead of :func:`transform.spanning_tree`.
        It was verified when built; its stretch is recomputed against G here
        (:func:`transform.tree_stretch`) and the recomputed value is used.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes an integer histogram of shape
        (|T|,) and returns a :class:`HistogramRelease`.

    Raises
    ------
    ValueError, TypeError
        Before anything is spent: bad policy, epsilon or tree.

    Privacy
    -------
    (epsilon, G)-Blowfish privacy for the policy's secret graph G (no
    constraints): one record moved along an edge (u, v) of G changes x_T
    on d_T(u, v) <= l tree edges by one each, l the stretch (1 for a
    tree, 001 Def 3.3), so discrete Laplace noise of scale l/epsilon on
    every non-root entry of x_T suffices (000 Thm 5.1); the total n is
    public (bounded neighbours) and not perturbed.

    Sensitivity
    -----------
    The stretch l of the tree against G, recomputed here by
    :func:`transform.tree_stretch` (exact: max over the edges of G of the tree
    distance; 1 when G is itself a tree, theta for the line tree of a 1-D
    threshold graph, the diameter for FullDomain).  It is the L1
    sensitivity of x_T (001 Sec 2-3, Def 3.3).

    Runtime
    -------
    O(|T|) for the transform, the noise and the inverse (subtree sums in
    C); planning lists the edges of G for graphs without a closed form.

    References
    ----------
    .. [1] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* PVLDB 9(4),
        2015 (transformational equivalence), Sec 3-4.
    .. [2] Anuarbek. *Data-Dependent Blowfish Private Algorithm for Histogram Queries.* Student report (paper
        001), Sec 2-3, Def 3.3.
    .. [3] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 5.1.
    """
    check_policy(policy)
    eps = check_epsilon(epsilon)
    # before the tree is built: it and the measurement are O(|T|)
    memory = check_memory(int64_bytes(3 * policy.domain.size), size=policy.domain.size, parameter="policy",
                          mechanism="transformed_laplace")
    get_tree, stretch, how = _embedding(policy, tree)
    N = policy.domain.size
    cal = calibration(stretch, eps)
    scale, spent = (cal.scale, cal.epsilon_exact) if N > 1 else (Fraction(0), Fraction(0))  # N = 1: only the public n
    var = discrete_laplace_variance(scale)
    part = NoisePart("counts", Fraction(stretch), True, how, spent, scale, N - 1)

    def run(plan, hist, gen):
        est = noisy_transformed(hist, get_tree().with_stretch(stretch), scale, gen)
        return HistogramRelease(
            histogram=est, secure=gen.is_secure, stretch=stretch, expected_squared_error=var * 2 * (N - 1),
            params={"scale": scale}, plan=plan)

    return Plan(
        mechanism="transformed_laplace", policy=policy,
        guarantee=guarantee(policy, f"Laplace of scale stretch/epsilon on x_T, stretch {stretch}"),
        citation=_CITATION, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 histogram of shape ({N},), non-negative", aggregate_shape=(N,),
        expected_error={"per_noisy_value_variance": var, "total_squared_error": var * 2 * (N - 1)},
        memory_bytes=memory, runtime="O(|T|): subtree sums, one draw per tree edge, inverse",
        options={"stretch": stretch, "tree": "given" if tree is not None else "spanning_tree(policy)"},
        check=aggregate_check(N), run=run,
    )


@guarantee_of(plan_transformed_laplace)
def transformed_laplace(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, *,
    tree: TreeEmbedding | None = None
) -> HistogramRelease:
    """Transformed + Laplace: discrete Laplace on x_G, mapped back exactly.

    ``plan_transformed_laplace(policy, epsilon, tree=tree).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
        Its secret graph G; a tree gives stretch 1, other connected graphs
        are embedded in a spanning tree and pay its stretch.
    epsilon : float
    generator : Generator, optional
    tree : TreeEmbedding, optional
        A tree on the domain to use instead of :func:`transform.spanning_tree`;
        its stretch is recomputed against G (:func:`transform.tree_stretch`).

    Returns
    -------
    HistogramRelease
        int64 noisy counts (unbiased, may be negative), summing to n.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, Generator, Policy, mechanisms, secrets
    >>> pol = Policy(Domain.ordinal("x", 0, 7), secrets.Line())
    >>> r = mechanisms.transformed_laplace(np.arange(8), pol, 1.0, Generator(seed=1))
    >>> int(r.histogram.sum()), r.stretch
    (28, 1)
    """
    return plan_transformed_laplace(policy, epsilon, tree=tree).measure(hist, generator)


def plan_dawa_transformed(policy: Policy, epsilon: Real, *, ratio: float = 0.5) -> Plan[HistogramRelease]:
    """Plan DAWA + Transformed (001 Sec 4, 5.1) from public inputs.

    Parameters
    ----------
    policy : Policy
    epsilon : float or Fraction, > 0
    ratio : float in (0, 1)
        eps1 = ratio * epsilon for the partition (001 uses 0.5).

    Returns
    -------
    Plan
        The partition's noise (count and scale) is fixed; the number of
        bucket counts depends on the released partition (``count=None``).

    Privacy
    -------
    (epsilon, G)-Blowfish privacy for the policy's secret graph G (no
    constraints): DAWA's partition at eps1 = ratio * epsilon is bounded
    eps1-DP, hence (eps1, G) for every G; the bucket counts are
    (eps2, G') for the merged graph G', hence (eps2, G) (001 Lemma 4.1);
    sequential composition gives epsilon.  The plan's epsilon is what
    the release reports, whichever bucket count method the public
    buckets select.

    Sensitivity
    -----------
    Partition: DAWA's L1 cost per interval under bounded DP (one changed
    record moves two counts, sensitivity 2 of the cost vector), exact.  Bucket
    counts: the stretch of the merged graph G' on the released buckets
    (recomputed from the public partition; 1 for intervals of a line), or 2
    for plain Laplace when that variance is smaller.

    Runtime
    -------
    O(|T| log |T|) for the partition (C, DAWA's dyadic intervals) plus
    O(|T|) for the transformed bucket counts.

    References
    ----------
    .. [1] Anuarbek. *Data-Dependent Blowfish Private Algorithm for Histogram Queries.* Student report (paper
        001), Sec 4, Sec 5.1, Lemma 4.1.
    .. [2] Li, Hay, Miklau, Wang. *A Data- and Workload-Aware Algorithm for Range Queries under Differential
        Privacy.* PVLDB 7(5), 2014 (DAWA), Sec 3.
    .. [3] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* PVLDB 9(4),
        2015 (transformational equivalence), Sec 3.
    """
    check_policy(policy)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    N = policy.domain.size
    memory = check_memory(int64_bytes(2 * _dawa.dawa_n_intervals(N) + 16 * N), size=N, parameter="policy",
                          mechanism="dawa_transformed")
    check_merged_graph(policy, contiguous=True)
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibration(2, eps2).scale)
    first, cal_p = partition_part(N, eps1)
    first_eps = first.epsilon

    def run(plan, hist, gen):
        part = run_partition(hist, cal_p.scale, first_eps, penalty, gen)
        noisy, _e2, how, err, stretch = bucket_release(hist, part.buckets, part.n_buckets, policy, eps2, gen)
        return HistogramRelease(
            histogram=uniform_expansion(noisy, part.buckets), secure=gen.is_secure, buckets=part.buckets,
            stretch=stretch, expected_squared_error=err,
            params={"ratio": float(r), "n_buckets": part.n_buckets, "counts_by": how}, plan=plan)

    return data_dependent_plan("dawa_transformed", policy, eps, r, first, eps2, {"penalty": penalty},
                                "O(|T| log^2 |T|) for the partition, O(|T|) for the counts", memory, run)


@guarantee_of(plan_dawa_transformed)
def dawa_transformed(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, *, ratio: float = 0.5
) -> HistogramRelease:
    """DAWA + Transformed (001 Sec 4, 5.1): private intervals, transformed bucket counts.

    ``plan_dawa_transformed(policy, epsilon, ratio=ratio).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
        The secret graph G (any connected graph; 1-D threshold graphs of any
        size, others small enough to list edges).
    epsilon : float
        Total, as (epsilon, G)-Blowfish.
    generator : Generator, optional
    ratio : float in (0, 1)
        eps1 = ratio * epsilon for the partition (001 uses 0.5).

    Returns
    -------
    HistogramRelease
        float64 histogram after uniform expansion; ``buckets`` the partition.

    Notes
    -----
    Step 1 is :func:`dawa_partition` at eps1 (bounded DP, "eps1/2 of DP" in
    001's unbounded terms), with DAWA's own penalty: the scale 2/eps2 of a
    DP bucket count (001 keeps DAWA's first step unchanged).  Step 2 uses
    the merged graph G' (a line of intervals for the line policy, stretch
    1); when G' embeds with a large stretch, plain Laplace on the bucket
    counts (sensitivity 2) is used if its variance is smaller -- both are
    (eps2, G')-Blowfish and the choice only depends on the public buckets.
    """
    return plan_dawa_transformed(policy, epsilon, ratio=ratio).measure(hist, generator)


# ---------------------------------------------------------------------------
# matching


def plan_matching_transformed(
    policy: Policy, epsilon: Real, *, ratio: float = 0.5, method: str = "auto",
) -> Plan[HistogramRelease]:
    """Plan Matching + Transformed (001 Sec 4, 5.2) from public inputs.

    Parameters
    ----------
    policy : Policy
    epsilon : float or Fraction, > 0
    ratio : float in (0, 1)
    method : {"auto", "edges", "counts"}
        Resolved here from |T| (public): ``"auto"`` is ``"edges"`` up to
        :data:`EDGE_METHOD_LIMIT` values, ``"counts"`` above.

    Returns
    -------
    Plan

    Privacy
    -------
    (epsilon, G)-Blowfish privacy for the policy's secret graph G (no
    constraints): the matching at eps1 = ratio * epsilon (``"edges"``:
    bounded eps1-DP by 001 Thm 5.2's noisy-max argument; ``"counts"``:
    post-processing of transformed Laplace at (eps1, G)), then bucket
    counts at (eps2, G') (001 Lemma 4.1); sequential composition.

    Sensitivity
    -----------
    ``"edges"``: each pair cost |x_i - x_j| moves by at most 1 per
    add/remove step, so scale 4/eps1 for bounded neighbours (001 Thm 5.2's
    argument); ``"counts"``: the stretch of the secret graph's spanning tree
    (as :func:`plan_transformed_laplace`).  Bucket counts: the stretch of the
    merged graph G' on the released pairs.

    Runtime
    -------
    ``"edges"``: exact search over all matchings, only for |T| <= 14;
    ``"counts"``: O(|T| log |T|) (a minimum-cost pairing of sorted noisy
    counts); then O(|T|) for the bucket counts.

    References
    ----------
    .. [1] Anuarbek. *Data-Dependent Blowfish Private Algorithm for Histogram Queries.* Student report (paper
        001), Sec 4, Sec 5.2, Thm 5.1-5.2, Lemma 4.1.
    .. [2] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* PVLDB 9(4),
        2015 (transformational equivalence), Sec 3.
    """
    check_policy(policy)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    if not isinstance(method, str) or method not in ("auto", "edges", "counts"):
        raise ValueError(f"method must be 'auto', 'edges' or 'counts', got {method!r}")
    N = policy.domain.size
    if method == "auto":
        method = "edges" if N <= EDGE_METHOD_LIMIT else "counts"
    if method == "edges" and N > EDGE_METHOD_LIMIT:
        raise ValueError(f"method='edges' searches every matching and is limited to |T| <= {EDGE_METHOD_LIMIT}, got {N}")
    if method == "counts":  # before any tree or edge list of the domain is built
        check_memory(int64_bytes(20 * N), size=N, parameter="policy", mechanism="matching_transformed")
    check_merged_graph(policy, contiguous=False)
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibration(1, eps2).scale)  # 001: 1/eps2 per bucket
    if method == "edges":
        cal1 = calibration(2, eps1 / 2)
        n_pairs = N * (N - 1) // 2
        first = NoisePart(
            "matching", Fraction(4), False,
            "noisy cost of every pair: under adding/removing a record one bucket per partition changes cost by at "
            "most 1, so Theorem 5.2 of the data-dependent Blowfish report needs scale 2/eps_u; "
            "a bounded neighbour is two such steps",
            2 * cal1.epsilon_exact, cal1.scale, n_pairs)
        sub = None
        memory = int64_bytes(4 * n_pairs + (1 << N) * (N + 4) + 12 * N)
        runtime = "O(2^|T| |T|^2): exact search over all matchings (|T| <= 14)"
    else:
        sub = plan_transformed_laplace(policy, eps1)
        p0 = sub.parts[0]
        first = NoisePart("matching", p0.sensitivity, p0.sensitivity_exact,
                          "transformed Laplace at (eps1, G), then the exact minimum-cost pairing of the noisy "
                          "counts (post-processing); " + p0.how, p0.epsilon, p0.scale, p0.count)
        memory = int64_bytes(20 * N)
        runtime = "O(|T| log |T|)"

    def run(plan, hist, gen):
        if sub is None:
            pairs = [(i, j) for i in range(N) for j in range(i + 1, N)]
            z = gen.discrete_laplace(first.scale, size=len(pairs))  # before the data
            buckets = exact_noisy_matching(hist, penalty, {p: float(v) for p, v in zip(pairs, z)})
        else:
            noisy_first = sub.run(sub, hist, gen)
            buckets = min_cost_pairs(noisy_first.histogram, penalty)
        n_buckets = int(buckets.max()) + 1
        noisy, _e2, how, err, stretch = bucket_release(hist, buckets, n_buckets, policy, eps2, gen)
        return HistogramRelease(
            histogram=uniform_expansion(noisy, buckets), secure=gen.is_secure, buckets=buckets, stretch=stretch,
            expected_squared_error=err,
            params={"ratio": float(r), "method": method, "n_buckets": n_buckets, "counts_by": how}, plan=plan)

    return data_dependent_plan("matching_transformed", policy, eps, r, first, eps2,
                                {"method": method, "penalty": penalty}, runtime, memory, run)


@guarantee_of(plan_matching_transformed)
def matching_transformed(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, *, ratio: float = 0.5,
    method: str = "auto"
) -> HistogramRelease:
    """Matching + Transformed (001 Sec 4, 5.2): buckets of at most two values.

    ``plan_matching_transformed(policy, epsilon, ratio=ratio, method=method).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
    epsilon : float
        Total, as (epsilon, G)-Blowfish.
    generator : Generator, optional
    ratio : float in (0, 1)
        eps1 = ratio * epsilon for the matching.
    method : {"auto", "edges", "counts"}
        ``"edges"`` is 001 Sec 5.2 literally: integer Laplace noise on the
        cost |x_i - x_j| of every pair (weight of a primary edge of the
        complete graph), then the exact optimum over all matchings (max
        weight matching = min noisy cost partition, Thm 5.1); only for
        |T| <= 14.  Privacy: under adding/removing a record every partition
        has exactly one bucket containing the changed value and a pair cost
        moves by at most 1, so 001 Thm 5.2's argument needs scale 2/eps_u;
        bounded neighbours are two such steps: scale 4/eps1.
        ``"counts"`` (any size): the noisy histogram from
        :func:`transformed_laplace` at (eps1, G), then the exact minimum-cost
        pairing of the noisy counts by :func:`min_cost_pairs` -- post
        processing, so any pairing algorithm keeps the guarantee; edge
        weights |x~_i - x~_j| are computed from the noisy counts.
        ``"auto"``: edges up to 14 values, counts above.

    Returns
    -------
    HistogramRelease
    """
    return plan_matching_transformed(policy, epsilon, ratio=ratio, method=method).measure(hist, generator)
