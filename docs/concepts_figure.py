"""Draw docs/concepts.png: three secret graphs on one small domain, and a pair of neighbouring databases.

Run from the repository root: ``python docs/concepts_figure.py`` (needs matplotlib).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

VALUES = list(range(8))  # the domain: ages 0..7 (in decades, say)


def draw_graph(ax, edges, title, blocks=None):
    xs = {v: v for v in VALUES}
    for a, b in edges:
        if b - a == 1:
            ax.plot([xs[a], xs[b]], [0, 0], color="tab:red", lw=2, zorder=1)
        else:  # arcs above the line for longer edges
            mid, h = (a + b) / 2, 0.18 * (b - a)
            t = [i / 30 for i in range(31)]
            ax.plot([a + (b - a) * s for s in t], [4 * h * s * (1 - s) for s in t], color="tab:red", lw=1, alpha=0.6,
                    zorder=1)
    if blocks:
        for lo, hi in blocks:
            ax.add_patch(plt.Rectangle((lo - 0.4, -0.35), hi - lo + 0.8, 0.7, fill=False, ls="--", color="grey"))
    ax.scatter(VALUES, [0] * len(VALUES), s=260, color="white", edgecolor="black", zorder=2)
    for v in VALUES:
        ax.text(v, 0, str(v), ha="center", va="center", fontsize=9, zorder=3)
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlim(-0.7, 7.7)
    ax.set_ylim(-0.6, 1.6)
    ax.axis("off")


def main():
    fig, axes = plt.subplots(4, 1, figsize=(7.5, 7.2))
    full = [(a, b) for a in VALUES for b in VALUES if a < b]
    draw_graph(axes[0], full, "FullDomain: every pair is a secret (bounded differential privacy)")
    thr = [(a, b) for a in VALUES for b in VALUES if 0 < b - a <= 2]
    draw_graph(axes[1], thr, "DistanceThreshold(theta=2): values within 2 of each other must stay indistinguishable")
    blocks = [(0, 3), (4, 7)]
    part = [(a, b) for lo, hi in blocks for a in range(lo, hi + 1) for b in range(a + 1, hi + 1)]
    draw_graph(axes[2], part, "Partition: secrets inside each block; which block a value is in may be learned",
               blocks=blocks)
    ax = axes[3]
    ax.axis("off")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 2.2)
    ax.set_title("Neighbours: databases that differ in one person's value, along one edge of the secret graph",
                 fontsize=10, loc="left")
    d1, d2 = [3, 1, 5, 6, 2], [3, 1, 4, 6, 2]
    for row, (name, db) in enumerate((("D1", d1), ("D2", d2))):
        y = 1.55 - row * 0.9
        ax.text(0.2, y, name, va="center", fontsize=10, weight="bold")
        for k, v in enumerate(db):
            changed = d1[k] != d2[k]
            ax.add_patch(plt.Rectangle((1 + k * 1.1, y - 0.3), 0.9, 0.6, color="tab:orange" if changed else "0.9"))
            ax.text(1.45 + k * 1.1, y, str(v), ha="center", va="center", fontsize=10)
    ax.text(6.8, 1.1, "5 -> 4 is an edge of every graph above,\nso D1 and D2 are neighbours under each:\n"
            "any output is at most e^epsilon times\nmore likely under one than the other",
            fontsize=8.5, va="center")
    fig.tight_layout()
    out = Path(__file__).with_name("concepts.png")
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    main()
