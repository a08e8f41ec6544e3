"""The DPBench protocol (Hay et al., SIGMOD 2016) in 1-D and 2-D, DP and Blowfish.

Data shapes from the DPBench files (1-D: ``dpbench_1d/*.n4096.npy``,
2-D: ``dpbench_2d/*_256_256.npy``) are normalised to a distribution and
re-sampled to a *scale* (number of records) by drawing records from it, as
DPBench does; domains are made smaller by merging adjacent cells.  The
seeding of that data sampling is deterministic (a seed from the base seed,
dataset, scale, domain and repetition, so every algorithm sees the same
sample); the privacy noise always comes from a secure
:class:`~blowfish_privacy.Generator`.

Workloads: ``identity`` (every cell), ``prefix`` (1-D: every prefix [0, j];
2-D: every quadrant [0, i] x [0, j]), ``random`` (2000 random ranges or
rectangles, DPBench's default; drawn with the data seed) and, in 1-D,
``allranges`` (every [i, j], computed from prefix sums of the error in
O(|T|^2) memory-light blocks).  Metric: DPBench's scaled average per-query
L1 error, mean |answer - truth| / scale, and the mean squared error.

Algorithms (``--algorithms``; ``--list`` prints them with their policies)
    1-D DP: identity, uniform (n / |T| from the public n: free under
    bounded DP), h (DPBench's H: binary tree, least squares), hierarchical
    (fan-out 16, least squares), hb (Qardaji, Yang, Li VLDB 2013: the
    fan-out from the domain size; 16 at 4096), mwem (Hardt, Ligett,
    McSherry: the workload as query set, 10 rounds, 100 update passes over the
    measurements, report-noisy-max with discrete Laplace), privelet, dawa, greedyh
    (DAWA's greedy hierarchy on the full domain), ahp (ratio 0.85, eta 0.35).
    1-D Blowfish: ordered (line), oh_theta4 / oh_theta64 (ordered
    hierarchical under DistanceThreshold(theta), theta in bins of the
    benchmark domain), transformed_line, dawa_transformed_line, matching_transformed_line.
    2-D DP: identity (Laplace, sensitivity 2), uniform, quadtree (f = 2,
    square nodes), hb2d (tensor product of two fan-out-16 trees), hb2d_qyl
    (the same with the fan-out chosen by QYL's model, 12 at 128 x 128),
    ugrid and agrid (Qardaji, Yang, Li ICDE 2013; grid sizes from the
    public n), dawa_hilbert (DAWA over the Hilbert order), ahp.  2-D Blowfish
    under the grid policy DistanceThreshold(1) (L1): quadtree_grid,
    hb2d_grid, transformed_grid (comb spanning tree), dawa_transformed_grid
    (DAWA partition of the Hilbert order, merged-graph bucket counts); under the weaker
    row-line policy (secrets move along a row only): axis_cumulative_rowline.
    All from :mod:`blowfish_privacy.mechanisms` (2-D ones in
    :mod:`blowfish_privacy.mechanisms.grids.grid`, the DPBench-only baselines in
    :mod:`blowfish_privacy.baselines.hb`).

Expected-error check (``--check-expected``, :func:`check_expected`)
    For the data-independent linear 1-D baselines (identity, h,
    hierarchical, hb; greedyh after its least squares, |T| a power of two)
    the plan carries the exact mean squared error of a uniformly random
    range (all |T|(|T|+1)/2 ranges) of the pre-inference release; the
    check measures that error on ``--repetitions`` releases (the
    pre-inference cumulative counts, ``keep_noisy``) and reports measured /
    expected with the standard error of the mean.  In 2-D
    (identity, hb2d, hb2d_qyl, ugrid) the exact expected MSE of the random
    rectangles, after inference, is computed by :mod:`._dpbench_expected`.

Output: ``dpbench_1d.csv`` / ``dpbench_2d.csv`` (one row per dataset,
scale, domain, workload, epsilon, algorithm, repetition; rows are appended
as runs finish, and a run whose rows are all present is skipped, so an
interrupted benchmark resumes), ``dpbench_1d.png`` / ``dpbench_2d.png`` and
a table on the console.

Run:  python -m blowfish_privacy.experiments.dpbench --dims 1 --out DIR
      blowfish bench dpbench --dims 2 --out DIR

The algorithms live in :mod:`._dpbench_algorithms`; data loading, sampling
and the workload errors in :mod:`._dpbench_data`; the expected-error checks
in :mod:`._dpbench_expected`; the console table and the plot in
:mod:`._dpbench_tables`.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import Generator
from .._progress import progress_bar
from ._arguments import budget, comma_list, whole
from ._dpbench_algorithms import ALGORITHMS, algorithm_names
from ._dpbench_data import (
    ALLRANGES_LIMIT,
    RANGE_SAMPLERS,
    SYNTHETIC,
    DataMissing,
    available_datasets,
    data_seed,
    default_data_dir,
    load_shape,
    merge,
    random_ranges,
    sample,
    subdir,
    workload_errors,
)
from ._dpbench_expected import EXPECTED_FIELDS, check_expected, check_expected_2d, expected_table
from ._dpbench_reference import (
    REFERENCE_DOMAIN,
    REFERENCE_NAMES,
    TOLERANCE,
    compare,
    read_reference,
    reference_table,
)
from ._dpbench_report import headline_markdown
from ._dpbench_tables import mean_by, plot_rows, summary_table

__all__ = ["add_arguments", "run_from_args", "run", "ALGORITHMS", "FIELDS", "load_shape", "workload_errors"]

FIELDS = ["dataset", "dims", "scale", "domain", "workload", "ranges", "neighbours", "epsilon", "algorithm", "policy",
          "privacy", "repetition", "scaled_l1", "mse", "n_queries", "seconds"]
KEY = ("dataset", "scale", "domain", "workload", "ranges", "neighbours", "epsilon", "algorithm", "repetition")

DEFAULTS = {
    1: {"scales": (1_000, 100_000, 10_000_000), "domains": (4096,), "epsilons": (0.01, 0.1, 1.0)},
    2: {"scales": (1_000, 100_000, 10_000_000), "domains": (128,), "epsilons": (0.01, 0.1, 1.0)},
}
WORKLOADS = {1: ("identity", "prefix", "random", "allranges"), 2: ("identity", "prefix", "random")}
RANDOM_QUERIES = 2000
#: Neighbour notions of the DP baselines: bounded (one record changes its value: this library's DP) or
#: unbounded (one record added or removed: DPBench's).  An epsilon-DP mechanism under unbounded
#: neighbours is 2 epsilon-DP under bounded ones (a change is a removal then an addition), so the
#: unbounded run gives each DP baseline twice the bounded budget; Blowfish rows are bounded by definition.
NEIGHBOURS = ("bounded", "unbounded")


def plan_epsilon(alg, epsilon: float, neighbours: str) -> float:
    """The epsilon a bounded-DP plan gets so that ``alg`` meets ``epsilon`` under ``neighbours``."""
    return 2.0 * epsilon if neighbours == "unbounded" and alg.privacy == "DP" else epsilon


NEIGHBOURS_NOTE = {
    "bounded": "neighbours: bounded (one record changes its value), the DP baselines at epsilon",
    "unbounded": ("neighbours: unbounded (DPBench's: one record added or removed); the DP baselines run at "
                  "2 x epsilon of their bounded form (a bounded change is a removal and an addition). That is "
                  "exactly an epsilon add/remove mechanism where the bounded sensitivity is twice the "
                  "add/remove one (histograms, trees, partitions); where both are 1 (a single count, MWEM's "
                  "measurements, report-noisy-max scores) it is twice the budget, and baselines that read the "
                  "public total n are not add/remove DP at all: this mode flatters the DP baselines (never the "
                  "Blowfish gains); Blowfish rows stay bounded"),
}

#: Largest number of records a run samples (the data are drawn record by record).
MAX_SCALE = 10**9

#: Largest 1-D domain for the all-ranges workload (|T|(|T|+1)/2 queries, done in blocks).


# ---------------------------------------------------------------------------
# CSV (resumable)


def _key(row) -> tuple:
    return (str(row["dataset"]), int(row["scale"]), int(row["domain"]), str(row["workload"]), str(row["ranges"]),
            str(row["neighbours"]), float(row["epsilon"]), str(row["algorithm"]), int(row["repetition"]))


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as fh:
        rd = csv.DictReader(fh)
        if rd.fieldnames != FIELDS:
            raise ValueError(f"{path.name} exists with other columns; use another --out or remove it")
        return list(rd)


class _Appender:
    def __init__(self, path: Path):
        self.path = path
        new = not path.is_file() or path.stat().st_size == 0
        self.fh = open(path, "a", newline="")
        self.w = csv.DictWriter(self.fh, fieldnames=FIELDS)
        if new:
            self.w.writeheader()

    def write(self, rows):
        self.w.writerows(rows)
        self.fh.flush()

    def close(self):
        self.fh.close()


# ---------------------------------------------------------------------------
# the run


@dataclass
class BenchResult:
    rows: list[dict]          # every row of the CSV (old and new)
    new_rows: int
    skipped_runs: int
    csv_path: Path | None
    png_path: Path | None
    table: str
    markdown_path: Path | None = None  # the headline tables (docs/experiments/dpbench.md)
    algorithm_seconds: float = 0.0     # the algorithms' own time (plan.measure) in this run's new rows
    wall_seconds: float = 0.0          # the whole run: sampling, algorithms, errors, CSV, table, figure


def run(*, dims: int = 1, data_dir=None, datasets=None, scales=None, domains=None, epsilons=None,
        algorithms=None, workloads=None, repetitions: int = 5, out_dir=None, seed: int = 2016,
        queries: int = RANDOM_QUERIES, progress: bool | None = None, plot: bool = True,
        stream=None, ranges: str = "dpbench", neighbours: str = "bounded", summary: bool = True) -> BenchResult:
    """Run the protocol; see the module docstring.  Returns every row (with those already in the CSV)."""
    stream = stream if stream is not None else sys.stdout
    wall0 = time.perf_counter()
    algo_secs = 0.0
    if dims not in (1, 2):
        raise ValueError(f"dims must be 1 or 2, got {dims!r}")
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    if datasets is None:
        datasets = available_datasets(data_dir, dims)
        if not datasets:
            raise DataMissing(
                f"no DPBench {dims}-D data ({subdir(dims)}/) found: pass --data DIR (the folder holding "
                f"{subdir(dims)}/), set BLOWFISH_DATA, or use --datasets {SYNTHETIC}")
    scales = tuple(DEFAULTS[dims]["scales"] if scales is None else scales)
    domains = tuple(DEFAULTS[dims]["domains"] if domains is None else domains)
    epsilons = tuple(DEFAULTS[dims]["epsilons"] if epsilons is None else epsilons)
    algorithms = tuple(algorithm_names(dims) if algorithms is None else algorithms)
    workloads = tuple(WORKLOADS[dims] if workloads is None else workloads)
    for a in algorithms:
        if (dims, a) not in ALGORITHMS:
            raise ValueError(f"unknown {dims}-D algorithm {a!r}; available: {', '.join(algorithm_names(dims))}")
    for w in workloads:
        if w not in WORKLOADS[dims]:
            raise ValueError(f"unknown {dims}-D workload {w!r}; available: {', '.join(WORKLOADS[dims])}")
    full = 4096 if dims == 1 else 256
    for d in domains:
        if d < 2 or full % d:
            raise ValueError(f"domain {d}: must divide {full} ({'256..4096' if dims == 1 else '32..256'} per axis)")
    for s in scales:
        if not float(s).is_integer() or not 1 <= s <= MAX_SCALE:
            raise ValueError(f"scales must be whole record counts in [1, {MAX_SCALE:.0e}], got {s}")
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
        raise ValueError(f"queries must be a positive integer, got {queries!r}")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    if ranges not in RANGE_SAMPLERS:
        raise ValueError(f"ranges must be one of {', '.join(RANGE_SAMPLERS)}, got {ranges!r}")
    if neighbours not in NEIGHBOURS:
        raise ValueError(f"neighbours must be one of {', '.join(NEIGHBOURS)}, got {neighbours!r}")
    shapes = {name: load_shape(name, dims, data_dir) for name in datasets}  # refuse before running anything

    csv_path = png_path = None
    done: set = set()
    old: list[dict] = []
    app = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        csv_path = out / f"dpbench_{dims}d.csv"
        old = read_rows(csv_path)
        done = {_key(r) for r in old}
        app = _Appender(csv_path)

    def wl_for(domain):
        return [w for w in workloads if not (w == "allranges" and (dims == 2 or domain > ALLRANGES_LIMIT))]

    jobs = [(ds, sc, dm, ep, al, rep) for ds in datasets for sc in scales for dm in domains
            for rep in range(repetitions) for ep in epsilons for al in algorithms]
    todo, skipped = [], 0
    for j in jobs:
        ds, sc, dm, ep, al, rep = j
        keys = {(ds, int(sc), int(dm), w, ranges, neighbours, float(ep), al, rep) for w in wl_for(dm)}
        if keys <= done:
            skipped += 1
        else:
            todo.append(j)
    new_rows: list[dict] = []
    plans: dict = {}
    gen = Generator()  # secure: the privacy noise is never seeded
    cache_key = None
    try:
        with progress_bar(len(todo), f"dpbench {dims}-D", enabled=progress) as bar:
            for ds, sc, dm, ep, al, rep in todo:
                if cache_key != (ds, sc, dm, rep):
                    cache_key = (ds, sc, dm, rep)
                    rng = np.random.default_rng(data_seed(seed, ds, sc, dm, rep))
                    truth = sample(merge(shapes[ds], dm), sc, rng)
                    qranges = random_ranges(dm, dims, queries, rng, ranges)
                alg = ALGORITHMS[(dims, al)]
                pk = (al, dm, ep)
                t0 = time.perf_counter()   # the algorithm's time: its plan (workload-aware: per draw) and measure
                if alg.uses_workload:   # the workload is public: planned again for each draw of the ranges
                    plan = alg.plan(dm, plan_epsilon(alg, ep, neighbours), workload=qranges)
                else:
                    if pk not in plans:
                        plans[pk] = alg.plan(dm, plan_epsilon(alg, ep, neighbours))
                    plan = plans[pk]
                rel = plan.measure(truth, gen)
                est = np.asarray(rel.histogram if hasattr(rel, "histogram") else rel.values, dtype=np.float64)
                secs = time.perf_counter() - t0
                algo_secs += secs
                errs = workload_errors(est.reshape(truth.shape), truth, wl_for(dm), qranges)
                rows = []
                for w, (l1, mse, nq) in errs.items():
                    if (ds, int(sc), int(dm), w, ranges, neighbours, float(ep), al, rep) in done:
                        continue
                    rows.append({"dataset": ds, "dims": dims, "scale": int(sc), "domain": int(dm), "workload": w,
                                 "ranges": ranges, "neighbours": neighbours,
                                 "epsilon": float(ep), "algorithm": al, "policy": alg.policy,
                                 "privacy": alg.privacy, "repetition": rep, "scaled_l1": l1 / float(sc),
                                 "mse": mse, "n_queries": nq, "seconds": round(secs, 6)})
                if app is not None:
                    app.write(rows)
                new_rows += rows
                bar.advance()
    finally:
        if app is not None:
            app.close()
    # the table, figure and .md show this run's protocol only (the CSV may hold others)
    all_rows = [_typed(r) for r in old if r["ranges"] == ranges and r["neighbours"] == neighbours] + new_rows
    shown = "random" if "random" in workloads else workloads[0]  # the workload of the table, figure and .md
    if not summary:  # an internal run (the reference check): the rows only
        return BenchResult(all_rows, len(new_rows), skipped, csv_path, None, "", None, algo_secs,
                           time.perf_counter() - wall0)
    table = summary_table(all_rows, dims, shown)
    if out_dir is not None and plot and all_rows:
        try:
            png_path = Path(out_dir) / f"dpbench_{dims}d.png"
            plot_rows(all_rows, dims, png_path, shown)
        except ImportError:
            print("matplotlib is not installed: wrote the CSV only", file=sys.stderr)
            png_path = None
    md_path = None
    if out_dir is not None and all_rows:
        md_path = Path(out_dir) / f"dpbench_{dims}d.md"
        md_path.write_text(headline_markdown(all_rows, dims, workload=shown))
    return BenchResult(all_rows, len(new_rows), skipped, csv_path, png_path, table, md_path, algo_secs,
                       time.perf_counter() - wall0)


def _typed(r: dict) -> dict:
    out = dict(r)
    for k in ("dims", "scale", "domain", "repetition", "n_queries"):
        out[k] = int(out[k])
    for k in ("epsilon", "scaled_l1", "mse", "seconds"):
        out[k] = float(out[k])
    return out


# ---------------------------------------------------------------------------
# reference check


def check_reference(reference_path, *, dims=(1, 2), scales=None, algorithms=None, repetitions: int = 3,
                    data_dir=None, seed: int = 2016, out_dir=None, progress: bool | None = None,
                    tolerance: float = TOLERANCE, stream=None) -> list[dict]:
    """Run our DP baselines under DPBench's protocol on the reference's data sets and compare (see
    :mod:`._dpbench_reference`).  Returns one dict per (dims, algorithm, scale, epsilon) with ``ratio``
    (ours / reference, geometric mean over data sets) and ``pass``.

    ``algorithms`` are reference names (``h``, ``dawa``, ``hb2d``, ...); by default every one the file
    names for which this library has the algorithm.  ``out_dir`` keeps the runs' CSV (resumable).
    """
    reference = read_reference(reference_path)
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ValueError(f"repetitions must be a positive integer, got {repetitions!r}")
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    results: list[dict] = []
    for d in dims:
        ref = [r for r in reference if r.dims == d]
        names = REFERENCE_NAMES[d]
        wanted = sorted({r.algorithm for r in ref}) if algorithms is None else list(algorithms)
        unknown = [a for a in wanted if a not in names or (d, names[a]) not in ALGORITHMS]
        if algorithms is not None and unknown:
            raise ValueError(f"no {d}-D algorithm for reference name(s) {', '.join(unknown)}; available: "
                             f"{', '.join(a for a in names if (d, names[a]) in ALGORITHMS)}")
        wanted = [a for a in wanted if a not in unknown]
        sc = sorted({r.scale for r in ref}) if scales is None else [int(x) for x in scales]
        ref = [r for r in ref if r.algorithm in wanted and r.scale in sc]
        if not ref:
            continue
        found = set(available_datasets(data_dir, d))
        datasets = sorted({r.dataset for r in ref})
        absent = [x for x in datasets if x not in found]
        if absent:
            raise DataMissing(f"the reference names {d}-D data set(s) not found in {subdir(d)}/: "
                              f"{', '.join(absent)}; pass --data DIR")
        ours: dict = {}
        for eps in sorted({r.epsilon for r in ref}):
            res = run(dims=d, data_dir=data_dir, datasets=datasets, scales=sc, domains=(REFERENCE_DOMAIN[d],),
                      epsilons=(eps,), algorithms=[names[a] for a in wanted], workloads=("random",),
                      repetitions=repetitions, out_dir=out_dir, seed=seed, progress=progress, plot=False,
                      ranges="dpbench", neighbours="bounded", summary=False)
            back = {names[a]: a for a in wanted}
            per = mean_by([r for r in res.rows if r["workload"] == "random" and r["epsilon"] == eps],
                           ("dataset", "scale", "algorithm"))
            for (ds, s, a), v in per.items():
                if a in back:
                    ours[(d, ds, int(s), float(eps), back[a])] = v
        results += compare(ref, ours, tolerance)
    return results


# ---------------------------------------------------------------------------
# command line


def _names(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``blowfish bench dpbench`` (and of ``python -m blowfish_privacy.experiments.dpbench``)."""
    parser.add_argument("--dims", type=whole(1, 2, what="1-D or 2-D"), default=None, metavar="{1,2}",
                        help="1-D or 2-D benchmark (default 1; --check-reference: both)")
    parser.add_argument("--data", default=None,
                        help="folder holding dpbench_1d/ and dpbench_2d/ (default: $BLOWFISH_DATA)")
    parser.add_argument("--datasets", type=_names, default=None,
                        help=f"comma-separated data set names (default: all found; {SYNTHETIC} is a built-in shape)")
    parser.add_argument("--scales", type=comma_list(whole(1, MAX_SCALE, what="records")), default=None,
                        help="comma-separated record counts, e.g. 1e3,1e5,1e7")
    parser.add_argument("--domains", type=comma_list(whole(2, 4096, what="cells per axis")), default=None,
                        help="cells per axis after merging: 1-D 256..4096 (default 4096), 2-D 32..256 (default 128)")
    parser.add_argument("--epsilons", type=comma_list(budget), default=None,
                        help="comma-separated (default 0.01,0.1,1)")
    parser.add_argument("--algorithms", type=_names, default=None, help="comma-separated (default: all; see --list)")
    parser.add_argument("--workloads", type=_names, default=None,
                        help="identity,prefix,random,allranges (1-D) or identity,prefix,random (2-D); default all")
    parser.add_argument("--repetitions", type=whole(1, what="runs per setting"), default=None,
                        help="runs per setting (default 5)")
    parser.add_argument("--queries", type=whole(1, what="random ranges"), default=RANDOM_QUERIES,
                        help="random ranges per run (default 2000)")
    parser.add_argument("--seed", type=whole(0, what="a seed"), default=2016, help="seed of the data sampling only (never the noise)")
    parser.add_argument("--out", default=None, help="folder for dpbench_<d>d.csv, .png and .md (the headline tables); "
                        "resumes from the CSV")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--no-progress", action="store_true", help=argparse.SUPPRESS)  # --quiet's old name
    parser.add_argument("--list", action="store_true", help="list the algorithms and their policies, then exit")
    parser.add_argument("--ranges", choices=RANGE_SAMPLERS, default="dpbench",
                        help="how random ranges are drawn: dpbench (a length uniform in 1..k, then a start where it "
                             "fits; the default, as DPBench) or uniform-endpoints (two uniform endpoints)")
    parser.add_argument("--neighbours", choices=NEIGHBOURS, default="bounded",
                        help="DP baselines' neighbour notion: bounded (one record changes; default) or unbounded "
                             "(DPBench's add/remove; the DP baselines then run at 2 x epsilon, stated in the output)")
    parser.add_argument("--check-reference", nargs="?", const="", default=None, metavar="REFERENCE_CSV",
                        help="run every DP baseline under DPBench's protocol (full domain, dpbench ranges, 2000 "
                             "queries) on the data sets of the reference file and print ours / reference per "
                             "algorithm and scale; exit 1 if any is above 1.15 (default file: "
                             "dpbench_reference/reference_scaled_l1.csv in the --data folder; --repetitions "
                             "default 3 here)")
    parser.add_argument("--check-expected", action="store_true",
                        help="1-D: compare the measured all-range MSE of identity, h, hierarchical, hb "
                             "(pre-inference) and greedyh with their plans' exact expected error, at the first domain "
                             "(default 4096), epsilon (default 0.1) and scale (default 1e5); 2-D: the random-"
                             "rectangle MSE of identity, hb2d, hb2d_qyl and ugrid (default domain 64); with "
                             "--repetitions releases each (use 1000)")


