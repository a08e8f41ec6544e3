"""What the ``blowfish`` command prints: results, plans and ledgers as console text.

Part of :mod:`.cli`: one-line previews of released values, the noise and
error of each release, the privacy model, the summary after a release,
the plan of a spec (nothing read, nothing spent), a ledger's history, and
the guarantee in numbers of a spec's protection policy and releases
(``blowfish explain``).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

from .policy.domain import Domain
from .policy.guarantee import GuaranteeTable, guarantee_table, product_table
from .policy._explanation import Explanation
from .policy._policy import Policy
from .release._protection import protect_members, raw_domain, release_graph
from .release.kinds import KINDS
from .policy.secrets import Intersection


#: Numbers at least this large are printed with 6 significant digits: all digits of 1e300 help no reader
#: (the JSON keeps the exact value).
_READABLE = 1e15


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{int(v)}" if v.is_integer() and abs(v) < _READABLE else f"{v:.6g}"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= _READABLE:
        return f"{float(v):.6g}"
    return str(v)


def _count(v: float) -> str:
    return f"{v:.1f}" if abs(v) < _READABLE else f"{v:.6g}"


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


#: What the RMSE derived from a plan's expected-error entry is the error of (its key in ``describe()``).
_RMSE_OF = {
    "range_query_mse_before_inference": "a range count (mean over all ranges, before inference)",
    "range_query_mse": "a range count",
    "allranges_mse": "a range count",
    "per_value_variance": "one count",
    "per_cell_variance": "one count",
    "per_answer_variance": "one answer",
    "per_noisy_value_variance": "one noisy value",
    "per_node_variance": "one node of the tree",
    "workload_mse_estimate": "a query of the workload",
}


def _unit(kind) -> str:
    """`` counts`` for the kinds that release counts (an RMSE is then in counts); empty for the others."""
    handler = KINDS.get(kind)
    return " counts" if handler is not None and handler.aggregate == "histogram" else ""


def rmse_text(rmse: float, of: str, kind) -> str:
    """``RMSE 4.2 counts of one count``: the one error measure the command prints, in the answer's unit."""
    unit = _unit(kind)
    if not unit and of == "one count":  # a sum: its noise is in the attribute's units, not counts
        of = "the released value (in the attribute's units)"
    return f"RMSE {rmse:.4g}{unit} of {of}"


def _error_text(d: dict) -> str:
    err = d.get("expected_error")
    kind = d.get("kind")
    if isinstance(err, dict) and err.get("rmse") is not None:
        return f"expected error: {rmse_text(err['rmse'], err.get('rmse_of', 'one value'), kind)}"
    if isinstance(err, dict):
        for key in ("range_query_mse_before_inference", "per_cell_variance"):
            if isinstance(err.get(key), (int, float)):
                return f"expected error: {rmse_text(math.sqrt(max(err[key], 0.0)), _RMSE_OF[key], kind)}"
    return "expected error: data dependent"


def _plan_errors(expected_error: dict, kind) -> list:
    """A plan's expected errors as RMSEs: its mean squared errors and variances, square-rooted (totals over
    every value are left to the JSON: one measure per answer)."""
    out = []
    for key, value in expected_error.items():
        if not isinstance(value, float) or not math.isfinite(value) or "total" in key:
            continue
        if not (key.endswith(("mse", "variance")) or key in _RMSE_OF):
            continue
        of = _RMSE_OF.get(key) or key.replace("_mse", "").replace("_variance", "").replace("_", " ")
        out.append(rmse_text(math.sqrt(max(value, 0.0)), of, kind))
    return out


def _model_text(d: dict) -> str:
    model = d.get("privacy_model")
    if model == "DP":
        return "plain DP (baseline)"
    if model == "Pufferfish":
        return "Pufferfish"
    pol = (d.get("policy") or {}).get("name")
    return f"Blowfish, policy {pol!r}" if pol else "Blowfish"


def print_summary(result, ledger, dataset, stream=None) -> None:
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
            print(f"      count in [{r['low']}, {r['high']}]{covers}: {_count(r['count'])}", file=stream)
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


