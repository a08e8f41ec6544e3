"""Everything the plan-wide tests need of each registered plan, in one entry per plan.

:data:`PLANS` maps every name of :func:`blowfish_privacy.registry.plans` to a :class:`PlanCase`:

* ``audit``: the exact-audit cases (factory, policy, options) of ``tests/test_audit_plans.py``, or the
  :class:`Reason` the exact auditor cannot run the plan (with a probe showing that it refuses it);
* ``histogram``: the plan's histogram mechanism as ``{case: Histogram}`` for ``tests/test_fuzz_mechanisms.py``
  and ``tests/mechanisms/test_input_checks.py``, or the :class:`Reason` it measures no histogram;
* ``fuzz``: how ``test_plans_take_hostile_arguments`` draws the plan's first argument and calls it;
* ``limits``: the plan calls of ``tests/mechanisms/test_plan_limits.py`` on a domain of ``N`` values (2-D
  plans: ``k`` x ``k``, ``k = round(sqrt(N))``), run there in a child process with a limited address space,
  which imports this file by its path.

A registered plan with no entry here fails the coverage test of each file that reads this one (naming the
plans missing, via :func:`uncovered`); adding a plan is one entry here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from blowfish_privacy import Domain, Ordinal, Policy, audit, baselines, secrets
from blowfish_privacy import mechanisms as M
from blowfish_privacy import workloads as W
from blowfish_privacy.mechanisms.cumulative.cumulative import identity_projected, plan_identity_projected
from blowfish_privacy.mechanisms.grids import grid
from blowfish_privacy.mechanisms.strategies import prefix_strategy


@dataclasses.dataclass(frozen=True)
class Reason:
    """Why a plan has no case of one kind; ``probe`` (policy, options, exception, message), where given, is
    run by the audit test to show that the auditor itself refuses the plan for that reason."""

    text: str
    probe: tuple | None = None


@dataclasses.dataclass(frozen=True)
class Histogram:
    """A histogram mechanism as a function of (histogram, epsilon, generator) taking a histogram of any size
    (``axes`` 1) or any shape (``axes`` 2); ``refuses(shape)`` is true of the valid histograms it refuses by
    its documentation (None: it refuses none)."""

    fn: Callable
    axes: int
    refuses: Callable[[tuple], bool] | None = None


def first_then_epsilon(plan, first, epsilon, options):
    return plan(first, epsilon, **options)


def pair_then_epsilon(plan, first, epsilon, options):
    """A workload or strategy and the policy, both before epsilon (a hostile ``first`` is passed alone)."""
    if isinstance(first, tuple) and len(first) == 2:
        return plan(*first, epsilon, **options)
    return plan(first, epsilon, **options)


def epsilon_only(plan, first, epsilon, options):
    return plan(epsilon, **options)


def shape_sensitivity_epsilon(plan, first, epsilon, options):
    """plan_laplace: a sensitivity of 2 unless the fuzz drew one."""
    return plan(first, epsilon=epsilon, **{"sensitivity": 2, **options})


@dataclasses.dataclass(frozen=True)
class Fuzz:
    """How the hostile-argument fuzz calls a plan: ``first`` draws its first (public, domain-fixing)
    argument (None: its first parameter is epsilon); ``call(plan, first, epsilon, options)`` calls it;
    ``measure``: a returned plan measures a histogram of its shape."""

    first: st.SearchStrategy | None
    call: Callable = first_then_epsilon
    measure: bool = True


@dataclasses.dataclass(frozen=True)
class PlanCase:
    """One registered plan's cases (see the module docstring); ``audit_slow`` marks its policy sweep slow."""

    audit: list | Reason
    histogram: dict | Reason
    fuzz: Fuzz
    limits: Callable[[int, int], list]
    audit_slow: bool = False


# -- small policies ------------------------------------------------------------------------------------------------

