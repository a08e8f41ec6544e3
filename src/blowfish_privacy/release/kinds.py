"""The release kinds a spec may list, as a registry of option schemas and plans.

Each kind says which options it takes and validates them against the
release's domain and policy, which exact aggregate it needs
(``"histogram"`` over its attributes, or the raw ``"column"``), how to
build the mechanism's :class:`~blowfish_privacy.mechanisms.Plan` from
public inputs (``plan``: calibrations, budget split, expected error,
memory; nothing read, nothing spent), and how to lay out the measured
:class:`~blowfish_privacy.mechanisms.Release` as JSON fields, vectors and a
plot (``run``).  A mechanism that lands later is wired in by adding one
:class:`Kind` to :data:`KINDS` (and removing its name from
:data:`UNAVAILABLE_KINDS`).

Selections (``where``): every sensitivity is taken over the whole domain
of the release, moves into and out of the selection included
(:mod:`.selection`).  Kinds whose mechanism treats the number of rows as
public (``needs_public_total``) refuse a selection whose boundary a secret
edge crosses: that number would be released exactly.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import mechanisms
from ..domain import Ordinal
from ..policy import Policy
from ..secrets import DistanceThreshold, FullDomain
from ..mechanisms.plan import NoisePart, Plan
from ..noise import discrete_laplace_variance
from .selection import crosses_boundary
from ..errors import OptionError  # noqa: F401  (re-exported)

__all__ = ["Kind", "KINDS", "UNAVAILABLE_KINDS", "OptionError", "Output", "sensitivity_fields"]

#: Kinds of the design whose mechanisms are not part of this version.
#: Mechanism options that run a differential-privacy baseline (complete secret graph).
DP_BASELINES = {"dp_laplace", "hierarchical", "identity"}

UNAVAILABLE_KINDS = {"constrained_histogram"}


@dataclass
class Output:
    """What a release produced: JSON fields, vectors, and how to plot them."""

    fields: dict
    vectors: dict = field(default_factory=dict)  # name -> 1-D numpy array
    plot: Callable | None = None  # plot(ax) draws the release


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    options: dict  # option name -> what it is
    aggregate: str  # "histogram" or "column"
    validate: Callable  # (options, domain, policy) -> options
    make_plan: Callable  # (release, crossing) -> Plan, from public inputs; raises OptionError
    run: Callable  # (release, aggregate, generator, plan) -> Output
    uses_policy: bool = True
    needs_public_total: bool = True  # the mechanism treats the row count as public

    def plan(self, rel) -> Plan:
        """The release's plan; raises :class:`OptionError` before anything is read or spent."""
        # the selection is judged under the policy of the guarantee: a DP
        # baseline's is the complete graph, whatever policy the spec names
        dp = privacy_model(self.name, rel.options) != "Blowfish"
        guarantee_policy = Policy(rel.domain, FullDomain()) if dp else rel.policy
        crossing = crosses_boundary(guarantee_policy, rel.where) if rel.where else False
        if crossing and self.needs_public_total:
            fix = ("a DP baseline's guarantee is plain DP, under which every selection is crossed: remove where"
                   if dp else f"use a policy with no secret edge across the selection (secrets = \"partition\" "
                   f"with by including {[k for k, _ in rel.where]}) or remove where")
            raise OptionError(
                "where",
                f"kind {self.name!r} treats the number of selected rows as public, but a secret edge of "
                f"{guarantee_policy.secrets!r} joins selected and unselected values, so that number would be "
                f"released exactly; {fix}",
            )
        try:
            return self.make_plan(rel, crossing)
        except OptionError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise OptionError("epsilon" if "epsilon" in str(exc) or "scale" in str(exc) else "policy",
                              str(exc)) from None


def _is_num(v: Any) -> bool:
    return isinstance(v, (numbers.Real,)) and not isinstance(v, bool) and math.isfinite(v)


def _one_ordinal(domain, kind: str) -> Ordinal:
    if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
        raise OptionError(
            "attributes",
            f"release kind {kind!r} needs exactly one ordinal attribute, got {list(domain.names)} "
            f"({', '.join(a.kind for a in domain.attributes)})",
        )
    return domain.attributes[0]


