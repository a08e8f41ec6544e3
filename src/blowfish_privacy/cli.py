"""The ``blowfish`` command: demo, release, explain, ledger, bench.

Errors in specs, data, budgets and ledgers are printed as one line
(``blowfish: error: ...``) with exit status 2; nothing is spent then.

What it prints lives in :mod:`._cli_text`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import tempfile
import textwrap
import time
from importlib import resources
from pathlib import Path

from . import __version__
from ._cli_text import print_explanation, print_guarantees, print_plan, print_summary, release_guarantee
from ._demo_figure import demo_comparison
from ._demo_output import DEMO_SPEC_WHERE, foreign_files
from .explain import explain
from .errors import (BudgetExceededError, DataError, LedgerError, MissingDependencyError, ParameterError, SpecError,
                     UnsupportedPolicyError)
from .release import Ledger, default_ledger_path, load_spec, parse_spec, run_spec
from .release.engines import ENGINES, engine_names, make_engine
from ._atomic import atomic_write
from .release.runner import exact_reason, export_results, plan_spec, run_disclosures

#: ``blowfish bench NAME``: the experiment modules, each exposing
#: ``add_arguments(parser)`` and ``run_from_args(args)`` (the same options as
#: ``python -m MODULE``).  A module that is not installed is not listed; a
#: new benchmark is one line here.
BENCHES = {
    "range-queries": ("blowfish_privacy.experiments.range_queries",
                      "Figure 2(b) of the Blowfish paper: range-query error of the ordered hierarchical mechanism vs "
                      "DP, UCI Adult"),
    "kmeans": ("blowfish_privacy.experiments.kmeans",
               "Figure 1 of the Blowfish paper / Figure 2 of Machanavajjhala and Kifer's CACM article: "
               "k-means objective ratios under Blowfish policies vs DP (quick by default, "
               "--full for the paper's setting)"),
    "histograms": ("blowfish_privacy.experiments.histograms",
                   "Figures 4 and 5 of the data-dependent Blowfish report: "
                   "data-dependent Blowfish histograms vs DP on DPBench (needs --data DIR)"),
    "dpbench": ("blowfish_privacy.experiments.dpbench", None),  # summary: the module's first docstring line
}


def _bench_modules() -> dict:
    """``{name: (module or None, summary, import error or None)}`` of the benchmarks that are installed."""
    out = {}
    for name, (modname, summary) in BENCHES.items():
        try:
            if importlib.util.find_spec(modname) is None:
                continue
        except ModuleNotFoundError:
            continue
        try:
            mod = importlib.import_module(modname)
            if not (callable(getattr(mod, "add_arguments", None)) and callable(getattr(mod, "run_from_args", None))):
                raise ImportError(f"{modname} does not define add_arguments(parser) and run_from_args(args)")
        except Exception as exc:  # a broken module must not break every other command
            out[name] = (None, summary or name, f"{type(exc).__name__}: {exc}")
            continue
        doc = (mod.__doc__ or "").strip().splitlines()
        out[name] = (mod, summary or (doc[0] if doc else name), None)
    return out


def _demo_spec_text() -> str:
    return resources.files("blowfish_privacy").joinpath("data", "demo.toml").read_text(encoding="utf-8")


#: Command-line options that set an engine's keyword options (registered per engine in ``ENGINES``): the
#: keyword (the option's ``dest``) and the option as the user types it.
ENGINE_OPTIONS = {"scheduler": "--scheduler", "workers": "--workers", "master": "--spark-master",
                  "conf": "--spark-conf"}


def _engine(args):
    entry = ENGINES[args.engine]
    given = {k: getattr(args, k) for k in ENGINE_OPTIONS if getattr(args, k, None) is not None}
    for key in given:
        if key not in entry.options:
            takers = " or ".join(e.name for e in ENGINES.values() if key in e.options)
            raise _UsageError(f"{ENGINE_OPTIONS[key]} applies only with --engine {takers}")
    if "conf" in given:
        given["conf"] = _spark_conf(given["conf"])
    return make_engine(args.engine, progress=not args.quiet, **given)


def _spark_conf(pairs: list) -> dict:
    """``--spark-conf key=value`` options as ``{key: value}`` (a later key wins); a pair without ``=`` is refused."""
    out = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise _UsageError(f"--spark-conf takes key=value (a Spark configuration setting), got {pair!r}")
        out[key.strip()] = value
    return out


class _UsageError(ValueError):
    pass


def _remaining_readonly(path, spec, new_ledger: bool = False):
    """Budget left for the spec's dataset, read without creating a ledger; refuses what the run would refuse
    from the ledger alone (a missing ledger, another total, policy or disclosure setting)."""
    p = Path(path) if path else default_ledger_path()
    if not p.exists():
        if path and not new_ledger:  # the real run would refuse it: say so now
            raise LedgerError(f"ledger {str(p)!r} does not exist; check the path, or create a new ledger with "
                              "--new-ledger (blowfish release) or blowfish ledger init PATH")
        return spec.total_epsilon, f"{p} (does not exist yet: full budget)"
    led = Ledger(p, create=False)
    reg = led.registration(spec.dataset_id)
    if reg is not None:
        if reg["total"] != spec.total_epsilon:
            raise LedgerError(f"dataset {spec.dataset_id!r}: the ledger {str(p)!r} records a total budget of "
                              f"{float(reg['total']):g}, the spec says {float(spec.total_epsilon):g}; a dataset's "
                              "total cannot change")
        if reg["policy"] is not None and reg["policy"] != spec.protection.key:
            raise LedgerError(f"dataset {spec.dataset_id!r}: the ledger {str(p)!r} protects it under policy "
                              f"{reg['policy_text']}; the spec declares {spec.protection.text}; a dataset's "
                              "protection policy is fixed when it is registered")
    left = led.remaining(spec.dataset_id)
    return (spec.total_epsilon if left is None else left), str(p)


def _disclosure_lines(spec, splan) -> list:
    out = [d.what for d in run_disclosures(spec)]
    out += [f"{r.name}: exact (public = true; {exact_reason(splan.plans[r.name])})" for r in spec.releases if r.public]
    return out


def cmd_plan(args) -> int:
    spec = load_spec(args.spec)
    splan = plan_spec(spec)
    remaining, where = _remaining_readonly(args.ledger, spec, getattr(args, "new_ledger", False))
    seeded = spec.seed is not None
    if getattr(args, "json", False):
        doc = splan.describe(remaining)
        doc["dataset_policy"] = spec.protection.text
        doc["disclosures"] = _disclosure_lines(spec, splan)
        if seeded:  # a seeded run is a test: it spends nothing
            doc["privacy"] = "seeded: NOT private (a test run; nothing would be spent)"
            doc["remaining_epsilon_after"] = float(remaining)
        print(json.dumps(doc, indent=2))
    else:
        if seeded:
            print(f"SEEDED TEST SPEC (run.seed = {spec.seed}): NOT private; a run needs --seeded-test, spends "
                  "nothing and is recorded in the ledger as a disclosure")
        print_plan(splan, remaining, where, seeded=seeded)
        print(f"  dataset policy: {spec.protection.text}; every release's policy protects each of its pairs, so "
              f"the budget composes under it")
        for line in _disclosure_lines(spec, splan):
            print(f"  disclosure (NOT private, recorded in the ledger; the dataset must allow disclosures): {line}")
    if not seeded and spec.epsilon_requested > remaining:  # the exit status a real run would end with
        raise BudgetExceededError(
            f"dataset {spec.dataset_id!r}: the releases need epsilon {float(spec.epsilon_requested):.6g} but only "
            f"{float(remaining):.6g} of {float(spec.total_epsilon):.6g} remains; the ledger would refuse this run "
            "(nothing read, nothing spent)")
    return 0


def cmd_release(args) -> int:
    if args.dry_run:
        return cmd_plan(args)
    spec = load_spec(args.spec)
    engine = _engine(args)
    out = Path(args.out) if args.out else Path(f"blowfish-{Path(args.spec).stem}")
    ledger = Ledger(args.ledger, create=args.new_ledger or args.ledger is None)
    result = run_spec(spec, engine=engine, ledger=ledger, out_dir=out, plots=not args.no_plots,
                      allow_seeded=args.seeded_test, overwrite=args.overwrite)
    return _report_release(spec, result, ledger, out, ledger.path)


def _report_release(spec, result, ledger, out, ledger_name) -> int:
    if spec.seed is not None:
        print(f"SEEDED TEST RUN: NOT private (seed {spec.seed}: anyone with it can remove the noise); "
              f"nothing spent, recorded as a disclosure in ledger {ledger_name}")
        print(f"wrote {len(result.releases)} test statistics of {spec.dataset_id!r} into {out}/")
    else:
        print(f"released {len(result.releases)} statistics of {spec.dataset_id!r} into {out}/ (ledger {ledger.path}, "
              f"run {result.run})")
    print_summary(result, ledger, spec.dataset_id)
    return 0


def cmd_demo(args) -> int:
    start = time.perf_counter()
    out = Path(args.out)
    text = _demo_spec_text()
    spec = parse_spec(text, DEMO_SPEC_WHERE)
    foreign = foreign_files(out, spec, text) if out.is_dir() and not args.overwrite else []
    if foreign:  # the user's own files (an edited spec.toml too) are never replaced silently
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise _UsageError(f"--out: the folder {str(out)!r} holds files the demo did not write ({shown}); the demo "
                          "replaces only its own files: choose another folder with --out DIR, or pass --overwrite")
    with tempfile.TemporaryDirectory(prefix="blowfish-demo-ledger-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.sqlite")
        result = run_spec(spec, engine=make_engine("local", progress=not args.quiet), ledger=ledger, out_dir=out,
                          plots=not args.no_plots, overwrite=True)
        atomic_write(out / "spec.toml", lambda fh: fh.write(text))  # never through a planted link
        print("blowfish demo: UCI Adult (48,842 people), three releases under one budget of "
              f"{float(spec.total_epsilon):g}, with a fresh ledger in a temporary folder")
        print_summary(result, ledger, spec.dataset_id)
        oh = next(d for d in result.releases if d["name"] == "capital-loss-cdf")
        dp = next(d for d in result.releases if d["name"] == "capital-loss-cdf-dp")
        ratio = dp["expected_error"]["rmse"] / oh["expected_error"]["rmse"]
        print(f"  at equal epsilon, the Blowfish CDF's expected range-count error (RMSE) is {ratio:.1f}x smaller "
              f"than the DP baseline's ({oh['expected_error']['rmse']:.3g} vs {dp['expected_error']['rmse']:.3g} "
              f"counts; {ratio ** 2:.1f}x in squared error)")
        extra = []
        if not args.no_plots:
            png = demo_comparison(out, spec, oh, dp)
            if png is not None:
                extra.append(png)
                print(f"  Blowfish and DP on one figure: {png}")
    print(f"wrote {len(result.files) + 1 + len(extra)} files into {out}/ in {time.perf_counter() - start:.1f} s; "
          f"run it yourself: blowfish release {out / 'spec.toml'}")
    return 0


def cmd_explain(args) -> int:
    spec = load_spec(args.spec)
    print_guarantees(spec)
    shown = set()
    for rel in spec.releases:
        key = (rel.policy_name, rel.attributes)
        if key in shown or not rel.policy_name:
            continue
        shown.add(key)
        print(f"== policy {rel.policy_name!r} on {list(rel.attributes)} "
              f"(release {rel.name!r}, epsilon {float(rel.epsilon):g}) ==")
        print_explanation(explain(rel.policy, float(rel.epsilon)))
        print()
    total = spec.epsilon_requested
    print(f"The spec asks for epsilon {float(total):g} of the dataset's total {float(spec.total_epsilon):g} "
          "(sequential composition, Theorem 4.1 of the Blowfish paper; parallel groups cost their largest epsilon, "
          "Theorem 4.2), all under "
          f"the dataset's policy {spec.protection.text}: every release's own policy protects each pair it "
          "protects, so each release is private under it and the ledger's total composes under that one policy.")
    splan = plan_spec(spec)
    print()
    print("== what each release will do (its plan: public inputs only) ==")
    for rel in spec.releases:
        plan = splan.plans[rel.name]
        print(f"{rel.name}: {plan.mechanism}. Guarantee: {plan.guarantee}. Citation: {plan.citation}.")
        table = release_guarantee(rel)
        if table is not None:
            print(f"  in numbers: {table.compact()}")
        for part in plan.parts:
            sens = "fixed per round" if part.sensitivity is None else part.sensitivity
            print(f"  noise on {part.name}: sensitivity {sens} ({part.how})")
    return 0


_LEDGER_ACTIONS = ("init", "show", "export")


def cmd_ledger(args) -> int:
    words = list(args.words)
    action = words.pop(0) if words and words[0] in _LEDGER_ACTIONS else "summary"
    if action == "export":
        if not words:
            raise _UsageError("blowfish ledger export RUN [PATH] --out DIR: give the run id (blowfish ledger show)")
        run = words.pop(0)
    if len(words) > 1:
        raise _UsageError(f"too many arguments: {args.words}; usage: blowfish ledger [init|show|export RUN] [PATH]")
    path = words[0] if words else None
    # a bare word (no folder, no extension) naming nothing is a mistyped action, not a ledger's path
    if action == "summary" and path and not os.path.lexists(path) and not Path(path).suffix and "/" not in path \
            and os.sep not in path:
        raise _UsageError(f"blowfish ledger: {path!r} is not an action ({', '.join(_LEDGER_ACTIONS)}) and no ledger "
                          "file of that name exists; usage: blowfish ledger [PATH] | init PATH | show [PATH] | "
                          "export RUN [PATH] (blowfish ledger --help)")
    if action == "init":
        if path is None:
            raise _UsageError("blowfish ledger init PATH [--spec SPEC]: give the path of the new ledger")
        spec = load_spec(args.spec) if args.spec else None  # refused before anything is created
        if Path(path).exists() and spec is None:
            raise _UsageError(f"{path!r} already exists; a ledger is initialised once")
        led = Ledger(path, create=True)
        if spec is None:
            print(f"created the budget ledger {led.path}")
            return 0
        led.register(spec.dataset_id, spec.total_epsilon, spec.protection,
                     allow_disclosures=bool(spec.allow_disclosures))
        print(f"registered dataset {spec.dataset_id!r} in the ledger {led.path}: total epsilon "
              f"{float(spec.total_epsilon):g} under policy {spec.protection.text}; disclosures "
              f"{'allowed' if spec.allow_disclosures else 'refused'}")
        return 0
    if args.spec:
        raise _UsageError("--spec applies only to blowfish ledger init")
    led = Ledger(path, create=False)
    if action == "export":
        if not args.out:
            raise _UsageError("blowfish ledger export needs --out DIR (a new or empty folder)")
        out = Path(args.out)
        if out.is_dir() and any(out.iterdir()):
            raise _UsageError(f"--out: {str(out)!r} is not empty; choose a new folder")
        stored = led.results(run)
        docs, files, _ = export_results(out, [(d, v, None) for d, v in stored], None, plots=False)
        print(f"exported {len(docs)} releases of run {docs[0].get('run', run)} from {led.path} into {out}/ "
              f"(JSON, and CSV or Parquet; the ledger keeps no plots)")
        return 0
    if action == "show":
        runs = led.runs()
        if args.json:
            print(json.dumps(runs, indent=2))
        else:
            print(f"ledger {led.path}: {len(runs)} runs with stored results")
            for r in runs:
                print(f"  run {r['run']}  {r['time']}  dataset {r['dataset']!r}: {', '.join(r['releases'])}")
        return 0
    print(led.json() if args.json else led.text())
    return 0


def cmd_bench(args) -> int:
    if getattr(args, "bench_error", None):
        raise _UsageError(f"benchmark {args.bench!r} cannot be loaded: {args.bench_error}")
    try:
        status = args.bench_module.run_from_args(args)
    except FileNotFoundError as exc:
        raise _UsageError(str(exc)) from None
    except (ParameterError, MissingDependencyError) as exc:  # options a mechanism's plan refuses (epsilon 1e-12)
        raise _UsageError(f"{args.bench}: {exc}") from None
    except SystemExit as exc:  # an experiment's own usage error
        if isinstance(exc.code, str):
            raise _UsageError(exc.code) from None
        raise
    return status if isinstance(status, int) else 0


def _positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (0 workers would run nothing; argparse names the option)."""
    if not text.strip().isdecimal() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return int(text)


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


