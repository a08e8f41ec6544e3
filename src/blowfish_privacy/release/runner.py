"""Running a validated spec: aggregate, spend, add noise, write the outputs.

Order (each step can fail without spending, until the spend):

1. every release computes its sensitivity and noise scale (``prepare``);
2. the engine computes the exact aggregates (missing columns and values
   outside the domain fail here);
3. the output folder is created;
4. the ledger records the spend in one transaction (or refuses);
5. the mechanisms add noise; JSON, CSV and PNG files are written.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..noise import Generator
from .kinds import DP_BASELINES, KINDS, OptionError
from ..errors import BudgetExceededError
from .ledger import Ledger, LedgerError, Spend
from .spec import Spec, SpecError

__all__ = ["run_spec", "RunResult", "VECTOR_INLINE_LIMIT"]

#: Vectors longer than this go to a CSV file beside the JSON.
VECTOR_INLINE_LIMIT = 1000


@dataclass
class RunResult:
    out_dir: Path
    releases: list  # the JSON documents written
    files: list  # paths written
    plots_skipped: str = ""


def _version() -> str:
    from .. import __version__

    return __version__


def _needs(spec: Spec) -> list:
    needs = []
    for rel in spec.releases:
        need = _need(rel)
        if need not in needs:
            needs.append(need)
    return needs


def _need(rel) -> tuple:
    base = (KINDS[rel.kind].aggregate, rel.attributes)
    return base + (rel.where,) if rel.where else base


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def run_spec(spec: Spec, *, engine, ledger: Ledger, out_dir, plots: bool = True) -> RunResult:
    """Run every release of ``spec``; returns what was written."""
    prepared = {}
    for rel in spec.releases:
        try:
            prepared[rel.name] = KINDS[rel.kind].prepare(rel)
        except OptionError as exc:
            raise SpecError(f"{spec.path}: {rel.key}.{exc.key}: {exc.message}") from None
        except (ValueError, NotImplementedError) as exc:
            raise SpecError(f"{spec.path}: {rel.key}.policy: release kind {rel.kind!r} is not supported under "
                            f"policy {rel.policy_name!r}: {exc}") from None
    aggregates = engine.aggregate(spec, _needs(spec))

    out = Path(out_dir)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(f"--out: cannot create the output folder {str(out)!r}: {exc}") from None

    run_id = uuid.uuid4().hex[:12]
    spends = [Spend(r.name, r.kind, r.epsilon, _policy_text(r),
                    None if r.parallel is None else f"{r.parallel}@{run_id}") for r in spec.releases]
    try:
        ledger.spend(spec.dataset_id, spec.total_epsilon, spends, spec_sha256=spec.sha256)
    except BaseException as exc:
        if created:
            out.rmdir()
        if isinstance(exc, (BudgetExceededError, LedgerError)):
            raise type(exc)(f"{spec.path}: dataset: {exc} (ledger {ledger.path})") from None
        raise

    # -- the budget is committed: from here on results may be written ----------
    gen = Generator(seed=spec.seed) if spec.seed is not None else Generator()
    version = _version()
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    docs, files = [], []
    plt = None
    skipped = ""
    if plots:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            skipped = "plots skipped: matplotlib is not installed (pip install 'blowfish-privacy[plot]')"
    for rel in spec.releases:
        kind = KINDS[rel.kind]
        agg = aggregates[_need(rel)]
        sens = dict(prepared[rel.name])
        output = kind.run(rel, agg, gen, sens)
        doc = {
            "name": rel.name,
            "kind": rel.kind,
            "dataset": spec.dataset_id,
            "attributes": list(rel.attributes),
            "policy": {"name": rel.policy_name or None, "secrets": repr(rel.policy.secrets)},
            "options": rel.options,
            "where": dict(rel.where) or None,
            "parallel_group": rel.parallel,
            "epsilon_requested": float(rel.epsilon),
            "epsilon_requested_exact": str(rel.epsilon),
            "sensitivity": sens,
        }
        doc.update({k: _jsonable(v) for k, v in output.fields.items()})
        doc.update({
            "seeded": spec.seed is not None,
            "seed": spec.seed,
            "engine": engine.name,
            "library_version": version,
            "spec_sha256": spec.sha256,
            "time": now,
        })
        for vname, vec in output.vectors.items():
            vec = np.asarray(vec)
            if vec.size <= VECTOR_INLINE_LIMIT:
                doc[vname] = [_jsonable(x) for x in vec.tolist()]
        big = {k: np.asarray(v) for k, v in output.vectors.items() if np.asarray(v).size > VECTOR_INLINE_LIMIT}
        if big:
            csv_path = out / f"{rel.name}.csv"
            _write_csv(csv_path, big)
            doc["vectors_file"] = csv_path.name
            files.append(csv_path)
        if plt is not None and output.plot is not None:
            fig, ax = plt.subplots(figsize=(7, 4))
            output.plot(ax)
            ax.set_title(f"{rel.name}: {rel.kind}, eps = {doc.get('epsilon_spent', float(rel.epsilon)):.3g}")
            fig.tight_layout()
            png = out / f"{rel.name}.png"
            fig.savefig(png, dpi=110)
            plt.close(fig)
            doc["plot"] = png.name
            files.append(png)
        path = out / f"{rel.name}.json"
        path.write_text(json.dumps(doc, indent=2, default=str))
        files.append(path)
        docs.append(doc)
    summary = out / "summary.json"
    summary.write_text(json.dumps({
        "dataset": spec.dataset_id, "spec": spec.path, "spec_sha256": spec.sha256,
        "ledger": str(ledger.path), "engine": engine.name,
        "releases": [{"name": d["name"], "kind": d["kind"], "epsilon_spent": d.get("epsilon_spent"),
                      "file": f"{d['name']}.json"} for d in docs],
        "remaining_epsilon": float(ledger.remaining(spec.dataset_id)),
    }, indent=2))
    files.append(summary)
    return RunResult(out, docs, files, skipped)


def _policy_text(rel) -> str:
    if rel.options.get("mechanism") in DP_BASELINES:
        return f"differential privacy baseline ({rel.options['mechanism']}) on {list(rel.attributes)}"
    if not rel.policy_name:
        return f"Pufferfish ({rel.kind}) on {list(rel.attributes)}"
    return f"{rel.policy_name}: {rel.policy.secrets!r} on {list(rel.attributes)}"


def _write_csv(path: Path, vectors: dict) -> None:
    names = list(vectors)
    cols = [vectors[n] for n in names]
    length = max(c.size for c in cols)
    with open(path, "w") as fh:
        fh.write(",".join(names) + "\n")
        for i in range(length):
            fh.write(",".join(_cell(c, i) for c in cols) + "\n")


def _cell(c: np.ndarray, i: int) -> str:
    if i >= c.size:
        return ""
    v = c[i].item() if isinstance(c[i], np.generic) else c[i]
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() else repr(v)
    return str(v)