def sensitivity_fields(plan: Plan) -> dict:
    """The JSON ``sensitivity`` of a release: its plan's first noisy part, or none."""
    if not plan.parts:
        return {"value": 0, "exact": True, "how": "no secret pair changes the released values: no noise needed"}
    p = plan.parts[0]
    value = p.sensitivity
    if value is not None and not isinstance(value, int):
        value = int(value) if getattr(value, "denominator", 2) == 1 else str(value)
    return {"value": value, "exact": p.sensitivity_exact, "how": p.how}


def _common_fields(r) -> dict:
    s = r.summary()
    return {"epsilon_spent": s["epsilon_spent"], "epsilon_spent_exact": s["epsilon_spent_exact"],
            "secure": s["secure"], "privacy": s["privacy"]}


# -- histogram ----------------------------------------------------------------
_HIST_MECHANISMS = ("laplace", "dp_laplace")


def _hist_validate(options, domain, policy):
    mech = options.get("mechanism", "laplace")
    if mech not in _HIST_MECHANISMS:
        raise OptionError("mechanism", f"must be one of {list(_HIST_MECHANISMS)} for kind 'histogram', got {mech!r}")
    return {"mechanism": mech}


def _hist_plan(rel, crossing):
    # a selection's histogram changes by at most 1 per crossing edge and 2
    # per edge inside: the whole-domain sensitivity (2 with an edge) covers it
    if rel.options["mechanism"] == "dp_laplace":
        return mechanisms.plan_laplace(rel.domain.shape, sensitivity=2, epsilon=rel.epsilon,
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


def _hist_run(rel, hist, gen, plan):
    r = plan.measure(hist.reshape(rel.domain.shape), gen)
    dom = rel.domain
    # a selection's other cells hold no rows by construction (known zeros):
    # only the selected cells are reported (post-processing of the release)
    picks = _selected_slices(rel)
    values = r.values[np.ix_(*picks)] if rel.where else r.values
    shape = [len(p) for p in picks]
    fields = {
        "shape": shape,
        **_common_fields(r),
        "noise_scale": str(r.scale),
        "expected_error": {"per_cell_variance": r.variance, "total_squared_error": r.expected_squared_error,
                           **_rmse(r.variance, "one count")},
    }
    if rel.where:
        fields["selected_cells"] = ("only the cells the selection (where) allows; the other cells of the "
                                    f"{list(dom.shape)} domain hold no selected rows (known zeros) and are not reported")
    if dom.ndim == 1:
        attr = dom.attributes[0]
        vectors = {k: v[picks[0]] for k, v in _value_vectors(attr).items()}
        vectors["counts"] = values.reshape(-1)
    else:
        # one row per cell, in C order: each attribute's value, then the count
        grids = np.meshgrid(*picks, indexing="ij")
        vectors = {}
        for attr, g in zip(dom.attributes, grids):
            vectors[f"cell_{attr.name}"] = _labels(attr)[g.reshape(-1)]
            if isinstance(attr, Ordinal) and attr.bin_width > 1:
                vectors[f"cell_{attr.name}_high"] = _bin_highs(attr)[g.reshape(-1)]
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
        labels = [_tick_labels(attr)[i] for i in picks[0]]
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
    lab0 = [_tick_labels(a0)[i] for i in picks[0]]
    lab1 = [_tick_labels(a1)[i] for i in picks[1]]
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


def _labels(attr) -> np.ndarray:
    """The value of every bin (an ordinal bin by its lower edge) or label."""
    if isinstance(attr, Ordinal):
        return attr.bin_values()
    return np.array([str(v) for v in attr.labels])


def _bin_highs(attr) -> np.ndarray:
    """The inclusive upper edge of every bin of an ordinal attribute."""
    return np.minimum(attr.bin_values() + attr.bin_width - 1, attr.high)


def _tick_labels(attr) -> list[str]:
    """Readable labels: a binned attribute's bins as ranges ("17-21"), else the values or labels."""
    if isinstance(attr, Ordinal) and attr.bin_width > 1:
        return [f"{lo}-{hi}" if hi > lo else f"{lo}" for lo, hi in zip(attr.bin_values(), _bin_highs(attr))]
    return [str(v) for v in _labels(attr)]


def _value_vectors(attr) -> dict:
    """``value`` (lower edge or label) and, for a binned attribute, ``value_high`` (inclusive upper edge)."""
    out = {"value": _labels(attr)}
    if isinstance(attr, Ordinal) and attr.bin_width > 1:
        out["value_high"] = _bin_highs(attr)
    return out


def _rmse(variance, of: str) -> dict:
    """The expected error in the units of the answer: ``rmse`` and what it is the error of."""
    if variance is None or not isinstance(variance, (int, float)) or not math.isfinite(variance):
        return {"rmse": None, "rmse_of": of}
    return {"rmse": math.sqrt(max(float(variance), 0.0)), "rmse_of": of}


#: The privacy model of a release, by kind and mechanism option.
def privacy_model(kind: str, options: dict) -> str:
    """``"DP"`` (a differential-privacy baseline: its guarantee is plain bounded DP, whatever
    policy the spec names), ``"Pufferfish"`` or ``"Blowfish"``."""
    if kind in ("dawa", "privelet") or options.get("mechanism") in DP_BASELINES:
        return "DP"
    if kind == "pufferfish_sum":
        return "Pufferfish"
    return "Blowfish"


# -- cdf / range queries --------------------------------------------------------
_CDF_MECHANISMS = {
    "ordered_hierarchical": "Blowfish ordered hierarchical (000 Sec 7.2)",
    "ordered": "Blowfish ordered (000 Sec 7.1)",
    "hierarchical": "DP baseline: hierarchical with consistency (Hay et al. 2010)",
    "identity": "DP baseline: Laplace on every cell",
}


def _cdf_validate(options, domain, policy):
    attr = _one_ordinal(domain, "cdf")
    mech = options.get("mechanism", "ordered_hierarchical")
    if mech not in _CDF_MECHANISMS:
        raise OptionError("mechanism", f"must be one of {list(_CDF_MECHANISMS)} for kind 'cdf', got {mech!r}")
    fanout = options.get("fanout", 16)
    if isinstance(fanout, bool) or not isinstance(fanout, int) or fanout < 2:
        raise OptionError("fanout", f"must be an integer >= 2, got {fanout!r}")
    if "fanout" in options and mech in ("ordered", "identity"):
        raise OptionError("fanout", f"applies only to mechanisms 'ordered_hierarchical' and 'hierarchical', not {mech!r}")
    ranges = options.get("ranges", [])
    if not isinstance(ranges, list):
        raise OptionError("ranges", f"must be an array of [low, high] pairs, got {ranges!r}")
    for k, pair in enumerate(ranges):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)):
            raise OptionError("ranges", f"element {k} must be a pair of integers [low, high], got {pair!r}")
        lo, hi = pair
        if not (attr.low <= lo <= hi <= attr.high):
            raise OptionError(
                "ranges", f"element {k} = {pair} is outside the domain; allowed: {attr.low} <= low <= high <= {attr.high}"
            )
    qs = options.get("quantiles", [])
    if not isinstance(qs, list) or not all(_is_num(q) and 0 <= q <= 1 for q in qs):
        raise OptionError("quantiles", f"must be an array of numbers in [0, 1], got {qs!r}")
    return {"mechanism": mech, "fanout": fanout, "ranges": ranges, "quantiles": [float(q) for q in qs]}


