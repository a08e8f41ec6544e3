"""The headline tables of ``blowfish bench dpbench`` in Markdown (the DPBench page of the documentation, docs/experiments/dpbench.md).

Part of :mod:`.dpbench`.  From the benchmark's rows (one per data set,
scale, domain, workload, epsilon, algorithm and repetition) it writes two
tables per dimension:

* who wins where: for each (epsilon, scale), the best DP baseline with its
  error, and for each Blowfish policy the best mechanism under it with its
  error ratio to the best DP baseline;
* every algorithm's error at one epsilon (0.1 by default), per scale;

and, between them, what each Blowfish policy's gain costs: the guarantee
in numbers (:func:`blowfish_privacy.policy.guarantee.guarantee_comparison`), the
bound e^(epsilon d_G) on how far an observer's odds between two values of
one record can move, per distance d_G in the policy's secret graph
(000 eq. 9), beside bounded DP's e^epsilon for every pair.

Errors are DPBench's scaled average L1 error (mean |error| / records) on
one workload (2000 random ranges by default): the mean over repetitions per
data set, then the geometric mean over data sets.  A ratio compares, per
data set, a Blowfish mechanism with the best DP baseline *of that data
set*, then takes the geometric mean of the ratios; below 1 means the
policy bought accuracy.
"""

from __future__ import annotations

import math

from ..policy.guarantee import format_bound, guarantee_comparison
from ._dpbench_algorithms import ALGORITHMS, policy_of

__all__ = ["headline_markdown"]


def _geomean(values) -> float:
    vals = [max(v, 1e-300) for v in values]
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _fmt(v: float) -> str:
    return f"{v:.1e}" if v < 0.1 else f"{v:.2g}"


def _ratio(v: float) -> str:
    return f"{v:.2g}x"


def headline_markdown(rows: list[dict], dims: int, *, workload: str = "random", epsilon: float = 0.1) -> str:
    """Markdown of the two headline tables for ``dims`` (empty string without rows).

    Parameters
    ----------
    rows : list of dict
        Typed benchmark rows (``dpbench.run(...).rows``, or the CSV read
        back with its numeric fields converted).
    dims : int
        1 or 2.
    workload : str
        The workload the tables report.
    epsilon : float
        The epsilon of the per-algorithm table (the nearest one measured).
    """
    rows = [r for r in rows if int(r["dims"]) == dims and r["workload"] == workload]
    if not rows:
        return ""
    per: dict = {}
    for r in rows:
        per.setdefault((r["algorithm"], int(r["scale"]), float(r["epsilon"]), r["dataset"]), []).append(
            float(r["scaled_l1"]))
    per = {k: sum(v) / len(v) for k, v in per.items()}
    algs = sorted({k[0] for k in per})
    info = {a: ALGORITHMS.get((dims, a)) for a in algs}
    dp_algs = [a for a in algs if info[a] is not None and info[a].privacy == "DP"]
    bf_algs = [a for a in algs if info[a] is not None and info[a].privacy != "DP"]
    scales = sorted({k[1] for k in per})
    epsilons = sorted({k[2] for k in per})
    datasets = sorted({k[3] for k in per})
    domain = sorted({int(r["domain"]) for r in rows})
    reps = sorted({int(r["repetition"]) for r in rows})

    def err(a, s, e):
        vals = [per[(a, s, e, d)] for d in datasets if (a, s, e, d) in per]
        return _geomean(vals) if vals else None

    def best_dp(s, e, d):
        vals = [per[(b, s, e, d)] for b in dp_algs if (b, s, e, d) in per]
        return min(vals) if vals else None

    def ratio(a, s, e):
        rs = []
        for d in datasets:
            b = best_dp(s, e, d)
            if b and (a, s, e, d) in per:
                rs.append(per[(a, s, e, d)] / b)
        return _geomean(rs) if rs else None

    size = " x ".join([str(domain[0])] * dims) if len(domain) == 1 else ", ".join(map(str, domain))
    out = [f"**{dims}-D**, {len(datasets)} data sets, domain {size}, workload `{workload}`, "
           f"{len(reps)} repetitions; scaled average L1 error (geometric mean over data sets).", ""]

    # who wins where
    policies = sorted({info[a].policy for a in bf_algs})
    head = ["epsilon", "records", "best DP baseline"] + [f"best under {p}" for p in policies]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for e in epsilons:
        for s in scales:
            dp_err = {a: err(a, s, e) for a in dp_algs}
            dp_err = {a: v for a, v in dp_err.items() if v is not None}
            if not dp_err:
                continue
            win = min(dp_err, key=dp_err.get)
            cells = [f"{e:g}", f"{s:.0e}", f"{win} {_fmt(dp_err[win])}"]
            for p in policies:
                cand = {a: ratio(a, s, e) for a in bf_algs if info[a].policy == p}
                cand = {a: v for a, v in cand.items() if v is not None}
                if cand:
                    a = min(cand, key=cand.get)
                    cells.append(f"{a} {_ratio(cand[a])}")
                else:
                    cells.append("-")
            out.append("| " + " | ".join(cells) + " |")
    out.append("")

    # every algorithm at one epsilon
    e = min(epsilons, key=lambda x: abs(math.log(x / epsilon)))
    out += _guarantee_section(policies, bf_algs, info, max(domain), e)
    if any(r.get("neighbours") == "unbounded" for r in rows) and out[-1:] == [""]:
        out[-1:] = [f"Neighbours unbounded: the DP baselines ran as {2 * e:g}-DP under bounded neighbours (2 x "
                    f"epsilon), so a change of one record's value moves the odds by up to {format_bound(2 * e)} under "
                    f"them, not the bounded DP column's {format_bound(e)}.", ""]
    head = ["algorithm", "privacy / policy"] + [f"n={s:.0e}" for s in scales]
    out.append(f"Every algorithm at epsilon {e:g} (in brackets: the ratio to the best DP baseline):")
    out.append("")
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for a in dp_algs + bf_algs:
        cells = [a, "DP" if a in dp_algs else info[a].policy]
        for s in scales:
            v = err(a, s, e)
            if v is None:
                cells.append("-")
            elif a in dp_algs:
                cells.append(_fmt(v))
            else:
                cells.append(f"{_fmt(v)} ({_ratio(ratio(a, s, e))})")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _guarantee_section(policies: list[str], bf_algs: list[str], info: dict, k: int, epsilon: float) -> list[str]:
    """Markdown lines: the guarantee each Blowfish policy's gain was bought with, beside DP's."""
    shown, missing = {}, []
    for p in policies:
        alg = next(info[a] for a in bf_algs if info[a].policy == p)
        try:
            shown[p] = policy_of(alg, k)
        except ValueError as exc:  # no policy object for it: say so rather than show a gain without its cost
            missing.append(f"{p}: {exc}")
    if not shown and not missing:
        return []
    out = [f"What each policy's gain costs, at epsilon {epsilon:g}: an observer's odds between two values of one "
           f"record move by at most e^(epsilon d_G), d_G the distance of the two values in the policy's secret "
           "graph (equation 9 of the Blowfish paper; inf: not protected at all); "
           "under bounded DP by e^epsilon for every pair.", ""]
    if shown:
        out += [guarantee_comparison(shown, epsilon, markdown=True), ""]
    out += [f"No guarantee table for {m}" for m in missing]
    if missing:
        out.append("")
    return out
