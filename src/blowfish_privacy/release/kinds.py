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
from ..mechanisms.plan import Plan
from .selection import crosses_boundary

__all__ = ["Kind", "KINDS", "UNAVAILABLE_KINDS", "OptionError", "Output", "sensitivity_fields"]

#: Kinds of the design whose mechanisms are not part of this version.
#: Mechanism options that run a differential-privacy baseline (complete secret graph).
DP_BASELINES = {"dp_laplace", "hierarchical", "identity"}

UNAVAILABLE_KINDS = {"constrained_histogram"}


class OptionError(ValueError):
    """A release option is invalid: ``key`` names it, ``message`` says what is allowed."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


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
        crossing = crosses_boundary(rel.policy, rel.where) if rel.where else False
        if crossing and self.needs_public_total:
            raise OptionError(
                "where",
                f"kind {self.name!r} treats the number of selected rows as public, but a secret edge of "
                f"{rel.policy.secrets!r} joins selected and unselected values, so that number would be released "
                f"exactly; use a policy with no secret edge across the selection (secrets = \"partition\" with "
                f"by including {[k for k, _ in rel.where]}) or remove where",
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


def _hist_run(rel, hist, gen, plan):
    r = plan.measure(hist.reshape(rel.domain.shape), gen)
    dom = rel.domain
    fields = {
        "shape": list(dom.shape),
        **_common_fields(r),
        "noise_scale": str(r.scale),
        "expected_error": {"per_cell_variance": r.variance, "total_squared_error": r.expected_squared_error},
    }
    vectors = {"counts": r.values.reshape(-1)}
    if dom.ndim == 1:
        vectors = {"value": _labels(dom.attributes[0]), "counts": r.values}

    def plot(ax):
        if dom.ndim == 1:
            x = np.arange(dom.size)
            ax.bar(x, r.values, width=0.9, color="tab:blue")
            ticks = _labels(dom.attributes[0])
            if dom.size <= 30:
                ax.set_xticks(x, [str(t) for t in ticks], rotation=60, fontsize=7)
            ax.set_xlabel(dom.names[0])
        else:
            ax.bar(np.arange(r.values.size), r.values.reshape(-1), width=1.0)
            ax.set_xlabel("cell (" + " x ".join(dom.names) + ")")
        ax.set_ylabel("noisy count")

    return Output(fields, vectors, plot)


def _labels(attr) -> np.ndarray:
    if isinstance(attr, Ordinal):
        return attr.bin_values()
    return np.array([str(v) for v in attr.labels])


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
        "expected_error": {"range_query_mse_before_inference": r.expected_range_error()},
    }
    if o["ranges"]:
        fields["ranges"] = [
            {"low": lo, "high": hi, "count": float(r.range_query(lo, hi))} for lo, hi in o["ranges"]
        ]
    if o["quantiles"]:
        qv = np.atleast_1d(r.quantile(o["quantiles"]))
        fields["quantiles"] = [{"p": p, "value": _num(v)} for p, v in zip(o["quantiles"], qv)]
    vectors = {"value": attr.bin_values(), "cumulative": r.cumulative}

    def plot(ax):
        ax.step(attr.bin_values(), r.cumulative / max(r.n, 1), where="post", label=f"{mech} (eps={r.epsilon:.3g})")
        ax.set_xlabel(attr.name)
        ax.set_ylabel("released CDF")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right")

    return Output(fields, vectors, plot)


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
    if crossing:
        # a record leaving or entering the selection changes the sum by its
        # own value: the largest |value| of the selection bounds those moves
        vals = np.abs(attr.bin_values()[[attr.codes_of([v])[0] for k, v in rel.where if k == attr.name]]
                      if any(k == attr.name for k, _ in rel.where) else attr.bin_values())
        bound = int(vals.max())
        if bound > value:
            value, exact = bound, False
        how = (f"{how}; with moves into and out of the selection (largest |value| selected: {bound}), "
               "a proven upper bound")
    return mechanisms.plan_laplace((1,), sensitivity=value, epsilon=rel.epsilon, policy=rel.policy, how=how,
                                   sensitivity_exact=exact)


def _sum_run(rel, hist, gen, plan):
    attr = rel.domain.attributes[0]
    # exact in Python integers (never overflows); the noise is drawn on a
    # zero and added exactly, so no sum can make the measurement fail
    exact = int(np.dot(hist.astype(object), attr.bin_values().astype(object)))
    r = plan.measure(np.zeros(1, dtype=np.int64), gen)
    fields = {
        "value": exact + int(r.values[0]),
        **_common_fields(r),
        "noise_scale": str(r.scale),
        "expected_error": {"variance": r.variance},
        "note": "sum of bin values (lower bin edges)" if attr.bin_width != 1 else "",
    }
    if not (rel.where and crosses_boundary(rel.policy, rel.where)):
        fields["n"] = int(hist.sum())  # public: no secret edge leaves the selection
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
        "expected_error": {"variance": r.variance},
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
            "expected_error": {"total_squared_error": r.expected_squared_error},
            "buckets": None if r.buckets is None else int(np.max(r.buckets)) + 1,
        }
        attr = rel.domain.attributes[0]
        vectors = {"value": _labels(attr), "counts": np.asarray(r.histogram, dtype=np.float64)}

        def plot(ax):
            ax.plot(_labels(attr), r.histogram, lw=0.8)
            ax.set_xlabel(attr.name)
            ax.set_ylabel("estimated count")

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
    return {"k": k, "iterations": iters, "size_fraction": float(frac), "init": init}


def _km_plan(rel, crossing):
    o = rel.options
    if rel.policy.constraints:
        raise OptionError("policy", "kind 'kmeans' needs a policy without public constraints")
    init = o["init"] if o["init"] == "random" else np.asarray(o["init"], dtype=np.float64)
    return mechanisms.plan_kmeans(rel.policy, rel.epsilon, k=o["k"], iterations=o["iterations"], init=init,
                                  size_fraction=o["size_fraction"])


def _km_run(rel, hist, gen, plan):
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
        "sum", "noisy sum of one ordinal attribute", {}, "histogram", _sum_validate, _sum_plan, _sum_run,
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
        "kmeans", "SuLQ k-means: centroids from noisy cluster sizes and sums (000 Sec 6)",
        {"k": "clusters >= 1 (default 4)", "iterations": ">= 1 (default 10)",
         "init": "\"random\" (data-independent) or k centroids", "size_fraction": "share of each round for sizes"},
        "histogram", _km_validate, _km_plan, _km_run,
    ),
}