def _cdf_plan(rel, crossing):
    o = rel.options
    mech = o["mechanism"]
    eps = rel.epsilon
    if mech == "ordered_hierarchical":
        return mechanisms.plan_ordered_hierarchical(rel.policy, eps, fanout=o["fanout"])
    if mech == "ordered":
        return mechanisms.plan_ordered(rel.policy, eps)
    if mech == "hierarchical":
        return mechanisms.plan_hierarchical(rel.domain.size, eps, fanout=o["fanout"])
    return mechanisms.plan_identity(rel.domain.size, eps)


def _cdf_run(rel, hist, gen, plan):
    o = rel.options
    mech = o["mechanism"]
    r = plan.measure(hist, gen)
    attr = rel.domain.attributes[0]
    if mech in ("hierarchical", "identity"):
        sens = {"value": 2, "exact": True, "how": f"{_CDF_MECHANISMS[mech]}: bounded differential privacy "
                "(node sensitivities in noise_parts)"}
    else:
        info = rel.policy.sensitivity_info("cumulative")
        sens = {"value": info.value, "exact": info.exact,
                "how": "cumulative sensitivity of the policy in bins, theta (000 Sec 7); the sensitivity of "
                       "every noisy node class is in noise_parts and node_sensitivities"}
    fields = {
        "sensitivity": sens,
        "mechanism_description": _CDF_MECHANISMS[mech],
        "n": r.n,
        **_common_fields(r),
        "epsilon_parts": {k: str(v) for k, v in r.epsilon_parts.items()},
        "noise_scales": {k: str(v) for k, v in r.scales.items()},
        "node_sensitivities": {k: (v if isinstance(v, int) else str(v)) for k, v in r.sensitivity.items()},
        "params": {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in r.params.items()},
        "expected_error": {"range_query_mse_before_inference": r.expected_range_error(),
                           **_rmse(r.expected_range_error(), "a range count (mean over all ranges, before "
                                   "inference)")},
    }
    if o["ranges"]:
        fields["ranges"] = [
            {"low": lo, "high": hi, "count": float(r.range_query(lo, hi)),
             # a range counts whole bins: the values it covers, in the units of the data
             "covers": [int(attr.bin_values()[attr.codes_of([lo])[0]]),
                        int(_bin_highs(attr)[attr.codes_of([hi])[0]])]}
            for lo, hi in o["ranges"]
        ]
    if o["quantiles"]:
        qv = np.atleast_1d(r.quantile(o["quantiles"]))
        fields["quantiles"] = [{"p": p, "value": _num(v)} for p, v in zip(o["quantiles"], qv)]
    vectors = {**_value_vectors(attr), "cumulative": r.cumulative}
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


