"""What a policy protects, in plain words, before any budget is spent.

:func:`explain` describes a policy: the guarantee in numbers (the bound
e^(epsilon d) for the distances 1, 2, 5, 10, 50 that occur in the secret
graph, the largest distance and the unprotected pairs, beside DP's
e^epsilon; :mod:`blowfish_privacy.policy.guarantee`), example pairs of values of one
individual with their secret-graph distance d_G and the guarantee
e^(epsilon d_G) on how much better than a coin toss an adversary can tell
them apart (000 eq. 9); pairs that are not protected at all
(d_G = infinity, e.g. across the blocks of a partition); the sensitivity of
common queries under the policy against plain differential privacy (the
FullDomain policy on the same domain, 000 Sec 4.2); and, for 1-D ordinal
domains, the expected error of the range-query mechanisms at the given
epsilon against their DP counterparts.

The first four come from the policy layer (``Policy.explain`` gives them,
:mod:`blowfish_privacy.policy._explanation`); the error table comes from the plans
of the mechanisms, which sit above the policies, so it is added here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math
from dataclasses import replace

from . import mechanisms
from ._optional import installed
from .policy._explanation import Explanation, describe_policy, dp_reference
from ._typing import Real

if TYPE_CHECKING:
    from .policy._policy import Policy

__all__ = ["ERROR_TABLE_LIMIT", "OPTIMIZED_ROW_LIMIT", "Explanation", "explain"]

#: Largest 1-D domain for which the expected range-query error is computed.
ERROR_TABLE_LIMIT = 2_000_000
#: Largest 1-D domain for which the optimised strategy is computed too (seconds at this size).
OPTIMIZED_ROW_LIMIT = 512


def _range_error(plan) -> float:
    return plan.expected_error["range_query_mse_before_inference"]


def explain(policy: Policy, epsilon: Real = 1.0) -> Explanation:
    """Explain ``policy`` at ``epsilon`` (see the module docstring).

    Parameters
    ----------
    policy : Policy
    epsilon : float
        Positive.

    Returns
    -------
    Explanation
        ``Policy.explain(epsilon)`` plus, for 1-D ordinal domains without
        constraints of at most :data:`ERROR_TABLE_LIMIT` values, the
        expected squared error of a range query under the ordered
        hierarchical and ordered mechanisms against their DP counterparts,
        and (up to :data:`OPTIMIZED_ROW_LIMIT` values, full-domain and
        distance-threshold secrets that protect some pair, with scipy
        installed) the optimised strategy for all ranges against HDMM under
        DP (read from the plans: nothing is measured).

    Examples
    --------
    >>> from blowfish_privacy import Domain, Policy, secrets
    >>> p = Policy(Domain.ordinal("age", 0, 99), secrets.DistanceThreshold(5))
    >>> print(explain(p, 0.5).summary.splitlines()[0])  # doctest: +ELLIPSIS
    Policy on 100 values ...
    """
    out = describe_policy(policy, epsilon)
    eps = out.epsilon
    dom = policy.domain
    errors = []
    if dom.ndim == 1 and dom.is_ordinal() and 1 < dom.size <= ERROR_TABLE_LIMIT and not policy.constraints:
        # the plans fix the expected errors from public inputs alone: nothing is measured
        oh = _range_error(mechanisms.plan_ordered_hierarchical(policy, eps))
        hier = _range_error(mechanisms.plan_hierarchical(dom.size, eps))
        ordd = _range_error(mechanisms.plan_ordered(policy, eps))
        ordd_dp = _range_error(mechanisms.plan_ordered(dp_reference(policy), eps))
        errors.append({"mechanism": "ordered hierarchical vs hierarchical", "blowfish": oh, "dp": hier,
                       "ratio": hier / oh if oh else math.inf})
        errors.append({"mechanism": "ordered vs ordered under DP", "blowfish": ordd, "dp": ordd_dp,
                       "ratio": ordd_dp / ordd if ordd else math.inf})
        graph = policy.secrets
        # the optimised row needs a policy with something to protect and the strategy search (scipy)
        if (dom.size <= OPTIMIZED_ROW_LIMIT and graph.has_edge(dom) and installed("scipy")
                and (graph.is_complete() or graph.line_threshold(dom) is not None)):
            opt = mechanisms.plan_optimized_cdf(policy, eps)
            hdmm = mechanisms.plan_optimized_cdf(dp_reference(policy), eps)
            errors.append({"mechanism": f"optimised strategy for all ranges ({opt.options['chosen']}) vs HDMM "
                                        f"under DP ({hdmm.options['chosen']})",
                           "blowfish": _range_error(opt), "dp": _range_error(hdmm),
                           "ratio": _range_error(hdmm) / _range_error(opt) if _range_error(opt) else math.inf})
    return replace(out, errors=errors)
