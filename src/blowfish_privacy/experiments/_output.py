"""Shared parts of the experiments: writing rows (a CSV always, a PNG when
matplotlib is there) and the command-line options every experiment takes.

Every experiment module exposes ``add_arguments(parser)`` and
``run_from_args(args)``; ``blowfish bench NAME`` and ``python -m
blowfish_privacy.experiments.NAME`` both go through them, so an option has
one name everywhere: ``--out``, ``--repetitions``, ``--epsilons``,
``--secure``, ``--quiet`` (and ``--data`` for experiments that read data);
their values are checked as they are parsed (:mod:`._arguments`).

A gain is never shown without the guarantee it was bought with:
:func:`guarantee_block` is the text an experiment prints beside its ratios
and :func:`caption_box` puts the compact form under a figure
(:mod:`blowfish_privacy.policy.guarantee`).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import warnings
from typing import Callable

from ..policy.guarantee import format_bound, guarantee_caption
from ._arguments import budget, whole


def write_outputs(rows: list[dict], out_dir: str | None, stem: str, plot: Callable[[str], None]):
    """Write ``STEM.csv`` and, through ``plot(path)``, ``STEM.png`` into ``out_dir``.

    Returns ``(csv_path, png_path)``; both None when ``out_dir`` is None,
    ``png_path`` None (with a warning) when matplotlib is missing.
    """
    if out_dir is None:
        return None, None
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, f"{stem}.csv")
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    png_path = os.path.join(out_dir, f"{stem}.png")
    try:
        plot(png_path)
    except ImportError as exc:
        warnings.warn(f"{exc}; wrote the CSV only", stacklevel=3)
        png_path = None
    return csv_path, png_path


def text_table(title: str, lines: list[list]) -> str:
    """``title``, then ``lines`` (the first is the header) in left-aligned columns, a rule under the header."""
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(lines[0]))]
    txt = [title]
    for i, l in enumerate(lines):
        txt.append("  ".join(str(c).ljust(w) for c, w in zip(l, widths)))
        if i == 0:
            txt.append("  ".join("-" * w for w in widths))
    return "\n".join(txt)


def add_common_arguments(parser: argparse.ArgumentParser, *, out: str, repetitions: int, epsilons) -> None:
    """The options every experiment takes, with one name each."""
    parser.add_argument("--out", default=None, metavar="DIR",
                        help=f"folder for the CSV and PNG (created; default: ./{out})")
    parser.add_argument("--repetitions", type=whole(1, what="runs per setting"), default=None, metavar="N",
                        help=f"independent runs per setting; the error is their mean (default: {repetitions})")
    parser.add_argument("--epsilons", type=budget, nargs="+", default=None, metavar="EPS",
                        help="privacy budgets to sweep (default: " + " ".join(f"{e:g}" for e in epsilons) + ")")
    parser.add_argument("--secure", action="store_true",
                        help="draw noise from the secure generator (default: a fixed seed, for a reproducible figure)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(default_out=out)


def out_dir(args) -> str:
    return args.out or args.default_out


def progress(args) -> bool | None:
    """False with ``--quiet``; otherwise a bar when stderr is a terminal."""
    return False if getattr(args, "quiet", False) else None


def report_written(*paths, stream=None) -> None:
    """Say what was written (never finish silently)."""
    stream = stream or sys.stdout
    written = [p for p in paths if p]
    if written:
        print("wrote " + " and ".join(written), file=stream)
    missing = len(paths) - len(written)
    if missing:
        print("  (no PNG: matplotlib is not installed; pip install 'blowfish-privacy[plot]')", file=stream)


def announce(text: str, stream=None) -> None:
    print(text, file=stream or sys.stderr, flush=True)


def command_line(module: str, doc: str, example: str, add_arguments, run_from_args, argv=None):
    """``python -m blowfish_privacy.experiments.<module>``: parse ``argv`` and run.

    ``doc``'s first line is the description, ``example`` the epilog (kept as
    written); ``add_arguments(parser)`` and ``run_from_args(args)`` are the
    experiment's own (also used by ``blowfish bench``).
    """
    parser = argparse.ArgumentParser(prog=f"python -m blowfish_privacy.experiments.{module}",
                                     description=doc.splitlines()[0], epilog=example,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


def guarantee_block(policies: dict, epsilons, *, dp_epsilon=None) -> str:
    """The guarantee of each named policy at each epsilon, one compact line each (console text).

    ``policies`` maps a method's label to its Policy.  ``dp_epsilon(eps)``
    gives the epsilon the DP baselines run at (default: ``eps``), for
    experiments that compare with ``eps/2``-DP.
    """
    out = ["The guarantee in numbers (the Blowfish paper's equation 9: an observer's odds between two values of one "
           "individual move by at most e^(eps d_G); 'largest' is the farthest protected pair; DP: e^(its eps) for every pair):"]
    for eps in epsilons:
        out.append(caption_text(policies, eps, dp_epsilon=dp_epsilon))
    return "\n".join(out)


def caption_text(policies: dict, epsilon: float, *, dp_epsilon=None) -> str:
    """Compact lines for a figure: one per policy, then DP's (at ``dp_epsilon(epsilon)`` if given)."""
    lines = guarantee_caption(policies, epsilon).splitlines()
    if dp_epsilon is not None:
        e = float(dp_epsilon(epsilon))
        lines[-1] = f"DP baselines at eps {e:g}: {format_bound(e)} for every pair"
    return "\n".join("  " + line for line in lines)


def caption_box(fig, text: str, *, fontsize: float = 6.0) -> float:
    """Put ``text`` (the compact guarantee lines) under the axes of ``fig``; return the height it takes.

    The caller passes the returned fraction to ``tight_layout(rect=(0, h, 1, ...))``.
    """
    lines = text.count("\n") + 1
    height = min(0.6, (lines * fontsize * 1.35 + 8) / (fig.get_figheight() * 72))
    fig.text(0.01, 0.005, text, ha="left", va="bottom", fontsize=fontsize, family="monospace")
    return height
