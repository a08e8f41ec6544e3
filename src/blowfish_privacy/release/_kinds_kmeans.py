"""The ``kmeans`` release kind: a noisy grid release then Lloyd, or SuLQ rounds.

Methods ``grid`` (the sensitivity falls with a distance threshold),
``eugkm`` (the DP grid) and ``sulq`` (He, Machanavajjhala, Ding, Blowfish
Privacy, SIGMOD 2014, 000 Sec 6); a grid whose cell side is chosen from
the public row count is planned by :func:`_deferred_grid_plan`.
Registered in :data:`.kinds.KINDS`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import mechanisms
from ..policy.domain import Ordinal
from ..errors import OptionError
# the methods of mechanisms.kmeans, the default first: one list, so the kind, the function and BlowfishKMeans
# share the default "grid" (a noisy grid release; "eugkm" the DP grid, Su et al. 2016; "sulq" 000 Sec 6)
from ..mechanisms.clustering.methods import METHODS as KMEANS_METHODS
from ..mechanisms.clustering.kmeans_grid import MAX_NODES
from ..mechanisms.plan import NoisePart
from ..noise import discrete_laplace_variance
from ._kinds_base import Output, common_fields, is_num


# -- k-means --------------------------------------------------------------------
def km_validate(options, domain, policy):
    for a in domain.attributes:
        if not isinstance(a, Ordinal):
            raise OptionError("attributes", f"kind 'kmeans' needs ordinal attributes, got {a.name!r} ({a.kind})")
    k = options.get("k", 4)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise OptionError("k", f"must be an integer >= 1, got {k!r}")
    iters = options.get("iterations", 10)
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise OptionError("iterations", f"must be an integer >= 1, got {iters!r}")
    frac = options.get("size_fraction", 0.5)
    if not is_num(frac) or not 0 < frac < 1:
        raise OptionError("size_fraction", f"must be a number in (0, 1), got {frac!r}")
    init = options.get("init", "random")
    if init != "random":
        ok = isinstance(init, list) and len(init) == k and all(
            isinstance(c, list) and len(c) == domain.ndim and all(is_num(v) for v in c) for c in init)
        if not ok:
            raise OptionError("init", f"must be \"random\" or {k} centroids of {domain.ndim} numbers, got {init!r}")
    method = options.get("method", KMEANS_METHODS[0])
    if method not in KMEANS_METHODS:
        raise OptionError("method", f"must be one of {list(KMEANS_METHODS)}, got {method!r}")
    out = {"k": k, "iterations": iters, "size_fraction": float(frac), "init": init, "method": method}
    if "cell" in options:
        cell = options["cell"]
        if isinstance(cell, bool) or not isinstance(cell, int) or cell < 1:
            raise OptionError("cell", f"must be an integer >= 1 (grid side in bins), got {cell!r}")
        out["cell"] = cell
    if method == "sulq" and "cell" in options:
        raise OptionError("cell", "applies only to methods 'grid' and 'eugkm'")
    for key in ("init", "size_fraction"):
        if method != "sulq" and key in options:
            raise OptionError(key, "applies only to method 'sulq'")
    if method != "sulq" and "iterations" not in options:
        out["iterations"] = 30  # Lloyd rounds on the noisy grid: post-processing, free
    return out


def km_plan(rel, crossing):
    o = rel.options
    if rel.policy.constraints:
        raise OptionError("policy", "kind 'kmeans' needs a policy without public constraints")
    if o["method"] == "sulq":
        init = o["init"] if o["init"] == "random" else np.asarray(o["init"], dtype=np.float64)
        return mechanisms.plan_kmeans(rel.policy, rel.epsilon, k=o["k"], iterations=o["iterations"], init=init,
                                      size_fraction=o["size_fraction"])
    interp = "linear" if o["method"] == "grid" else "nearest"
    if "cell" in o:
        return mechanisms.plan_kmeans_grid(rel.policy, rel.epsilon, k=o["k"], cell=o["cell"], interpolation=interp,
                                           iterations=o["iterations"])
    return _deferred_grid_plan(rel, interp)


def _deferred_grid_plan(rel, interp):
    """A grid plan whose cell side is chosen from the public row count.

    The number of records is public (bounded neighbours, and no secret edge
    crosses a selection: crossed selections are refused for this kind), so
    the grid can be sized from it without spending budget; the epsilon is
    fixed here, the sensitivity and scale follow from the cell (see
    ``mechanisms.kmeans_grid.grid_sensitivity``).  Every option is checked
    here, by the plan of the finest grid that fits (:data:`MAX_NODES`):
    it has the most nodes of every cell the row count can choose, so its
    memory bounds theirs.
    """
    o = rel.options
    finest = mechanisms.plan_kmeans_grid(rel.policy, rel.epsilon, k=o["k"], cell=_fitting_cell(rel.domain, 1),
                                         interpolation=interp, iterations=o["iterations"])
    part = NoisePart("nodes", None, True, "grid weights; the cell side (and with it the sensitivity "
                     "2 s^(d-1) min(theta, s) for a distance threshold theta, at most 2 s^d) is chosen from the "
                     "public number of records at the measurement (kmeans_grid.choose_cell)",
                     rel.epsilon, None, None)  # the requested epsilon: an upper bound of the spend
    guarantee = (f"(epsilon, P)-Blowfish privacy for P = {rel.policy!r}: one release of the grid weights, whose "
                 "cell side is chosen from the public number of records, with discrete Laplace noise calibrated "
                 "to their sensitivity for that cell (Theorem 5.1 of the Blowfish paper); "
                 "Lloyd on the release is post-processing")

    def run(plan, hist, gen):
        n = int(np.asarray(hist).sum())
        cell = _fitting_cell(rel.domain, mechanisms.choose_cell(rel.policy, rel.epsilon, max(n, 1), interp))
        real = mechanisms.plan_kmeans_grid(rel.policy, rel.epsilon, k=o["k"], cell=cell, interpolation=interp,
                                           iterations=o["iterations"])
        return real.measure(hist, gen)

    return replace(finest, parts=(part,), run=run, check=None, guarantee=guarantee, expected_error={},
                   options={**finest.options, "cell": "from the public row count"})


def _fitting_cell(domain, cell: int) -> int:
    cell = max(1, int(cell))
    while int(np.prod([-(-n // cell) + 1 for n in domain.shape], dtype=np.float64)) > MAX_NODES:
        cell += 1
    return cell


def _centroid_plot(dom, centroids, title: str):
    """The plot of released centroids: a scatter of the first two attributes (a 1-D domain: ticks on a line)."""
    def plot(ax):
        c = np.asarray(centroids, dtype=np.float64)
        if dom.ndim >= 2:
            ax.scatter(c[:, 0], c[:, 1], marker="x", s=80, color="tab:red")
            ax.set_ylabel(dom.names[1])
        else:
            ax.eventplot(c[:, 0], colors="tab:red")
        ax.set_xlabel(dom.names[0])
        ax.set_title(title, fontsize=9)

    return plot


def km_run(rel, hist, gen, plan):
    if rel.options["method"] != "sulq":
        return _km_grid_run(rel, hist, gen, plan)
    dom = rel.domain
    # the histogram over the release's attributes is the multiset of points
    idx = np.repeat(np.arange(dom.size, dtype=np.int64), np.asarray(hist, dtype=np.int64).reshape(-1))
    pts = np.column_stack(dom.values(idx)).astype(np.int64).reshape(-1, dom.ndim)
    r = plan.measure(pts, gen)
    per_round = [
        {"size_sensitivity": it.sensitivity.size, "sum_sensitivity": it.sensitivity.sum,
         "size_exact": it.sensitivity.size_exact, "sum_exact": it.sensitivity.sum_exact,
         "epsilon_sizes": str(it.epsilon_sizes), "epsilon_sums": str(it.epsilon_sums)}
        for it in r.history
    ]
    fields = {
        "centroids": np.asarray(r.centroids, dtype=np.float64).tolist(),
        "initial_centroids": np.asarray(r.initial_centroids, dtype=np.float64).tolist(),
        "per_round": per_round,
        **common_fields(r),
        "expected_error": "data dependent (see per_round sensitivities)",
    }

    return Output(fields, {}, _centroid_plot(dom, r.centroids, "released centroids"))


def _km_grid_run(rel, hist, gen, plan):
    dom = rel.domain
    r = plan.measure(np.asarray(hist, dtype=np.int64).reshape(-1), gen)
    used = r.plan.parts[0]  # the plan actually measured (its cell may come from the public row count)
    fields = {
        "sensitivity": {"value": int(used.sensitivity), "exact": bool(used.sensitivity_exact), "how": used.how},
        "noise_parts": [p.describe() for p in r.plan.parts],
        "centroids": np.asarray(r.centroids, dtype=np.float64).tolist(),
        "method": rel.options["method"],
        "cell": r.cell,
        "grid_sensitivity": r.sensitivity,
        "noise_scale": str(r.scale),
        **common_fields(r),
        "expected_error": {"per_node_variance": discrete_laplace_variance(r.scale)},
    }

    title = f"released centroids ({rel.options['method']} grid, cell {r.cell})"
    return Output(fields, {}, _centroid_plot(dom, r.centroids, title))
