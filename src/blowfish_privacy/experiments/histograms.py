"""Histograms under the line policy on the DPBench 1-D data: Figures 4 and 5 of the data-dependent Blowfish report.

Error per query of the identity workload (one count per value)
for (epsilon, Line)-Blowfish mechanisms against DP baselines run at
epsilon/2-DP -- which is this library's (epsilon, FullDomain), bounded DP
(001 Sec 6: "We compare (eps, G)-Blowfish private mechanisms against
eps/2-differentially private algorithms"):

=====================  ==========================================  =========
label                  call                                        guarantee
=====================  ==========================================  =========
Laplace                ``laplace(hist, sensitivity=2, epsilon)``   eps/2-DP
DAWA                   ``dawa(hist, epsilon, ratio=0.25)``         eps/2-DP
Transformed+Laplace    ``transformed_laplace(hist, line, eps)``    (eps, Line)
DAWA+Transformed       ``dawa_transformed(hist, line, eps, 0.5)``  (eps, Line)
Matching+Transformed   ``matching_transformed(hist, line, eps)``   (eps, Line)
=====================  ==========================================  =========

Fig 4: the first four on the seven DPBench histograms (|T| = 4096).  Fig 5:
all five on the first half of INCOME (2048 values).  epsilon in
{0.001, 0.01, 0.1}, 5 repetitions each as in 001 (more with ``--repetitions``).

The table and the figure show the root mean squared error per count (RMSE,
in records: the square root of the mean squared error over every count and
repetition), as the rest of the package; the report plots the mean squared
error itself, which the CSV keeps (``mse``) beside ``rmse``.

Every table and figure shows the guarantee beside the errors: the line
policy's bound e^(epsilon d_G) on how far an observer's odds between two
values of one individual can move (000 eq. 9; ``d_G = |x - y|``) against the
baselines' e^(epsilon/2) for every pair.

The data are not shipped with the package: pass the folder holding
``<NAME>.n4096.npy`` with ``--data``, or set ``BLOWFISH_DATA`` to the
folder holding ``dpbench_1d/`` (as for ``blowfish bench dpbench``).
``BLOWFISH_DPBENCH_DIR`` (the ``.npy`` folder itself) is a deprecated alias.

Run:  python -m blowfish_privacy.experiments.histograms --data DIR --out DIR
(or ``blowfish bench histograms --data DIR``; both take the same options).
"""

from __future__ import annotations

import argparse
import os
import warnings
from dataclasses import dataclass

import numpy as np

from .. import Generator, Policy, mechanisms, secrets
from ._dpbench_data import default_data_dir as shared_data_dir, subdir
from ._output import (add_common_arguments, announce, caption_box, caption_text, command_line, guarantee_block,
                      out_dir, progress, report_written, write_outputs)
from .._progress import Progress
from ..policy.domain import Domain

DATASETS = ("ADULTFRANK", "HEPTH", "INCOME", "MEDCOST", "NETTRACE", "PATENT", "SEARCHLOGS")
EPSILONS = (0.001, 0.01, 0.1)
FIG4_METHODS = ("Laplace", "DAWA", "Transformed+Laplace", "DAWA+Transformed")
FIG5_METHODS = FIG4_METHODS + ("Matching+Transformed",)
ENV_VAR = "BLOWFISH_DATA"
#: The variable's deprecated alias: the ``.npy`` folder itself (``$BLOWFISH_DATA/dpbench_1d``).
OLD_ENV_VAR = "BLOWFISH_DPBENCH_DIR"


def default_data_dir() -> str | None:
    """``$BLOWFISH_DATA/dpbench_1d`` if it is a folder.

    ``$BLOWFISH_DPBENCH_DIR``, the folder itself, is still read first, with a DeprecationWarning.
    """
    old = os.environ.get(OLD_ENV_VAR)
    if old:
        warnings.warn(f"{OLD_ENV_VAR} is deprecated: set {ENV_VAR} to the folder holding {subdir(1)}/ instead",
                      DeprecationWarning, stacklevel=2)
        return old
    base = shared_data_dir()
    if base is None or not (base / subdir(1)).is_dir():
        return None
    return str(base / subdir(1))


