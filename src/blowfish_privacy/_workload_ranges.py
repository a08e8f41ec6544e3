"""Range workloads: inclusive ranges of a 1-D domain, and rectangles of a 2-D one.

Their answers come from prefix sums and their Gram matrices from counting
the queries by their end points, never through the query matrix; the
random ones sample ranges as DPBench does (:data:`RANGE_SAMPLERS`).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ._validation import as_int
from ._workload_base import Workload, as_shape
from .errors import ParameterError

__all__ = ["RANGE_SAMPLERS", "AllRanges", "Identity", "Prefix", "RandomRanges", "RandomRectangles", "Ranges",
           "Rectangles", "Total"]

#: The random-range samplers: DPBench's (a length uniform in 1..n, then a
#: start uniform among the positions where it fits) and two uniform end
#: points, sorted.
RANGE_SAMPLERS = ("dpbench", "uniform-endpoints")

def _as_n(n, name: str = "n") -> int:
    return as_int(n, name, minimum=1)

def _as_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), got "
                        f"{rng!r} of type {type(rng).__name__}")
    return rng


def _as_sampler(sampler) -> str:
    if sampler not in RANGE_SAMPLERS:
        raise ParameterError("sampler", f"sampler must be one of {', '.join(map(repr, RANGE_SAMPLERS))}, "
                                        f"got {sampler!r}")
    return sampler


def _int_table(values, name: str, cols: int, what: str) -> np.ndarray:
    """``values`` as a (q, cols) int64 array; floats, booleans and other shapes are refused."""
    arr = np.asarray(values)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.ndim == 1 and arr.size == cols:
        arr = arr.reshape(1, cols)
    if arr.ndim != 2 or arr.shape[1] != cols:
        raise ParameterError(name, f"{name} must have shape (q, {cols}) (rows {what}), got shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ParameterError(name, f"{name} holds a value above the int64 maximum")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _check_intervals(lo: np.ndarray, hi: np.ndarray, n: int, name: str, label: str) -> None:
    """Each lo <= hi, both within [0, n - 1]; the message names the first bad row."""
    bad = (lo < 0) | (hi >= n) | (lo > hi)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        a, b = int(lo[k]), int(hi[k])
        why = f"lo > hi ({a} > {b})" if a > b else f"outside [0, {n - 1}]"
        raise ParameterError(name, f"{name}[{k}]: {label} ({a}, {b}) is {why}; ranges are inclusive, "
                                   f"0 <= lo <= hi <= {n - 1}")


def _sample_ranges(n: int, count: int, rng: np.random.Generator, sampler: str) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) int64 arrays of ``count`` random inclusive ranges of [0, n - 1].

    The draws are those of ``blowfish_privacy.experiments``' DPBench harness
    (same calls in the same order), so a generator in the same state gives
    the same ranges.
    """
    if sampler == "dpbench":
        length = rng.integers(1, n + 1, count)
        lo = rng.integers(0, n - length + 1)
        return lo.astype(np.int64), (lo + length - 1).astype(np.int64)
    a = rng.integers(0, n, count)
    b = rng.integers(0, n, count)
    return np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)


def _mirror_upper(G: np.ndarray) -> np.ndarray:
    """Copy the upper triangle of the square ``G`` onto its lower triangle, in place, by row blocks."""
    n = G.shape[0]
    step = 256
    for s in range(0, n, step):
        e = min(n, s + step)
        G[s:e, :s] = G[:s, s:e].T
        blk = G[s:e, s:e]
        low = np.tril_indices(e - s, -1)
        blk[low] = blk.T[low]
    return G

