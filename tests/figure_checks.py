"""What every figure of the package must show, checked on its objects (not its pixels)."""

from __future__ import annotations

import re

#: A short paper id of the sources ("000 Thm 7.2") in text a user reads.
PAPER_ID = re.compile(r"\b00\d\b\s*(Thm|Sec|Lemma|Def|Cor)")


def texts(fig) -> list:
    """Every string a reader of ``fig`` sees: titles, labels, tick labels, legends, captions."""
    fig.canvas.draw()
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_visible()
            and isinstance(t.get_text(), str) and t.get_text()]


def all_text(fig) -> str:
    return "\n".join(texts(fig))


def paper_ids(fig) -> list:
    return [t for t in texts(fig) if PAPER_ID.search(t)]


def legends(fig) -> list:
    out = list(fig.legends)
    out += [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return out


def legends_off_the_data(fig, axes) -> bool:
    """No legend of ``fig`` overlaps the drawing area of any of ``axes``."""
    fig.canvas.draw()
    boxes = [ax.get_window_extent() for ax in axes]
    return all(not leg.get_window_extent().overlaps(box) for leg in legends(fig) for box in boxes)


def truncation_marked(ax) -> bool:
    """A y-axis starting above 0 says so in its label and carries a break mark."""
    if ax.get_yscale() != "linear" or ax.get_ylim()[0] <= 0:
        return True
    return "axis starts at" in ax.get_ylabel() and any(l.get_gid() == "axis-break" for l in ax.lines)
