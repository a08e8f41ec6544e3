"""Mechanisms: each takes an exact aggregate, a policy or sensitivity, an
epsilon and a :class:`~blowfish_privacy.Generator`, and returns a result
object carrying the released values, the epsilon actually spent, the
sensitivity used and the expected error."""

from .laplace import LaplaceResult, calibrate, laplace

__all__ = ["LaplaceResult", "calibrate", "laplace"]