def load_dpbench(data_dir: str, names=DATASETS, size: int = 4096) -> dict[str, np.ndarray]:
    """Read ``<NAME>.n<size>.npy`` for every name (int64 counts).

    Raises
    ------
    FileNotFoundError
        Naming the missing file and how to point at the data.
    """
    out = {}
    for name in names:
        path = os.path.join(data_dir, f"{name}.n{size}.npy")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"DPBench histogram {path} not found; pass the folder with --data or set {ENV_VAR} (the folder "
                f"holding {subdir(1)}/)"
            )
        arr = np.load(path)
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or arr.size != size:
            raise ValueError(f"{path} must hold {size} integer counts, got dtype {arr.dtype} and shape {arr.shape}")
        out[name] = np.ascontiguousarray(arr, dtype=np.int64)
    return out


def _method(label: str, policy: Policy):
    if label == "Laplace":
        return lambda h, e, g: mechanisms.laplace(h, sensitivity=2, epsilon=e, generator=g).values
    if label == "DAWA":
        return lambda h, e, g: mechanisms.dawa(h, e, g, ratio=0.25).histogram
    if label == "Transformed+Laplace":
        return lambda h, e, g: mechanisms.transformed_laplace(h, policy, e, g).histogram
    if label == "DAWA+Transformed":
        return lambda h, e, g: mechanisms.dawa_transformed(h, policy, e, g, ratio=0.5).histogram
    if label == "Matching+Transformed":
        return lambda h, e, g: mechanisms.matching_transformed(h, policy, e, g, ratio=0.5).histogram
    raise ValueError(f"unknown method {label!r}; allowed: {FIG5_METHODS}")


@dataclass
class HistogramResult:
    rows: list[dict]
    csv_path: str | None
    png_path: str | None

    def mse(self, figure: str, dataset: str, method: str, epsilon: float) -> float:
        for r in self.rows:
            if (r["figure"], r["dataset"], r["method"]) == (figure, dataset, method) and abs(r["epsilon"] - epsilon) < 1e-12:
                return r["mse"]
        raise KeyError((figure, dataset, method, epsilon))

    def rmse(self, figure: str, dataset: str, method: str, epsilon: float) -> float:
        """The root mean squared error per count (in records)."""
        return float(np.sqrt(self.mse(figure, dataset, method, epsilon)))

    def table(self) -> str:
        """Markdown table of the RMSE per count: one row per (figure, dataset, method), one column per
        epsilon; then the guarantee."""
        eps = sorted({r["epsilon"] for r in self.rows})
        keys = list(dict.fromkeys((r["figure"], r["dataset"], r["method"]) for r in self.rows))
        lines = [("RMSE per count (root mean squared error, in records); figure: the one of the data-dependent "
                  "Blowfish report each row reproduces"),
                 "",
                 "| figure | dataset | method | " + " | ".join(f"eps={e:g}" for e in eps) + " |",
                 "|---|---|---|" + "---:|" * len(eps)]
        for k in keys:
            vals = [self.rmse(*k, e) for e in eps]
            lines.append(f"| {_FIGURE_WORDS.get(k[0], k[0])} | {_dataset_words(k[1])} | {k[2]} | "
                         + " | ".join(f"{v:.4g}" for v in vals) + " |")
        lines += ["", self.guarantees(eps)]
        return "\n".join(lines)

    def guarantees(self, epsilons=None) -> str:
        """The line policy's guarantee on each domain size used, against eps/2-DP (compact lines)."""
        epsilons = sorted({r["epsilon"] for r in self.rows}) if epsilons is None else epsilons
        return guarantee_block(_line_policies(self.rows), epsilons, dp_epsilon=lambda e: e / 2)


def _line_policies(rows) -> dict:
    """``{label: Policy}``: the line policy on each domain size of the Blowfish rows."""
    sizes = sorted({int(r["domain"]) for r in rows if r["method"] not in ("Laplace", "DAWA")})
    return {f"Line on {n} values": Policy(Domain.ordinal("x", 0, n - 1), secrets.Line()) for n in sizes}


