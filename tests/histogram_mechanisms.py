"""Every registered plan that measures a histogram, as a function of (histogram, epsilon, generator).

One table for the fuzz tests (``test_fuzz_mechanisms``) and the input checks
(``mechanisms/test_input_checks``), keyed by the registered plan it exercises
(:func:`blowfish_privacy.registry.plans`): a plan made public with neither a
case here nor a reason in :data:`NOT_A_HISTOGRAM` fails
``test_every_registered_plan_has_a_histogram_case``.  Each function takes a
histogram of any size (1-D) or any shape (2-D) and builds the policy it needs
from that shape.
"""

from __future__ import annotations

import functools

import numpy as np

from blowfish_privacy import Domain, Ordinal, Policy, baselines, secrets
from blowfish_privacy import mechanisms as M
from blowfish_privacy.mechanisms.cumulative.cumulative import identity_projected
from blowfish_privacy.mechanisms.grids import grid


@functools.lru_cache(maxsize=None)
def line(n, graph="line"):
    g = {"line": secrets.Line(), "full": secrets.FullDomain(), "theta2": secrets.DistanceThreshold(2)}[graph]
    return Policy(Domain([Ordinal("v", 0, n - 1)]), g)


@functools.lru_cache(maxsize=None)
def square(r, c, graph="full"):
    if graph == "grid":
        return grid.grid_policy(r, c)
    return Policy(Domain([Ordinal("x", 0, r - 1), Ordinal("y", 0, c - 1)]), secrets.FullDomain())


def _n(h) -> int:
    """Cells of the policy for ``h``: its size; 4 for what is not an array (the mechanism refuses it)."""
    return max(h.size, 1) if isinstance(h, np.ndarray) else 4


def _rc(h) -> tuple[int, int]:
    """Shape of the policy for ``h``: its own when 2-D; 2 x 2 otherwise (the mechanism refuses it)."""
    return h.shape if isinstance(h, np.ndarray) and h.ndim == 2 else (2, 2)


#: registered plan -> {case name: (function of (hist, epsilon, generator), axes of the histogram)}.
CASES = {
    "plan_identity": {"identity": (lambda h, e, g: M.identity(h, e, g), 1)},
    "plan_identity_projected": {"identity_projected": (lambda h, e, g: identity_projected(h, e, g), 1)},
    "plan_hierarchical": {"hierarchical": (lambda h, e, g: M.hierarchical(h, e, g, fanout=2), 1)},
    "plan_hb": {"hb": (lambda h, e, g: baselines.hb(h, e, g), 1)},
    "plan_greedyh": {"greedyh": (lambda h, e, g: baselines.greedyh(h, e, g), 1)},
    "plan_uniform": {"uniform": (lambda h, e, g: baselines.uniform(h, e, g), 1),
                     "uniform_noisy_total": (lambda h, e, g: baselines.uniform(h, e, g, noisy_total=True), 1),
                     "uniform_2d": (lambda h, e, g: baselines.uniform(h, e, g), 2)},
    "plan_mwem": {"mwem": (lambda h, e, g: baselines.mwem(h, e, g, rounds=2), 1)},
    "plan_ahp": {"ahp": (lambda h, e, g: baselines.ahp(h, e, g), 1),
                 "ahp_2d": (lambda h, e, g: baselines.ahp(h, e, g), 2)},
    "plan_dawa": {"dawa": (lambda h, e, g: M.dawa(h, e, g), 1)},
    "plan_privelet": {"privelet": (lambda h, e, g: M.privelet(h, e, g), 1)},
    "plan_ordered": {"ordered": (lambda h, e, g: M.ordered(h, line(_n(h)), e, g), 1)},
    "plan_ordered_hierarchical": {
        "ordered_hierarchical": (lambda h, e, g: M.ordered_hierarchical(h, line(_n(h), "theta2"), e, g), 1)},
    "plan_transformed_laplace": {
        "transformed_laplace": (lambda h, e, g: M.transformed_laplace(h, line(_n(h)), e, g), 1)},
    "plan_dawa_transformed": {"dawa_transformed": (lambda h, e, g: M.dawa_transformed(h, line(_n(h)), e, g), 1)},
    "plan_matching_transformed": {
        "matching_transformed": (lambda h, e, g: M.matching_transformed(h, line(_n(h)), e, g), 1)},
    "plan_constrained_histogram": {
        "constrained_histogram": (lambda h, e, g: M.constrained_histogram(h, line(_n(h), "full"), e, g), 1)},
    "plan_histogram": {"histogram": (lambda h, e, g: M.plan_histogram(line(_n(h)), e).measure(h, g), 1)},
    "plan_kmeans_grid": {"kmeans_grid": (
        lambda h, e, g: M.plan_kmeans_grid(line(_n(h), "full"), e, k=1, cell=2).measure(h, g), 1)},
    "plan_hb2d": {"hb2d": (lambda h, e, g: baselines.hb2d(h, e, g), 2)},
    "plan_ugrid": {"ugrid": (lambda h, e, g: baselines.ugrid(h, e, g), 2)},
    "plan_agrid": {"agrid": (lambda h, e, g: baselines.agrid(h, e, g), 2)},
    "plan_dawa_hilbert": {"dawa_hilbert": (lambda h, e, g: baselines.dawa_hilbert(h, e, g), 2)},
    "plan_dpcube": {"dpcube": (lambda h, e, g: baselines.dpcube(h, e, g), 2)},
    "plan_quadtree": {"quadtree": (lambda h, e, g: baselines.quadtree(h, e, g), 2)},
    "plan_hybridtree": {"hybridtree": (lambda h, e, g: baselines.hybridtree(h, e, g), 2)},
    "plan_mwem_2d": {"mwem_2d": (lambda h, e, g: baselines.mwem_2d(h, e, g, rounds=2), 2)},
    "plan_grid_hierarchical": {
        "grid_hierarchical": (lambda h, e, g: M.grid_hierarchical(h, square(*_rc(h)), e, g), 2)},
    "plan_grid_transformed": {
        "grid_transformed": (lambda h, e, g: M.grid_transformed(h, square(*_rc(h), "grid"), e, g), 2)},
    "plan_grid_dawa_transformed": {
        "grid_dawa_transformed": (lambda h, e, g: M.grid_dawa_transformed(h, square(*_rc(h), "grid"), e, g), 2)},
    "plan_axis_cumulative": {
        "axis_cumulative": (lambda h, e, g: M.axis_cumulative(h, square(*_rc(h), "grid"), e, g), 2)},
}

#: Registered plans with no case above, and why (each is still fuzzed with hostile public arguments by
#: ``test_plans_take_hostile_arguments``, which measures a histogram of the plan's shape).
NOT_A_HISTOGRAM = {
    "plan_laplace": "adds noise to any array of a given shape and sensitivity: no histogram of a policy",
    "plan_pufferfish_sum": "measures one attribute's values, not a histogram",
    "plan_kmeans": "measures points, not a histogram",
    "plan_strategy": "measures a strategy fixed by its caller for one domain size",
    "plan_optimized": "measures a strategy optimised for one workload and domain size",
    "plan_optimized_cdf": "measures a strategy optimised for one domain size",
    "plan_kronecker": "measures a Kronecker strategy fixed by its caller for one shape",
    "plan_marginals": "measures a strategy optimised for one marginal workload and shape",
}

ONE_D = {case: fn for cases in CASES.values() for case, (fn, axes) in cases.items() if axes == 1}
TWO_D = {case: fn for cases in CASES.values() for case, (fn, axes) in cases.items() if axes == 2}
