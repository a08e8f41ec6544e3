"""Type stubs for the isotonic-regression bindings (``_isotonic.pyx``)."""

import numpy as np
import numpy.typing as npt

_F64 = npt.NDArray[np.float64]

ISOTONIC_CHUNK: int

def isotonic_inplace(y: _F64, lower: float, upper: float) -> None: ...
def isotonic_unit_chunked(
    y: _F64, lower: float, upper: float, threads: int = 1, chunk: int | None = None,
) -> None: ...
def isotonic(
    y: npt.ArrayLike, weights: npt.ArrayLike | None = None, lower: float = ..., upper: float = ...
) -> _F64: ...
