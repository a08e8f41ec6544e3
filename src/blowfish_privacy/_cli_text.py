"""What the ``blowfish`` command prints: results, plans and ledgers as console text.

Part of :mod:`.cli`: one-line previews of released values, the noise and
error of each release, the privacy model, the summary after a release,
the plan of a spec (nothing read, nothing spent) and a ledger's history.
"""

from __future__ import annotations

import sys
from fractions import Fraction


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if not v.is_integer() else f"{int(v)}"
    return str(v)


def _preview(d: dict) -> str:
    """A release's value, or a short preview of its vector."""
    kind = d.get("kind")
    if kind in ("sum", "pufferfish_sum"):
        n = f" (n = {d['n']})" if d.get("n") is not None else ""
        return f"value {_fmt(d.get('value'))}{n}"
    if kind == "kmeans":
        cents = d.get("centroids") or []
        shown = "; ".join("(" + ", ".join(f"{c:.4g}" for c in cent) + ")" for cent in cents[:4])
        return f"centroids {shown}" + (" ..." if len(cents) > 4 else "")
    if kind == "cdf":
        return f"cumulative counts of {', '.join(d.get('attributes', []))}, n = {d.get('n')}"
    counts = d.get("counts")
    if counts is None:
        return f"counts in {d.get('vectors_file', 'the CSV file')} (more than 1,000 cells)"

    def label(prefix: str, i: int) -> str:
        lo, hi = d[prefix][i], d.get(f"{prefix}_high")
        return f"{lo}-{hi[i]}" if hi and hi[i] != lo else f"{lo}"

    items = []
    for i, c in enumerate(counts[:6]):
        if "value" in d:
            lab = label("value", i)
        else:  # several attributes: one column per attribute
            lab = " x ".join(label(f"cell_{a}", i) for a in d.get("attributes", []) if f"cell_{a}" in d)
        items.append(f"{lab}: {_fmt(c)}" if lab else _fmt(c))
    more = f", ... ({len(counts)} cells)" if len(counts) > 6 else f" ({len(counts)} cells)"
    return "counts " + ", ".join(items) + more


def _noise_text(d: dict) -> str:
    """The noise scales actually used (discrete Laplace scale = sensitivity / epsilon of each part)."""
    parts = d.get("noise_parts") or []
    if not parts:
        return "no noise needed (no secret pair changes the values)"
    items = []
    for p in parts:
        if p.get("scale") is None:
            items.append(f"{p['name']}: scale set each round (sensitivities in per_round)" if "per_round" in d
                         else f"{p['name']}: scale fixed during the measurement from public structure")
            continue
        sc = float(Fraction(p["scale"]))
        count = f" ({p['count']} noisy values)" if p.get("count") not in (None, 1) else ""
        items.append(f"{p['name']}{count}: scale {sc:.4g} (sensitivity {p['sensitivity']}, eps {float(Fraction(p['epsilon'])):.4g})")
    return "noise " + "; ".join(items)


def _error_text(d: dict) -> str:
    err = d.get("expected_error")
    if isinstance(err, dict) and err.get("rmse") is not None:
        return f"expected error: RMSE {err['rmse']:.4g} of {err.get('rmse_of', 'one value')}"
    if isinstance(err, dict) and "range_query_mse_before_inference" in err:
        return f"expected error: RMSE {err['range_query_mse_before_inference'] ** 0.5:.4g} of a range count"
    if isinstance(err, dict) and "per_cell_variance" in err:
        return f"expected error: RMSE {err['per_cell_variance'] ** 0.5:.4g} of one count"
    return "expected error: data dependent"


def _model_text(d: dict) -> str:
    model = d.get("privacy_model")
    if model == "DP":
        return "plain DP (baseline)"
    if model == "Pufferfish":
        return "Pufferfish"
    pol = (d.get("policy") or {}).get("name")
    return f"Blowfish, policy {pol!r}" if pol else "Blowfish"


def _print_summary(result, ledger, dataset, stream=None) -> None:
    """Per release: value or preview, epsilon, the noise scales used and the expected error in the
    answer's units (RMSE, comparable across mechanisms)."""
    stream = stream or sys.stdout
    for d in result.releases:
        eps = d.get("epsilon_spent", 0)
        where = f", where {d['where']}" if d.get("where") else ""
        print(f"  {d['name']}: {d['kind']} of {', '.join(d.get('attributes', []))}{where} -- {_model_text(d)}, "
              f"epsilon {eps:.4g}", file=stream)
        print(f"      {_preview(d)}", file=stream)
        for r in d.get("ranges", []):
            cov = r.get("covers")
            covers = f" (covers values {cov[0]}..{cov[1]})" if cov and list(cov) != [r["low"], r["high"]] else ""
            print(f"      count in [{r['low']}, {r['high']}]{covers}: {r['count']:.1f}", file=stream)
        for q in d.get("quantiles", []):
            print(f"      quantile {q['p']:g}: {q['value']}", file=stream)
        print(f"      {_noise_text(d)}", file=stream)
        print(f"      {_error_text(d)}", file=stream)
    remaining = ledger.remaining(dataset)
    if remaining is None:
        print(f"  budget of {dataset!r}: untouched (nothing spent)", file=stream)
    else:
        print(f"  budget of {dataset!r}: {float(remaining):.6g} left", file=stream)
    if result.plots_skipped:
        print(f"  {result.plots_skipped}", file=stream)


def _print_plan(splan, remaining, ledger_text, stream=None, seeded: bool = False) -> None:
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
    after = remaining if seeded else remaining - spec.epsilon_requested
    print(f"  epsilon asked {float(spec.epsilon_requested):.6g}; budget left {float(remaining):.6g} now, "
          f"{float(after):.6g} after (ledger {ledger_text})", file=stream)
    if after < 0:
        print("  the ledger would refuse this run: not enough budget left", file=stream)
    print(f"  memory needed ~{splan.memory_bytes / 2**20:.3g} MiB"
          + (f" of {splan.available_bytes / 2**30:.3g} GiB available" if splan.available_bytes else ""), file=stream)
