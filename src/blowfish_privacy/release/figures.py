"""The figures of a release (``NAME.png``) and the conventions every figure of the package follows.

A figure names its policy and epsilon in its title, its units in its axis
labels, keeps its legend off the data (under the axes), and marks a
y-axis that does not start at zero (a break mark on the axis and "axis
starts at N" in its label).  Releases of the same kind over the same
attributes (a Blowfish CDF and its DP baseline) share one y-range, so
their figures compare at a glance.

The figures draw released values only (post-processing): nothing here
reads the data.
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import numpy as np

from .._atomic import atomic_write
from .._citations import in_words

__all__ = ["draw_release", "draw_release_group", "finish_release", "legend_below", "mark_truncated_axis", "policy_words",
           "reword_paper_ids", "save_figure", "save_release_figures", "share_limits"]


def reword_paper_ids(fig) -> None:
    """Every text of ``fig`` (titles, labels, legends) with its paper ids in words."""
    for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "set_text")):
        text = t.get_text()
        if isinstance(text, str) and text:
            new = in_words(text)
            if new != text:
                t.set_text(new)


def policy_words(doc: dict) -> str:
    """The privacy model, policy and epsilon of a release document, in words (for a title)."""
    eps = doc.get("epsilon_spent", doc.get("epsilon_requested"))
    pol = doc.get("policy") or {}
    if doc.get("privacy_model") == "DP":
        who = "plain DP baseline (every pair of values protected)"
    elif pol.get("name"):
        who = f"Blowfish, policy {pol['name']!r} ({pol.get('secrets', '')})"
    else:
        who = "Blowfish"
    text = f"{who}, epsilon {eps:.3g}"
    if doc.get("seeded"):
        text += "; seeded test: NOT private"
    return text


def mark_truncated_axis(ax) -> bool:
    """When the (linear) y-axis of ``ax`` starts above 0: a break mark on the axis and "axis starts at N"
    in its label.  Returns whether the axis is truncated."""
    lo, hi = ax.get_ylim()
    if ax.get_yscale() != "linear" or lo <= 0 or hi < lo or ax.images:  # an inverted axis or an image: rows of cells
        return False
    label = ax.get_ylabel()
    note = f"axis starts at {lo:,.0f}" if abs(lo) >= 10 else f"axis starts at {lo:.3g}"
    if note not in label:
        ax.set_ylabel(f"{label}\n({note}, not at 0)" if label else f"({note}, not at 0)")
    # two short slanted strokes across the bottom of the y-axis: the usual sign of a cut axis
    kw = {"transform": ax.transAxes, "color": "k", "lw": 1.0, "clip_on": False, "gid": "axis-break"}
    for dy in (0.0, 0.025):
        ax.plot((-0.012, 0.012), (0.012 + dy, 0.03 + dy), **kw)
    # a right-hand axis in other units (a fraction of the rows) is cut where the left one is: say so there too
    for child in ax.child_axes:
        if child.get_ylabel() and not child.get_ylabel().endswith("not at 0)") and hasattr(child, "set_functions"):
            child.apply_aspect()  # a secondary axis takes its limits from its parent's here
            lo_child = child.get_ylim()[0]
            text = f"axis starts at {lo_child:,.0f}" if abs(lo_child) >= 10 else f"axis starts at {lo_child:.3g}"
            child.set_ylabel(f"{child.get_ylabel()}\n({text}, not at 0)")
            for dy in (0.0, 0.025):
                ax.plot((0.988, 1.012), (0.012 + dy, 0.03 + dy), **kw)
    return True


def legend_below(fig, axes, *, bottom: float = 0.0, fontsize: float = 7.0, ncol: int = 1) -> float:
    """Move the legends of ``axes`` (each label once) into one figure legend under the axes, at
    ``bottom`` (a fraction of the figure's height); returns the fraction it takes from the bottom,
    for ``tight_layout(rect=(0, returned, 1, ...))``.  0 when there is nothing to show."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if not labels:
        return bottom
    # wrapped to the figure's width: a label wider than the figure would be cut at both edges
    width = max(30, int(fig.get_figwidth() * 72 / (fontsize * 0.55) / ncol) - 8)
    labels = [textwrap.fill(in_words(lab), width, subsequent_indent="  ") for lab in labels]
    per = [lab.count("\n") + 1 for lab in labels]
    k = -(-len(labels) // ncol)  # entries per column (filled column by column)
    rows = max(sum(per[i:i + k]) for i in range(0, len(per), k))
    height = (rows * fontsize * 1.45 + 10) / (fig.get_figheight() * 72)
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, bottom), ncol=ncol,
               fontsize=fontsize, frameon=False)
    return bottom + height


def share_limits(axes) -> None:
    """One y-range (and one x-range) for all of ``axes``: the union of their own."""
    if len(axes) < 2:
        return
    ys = np.array([ax.get_ylim() for ax in axes])
    xs = np.array([ax.get_xlim() for ax in axes])
    for ax in axes:
        ax.set_ylim(ys[:, 0].min(), ys[:, 1].max())
        ax.set_xlim(xs[:, 0].min(), xs[:, 1].max())