class _Formatter(argparse.HelpFormatter):
    """Wraps description paragraphs; keeps indented lines (examples, lists) as written."""

    def _fill_text(self, text, width, indent):
        out = []
        for para in text.split("\n"):
            if para.startswith("  ") or para.endswith(":"):
                out.append(indent + para)
            else:
                out.append(textwrap.fill(para, width, initial_indent=indent, subsequent_indent=indent))
        return "\n".join(out)


_RAW = _Formatter


def _output_options(p, out_help: str, out_default: str | None = None) -> None:
    """``--out``, ``--no-plots`` and ``--quiet``: the options of the commands that write releases."""
    p.add_argument("--out", default=out_default, metavar="DIR", help=out_help)
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _command(sub, name: str, func, **kw) -> argparse.ArgumentParser:
    """The parser of the subcommand ``name`` (help text laid out by :class:`_Formatter`), running ``func``."""
    p = sub.add_parser(name, formatter_class=_RAW, **kw)
    p.set_defaults(func=func)
    return p


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="blowfish", formatter_class=_RAW,
        description="Release statistics under Blowfish privacy: TOML release specs, a budget ledger, and the "
                    "papers' experiments.  Also runs as python -m blowfish_privacy.",
        epilog=_examples("blowfish demo                       # a complete release on bundled UCI Adult data",
                         "blowfish plan spec.toml             # what a spec would do: nothing read, nothing spent",
                         "blowfish release spec.toml --out results",
                         "blowfish ledger                     # what was spent, and what is left",
                         "blowfish COMMAND --help             # the options of one command"),
    )
    ap.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND",
                            help="what to do (blowfish COMMAND --help for its options and examples)")

    p = _command(sub, "demo", cmd_demo, help="run a complete release on the bundled UCI Adult data",
                 description="Run the bundled demo spec (UCI Adult: a Blowfish CDF of capital loss, its DP "
                             "baseline, an age histogram) with a fresh ledger in a temporary folder; writes "
                             "JSON, CSV, PNG plots (with demo-comparison.png: Blowfish vs DP on one figure) "
                             "and the spec, which you can edit and run with blowfish release.",
                 epilog=_examples("blowfish demo", "blowfish demo --out demo --no-plots --quiet"))
    _output_options(p, "output folder (default: ./blowfish-demo); a folder holding files the demo did not write "
                       "is refused", "blowfish-demo")
    p.add_argument("--overwrite", action="store_true",
                   help="write into --out even if it holds other files (the demo's names are replaced)")

    p = _command(sub, "release", cmd_release, help="run the releases of a TOML spec (spends budget)",
                 description="Plan every release of SPEC from public inputs, read and aggregate the data, "
                             "spend the budget in the ledger and write NAME.json (+ NAME.csv for long "
                             "vectors, NAME.png) per release and summary.json.  The spec format: "
                             "docs/spec.md.",
                 epilog=_examples("blowfish release spec.toml --dry-run",
                                  "blowfish release spec.toml --out results --ledger budget.sqlite --new-ledger",
                                  "blowfish release spec.toml --engine dask --workers 4",
                                  "blowfish release spec.toml --engine spark --spark-master spark://host:7077"))
    p.add_argument("spec", metavar="SPEC", help="the release spec (TOML file; see docs/spec.md)")
    p.add_argument("--engine", choices=engine_names(), default="local",
                   help="where the exact aggregates are computed: "
                        + "; ".join(f"{e.name} ({e.description})" for e in ENGINES.values())
                        + ".  The noise is always added once, here")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, e.g. tcp://host:8786 (only with --engine dask; default: start a "
                        "LocalCluster)")
    p.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help="worker processes of the LocalCluster (only with --engine dask and no --scheduler)")
    p.add_argument("--spark-master", dest="master", metavar="URL",
                   help="Spark master URL, e.g. spark://host:7077 or local[4] (only with --engine spark; default: a "
                        "Spark context already running in the process, else a local session local[N] started and "
                        "stopped by the command)")
    p.add_argument("--spark-conf", dest="conf", action="append", metavar="KEY=VALUE",
                   help="Spark configuration of the session started (only with --engine spark; repeatable), e.g. "
                        "--spark-conf spark.executor.memory=4g")
    p.add_argument("--ledger", metavar="PATH",
                   help="budget ledger (SQLite); default: ledger.sqlite in the user's data directory "
                        "(e.g. ~/.local/share/blowfish-privacy)")
    _output_options(p, "output folder, new or empty (default: ./blowfish-SPECNAME)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plans (epsilon, noise scales, expected error, memory, budget left) and stop: "
                        "no data read, nothing spent")
    p.add_argument("--seeded-test", action="store_true",
                   help="allow a spec with run.seed: a reproducible test run, NOT private; nothing is spent")
    p.add_argument("--new-ledger", action="store_true",
                   help="create the --ledger file if it does not exist (otherwise a missing ledger is an error)")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out folder")

    p = _command(sub, "plan", cmd_plan,
                 help="print the plans of a spec (same as release --dry-run): nothing read or spent",
                 description="Print what each release of SPEC would do, from public inputs only: mechanism, "
                             "epsilon, every noise scale and its sensitivity, expected error, memory, and the "
                             "budget left before and after.",
                 epilog=_examples("blowfish plan spec.toml", "blowfish plan spec.toml --json --ledger budget.sqlite"))
    p.add_argument("spec", metavar="SPEC", help="the release spec (TOML file)")
    p.add_argument("--ledger", metavar="PATH", help="budget ledger to read the remaining budget from (never created)")
    p.add_argument("--new-ledger", action="store_true",
                   help="the --ledger file will be new: plan with the full budget instead of refusing a missing path")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = _command(sub, "explain", cmd_explain, help="explain the policies of a spec in plain words",
                 description="The guarantee in numbers of the dataset's protection policy (the bound "
                             "e^(epsilon d_G) per distance d_G in its secret graph, equation 9 of the Blowfish paper, "
                             "beside DP's "
                             "e^epsilon); then, for every policy a release of SPEC uses: which values stay "
                             "indistinguishable and how strongly; then each release's mechanism, guarantee (in "
                             "numbers too) and calibration.  Nothing is read or spent.",
                 epilog=_examples("blowfish explain spec.toml", "blowfish demo && blowfish explain blowfish-demo/spec.toml"))
    p.add_argument("spec", metavar="SPEC", help="the release spec (TOML file) whose policies to explain")

    p = _command(sub, "ledger", cmd_ledger, help="what was spent, when, on what, and what is left; stored results",
                 description="blowfish ledger [PATH]: spends and budgets, and how each parallel group was "
                             "counted.  blowfish ledger init PATH [--spec SPEC]: create a new ledger (and "
                             "register SPEC's dataset).  blowfish ledger show "
                             "[PATH]: the runs whose results the ledger keeps.  blowfish ledger export RUN "
                             "[PATH] --out DIR: write a past run's results again (e.g. after a failed write).  "
                             "A missing PATH is an error, never a new ledger.",
                 epilog=_examples("blowfish ledger", "blowfish ledger budget.sqlite --json",
                                  "blowfish ledger init budget.sqlite", "blowfish ledger show budget.sqlite",
                                  "blowfish ledger export 3f2a9c1b7d40 budget.sqlite --out again"))
    p.add_argument("words", nargs="*", metavar="[ACTION] [RUN] [PATH]",
                   help="init PATH | show [PATH] | export RUN [PATH] | [PATH] (default PATH: in the user's data "
                        "directory)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--out", metavar="DIR", help="export: the folder to write into (new or empty)")
    p.add_argument("--spec", metavar="SPEC", help="init: register the spec's dataset (its total epsilon, "
                   "protection policy and disclosure setting) in the ledger")

    benches = _bench_modules()
    p = sub.add_parser("bench", help="run a paper experiment against the DP baselines, with plots",
                       formatter_class=_RAW,
                       description="Reproduce an experiment of the papers; writes NAME.csv and NAME.png.  The same "
                                   "options as python -m blowfish_privacy.experiments.NAME.  Benchmarks:\n"
                                   + "\n".join(f"  {n:<14} {summary}" for n, (_, summary, _) in benches.items()),
                       epilog=_examples("blowfish bench range-queries --repetitions 3",
                                        "blowfish bench kmeans                 # about a minute; --full: hours",
                                        "blowfish bench histograms --data dpbench_1d",
                                        "blowfish bench NAME --help            # the options of one benchmark"))
    bsub = p.add_subparsers(dest="bench", required=True, metavar="NAME",
                            help="the benchmark to run (blowfish bench NAME --help for its options)")
    for name, (mod, summary, error) in benches.items():
        b = bsub.add_parser(name, help=summary, description=summary, formatter_class=_RAW,
                            epilog=_bench_epilog(mod, name))
        if mod is not None:
            mod.add_arguments(b)
        b.set_defaults(func=cmd_bench, bench_module=mod, bench_error=error)
    return ap


