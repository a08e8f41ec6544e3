"""Release kinds over one ordinal attribute's histogram: transformed, data-dependent, wavelet.

``transformed``, ``dawa_transformed``, ``matching`` (Anuarbek, Data-Dependent
Blowfish Private Algorithm for Histogram Queries, 001 Sec 3-5) and the DP
baselines ``dawa`` (Li et al. 2014) and ``privelet``; each is one
:class:`Kind` made by :func:`h1_kind`, registered in :data:`.kinds.KINDS`.
"""

from __future__ import annotations

import numpy as np

from .. import mechanisms
from ..errors import OptionError
from ._kinds_base import Kind, Output, common_fields, is_num, value_labels, one_ordinal, rmse_fields, value_vectors


# -- 1-D histograms: transformed, data-dependent and wavelet mechanisms --------
def _h1_validate(kind):
    def validate(options, domain, policy):
        one_ordinal(domain, kind)
        out = {}
        if "ratio" in options:
            r = options["ratio"]
            if not is_num(r) or not 0 < r < 1:
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
            **common_fields(r),
            "epsilon_parts": {k: str(v) for k, v in r.epsilon_parts.items()},
            "stretch": r.stretch,
            "expected_error": {"total_squared_error": r.expected_squared_error,
                               **rmse_fields(None if r.expected_squared_error is None else
                                       r.expected_squared_error / rel.domain.size,
                                       "one count (root of the mean over the values)" if kind in ("transformed", "privelet")
                                       else "one count, noise only (root of the mean over the values; the bias "
                                       "of the data-dependent buckets is not included)")},
            "buckets": None if r.buckets is None else int(np.max(r.buckets)) + 1,
        }
        attr = rel.domain.attributes[0]
        vectors = {**value_vectors(attr), "counts": np.asarray(r.histogram, dtype=np.float64)}
        rmse = fields["expected_error"]["rmse"]

        def plot(ax):
            x = value_labels(attr)
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


def h1_kind(kind, description, options, *, model):
    """The 1-D histogram kind ``kind``; ``model`` is the model its plan states (``"DP"`` for a baseline)."""
    return Kind(kind, description, options, "histogram", _h1_validate(kind), _h1_plan(kind), _h1_run(kind),
                uses_policy=model != "DP", model=model)  # a DP baseline needs no policy
