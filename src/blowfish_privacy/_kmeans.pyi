"""Type stubs for the k-means bindings (``_kmeans.pyx``)."""

import numpy as np
import numpy.typing as npt

_I64 = npt.NDArray[np.int64]
_F64 = npt.NDArray[np.float64]
_I32 = npt.NDArray[np.int32]
_Axes = npt.ArrayLike  # shape, low, width: int64, shape (d,)

KMEANS_MAXDIM: int
KMEANS_MAXK: int
KMEANS_MAX_CELLS: int

def kmeans_assign(
    points: _I64, centroids: _F64, refs: _I64, return_labels: bool = False
) -> tuple[_I64, _I64, _I32 | None]: ...
def kmeans_grid_label_cost(shape: _Axes, low: _Axes, width: _Axes, centroids: _F64, refs: _I64) -> tuple[_I32, _I64]: ...
def kmeans_clique_scan(
    shape: _Axes, low: _Axes, width: _Axes, centroids: _F64, refs: _I64, fixed_mask: int, projections: bool = True
) -> tuple[int, int]: ...
def kmeans_offset_scan(shape: _Axes, labels: _I32, cost: _I64, offsets: _I64, length: _I64) -> tuple[int, int]: ...
def kmeans_bisector_scan(
    shape: _Axes, low: _Axes, width: _Axes, centroids: _F64, refs: _I64, radius: float
) -> tuple[_I64, _I64]: ...
