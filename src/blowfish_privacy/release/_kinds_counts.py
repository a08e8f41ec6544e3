"""Release kinds over counts: ``histogram``, ``cdf`` (range queries and quantiles) and ``sum``.

Their option checks, plans from public inputs and JSON/vector/plot layout,
registered in :data:`.kinds.KINDS` (mechanisms: ``laplace`` with the
policy's sensitivity or the ``dp_laplace`` baseline; the cumulative
mechanisms of He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014,
000 Sec 7; the sum of one ordinal attribute).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import mechanisms
from ..mechanisms.cumulative.cumulative import plan_identity_projected
from ..policy.domain import Ordinal
from ..errors import OptionError
from ._kinds_base import (
    Output,
    bin_highs,
    common_fields,
    is_num,
    value_labels,
    num,
    one_ordinal,
    rmse_fields,
    tick_labels,
    value_vectors,
)


# -- histogram ----------------------------------------------------------------
_HIST_MECHANISMS = ("laplace", "dp_laplace")


def hist_validate(options, domain, policy):
    mech = options.get("mechanism", "laplace")
    if mech not in _HIST_MECHANISMS:
        raise OptionError("mechanism", f"must be one of {list(_HIST_MECHANISMS)} for kind 'histogram', got {mech!r}")
    return {"mechanism": mech}


def hist_plan(rel, crossing):
    # a selection's histogram changes by at most 1 per crossing edge and 2
    # per edge inside: the whole-domain sensitivity (2 with an edge) covers it
    if rel.options["mechanism"] == "dp_laplace":
        return mechanisms.plan_laplace(rel.domain.shape, sensitivity=2, epsilon=rel.epsilon, model="DP",
                                       how="bounded differential privacy baseline (complete secret graph)")
    return mechanisms.plan_histogram(rel.policy, rel.epsilon)


def _selected_slices(rel) -> tuple:
    """Per attribute of the release, the codes a ``where`` selects (all codes otherwise)."""
    dom = rel.domain
    picks = []
    for attr in dom.attributes:
        chosen = [v for k, v in rel.where if k == attr.name] if rel.where else []
        if chosen:
            picks.append(np.array(sorted({int(attr.codes_of([v])[0]) for v in chosen}), dtype=np.int64))
        else:
            picks.append(np.arange(attr.size, dtype=np.int64))
    return tuple(picks)


def hist_run(rel, hist, gen, plan):
    r = plan.measure(hist.reshape(rel.domain.shape), gen)
    dom = rel.domain
    # a selection's other cells hold no rows by construction (known zeros):
    # only the selected cells are reported (post-processing of the release)
    picks = _selected_slices(rel)
    values = r.values[np.ix_(*picks)] if rel.where else r.values
    shape = [len(p) for p in picks]
    fields = {
        "shape": shape,
        **common_fields(r),
        "noise_scale": str(r.scale),
        "expected_error": {"per_cell_variance": r.variance, "total_squared_error": r.expected_squared_error,
                           **rmse_fields(r.variance, "one count")},
    }
    if rel.where:
        fields["selected_cells"] = ("only the cells the selection (where) allows; the other cells of the "
                                    f"{list(dom.shape)} domain hold no selected rows (known zeros) and are not reported")
    if dom.ndim == 1:
        attr = dom.attributes[0]
        vectors = {k: v[picks[0]] for k, v in value_vectors(attr).items()}
        vectors["counts"] = values.reshape(-1)
    else:
        # one row per cell, in C order: each attribute's value, then the count
        grids = np.meshgrid(*picks, indexing="ij")
        vectors = {}
        for attr, g in zip(dom.attributes, grids):
            vectors[f"cell_{attr.name}"] = value_labels(attr)[g.reshape(-1)]
            if isinstance(attr, Ordinal) and attr.bin_width > 1:
                vectors[f"cell_{attr.name}_high"] = bin_highs(attr)[g.reshape(-1)]
        vectors["counts"] = values.reshape(-1)
    rmse = fields["expected_error"]["rmse"]

    def plot(ax):
        _plot_histogram(ax, dom, picks, values, rmse)

    return Output(fields, vectors, plot)


def _plot_histogram(ax, dom, picks, values, rmse) -> None:
    """1-D: bars with +-RMSE error bars and range labels; 2-D: one line per value of the shorter
    attribute (small multiples on one axis) when it has few values, else a heat map."""
    if dom.ndim == 1:
        attr = dom.attributes[0]
        x = np.arange(len(picks[0]))
        ax.bar(x, values.reshape(-1), width=0.85, color="tab:blue",
               yerr=rmse if rmse else None, ecolor="0.3", capsize=2 if len(x) <= 40 else 0,
               label="noisy count" + (f" (error bars: +-{rmse:.3g}, the expected RMSE)" if rmse else ""))
        labels = [tick_labels(attr)[i] for i in picks[0]]
        step = max(1, -(-len(labels) // 24))
        ax.set_xticks(x[::step], labels[::step], rotation=45 if max(map(len, labels)) > 3 else 0,
                      ha="right" if max(map(len, labels)) > 3 else "center", fontsize=7)
        ax.set_xlabel(attr.name + (f" (bins of {attr.bin_width})" if isinstance(attr, Ordinal) and attr.bin_width > 1 else ""))
        ax.set_ylabel("noisy count")
        ax.axhline(0, color="0.5", lw=0.6)
        ax.legend(fontsize=7, loc="upper right")
        return
    v = values.reshape(values.shape[0], values.shape[1], -1).sum(axis=2) if dom.ndim > 2 else values
    a0, a1 = dom.attributes[0], dom.attributes[1]
    lab0 = [tick_labels(a0)[i] for i in picks[0]]
    lab1 = [tick_labels(a1)[i] for i in picks[1]]
    small, big, labs_small, labs_big, vv = (0, 1, lab0, lab1, v) if v.shape[0] <= v.shape[1] else (1, 0, lab1, lab0, v.T)
    names = dom.names
    if len(labs_small) <= 6 and dom.ndim == 2:
        x = np.arange(len(labs_big))
        for k, lab in enumerate(labs_small):
            line = ax.plot(x, vv[k], marker="o", ms=3, lw=1.2, label=f"{names[small]} = {lab}")[0]
            if rmse:
                ax.fill_between(x, vv[k] - rmse, vv[k] + rmse, color=line.get_color(), alpha=0.15, lw=0)
        step = max(1, -(-len(labs_big) // 24))
        ax.set_xticks(x[::step], labs_big[::step], rotation=45 if max(map(len, labs_big)) > 3 else 0,
                      ha="right" if max(map(len, labs_big)) > 3 else "center", fontsize=7)
        ax.set_xlabel(names[big])
        ax.set_ylabel("noisy count")
        ax.axhline(0, color="0.5", lw=0.6)
        ax.legend(fontsize=7, title=("bands: +-expected RMSE per count" if rmse else None), title_fontsize=7)
        return
    im = ax.imshow(vv, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, label="noisy count" + (" (summed over the other attributes)" if dom.ndim > 2 else ""))
    for axis, labs in (("y", labs_small), ("x", labs_big)):
        pos = np.arange(len(labs))
        step = max(1, -(-len(labs) // 24))
        if axis == "x":
            ax.set_xticks(pos[::step], labs[::step], rotation=45, ha="right", fontsize=7)
        else:
            ax.set_yticks(pos[::step], labs[::step], fontsize=7)
    ax.set_ylabel(names[small])
    ax.set_xlabel(names[big])


# -- cdf / range queries --------------------------------------------------------
_CDF_MECHANISMS = {
    "ordered_hierarchical": "Blowfish ordered hierarchical (Section 7.2 of the Blowfish paper)",
    "ordered": "Blowfish ordered (Section 7.1 of the Blowfish paper)",
    "optimized": "Blowfish optimised strategy for all ranges under the policy's sensitivity (HDMM's p-Identity "
                 "template, compared with ordered and ordered hierarchical; least squares, then isotonic regression)",
    "hierarchical": "DP baseline: hierarchical with consistency (Hay et al. 2010)",
    "identity": "DP baseline: Laplace on every cell, projected onto the counts that are non-negative and sum to n "
                "(the CDF is non-decreasing; the projection biases long ranges at large n)",
}


def cdf_validate(options, domain, policy):
    attr = one_ordinal(domain, "cdf")
    mech = options.get("mechanism", "ordered_hierarchical")
    if mech not in _CDF_MECHANISMS:
        raise OptionError("mechanism", f"must be one of {list(_CDF_MECHANISMS)} for kind 'cdf', got {mech!r}")
    fanout = options.get("fanout", 16)
    if isinstance(fanout, bool) or not isinstance(fanout, int) or fanout < 2:
        raise OptionError("fanout", f"must be an integer >= 2, got {fanout!r}")
    if "fanout" in options and mech in ("ordered", "identity", "optimized"):
        raise OptionError("fanout", f"applies only to mechanisms 'ordered_hierarchical' and 'hierarchical', not {mech!r}")
    ranges = options.get("ranges", [])
    if not isinstance(ranges, list):
        raise OptionError("ranges", f"must be an array of [low, high] pairs, got {ranges!r}")
    for k, pair in enumerate(ranges):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)):
            raise OptionError("ranges", f"element {k} must be a pair of integers [low, high], got {pair!r}")
        lo, hi = pair
        if lo > hi:
            raise OptionError("ranges", f"element {k} = {pair} is reversed (low > high); write it [{hi}, {lo}]: each "
                              f"range is [low, high] with {attr.low} <= low <= high <= {attr.high}")
        if not (attr.low <= lo <= hi <= attr.high):
            raise OptionError(
                "ranges", f"element {k} = {pair} is outside the domain; allowed: {attr.low} <= low <= high <= {attr.high}"
            )
    qs = options.get("quantiles", [])
    if not isinstance(qs, list) or not all(is_num(q) and 0 <= q <= 1 for q in qs):
        raise OptionError("quantiles", f"must be an array of numbers in [0, 1], got {qs!r}")
    return {"mechanism": mech, "fanout": fanout, "ranges": ranges, "quantiles": [float(q) for q in qs]}


def cdf_plan(rel, crossing):
    o = rel.options
    mech = o["mechanism"]
    eps = rel.epsilon
    if mech == "ordered_hierarchical":
        return mechanisms.plan_ordered_hierarchical(rel.policy, eps, fanout=o["fanout"])
    if mech == "ordered":
        return mechanisms.plan_ordered(rel.policy, eps)
    if mech == "optimized":
        return mechanisms.plan_optimized_cdf(rel.policy, eps)
    if mech == "hierarchical":
        return mechanisms.plan_hierarchical(rel.domain.size, eps, fanout=o["fanout"])
    # a CDF release must be non-decreasing and end at n: the projected identity (biased at scale, stated)
    return plan_identity_projected(rel.domain.size, eps)


def cdf_run(rel, hist, gen, plan):
    o = rel.options
    mech = o["mechanism"]
    r = plan.measure(hist, gen)
    attr = rel.domain.attributes[0]
    # the sensitivity, the noise parts and the guarantee are the plan's (the release document's)
    fields = {
        "mechanism_description": _CDF_MECHANISMS[mech],
        "n": r.n,
        **common_fields(r),
        "epsilon_parts": {k: str(v) for k, v in r.epsilon_parts.items()},
        "noise_scales": {k: str(v) for k, v in r.scales.items()},
        "node_sensitivities": {k: (v if isinstance(v, int) else str(v)) for k, v in r.sensitivities.items()},
        "params": {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in r.params.items()},
        "expected_error": {"range_query_mse_before_inference": r.expected_range_error(),
                           **rmse_fields(r.expected_range_error(), "a range count (mean over all ranges, before "
                                   "inference)")},
    }
    if o["ranges"]:
        fields["ranges"] = [
            {"low": lo, "high": hi, "count": float(r.range_query(lo, hi)),
             # a range counts whole bins: the values it covers, in the units of the data
             "covers": [int(attr.bin_values()[attr.codes_of([lo])[0]]),
                        int(bin_highs(attr)[attr.codes_of([hi])[0]])]}
            for lo, hi in o["ranges"]
        ]
    if o["quantiles"]:
        qv = np.atleast_1d(r.quantile(o["quantiles"]))
        fields["quantiles"] = [{"p": p, "value": num(v)} for p, v in zip(o["quantiles"], qv)]
    vectors = {**value_vectors(attr), "cumulative": r.cumulative}
    rmse = fields["expected_error"]["rmse"]

    def plot(ax):
        plot_cdf(ax, attr, [(f"{_CDF_MECHANISMS[mech]}, eps={r.epsilon:.3g}", r.cumulative, rmse)], r.n)

    return Output(fields, vectors, plot)


def plot_cdf(ax, attr, curves, n) -> None:
    """Released cumulative counts on the data's range, each with a +-RMSE band.

    ``curves`` holds ``(label, cumulative, rmse or None)``.  The x axis spans
    the values where some curve rises (not the whole declared domain) and
    the y axis the counts they take there (not 0..n when most rows share
    one value), on a right-hand axis also as a fraction of n.
    """
    x = attr.bin_values()
    n = max(int(n), 1)
    lo_i, hi_i = len(x) - 1, 0
    ymin = float(n)
    for _, cum, _ in curves:
        c = np.asarray(cum, dtype=np.float64)
        rising = np.flatnonzero(np.diff(np.concatenate([[0.0], c])) > 0)
        if rising.size:
            lo_i, hi_i = min(lo_i, int(rising[0])), max(hi_i, int(rising[-1]))
        ymin = min(ymin, float(c[lo_i]) if rising.size else 0.0)
    if hi_i <= lo_i:
        lo_i, hi_i = 0, len(x) - 1
    pad = max(1, (hi_i - lo_i) // 50)
    a, b = max(0, lo_i - pad), min(len(x) - 1, hi_i + pad)
    for label, cum, rmse in curves:
        c = np.asarray(cum, dtype=np.float64)
        line = ax.step(x[a:b + 1], c[a:b + 1], where="post", lw=1.3,
                       label=label + (f" (band: +-{rmse:.3g}, expected RMSE of a count)" if rmse else ""))[0]
        if rmse:
            ax.fill_between(x[a:b + 1], c[a:b + 1] - rmse, np.minimum(c[a:b + 1] + rmse, n), step="post",
                            color=line.get_color(), alpha=0.18, lw=0)
    span = n - ymin
    ax.set_ylim(max(0.0, ymin - 0.05 * span), n + 0.05 * span)
    ax.set_xlim(x[a], x[b])
    unit = f" (bins of {attr.bin_width})" if attr.bin_width > 1 else ""
    ax.set_xlabel(f"{attr.name}{unit}: released range {x[a]}..{x[b]} of the domain {attr.low}..{attr.high}")
    ax.set_ylabel("released count of rows <= value")
    sec = ax.secondary_yaxis("right", functions=(lambda y: y / n, lambda f: f * n))
    sec.set_ylabel("fraction of rows")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)  # a CDF rises to the top: the lower right stays free


# -- sum of an ordinal attribute -------------------------------------------------
def sum_validate(options, domain, policy):
    one_ordinal(domain, "sum")
    return {}


def sum_plan(rel, crossing):
    attr = rel.domain.attributes[0]
    info = rel.policy.sensitivity_info("sum", attribute=attr.name)
    value, exact = info.value, info.exact
    how = info.note or "exact maximum over the edges of the secret graph (Definition 5.1 of the Blowfish paper)"
    w = attr.bin_width
    raw = getattr(rel, "raw_secrets", None)
    if w > 1 and raw is not None and raw.edge_threshold() is not None and rel.policy_note:
        # raw values are summed and the threshold speaks of raw values: a
        # secret change moves a value by at most theta, or within its bin
        # (always protected) by at most bin_width - 1
        value = min(max(math.floor(raw.theta), w - 1), attr.high - attr.low)
        exact = False
        how = (f"raw values within theta = {raw.theta} of each other, or in one bin (bin_width - 1 = {w - 1}), "
               "are secret: a secret change moves the raw sum by at most max(theta, bin_width - 1), a proven "
               "upper bound")
    elif w > 1:
        # the raw values are summed: a value x in bin i and y in bin j differ by
        # at most |lower(i) - lower(j)| + (w - 1), and a change inside one bin
        # (always treated as secret) by at most w - 1
        value, exact = value + (w - 1), False
        how = (f"{how}, on bin lower edges; plus bin_width - 1 = {w - 1} for the raw values inside the bins "
               "(|x - y| <= |lower(bin x) - lower(bin y)| + bin_width - 1; a change within a bin is protected "
               "too): a proven upper bound on the raw scale")
    if crossing:
        # a record leaving or entering the selection changes the sum by its
        # own raw value: the largest |value| of the selected bins bounds those moves
        codes = [int(attr.codes_of([v])[0]) for k, v in rel.where if k == attr.name]
        lows = attr.bin_values()[codes] if codes else attr.bin_values()
        highs = bin_highs(attr)[codes] if codes else bin_highs(attr)
        bound = int(max(np.abs(lows).max(), np.abs(highs).max()))
        if bound > value:
            value, exact = bound, False
        how = (f"{how}; with moves into and out of the selection (largest |value| selected: {bound}), "
               "a proven upper bound")
    plan = mechanisms.plan_laplace((1,), sensitivity=value, epsilon=rel.epsilon, policy=rel.policy, how=how,
                                   sensitivity_exact=exact)
    return replace(plan, options={**plan.options, "selection_crossed": bool(crossing)})


def _exact_sum(column: np.ndarray, attr) -> int:
    """The exact integer sum of a column of integers in [low, high] (Python int: never overflows)."""
    vals = np.asarray(column)
    if vals.size == 0:
        return 0
    ints = vals.astype(np.int64)
    bound = max(abs(attr.low), abs(attr.high))
    if bound == 0 or vals.size <= (2**62) // bound:  # the int64 sum cannot overflow
        return int(ints.sum(dtype=np.int64))
    return sum(int(chunk.sum(dtype=np.int64)) for chunk in np.array_split(ints, -(-vals.size * bound // 2**62) + 1))


def sum_run(rel, column, gen, plan):
    attr = rel.domain.attributes[0]
    # the raw values (clamped into the domain per dataset.invalid), summed
    # exactly; the noise is drawn on a zero and added exactly, so no sum can
    # make the measurement fail
    exact = _exact_sum(column, attr)
    r = plan.measure(np.zeros(1, dtype=np.int64), gen)
    fields = {
        "value": exact + int(r.values[0]),
        "summed": (f"the raw values of {attr.name!r} (integers in {attr.low}..{attr.high}, values outside "
                   "handled per dataset.invalid), not bin edges"),
        **common_fields(r),
        "noise_scale": str(r.scale),
        "expected_error": {"variance": r.variance, **rmse_fields(r.variance, f"the sum, in units of {attr.name}")},
    }
    if not plan.options["selection_crossed"]:
        fields["n"] = int(np.asarray(column).size)  # public: no secret edge leaves the selection
    return Output(fields)