def _num(v):
    v = v.item() if isinstance(v, np.generic) else v
    return int(v) if isinstance(v, float) and v.is_integer() else v


# -- sum of an ordinal attribute -------------------------------------------------
def _sum_validate(options, domain, policy):
    _one_ordinal(domain, "sum")
    return {}


def _sum_plan(rel, crossing):
    attr = rel.domain.attributes[0]
    info = rel.policy.sensitivity_info("sum", attribute=attr.name)
    value, exact = info.value, info.exact
    how = info.note or "exact maximum over the edges of the secret graph (000 Def 5.1)"
    w = attr.bin_width
    raw = getattr(rel, "raw_secrets", None)
    if w > 1 and isinstance(raw, DistanceThreshold) and rel.policy_note:
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
        highs = _bin_highs(attr)[codes] if codes else _bin_highs(attr)
        bound = int(max(np.abs(lows).max(), np.abs(highs).max()))
        if bound > value:
            value, exact = bound, False
        how = (f"{how}; with moves into and out of the selection (largest |value| selected: {bound}), "
               "a proven upper bound")
    return mechanisms.plan_laplace((1,), sensitivity=value, epsilon=rel.epsilon, policy=rel.policy, how=how,
                                   sensitivity_exact=exact)


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


def _sum_run(rel, column, gen, plan):
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
        **_common_fields(r),
        "noise_scale": str(r.scale),
        "expected_error": {"variance": r.variance, **_rmse(r.variance, f"the sum, in units of {attr.name}")},
    }
    if not (rel.where and crosses_boundary(rel.policy, rel.where)):
        fields["n"] = int(np.asarray(column).size)  # public: no secret edge leaves the selection
    return Output(fields)


