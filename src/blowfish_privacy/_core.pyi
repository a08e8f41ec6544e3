"""Type stubs for the compiled bindings (``_core.pyx``)."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MAX_SCALE_PART: int
RNG_BUFFER_WORDS: int

class ChaChaStream:
    def __init__(self, seed: bytes | None = None) -> None: ...
    @property
    def secure(self) -> bool: ...
    def random_raw(self, n: int) -> npt.NDArray[np.uint32]: ...
    def uniform(self, bound: int, n: int) -> npt.NDArray[np.uint64]: ...
    def bernoulli_exp(self, num: int, den: int, n: int) -> npt.NDArray[np.uint8]: ...
    def discrete_laplace(self, t: int, s: int, n: int) -> npt.NDArray[np.int64]: ...
    def fill_discrete_laplace(self, t: int, s: int, out: npt.NDArray[np.int64]) -> None: ...
    def add_discrete_laplace(
        self, values: npt.NDArray[np.int64], t: int, s: int
    ) -> npt.NDArray[np.int64]: ...

def add_int64_checked(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> None: ...
def chacha20_block(key: bytes, counter: int, nonce: bytes) -> bytes: ...
def chacha20_blocks8(key: bytes, counter: int, nonce: bytes) -> bytes: ...

# Trees (csrc/tree.h) and isotonic regression (csrc/isotonic.h).
def sum_int64(x: npt.NDArray[np.int64]) -> int: ...
def prefix_sum(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...
def level_sums(child: npt.NDArray[np.int64], f: int) -> npt.NDArray[np.int64]: ...
def tree_levels(leaves: npt.NDArray[np.int64], f: int, h: int) -> list[npt.NDArray[np.int64]]: ...
def wls_up_level(
    zc: npt.NDArray[np.float64],
    vc: npt.NDArray[np.float64],
    z: npt.NDArray[np.float64],
    v: npt.NDArray[np.float64],
    f: int,
) -> None: ...
def wls_down_level(
    xp: npt.NDArray[np.float64],
    zc: npt.NDArray[np.float64],
    vc: npt.NDArray[np.float64],
    f: int,
) -> None: ...
def wls_chain(
    ys: npt.NDArray[np.float64],
    vs: npt.NDArray[np.float64],
    zr: npt.NDArray[np.float64],
    vr: npt.NDArray[np.float64],
    xs: npt.NDArray[np.float64],
) -> None: ...
def oh_estimate(
    hist: np.ndarray, block: int, f: int, h: int, c: int,
    noise_s: np.ndarray | None, noise_h: np.ndarray, var_s: float, var_h: float,
) -> np.ndarray: ...
def isotonic_inplace(y: np.ndarray, lower: float, upper: float) -> None: ...
def isotonic(
    y: npt.ArrayLike,
    weights: npt.ArrayLike | None = None,
    lower: float = ...,
    upper: float = ...,
) -> npt.NDArray[np.float64]: ...
def longest_cycle(adj: npt.ArrayLike, max_nodes: int) -> tuple[int, bool, int, list[int]]: ...
def longest_path(adj: npt.ArrayLike, src: int, dst: int, max_nodes: int) -> tuple[int, bool, int, list[int]]: ...

# DAWA partition (csrc/dawa.h) and tree transforms (csrc/transform.h).
def dawa_n_intervals(n: int) -> int: ...
def dawa_partition(
    x: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    sorted_vals: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    penalty: float,
) -> npt.NDArray[np.int64]: ...
def dawa_deviations(
    x: npt.NDArray[np.int64], rank: npt.NDArray[np.int64], sorted_vals: npt.NDArray[np.int64], L: int
) -> npt.NDArray[np.float64]: ...
class DawaStream:
    n_levels: int
    n: int
    width: int
    def __init__(
        self,
        x: npt.NDArray[np.int64],
        rank: npt.NDArray[np.int32],
        sorted_vals: npt.NDArray[np.int64],
        penalty: float,
        noise: npt.NDArray[np.float64] | None = ...,
        keys: npt.NDArray[np.uint32] | None = ...,
        t: int = ...,
        s: int = ...,
        chunk: int = ...,
        width: int = ...,
    ) -> None: ...
    def levels(self, e0: int, e1: int, ks: Sequence[int]) -> None: ...
    def dp(self, e0: int, e1: int) -> None: ...
    def starts(self) -> npt.NDArray[np.int64]: ...

def tree_bfs_order(
    child_ptr: npt.NDArray[np.int64], children: npt.NDArray[np.int64], root: int
) -> npt.NDArray[np.int64]: ...
def subtree_sums(
    x: npt.NDArray[np.int64], parent: npt.NDArray[np.int64], order: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]: ...
def tree_inverse(xg: npt.NDArray[np.int64], parent: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...
def line_inverse(xg: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...

# k-means (csrc/kmeans.h).
KMEANS_MAXDIM: int
KMEANS_MAXK: int
KMEANS_MAX_CELLS: int

def kmeans_assign(
    points: npt.NDArray[np.int64],
    centroids: npt.NDArray[np.float64],
    refs: npt.NDArray[np.int64],
    return_labels: bool = False,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32] | None]: ...
def kmeans_grid_label_cost(
    shape: npt.ArrayLike,
    low: npt.ArrayLike,
    width: npt.ArrayLike,
    centroids: npt.NDArray[np.float64],
    refs: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]: ...
def kmeans_clique_scan(
    shape: npt.ArrayLike,
    low: npt.ArrayLike,
    width: npt.ArrayLike,
    centroids: npt.NDArray[np.float64],
    refs: npt.NDArray[np.int64],
    fixed_mask: int,
    projections: bool = True,
) -> tuple[int, int]: ...
def kmeans_offset_scan(
    shape: npt.ArrayLike,
    labels: npt.NDArray[np.int32],
    cost: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    length: npt.NDArray[np.int64],
) -> tuple[int, int]: ...
def kmeans_bisector_scan(
    shape: npt.ArrayLike,
    low: npt.ArrayLike,
    width: npt.ArrayLike,
    centroids: npt.NDArray[np.float64],
    refs: npt.NDArray[np.int64],
    radius: float,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