LINE = Policy(Domain.ordinal("x", 0, 4), secrets.Line())
LINE3 = Policy(Domain.ordinal("x", 0, 2), secrets.Line())
THRESH = Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(2))
THRESH3 = Policy(Domain.ordinal("x", 0, 2), secrets.DistanceThreshold(2))
FULL = Policy(Domain.ordinal("x", 0, 3), secrets.FullDomain())
FULL3 = Policy(Domain.ordinal("x", 0, 2), secrets.FullDomain())
SQUARE = Policy(Domain([Ordinal("r", 0, 1), Ordinal("c", 0, 1)]), secrets.FullDomain())
RECT = Policy(Domain([Ordinal("r", 0, 1), Ordinal("c", 0, 2)]), secrets.FullDomain())
GRID = grid.grid_policy(2, 3)
GRID_SQUARE = grid.grid_policy(2, 2)
THETA1 = Policy(Domain.ordinal("x", 0, 4), secrets.DistanceThreshold(1))


@functools.cache
def line(n, graph="line"):
    g = {"line": secrets.Line(), "full": secrets.FullDomain(), "theta2": secrets.DistanceThreshold(2)}[graph]
    return Policy(Domain([Ordinal("v", 0, n - 1)]), g)


@functools.cache
def square(r, c, graph="full"):
    if graph == "grid":
        return grid.grid_policy(r, c)
    return Policy(Domain([Ordinal("x", 0, r - 1), Ordinal("y", 0, c - 1)]), secrets.FullDomain())


def huge_1d(N, graph):
    """The policy of ``N`` values under ``graph`` for the plan limits (not cached: built inside the call)."""
    return Policy(Domain([Ordinal("v", 0, N - 1)]), graph)


def huge_2d(k, graph):
    return Policy(Domain([Ordinal("x", 0, k - 1), Ordinal("y", 0, k - 1)]), graph)


# -- the audit's plan factories ------------------------------------------------------------------------------------


def _bound(plan, *lead, **fixed):
    """``plan`` with its leading arguments (workload, strategy) fixed: a plan factory of (policy, epsilon)."""

    def plan_factory(policy, epsilon, **options):
        return plan(*lead, policy, epsilon, **fixed, **options)

    plan_factory.__name__ = plan.__name__  # the auditor recognises a plan factory by its name
    return plan_factory


def plan_laplace_of_the_histogram(policy, epsilon):
    """plan_laplace takes a shape and a sensitivity: here, those of the histogram under ``policy``."""
    return M.plan_laplace(policy.domain.shape, sensitivity=policy.sensitivity("histogram"),
                          epsilon=epsilon, policy=policy)


def plan_kron_tiny(policy, epsilon):
    return M.plan_kronecker([np.array([[1, 0], [0, 1], [1, 1]]), np.array([[1, 0], [1, 1]])], policy,
                            epsilon, resolution=1)


_DAWA = ("its partition stage draws noise apart from the values it protects (Generator.discrete_laplace on "
         "the noisy costs of candidate buckets); the exact auditor follows a noisy stage only through "
         "add_discrete_laplace and refuses any other noise")
_NOISE_APART = "draws noise apart from the data"


# -- the histogram mechanisms' inputs ------------------------------------------------------------------------------


def _n(h) -> int:
    """Cells of the policy for ``h``: its size; 4 for what is not an array (the mechanism refuses it)."""
    return max(h.size, 1) if isinstance(h, np.ndarray) else 4


def _rc(h) -> tuple[int, int]:
    """Shape of the policy for ``h``: its own when 2-D; 2 x 2 otherwise (the mechanism refuses it)."""
    return h.shape if isinstance(h, np.ndarray) and h.ndim == 2 else (2, 2)


def one_cell(shape) -> bool:
    """Line() on one value, or the grid graph of one cell, has no secret edge: refused."""
    return math.prod(shape) == 1


def not_a_square_of_side_a_power_of_two(shape) -> bool:
    """The Hilbert order needs a square of side a power of two."""
    r, c = shape
    return r != c or bool(r & (r - 1))


def one_cell_or_not_a_hilbert_square(shape) -> bool:
    return not_a_square_of_side_a_power_of_two(shape) or one_cell(shape)


SMALL_1D = st.sampled_from([1, 2, 5, 8])
SMALL_2D = st.sampled_from([(1, 1), (2, 2), (2, 3), (4, 4)])


# -- one entry per registered plan ---------------------------------------------------------------------------------

