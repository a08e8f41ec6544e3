"""The console table and the plot of ``blowfish bench dpbench``'s rows.

Part of :mod:`.dpbench`: :func:`summary_table` gives, per (scale,
epsilon), each algorithm's scaled L1 error on one workload and each
Blowfish algorithm's ratio to the best DP baseline; :func:`plot_rows`
draws the same errors against epsilon; :func:`policies_shown` names the
policy of each algorithm that appears in the rows.
"""

from __future__ import annotations

import numpy as np

from ._dpbench_algorithms import ALGORITHMS, policy_of
from ._output import caption_box, caption_text, guarantee_block, text_table

__all__ = ["mean_by", "plot_rows", "policies_shown", "summary_table"]


def mean_by(rows, keys, value="scaled_l1") -> dict:
    """Mean of ``value`` over the rows, per tuple of ``keys``."""
    acc: dict = {}
    for r in rows:
        k = tuple(r[x] for x in keys)
        acc.setdefault(k, []).append(r[value])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def summary_table(rows: list[dict], dims: int, workload: str = "random") -> str:
    """Scaled L1 error on ``workload`` per algorithm (mean over data sets and repetitions) per (scale, epsilon),
    and each Blowfish algorithm's ratio to the best DP baseline (geometric mean over data sets)."""
    rows = [r for r in rows if r["workload"] == workload and r["dims"] == dims]
    if not rows:
        return f"(no rows for workload {workload!r})"
    settings = sorted({(r["scale"], r["epsilon"]) for r in rows})
    algs = sorted({r["algorithm"] for r in rows}, key=lambda a: (ALGORITHMS.get((dims, a)) is None
                                                                 or ALGORITHMS[(dims, a)].privacy != "DP", a))
    per_ds = mean_by(rows, ("algorithm", "scale", "epsilon", "dataset"))
    datasets = sorted({r["dataset"] for r in rows})
    mean = {}
    for a in algs:
        for s in settings:
            vals = [per_ds[(a,) + s + (d,)] for d in datasets if (a,) + s + (d,) in per_ds]
            if vals:
                mean[(a,) + s] = float(np.exp(np.mean(np.log(np.maximum(vals, 1e-300)))))
    head = ["algorithm", "privacy"] + [f"n={s:.0e} eps={e:g}" for s, e in settings]
    lines = [head]
    dp_algs = [a for a in algs if ALGORITHMS.get((dims, a)) and ALGORITHMS[(dims, a)].privacy == "DP"]
    for a in algs:
        info = ALGORITHMS.get((dims, a))
        cells = []
        for s in settings:
            v = mean.get((a,) + s)
            cell = "-" if v is None else f"{v:.2e}"
            if info is not None and info.privacy != "DP" and v is not None:
                ratios = []
                for d in datasets:
                    best = [per_ds[(b,) + s + (d,)] for b in dp_algs if (b,) + s + (d,) in per_ds]
                    if best and (a,) + s + (d,) in per_ds:
                        ratios.append(per_ds[(a,) + s + (d,)] / min(best))
                if ratios:
                    cell += f" ({np.exp(np.mean(np.log(ratios))):.2g}x)"
            cells.append(cell)
        lines.append([a, "" if info is None else info.privacy] + cells)
    table = text_table(f"DPBench {dims}-D, workload {workload!r}: scaled average L1 error, geometric mean over "
                       f"{len(datasets)} data set(s) of the mean over repetitions; (r x) = Blowfish / best DP "
                       f"baseline", lines)
    policies = policies_shown(rows, dims)
    if not policies:
        return table
    # a gain is never shown without the guarantee it was bought with
    return table + "\n\n" + guarantee_block(policies, sorted({r["epsilon"] for r in rows}),
                                             dp_epsilon=_dp_epsilon(rows))


