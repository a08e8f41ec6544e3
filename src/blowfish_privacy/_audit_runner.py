"""Running any of the library's mechanisms or plans on a histogram, for the exact auditor.

:func:`.audit.exact` enumerates databases as histograms over a policy's
domain; :func:`runner` turns what it is given into one function
``run(hist, policy, epsilon, generator)``:

* a plan factory (a function named ``plan_*``) is planned once from public
  inputs and its plan measures every database.  It is given the domain
  size when its first parameter is named ``size``, else the policy (which
  the DP baselines that take a ``shape`` read as theirs).  A k-means plan
  measures points: one record per count, in value order;
* ``mechanisms.laplace`` answers the query named by option ``query``;
* ``mechanisms.kmeans`` clusters the database's points;
* the DP mechanisms of a histogram alone (hierarchical, identity, DAWA,
  Privelet) take no policy; any other function is called as
  ``f(hist, policy, epsilon, generator, **options)``.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import mechanisms as mech
from .mechanisms.plan import Plan

__all__ = ["runner"]


def _first_parameter(factory) -> str:
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: given the policy
        return ""
    return params[0].name if params else ""


def _points(h: np.ndarray, policy) -> np.ndarray:
    """The records of histogram ``h`` as points (one row per record, in value order)."""
    idx = np.repeat(np.arange(h.size), h)
    return np.column_stack(policy.domain.values(idx)).astype(np.int64).reshape(-1, policy.domain.ndim)


def _plan_runner(factory, name: str, options: dict, policy, eps):
    # the DP baselines of one axis take the domain size; everything else the policy
    # (a baseline that takes a shape reads the policy's)
    first = policy.domain.size if _first_parameter(factory) == "size" else policy
    plan = factory(first, eps, **options)
    if not isinstance(plan, Plan):
        raise TypeError(f"mechanism {name} must return a Plan, got {type(plan).__name__}")
    shape = plan.aggregate_shape

    def measure(h, pol, e, g):
        if name == "plan_kmeans":
            return plan.measure(_points(h, pol), g)
        if shape is not None and int(np.prod(shape, dtype=np.int64)) == h.size:
            h = h.reshape(shape)
        return plan.measure(h, g)

    return measure


def runner(mechanism, options: dict, policy, eps):
    """``run(hist, policy, epsilon, generator)`` for ``mechanism`` (see the module docstring)."""
    name = getattr(mechanism, "__name__", "")
    if name == "plan_laplace":
        raise TypeError("plan_laplace takes a shape and a sensitivity, not a policy; audit mechanisms.laplace "
                        "(option query) or mechanisms.plan_histogram instead")
    if name.startswith("plan_"):
        return _plan_runner(mechanism, name, options, policy, eps)
    if mechanism is mech.laplace:
        query = options.pop("query", "histogram")
        if isinstance(query, str) and query not in ("histogram", "cumulative"):
            raise ValueError(f"query must be 'histogram', 'cumulative' or an integer matrix W, got {query!r}")

        def answer(h):
            if isinstance(query, str):
                return h if query == "histogram" else np.cumsum(h)
            return np.asarray(query) @ h

        return lambda h, pol, eps, g: mech.laplace(
            answer(h), sensitivity=pol.sensitivity(query), epsilon=eps, generator=g
        )
    if mechanism is mech.kmeans:
        return lambda h, pol, eps, g: mech.kmeans(_points(h, pol), pol, eps, g, **options)
    if mechanism in (mech.hierarchical, mech.identity, mech.dawa, mech.privelet):
        return lambda h, pol, eps, g: mechanism(h, eps, g, **options)
    return lambda h, pol, eps, g: mechanism(h, pol, eps, g, **options)
