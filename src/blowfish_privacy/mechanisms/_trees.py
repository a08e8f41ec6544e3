"""Fan-out-f trees over a domain: the height and the fan-out check.

Shared by the hierarchical mechanisms (the ordered hierarchical and
hierarchical mechanisms of :mod:`.cumulative`, the 2-D hierarchies of
:mod:`.grid`, Privelet's binary tree): a tree of fan-out f over ``size``
leaves has height ``h = ceil(log_f size)``, the smallest h with
``f**h >= size`` (Hay, Rastogi, Miklau, Suciu, Boosting the Accuracy of
Differentially Private Histograms Through Consistency, PVLDB 2010).
"""

from __future__ import annotations

from .._validation import as_int

__all__ = ["check_fanout", "tree_height"]


def check_fanout(fanout) -> int:
    """``fanout`` as an int >= 2 (ValueError or TypeError naming it otherwise)."""
    f = as_int(fanout, "fanout")
    if f < 2:
        raise ValueError(f"fanout must be an integer >= 2, got {f}")
    return f


def tree_height(size: int, fanout: int = 2) -> int:
    """The smallest h >= 0 with ``fanout**h >= size`` (exact integer arithmetic)."""
    h, cap = 0, 1
    while cap < size:
        cap *= fanout
        h += 1
    return h
