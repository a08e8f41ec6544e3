"""Mechanisms: each takes an exact aggregate, a policy or sensitivity, an
epsilon and a :class:`~blowfish_privacy.Generator`, and returns a result
object carrying the released values, the epsilon actually spent, the
sensitivity used and the expected error."""

from .constrained import ConstrainedRelease, consistent_estimate, constrained_histogram
from .cumulative import CumulativeRelease, hierarchical, identity, ordered, ordered_hierarchical
from .laplace import LaplaceResult, calibrate, laplace
from .pufferfish import PufferfishSum, pufferfish_sum

__all__ = [
    "ConstrainedRelease",
    "CumulativeRelease",
    "consistent_estimate",
    "constrained_histogram",
    "LaplaceResult",
    "calibrate",
    "hierarchical",
    "identity",
    "laplace",
    "ordered",
    "ordered_hierarchical",
    "PufferfishSum",
    "pufferfish_sum",
]
