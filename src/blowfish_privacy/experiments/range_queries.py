"""Range queries on UCI Adult capital-loss: Figure 2(b) of He, Machanavajjhala, Ding, Blowfish Privacy (SIGMOD 2014).

Error of random range queries for the ordered hierarchical
mechanism under (epsilon, (T, G^{d,theta}, I_n))-Blowfish privacy, for
several thresholds theta, against the DP baselines (hierarchical, which is
theta = |T|, and identity).  Setting of the paper's Section 7.3: domain 0..4356 (4,357
values), fan-out 16, 10,000 random range queries, epsilon 0.1 .. 1.0.

The figure and the console show the root mean squared error (RMSE, in
people: the square root of the mean squared error over every query and
repetition), as the rest of the package; the paper plots the mean squared
error itself, which the CSV keeps (``mse``) beside ``rmse``.

Every ratio is shown with its guarantee: the console output and the
figure list, per theta, the bound e^(epsilon d_G) on how far an observer's
odds between two capital-loss values of one person can move (the paper's equation 9),
beside DP's e^epsilon for every pair.

Run:  python -m blowfish_privacy.experiments.range_queries --out DIR
(or ``blowfish bench range-queries``; both take the same options).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from .. import Domain, Generator, Policy, mechanisms, secrets
from ._output import (add_common_arguments, announce, caption_box, caption_text, command_line, guarantee_block,
                      out_dir, progress, report_written, write_outputs)
from ._arguments import whole, whole_or
from .._progress import progress_bar
from ..datasets import adult_capital_loss
from ..release.figures import legend_below, reword_paper_ids
from . import _dpbench_data

THETAS = (1, 10, 50, 100, 500, 1000, "full")
EPSILONS = tuple(round(0.1 * i, 1) for i in range(1, 11))


@dataclass
class RangeQueryResult:
    rows: list[dict]
    csv_path: str | None
    png_path: str | None
    #: ``{method label: Policy}`` of the Blowfish methods (for the guarantee lines).
    policies: dict | None = None

    def guarantees(self, epsilons) -> str:
        """The guarantee of every policy at each of ``epsilons`` (compact lines, DP's last)."""
        return guarantee_block(self.policies or {}, epsilons)

    def mse(self, method: str, epsilon: float) -> float:
        for r in self.rows:
            if r["method"] == method and abs(r["epsilon"] - epsilon) < 1e-12:
                return r["mse"]
        raise KeyError((method, epsilon))

    def rmse(self, method: str, epsilon: float) -> float:
        """The root mean squared error per range query (in people) of ``method`` at ``epsilon``."""
        return float(np.sqrt(self.mse(method, epsilon)))


def random_ranges(size: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` uniformly random ranges [lo, hi] over bins 0..size-1 (DPBench's random workload in 1-D)."""
    lo, hi = _dpbench_data.random_ranges(size, 1, count, rng).T
    return np.ascontiguousarray(lo), np.ascontiguousarray(hi)


def run(
    out_dir: str | None = None,
    *,
    thetas=THETAS,
    epsilons=EPSILONS,
    repetitions: int = 20,
    queries: int = 10_000,
    fanout: int = 16,
    seed: int | None = 2014,
    hist: np.ndarray | None = None,
    progress: bool | None = None,
) -> RangeQueryResult:
    """Run the experiment; write ``range_queries.csv`` and ``.png`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or None
        Folder for the CSV and PNG (created); None writes nothing.
    thetas : sequence of int or "full"
        Distance thresholds (in values of capital-loss); "full" is |T|.
    epsilons : sequence of float
    repetitions : int
        Independent releases per (method, epsilon); the mean squared error is their mean (the RMSE its root).
    queries : int
        Random range queries per release (the same set for every method).
    seed : int or None
        Seeds the generator for a reproducible figure; None uses the secure
        generator.
    hist : array, optional
        Use another 1-D histogram instead of Adult capital-loss.
    """
    if hist is None:
        domain, hist = adult_capital_loss()
    else:
        hist = np.asarray(hist)
        domain = Domain.ordinal("x", 0, hist.size - 1)
    N = hist.size
    qrng = np.random.default_rng(0 if seed is None else seed)
    lo, hi = random_ranges(N, queries, qrng)
    cum = np.concatenate([[0], np.cumsum(hist)])
    truth = cum[hi + 1] - cum[lo]
    gen = Generator(seed=seed)

    methods: list[tuple[str, object]] = []
    policies = {}
    for t in thetas:
        theta = N if t == "full" else int(t)
        pol = Policy(domain, secrets.DistanceThreshold(theta))
        label = f"OH theta={t}" if t != "full" else "OH theta=|T| (hierarchical)"
        if t != "full":
            policies[label] = pol
        methods.append((label, lambda h, e, g, pol=pol: mechanisms.ordered_hierarchical(h, pol, e, g, fanout=fanout)))
    methods.append(("DP identity", lambda h, e, g: mechanisms.identity(h, e, g)))

    rows = []
    total = len(methods) * len(epsilons) * repetitions
    with progress_bar(total, "range queries", enabled=progress) as bar:
        for label, mech in methods:
            for eps in epsilons:
                errs = []
                analytic = None
                for _ in range(repetitions):
                    r = mech(hist, eps, gen)
                    ans = r.range_query(lo, hi)
                    errs.append(float(np.mean((ans - truth) ** 2)))
                    analytic = r.expected_range_error()
                    bar.advance()
                rows.append(
                    {
                        "method": label,
                        "epsilon": eps,
                        "mse": float(np.mean(errs)),
                        "rmse": float(np.sqrt(np.mean(errs))),
                        "mse_std": float(np.std(errs, ddof=1)) if len(errs) > 1 else 0.0,
                        "analytic_pre_inference_mse": analytic,
                        "repetitions": repetitions,
                        "queries": queries,
                    }
                )

    csv_path, png_path = write_outputs(
        rows, out_dir, "range_queries",
        lambda path: plot(rows, path, n_bins=N, queries=queries, repetitions=repetitions, policies=policies)
    )
    return RangeQueryResult(rows, csv_path, png_path, policies)


def _display(label: str) -> str:
    """A method's label for a reader: the abbreviations of the rows written out."""
    if label.startswith("OH theta=|T|"):
        return "plain DP: hierarchical (theta = |T|: every pair of values protected)"
    if label.startswith("OH theta="):
        theta = label.split("=", 1)[1]
        return f"Blowfish ordered hierarchical, theta = {theta} dollar{'' if theta == '1' else 's'}"
    if label == "DP identity":
        return "plain DP: Laplace noise on every count (identity)"
    return label


def figure(rows: list[dict], *, n_bins: int, queries: int, repetitions: int, policies: dict | None = None):
    """The figure of :func:`plot`, returned open (the caller closes it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib: pip install 'blowfish-privacy[plot]'") from exc
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    labels = list(dict.fromkeys(r["method"] for r in rows))
    for label in labels:
        pts = [(r["epsilon"], float(np.sqrt(r["mse"]))) for r in rows if r["method"] == label]
        xs, ys = zip(*pts)
        style = "--" if label.startswith("DP") or "hierarchical" in label else "-"
        ax.plot(xs, ys, style, marker="o", ms=3, label=_display(label))
    ax.set_yscale("log")
    ax.set_xlabel("epsilon (the same for every method)")
    ax.set_ylabel("root mean squared error per range query\n(people, log scale)")
    ax.set_title(
        f"UCI Adult capital loss in dollars (|T| = {n_bins} values): {queries} random ranges, {repetitions} "
        f"run{'s' if repetitions != 1 else ''}\n"
        "Blowfish ordered hierarchical mechanism (solid) under the distance-threshold policy: two capital losses\n"
        "within theta dollars of each other are secret; plain DP baselines dashed",
        fontsize=8.5,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    text = ""
    if policies:
        eps = min(r["epsilon"] for r in rows)
        text = (f"What the gains cost at epsilon {eps:g}: an observer's odds between two capital losses of one person "
                f"move by at most e^(eps d_G),\nd_G the number of theta-sized steps between them (Blowfish paper, "
                f"equation 9; at epsilon e raise the bounds to the power e/{eps:g}):\n"
                + caption_text({_display(k).replace(" ordered hierarchical,", ","): v for k, v in policies.items()}, eps))
    # the figure grows by what goes under the axes (the caption, the legend), so the axes keep their size
    fig.set_figheight(fig.get_figheight() + (0.11 * (text.count("\n") + 1) if text else 0) + 0.15 * (len(labels) + 1))
    bottom = caption_box(fig, text) if text else 0.0
    bottom = legend_below(fig, [ax], bottom=bottom, ncol=1)
    reword_paper_ids(fig)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def plot(rows: list[dict], path: str, *, n_bins: int, queries: int, repetitions: int,
         policies: dict | None = None) -> None:
    """Log-scale RMSE (in people) against epsilon, one line per method, the legend under the axes; under it, the
    guarantee of each policy at the smallest epsilon (``policies``: ``{method label: Policy}``)."""
    fig = figure(rows, n_bins=n_bins, queries=queries, repetitions=repetitions, policies=policies)
    import matplotlib.pyplot as plt  # there: figure() has imported it

    try:
        fig.savefig(path, dpi=130)
    finally:
        plt.close(fig)


#: The example shown by ``blowfish bench NAME --help``.
EXAMPLE = "blowfish bench range-queries --out rq --repetitions 3"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The experiment's options (shared with ``blowfish bench range-queries``)."""
    add_common_arguments(ap, out="range-queries", repetitions=20, epsilons=EPSILONS)
    ap.add_argument("--queries", type=whole(1, what="range queries"), default=10_000, metavar="N",
                    help="random range queries per release, the same set for every method (default: 10000)")
    ap.add_argument("--thetas", nargs="+", type=whole_or("full", 1, what="dollars"), default=None, metavar="THETA",
                    help="distance thresholds in values of capital-loss; 'full' is |T|, the DP hierarchical "
                         "baseline (default: 1 10 50 100 500 1000 full)")


def run_from_args(args) -> RangeQueryResult:
    """Run with parsed options, print the headline numbers and what was written."""
    thetas = THETAS if args.thetas is None else tuple(args.thetas)
    epsilons = tuple(args.epsilons or EPSILONS)
    reps = args.repetitions or 20
    announce(f"range queries (Figure 2(b) of the Blowfish paper): {len(thetas) + 1} methods x {len(epsilons)} epsilons x {reps} "
             f"repetitions, {args.queries} random ranges each, on UCI Adult capital-loss")
    res = run(out_dir(args), thetas=thetas, epsilons=epsilons, repetitions=reps, queries=args.queries,
              seed=None if args.secure else 2014, progress=progress(args))
    for eps in (min(epsilons), max(epsilons)):
        for label in dict.fromkeys(r["method"] for r in res.rows):
            print(f"eps={eps:<4g} {label:32s} RMSE per range query {res.rmse(label, eps):10.2f} people")
    print(res.guarantees(sorted({min(epsilons), max(epsilons)})))
    report_written(res.csv_path, res.png_path)
    return res


_EXAMPLE = "example: python -m blowfish_privacy.experiments.range_queries --repetitions 3 --out rq"


def main(argv=None) -> None:
    """Run the experiment from the command line (``--help`` lists the options)."""
    command_line("range_queries", __doc__, _EXAMPLE, add_arguments, run_from_args, argv)


if __name__ == "__main__":
    main()
