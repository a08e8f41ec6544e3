"""The ``blowfish`` command: demo, release, explain, ledger, bench.

Errors in specs, data, budgets and ledgers are printed as one line
(``blowfish: error: ...``) with exit status 2; nothing is spent then.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from .errors import BudgetExceededError, UnsupportedPolicyError

BENCHES = {
    "range-queries": "000 Fig 2(b): range-query error of the ordered hierarchical mechanism vs DP, UCI Adult",
    "kmeans": "000 Fig 1 / 002 Fig 2: k-means objective ratios under Blowfish policies vs DP, UCI Skin and synthetic",
    "histograms": "001 Fig 4/5: data-dependent Blowfish histograms vs DP on DPBench (needs --data DIR)",
}


def _demo_spec_text() -> str:
    return resources.files("blowfish_privacy").joinpath("data", "demo.toml").read_text(encoding="utf-8")


def _engine(args):
    from .release import DaskEngine, LocalEngine

    if args.engine == "dask":
        return DaskEngine(args.scheduler, workers=args.workers, progress=not args.quiet)
    if args.scheduler:
        raise _UsageError("--scheduler applies only with --engine dask")
    return LocalEngine(progress=not args.quiet)


class _UsageError(ValueError):
    pass


def _print_summary(result, ledger, dataset, stream=None) -> None:
    stream = stream or sys.stdout
    for d in result.releases:
        sens = d["sensitivity"]["value"]
        parts = d.get("noise_parts") or []
        if len(parts) > 1:  # the numbers that set the noise, per node class
            sens = f"{sens} (noise: " + ", ".join(f"{p['name']} sens {p['sensitivity']}" for p in parts) + ")"
        line = f"  {d['name']:<24} {d['kind']:<15} eps {d.get('epsilon_spent', 0):<8.4g} sensitivity {sens}"
        if "value" in d and d.get("kind") in ("sum", "pufferfish_sum"):
            line += f"  value {d['value']}"
        err = d.get("expected_error", {})
        if "range_query_mse_before_inference" in err:
            line += f"  range-query RMSE ~{err['range_query_mse_before_inference'] ** 0.5:.4g}"
        elif "per_cell_variance" in err:
            line += f"  per-count RMSE ~{err['per_cell_variance'] ** 0.5:.4g}"
        print(line, file=stream)
        for r in d.get("ranges", []):
            print(f"      count in [{r['low']}, {r['high']}]: {r['count']:.1f}", file=stream)
        for q in d.get("quantiles", []):
            print(f"      quantile {q['p']:g}: {q['value']}", file=stream)
    remaining = ledger.remaining(dataset)
    if remaining is None:
        print(f"  budget of {dataset!r}: untouched (nothing spent)", file=stream)
    else:
        print(f"  budget of {dataset!r}: {float(remaining):.6g} left", file=stream)
    if result.plots_skipped:
        print(f"  {result.plots_skipped}", file=stream)


def _remaining_readonly(path, spec):
    """Budget left for the spec's dataset, read without creating a ledger."""
    from .release import Ledger, default_ledger_path

    p = Path(path) if path else default_ledger_path()
    if not p.exists():
        return spec.total_epsilon, f"{p} (does not exist yet: full budget)"
    left = Ledger(p).remaining(spec.dataset_id)
    return (spec.total_epsilon if left is None else left), str(p)


def _print_plan(splan, remaining, ledger_text, stream=None) -> None:
    stream = stream or sys.stdout
    spec = splan.spec
    print(f"plan of {spec.path} for dataset {spec.dataset_id!r}: nothing read, nothing spent", file=stream)
    for rel in spec.releases:
        plan = splan.plans[rel.name]
        print(f"  {rel.name:<24} {rel.kind:<15} {plan.mechanism}: epsilon {float(plan.epsilon_exact):.6g} "
              f"(asked {float(rel.epsilon):.6g}), memory ~{plan.memory_bytes / 2**20:.3g} MiB", file=stream)
        for part in plan.parts:
            scale = "per round" if part.scale is None else f"{float(part.scale):.6g}"
            sens = "per round" if part.sensitivity is None else f"{part.sensitivity}"
            print(f"      noise on {part.name}: sensitivity {sens}, scale {scale}, "
                  f"epsilon {float(part.epsilon):.6g}", file=stream)
        for key, value in plan.expected_error.items():
            if isinstance(value, float):
                print(f"      expected error: {key} = {value:.6g}", file=stream)
        if rel.where:
            print(f"      where {dict(rel.where)}", file=stream)
    after = remaining - spec.epsilon_requested
    print(f"  epsilon asked {float(spec.epsilon_requested):.6g}; budget left {float(remaining):.6g} now, "
          f"{float(after):.6g} after (ledger {ledger_text})", file=stream)
    if after < 0:
        print("  the ledger would refuse this run: not enough budget left", file=stream)
    print(f"  memory needed ~{splan.memory_bytes / 2**20:.3g} MiB"
          + (f" of {splan.available_bytes / 2**30:.3g} GiB available" if splan.available_bytes else ""), file=stream)


