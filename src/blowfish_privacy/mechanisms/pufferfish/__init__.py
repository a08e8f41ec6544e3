"""Pufferfish sums of unbounded values protected to an absolute or relative error (003 Sec 7.1)."""

from .sums import PufferfishSum, plan_pufferfish_sum, pufferfish_sum

__all__ = ["PufferfishSum", "plan_pufferfish_sum", "pufferfish_sum"]
