"""Type stubs for the DAWA partition bindings (``_dawa.pyx``)."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_I64 = npt.NDArray[np.int64]
_F64 = npt.NDArray[np.float64]

FEW: int
DIRECT: int

def dawa_ranks(x: _I64) -> tuple[npt.NDArray[np.int32], _I64]: ...
def dawa_n_intervals(n: int) -> int: ...
def dawa_partition(
    x: _I64, rank: _I64, sorted_vals: _I64, scores: _F64, penalty: float, single_noise: _F64 | None = ...
) -> _I64: ...
def dawa_deviations(x: _I64, rank: _I64, sorted_vals: _I64, L: int) -> _F64: ...

class DawaStream:
    n_levels: int
    n: int
    width: int
    def __init__(
        self,
        x: _I64,
        rank: npt.NDArray[np.int32] | None,
        sorted_vals: _I64 | None,
        penalty: float,
        noise: _F64 | None = ...,
        keys: npt.NDArray[np.uint32] | None = ...,
        t: int = ...,
        s: int = ...,
        chunk: int = ...,
        width: int = ...,
        g: npt.NDArray[np.int32] | None = ...,
        u: _I64 | None = ...,
        single_noise: _F64 | None = ...,
    ) -> None: ...
    def levels(self, e0: int, e1: int, ks: Sequence[int]) -> None: ...
    def dp(self, e0: int, e1: int) -> None: ...
    def starts(self) -> _I64: ...
    def _erase(self) -> None: ...