# -- Pufferfish sum ----------------------------------------------------------------
def _puff_validate(options, domain, policy):
    _one_ordinal(domain, "pufferfish_sum")
    given = [k for k in ("absolute_error", "relative_error") if k in options]
    if len(given) != 1:
        raise OptionError("absolute_error", "give exactly one of absolute_error (k > 0) or relative_error (r > 0)")
    key = given[0]
    if not _is_num(options[key]) or options[key] <= 0:
        raise OptionError(key, f"must be a number > 0, got {options[key]!r}")
    if key == "relative_error" and domain.attributes[0].low <= 0:
        raise OptionError(key, f"needs values > 0 (logarithms); attribute {domain.names[0]!r} allows "
                          f"{domain.attributes[0].low}; use absolute_error")
    out = {key: float(options[key])}
    if "granularity" in options:
        g = options["granularity"]
        if not _is_num(g) or g <= 0:
            raise OptionError("granularity", f"must be a number > 0, got {g!r}")
        out["granularity"] = float(g)
    return out


def _puff_plan(rel, crossing):
    attr = rel.domain.attributes[0]
    # the declared range of the attribute, never the data, fixes the grid margin
    return mechanisms.plan_pufferfish_sum(rel.epsilon, bounds=(attr.low, attr.high), **rel.options)


def _puff_run(rel, column, gen, plan):
    r = plan.measure(column, gen)
    fields = {
        "value": r.value, "geometric_mean": r.geometric_mean, "n": r.n,
        **_common_fields(r),
        "granularity": r.granularity, "noise_scale": str(r.scale),
        "expected_error": {"variance": r.variance, **_rmse(r.variance, f"the sum, in units of {rel.attributes[0]}")},
        "guarantee": r.guarantee,
    }
    return Output(fields)


# -- 1-D histograms: transformed, data-dependent and wavelet mechanisms --------
def _h1_validate(kind):
    def validate(options, domain, policy):
        _one_ordinal(domain, kind)
        out = {}
        if "ratio" in options:
            r = options["ratio"]
            if not _is_num(r) or not 0 < r < 1:
                raise OptionError("ratio", f"must be a number in (0, 1) (the share of epsilon for the partition), got {r!r}")
            out["ratio"] = r
        if kind == "matching" and "method" in options:
            if options["method"] not in ("auto", "edges", "counts"):
                raise OptionError("method", f"must be 'auto', 'edges' or 'counts', got {options['method']!r}")
            out["method"] = options["method"]
        return out

    return validate


def _h1_plan(kind):
    def make_plan(rel, crossing):
        opts = dict(rel.options)
        if kind == "transformed":
            return mechanisms.plan_transformed_laplace(rel.policy, rel.epsilon)
        if kind == "matching":
            return mechanisms.plan_matching_transformed(rel.policy, rel.epsilon, **opts)
        if kind == "dawa_transformed":
            return mechanisms.plan_dawa_transformed(rel.policy, rel.epsilon, **opts)
        if kind == "dawa":
            return mechanisms.plan_dawa(rel.domain.size, rel.epsilon, **opts)
        return mechanisms.plan_privelet(rel.domain.size, rel.epsilon)

    return make_plan


def _h1_run(kind):
    def run(rel, hist, gen, plan):
        r = plan.measure(hist, gen)
        fields = {
            "mechanism": r.mechanism, "guarantee": r.guarantee,
            **_common_fields(r),
            "epsilon_parts": {k: str(v) for k, v in r.epsilon_parts.items()},
            "stretch": r.stretch,
            "expected_error": {"total_squared_error": r.expected_squared_error,
                               **_rmse(None if r.expected_squared_error is None else
                                       r.expected_squared_error / rel.domain.size,
                                       "one count (root of the mean over the values)" if kind in ("transformed", "privelet")
                                       else "one count, noise only (root of the mean over the values; the bias "
                                       "of the data-dependent buckets is not included)")},
            "buckets": None if r.buckets is None else int(np.max(r.buckets)) + 1,
        }
        attr = rel.domain.attributes[0]
        vectors = {**_value_vectors(attr), "counts": np.asarray(r.histogram, dtype=np.float64)}
        rmse = fields["expected_error"]["rmse"]

        def plot(ax):
            x = _labels(attr)
            ax.step(x, r.histogram, where="post", lw=0.8, label="estimated count")
            if rmse:
                h = np.asarray(r.histogram, dtype=np.float64)
                ax.fill_between(x, h - rmse, h + rmse, step="post", alpha=0.15, lw=0,
                                label=f"+-{rmse:.3g} (expected RMSE per count)")
            ax.set_xlabel(attr.name + (f" (bins of {attr.bin_width}, by lower edge)" if attr.bin_width > 1 else ""))
            ax.set_ylabel("estimated count")
            ax.legend(fontsize=7)

        return Output(fields, vectors, plot)

    return run


