"""The algorithms DPBench runs here, 1-D and 2-D, DP baselines and Blowfish.

Part of :mod:`.dpbench`: each :class:`Algorithm` names its privacy model,
its policy in words and a plan factory ``(domain size, epsilon) -> Plan``
(workload-aware ones also take ``workload=``, the public ranges);
:data:`ALGORITHMS` maps ``(dims, name)`` to it.  Every name is re-exported
by :mod:`.dpbench`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import Domain, Ordinal, Policy, mechanisms, secrets, workloads
from .. import baselines
from ..mechanisms.cumulative.cumulative import plan_identity_projected
from ..mechanisms.grids import grid
from ..mechanisms.strategies.optimized import plan_optimized


@dataclass(frozen=True)
class Algorithm:
    name: str
    dims: int
    privacy: str          # "DP" or "Blowfish"
    policy: str           # the policy in words
    plan: Callable        # (domain size per axis, epsilon[, workload=ranges]) -> Plan
    #: The plan takes the public workload: ``workload=`` an int64 array of inclusive ranges, rows (lo, hi)
    #: in 1-D and (r1, r2, c1, c2) in 2-D (DPBench's workload-aware algorithms: MWEM, DAWA, ...).
    uses_workload: bool = False


def _dom1(k):
    return Domain.ordinal("x", 0, k - 1)


def _dom2(k):
    return Domain([Ordinal("row", 0, k - 1), Ordinal("col", 0, k - 1)])


def pol_full2(k):
    return Policy(_dom2(k), secrets.FullDomain())


def _optimized(dims: int, k: int, e, graph):
    """plan_optimized for all ranges (1-D) or all rectangles (2-D): a public surrogate of the random ranges.

    The optimisation is data-independent and depends on the domain only, so
    DPBench's plan cache reuses it across data sets and scales.
    """
    if dims == 1:
        return plan_optimized(workloads.AllRanges(k), Policy(_dom1(k), graph), e, restarts=1, bound=False)
    W = workloads.Kronecker(workloads.AllRanges(k), workloads.AllRanges(k))
    return plan_optimized(W, Policy(_dom2(k), graph), e, restarts=1, bound=False)


def _algorithms() -> dict[str, Algorithm]:
    M = mechanisms
    a = [
        Algorithm("identity", 1, "DP", "bounded DP", lambda k, e: M.plan_identity(k, e)),
        Algorithm("identity_projected", 1, "DP", "bounded DP (n public)",
                  lambda k, e: plan_identity_projected(k, e)),
        Algorithm("uniform", 1, "DP", "bounded DP (n public: free)", lambda k, e: baselines.plan_uniform(k, e)),
        Algorithm("h", 1, "DP", "bounded DP", lambda k, e: M.plan_hierarchical(k, e, fanout=2)),
        Algorithm("hierarchical", 1, "DP", "bounded DP", lambda k, e: M.plan_hierarchical(k, e, fanout=16)),
        Algorithm("hb", 1, "DP", "bounded DP", lambda k, e: baselines.plan_hb(k, e)),
        Algorithm("mwem", 1, "DP", "bounded DP", lambda k, e, workload=None: baselines.plan_mwem(k, e, ranges=workload),
                  uses_workload=True),
        Algorithm("privelet", 1, "DP", "bounded DP", lambda k, e: M.plan_privelet(k, e)),
        Algorithm("dawa", 1, "DP", "bounded DP", lambda k, e, workload=None: M.plan_dawa(k, e, workload=workload),
                  uses_workload=True),
        Algorithm("greedyh", 1, "DP", "bounded DP", lambda k, e, workload=None: baselines.plan_greedyh(k, e, workload=workload),
                  uses_workload=True),
        Algorithm("ahp", 1, "DP", "bounded DP", lambda k, e: baselines.plan_ahp(k, e)),
        Algorithm("hdmm", 1, "DP", "bounded DP (HDMM p-Identity for all ranges, exact bounded sensitivity)",
                  lambda k, e: _optimized(1, k, e, secrets.FullDomain())),
        Algorithm("optimized_line", 1, "Blowfish", "line",
                  lambda k, e: _optimized(1, k, e, secrets.Line())),
        Algorithm("optimized_theta4", 1, "Blowfish", "distance threshold 4",
                  lambda k, e: _optimized(1, k, e, secrets.DistanceThreshold(4))),
        Algorithm("optimized_theta64", 1, "Blowfish", "distance threshold 64",
                  lambda k, e: _optimized(1, k, e, secrets.DistanceThreshold(64))),
        Algorithm("ordered", 1, "Blowfish", "line",
                  lambda k, e: M.plan_ordered(Policy(_dom1(k), secrets.Line()), e)),
        Algorithm("oh_theta4", 1, "Blowfish", "distance threshold 4",
                  lambda k, e: M.plan_ordered_hierarchical(Policy(_dom1(k), secrets.DistanceThreshold(4)), e)),
        Algorithm("oh_theta64", 1, "Blowfish", "distance threshold 64",
                  lambda k, e: M.plan_ordered_hierarchical(Policy(_dom1(k), secrets.DistanceThreshold(64)), e)),
        Algorithm("transformed_line", 1, "Blowfish", "line",
                  lambda k, e: M.plan_transformed_laplace(Policy(_dom1(k), secrets.Line()), e)),
        Algorithm("dawa_transformed_line", 1, "Blowfish", "line",
                  lambda k, e: M.plan_dawa_transformed(Policy(_dom1(k), secrets.Line()), e)),
        Algorithm("matching_transformed_line", 1, "Blowfish", "line",
                  lambda k, e: M.plan_matching_transformed(Policy(_dom1(k), secrets.Line()), e)),
        Algorithm("identity", 2, "DP", "bounded DP",
                  lambda k, e: M.plan_laplace((k, k), sensitivity=2, epsilon=e, policy=pol_full2(k),
                                              how="histogram under bounded DP: one record moves, two cells change")),
        Algorithm("uniform", 2, "DP", "bounded DP (n public: free)",
                  lambda k, e: baselines.plan_uniform((k, k), e)),
        Algorithm("quadtree", 2, "DP", "bounded DP (geometric budget, Cormode et al. ICDE 2012)",
                  lambda k, e: baselines.plan_quadtree((k, k), e)),
        Algorithm("hb2d", 2, "DP", "bounded DP",
                  lambda k, e: grid.plan_grid_hierarchical(pol_full2(k), e, fanout=16, levels="tensor")),
        Algorithm("hb2d_qyl", 2, "DP", "bounded DP", lambda k, e: baselines.plan_hb2d((k, k), e)),
        Algorithm("ugrid", 2, "DP", "bounded DP (grid size from the public n)",
                  lambda k, e: baselines.plan_ugrid((k, k), e)),
        Algorithm("agrid", 2, "DP", "bounded DP (grid sizes from the public n)",
                  lambda k, e: baselines.plan_agrid((k, k), e)),
        Algorithm("dawa_hilbert", 2, "DP", "bounded DP (workload-aware; partition at half the budget)",
                  lambda k, e, workload=None: baselines.plan_dawa_hilbert((k, k), e, ratio=0.5, workload=workload,
                                                                  integer="round"),
                  uses_workload=True),
        Algorithm("ahp", 2, "DP", "bounded DP", lambda k, e: baselines.plan_ahp((k, k), e)),
        Algorithm("mwem", 2, "DP", "bounded DP",
                  lambda k, e, workload=None: baselines.plan_mwem_2d((k, k), e, rectangles=workload), uses_workload=True),
        Algorithm("privelet", 2, "DP", "bounded DP", lambda k, e: M.plan_privelet((k, k), e)),
        Algorithm("dpcube", 2, "DP", "bounded DP",
                  lambda k, e: baselines.plan_dpcube((k, k), e)),
        Algorithm("hybridtree", 2, "DP", "bounded DP (tree height from the public n)",
                  lambda k, e: baselines.plan_hybridtree((k, k), e)),
        Algorithm("hdmm", 2, "DP", "bounded DP (HDMM Kronecker p-Identity for all rectangles; sensitivity bound)",
                  lambda k, e: _optimized(2, k, e, secrets.FullDomain())),
        Algorithm("optimized_grid", 2, "Blowfish", "grid (L1, theta 1)",
                  lambda k, e: _optimized(2, k, e, secrets.DistanceThreshold(1))),
        Algorithm("quadtree_grid", 2, "Blowfish", "grid (L1, theta 1)",
                  lambda k, e: grid.plan_grid_hierarchical(grid.grid_policy(k, k), e, fanout=2, levels="quadtree")),
        Algorithm("hb2d_grid", 2, "Blowfish", "grid (L1, theta 1)",
                  lambda k, e: grid.plan_grid_hierarchical(grid.grid_policy(k, k), e, fanout=16, levels="tensor")),
        Algorithm("transformed_grid", 2, "Blowfish", "grid (L1, theta 1)",
                  lambda k, e: grid.plan_grid_transformed(grid.grid_policy(k, k), e)),
        Algorithm("dawa_transformed_grid", 2, "Blowfish", "grid (L1, theta 1)",
                  lambda k, e: M.plan_grid_dawa_transformed(grid.grid_policy(k, k), e)),
        Algorithm("axis_cumulative_rowline", 2, "Blowfish", "row-line (moves along a row)",
                  lambda k, e: grid.plan_axis_cumulative(grid.axis_line_policy(k, k), e, fanout=4)),
    ]
    return {(x.dims, x.name): x for x in a}


ALGORITHMS = _algorithms()


def algorithm_names(dims: int) -> list[str]:
    return [n for (d, n) in ALGORITHMS if d == dims]


def policy_of(alg: Algorithm, k: int) -> Policy:
    """The policy ``alg`` is private under on ``k`` values per axis (DP baselines: the full domain).

    For the guarantee tables: the secret graph whose distances bound what an
    observer learns (e^(epsilon d_G), 000 eq. 9).
    """
    dom = _dom1(k) if alg.dims == 1 else _dom2(k)
    if alg.privacy == "DP":
        return Policy(dom, secrets.FullDomain())
    words = alg.policy
    if words == "line":
        return Policy(dom, secrets.Line())
    if words.startswith("distance threshold "):
        return Policy(dom, secrets.DistanceThreshold(int(words.rsplit(" ", 1)[1])))
    if words.startswith("grid (L1, theta 1)"):
        return grid.grid_policy(k, k)
    if words.startswith("row-line"):
        return grid.axis_line_policy(k, k)
    raise ValueError(f"no policy object for {alg.dims}-D algorithm {alg.name!r} ({words!r})")