def run_from_args(args) -> int:
    """Run from parsed :func:`add_arguments` options; returns the exit status."""
    if args.no_progress:  # deprecated: still taken, not listed
        print("dpbench: --no-progress is deprecated: use --quiet (as every blowfish command)", file=sys.stderr)
        args.quiet = True
    if args.check_reference is not None:
        return _run_check_reference(args)
    if args.dims is None:
        args.dims = 1
    if args.repetitions is None:
        args.repetitions = 5
    if args.list:
        for (d, n), a in ALGORITHMS.items():
            if d == args.dims:
                print(f"{d}-D  {n:26s} {a.privacy:9s} {a.policy}")
        return 0
    if getattr(args, "check_expected", False):
        return _run_check_expected(args)
    try:
        res = run(dims=args.dims, data_dir=args.data, datasets=args.datasets, scales=args.scales,
                  domains=args.domains, epsilons=args.epsilons, algorithms=args.algorithms,
                  workloads=args.workloads, repetitions=args.repetitions, out_dir=args.out, seed=args.seed,
                  queries=args.queries, progress=False if args.quiet else None, ranges=args.ranges,
                  neighbours=args.neighbours)
    except DataMissing as exc:
        print(f"blowfish bench dpbench: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"blowfish bench dpbench: {exc}", file=sys.stderr)
        return 2
    print(res.table)
    print(f"ranges: {args.ranges}; {NEIGHBOURS_NOTE[args.neighbours]}")
    if res.new_rows:
        print(f"time: the algorithms {res.algorithm_seconds:.1f} s of the run's {res.wall_seconds:.1f} s "
              f"({res.wall_seconds / max(res.algorithm_seconds, 1e-9):.2f}x)")
    if res.skipped_runs:
        print(f"{res.skipped_runs} run(s) already in the CSV were skipped")
    if res.csv_path is not None:
        print(f"wrote {res.new_rows} new row(s) to {res.csv_path.name}"
              + (f", {res.png_path.name}" if res.png_path else "")
              + (f" and {res.markdown_path.name} (the headline tables)" if res.markdown_path else "")
              + f" in {args.out}")
    return 0


def _run_check_reference(args) -> int:
    fixed = [flag for flag, given in (
        ("--ranges", args.ranges != "dpbench"), ("--neighbours", args.neighbours != "bounded"),
        ("--domains", args.domains is not None), ("--queries", args.queries != RANDOM_QUERIES),
        ("--epsilons", args.epsilons is not None), ("--workloads", args.workloads is not None),
        ("--datasets", args.datasets is not None)) if given]
    if fixed:
        print(f"blowfish bench dpbench: --check-reference runs DPBench's own protocol (the reference file's data sets, "
              f"scales and epsilons, full domain, dpbench ranges, {RANDOM_QUERIES} queries, bounded neighbours): "
              f"{', '.join(fixed)} cannot change it; drop {'it' if len(fixed) == 1 else 'them'} (--dims, --scales, "
              "--algorithms, --repetitions and --seed select within it)", file=sys.stderr)
        return 2
    data_dir = Path(args.data) if args.data is not None else default_data_dir()
    path = args.check_reference
    if not path:
        if data_dir is None:
            print("blowfish bench dpbench: --check-reference needs the reference file: pass its path or --data DIR "
                  "(the folder holding dpbench_reference/)", file=sys.stderr)
            return 2
        path = Path(data_dir) / "dpbench_reference" / "reference_scaled_l1.csv"
    try:
        rows = check_reference(path, dims=(1, 2) if args.dims is None else (args.dims,), scales=args.scales,
                               algorithms=args.algorithms, repetitions=3 if args.repetitions is None else args.repetitions,
                               data_dir=data_dir, seed=args.seed, out_dir=args.out,
                               progress=False if args.quiet else None)
    except (DataMissing, ValueError, FileNotFoundError) as exc:
        print(f"blowfish bench dpbench: {exc}", file=sys.stderr)
        return 2
    if not rows:
        print("blowfish bench dpbench: the reference file has no row this check can run", file=sys.stderr)
        return 2
    print(reference_table(rows))
    failed = [f"{r['dims']}-D {r['algorithm']} at {r['scale']:.0e}" for r in rows if not r["pass"]]
    if args.out is not None:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "dpbench_reference_check.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote dpbench_reference_check.csv in {args.out}")
    if failed:
        print(f"weaker than the reference (ours / reference > {TOLERANCE:g}): {', '.join(failed)}")
        return 1
    print(f"every baseline within {TOLERANCE:g} x of the reference")
    return 0


