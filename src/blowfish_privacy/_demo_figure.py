"""``demo-comparison.png`` of ``blowfish demo``: the Blowfish CDF and its DP baseline against the truth.

The demo's data are public (UCI Adult, bundled), so the figure can show
what a real release cannot: the true CDF beside each released one, and the
actual error beside the expected one.  The two released CDFs are drawn on
panels that share one y-axis.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._citations import in_words
from .datasets import adult_capital_loss
from .release.figures import legend_below, mark_truncated_axis, reword_paper_ids, save_figure

__all__ = ["demo_comparison", "draw_comparison", "public_cdf", "range_rmse"]

#: Units of the bundled Adult columns the demo can release (the UCI description).
UNITS = {"capital_loss": "US dollars", "age": "years"}


def demo_comparison(out: Path, spec, oh: dict, dp: dict):
    """Write ``demo-comparison.png`` into ``out`` from the demo's two CDF release documents (``oh`` the
    Blowfish one, ``dp`` its baseline, as written into ``out``); returns its path, None without
    matplotlib."""
    try:  # matplotlib is optional (the plots extra)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    out = Path(out)
    attr = spec.domain.attribute(oh["attributes"][0])
    fig = draw_comparison(plt, attr, [(oh, _cumulative(out, oh)), (dp, _cumulative(out, dp))],
                          public_cdf(spec, attr), source="UCI Adult" if spec.source.get("bundled") == "adult" else "")
    try:
        path = out / "demo-comparison.png"
        save_figure(fig, path, dpi=110)  # a symlink at the name is replaced, never followed
    finally:
        plt.close(fig)
    return path


def _cumulative(out: Path, doc: dict) -> np.ndarray:
    if "cumulative" in doc:
        return np.asarray(doc["cumulative"], dtype=np.float64)
    with open(out / doc["vectors_file"], encoding="utf-8") as fh:
        col = fh.readline().strip().split(",").index("cumulative")
        return np.array([float(line.split(",")[col]) for line in fh if line.strip()])


def public_cdf(spec, attr):
    """The true cumulative counts of ``attr`` over its bins when the spec's data are the bundled Adult
    and the attribute is its capital loss (public data); None otherwise."""
    if spec.source.get("bundled") != "adult" or attr.name != "capital_loss":
        return None
    domain, hist = adult_capital_loss()
    values = np.arange(domain.size)  # the bundled domain is 0..4356, one value per bin
    inside = (values >= attr.low) & (values <= attr.high)
    if hist[~inside].any():
        return None  # rows outside the release's domain: the release counted them otherwise
    counts = np.bincount(attr.codes_of(values[inside]), weights=hist[inside], minlength=attr.size)
    return np.cumsum(counts)


def range_rmse(released, truth) -> float:
    """The root mean squared error over all ranges [lo, hi] of bins of the range counts a released CDF
    gives, exactly: with e the error of the CDF and e_-1 = 0, a range's error is e_hi - e_lo-1, and
    sum over pairs a < b of (x_b - x_a)^2 = m sum x^2 - (sum x)^2 over the m = bins + 1 points."""
    x = np.concatenate([[0.0], np.asarray(released, dtype=np.float64) - np.asarray(truth, dtype=np.float64)])
    m = x.size
    total = m * float(np.dot(x, x)) - float(x.sum()) ** 2
    return float(np.sqrt(max(total, 0.0) / (m * (m - 1) / 2)))


def _short(doc: dict) -> str:
    return "plain DP" if doc.get("privacy_model") == "DP" else "Blowfish"


def _who(doc: dict) -> str:
    """A panel's title: the model and mechanism, its source on a line of its own, the policy."""
    pol = doc.get("policy") or {}
    mech = in_words(doc.get("mechanism_description", "")).split(": ", 1)[-1]
    name, _, source = mech.partition(" (")
    name = name.removeprefix("Blowfish ")
    lines = [f"{_short(doc)}: {name} mechanism"] + ([f"({source}"] if source else [])
    if doc.get("privacy_model") == "DP":
        lines.append("every pair of values protected")
    else:
        lines.append(f"policy {pol.get('name')!r}: {pol.get('secrets', '')}")
    return "\n".join(lines)


