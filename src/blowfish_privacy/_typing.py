"""Type aliases of the public API's parameters (for annotations only; nothing here is run)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["Real"]

#: A real number parameter (epsilon, a sensitivity, a noise scale): an int, a float, a Fraction or a
#: numpy number; converted exactly (floats are dyadic rationals), never rounded against privacy.
Real = float | Fraction | np.integer[Any] | np.floating[Any]