def _run_check_expected(args) -> int:
    try:
        if args.dims == 2:
            rows = check_expected_2d(
                domain=(args.domains or [64])[0], epsilon=(args.epsilons or [0.1])[0],
                scale=(args.scales or [100_000])[0], repetitions=args.repetitions, algorithms=args.algorithms,
                dataset=(args.datasets or [SYNTHETIC])[0], data_dir=args.data, seed=args.seed,
                queries=args.queries, progress=False if args.quiet else None)
        else:
            rows = check_expected(
                domain=(args.domains or [4096])[0], epsilon=(args.epsilons or [0.1])[0],
                scale=(args.scales or [100_000])[0], repetitions=args.repetitions, algorithms=args.algorithms,
                dataset=(args.datasets or [SYNTHETIC])[0], data_dir=args.data, seed=args.seed,
                progress=False if args.quiet else None)
    except (DataMissing, ValueError) as exc:
        print(f"blowfish bench dpbench: {exc}", file=sys.stderr)
        return 2
    print(expected_table(rows, "random-rectangle MSE after inference" if args.dims == 2 else
                         "all-range MSE (pre-inference; greedyh after least squares)"))
    if args.out is not None:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        name = f"dpbench_expected_{args.dims}d.csv"
        with open(out / name, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=EXPECTED_FIELDS)
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {name} in {args.out}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m blowfish_privacy.experiments.dpbench",
                                description="The DPBench protocol (Hay et al. 2016) for DP and Blowfish mechanisms")
    add_arguments(p)
    return run_from_args(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