def cmd_plan(args) -> int:
    from .release import load_spec
    from .release.runner import plan_spec

    spec = load_spec(args.spec)
    splan = plan_spec(spec)
    remaining, where = _remaining_readonly(args.ledger, spec)
    if getattr(args, "json", False):
        import json

        print(json.dumps(splan.describe(remaining), indent=2))
    else:
        _print_plan(splan, remaining, where)
    return 0


def cmd_release(args) -> int:
    from .release import Ledger, load_spec, run_spec

    if args.dry_run:
        return cmd_plan(args)
    spec = load_spec(args.spec)
    engine = _engine(args)
    ledger = Ledger(args.ledger, create=args.new_ledger or args.ledger is None)
    out = Path(args.out) if args.out else Path(f"blowfish-{Path(args.spec).stem}")
    result = run_spec(spec, engine=engine, ledger=ledger, out_dir=out, plots=not args.no_plots,
                      allow_seeded=args.seeded_test, overwrite=args.overwrite)
    if spec.seed is not None:
        print(f"SEEDED TEST RUN: NOT private (seed {spec.seed}: anyone with it can remove the noise); "
              f"nothing spent from ledger {ledger.path}")
        print(f"wrote {len(result.releases)} test statistics of {spec.dataset_id!r} into {out}/")
    else:
        print(f"released {len(result.releases)} statistics of {spec.dataset_id!r} into {out}/ (ledger {ledger.path}, "
              f"run {result.run})")
    _print_summary(result, ledger, spec.dataset_id)
    return 0


def cmd_demo(args) -> int:
    from .release import Ledger, LocalEngine, parse_spec, run_spec

    start = time.perf_counter()
    out = Path(args.out)
    text = _demo_spec_text()
    spec = parse_spec(text, "demo spec")
    with tempfile.TemporaryDirectory(prefix="blowfish-demo-ledger-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.sqlite")
        result = run_spec(spec, engine=LocalEngine(progress=not args.quiet), ledger=ledger, out_dir=out,
                          plots=not args.no_plots, overwrite=True)
        (out / "spec.toml").write_text(text, encoding="utf-8")
        print("blowfish demo: UCI Adult (48,842 people), three releases under one budget of "
              f"{float(spec.total_epsilon):g}, with a fresh ledger in a temporary folder")
        _print_summary(result, ledger, spec.dataset_id)
        oh = next(d for d in result.releases if d["name"] == "capital-loss-cdf")
        dp = next(d for d in result.releases if d["name"] == "capital-loss-cdf-dp")
        ratio = dp["expected_error"]["range_query_mse_before_inference"] / \
            oh["expected_error"]["range_query_mse_before_inference"]
        print(f"  at equal epsilon, the Blowfish CDF's expected range-query error is {ratio:.1f}x smaller "
              "than the DP baseline's")
    print(f"wrote {len(result.files) + 1} files into {out}/ in {time.perf_counter() - start:.1f} s; "
          f"run it yourself: blowfish release {out / 'spec.toml'}")
    return 0


def cmd_explain(args) -> int:
    from .release import load_spec

    spec = load_spec(args.spec)
    shown = set()
    for rel in spec.releases:
        key = (rel.policy_name, rel.attributes)
        if key in shown or not rel.policy_name:
            continue
        shown.add(key)
        print(f"== policy {rel.policy_name!r} on {list(rel.attributes)} "
              f"(release {rel.name!r}, epsilon {float(rel.epsilon):g}) ==")
        print(str(rel.policy.explain(float(rel.epsilon))))
        print()
    total = spec.epsilon_requested
    print(f"The spec asks for epsilon {float(total):g} of the dataset's total {float(spec.total_epsilon):g} "
          f"(sequential composition, 000 Thm 4.1; parallel groups cost their largest epsilon, Thm 4.2).")
    from .release.runner import plan_spec

    splan = plan_spec(spec)
    print()
    print("== what each release will do (its plan: public inputs only) ==")
    for rel in spec.releases:
        plan = splan.plans[rel.name]
        print(f"{rel.name}: {plan.mechanism}. Guarantee: {plan.guarantee}. Citation: {plan.citation}.")
        for part in plan.parts:
            sens = "fixed per round" if part.sensitivity is None else part.sensitivity
            print(f"  noise on {part.name}: sensitivity {sens} ({part.how})")
    return 0


_LEDGER_ACTIONS = ("init", "show", "export")


