"""The DP baselines' common ground: public-input checks, the release, citations.

Shared by the DP baselines (:mod:`blowfish_privacy.baselines`, whose plans
state the model ``"DP"``; bounded differential privacy, i.e. Blowfish
privacy under the complete graph, He, Machanavajjhala, Ding, Blowfish
Privacy, SIGMOD 2014, 000 Sec 3):
a shape from a size, a shape or a FullDomain policy, the histogram check of
a plan, option checks, and the :class:`~.histogram.HistogramRelease` made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .._validation import as_int
from ..policy.domain import Ordinal
from ..policy._policy import Policy
from ..noise import Generator
from .histogram import HistogramRelease
from .plan import Plan


CITE_UNIFORM = "Hay, Machanavajjhala, Miklau, Chen, Zhang, SIGMOD 2016 (DPBench: Uniform)"
CITE_HB = ("Qardaji, Yang, Li, 'Understanding hierarchical methods for differentially private histograms', "
            "VLDB 2013 (HB, eq. 3); Hay, Rastogi, Miklau, Suciu, VLDB 2010 (consistency)")
CITE_GRID = ("Qardaji, Yang, Li, 'Differentially private grids for geospatial data', ICDE 2013 "
              "(UGrid, AGrid)")
DP = ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy; the number of "
       "records n is public")


# ---------------------------------------------------------------------------
# public inputs


def dp_shape(arg: int | Sequence[int] | Policy, dims: int | None = None) -> tuple[tuple[int, ...], Policy | None]:
    """(shape, policy or None) from a size, a shape or a FullDomain policy."""
    if isinstance(arg, Policy):
        if not arg.secrets.is_complete():
            raise ValueError(f"policy: the DP baselines need FullDomain secrets (bounded DP), got {arg.secrets!r}")
        if getattr(arg, "constraints", None):
            raise ValueError("policy: public constraints are not supported by the DP baselines")
        if not all(isinstance(a, Ordinal) for a in arg.domain.attributes):
            raise ValueError(f"policy: the DP baselines need an ordinal domain, got {arg.domain!r}")
        shape = tuple(int(d) for d in arg.domain.shape)
        pol = arg
    elif isinstance(arg, (tuple, list)):
        shape = tuple(as_int(d, "shape") for d in arg)
        pol = None
    else:
        shape = (as_int(arg, "size"),)
        pol = None
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"shape must hold positive cell counts, got {arg!r}")
    if dims is not None and len(shape) != dims:
        raise ValueError(f"this plan needs a {dims}-D shape, got {shape}")
    return shape, pol


def float_capped(value: float | Fraction) -> float:
    """A positive real (a Fraction, an int) as a float, capped at 2^1000 (no OverflowError for huge epsilons).

    For rules that pick a granularity from epsilon (grid sizes): the result
    is clipped to the domain's sides anyway.
    """
    return 2.0**1000 if value >= 2**1000 else float(value)


def check_positive(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not value > 0 \
            or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_share(value: object, name: str) -> Fraction:
    """A budget share in (0, 1) as an exact Fraction (denominator at most 10^6); one error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise TypeError(f"{name} must be a fraction in (0, 1), got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a fraction in (0, 1), got {value!r}")
    share = Fraction(value).limit_denominator(10**6)
    if not 0 < share < 1:
        raise ValueError(f"{name} must be a fraction in (0, 1), got {value!r}")
    return share


def check_cells(cells: object, name: str) -> int | None:
    if cells is None:
        return None
    c = as_int(cells, name)
    if c < 1:
        raise ValueError(f"{name} must be an integer >= 1 (cells per axis), got {cells!r}")
    return c


def release(plan: Plan[HistogramRelease], est: npt.NDArray[np.int64] | npt.NDArray[np.float64], gen: Generator,
            params: dict[str, Any]) -> HistogramRelease:
    """The :class:`~.histogram.HistogramRelease` of a DP baseline's plan (every privacy field read from ``plan``)."""
    return HistogramRelease(histogram=est, secure=gen.is_secure, params=params, plan=plan)
