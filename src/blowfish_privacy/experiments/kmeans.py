"""k-means under Blowfish policies: Figure 1(b)-(e) of the Blowfish paper (He, Machanavajjhala, Ding, SIGMOD 2014) and Figure 2 of Machanavajjhala, Kifer (CACM 2015).

Ratio of the k-means objective (000 eq. 10) reached by private SuLQ k-means
(:func:`blowfish_privacy.mechanisms.clustering.kmeans`) to the one reached by
non-private Lloyd from the same data-independent start, under the policies
FullDomain (bounded DP, the Laplace baseline), DistanceThreshold L1 with
several thresholds, and Attribute; k = 4, 10 iterations, epsilon 0.1 .. 1.0.

Data sets: UCI Skin Segmentation (B, G, R in 0..255; the full set and the
10% and 1% samples SKIN10 and SKIN01, bundled) and the synthetic 4-D set of
000 Sec 6.1 (1000 points around k random centres in (0, 1)^4, Gaussian
noise sigma 0.2 per axis), put on a grid of step 0.05 (values 0..20 per
axis; thresholds in grid units, 0.1 = 2 steps).

Unlike the paper, every sensitivity here is the honest one of the k-means
erratum (DESIGN sec 5): ``paper_sum_sensitivity`` (Lemma 6.1: 2 theta,
max_A 2|A|, 2 d(T)) is reported beside the mean ``sum_sensitivity`` used.

Every ratio is shown with its guarantee: the console output and the figure
list, per policy and data set, the bound e^(epsilon d_G) on how far an
observer's odds between two values of one point can move (000 eq. 9),
beside DP's e^epsilon for every pair.

By default a quick setting runs (the synthetic set, four epsilons, ten
repetitions: about a minute on two cores); ``--full`` runs the paper's
setting (SKIN01 and the synthetic set, ten epsilons, twenty repetitions:
hours, dominated by the exact scans of the Attribute policy on Skin).

Run:  python -m blowfish_privacy.experiments.kmeans --out DIR [--full]
(or ``blowfish bench kmeans``; both take the same options).
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .. import Generator, Policy, secrets
from ._arguments import whole
from ._output import (add_common_arguments, announce, caption_box, caption_text, guarantee_block, out_dir, progress,
                      report_written, write_outputs)
from .._progress import Progress
from ..release.figures import legend_below, mark_truncated_axis, reword_paper_ids
from ..datasets import skin
from ..policy.domain import Domain, Ordinal
from ..mechanisms.clustering._points import kmeans_objective, lloyd, random_init
from ..mechanisms.clustering.methods import kmeans
from ..mechanisms.clustering.kmeans_grid import kmeans_grid

EPSILONS = tuple(round(0.1 * i, 1) for i in range(1, 11))
#: The default (quick) setting: about a minute on two cores.
QUICK = {"datasets": ("synthetic",), "epsilons": (0.1, 0.2, 0.5, 1.0), "repetitions": 10}
#: The paper's setting (000 Fig 1): hours.
FULL = {"datasets": ("skin01", "synthetic"), "epsilons": EPSILONS, "repetitions": 20}
SKIN_THETAS = (256, 128, 64, 32)
#: Synthetic thresholds of 000 Fig 1(c) (1.0, 0.5, 0.25, 0.1) in grid steps of 0.05.
SYNTHETIC_THETAS = (20, 10, 5, 2)
SYNTHETIC_STEP = 0.05
DATASETS = ("skin01", "synthetic")


@dataclass
class KMeansExperiment:
    rows: list[dict]
    csv_path: str | None
    png_path: str | None
    #: ``{data set: {policy label: Policy}}`` (for the guarantee lines).
    policies: dict | None = None

    def guarantees(self, epsilons) -> str:
        """The guarantee of every Blowfish policy of every data set at each of ``epsilons`` (compact lines)."""
        return "\n".join(f"{ds}: " + guarantee_block(_blowfish(pols), epsilons)
                         for ds, pols in (self.policies or {}).items())

    def row(self, dataset: str, policy: str, epsilon: float) -> dict:
        for r in self.rows:
            if r["dataset"] == dataset and r["policy"] == policy and abs(r["epsilon"] - epsilon) < 1e-12:
                return r
        raise KeyError((dataset, policy, epsilon))


def _blowfish(policies: dict) -> dict:
    """The policies other than the DP baseline (whose line is DP's own)."""
    return {label: p for label, p in policies.items() if not label.startswith("FullDomain")}


def synthetic(n: int = 1000, k: int = 4, *, sigma: float = 0.2, step: float = SYNTHETIC_STEP, seed: int = 0):
    """The synthetic set of 000 Sec 6.1 on a grid: (domain, points, theta unit).

    ``n`` points in 4-D: k centres uniform in (0, 1)^4, each point a random
    centre plus N(0, sigma^2) per axis, clipped to [0, 1] and rounded to
    multiples of ``step`` (grid values 0 .. 1/step).
    """
    rng = np.random.default_rng(seed)
    centres = rng.random((k, 4))
    pts = centres[rng.integers(0, k, n)] + rng.normal(0.0, sigma, (n, 4))
    top = round(1 / step)
    grid = np.clip(np.round(pts / step), 0, top).astype(np.int64)
    domain = Domain([Ordinal(f"x{a}", 0, top) for a in range(4)])
    return domain, grid


def _load(name: str, seed: int):
    if name == "skin":
        return skin(1.0)
    if name == "skin10":
        return skin(0.1, seed=seed)
    if name == "skin01":
        return skin(0.01, seed=seed)
    if name == "synthetic":
        return synthetic(seed=seed)
    raise ValueError(f"datasets: unknown data set {name!r}; choose from skin, skin10, skin01, synthetic")


def _policies(name: str, domain: Domain, thetas) -> list[tuple[str, Policy, float]]:
    """(label, policy, the paper's Lemma 6.1 sum sensitivity)."""
    spans = [a.span for a in domain.attributes]
    out = [("FullDomain (DP)", Policy(domain, secrets.FullDomain()), 2 * sum(spans))]
    for t in thetas:
        out.append((f"L1 theta={t}", Policy(domain, secrets.DistanceThreshold(t)), 2 * t))
    out.append(("Attribute", Policy(domain, secrets.Attribute()), 2 * max(spans)))
    return out


def run(
    out_dir: str | None = None,
    *,
    datasets=QUICK["datasets"],
    epsilons=QUICK["epsilons"],
    repetitions: int = QUICK["repetitions"],
    iterations: int = 10,
    k: int = 4,
    thetas=None,
    seed: int | None = 2014,
    threads: int | None = None,
    progress: bool | None = None,
    mechanism: str = "grid",
) -> KMeansExperiment:
    """Run the experiment; write ``kmeans.csv`` and ``kmeans.png`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or None
        Folder for the CSV and PNG (created); None writes nothing.
    datasets : sequence of {"skin", "skin10", "skin01", "synthetic"}
    epsilons : sequence of float
    repetitions : int
        Runs per (data set, policy, epsilon); repetition r of every policy
        starts from the same random centroids.
    iterations, k : int
        As for :func:`~blowfish_privacy.mechanisms.clustering.kmeans`.
    thetas : sequence of int, optional
        L1 thresholds; default 256, 128, 64, 32 for Skin and 20, 10, 5, 2
        grid steps for the synthetic set.
    seed : int or None
        Seeds every generator for a reproducible figure; None uses secure
        generators.
    threads : int, optional
        Runs in parallel (the C scans release the GIL); default: CPU count.
    mechanism : {"grid", "sulq"}
        ``"grid"`` (default): :func:`~blowfish_privacy.mechanisms.clustering.kmeans_grid`,
        one noisy grid release whose sensitivity falls with the threshold,
        then Lloyd; ``"sulq"``: the SuLQ rounds of 000 Sec 6 (the paper's
        figure; with the honest sensitivity every policy lies on DP).

    Returns
    -------
    KMeansExperiment
        One row per (data set, policy, epsilon): mean and quartiles of the
        objective ratio private / non-private, the mean sensitivities used,
        the paper's sum sensitivity, and the share of exact sensitivities.
    """
    if mechanism not in ("grid", "sulq"):
        raise ValueError(f"mechanism must be 'grid' or 'sulq', got {mechanism!r}")
    threads = threads or os.cpu_count() or 1
    base_seed = 0 if seed is None else seed
    work = []
    policies: dict = {}
    for ds in datasets:
        domain, pts = _load(ds, base_seed)
        ths = thetas if thetas is not None else (SYNTHETIC_THETAS if ds == "synthetic" else SKIN_THETAS)
        inits = [random_init(domain, k, Generator(seed=base_seed + 7919 * rep)) for rep in range(repetitions)]
        base = [kmeans_objective(pts, lloyd(pts, domain, init, iterations=iterations)) for init in inits]
        for label, policy, paper in _policies(ds, domain, ths):
            policies.setdefault(ds, {})[label] = policy
            for eps in epsilons:
                work.append((ds, pts, label, policy, paper, eps, inits, base))

    def one(task, rep):
        ds, pts, label, policy, paper, eps, inits, base = task
        gen = Generator(seed=None if seed is None else base_seed + 104729 * rep + 1)
        if mechanism == "grid":
            r = kmeans_grid(pts, policy, eps, gen, k=k, n=len(pts))
            ratio = kmeans_objective(pts, r.centroids) / base[rep]
            points = r.sensitivity / r.plan.options["mass_per_point"]  # in points' worth
            return ratio, 0.0, points, float(r.plan.parts[0].sensitivity_exact), r.epsilon
        r = kmeans(pts, policy, eps, gen, method="sulq", k=k, iterations=iterations, init=inits[rep])
        ratio = kmeans_objective(pts, r.centroids) / base[rep]
        sens = np.array(r.sensitivities, dtype=np.float64)
        exact = np.mean([h.sensitivity.sum_exact for h in r.history])
        return ratio, sens[:, 0].mean(), sens[:, 1].mean(), exact, r.epsilon

    # the runs in a fixed shuffled order: their costs differ by 100x between
    # policies (exact scans), so the progress bar's ETA is only honest when
    # every stretch of the run mixes them; each run's generator depends on
    # its repetition alone, so the order changes no number
    jobs = [(t, rep) for t in range(len(work)) for rep in range(repetitions)]
    order = np.random.default_rng(12345).permutation(len(jobs))
    results = [[None] * repetitions for _ in work]
    with Progress(len(jobs), "k-means", enabled=progress) as bar, ThreadPoolExecutor(max_workers=threads) as pool:
        for (t, rep), res in zip((jobs[i] for i in order),
                                 pool.map(lambda i: one(work[jobs[i][0]], jobs[i][1]), order)):
            results[t][rep] = res
            bar.advance()
    rows = []
    for task, res_list in zip(work, results):
        ratios = np.array([x[0] for x in res_list])
        ds, _, label, _, paper, eps, _, _ = task
        rows.append(
            {
                "dataset": ds,
                "policy": label,
                "epsilon": eps,
                "ratio_mean": float(ratios.mean()),
                "ratio_q25": float(np.quantile(ratios, 0.25)),
                "ratio_median": float(np.median(ratios)),
                "ratio_q75": float(np.quantile(ratios, 0.75)),
                "size_sensitivity": float(np.mean([x[1] for x in res_list])),
                "sum_sensitivity": float(np.mean([x[2] for x in res_list])),
                "paper_sum_sensitivity": paper,
                "exact_share": float(np.mean([x[3] for x in res_list])),
                "epsilon_spent": float(np.max([x[4] for x in res_list])),
                "repetitions": repetitions,
                "iterations": iterations,
                "k": k,
                "mechanism": mechanism,
            }
        )

    csv_path, png_path = write_outputs(rows, out_dir, "kmeans", lambda path: plot(rows, path, policies=policies))
    return KMeansExperiment(rows, csv_path, png_path, policies)


def plot(rows: list[dict], path: str, *, policies: dict | None = None) -> None:
    """Write the figure of :func:`figure` to ``path``."""
    fig = figure(rows, policies=policies)
    import matplotlib.pyplot as plt  # there: figure() has imported it

    try:
        fig.savefig(path, dpi=130)
    finally:
        plt.close(fig)


#: The data sets in words, for titles.
_DATASET_WORDS = {"skin": "UCI Skin Segmentation (B, G, R)", "skin10": "UCI Skin Segmentation, 10% sample",
                  "skin01": "UCI Skin Segmentation, 1% sample",
                  "synthetic": "synthetic 4-D points (grid steps of 0.05)"}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _policy_words(label: str) -> str:
    """A policy's label for a reader ("L1 theta=20" is the L1 distance threshold)."""
    if label.startswith("L1 theta="):
        return f"distance threshold theta = {label.split('=', 1)[1]} (L1)"
    if label.startswith("FullDomain"):
        return "FullDomain (plain DP)"
    return label


def _curves(sub: list[dict]) -> list[list[str]]:
    """The policies of one panel, those whose curves are identical (every epsilon's mean and quartiles, and
    the sensitivity) in one group, in the order of the rows."""
    def key(label):
        return tuple((r["epsilon"], r["ratio_mean"], r["ratio_q25"], r["ratio_q75"], r["sum_sensitivity"])
                     for r in sub if r["policy"] == label)
    groups: dict = {}
    for label in dict.fromkeys(r["policy"] for r in sub):
        groups.setdefault(key(label), []).append(label)
    return list(groups.values())


def _plain_ticks(ax) -> None:
    """Tick labels as plain numbers ("1.5", not "1.5 x 10^0"), on a log axis too."""
    from matplotlib.ticker import FuncFormatter  # matplotlib is optional: figure() has imported it

    plain = FuncFormatter(lambda v, _: f"{v:.3g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def figure(rows: list[dict], *, policies: dict | None = None):
    """One panel per data set: objective ratio against epsilon, with the interquartile range shaded (a log
    axis when the ratios span more than a factor 4); policies with identical curves share one line, named
    together; under the panels, the legend and the guarantee of each policy at the smallest epsilon
    (``policies``: ``{data set: {label: Policy}}``).  Returned open (the caller closes it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib: pip install 'blowfish-privacy[plot]'") from exc
    names = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names) + 1.5, 4.2), squeeze=False)
    entries = 0
    for ax, ds in zip(axes[0], names):
        sub = [r for r in rows if r["dataset"] == ds]
        grid = sub[0].get("mechanism") == "grid"
        groups = _curves(sub)
        entries += len(groups)
        for i, group in enumerate(groups):
            pts = [r for r in sub if r["policy"] == group[0]]
            xs = [r["epsilon"] for r in pts]
            dp = any(label.startswith("FullDomain") for label in group)
            s_sum = float(np.mean([r["sum_sensitivity"] for r in pts]))
            who = ", ".join(_policy_words(label) for label in group)
            if len(group) > 1:
                who = f"{len(group)} policies, identical curves: {who}"
            text = (f"{who}; sensitivity {s_sum:.2g} points" if grid
                    else f"{who}; S_sum {s_sum:.0f} (paper {pts[0]['paper_sum_sensitivity']:g})")
            if len(names) > 1:
                text = f"{ds}: {text}"
            line = ax.plot(xs, [r["ratio_mean"] for r in pts], "--" if dp else "-", marker=_MARKERS[i % len(_MARKERS)],
                           ms=4, label=text)[0]
            ax.fill_between(xs, [r["ratio_q25"] for r in pts], [r["ratio_q75"] for r in pts],
                            color=line.get_color(), alpha=0.12)
        lo = min(r["ratio_q25"] for r in sub)
        hi = max(r["ratio_q75"] for r in sub)
        log = hi > 4 * lo
        pad = (hi - lo) * 0.08 or 0.05 * hi
        if log:
            ax.set_yscale("log")
            ax.set_ylim(lo / 1.05, hi * 1.05)
        else:
            ax.set_ylim(max(0.0, lo - pad), hi + pad)
        _plain_ticks(ax)
        ax.set_xlabel("epsilon (the same for every policy)")
        ax.set_ylabel("k-means objective, private / non-private\n(a ratio, no unit" + ("; log scale)" if log else ")"))
        if not log:
            mark_truncated_axis(ax)
        reps = sub[0]["repetitions"]
        ax.set_title(f"{_DATASET_WORDS.get(ds, ds)}:\nk = {sub[0]['k']}, " + (
            "one noisy grid release, then Lloyd" if grid else f"{sub[0]['iterations']} SuLQ iterations")
            + f", {reps} run{'s' if reps != 1 else ''} per point" + (" (shaded: middle half)" if reps > 1 else ""),
            fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        sens = [r["sum_sensitivity"] for r in sub]
        if not grid and max(sens) < 1.5 * min(sens):
            # say why the curves coincide instead of leaving the reader to guess
            ax.text(0.02, 0.02, "The policies' curves coincide: with the honest (erratum) sensitivities every\n"
                    f"policy needs S_sum {min(sens):.0f}..{max(sens):.0f}, because a point that moves across clusters\n"
                    "changes the sums by its distance to the reference points, which no threshold limits.",
                    transform=ax.transAxes, fontsize=6.5, va="bottom",
                    bbox={"boxstyle": "round", "fc": "white", "ec": "0.7", "alpha": 0.9})
    grid = rows[0].get("mechanism") == "grid" if rows else False
    fig.suptitle("k-means on a noisy grid release under Blowfish policies (dashed: plain DP)" if grid else
                 "SuLQ k-means under Blowfish policies, honest (erratum) sensitivities", fontsize=10)
    bottom = 0.0
    text = ""
    if policies and rows:
        eps = min(r["epsilon"] for r in rows)
        text = (f"What the gains cost at epsilon {eps:g}: an observer's odds between two values of one point\nmove by "
                f"at most e^(eps d_G), d_G the number of theta-sized steps between them\n(the Blowfish paper's "
                f"equation 9; at epsilon e raise the bounds to the power e/{eps:g}):")
        for ds in names:
            if ds in policies:
                text += f"\n {ds}:\n" + caption_text({_policy_words(label): p
                                                        for label, p in _blowfish(policies[ds]).items()}, eps)
    # the figure grows by what goes under the axes (the caption, the legend), so the axes keep their size
    fig.set_figheight(fig.get_figheight() + (0.11 * (text.count("\n") + 1) if text else 0) + 0.2 * (entries + 1))
    if text:
        bottom = caption_box(fig, text)
    bottom = legend_below(fig, list(axes[0]), bottom=bottom, ncol=1)
    reword_paper_ids(fig)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


#: The example shown by ``blowfish bench NAME --help``.
EXAMPLE = "blowfish bench kmeans --out km        # about a minute; --full: the paper's setting (hours)"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The experiment's options (shared with ``blowfish bench kmeans``)."""
    add_common_arguments(ap, out="kmeans", repetitions=QUICK["repetitions"], epsilons=QUICK["epsilons"])
    ap.add_argument("--full", action="store_true",
                    help="the paper's setting: skin01 and synthetic, epsilons 0.1..1.0, 20 repetitions (hours; "
                         "the Attribute policy on Skin alone takes ~25 s per run)")
    ap.add_argument("--datasets", nargs="+", default=None, choices=["skin", "skin10", "skin01", "synthetic"],
                    help="data sets (default: synthetic; with --full: skin01 synthetic)")
    ap.add_argument("--thetas", nargs="+", type=whole(1, what="grid steps of L1 distance"), default=None, metavar="THETA",
                    help="L1 thresholds (default: 256 128 64 32 for Skin, 20 10 5 2 grid steps for synthetic)")
    ap.add_argument("--iterations", type=whole(1, what="rounds"), default=10, metavar="N", help="SuLQ rounds (default: 10)")
    ap.add_argument("--mechanism", choices=["grid", "sulq"], default="grid",
                    help="grid (default: one noisy grid release whose sensitivity falls with the threshold, then "
                         "Lloyd) or sulq (the paper's rounds; with the honest sensitivity every policy is on DP)")
    ap.add_argument("--threads", type=whole(1, what="parallel runs"), default=None, metavar="N",
                    help="runs in parallel (the C scans release the GIL; default: the CPU count)")


def run_from_args(args) -> KMeansExperiment:
    """Run with parsed options, print the headline numbers and what was written."""
    base = FULL if args.full else QUICK
    datasets = tuple(args.datasets or base["datasets"])
    epsilons = tuple(args.epsilons or base["epsilons"])
    reps = args.repetitions or base["repetitions"]
    policies = {ds: 2 + len(args.thetas or (SYNTHETIC_THETAS if ds == "synthetic" else SKIN_THETAS)) for ds in datasets}
    runs = sum(policies.values()) * len(epsilons) * reps
    setting = "the paper's setting" if args.full else "a quick setting (--full for the paper's, hours)"
    announce(f"k-means (Figure 1 of the Blowfish paper): {runs} private runs on {', '.join(datasets)}, {len(epsilons)} epsilons, "
             f"{reps} repetitions: {setting}")
    res = run(out_dir(args), datasets=datasets, epsilons=epsilons, repetitions=reps, thetas=args.thetas,
              iterations=args.iterations, threads=args.threads, seed=None if args.secure else 2014,
              progress=progress(args), mechanism=args.mechanism)
    for r in res.rows:
        if r["epsilon"] in (min(epsilons), max(epsilons)):
            print(
                f"{r['dataset']:9s} eps={r['epsilon']:<4g} {r['policy']:16s} ratio {r['ratio_mean']:8.3f} "
                f"[{r['ratio_q25']:.3f}, {r['ratio_q75']:.3f}]  "
                + (f"S_sum {r['sum_sensitivity']:7.1f} (paper {r['paper_sum_sensitivity']})" if r["mechanism"] == "sulq"
                   else f"grid sensitivity {r['sum_sensitivity']:.3g} points")
            )
    print(res.guarantees(sorted({min(epsilons), max(epsilons)})))
    report_written(res.csv_path, res.png_path)
    return res


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m blowfish_privacy.experiments.kmeans", description=__doc__.splitlines()[0],
        epilog="examples:\n  python -m blowfish_privacy.experiments.kmeans --out km          # about a minute\n"
               "  python -m blowfish_privacy.experiments.kmeans --full --out km   # the paper's setting, hours",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(ap)
    run_from_args(ap.parse_args(argv))


if __name__ == "__main__":
    main()