def cmd_ledger(args) -> int:
    from .release import Ledger
    from .release.runner import export_results

    words = list(args.words)
    action = words.pop(0) if words and words[0] in _LEDGER_ACTIONS else "summary"
    if action == "export":
        if not words:
            raise _UsageError("blowfish ledger export RUN [PATH] --out DIR: give the run id (blowfish ledger show)")
        run = words.pop(0)
    if len(words) > 1:
        raise _UsageError(f"too many arguments: {args.words}; usage: blowfish ledger [init|show|export RUN] [PATH]")
    path = words[0] if words else None
    if action == "init":
        if path is None:
            raise _UsageError("blowfish ledger init PATH: give the path of the new ledger")
        if Path(path).exists():
            raise _UsageError(f"{path!r} already exists; a ledger is initialised once")
        led = Ledger(path, create=True)
        print(f"created the budget ledger {led.path}")
        return 0
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
              f"(JSON and CSV; the ledger keeps no plots)")
        return 0
    if action == "show":
        runs = led.runs()
        if args.json:
            import json

            print(json.dumps(runs, indent=2))
        else:
            print(f"ledger {led.path}: {len(runs)} runs with stored results")
            for r in runs:
                print(f"  run {r['run']}  {r['time']}  dataset {r['dataset']!r}: {', '.join(r['releases'])}")
        return 0
    print(led.json() if args.json else led.text())
    return 0


def cmd_bench(args) -> int:
    if args.name not in BENCHES:
        raise _UsageError(f"unknown benchmark {args.name!r}; available: {sorted(BENCHES)}")
    out = Path(args.out or args.name)
    if args.name == "range-queries":
        from .experiments import range_queries

        kwargs = {"repetitions": args.repetitions} if args.repetitions else {}
        range_queries.run(str(out), progress=not args.quiet, **kwargs)
    elif args.name == "kmeans":
        from .experiments import kmeans

        kwargs = {"repetitions": args.repetitions} if args.repetitions else {}
        kmeans.run(str(out), progress=not args.quiet, **kwargs)
    else:
        from .experiments import histograms

        if not args.data:
            raise _UsageError("benchmark 'histograms' needs --data DIR, the folder of the DPBench 1-D .npy files")
        if not Path(args.data).is_dir():
            raise _UsageError(f"--data: {args.data!r} is not a folder")
        kwargs = {"trials": args.repetitions} if args.repetitions else {}
        histograms.run(str(out), data_dir=args.data, progress=not args.quiet, **kwargs)
    print(f"{args.name}: {BENCHES[args.name]}; wrote CSV and PNG into {out}/")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="blowfish", description="Release statistics under Blowfish privacy.")
    ap.add_argument("--version", action="version", version=_version())
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="run a complete release on the bundled UCI Adult data")
    p.add_argument("--out", default="blowfish-demo", help="output folder (default: ./blowfish-demo)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("release", help="run the releases of a TOML spec")
    p.add_argument("spec", help="the release spec (TOML)")
    p.add_argument("--engine", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler", help="Dask scheduler address (default: start a LocalCluster)")
    p.add_argument("--workers", type=int, default=None, help="LocalCluster worker processes (Dask engine)")
    p.add_argument("--ledger", help="budget ledger (SQLite); default: in the user's data directory")
    p.add_argument("--out", help="output folder (default: ./blowfish-SPECNAME)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plans (epsilon, noise scales, expected error, memory, budget left) and stop: "
                        "no data read, nothing spent")
    p.add_argument("--seeded-test", action="store_true",
                   help="allow a spec with run.seed: a reproducible test run, NOT private; nothing is spent")
    p.add_argument("--new-ledger", action="store_true",
                   help="create the --ledger file if it does not exist (otherwise a missing ledger is an error)")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out folder")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("plan", help="print the plans of a spec (same as release --dry-run): nothing read or spent")
    p.add_argument("spec", help="the release spec (TOML)")
    p.add_argument("--ledger", help="budget ledger to read the remaining budget from (never created)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("explain", help="explain the policies of a spec in plain words")
    p.add_argument("spec")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("ledger", help="what was spent, when, on what, and what is left; stored results",
                       description="blowfish ledger [PATH]: spends and budgets.  blowfish ledger init PATH: create "
                                   "a new ledger.  blowfish ledger show [PATH]: the runs whose results the ledger "
                                   "keeps.  blowfish ledger export RUN [PATH] --out DIR: write a past run's results "
                                   "again (e.g. after a failed write).  A missing PATH is an error, never a new "
                                   "ledger.")
    p.add_argument("words", nargs="*", metavar="[ACTION] [RUN] [PATH]",
                   help="init PATH | show [PATH] | export RUN [PATH] | [PATH] (default: in the user's data directory)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--out", help="export: the folder to write into (new or empty)")
    p.set_defaults(func=cmd_ledger)

    p = sub.add_parser("bench", help="run a paper experiment against the DP baselines, with plots")
    p.add_argument("name", help=f"one of {sorted(BENCHES)}")
    p.add_argument("--out", help="output folder (default: ./NAME)")
    p.add_argument("--repetitions", type=int, help="repetitions per setting")
    p.add_argument("--data", help="folder of input data (histograms: the DPBench 1-D .npy files)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_bench)
    return ap


def _version() -> str:
    from . import __version__

    return f"blowfish-privacy {__version__}"


def main(argv=None) -> int:
    from .release import DataError, LedgerError, SpecError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SpecError, DataError, LedgerError, BudgetExceededError, UnsupportedPolicyError, _UsageError) as exc:
        msg = " ".join(str(exc).split())
        print(f"blowfish: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
