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

The registry is built once; a kind is an option schema, a plan factory and
an output layout, nothing else: the privacy model, the sensitivity, the
noise parts, the guarantee and the citation of a release document come from
its plan (:meth:`~blowfish_privacy.mechanisms.Plan.describe`, laid out by
:mod:`.document`).

Each kind declares the privacy model its plan states (``model``: a
constant, or :class:`ModelBy` the value of the option that picks a DP
baseline), so the spec's checks know it before anything is planned; a test
plans every registered kind with every declared value and holds the two
equal, and :meth:`Kind.plan` refuses a plan that states another model.

Modules, one per family: the common ground (:class:`Kind`,
:class:`ModelBy`, :class:`Output`, shared fields) in
:mod:`._kinds_base`; ``histogram``, ``cdf`` and ``sum`` in
:mod:`._kinds_counts`; ``pufferfish_sum`` in :mod:`._kinds_pufferfish`; the
1-D histogram kinds in :mod:`._kinds_1d`; ``kmeans`` in :mod:`._kinds_kmeans`.
This module holds the registry.
"""

from __future__ import annotations

from ..errors import OptionError  # noqa: F401  (re-exported)
from ._kinds_1d import h1_kind
from ._kinds_base import UNAVAILABLE_KINDS, Kind, ModelBy, Output
from ._kinds_counts import cdf_plan, cdf_run, cdf_validate, hist_plan, hist_run, hist_validate, sum_plan, sum_run, sum_validate
from ._kinds_kmeans import km_plan, km_run, km_validate
from ._kinds_pufferfish import puff_plan, puff_run, puff_validate

__all__ = ["Kind", "KINDS", "ModelBy", "UNAVAILABLE_KINDS", "OptionError", "Output"]


KINDS: dict[str, Kind] = {
    "histogram": Kind(
        "histogram", "noisy counts of every value of the release's attributes",
        {"mechanism": "laplace (policy-specific sensitivity) or dp_laplace (DP baseline)"},
        "histogram", hist_validate, hist_plan, hist_run, needs_public_total=False,
        model=ModelBy("mechanism", {"laplace": "Blowfish", "dp_laplace": "DP"}),
    ),
    "cdf": Kind(
        "cdf", "cumulative histogram of one ordinal attribute, with range queries and quantiles",
        {"mechanism": "ordered_hierarchical, ordered, hierarchical (DP) or identity (DP)",
         "fanout": "tree fan-out >= 2", "ranges": "array of [low, high] pairs to answer",
         "quantiles": "array of probabilities in [0, 1]"},
        "histogram", cdf_validate, cdf_plan, cdf_run,
        model=ModelBy("mechanism", {"ordered_hierarchical": "Blowfish", "ordered": "Blowfish", "optimized": "Blowfish",
                                    "hierarchical": "DP", "identity": "DP"}),
    ),
    "sum": Kind(
        "sum", "noisy sum of the raw values of one ordinal attribute", {}, "column", sum_validate, sum_plan,
        sum_run,
        needs_public_total=False, model="Blowfish",
    ),
    "pufferfish_sum": Kind(
        "pufferfish_sum", "Pufferfish sum protected to an absolute or relative error "
                          "(Section 7.1 of the Pufferfish paper)",
        {"absolute_error": "k > 0", "relative_error": "r > 0", "granularity": "grid step > 0"},
        "column", puff_validate, puff_plan, puff_run, uses_policy=False, model="Pufferfish",
    ),
    "transformed": h1_kind("transformed", "Transformed + Laplace histogram for a tree (or embedded) policy "
                                          "(Section 3 of the data-dependent Blowfish report)", {},
                          model="Blowfish"),
    "dawa_transformed": h1_kind("dawa_transformed", "DAWA partition + transformed bucket counts "
                                                    "(Sections 4-5.1 of the data-dependent Blowfish report)",
                                 {"ratio": "share of epsilon for the partition, in (0, 1)"}, model="Blowfish"),
    "matching": h1_kind("matching", "Matching + Transformed: buckets of at most two values "
                                    "(Section 5.2 of the data-dependent Blowfish report)",
                         {"ratio": "share of epsilon for the matching, in (0, 1)", "method": "auto, edges or counts"},
                         model="Blowfish"),
    "dawa": h1_kind("dawa", "DAWA (Li et al. 2014): the data-dependent DP baseline",
                     {"ratio": "share of epsilon for the partition, in (0, 1)"}, model="DP"),
    "privelet": h1_kind("privelet", "Privelet (Haar wavelet): a DP baseline", {}, model="DP"),
    "kmeans": Kind(
        "kmeans", "k-means centroids: a noisy grid release then Lloyd (default), or SuLQ rounds "
                  "(Section 6 of the Blowfish paper)",
        {"k": "clusters >= 1 (default 4)", "iterations": ">= 1 (default 30 for grid methods, 10 for sulq)",
         "method": "grid (default: sensitivity falls with a distance threshold), eugkm (DP grid) or sulq",
         "cell": "grid side in bins (default: from the public row count)",
         "init": "sulq only: \"random\" (data-independent) or k centroids",
         "size_fraction": "sulq only: share of each round for sizes"},
        "histogram", km_validate, km_plan, km_run, model="Blowfish",  # eugkm too: its grid is planned under the policy
    ),
}
