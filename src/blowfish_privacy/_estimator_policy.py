"""The policy of an estimator of :mod:`blowfish_privacy.sklearn` and the refusals decided from it.

A fit's policy is given (``policy``), built from public ``bounds``
(:meth:`Policy.from_bounds`), or read from the data (neither; not
private).  Everything refused here is decided from public inputs (the
parameters, the bounds, the policy, X's column names and shape) before
X's values are read and before any budget is spent, except the span of
bounds read from the data, which is never quoted.
"""

from __future__ import annotations

import math

import numpy as np

from ._estimator_input import on_grid
from ._validation import memory_limit
from .policy._policy import Policy

__all__ = ["bounds_policy", "check_public_policy", "check_theta", "derived_bounds"]

#: Refusal of a policy that protects nothing: said the same way for every cause.
_EXACT = ("so no pair of values is protected and the centroids would be exact statistics of the rows released "
          "with no noise; refused (nothing was read or spent)")


def bounds_policy(bounds, theta, metric, table_names: list[str] | None) -> Policy:
    """``Policy.from_bounds`` named by a table's columns, refusing a table whose column count differs from bounds'.

    Only X's column names (public) are looked at, never its values.
    """
    lower = np.atleast_1d(np.asarray(bounds[0])) if isinstance(bounds, (tuple, list)) and len(bounds) == 2 else None
    d = lower.size if lower is not None else None
    if table_names is not None and d is not None and len(table_names) != d:
        raise ValueError(f"bounds give {d} feature(s) but X has {len(table_names)} columns "
                         f"{table_names[:10]}{' ...' if len(table_names) > 10 else ''}: give one pair of bounds "
                         "per column of X (n_features mismatch)")
    return Policy.from_bounds(bounds, theta=theta, metric=metric, names=table_names)


def check_theta(theta, metric) -> None:
    """theta and metric of bounds (given or read from the data): refused when they join no two grid values."""
    probe = Policy.from_bounds((0, 1), theta=theta, metric=metric)  # validates theta and metric too
    if not probe.secrets.has_edge(probe.domain):
        raise ValueError(f"theta must be >= 1 (grid values differ by at least 1 in every metric), got "
                         f"theta={theta!r}, {_EXACT}")


def check_public_policy(policy: Policy, source: str, *, n_clusters: int, method: str, init, theta,
                        metric) -> None:
    """The refusals of a public policy, before X's values are read: ``source`` is ``"policy"`` or ``"bounds"``.

    theta (with bounds), the memory of the domain's histogram, a secret graph
    without an edge, ``n_clusters`` above the number of cells, and an
    ``init`` array of the wrong shape.
    """
    domain = policy.domain
    if source == "bounds":
        check_theta(theta, metric)
    limit = memory_limit()
    if 8 * domain.size > limit:
        what = ("bounds: the box of the bounds has {:,} cells (the product of upper - lower + 1 over the features)"
                if source == "bounds" else "policy: its domain has {:,} cells")
        raise ValueError(what.format(domain.size) + f" and its histogram (8 bytes per cell) needs more than the "
                         f"{limit / 2**30:.3g} GiB of memory available; allowed: "
                         + ("bounds whose box fits, or a policy whose ordinal attributes have wider bins"
                            if source == "bounds" else "a domain that fits (wider bins or fewer attributes)"))
    if not policy.secrets.has_edge(domain):
        what = ("bounds: every feature's bounds hold a single value" if source == "bounds" else
                f"policy: its secret graph {policy.secrets!r} joins no two values of its domain")
        raise ValueError(f"{what}, {_EXACT}")
    if n_clusters > domain.size:
        cells = "the box of bounds" if source == "bounds" else "the policy's domain"
        raise ValueError(f"n_clusters must be at most the domain size {domain.size} (the cells of {cells}: more "
                         f"centroids than cells would repeat some), got {n_clusters}")
    if method == "sulq" and not isinstance(init, str) and np.shape(init) != (n_clusters, domain.ndim):
        raise ValueError(f"init must be 'random' or an array of shape (n_clusters, n_features) = "
                         f"({n_clusters}, {domain.ndim}), got shape {np.shape(init)}")


def derived_bounds(cols: dict, limit: int) -> tuple[list[int], list[int]]:
    """``(lower, upper)`` of the training columns on the grid (NOT private), refused above ``limit`` cells.

    The span is a statistic of the rows: the refusal quotes only the public
    limit.
    """
    lower, upper = [], []
    for col in cols.values():
        col = on_grid(col)
        finite = col[np.isfinite(col)] if col.dtype.kind == "f" else col
        lower.append(int(finite.min()) if finite.size else 0)
        upper.append(int(finite.max()) if finite.size else 0)
    if math.prod(hi - lo + 1 for lo, hi in zip(lower, upper)) > limit:
        raise ValueError(f"X: the bounds read from the data span more cells than the {limit:,} allowed when neither "
                         "bounds nor policy is given; pass public bounds=(lower, upper) or a policy (with binned "
                         "attributes)")
    return lower, upper