def draw_comparison(plt, attr, releases, truth=None, *, source: str = ""):
    """The figure: per release (``(document, cumulative)``) a CDF panel, the panels sharing one y-axis,
    with the true CDF (``truth``: cumulative counts, or None when the data are not public) and the band
    of +-1 expected RMSE; under them the actual error of each released CDF, and the expected and
    actual RMSE of a range count side by side; ``source`` names the data in the title.  Returns the
    Figure."""
    unit = UNITS.get(attr.name)
    xname = attr.name.replace("_", " ") + (f" ({unit})" if unit else "")
    if attr.bin_width > 1:
        xname += f", bins of {attr.bin_width}"
    x = attr.bin_values()
    n = max(int(releases[0][0]["n"]), 1)
    eps = releases[0][0].get("epsilon_spent", releases[0][0].get("epsilon_requested"))
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    # the x range where the counts rise (most rows share one value: the rest would be a flat line)
    ref = truth if truth is not None else releases[0][1]
    rising = np.flatnonzero(np.diff(np.concatenate([[0.0], np.asarray(ref, dtype=np.float64)])) > 0)
    lo_i, hi_i = (int(rising[0]), int(rising[-1])) if rising.size > 1 else (0, len(x) - 1)
    pad = max(1, (hi_i - lo_i) // 50)
    a, b = max(0, lo_i - pad), min(len(x) - 1, hi_i + pad)
    k = len(releases)
    fig = plt.figure(figsize=(5.2 * k + 1.0, 8.6))
    grid = fig.add_gridspec(2, k, height_ratios=[1.25, 1])
    cdf_axes = []
    for j, (doc, cum) in enumerate(releases):
        ax = fig.add_subplot(grid[0, j], sharey=cdf_axes[0] if cdf_axes else None)
        cdf_axes.append(ax)
        rmse = doc["expected_error"]["rmse"]
        c = np.asarray(cum, dtype=np.float64)
        ax.fill_between(x[a:b + 1], c[a:b + 1] - rmse, c[a:b + 1] + rmse, step="post", color=colors[j],
                        alpha=0.2, lw=0, label=f"{_short(doc)}: band +-{rmse:.3g} (expected RMSE of a range count)")
        ax.step(x[a:b + 1], c[a:b + 1], where="post", color=colors[j], lw=1.3,
                label=f"{_short(doc)}: released CDF")
        if truth is not None:
            ax.step(x[a:b + 1], np.asarray(truth, dtype=np.float64)[a:b + 1], where="post", color="black",
                    lw=0.9, label="true CDF (the bundled data are public)" if j == 0 else "_truth")
        ax.set_title(_who(doc), fontsize=8.5)
        ax.set_xlim(x[a], x[b])
        ax.set_xlabel(xname)
        ax.grid(True, alpha=0.3)
        if j == 0:
            ax.set_ylabel(f"people with {attr.name.replace('_', ' ')} <= x (count)")
        else:
            ax.tick_params(labelleft=False)
    lows = [float(np.min(np.asarray(c, dtype=np.float64)[a:b + 1])) for _, c in releases]
    if truth is not None:
        lows.append(float(truth[a]))
    top = n + max(d["expected_error"]["rmse"] for d, _ in releases)
    low = min(lows) - max(d["expected_error"]["rmse"] for d, _ in releases)
    span = top - low
    cdf_axes[0].set_ylim(max(0.0, low - 0.04 * span), top + 0.04 * span)
    mark_truncated_axis(cdf_axes[0])
    sec = cdf_axes[-1].secondary_yaxis("right", functions=(lambda y: y / n, lambda f: f * n))
    sec.set_ylabel("fraction of the people")

    ex = fig.add_subplot(grid[1, :k - 1] if k > 1 else grid[1, 0])
    bars = []
    for j, (doc, cum) in enumerate(releases):
        rmse = doc["expected_error"]["rmse"]
        short = _short(doc)
        if truth is not None:
            err = np.asarray(cum, dtype=np.float64) - np.asarray(truth, dtype=np.float64)
            ex.step(x[a:b + 1], err[a:b + 1], where="post", color=colors[j], lw=1.0,
                    label=f"{short}: actual error (released - true)")
            bars.append((short, rmse, range_rmse(cum, truth)))
        else:
            bars.append((short, rmse, None))
        for sign in (1, -1):
            ex.axhline(sign * rmse, color=colors[j], ls="--", lw=0.9,
                       label=f"{short}: +-{rmse:.3g}, the expected RMSE" if sign > 0 else None)
    ex.axhline(0, color="0.4", lw=0.6)
    ex.set_xlim(x[a], x[b])
    ex.set_xlabel(xname)
    ex.set_ylabel("error of the CDF at x (people)")
    ex.set_title("actual error of each released CDF" if truth is not None
                 else "expected error (the true CDF is not public)", fontsize=9)
    ex.grid(True, alpha=0.3)

    bx = fig.add_subplot(grid[1, k - 1]) if k > 1 else None
    if bx is not None:
        pos = np.arange(len(bars))
        exp_v = [e for _, e, _ in bars]
        bx.bar(pos - 0.2, exp_v, width=0.4, color=colors[:len(bars)], alpha=0.45, hatch="//",
               label="expected RMSE (of the noisy counts, before inference)")
        for p, e in zip(pos, exp_v):
            bx.annotate(f"{e:.3g}", (p - 0.2, e), ha="center", va="bottom", fontsize=7.5)
        if truth is not None:
            act = [v for _, _, v in bars]
            bx.bar(pos + 0.2, act, width=0.4, color=colors[:len(bars)], label="actual RMSE (this release)")
            for p, v in zip(pos, act):
                bx.annotate(f"{v:.3g}", (p + 0.2, v), ha="center", va="bottom", fontsize=7.5)
        bx.set_xticks(pos, [s for s, _, _ in bars])
        bx.set_ylabel("RMSE of a range count (people)")
        bx.set_ylim(0, 1.18 * max(exp_v + [v for _, _, v in bars if v is not None]))
        ratio = bars[1][1] / bars[0][1] if len(bars) > 1 else None
        bx.set_title("error of a range count, mean over all ranges" +
                     (f"\nexpected: {ratio:.1f}x smaller for {bars[0][0]}" if ratio else ""), fontsize=9)
        bx.grid(True, axis="y", alpha=0.3)
    data = f"{source}{', ' if source else ''}{n:,} people" + (" (public data)" if truth is not None else "")
    fig.suptitle(f"{attr.name.replace('_', ' ')}: released CDFs at epsilon {eps:.3g} each; {data}", fontsize=11)
    bottom = legend_below(fig, fig.axes, ncol=2)
    reword_paper_ids(fig)
    fig.tight_layout(rect=(0, bottom, 1, 0.97))
    return fig