def _dp_epsilon(rows: list[dict]):
    """The bounded epsilon the DP baselines of ``rows`` ran at, as a function of the row epsilon (None: the same).

    Under unbounded neighbours they ran at 2 x epsilon (:func:`plan_epsilon`): a change of one record's value
    then moves an observer's odds by e^(2 epsilon), which the guarantee beside the gains must show.
    """
    if any(r.get("neighbours") == "unbounded" for r in rows):
        return lambda e: 2.0 * e
    return None


def policies_shown(rows: list[dict], dims: int) -> dict:
    """{policy in words: Policy} of the Blowfish algorithms in ``rows``, on the largest domain among them."""
    out: dict = {}
    for r in rows:
        info = ALGORITHMS.get((dims, r["algorithm"]))
        if info is not None and info.privacy != "DP" and info.policy not in out:
            k = max(int(x["domain"]) for x in rows if x["algorithm"] == r["algorithm"])
            out[info.policy] = policy_of(info, k)
    return dict(sorted(out.items()))


def plot_rows(rows: list[dict], dims: int, path, workload: str = "random") -> None:
    """DPBench-style figure: per (epsilon, scale) panel, algorithms on x, one marker per data set, log y."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["workload"] == workload and r["dims"] == dims]
    if not rows:
        return
    per = mean_by(rows, ("algorithm", "scale", "epsilon", "dataset"))
    eps_list = sorted({r["epsilon"] for r in rows})
    scale_list = sorted({r["scale"] for r in rows})
    datasets = sorted({r["dataset"] for r in rows})
    algs = sorted({r["algorithm"] for r in rows},
                  key=lambda a: (ALGORITHMS[(dims, a)].privacy != "DP", a) if (dims, a) in ALGORITHMS else (True, a))
    fig, axes = plt.subplots(len(eps_list), len(scale_list), squeeze=False,
                             figsize=(3.2 * len(scale_list) + 1.5, 2.9 * len(eps_list) + 0.8), sharey="row")
    markers = "os^vD<>pX*h"
    dp_x = [x for x, a in enumerate(algs) if (dims, a) in ALGORITHMS and ALGORITHMS[(dims, a)].privacy == "DP"]
    bf_x = [x for x in range(len(algs)) if x not in dp_x]
    for i, e in enumerate(eps_list):
        for j, s in enumerate(scale_list):
            ax = axes[i][j]
            # one bar collection per shade and one scatter per data set (not one artist per point: the
            # figure is drawn in well under the algorithms' time)
            for xs, shade in ((dp_x, "#eeeeee"), (bf_x, "#e3f0ff")):
                if xs:
                    ax.bar(xs, 1, width=0.9, bottom=0, color=shade, zorder=0, transform=ax.get_xaxis_transform())
            for di, d in enumerate(datasets):
                pts = [(x + (di - len(datasets) / 2) * 0.06, per[(a, s, e, d)]) for x, a in enumerate(algs)
                       if per.get((a, s, e, d), 0) > 0]
                if pts:
                    px, py = zip(*pts)
                    ax.scatter(px, py, s=14, marker=markers[di % len(markers)], color=f"C{di % 10}",
                               label=d if (i == 0 and j == 0) else None, zorder=2)
            ax.set_yscale("log")
            ax.set_xlim(-0.5, len(algs) - 0.5)
            ax.set_xticks(range(len(algs)))
            ax.set_xticklabels(algs, rotation=90, fontsize=6.5)
            ax.set_title(f"scale {s:.0e}, eps {e:g}", fontsize=9)
            if j == 0:
                ax.set_ylabel("scaled avg L1 error")
    policies = policies_shown(rows, dims)
    bottom = 0.0
    if policies:   # the guarantee each blue column was bought with, under the panels
        bottom = caption_box(fig, "\n".join(caption_text(policies, e, dp_epsilon=_dp_epsilon(rows))
                                             for e in eps_list))
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 7), fontsize=7,
                   bbox_to_anchor=(0.5, bottom))
    fig.suptitle(f"DPBench {dims}-D, {workload} ranges (grey: DP baselines, blue: Blowfish)", fontsize=10)
    fig.tight_layout(rect=(0, bottom + 0.03, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