def _h1_kind(kind, description, options):
    return Kind(kind, description, options, "histogram", _h1_validate(kind), _h1_plan(kind), _h1_run(kind),
                uses_policy=kind not in ("dawa", "privelet"))


# -- k-means --------------------------------------------------------------------
def _km_validate(options, domain, policy):
    for a in domain.attributes:
        if not isinstance(a, Ordinal):
            raise OptionError("attributes", f"kind 'kmeans' needs ordinal attributes, got {a.name!r} ({a.kind})")
    k = options.get("k", 4)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise OptionError("k", f"must be an integer >= 1, got {k!r}")
    iters = options.get("iterations", 10)
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise OptionError("iterations", f"must be an integer >= 1, got {iters!r}")
    frac = options.get("size_fraction", 0.5)
    if not _is_num(frac) or not 0 < frac < 1:
        raise OptionError("size_fraction", f"must be a number in (0, 1), got {frac!r}")
    init = options.get("init", "random")
    if init != "random":
        ok = isinstance(init, list) and len(init) == k and all(
            isinstance(c, list) and len(c) == domain.ndim and all(_is_num(v) for v in c) for c in init)
        if not ok:
            raise OptionError("init", f"must be \"random\" or {k} centroids of {domain.ndim} numbers, got {init!r}")
    method = options.get("method", "grid")
    if method not in _KM_METHODS:
        raise OptionError("method", f"must be one of {list(_KM_METHODS)}, got {method!r}")
    out = {"k": k, "iterations": iters, "size_fraction": float(frac), "init": init, "method": method}
    if "cell" in options:
        cell = options["cell"]
        if isinstance(cell, bool) or not isinstance(cell, int) or cell < 1:
            raise OptionError("cell", f"must be an integer >= 1 (grid side in bins), got {cell!r}")
        out["cell"] = cell
    if method == "sulq" and "cell" in options:
        raise OptionError("cell", "applies only to methods 'grid' and 'eugkm'")
    for key in ("init", "size_fraction"):
        if method != "sulq" and key in options:
            raise OptionError(key, "applies only to method 'sulq'")
    if method != "sulq" and "iterations" not in options:
        out["iterations"] = 30  # Lloyd rounds on the noisy grid: post-processing, free
    return out


#: k-means mechanisms of the kind: the grid ones release the points once
#: (kmeans_grid: "grid" spreads each point over its cell's corners, whose
#: sensitivity falls with a distance threshold; "eugkm" counts cells, the
#: DP baseline of Su et al. 2016); "sulq" is 000 Sec 6 with the
#: cross-cluster correction.
_KM_METHODS = ("grid", "eugkm", "sulq")


def _km_plan(rel, crossing):
    o = rel.options
    if rel.policy.constraints:
        raise OptionError("policy", "kind 'kmeans' needs a policy without public constraints")
    if o["method"] == "sulq":
        init = o["init"] if o["init"] == "random" else np.asarray(o["init"], dtype=np.float64)
        return mechanisms.plan_kmeans(rel.policy, rel.epsilon, k=o["k"], iterations=o["iterations"], init=init,
                                      size_fraction=o["size_fraction"])
    interp = "linear" if o["method"] == "grid" else "nearest"
    if "cell" in o:
        return mechanisms.plan_kmeans_grid(rel.policy, rel.epsilon, k=o["k"], cell=o["cell"], interpolation=interp,
                                           iterations=o["iterations"])
    return _deferred_grid_plan(rel, interp)


