"""Counts under a policy: histograms with the policy's sensitivity (000 Thm 5.1) and histograms under public count constraints (000 Sec 8, 004 Sec 6.1)."""

from .constrained import ConstrainedRelease, consistent_estimate, constrained_histogram, plan_constrained_histogram
from .laplace import LaplaceResult, calibrate, laplace, plan_histogram, plan_laplace

__all__ = ["ConstrainedRelease", "consistent_estimate", "constrained_histogram", "plan_constrained_histogram", "LaplaceResult", "calibrate", "laplace", "plan_histogram", "plan_laplace"]