def _bench_epilog(mod, name) -> str | None:
    if mod is None:
        return None
    text = getattr(mod, "EXAMPLE", None)
    return _examples(text) if text else _examples(f"blowfish bench {name} --out {name} --repetitions 2")


def _version() -> str:
    return f"blowfish-privacy {__version__}"


def _interrupted() -> int:
    # a spend is one transaction with its results: interrupted, it is recorded whole or not at all
    print("blowfish: interrupted: nothing was spent unless the ledger shows this run (blowfish ledger show); "
          "its results are kept there (blowfish ledger export RUN)", file=sys.stderr)
    return 130


#: The exit status when the reader of stdout went away (``| head``): 128 + SIGPIPE, as a shell reports a
#: command ended by a closed pipe, so ``set -o pipefail`` still sees that the output was cut short.
BROKEN_PIPE = 141


def main(argv=None) -> int:
    """Run the command ``argv`` (default: ``sys.argv[1:]``) and return its exit status."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's shutdown
    except BrokenPipeError:
        _discard_stdout()
        return BROKEN_PIPE


def _discard_stdout() -> None:
    """Point stdout at the null device: the interpreter's last flush would fail again on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a descriptor
        pass


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SpecError, DataError, LedgerError, BudgetExceededError, UnsupportedPolicyError, _UsageError) as exc:
        msg = " ".join(str(exc).split())
        print(f"blowfish: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except RuntimeError as exc:
        # an interrupt while a class body runs (e.g. inside an import of matplotlib) reaches us wrapped
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            return _interrupted()
        raise
    except BrokenPipeError:  # stdout closed by its reader: main() ends quietly
        raise
    except OSError as exc:  # a file or folder the command was told to use cannot be written or read
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        print(f"blowfish: error:{where} {exc.strerror or type(exc).__name__}", file=sys.stderr)
        return 2


def run() -> None:
    """The ``blowfish`` command: :func:`main`, then exit with its status.

    After an interrupt (status 130) the process ends without the
    interpreter's shutdown: every ``finally`` has run by then (temporary
    files removed, the ledger's transaction committed whole or not at all),
    but a reader's background threads (pyarrow reading ahead through a
    Python file object) may still be inside a read, and a foreign thread
    that calls into an interpreter being finalised aborts the process.
    """
    code = main()
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    run()
