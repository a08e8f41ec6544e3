"""Type stubs for the bindings of the kernels that draw their own noise (``_streams.pyx``)."""

import numpy as np
import numpy.typing as npt

_I64 = npt.NDArray[np.int64]
_F64 = npt.NDArray[np.float64]
_Key = bytes | npt.NDArray[np.uint32]

STREAM_CELLS: int
TASKS_PER_THREAD: int
ISOTONIC_CHUNK: int
OH_MIN_VARIANCE: float

def stream_seed(key: _Key, index: int) -> bytes: ...
def ordered_cumulative_streams(
    hist: _I64, key: _Key, t: int, s: int, threads: int = ..., chunk: int | None = ...
) -> tuple[_F64, int]: ...
def oh_cumulative_streams(
    hist: _I64,
    block: int,
    f: int,
    h: int,
    c: int,
    key: _Key,
    group: int,
    scale_s: tuple[int, int] | None,
    scale_h: tuple[int, int],
    var_s: float,
    var_h: float,
    threads: int = ...,
) -> tuple[_F64, int]: ...
def line_noisy_counts_streams(
    x: _I64, key: _Key, t: int, s: int, threads: int = ..., chunk: int | None = ...
) -> _I64: ...
def add_nonroot_streams(
    xg: _I64, parent: _I64, key: _Key, t: int, s: int, threads: int = ..., chunk: int | None = ...
) -> None: ...