def _deferred_grid_plan(rel, interp):
    """A grid plan whose cell side is chosen from the public row count.

    The number of records is public (bounded neighbours, and no secret edge
    crosses a selection: crossed selections are refused for this kind), so
    the grid can be sized from it without spending budget; the epsilon is
    fixed here, the sensitivity and scale follow from the cell (see
    ``mechanisms.kmeans_grid.grid_sensitivity``).
    """
    from dataclasses import replace as _replace

    o = rel.options
    probe = mechanisms.plan_kmeans_grid(rel.policy, rel.epsilon, k=o["k"], cell=_largest_cell(rel.domain),
                                        interpolation=interp, iterations=o["iterations"])
    part = NoisePart("nodes", None, True, "grid weights; the cell side (and with it the sensitivity "
                     "2 s^(d-1) min(theta, s) for a distance threshold theta, at most 2 s^d) is chosen from the "
                     "public number of records at the measurement (kmeans_grid.choose_cell)",
                     rel.epsilon, None, None)  # the requested epsilon: an upper bound of the spend

    def run(plan, hist, gen):
        n = int(np.asarray(hist).sum())
        cell = _fitting_cell(rel.domain, mechanisms.choose_cell(rel.policy, rel.epsilon, max(n, 1), interp))
        real = mechanisms.plan_kmeans_grid(rel.policy, rel.epsilon, k=o["k"], cell=cell, interpolation=interp,
                                           iterations=o["iterations"])
        return real.measure(hist, gen)

    return _replace(probe, parts=(part,), run=run, check=None,
                    options={**probe.options, "cell": "from the public row count"})


def _largest_cell(domain) -> int:
    return max(1, max(domain.shape))