def _experiment(figure, data, methods, epsilons, repetitions, gen, bar, rows):
    for name, hist in data.items():
        policy = Policy(Domain.ordinal("x", 0, hist.size - 1), secrets.Line())
        for label in methods:
            mech = _method(label, policy)
            for eps in epsilons:
                errs = []
                for _ in range(repetitions):
                    est = mech(hist, eps, gen)
                    errs.append(float(np.mean((np.asarray(est, dtype=np.float64) - hist) ** 2)))
                    bar.advance()
                rows.append({
                    "figure": figure,
                    "dataset": name,
                    "method": label,
                    "epsilon": eps,
                    "mse": float(np.mean(errs)),
                    "rmse": float(np.sqrt(np.mean(errs))),
                    "mse_std": float(np.std(errs, ddof=1)) if repetitions > 1 else 0.0,
                    "repetitions": repetitions,
                    "domain": hist.size,
                    "records": int(hist.sum()),
                })


def run(
    out_dir: str | None = None,
    *,
    data_dir: str | None = None,
    data: dict[str, np.ndarray] | None = None,
    epsilons=EPSILONS,
    repetitions: int = 5,
    figures=("fig4", "fig5"),
    seed: int | None = 2015,
    progress: bool | None = None,
    trials: int | None = None,
) -> HistogramResult:
    """Run 001 Fig 4 and/or Fig 5; write ``histograms.csv`` and ``.png`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or None
        Folder for the CSV and PNG (created); None writes nothing.
    data_dir : str, optional
        Folder with the DPBench ``.npy`` files (default: :func:`default_data_dir`).
    data : dict of name -> histogram, optional
        Use these histograms instead (Fig 5 uses the first half of
        ``data["INCOME"]`` if present, else of the first one).
    epsilons : sequence of float
    repetitions : int
        Releases per (dataset, method, epsilon); the mean squared error is their mean.
        (``trials`` is a deprecated alias.)
    figures : subset of {"fig4", "fig5"}
    seed : int or None
        Seeded generator for a reproducible figure; None: secure.
    """
    if data is None:
        data_dir = data_dir or default_data_dir()
        if data_dir is None:
            raise FileNotFoundError(f"no DPBench data folder: pass data_dir (--data) or set {ENV_VAR} (the folder "
                                    f"holding {subdir(1)}/)")
        data = load_dpbench(data_dir)
    if trials is not None:
        warnings.warn("trials is deprecated: use repetitions", DeprecationWarning, stacklevel=2)
        repetitions = trials
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ValueError(f"repetitions must be an integer >= 1, got {repetitions!r}")
    bad = set(figures) - {"fig4", "fig5"}
    if bad:
        raise ValueError(f"figures must be a subset of ('fig4', 'fig5'), got {sorted(bad)}")
    gen = Generator(seed=seed)
    half_name = "INCOME" if "INCOME" in data else next(iter(data))
    half = {f"{half_name}/2": np.ascontiguousarray(data[half_name][: data[half_name].size // 2])}
    total = repetitions * len(epsilons) * (
        ("fig4" in figures) * len(data) * len(FIG4_METHODS) + ("fig5" in figures) * len(FIG5_METHODS)
    )
    rows: list[dict] = []
    with Progress(total, "histograms", enabled=progress) as bar:
        if "fig4" in figures:
            _experiment("fig4", data, FIG4_METHODS, epsilons, repetitions, gen, bar, rows)
        if "fig5" in figures:
            _experiment("fig5", half, FIG5_METHODS, epsilons, repetitions, gen, bar, rows)

    csv_path, png_path = write_outputs(rows, out_dir, "histograms", lambda path: plot(rows, path))
    return HistogramResult(rows, csv_path, png_path)


#: The report's figures, in words (the rows say "fig4" and "fig5").
_FIGURE_WORDS = {"fig4": "Figure 4", "fig5": "Figure 5"}


def _dataset_words(name: str) -> str:
    """A data set's name for a reader: "INCOME/2" is the first half of INCOME."""
    return f"{name[:-2]}, first half" if name.endswith("/2") else name


def plot(rows: list[dict], path: str) -> None:
    """Write the figure of :func:`figure` to ``path``."""
    fig = figure(rows)
    import matplotlib.pyplot as plt  # there: figure() has imported it

    try:
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)


def figure(rows: list[dict]):
    """One panel per (figure, dataset): log RMSE (in records) against log epsilon, one line per method.
    Returned open (the caller closes it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib: pip install 'blowfish-privacy[plot]'") from exc
    panels = list(dict.fromkeys((r["figure"], r["dataset"]) for r in rows))
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols, 3.0 * nrows), squeeze=False)
    styles = {"Laplace": ("--", "o"), "DAWA": ("--", "s"), "Transformed+Laplace": ("-", "^"),
              "DAWA+Transformed": ("-", "D"), "Matching+Transformed": ("-", "v")}
    for ax, (figname, dataset) in zip(axes.flat, panels):
        sub = [r for r in rows if r["figure"] == figname and r["dataset"] == dataset]
        for label in dict.fromkeys(r["method"] for r in sub):
            pts = sorted((r["epsilon"], float(np.sqrt(r["mse"]))) for r in sub if r["method"] == label)
            ls, mk = styles.get(label, ("-", "o"))
            ax.plot(*zip(*pts), ls, marker=mk, ms=4, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        # the epsilons run as plain numbers ("0.001", not "10^-3")
        epsilons = sorted({r["epsilon"] for r in sub})
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons], minor=False)
        ax.set_xticks([], minor=True)
        size = sub[0].get("domain")
        ax.set_title(f"{_dataset_words(dataset)}" + (f" ({size} values)" if size else "")
                     + f"\n{_FIGURE_WORDS.get(figname, figname)} of the data-dependent Blowfish report", fontsize=8)
        ax.set_xlabel("epsilon (log scale)", fontsize=8)
        ax.set_ylabel("root mean squared error\nper count (records, log scale)", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    bottom = 0.0
    policies = _line_policies(rows)
    if policies:
        eps = min(r["epsilon"] for r in rows)
        text = (f"What the gains cost at eps {eps:g} (bounds e^(eps d_G), d_G = |x - y|, "
                "equation 9 of the Blowfish paper; at eps e raise "
                f"them to the power e/{eps:g}):\n" + caption_text(policies, eps, dp_epsilon=lambda e: e / 2))
        fig.set_figheight(fig.get_figheight() + 0.13 * (text.count("\n") + 1))
        bottom = caption_box(fig, text)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, bbox_to_anchor=(0.5, bottom))
    fig.suptitle("Identity workload under the line policy: (eps, Line)-Blowfish (solid) vs eps/2-DP (dashed)", fontsize=10)
    fig.tight_layout(rect=(0, bottom + 0.05, 1, 0.96))
    return fig


#: The example shown by ``blowfish bench NAME --help``.
EXAMPLE = "blowfish bench histograms --data dpbench_1d --out hist --repetitions 2"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The experiment's options (shared with ``blowfish bench histograms``)."""
    add_common_arguments(ap, out="histograms", repetitions=5, epsilons=EPSILONS)
    ap.add_argument("--data", default=None, metavar="DIR",
                    help=f"folder with the DPBench files NAME.n4096.npy (default: ${ENV_VAR}/{subdir(1)})")
    ap.add_argument("--figures", nargs="+", default=["fig4", "fig5"], choices=["fig4", "fig5"],
                    help="Figure 4 of the data-dependent Blowfish report (seven data sets) and/or Figure 5 "
                         "(half of INCOME, with Matching) (default: both)")


def run_from_args(args) -> HistogramResult:
    """Run with parsed options, print the table and what was written."""
    data_dir = args.data or default_data_dir()
    if data_dir is None:
        raise SystemExit(f"histograms needs --data DIR (the folder of the DPBench NAME.n4096.npy files) or "
                         f"${ENV_VAR} (the folder holding {subdir(1)}/)")
    if not os.path.isdir(data_dir):
        raise SystemExit(f"--data: {data_dir!r} is not a folder")
    epsilons = tuple(args.epsilons or EPSILONS)
    reps = args.repetitions or 5
    announce("histograms (Figures 4 and 5 of the data-dependent Blowfish report): "
             f"{len(epsilons)} epsilons x {reps} repetitions on the DPBench data in "
             f"{data_dir}")
    res = run(out_dir(args), data_dir=data_dir, epsilons=epsilons, repetitions=reps, figures=tuple(args.figures),
              seed=None if args.secure else 2015, progress=progress(args))
    print(res.table())
    report_written(res.csv_path, res.png_path)
    return res


_EXAMPLE = "example: python -m blowfish_privacy.experiments.histograms --data dpbench_1d --repetitions 2"


def main(argv=None) -> None:
    """Run the experiment from the command line (``--help`` lists the options)."""
    command_line("histograms", __doc__, _EXAMPLE, add_arguments, run_from_args, argv)


if __name__ == "__main__":
    main()