PLANS: dict[str, PlanCase] = {
    "plan_agrid": PlanCase(
        audit=[(baselines.plan_agrid, RECT, {"cells1": 2, "cells2": 2})],
        histogram={"agrid": Histogram(lambda h, e, g: baselines.agrid(h, e, g), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_agrid((k, k), 1.0)]),
    "plan_ahp": PlanCase(
        audit=Reason("adaptive: the second stage's clusters come from the first stage's noisy counts",
                     (FULL, {}, audit.CannotAudit, "adaptive")),
        histogram={"ahp": Histogram(lambda h, e, g: baselines.ahp(h, e, g), 1),
                   "ahp_2d": Histogram(lambda h, e, g: baselines.ahp(h, e, g), 2)},
        fuzz=Fuzz(st.one_of(SMALL_1D, SMALL_2D)),
        limits=lambda N, k: [lambda: baselines.plan_ahp(N, 1.0), lambda: baselines.plan_ahp((k, k), 1.0)]),
    "plan_axis_cumulative": PlanCase(
        audit=[(M.plan_axis_cumulative, GRID, {"fanout": 2})],
        histogram={"axis_cumulative": Histogram(
            lambda h, e, g: M.axis_cumulative(h, square(*_rc(h), "grid"), e, g), 2)},
        fuzz=Fuzz(SMALL_2D.map(lambda s: square(*s, "grid"))),
        limits=lambda N, k: [lambda: M.plan_axis_cumulative(grid.grid_policy(k, k), 1.0),
                             lambda: M.plan_axis_cumulative(huge_2d(k, secrets.FullDomain()), 1.0)]),
    "plan_constrained_histogram": PlanCase(
        audit=[(M.plan_constrained_histogram, FULL3, {})],
        histogram={"constrained_histogram": Histogram(
            lambda h, e, g: M.constrained_histogram(h, line(_n(h), "full"), e, g), 1)},
        fuzz=Fuzz(SMALL_1D.map(lambda n: line(n, "full"))),
        limits=lambda N, k: [lambda: M.plan_constrained_histogram(huge_1d(N, secrets.FullDomain()), 1.0)]),
    "plan_dawa": PlanCase(
        audit=Reason(_DAWA, (FULL, {}, TypeError, _NOISE_APART)),
        histogram={"dawa": Histogram(lambda h, e, g: M.dawa(h, e, g), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: M.plan_dawa(N, 1.0)]),
    "plan_dawa_hilbert": PlanCase(
        audit=Reason(_DAWA, (SQUARE, {}, TypeError, _NOISE_APART)),
        histogram={"dawa_hilbert": Histogram(lambda h, e, g: baselines.dawa_hilbert(h, e, g), 2,
                                             not_a_square_of_side_a_power_of_two)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_dawa_hilbert((k, k), 1.0)]),
    "plan_dawa_transformed": PlanCase(
        audit=Reason(_DAWA, (LINE3, {}, TypeError, _NOISE_APART)),
        histogram={"dawa_transformed": Histogram(
            lambda h, e, g: M.dawa_transformed(h, line(_n(h)), e, g), 1, one_cell)},
        fuzz=Fuzz(SMALL_1D.map(line)),
        limits=lambda N, k: [lambda: M.plan_dawa_transformed(huge_1d(N, secrets.Line()), 1.0)]),
    "plan_dpcube": PlanCase(
        audit=[(baselines.plan_dpcube, RECT, {})],
        histogram={"dpcube": Histogram(lambda h, e, g: baselines.dpcube(h, e, g), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_dpcube((k, k), 1.0)]),
    "plan_greedyh": PlanCase(
        audit=[(baselines.plan_greedyh, FULL, {})],
        histogram={"greedyh": Histogram(lambda h, e, g: baselines.greedyh(h, e, g), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: baselines.plan_greedyh(N, 1.0), lambda: baselines.plan_greedyh(N, 2**20)]),
    "plan_grid_dawa_transformed": PlanCase(
        audit=Reason(_DAWA, (GRID_SQUARE, {}, TypeError, _NOISE_APART)),
        histogram={"grid_dawa_transformed": Histogram(
            lambda h, e, g: M.grid_dawa_transformed(h, square(*_rc(h), "grid"), e, g), 2,
            one_cell_or_not_a_hilbert_square)},
        fuzz=Fuzz(SMALL_2D.map(lambda s: square(*s, "grid"))),
        limits=lambda N, k: [lambda: M.plan_grid_dawa_transformed(grid.grid_policy(k, k), 1.0)]),
    "plan_grid_hierarchical": PlanCase(
        audit=[(M.plan_grid_hierarchical, RECT, {"fanout": 2})],
        histogram={"grid_hierarchical": Histogram(
            lambda h, e, g: M.grid_hierarchical(h, square(*_rc(h)), e, g), 2)},
        fuzz=Fuzz(SMALL_2D.map(lambda s: square(*s))),
        limits=lambda N, k: [lambda: M.plan_grid_hierarchical(huge_2d(k, secrets.FullDomain()), 1.0),
                             lambda: M.plan_grid_hierarchical(grid.grid_policy(k, k), 1.0, fanout=2,
                                                              levels="quadtree")]),
    "plan_grid_transformed": PlanCase(
        audit=[(M.plan_grid_transformed, GRID, {})],
        histogram={"grid_transformed": Histogram(
            lambda h, e, g: M.grid_transformed(h, square(*_rc(h), "grid"), e, g), 2, one_cell)},
        fuzz=Fuzz(SMALL_2D.map(lambda s: square(*s, "grid"))),
        limits=lambda N, k: [lambda: M.plan_grid_transformed(grid.grid_policy(k, k), 1.0)]),
    "plan_hb": PlanCase(
        audit=[(baselines.plan_hb, FULL, {})],
        histogram={"hb": Histogram(lambda h, e, g: baselines.hb(h, e, g), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: baselines.plan_hb(N, 1.0)]),
    "plan_hb2d": PlanCase(
        audit=[(baselines.plan_hb2d, RECT, {})],
        histogram={"hb2d": Histogram(lambda h, e, g: baselines.hb2d(h, e, g), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_hb2d((k, k), 1.0)]),
    "plan_hierarchical": PlanCase(
        audit=[(M.plan_hierarchical, FULL, {"fanout": 2})],
        histogram={"hierarchical": Histogram(lambda h, e, g: M.hierarchical(h, e, g, fanout=2), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: M.plan_hierarchical(N, 1.0), lambda: M.plan_hierarchical(N, 1.0, fanout=2**62)]),
    "plan_histogram": PlanCase(
        audit=[(M.plan_histogram, LINE, {})],
        histogram={"histogram": Histogram(lambda h, e, g: M.plan_histogram(line(_n(h)), e).measure(h, g), 1)},
        fuzz=Fuzz(SMALL_1D.map(line)),
        limits=lambda N, k: [lambda: M.plan_histogram(huge_1d(N, secrets.FullDomain()), 1.0)]),
    "plan_hybridtree": PlanCase(
        audit=Reason(("adaptive: the kd-tree's splits are noisy medians, and the values given to later noise "
                      "draws depend on them"), (RECT, {}, audit.CannotAudit, "adaptive")),
        histogram={"hybridtree": Histogram(lambda h, e, g: baselines.hybridtree(h, e, g), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_hybridtree((k, k), 1.0)]),
    "plan_identity": PlanCase(
        audit=[(M.plan_identity, FULL, {})],
        histogram={"identity": Histogram(lambda h, e, g: M.identity(h, e, g), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: M.plan_identity(N, 1.0)]),
    "plan_identity_projected": PlanCase(
        audit=[(plan_identity_projected, FULL, {})],
        histogram={"identity_projected": Histogram(lambda h, e, g: identity_projected(h, e, g), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: plan_identity_projected(N, 1.0)]),
    "plan_kmeans": PlanCase(
        audit=[(M.plan_kmeans, THETA1, {"k": 2, "iterations": 1, "init": np.array([[1.0], [3.0]])})],
        histogram=Reason("measures points, not a histogram"),
        fuzz=Fuzz(SMALL_2D.map(lambda s: square(*s))),
        limits=lambda N, k: [lambda: M.plan_kmeans(huge_2d(k, secrets.FullDomain()), 1.0),
                             lambda: M.plan_kmeans(huge_1d(N, secrets.Line()), 1.0)]),
    "plan_kmeans_grid": PlanCase(
        audit=[(M.plan_kmeans_grid, THETA1, {"k": 2, "cell": 2, "restarts": 1, "iterations": 3})],
        histogram={"kmeans_grid": Histogram(
            lambda h, e, g: M.plan_kmeans_grid(line(_n(h), "full"), e, k=1, cell=2).measure(h, g), 1)},
        fuzz=Fuzz(SMALL_2D.map(lambda s: square(*s))),
        limits=lambda N, k: [lambda: M.plan_kmeans_grid(huge_2d(k, secrets.FullDomain()), 1.0, n=10**6),
                             lambda: M.plan_kmeans_grid(huge_2d(k, secrets.DistanceThreshold(1)), 1.0, n=10**9),
                             lambda: M.plan_kmeans_grid(huge_2d(k, secrets.FullDomain()), 1.0, cell=1)]),
    "plan_kronecker": PlanCase(
        audit=[(plan_kron_tiny, SQUARE, {})],
        histogram=Reason("measures a Kronecker strategy fixed by its caller for one shape"),
        fuzz=Fuzz(SMALL_2D.map(lambda s: ([np.eye(s[0]), np.eye(s[1])], square(*s, "grid"))), pair_then_epsilon),
        limits=lambda N, k: [
            lambda: M.plan_kronecker([W.Identity(k), W.Identity(k)], huge_2d(k, secrets.FullDomain()), 1.0)]),
    "plan_laplace": PlanCase(
        audit=[(plan_laplace_of_the_histogram, LINE, {})],
        histogram=Reason("adds noise to any array of a given shape and sensitivity: no histogram of a policy"),
        fuzz=Fuzz(st.one_of(SMALL_1D.map(lambda n: (n,)), SMALL_2D), shape_sensitivity_epsilon, measure=False),
        limits=lambda N, k: [lambda: M.plan_laplace((N,), sensitivity=2, epsilon=1.0),
                             lambda: M.plan_laplace((k, k), sensitivity=2, epsilon=1.0)]),
    "plan_marginals": PlanCase(
        audit=[(_bound(M.plan_marginals, W.Marginals((2, 2), [[0], [1]]), restarts=1), SQUARE, {})],
        audit_slow=True,  # an optimisation per plan: seconds each
        histogram=Reason("measures a strategy optimised for one marginal workload and shape"),
        fuzz=Fuzz(SMALL_2D.map(lambda s: (np.eye(s[0] * s[1]), square(*s))), pair_then_epsilon),
        limits=lambda N, k: [lambda: M.plan_marginals(W.Marginals((k, k), [[0], [1]]),
                                                      huge_2d(k, secrets.FullDomain()), 1.0)]),
    "plan_matching_transformed": PlanCase(
        audit=Reason(("its matching is a noisy max over pair costs whose noise is drawn apart from the values "
                      "(Generator.discrete_laplace, method 'edges', the default on small domains); with method "
                      "'counts' the bucket counts follow the noisy matching (adaptive)"),
                     (LINE3, {}, TypeError, _NOISE_APART)),
        histogram={"matching_transformed": Histogram(
            lambda h, e, g: M.matching_transformed(h, line(_n(h)), e, g), 1, one_cell)},
        fuzz=Fuzz(SMALL_1D.map(line)),
        limits=lambda N, k: [lambda: M.plan_matching_transformed(huge_1d(N, secrets.Line()), 1.0)]),
    "plan_mwem": PlanCase(
        audit=Reason(("adaptive: each round measures the query chosen from the earlier rounds' noisy answers, "
                      "so its draws are not independent releases"), (FULL, {}, audit.CannotAudit, "adaptive")),
        histogram={"mwem": Histogram(lambda h, e, g: baselines.mwem(h, e, g, rounds=2), 1)},
        fuzz=Fuzz(SMALL_1D),
        limits=lambda N, k: [lambda: baselines.plan_mwem(N, 1.0),
                             lambda: baselines.plan_mwem(N, 1.0, rounds=10**12)]),
    "plan_mwem_2d": PlanCase(
        audit=Reason("adaptive, as plan_mwem", (RECT, {}, audit.CannotAudit, "adaptive")),
        histogram={"mwem_2d": Histogram(lambda h, e, g: baselines.mwem_2d(h, e, g, rounds=2), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_mwem_2d((k, k), 1.0),
                             lambda: baselines.plan_mwem_2d((k, k), 1.0, rounds=10**12)]),
    "plan_optimized": PlanCase(
        audit=[(_bound(M.plan_optimized, W.AllRanges(3), restarts=1), LINE3, {})],
        histogram=Reason("measures a strategy optimised for one workload and domain size"),
        fuzz=Fuzz(SMALL_1D.filter(lambda n: n > 1).map(lambda n: (np.tril(np.ones((n, n))), line(n))),
                  pair_then_epsilon),
        limits=lambda N, k: [
            lambda: M.plan_optimized(W.AllRanges(N), huge_1d(N, secrets.Line()), 1.0),
            lambda: M.plan_optimized(W.Kronecker(W.AllRanges(k), W.AllRanges(k)),
                                     huge_2d(k, secrets.DistanceThreshold(1)), 1.0),
            lambda: M.plan_optimized(W.Marginals((k, k), [[0], [1]]), huge_2d(k, secrets.FullDomain()), 1.0,
                                     template="marginals")]),
    "plan_optimized_cdf": PlanCase(
        audit=[(M.plan_optimized_cdf, THRESH3, {})],
        histogram=Reason("measures a strategy optimised for one domain size"),
        fuzz=Fuzz(SMALL_1D.filter(lambda n: n > 1).map(lambda n: line(n, "theta2"))),
        limits=lambda N, k: [lambda: M.plan_optimized_cdf(huge_1d(N, secrets.DistanceThreshold(64)), 1.0)]),
    "plan_ordered": PlanCase(
        audit=[(M.plan_ordered, THRESH, {})],
        histogram={"ordered": Histogram(lambda h, e, g: M.ordered(h, line(_n(h)), e, g), 1)},
        fuzz=Fuzz(SMALL_1D.map(line)),
        limits=lambda N, k: [lambda: M.plan_ordered(huge_1d(N, secrets.Line()), 1.0)]),
    "plan_ordered_hierarchical": PlanCase(
        audit=[(M.plan_ordered_hierarchical, THRESH, {"fanout": 2}),
               (M.plan_ordered_hierarchical, LINE, {"fanout": 2})],
        histogram={"ordered_hierarchical": Histogram(
            lambda h, e, g: M.ordered_hierarchical(h, line(_n(h), "theta2"), e, g), 1)},
        fuzz=Fuzz(SMALL_1D.map(lambda n: line(n, "theta2"))),
        limits=lambda N, k: [
            lambda: M.plan_ordered_hierarchical(huge_1d(N, secrets.DistanceThreshold(64)), 1.0),
            lambda: M.plan_ordered_hierarchical(huge_1d(N, secrets.Line()), 1.0, fanout=2**40)]),
    "plan_privelet": PlanCase(
        audit=[(M.plan_privelet, FULL, {})],
        histogram={"privelet": Histogram(lambda h, e, g: M.privelet(h, e, g), 1)},
        fuzz=Fuzz(st.one_of(SMALL_1D, SMALL_2D)),
        limits=lambda N, k: [lambda: M.plan_privelet(N, 1.0), lambda: M.plan_privelet((k, k), 1.0)]),
    "plan_pufferfish_sum": PlanCase(
        audit=Reason("it measures one attribute's values, not a histogram over a policy's domain, and draws "
                     "its noise on zero before adding the exact sum (as Python ints, so that no int64 sum "
                     "overflows), so no noisy stage carries the data; its sensitivity is checked by brute force "
                     "(Lemma 7.1) in tests/mechanisms/pufferfish/test_pufferfish.py"),
        histogram=Reason("measures one attribute's values, not a histogram"),
        fuzz=Fuzz(None, epsilon_only),
        limits=lambda N, k: [lambda: M.plan_pufferfish_sum(1.0, bounds=(0, N), absolute_error=1)]),
    "plan_quadtree": PlanCase(
        audit=[(baselines.plan_quadtree, RECT, {})],
        histogram={"quadtree": Histogram(lambda h, e, g: baselines.quadtree(h, e, g), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_quadtree((k, k), 1.0)]),
    "plan_strategy": PlanCase(
        audit=[(_bound(M.plan_strategy, prefix_strategy(3)), THRESH3, {})],
        histogram=Reason("measures a strategy fixed by its caller for one domain size"),
        fuzz=Fuzz(SMALL_1D.map(lambda n: (np.vstack([np.eye(n), np.ones((1, n))]), line(n, "theta2"))),
                  pair_then_epsilon),
        limits=lambda N, k: [lambda: M.plan_strategy(W.Identity(N), huge_1d(N, secrets.Line()), 1.0)]),
    "plan_transformed_laplace": PlanCase(
        audit=[(M.plan_transformed_laplace, LINE, {}), (M.plan_transformed_laplace, THRESH, {})],
        histogram={"transformed_laplace": Histogram(
            lambda h, e, g: M.transformed_laplace(h, line(_n(h)), e, g), 1, one_cell)},
        fuzz=Fuzz(SMALL_1D.map(line)),
        limits=lambda N, k: [lambda: M.plan_transformed_laplace(huge_1d(N, secrets.Line()), 1.0),
                             lambda: M.plan_transformed_laplace(huge_1d(N, secrets.FullDomain()), 1.0)]),
    "plan_ugrid": PlanCase(
        audit=[(baselines.plan_ugrid, RECT, {"cells": 2})],
        histogram={"ugrid": Histogram(lambda h, e, g: baselines.ugrid(h, e, g), 2)},
        fuzz=Fuzz(SMALL_2D),
        limits=lambda N, k: [lambda: baselines.plan_ugrid((k, k), 1.0)]),
    "plan_uniform": PlanCase(
        audit=[(baselines.plan_uniform, FULL, {"noisy_total": True})],
        histogram={"uniform": Histogram(lambda h, e, g: baselines.uniform(h, e, g), 1),
                   "uniform_noisy_total": Histogram(lambda h, e, g: baselines.uniform(h, e, g, noisy_total=True), 1),
                   "uniform_2d": Histogram(lambda h, e, g: baselines.uniform(h, e, g), 2)},
        fuzz=Fuzz(st.one_of(SMALL_1D, SMALL_2D)),
        limits=lambda N, k: [lambda: baselines.plan_uniform(N, 1.0),
                             lambda: baselines.plan_uniform((k, k), 1.0, noisy_total=True)]),
}


# -- the views the tests read ----------------------------------------------------------------------------------------


def uncovered(registered) -> tuple[list[str], list[str]]:
    """(registered plans with no entry in :data:`PLANS`, entries for plans no longer registered)."""
    return sorted(set(registered) - set(PLANS)), sorted(set(PLANS) - set(registered))


#: (plan, factory audited, policy, options, slow sweep) for every audited plan.
AUDIT_CASES = [(name, factory, policy, options, case.audit_slow) for name, case in PLANS.items()
               if not isinstance(case.audit, Reason) for factory, policy, options in case.audit]
#: plan -> Reason the exact auditor cannot run it.
NOT_AUDITED = {name: case.audit for name, case in PLANS.items() if isinstance(case.audit, Reason)}
#: histogram case -> Histogram, over every plan that measures a histogram.
HISTOGRAMS = {label: hist for case in PLANS.values() if not isinstance(case.histogram, Reason)
              for label, hist in case.histogram.items()}
ONE_D = {label: hist.fn for label, hist in HISTOGRAMS.items() if hist.axes == 1}
TWO_D = {label: hist.fn for label, hist in HISTOGRAMS.items() if hist.axes == 2}


def limit_cases(N) -> dict[str, list]:
    """plan -> its calls on a domain of ``N`` values (2-D plans: k x k, k = round(sqrt(N)))."""
    k = round(N ** 0.5)
    return {name: case.limits(N, k) for name, case in PLANS.items()}