# -- 1-D range workloads ---------------------------------------------------------
class _RangeWorkload(Workload):
    """Queries that are inclusive ranges [lo, hi] of a 1-D domain of ``n`` cells."""

    n: int

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n,)

    def ranges(self) -> np.ndarray:
        """The queries as inclusive ranges.

        Returns
        -------
        numpy.ndarray
            ``(q, 2)`` int64, rows ``(lo, hi)`` with ``0 <= lo <= hi < n``,
            in the order of the rows of :meth:`matrix`.
        """
        lo, hi = self._ends()
        return np.column_stack([lo, hi])

    @abc.abstractmethod
    def _ends(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` int64 arrays of the inclusive ranges, in query order."""

    @property
    def n_queries(self) -> int:
        return int(self._ends()[0].size)

    def _apply(self, X: np.ndarray) -> np.ndarray:
        lo, hi = self._ends()
        C = np.zeros((self.n + 1, X.shape[1]))
        np.cumsum(X, axis=0, out=C[1:])
        return C[hi + 1] - C[lo]

    def _matrix(self) -> np.ndarray:
        lo, hi = self._ends()
        q = lo.size
        D = np.zeros((q, self.n + 1))
        rows = np.arange(q)
        D[rows, lo] = 1.0
        D[rows, hi + 1] = -1.0
        return np.cumsum(D[:, :-1], axis=1)

    def _gram(self) -> np.ndarray:
        # F[a, b] = number of ranges with lo <= a and hi >= b; G[u, v] = F[min, max].
        lo, hi = self._ends()
        n = self.n
        F = np.zeros((n, n))
        np.add.at(F, (lo, hi), 1.0)
        np.cumsum(F, axis=0, out=F)
        F[:, ::-1] = np.cumsum(F[:, ::-1], axis=1)
        return _mirror_upper(F)

    def _gram_temporaries(self) -> float:
        return 2.0

    def frobenius_squared(self) -> float:
        lo, hi = self._ends()
        return float(np.sum(hi - lo + 1))


class _WholeDomainRanges(_RangeWorkload):
    """A fixed family of ranges over the whole 1-D domain of ``n`` cells, named by ``n`` alone."""

    def __init__(self, n: int) -> None:
        self.n = _as_n(n)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n})"


class Identity(_WholeDomainRanges):
    """Every cell of a 1-D domain: ``W = I`` (``n`` queries ``[i, i]``).

    Parameters
    ----------
    n : int
        The number of cells, >= 1.
    """

    def _ends(self):
        i = np.arange(self.n, dtype=np.int64)
        return i, i

    @property
    def n_queries(self) -> int:
        return self.n

    def _apply(self, X):
        return X.copy()

    def _matrix(self):
        return np.eye(self.n)

    def _gram(self):
        return np.eye(self.n)

    def frobenius_squared(self) -> float:
        return float(self.n)


class Total(_WholeDomainRanges):
    """The sum of all cells of a 1-D domain: one query ``[0, n - 1]`` (a row of ones).

    Parameters
    ----------
    n : int
        The number of cells, >= 1.
    """

    def _ends(self):
        return np.zeros(1, dtype=np.int64), np.full(1, self.n - 1, dtype=np.int64)

    @property
    def n_queries(self) -> int:
        return 1

    def _gram(self):
        return np.ones((self.n, self.n))

    def _gram_temporaries(self) -> float:
        return 1.0

    def frobenius_squared(self) -> float:
        return float(self.n)


class Prefix(_WholeDomainRanges):
    """The cumulative distribution: every prefix ``[0, j]``, ``j = 0 .. n - 1`` (``n`` queries).

    The Gram matrix has the closed form ``G[u, v] = n - max(u, v)`` (the
    prefixes covering both cells), i.e. ``min(n - u, n - v)``.

    Parameters
    ----------
    n : int
        The number of cells, >= 1.
    """

    def _ends(self):
        return np.zeros(self.n, dtype=np.int64), np.arange(self.n, dtype=np.int64)

    @property
    def n_queries(self) -> int:
        return self.n

    def _apply(self, X):
        return np.cumsum(X, axis=0)

    def _gram(self):
        r = np.arange(self.n, 0, -1, dtype=np.float64)      # n - u
        return np.minimum.outer(r, r)

    def _gram_temporaries(self) -> float:
        return 1.0

    def frobenius_squared(self) -> float:
        return self.n * (self.n + 1) / 2


class AllRanges(_WholeDomainRanges):
    """Every range ``[i, j]``, ``0 <= i <= j < n``: ``n (n + 1) / 2`` queries.

    Rows are ordered by ``i``, then ``j`` (``numpy.triu_indices`` order).
    The Gram matrix has the closed form ``G[u, v] = (min(u, v) + 1)
    (n - max(u, v))`` (the ranges covering both cells); for ``n = 4096`` it
    takes about 130 MiB of float64 and some more for one temporary, while
    the query matrix (8.4e6 x 4096) is refused.

    Parameters
    ----------
    n : int
        The number of cells, >= 1.
    """

    def _ends(self):
        lo, hi = np.triu_indices(self.n)
        return lo.astype(np.int64), hi.astype(np.int64)

    @property
    def n_queries(self) -> int:
        return self.n * (self.n + 1) // 2

    def _gram(self):
        i = np.arange(self.n, dtype=np.float64)
        A = np.multiply.outer(i + 1.0, self.n - i)          # (u + 1)(n - v): right for u <= v
        # For u <= v, A[u, v] <= A[v, u]; so G = min(A, A.T), made in place by blocks.
        n, step = self.n, 512
        for s in range(0, n, step):
            e = min(n, s + step)
            A[s:e, :e] = np.minimum(A[s:e, :e], A[:e, s:e].T)
            A[:s, s:e] = A[s:e, :s].T
        return A

    def _gram_temporaries(self) -> float:
        return 1.1

    def frobenius_squared(self) -> float:
        n = self.n
        return n * (n + 1) * (n + 2) / 6


class Ranges(_RangeWorkload):
    """Given inclusive ranges ``[lo, hi]`` of a 1-D domain of ``n`` cells.

    Parameters
    ----------
    n : int
        The number of cells, >= 1.
    ranges : array_like of int
        ``(q, 2)`` integers, rows ``(lo, hi)`` with ``0 <= lo <= hi < n``;
        repeated ranges count as often as they appear.

    Notes
    -----
    The Gram matrix is computed by counting the ranges by their end points
    (an ``(n, n)`` table ``C[lo, hi]``) and taking cumulative sums upwards
    in ``lo`` and downwards in ``hi``: ``G[u, v] = #{k : lo_k <= min(u, v),
    hi_k >= max(u, v)}``, in O(q + n^2) time whatever ``q``.
    """

    def __init__(self, n: int, ranges: npt.ArrayLike) -> None:
        self.n = _as_n(n)
        r = _int_table(ranges, "ranges", 2, "(lo, hi)")
        _check_intervals(r[:, 0], r[:, 1], self.n, "ranges", "range")
        self._lo, self._hi = r[:, 0].copy(), r[:, 1].copy()

    def _ends(self):
        return self._lo, self._hi

    def __repr__(self) -> str:
        return f"Ranges(n={self.n}, n_queries={self.n_queries})"


class RandomRanges(Ranges):
    """``count`` random inclusive ranges of a 1-D domain of ``n`` cells.

    Parameters
    ----------
    n : int
        The number of cells, >= 1.
    count : int
        The number of ranges, >= 1.
    rng : numpy.random.Generator
        The source of randomness (the ranges are public: no privacy is
        spent on them).
    sampler : {"dpbench", "uniform-endpoints"}
        ``"dpbench"`` (default): a length uniform in ``1 .. n``, then a start
        uniform among the ``n - length + 1`` positions where it fits, the
        random-range workload of DPBench (M. Hay, A. Machanavajjhala,
        G. Miklau, Y. Chen, D. Zhang, "Principled evaluation of
        differentially private algorithms using DPBench", SIGMOD 2016,
        Sec 5); it makes P(lo, hi) = 1 / (n (n - hi + lo)).
        ``"uniform-endpoints"``: two uniform end points, sorted.  The draws
        are the same as those of the library's DPBench harness, so a
        generator in the same state gives the same ranges.
    """

    def __init__(self, n: int, count: int, rng: np.random.Generator, sampler: str = "dpbench") -> None:
        n = _as_n(n)
        count = as_int(count, "count", minimum=1)
        rng = _as_rng(rng)
        self.sampler = _as_sampler(sampler)
        self.n = n
        self._lo, self._hi = _sample_ranges(n, count, rng, self.sampler)

    def __repr__(self) -> str:
        return f"RandomRanges(n={self.n}, count={self.n_queries}, sampler={self.sampler!r})"


# -- 2-D rectangles ----------------------------------------------------------------
class Rectangles(Workload):
    """Given inclusive rectangles of a 2-D domain.

    Each query is the sum of the cells ``(r, c)`` with ``r1 <= r <= r2`` and
    ``c1 <= c <= c2``; its row of the query matrix is ``kron(1[r1..r2],
    1[c1..c2])`` on the row-major flattened histogram.

    Parameters
    ----------
    shape : tuple of int
        The domain shape ``(n1, n2)``.
    rects : array_like of int
        ``(q, 4)`` integers, rows ``(r1, r2, c1, c2)``, inclusive, with
        ``0 <= r1 <= r2 < n1`` and ``0 <= c1 <= c2 < n2``.

    Notes
    -----
    The Gram matrix counts the rectangles by their four end points and takes
    cumulative sums along the four axes (upwards in ``r1``, ``c1``,
    downwards in ``r2``, ``c2``), then reads ``G[(a, b), (c, d)] =
    F[min(a, c), max(a, c), min(b, d), max(b, d)]``: O(q + N^2) time, about
    two ``(N, N)`` float64 arrays of memory.  Where that is too large,
    :meth:`axis_ranges` gives the per-axis ranges: ``W.T W = sum_k
    kron(r_k r_k^T, c_k c_k^T)``.
    """

    def __init__(self, shape: int | Sequence[int], rects: npt.ArrayLike) -> None:
        self.shape = as_shape(shape, "shape", dims=2)
        r = _int_table(rects, "rects", 4, "(r1, r2, c1, c2)")
        _check_intervals(r[:, 0], r[:, 1], self.shape[0], "rects", "row range (r1, r2)")
        _check_intervals(r[:, 2], r[:, 3], self.shape[1], "rects", "column range (c1, c2)")
        self._rects = r

    def rects(self) -> np.ndarray:
        """The rectangles: ``(q, 4)`` int64, rows ``(r1, r2, c1, c2)``, inclusive (a copy)."""
        return self._rects.copy()

    def axis_ranges(self) -> tuple[Ranges, Ranges]:
        """The per-axis ranges: query ``k`` is ``kron`` of row ``k`` of each.

        Returns
        -------
        tuple of Ranges
            ``(rows, cols)``: :class:`Ranges` on ``n1`` and ``n2`` cells with
            ``q`` rows each; rectangle ``k`` = ``rows[k] x cols[k]``.
        """
        return Ranges(self.shape[0], self._rects[:, 0:2]), Ranges(self.shape[1], self._rects[:, 2:4])

    @property
    def n_queries(self) -> int:
        return int(self._rects.shape[0])

    def _apply(self, X):
        n1, n2 = self.shape
        m = X.shape[1]
        C = np.zeros((n1 + 1, n2 + 1, m))
        C[1:, 1:] = X.reshape(n1, n2, m)
        np.cumsum(C, axis=0, out=C)
        np.cumsum(C, axis=1, out=C)
        r1, r2, c1, c2 = self._rects.T
        return C[r2 + 1, c2 + 1] - C[r1, c2 + 1] - C[r2 + 1, c1] + C[r1, c1]

    def _matrix(self):
        rows, cols = self.axis_ranges()
        R, C = rows._matrix(), cols._matrix()
        return (R[:, :, None] * C[:, None, :]).reshape(self.n_queries, self.size)

    def _gram(self):
        # F[u1, n1 - 1 - v1, u2, n2 - 1 - v2] = #{k : r1 <= u1, r2 >= v1, c1 <= u2, c2 >= v2}: the "hi" axes
        # are stored reversed so that every cumulative sum runs forwards, in place.
        n1, n2 = self.shape
        r1, r2, c1, c2 = self._rects.T
        F = np.zeros((n1, n1, n2, n2))
        np.add.at(F, (r1, n1 - 1 - r2, c1, n2 - 1 - c2), 1.0)
        for axis in range(4):
            np.cumsum(F, axis=axis, out=F)
        a, b = np.arange(n1), np.arange(n2)
        mn1, rmx1 = np.minimum.outer(a, a), n1 - 1 - np.maximum.outer(a, a)
        mn2, rmx2 = np.minimum.outer(b, b), n2 - 1 - np.maximum.outer(b, b)
        G = np.empty((n1, n2, n1, n2))
        for i in range(n1):                     # row cell i against every row cell c: G[i, b, c, d]
            Fi = F[mn1[i], rmx1[i]]             # (n1, n2, n2), indexed [c, u2, v2']
            G[i] = Fi[:, mn2, rmx2].transpose(1, 0, 2)
        return G.reshape(self.size, self.size)

    def _gram_temporaries(self) -> float:
        return 2.0

    def frobenius_squared(self) -> float:
        r1, r2, c1, c2 = self._rects.T
        return float(np.sum((r2 - r1 + 1) * (c2 - c1 + 1)))

    def __repr__(self) -> str:
        return f"Rectangles(shape={self.shape}, n_queries={self.n_queries})"


class RandomRectangles(Rectangles):
    """``count`` random inclusive rectangles of a 2-D domain, drawn per axis.

    Parameters
    ----------
    shape : tuple of int
        The domain shape ``(n1, n2)``.
    count : int
        The number of rectangles, >= 1.
    rng : numpy.random.Generator
        The source of randomness.
    sampler : {"dpbench", "uniform-endpoints"}
        The 1-D sampler of :class:`RandomRanges`, applied to the rows (all
        ``count`` of them), then to the columns; on a square domain the
        rectangles are those of the library's DPBench harness for a
        generator in the same state.
    """

    def __init__(self, shape: int | Sequence[int], count: int, rng: np.random.Generator,
                 sampler: str = "dpbench") -> None:
        self.shape = as_shape(shape, "shape", dims=2)
        count = as_int(count, "count", minimum=1)
        rng = _as_rng(rng)
        self.sampler = _as_sampler(sampler)
        r1, r2 = _sample_ranges(self.shape[0], count, rng, self.sampler)
        c1, c2 = _sample_ranges(self.shape[1], count, rng, self.sampler)
        self._rects = np.column_stack([r1, r2, c1, c2])

    def __repr__(self) -> str:
        return f"RandomRectangles(shape={self.shape}, count={self.n_queries}, sampler={self.sampler!r})"
