"""The console table and the plot of ``blowfish bench dpbench``'s rows.

Part of :mod:`.dpbench`: :func:`summary_table` gives, per (scale,
epsilon), each algorithm's scaled L1 error on one workload and each
Blowfish algorithm's ratio to the best DP baseline; :func:`plot_rows`
draws the same errors, one panel per epsilon; :func:`policies_shown` names the
policy of each algorithm that appears in the rows.
"""

from __future__ import annotations

import numpy as np

from ._dpbench_algorithms import ALGORITHMS, policy_of
from ..release.figures import legend_below, reword_paper_ids
from ._output import caption_box, caption_text, guarantee_block, text_table

__all__ = ["METRIC", "figure_rows", "mean_by", "plot_rows", "policies_shown", "summary_table"]


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


#: What the figure's numbers are, for its axis label.
METRIC = ("scaled L1 error: mean absolute error of a range query\n"
          "divided by the number of records (log scale; smaller is better)")


def figure_rows(rows: list[dict], dims: int, workload: str = "random"):
    """The figure of :func:`plot_rows`, returned open (the caller closes it); None without rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["workload"] == workload and r["dims"] == dims]
    if not rows:
        return None
    per = mean_by(rows, ("algorithm", "scale", "epsilon", "dataset"))
    eps_list = sorted({r["epsilon"] for r in rows})
    scale_list = sorted({r["scale"] for r in rows})
    datasets = sorted({r["dataset"] for r in rows})
    algs = sorted({r["algorithm"] for r in rows},
                  key=lambda a: (ALGORITHMS[(dims, a)].privacy != "DP", a) if (dims, a) in ALGORITHMS else (True, a))
    names = []
    for a in algs:
        info = ALGORITHMS.get((dims, a))
        names.append(a if info is None else f"{a}  [{'DP' if info.privacy == 'DP' else 'Blowfish: ' + info.policy}]")
    cols = min(len(eps_list), 3)
    lines = -(-len(eps_list) // cols)
    fig, axes = plt.subplots(lines, cols, squeeze=False, sharex=True, sharey=True,
                             figsize=(4.2 * cols + 2.6, 0.27 * len(algs) * lines + 1.6 * lines + 0.6))
    markers = "os^vD<>pX*h"
    y = np.arange(len(algs))
    for k, e in enumerate(eps_list):
        ax = axes[k // cols][k % cols]
        for yi, a in enumerate(algs):
            info = ALGORITHMS.get((dims, a))
            if info is not None and info.privacy != "DP":
                ax.axhspan(yi - 0.5, yi + 0.5, color="#e3f0ff", zorder=0, lw=0)
        for si, sc in enumerate(scale_list):
            off = (si - (len(scale_list) - 1) / 2) * 0.22
            gm, ys, lo, hi = [], [], [], []
            for yi, a in enumerate(algs):
                vals = [per[(a, sc, e, d)] for d in datasets if per.get((a, sc, e, d), 0) > 0]
                if vals:
                    gm.append(float(np.exp(np.mean(np.log(vals)))))
                    lo.append(min(vals))
                    hi.append(max(vals))
                    ys.append(yi + off)
            if not ys:
                continue
            color = f"C{si % 10}"
            ax.hlines(ys, lo, hi, color=color, lw=1.0, alpha=0.7)
            ax.scatter(gm, ys, s=22, marker=markers[si % len(markers)], color=color, zorder=3,
                       label=f"{sc:,} records: geometric mean over {len(datasets)} data set(s); line: their range"
                       if k == 0 else None)
        ax.set_xscale("log")
        ax.set_ylim(len(algs) - 0.5, -0.5)
        ax.set_yticks(y, names, fontsize=7.5)
        ax.set_title(f"epsilon {e:g}", fontsize=10)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        if k // cols == lines - 1 or k + cols >= len(eps_list):
            ax.set_xlabel(METRIC, fontsize=8)
            ax.tick_params(labelbottom=True)
    for k in range(len(eps_list), lines * cols):
        axes[k // cols][k % cols].set_visible(False)
    policies = policies_shown(rows, dims)
    # the guarantee each blue row was bought with, under the panels; the figure grows by what goes under
    # the axes (the caption, the legend), so the panels keep their size
    text = ("What the blue rows cost: an observer's odds between two values of one record move by at most "
            "e^(eps d_G), d_G the steps between them in the policy's graph (the Blowfish paper, equation 9):\n"
            + "\n".join(caption_text(policies, e, dp_epsilon=_dp_epsilon(rows)) for e in eps_list)) if policies else ""
    fig.set_figheight(fig.get_figheight() + (0.095 * (text.count("\n") + 1) if text else 0)
                      + 0.15 * (len(scale_list) + 1))
    bottom = caption_box(fig, text) if text else 0.0
    bottom = legend_below(fig, [axes[0][0]], bottom=bottom)
    fig.suptitle(f"DPBench {dims}-D, {workload} range queries, one panel per epsilon: rows are algorithms "
                 "(white: plain DP baselines, blue: Blowfish, with their policy)\nThe full grid (every data set, "
                 "scale and epsilon) is in the CSV and the markdown report", fontsize=9)
    reword_paper_ids(fig)
    fig.tight_layout(rect=(0.01, bottom, 1, 0.96))
    return fig


def plot_rows(rows: list[dict], dims: int, path, workload: str = "random") -> None:
    """DPBench figure: one panel per epsilon, the algorithms as rows, per scale the geometric mean of the
    scaled L1 error over the data sets (a marker) and their range (a line), log x."""
    fig = figure_rows(rows, dims, workload)
    if fig is None:
        return
    import matplotlib.pyplot as plt  # there: figure_rows() has imported it

    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