def _histogram_counts(doc: dict, vectors: dict):
    """The 1-D noisy counts and their expected RMSE of a 1-D histogram release, else None."""
    rmse = (doc.get("expected_error") or {}).get("rmse")
    counts = vectors.get("counts")
    if doc.get("kind") != "histogram" or len(doc.get("attributes", ())) != 1 or not rmse or counts is None:
        return None
    return np.asarray(counts, dtype=np.float64).reshape(-1), float(rmse)


def draw_release(plt, doc: dict, vectors: dict, plot):
    """Draw one release on a new figure: the kind's ``plot(ax)``, then the title (policy, epsilon), the
    units and, for a 1-D histogram, a panel of its expected error relative to each count (the error bars
    of large counts are thinner than a pixel).  Returns ``(fig, ax)``; :func:`finish_release` follows once
    the y-ranges are shared."""
    hist = _histogram_counts(doc, vectors)
    if hist is None:
        fig, ax = plt.subplots(figsize=(7.5, 4.6))
        bx = None
    else:
        fig, (ax, bx) = plt.subplots(2, 1, figsize=(7.5, 6.0), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    with warnings.catch_warnings():  # matplotlib's remarks on noisy values are not for the reader
        warnings.simplefilter("ignore")
        plot(ax)
    for cont in ax.containers:  # error bars drawn by the kind: dark and thick enough to be seen where they can be
        if type(cont).__name__ == "ErrorbarContainer":
            for part in cont.lines[2]:
                part.set_color("black")
                part.set_linewidth(1.4)
    for each in fig.axes:  # the count axes (a colour bar's too) in the unit of a count
        ylabel = each.get_ylabel()
        if "count" in ylabel and "row" not in ylabel:
            each.set_ylabel(f"{ylabel} (rows)")
    if bx is not None:
        _relative_error_panel(ax, bx, *hist)
    kind = doc.get("kind", "")
    attrs = ", ".join(doc.get("attributes", ()))
    ax.set_title(f"{doc.get('name')}: {kind} of {attrs}\n{policy_words(doc)}", fontsize=9)
    return fig, ax


def _relative_error_panel(ax, bx, counts, rmse) -> None:
    """Under a histogram: the expected RMSE of each count as a percentage of the count (log scale)."""
    x = np.arange(counts.size)
    rel = 100.0 * rmse / np.maximum(np.abs(counts), 1.0)
    if counts.size <= 400:
        bx.bar(x, rel, width=0.85, color="tab:red", alpha=0.75)
    else:  # thousands of bars take long to draw and cannot be told apart: a line
        bx.plot(x, rel, color="tab:red", lw=0.8)
    bx.set_yscale("log")
    bx.set_ylabel("expected error\n(% of the count)", fontsize=8)
    bx.grid(True, axis="y", which="both", alpha=0.3)
    bx.set_xlabel(ax.get_xlabel())
    ax.set_xlabel("")
    ax.tick_params(labelbottom=False)
    labels = bx.get_xticklabels()
    if max((len(t.get_text()) for t in labels), default=0) > 3:  # as the kind's own ticks: slanted when long
        for lab in labels:
            lab.set_rotation(45)
            lab.set_horizontalalignment("right")
            lab.set_fontsize(7)
    bx.set_title(f"the error bars above, +-{rmse:.3g} rows (the expected RMSE of one count), as a percentage of "
                 "each count", fontsize=7.5)


def finish_release(fig, ax) -> None:
    """After the y-ranges are shared: the truncated-axis mark, the legend under the axes, paper ids in words.

    Only an axis of counts is marked: on one of values (k-means centroids) no range is the natural one."""
    if "count" in ax.get_ylabel():
        mark_truncated_axis(ax)
    bottom = legend_below(fig, fig.axes)
    reword_paper_ids(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tight_layout's remark on secondary axes
        fig.tight_layout(rect=(0, bottom, 1, 1))


def save_figure(fig, path: Path, *, dpi: int = 110) -> None:
    """Save through a temporary file in the same folder, then rename (a symlink at ``path`` is replaced,
    never followed)."""
    atomic_write(Path(path), lambda fh: fig.savefig(fh, format="png", dpi=dpi), binary=True)


def draw_release_group(plt, group) -> list:
    """Draw releases of one kind over the same attributes (``(doc, vectors, plot)`` each) with one shared
    y-range (and x-range), finished (truncation mark, legend, paper ids in words); returns their
    ``(fig, ax)``, open: the caller closes them."""
    drawn = []
    try:
        for doc, vectors, plot in group:
            drawn.append(draw_release(plt, doc, vectors, plot))
        share_limits([ax for _, ax in drawn])
        for fig, ax in drawn:
            finish_release(fig, ax)
    except BaseException:
        for fig, _ in drawn:
            plt.close(fig)
        raise
    return drawn


def save_release_figures(plt, items) -> None:
    """Draw and save the figures of ``items`` (``(doc, vectors, plot, png path)``).

    Releases of one kind over the same attributes are drawn together and
    share one y-range (:func:`draw_release_group`), then each is saved and
    closed; one group's figures are open at a time.
    """
    groups: dict = {}
    for item in items:
        doc = item[0]
        groups.setdefault((doc.get("kind"), tuple(doc.get("attributes", ()))), []).append(item)
    for group in groups.values():
        drawn = draw_release_group(plt, [item[:3] for item in group])
        try:
            for (fig, _), item in zip(drawn, group):
                save_figure(fig, item[3])
        finally:
            for fig, _ in drawn:
                plt.close(fig)