def _fitting_cell(domain, cell: int) -> int:
    from ..mechanisms.kmeans_grid import MAX_NODES

    cell = max(1, int(cell))
    while int(np.prod([-(-n // cell) + 1 for n in domain.shape], dtype=np.float64)) > MAX_NODES:
        cell += 1
    return cell


def _km_run(rel, hist, gen, plan):
    if rel.options["method"] != "sulq":
        return _km_grid_run(rel, hist, gen, plan)
    dom = rel.domain
    # the histogram over the release's attributes is the multiset of points
    idx = np.repeat(np.arange(dom.size, dtype=np.int64), np.asarray(hist, dtype=np.int64).reshape(-1))
    pts = np.column_stack(dom.values(idx)).astype(np.int64).reshape(-1, dom.ndim)
    r = plan.measure(pts, gen)
    per_round = [
        {"size_sensitivity": it.sensitivity.size, "sum_sensitivity": it.sensitivity.sum,
         "size_exact": it.sensitivity.size_exact, "sum_exact": it.sensitivity.sum_exact,
         "epsilon_sizes": str(it.epsilon_sizes), "epsilon_sums": str(it.epsilon_sums)}
        for it in r.history
    ]
    fields = {
        "centroids": np.asarray(r.centroids, dtype=np.float64).tolist(),
        "initial_centroids": np.asarray(r.initial_centroids, dtype=np.float64).tolist(),
        "per_round": per_round,
        **_common_fields(r),
        "expected_error": "data dependent (see per_round sensitivities)",
    }

    def plot(ax):
        c = np.asarray(r.centroids, dtype=np.float64)
        if dom.ndim >= 2:
            ax.scatter(c[:, 0], c[:, 1], marker="x", s=80, color="tab:red")
            ax.set_xlabel(dom.names[0])
            ax.set_ylabel(dom.names[1])
        else:
            ax.eventplot(c[:, 0], colors="tab:red")
            ax.set_xlabel(dom.names[0])
        ax.set_title("released centroids", fontsize=9)

    return Output(fields, {}, plot)


def _km_grid_run(rel, hist, gen, plan):
    dom = rel.domain
    r = plan.measure(np.asarray(hist, dtype=np.int64).reshape(-1), gen)
    used = r.plan.parts[0]  # the plan actually measured (its cell may come from the public row count)
    fields = {
        "sensitivity": {"value": int(used.sensitivity), "exact": bool(used.sensitivity_exact), "how": used.how},
        "noise_parts": [p.describe() for p in r.plan.parts],
        "centroids": np.asarray(r.centroids, dtype=np.float64).tolist(),
        "method": rel.options["method"],
        "cell": r.cell,
        "grid_sensitivity": r.sensitivity,
        "noise_scale": str(r.scale),
        **_common_fields(r),
        "expected_error": {"per_node_variance": discrete_laplace_variance(r.scale)},
    }

    def plot(ax):
        c = np.asarray(r.centroids, dtype=np.float64)
        if dom.ndim >= 2:
            ax.scatter(c[:, 0], c[:, 1], marker="x", s=80, color="tab:red")
            ax.set_xlabel(dom.names[0])
            ax.set_ylabel(dom.names[1])
        else:
            ax.eventplot(c[:, 0], colors="tab:red")
            ax.set_xlabel(dom.names[0])
        ax.set_title(f"released centroids ({rel.options['method']} grid, cell {r.cell})", fontsize=9)

    return Output(fields, {}, plot)


KINDS: dict[str, Kind] = {
    "histogram": Kind(
        "histogram", "noisy counts of every value of the release's attributes",
        {"mechanism": "laplace (policy-specific sensitivity) or dp_laplace (DP baseline)"},
        "histogram", _hist_validate, _hist_plan, _hist_run, needs_public_total=False,
    ),
    "cdf": Kind(
        "cdf", "cumulative histogram of one ordinal attribute, with range queries and quantiles",
        {"mechanism": "ordered_hierarchical, ordered, hierarchical (DP) or identity (DP)",
         "fanout": "tree fan-out >= 2", "ranges": "array of [low, high] pairs to answer",
         "quantiles": "array of probabilities in [0, 1]"},
        "histogram", _cdf_validate, _cdf_plan, _cdf_run,
    ),
    "sum": Kind(
        "sum", "noisy sum of the raw values of one ordinal attribute", {}, "column", _sum_validate, _sum_plan,
        _sum_run,
        needs_public_total=False,
    ),
    "pufferfish_sum": Kind(
        "pufferfish_sum", "Pufferfish sum protected to an absolute or relative error (003 Sec 7.1)",
        {"absolute_error": "k > 0", "relative_error": "r > 0", "granularity": "grid step > 0"},
        "column", _puff_validate, _puff_plan, _puff_run, uses_policy=False,
    ),
    "transformed": _h1_kind("transformed", "Transformed + Laplace histogram for a tree (or embedded) policy (001 Sec 3)", {}),
    "dawa_transformed": _h1_kind("dawa_transformed", "DAWA partition + transformed bucket counts (001 Sec 4-5.1)",
                                 {"ratio": "share of epsilon for the partition, in (0, 1)"}),
    "matching": _h1_kind("matching", "Matching + Transformed: buckets of at most two values (001 Sec 5.2)",
                         {"ratio": "share of epsilon for the matching, in (0, 1)", "method": "auto, edges or counts"}),
    "dawa": _h1_kind("dawa", "DAWA (Li et al. 2014): the data-dependent DP baseline",
                     {"ratio": "share of epsilon for the partition, in (0, 1)"}),
    "privelet": _h1_kind("privelet", "Privelet (Haar wavelet): a DP baseline", {}),
    "kmeans": Kind(
        "kmeans", "k-means centroids: a noisy grid release then Lloyd (default), or SuLQ rounds (000 Sec 6)",
        {"k": "clusters >= 1 (default 4)", "iterations": ">= 1 (default 30 for grid methods, 10 for sulq)",
         "method": "grid (default: sensitivity falls with a distance threshold), eugkm (DP grid) or sulq",
         "cell": "grid side in bins (default: from the public row count)",
         "init": "sulq only: \"random\" (data-independent) or k centroids",
         "size_fraction": "sulq only: share of each round for sizes"},
        "histogram", _km_validate, _km_plan, _km_run,
    ),
}


def _with_model(name: str, run: Callable) -> Callable:
    def run_and_label(rel, aggregate, gen, plan):
        out = run(rel, aggregate, gen, plan)
        model = privacy_model(name, rel.options)
        out.fields = {"privacy_model": model, **out.fields}
        if model == "DP" and rel.policy_name:
            out.fields["privacy_model_note"] = (
                f"a differential-privacy baseline: its guarantee is plain (bounded) DP on {list(rel.attributes)}; "
                f"the policy {rel.policy_name!r} named in the spec does not change its calibration")
        return out

    return run_and_label


KINDS = {name: Kind(**{**k.__dict__, "run": _with_model(name, k.run)}) for name, k in KINDS.items()}