def print_plan(splan, remaining, ledger_text, stream=None, seeded: bool = False) -> None:
    """A spec's plan as console text; each release's lines come from its ``plan.describe()``, as the JSON does."""
    stream = stream or sys.stdout
    spec = splan.spec
    print(f"plan of {spec.path} for dataset {spec.dataset_id!r}: nothing read, nothing spent", file=stream)
    for rel in spec.releases:
        d = splan.plans[rel.name].describe()
        print(f"  {rel.name:<24} {rel.kind:<15} {d['mechanism']} ({d['model']}): "
              f"epsilon {float(Fraction(d['epsilon_spent'])):.6g} (asked {float(rel.epsilon):.6g}), "
              f"memory ~{d['memory_bytes'] / 2**20:.3g} MiB", file=stream)
        for p in d["parts"]:
            scale = "per round" if p["scale"] is None else f"{float(Fraction(p['scale'])):.6g}"
            sens = "per round" if p["sensitivity"] is None else f"{p['sensitivity']}"
            print(f"      noise on {p['name']}: sensitivity {sens}, scale {scale}, "
                  f"epsilon {float(Fraction(p['epsilon'])):.6g}", file=stream)
        for text in _plan_errors(d["expected_error"], rel.kind):
            print(f"      expected error: {text}", file=stream)
        if rel.where:
            print(f"      where {dict(rel.where)}", file=stream)
    after = remaining if seeded else remaining - spec.epsilon_requested
    print(f"  epsilon asked {float(spec.epsilon_requested):.6g}; budget left {float(remaining):.6g} now, "
          f"{float(after):.6g} after (ledger {ledger_text})", file=stream)
    if after < 0:
        print("  the ledger would refuse this run: not enough budget left", file=stream)
    print(f"  memory needed ~{splan.memory_bytes / 2**20:.3g} MiB"
          + (f" of {splan.available_bytes / 2**30:.3g} GiB available" if splan.available_bytes else ""), file=stream)


# ---------------------------------------------------------------------------
# blowfish explain: the guarantee in numbers
# ---------------------------------------------------------------------------
def protection_guarantee(spec, epsilon) -> tuple[list[GuaranteeTable], str]:
    """The guarantee tables of a spec's dataset protection policy at ``epsilon``, and a note.

    The policy is read on raw values (bins of width 1), as the ledger keeps
    it.  Its members (a secret graph on some attributes each) are combined
    exactly when their attribute sets are disjoint (``d_G`` is the largest
    of the members' distances, :func:`~blowfish_privacy.policy.guarantee.product_table`);
    members on the same attributes are intersected first.  When attribute
    sets overlap otherwise, each member's table is returned with a note:
    the combined distance is at least each member's, so the factor for a
    pair can be larger than any one table says.
    """
    raw = raw_domain(spec.domain)
    members = protect_members(spec.protect, spec.raw.get("policies", {}), spec.policies, spec.releases, raw,
                               spec.path)
    groups: dict[tuple, list] = {}
    names: dict[tuple, list] = {}
    for name, graph, attrs in members:
        groups.setdefault(tuple(attrs), []).append(graph)
        names.setdefault(tuple(attrs), []).append(name)
    parts = []
    for attrs, graphs in groups.items():
        sub = Domain([raw.attribute(a) for a in attrs])
        parts.append((Policy(sub, Intersection(graphs) if len(graphs) > 1 else graphs[0]), attrs))
    label = spec.protect
    if len(parts) == 1 and set(parts[0][1]) == set(raw.names):
        pol = parts[0][0]
        return [guarantee_table(Policy(raw, pol.secrets) if pol.domain != raw else pol, epsilon, name=label)], ""
    used = [a for _, attrs in parts for a in attrs]
    if len(used) == len(set(used)):
        return [product_table(parts, raw, epsilon, name=label)], ""
    tables = [guarantee_table(p, epsilon, name=f"{' & '.join(names[a])} on {', '.join(a)}") for p, a in parts]
    return tables, ("the members' attribute sets overlap: a pair's distance under the protection policy is at least "
                    "each member's, so its factor can be larger than these tables show")


def release_guarantee(rel) -> GuaranteeTable | None:
    """The guarantee table of one release at its epsilon, on raw values (None without a secret graph)."""
    graph = release_graph(rel)
    if graph is None:
        return None
    if graph.is_complete():
        name = "DP"  # a DP baseline protects every pair, whatever policy the spec names
    else:
        name = rel.policy_name or type(graph).__name__
    return guarantee_table(Policy(raw_domain(rel.domain), graph), float(rel.epsilon), name=name)


def print_guarantees(spec, stream=None) -> None:
    """The dataset protection policy's guarantee at the spec's epsilon (and at the whole budget)."""
    stream = stream or sys.stdout
    eps = float(spec.epsilon_requested)
    print(f"== the guarantee in numbers: the dataset's protection policy {spec.protect!r}, at epsilon {eps:g} "
          f"(all this spec's releases together) ==", file=stream)
    tables, note = protection_guarantee(spec, eps)
    for t in tables:
        print(t.text(), file=stream)
    if note:
        print(f"  note: {note}", file=stream)
    total = float(spec.total_epsilon)
    if total != eps:
        print(f"At the dataset's whole budget (epsilon {total:g}): ", file=stream)
        for t in protection_guarantee(spec, total)[0]:
            print("  " + t.compact(), file=stream)
    print(file=stream)


def print_explanation(ex: Explanation, stream=None) -> None:
    """A policy's explanation (its range-query errors as RMSEs in counts, as plan and demo print them)."""
    print(str(ex), file=stream or sys.stdout)
