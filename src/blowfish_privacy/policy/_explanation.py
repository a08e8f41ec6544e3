"""What a policy protects, read from the policy layer alone.

:func:`describe_policy` (which ``Policy.explain`` returns) lists example
pairs of values of one individual with their secret-graph distance d_G and
the guarantee e^(epsilon d_G) on how much an adversary's odds can move
(000 eq. 9), the pairs that are not protected at all (d_G = infinity), and
the sensitivity of common queries under the policy against plain
differential privacy (the FullDomain policy on the same domain, 000 Sec
4.2).  :func:`blowfish_privacy.explain.explain` adds the expected errors of
the range-query mechanisms, which come from the mechanisms' plans (a layer
above this one; see docs/architecture.md).

This module imports nothing above the secret graphs: it is given the policy
and builds the plain-DP reference policy with the policy's own class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_epsilon
from .guarantee import GuaranteeTable, guarantee_table
from .secrets import FullDomain

__all__ = ["Explanation", "describe_policy"]


@dataclass(frozen=True)
class Explanation:
    """A policy explanation; ``str()`` gives the text with its tables.

    Attributes
    ----------
    epsilon : float
    summary : str
        One paragraph in plain words.
    pairs : list of dict
        Example pairs: ``x``, ``y``, ``distance`` (d_G), ``bound`` (the
        largest factor e^(epsilon d_G) by which the adversary's odds can
        move, ``inf`` if unprotected).
    sensitivities : list of dict
        ``query``, ``blowfish``, ``dp`` (and ``exact``: proven tight or an
        upper bound).
    errors : list of dict
        ``mechanism``, ``blowfish``, ``dp``: expected mean squared error
        of a random range query before inference (1-D ordinal domains).
    guarantee : GuaranteeTable or None
        The guarantee in numbers (:func:`blowfish_privacy.policy.guarantee.guarantee_table`):
        the bound ``e^(epsilon d)`` for the distances 1, 2, 5, 10, 50 that
        occur, the unbounded pairs, the diameter, beside DP's ``e^epsilon``.
    """

    epsilon: float
    summary: str
    pairs: list = field(default_factory=list)
    sensitivities: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    guarantee: GuaranteeTable | None = None

    def __str__(self) -> str:
        out = [self.summary, ""]
        if self.guarantee is not None:
            out.append("The guarantee in numbers (what any gain below is bought with):")
            out.append(self.guarantee.text())
            out.append("")
        if self.pairs:
            out.append(f"Example pairs of one individual's values (epsilon = {self.epsilon:g}):")
            out.append(_table(self.pairs, ["x", "y", "distance", "bound"],
                              ["value x", "value y", "d_G(x, y)", "odds bound e^(eps d_G)"]))
            out.append("")
        if self.sensitivities:
            out.append("Sensitivity of common queries (noise scale = sensitivity / epsilon):")
            out.append(_table(self.sensitivities, ["query", "blowfish", "dp", "ratio"],
                              ["query", "this policy", "plain DP", "DP / policy"]))
            out.append("")
        if self.errors:  # as RMSEs in counts, the measure plan and demo print; the fields keep squared errors
            rmse = [{"mechanism": e["mechanism"], **{k: math.sqrt(max(float(e[k]), 0.0)) for k in ("blowfish", "dp", "ratio")}}
                    for e in self.errors]
            out.append(f"Expected error of one random range count at epsilon {self.epsilon:g}, as RMSE in counts "
                       "(before inference):")
            out.append(_table(rmse, ["mechanism", "blowfish", "dp", "ratio"],
                              ["mechanism", "this policy", "DP counterpart", "DP / policy"]))
        return "\n".join(out).rstrip()


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isinf(v):
            return "inf (not protected)"
        return f"{v:.4g}"
    return str(v)


def _table(rows, keys, headers) -> str:
    cells = [[_fmt(r.get(k, "")) for k in keys] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join([line, rule, *body])


def _example_indices(policy) -> list[tuple[int, int]]:
    """A handful of value pairs that show the shape of the secret graph."""
    dom = policy.domain
    size = dom.size
    cands: list[tuple[int, int]] = []
    if dom.ndim == 1:
        steps = {1, 2, 5, 10, 100, 1000, size - 1}
        theta = _theta_bins(policy)
        if theta:
            steps |= {theta, theta + 1, 2 * theta, 10 * theta}
        cands = [(0, s) for s in sorted(steps) if 0 < s < size]
    else:
        base = 0
        strides = dom.strides
        for a in range(dom.ndim):  # change one attribute by one step, then to its last value
            if dom.shape[a] > 1:
                cands.append((base, base + strides[a]))
                cands.append((base, base + strides[a] * (dom.shape[a] - 1)))
        if dom.ndim > 1:
            cands.append((base, size - 1))  # every attribute changed
    # show some unprotected pair if there is one: scan a few partners of 0
    probe = np.unique(np.linspace(0, size - 1, num=min(size, 64)).astype(np.int64))
    try:
        d = np.asarray(policy.distance(np.zeros_like(probe), probe), dtype=float)
    except ValueError:  # d_G too costly to compute on this domain (the guarantee table says so in its note)
        return []
    far = probe[np.isinf(d)]
    if far.size:
        cands.append((0, int(far[0])))
    seen, out = set(), []
    for p in cands:
        if p not in seen and p[0] != p[1]:
            seen.add(p)
            out.append(p)
    return out[:10]


def _theta_bins(policy) -> int | None:
    dom = policy.domain
    if dom.ndim == 1 and dom.is_ordinal():
        try:
            return int(policy.sensitivity("cumulative"))
        except ValueError:
            return None
    return None


def describe_policy(policy, epsilon=1.0) -> Explanation:
    """The policy-layer part of an explanation: summary, pairs, sensitivities.

    Parameters
    ----------
    policy : Policy
    epsilon : float
        Positive; the budget the guarantees ``e^(epsilon d_G)`` are shown for.

    Returns
    -------
    Explanation
        With the guarantee table of the policy and ``errors`` empty (:func:`blowfish_privacy.explain.explain` fills
        them from the mechanisms' plans).
    """
    eps = float(check_epsilon(epsilon))
    dom = policy.domain
    g = policy.secrets
    names = ", ".join(dom.names)
    summary = [f"Policy on {dom.size} values of ({names}) with secrets {g!r}.", g.describe(dom)]
    if policy.constraints:
        summary.append(f"{len(policy.constraints)} public constraint(s) are assumed known to every adversary.")
    summary.append("The number of records is public.")

    pairs = []
    for i, j in _example_indices(policy):
        d = policy.distance(i, j)
        d = float(d) if not isinstance(d, (int, np.integer)) else int(d)
        pairs.append({
            "x": dom.record_of(i),
            "y": dom.record_of(j),
            "distance": d if not (isinstance(d, float) and math.isinf(d)) else math.inf,
            "bound": math.exp(eps * d) if not math.isinf(d) and eps * d < 700 else math.inf,
        })

    dp = dp_reference(policy)
    sens = []
    queries = ["histogram"]
    if dom.ndim == 1 and dom.is_ordinal():
        queries.append("cumulative")
    for q in queries:
        info = policy.sensitivity_info(q)
        ref = dp.sensitivity(q)
        sens.append({"query": q, "blowfish": info.value, "dp": ref, "exact": info.exact,
                     "ratio": (ref / info.value) if info.value else math.inf})
    for a in dom.attributes:
        if getattr(a, "low", None) is not None:  # ordinal
            info = policy.sensitivity_info("sum", attribute=a.name)
            ref = dp.sensitivity("sum", attribute=a.name)
            sens.append({"query": f"sum of {a.name}", "blowfish": info.value, "dp": ref, "exact": info.exact,
                         "ratio": (ref / info.value) if info.value else math.inf})
    return Explanation(epsilon=eps, summary=" ".join(summary), pairs=pairs, sensitivities=sens,
                       guarantee=guarantee_table(policy, eps))


def dp_reference(policy):
    """Plain differential privacy on the same domain: ``FullDomain`` secrets, no constraints."""
    return type(policy)(policy.domain, FullDomain())
