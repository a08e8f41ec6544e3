"""Linear query workloads on a histogram, as objects.

A workload is a set of ``q`` linear queries on a histogram ``x`` of a
domain of shape ``(n,)`` or ``(n1, n2)`` (more axes where stated), the
histogram flattened row-major into a vector of ``N = prod(shape)`` cells:
the answers are ``W @ x`` for a ``(q, N)`` query matrix ``W``.  The classes
follow the workload classes of the High-Dimensional Matrix Mechanism
(R. McKenna, G. Miklau, M. Hay, A. Machanavajjhala, "Optimizing error of
high-dimensional statistical queries under differential privacy", PVLDB
11(10), 2018, Sec 3 and 5: explicit, range, prefix, marginal and Kronecker
workloads), written for this library.

Every workload answers without building ``W``:

- ``answer(x)``: ``W @ x`` by prefix sums (ranges, rectangles) or sums over
  axes (marginals), in O(N + q);
- ``gram()``: ``W.T @ W`` as a dense ``(N, N)`` float64 array from closed
  forms (identity, prefix, all ranges, Kronecker products, marginals) or by
  counting the queries by their end points and taking cumulative sums
  (arbitrary ranges and rectangles), in O(q + N^2) time, never through
  ``W``; 1-D domains of 4096 cells take about 130 MiB;
- ``frobenius_squared()``: ``||W||_F^2`` in closed form or O(q);
- ``matrix()``: the dense ``W``, only when it is small.

Dense results above :data:`DENSE_LIMIT` entries (or above the memory this
process has) are refused with :class:`WorkloadTooLargeError`, a
``MemoryError`` naming the size; the Gram matrix of a 256 x 256 domain
(4.3e9 entries) is one of them.  A :class:`Kronecker` workload then gives
its per-axis :meth:`Kronecker.factors`, whose Gram matrices are small
(``gram(Kronecker(A, B)) = kron(gram(A), gram(B))``), and
:class:`Rectangles` gives its per-axis ranges
(:meth:`Rectangles.axis_ranges`), so that a strategy optimiser can work
per axis.

Example
-------
>>> import numpy as np
>>> from blowfish_privacy.workloads import AllRanges, Kronecker, Prefix, RandomRanges
>>> W = AllRanges(4)
>>> W.n_queries
10
>>> W.answer(np.array([1, 2, 3, 4]))[:4]         # [0, 0], [0, 1], [0, 2], [0, 3]
array([ 1.,  3.,  6., 10.])
>>> bool(np.array_equal(W.gram(), W.matrix().T @ W.matrix()))
True
>>> R = RandomRanges(4096, 2000, np.random.default_rng(0))   # DPBench's sampler
>>> R.gram().shape, R.n_queries
((4096, 4096), 2000)
>>> K = Kronecker(Prefix(3), Prefix(2))           # every quadrant [0, i] x [0, j]
>>> K.shape, K.n_queries
((3, 2), 6)
>>> K.answer(np.ones((3, 2)))
array([1., 2., 2., 4., 3., 6.])
"""

from __future__ import annotations

import abc
import math
import numbers
from typing import Sequence

import numpy as np

from ._validation import as_int, memory_limit
from .errors import BlowfishError, ParameterError

__all__ = [
    "DENSE_LIMIT",
    "RANGE_SAMPLERS",
    "AllRanges",
    "Explicit",
    "Identity",
    "Kronecker",
    "Marginals",
    "Prefix",
    "RandomRanges",
    "RandomRectangles",
    "Ranges",
    "Rectangles",
    "Stack",
    "Total",
    "Workload",
    "WorkloadTooLargeError",
]

#: Largest dense array (entries) that :meth:`Workload.matrix` and
#: :meth:`Workload.gram` build unless told otherwise: 2**28 float64
#: entries, 2 GiB (the Gram matrix of a 128 x 128 domain, not that of
#: 256 x 256).
DENSE_LIMIT = 2**28

#: The random-range samplers: DPBench's (a length uniform in 1..n, then a
#: start uniform among the positions where it fits) and two uniform end
#: points, sorted.
RANGE_SAMPLERS = ("dpbench", "uniform-endpoints")


class WorkloadTooLargeError(BlowfishError, MemoryError):
    """A dense array of a workload (its matrix or Gram matrix) is above the size limit.

    The message names the workload, the array, its shape, entries and bytes,
    and the limit; it says what to use instead.
    """


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.3g} GiB"


def _check_dense(workload, what: str, rows: int, cols: int, max_entries, *, temporaries: float = 1.0,
                 instead: str = "") -> None:
    """Refuse a dense (rows, cols) float64 result above ``max_entries`` or the available memory."""
    limit = DENSE_LIMIT if max_entries is None else as_int(max_entries, "max_entries", minimum=0)
    entries = int(rows) * int(cols)
    nbytes = 8 * entries * temporaries
    avail = memory_limit()
    if entries > limit or nbytes > avail:
        why = (f"above the limit of {limit:,} entries (max_entries; {_gib(8 * limit)})" if entries > limit
               else f"more than the {_gib(avail)} of memory available")
        raise WorkloadTooLargeError(
            f"{workload!r}.{what} would be a dense ({rows:,}, {cols:,}) float64 array: {entries:,} entries "
            f"(about {_gib(nbytes)} of working memory), {why}"
            + (f"; {instead}" if instead else ""))


def _as_n(n, name: str = "n") -> int:
    return as_int(n, name, minimum=1)


def _as_shape(shape, name: str = "shape", dims: int | None = None) -> tuple[int, ...]:
    if isinstance(shape, (numbers.Integral, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of positive integers, got {shape!r}") from None
    if dims is not None and len(shape) != dims:
        raise ParameterError(name, f"{name} must have {dims} axes, got {shape!r}")
    if len(shape) == 0:
        raise ParameterError(name, f"{name} must have at least one axis, got {shape!r}")
    return tuple(as_int(s, f"{name}[{i}]", minimum=1) for i, s in enumerate(shape))


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


class Workload(abc.ABC):
    """A set of linear queries on a histogram of shape :attr:`shape` (abstract).

    Attributes
    ----------
    shape : tuple of int
        The domain shape; the histogram ``x`` has ``N = prod(shape)`` cells,
        flattened row-major.
    n_queries : int
        The number of queries ``q`` (rows of the query matrix).
    """

    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """The number of cells ``N = prod(shape)``."""
        return math.prod(self.shape)

    @property
    @abc.abstractmethod
    def n_queries(self) -> int:
        """The number of queries q."""

    # -- to implement ----------------------------------------------------------
    @abc.abstractmethod
    def _apply(self, X: np.ndarray) -> np.ndarray:
        """``W @ X`` for a float64 ``(N, m)`` array: ``(q, m)`` float64."""

    @abc.abstractmethod
    def _matrix(self) -> np.ndarray:
        """The dense ``(q, N)`` float64 query matrix (size already checked)."""

    def _gram(self) -> np.ndarray:
        M = self._matrix()
        return M.T @ M

    def _gram_temporaries(self) -> float:
        """Working memory of :meth:`gram`, in (N, N) float64 arrays."""
        return 1.0

    def _gram_instead(self) -> str:
        return "a strategy optimiser should use a per-axis form (Kronecker.factors(), Rectangles.axis_ranges())"

    @abc.abstractmethod
    def frobenius_squared(self) -> float:
        """``||W||_F^2``, the sum of the squared entries of the query matrix (float).

        Equal to ``trace(W.T @ W)``; computed without building ``W``.
        """

    # -- public ----------------------------------------------------------------
    def matrix(self, max_entries: int | None = None) -> np.ndarray:
        """The dense query matrix ``W``.

        Parameters
        ----------
        max_entries : int, optional
            Refuse a matrix of more entries (default :data:`DENSE_LIMIT`).

        Returns
        -------
        numpy.ndarray
            ``(q, N)`` float64; row ``k`` holds the coefficients of query
            ``k`` on the row-major flattened histogram.

        Raises
        ------
        WorkloadTooLargeError
            (a ``MemoryError``) when ``q * N`` is above ``max_entries`` or
            the matrix would not fit in the available memory.
        """
        _check_dense(self, "matrix()", self.n_queries, self.size, max_entries,
                     instead="use answer(x) for the answers and gram() for W^T W")
        return self._matrix()

    def gram(self, max_entries: int | None = None) -> np.ndarray:
        """The Gram matrix ``W.T @ W``, computed without building ``W``.

        Parameters
        ----------
        max_entries : int, optional
            Refuse a Gram matrix of more entries (default :data:`DENSE_LIMIT`).

        Returns
        -------
        numpy.ndarray
            ``(N, N)`` float64, symmetric; entry ``(u, v)`` is the number of
            queries (weighted by their coefficients) covering both cells.
            Exact for integer coefficients (counts below 2**53).

        Raises
        ------
        WorkloadTooLargeError
            (a ``MemoryError``) when ``N * N`` is above ``max_entries`` or
            the computation would not fit in the available memory.
        """
        _check_dense(self, "gram()", self.size, self.size, max_entries,
                     temporaries=self._gram_temporaries(), instead=self._gram_instead())
        return self._gram()

    def answer(self, x) -> np.ndarray:
        """The query answers ``W @ x``, without building ``W``.

        Parameters
        ----------
        x : array_like
            The histogram: real numbers of shape :attr:`shape` or ``(N,)``
            (row-major).

        Returns
        -------
        numpy.ndarray
            ``(q,)`` float64, in the order of the rows of :meth:`matrix`.
        """
        arr = np.asarray(x)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"x must hold real numbers, got dtype {arr.dtype}")
        if arr.shape != self.shape and arr.shape != (self.size,):
            raise ParameterError("x", f"x must have shape {self.shape} or ({self.size},) for {self!r}, "
                                      f"got shape {arr.shape}")
        X = np.ascontiguousarray(arr, dtype=np.float64).reshape(self.size, 1)
        return self._apply(X)[:, 0]

    def __repr__(self) -> str:  # pragma: no cover - every class overrides it
        return f"{type(self).__name__}(shape={self.shape})"


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

    def __init__(self, n) -> None:
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

    def __init__(self, n, ranges) -> None:
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

    def __init__(self, n, count, rng, sampler: str = "dpbench") -> None:
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

    def __init__(self, shape, rects) -> None:
        self.shape = _as_shape(shape, "shape", dims=2)
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

    def __init__(self, shape, count, rng, sampler: str = "dpbench") -> None:
        self.shape = _as_shape(shape, "shape", dims=2)
        count = as_int(count, "count", minimum=1)
        rng = _as_rng(rng)
        self.sampler = _as_sampler(sampler)
        r1, r2 = _sample_ranges(self.shape[0], count, rng, self.sampler)
        c1, c2 = _sample_ranges(self.shape[1], count, rng, self.sampler)
        self._rects = np.column_stack([r1, r2, c1, c2])

    def __repr__(self) -> str:
        return f"RandomRectangles(shape={self.shape}, count={self.n_queries}, sampler={self.sampler!r})"


# -- products, unions, marginals, explicit -----------------------------------------------
def _as_workload(w, name: str) -> Workload:
    if not isinstance(w, Workload):
        raise TypeError(f"{name} must be a Workload (e.g. Prefix(n)), got {w!r} of type {type(w).__name__}")
    return w


class Kronecker(Workload):
    """The Kronecker product of per-axis workloads: ``W = kron(W1, W2, ...)``.

    Query ``(k1, k2, ...)`` (row-major over the factors' queries) is the
    product of query ``k1`` of ``W1`` on the first axis (or block of axes),
    query ``k2`` of ``W2`` on the next, and so on; e.g.
    ``Kronecker(Prefix(n1), Prefix(n2))`` is every quadrant
    ``[0, i] x [0, j]`` and ``Kronecker(AllRanges(n1), AllRanges(n2))``
    every rectangle.

    Parameters
    ----------
    *factors : Workload
        One or more workloads; the domain shape is the concatenation of
        their shapes.

    Notes
    -----
    ``gram() = kron(G1, G2, ...)`` of the factors' Gram matrices, and
    ``||W||_F^2`` is the product of theirs.  When the dense Gram matrix is
    too large (256 x 256: 4.3e9 entries), use :meth:`factors` and each
    factor's :meth:`~Workload.gram`.
    """

    def __init__(self, *factors) -> None:
        if not factors:
            raise ParameterError("factors", "Kronecker needs at least one factor workload, got none")
        self._factors = tuple(_as_workload(w, f"factors[{i}]") for i, w in enumerate(factors))
        self.shape = tuple(s for w in self._factors for s in w.shape)

    def factors(self) -> tuple[Workload, ...]:
        """The per-axis workloads, in axis order: ``W = kron(*factors())``."""
        return self._factors

    @property
    def n_queries(self) -> int:
        return math.prod(w.n_queries for w in self._factors)

    def _apply(self, X):
        m = X.shape[1]
        sizes = [w.size for w in self._factors]
        T = X.reshape(*sizes, m)
        for axis, w in enumerate(self._factors):
            T = np.moveaxis(T, axis, 0)
            rest = T.shape[1:]
            T = w._apply(np.ascontiguousarray(T).reshape(sizes[axis], -1)).reshape(w.n_queries, *rest)
            T = np.moveaxis(T, 0, axis)
        return T.reshape(self.n_queries, m)

    def _matrix(self):
        M = np.ones((1, 1))
        for w in self._factors:
            M = np.kron(M, w._matrix())
        return M

    def _gram(self):
        G = np.ones((1, 1))
        for w in self._factors:
            G = np.kron(G, w._gram())        # the size was checked on the product
        return G

    def _gram_instead(self) -> str:
        return "use factors() and each factor's gram(): gram() = kron(*[f.gram() for f in factors()])"

    def frobenius_squared(self) -> float:
        return float(math.prod(w.frobenius_squared() for w in self._factors))

    def __repr__(self) -> str:
        return f"Kronecker({', '.join(map(repr, self._factors))})"


class Stack(Workload):
    """The union of workloads on the same domain: their query matrices stacked vertically.

    Parameters
    ----------
    *workloads : Workload
        One or more workloads of the same :attr:`~Workload.shape`; the rows
        are theirs, in order.

    Notes
    -----
    ``gram()`` and ``frobenius_squared()`` are the sums of the parts'.
    """

    def __init__(self, *workloads) -> None:
        if not workloads:
            raise ParameterError("workloads", "Stack needs at least one workload, got none")
        parts = tuple(_as_workload(w, f"workloads[{i}]") for i, w in enumerate(workloads))
        for i, w in enumerate(parts):
            if w.shape != parts[0].shape:
                raise ParameterError("workloads", f"workloads[{i}] has shape {w.shape}, workloads[0] has "
                                                  f"{parts[0].shape}: a Stack needs one domain")
        self._parts = parts
        self.shape = parts[0].shape

    def parts(self) -> tuple[Workload, ...]:
        """The stacked workloads, in row order."""
        return self._parts

    @property
    def n_queries(self) -> int:
        return sum(w.n_queries for w in self._parts)

    def _apply(self, X):
        return np.concatenate([w._apply(X) for w in self._parts], axis=0)

    def _matrix(self):
        return np.concatenate([w._matrix() for w in self._parts], axis=0)

    def _gram(self):
        G = self._parts[0]._gram()
        for w in self._parts[1:]:
            G += w._gram()
        return G

    def _gram_temporaries(self) -> float:
        return 1.0 + max(w._gram_temporaries() for w in self._parts)

    def frobenius_squared(self) -> float:
        return float(sum(w.frobenius_squared() for w in self._parts))

    def __repr__(self) -> str:
        return f"Stack({', '.join(map(repr, self._parts))})"


class Marginals(Stack):
    """Marginals of a multi-attribute domain: for each set of kept axes, the counts of each combination.

    The marginal on the kept axes ``K`` has ``prod(shape[K])`` queries, one
    per combination of values of those axes (row-major), each summing the
    cells that have it; ``K = ()`` is the total.  It is the Kronecker
    product of :class:`Identity` on the kept axes and :class:`Total` on the
    others, and the workload is the :class:`Stack` of them (HDMM, Sec 3).

    Parameters
    ----------
    shape : tuple of int
        The domain shape (any number of axes).
    axes_list : sequence of sequence of int
        The kept axes of each marginal, e.g. ``[(0,), (1,), (0, 1)]``;
        axes in ``0 .. len(shape) - 1``, each at most once per marginal
        (sorted; a repeated marginal counts twice).
    """

    def __init__(self, shape, axes_list: Sequence[Sequence[int]]) -> None:
        shape = _as_shape(shape, "shape")
        d = len(shape)
        if isinstance(axes_list, (str, bytes)) or not isinstance(axes_list, Sequence):
            raise TypeError(f"axes_list must be a sequence of tuples of axes, got {axes_list!r}")
        if len(axes_list) == 0:
            raise ParameterError("axes_list", "axes_list must name at least one marginal, got none")
        kept = []
        for i, axes in enumerate(axes_list):
            if isinstance(axes, (numbers.Integral, np.integer)) and not isinstance(axes, bool):
                axes = (axes,)
            try:
                axes = tuple(as_int(a, f"axes_list[{i}]", minimum=0) for a in axes)
            except TypeError:
                raise TypeError(f"axes_list[{i}] must be a tuple of axis numbers, got {axes!r}") from None
            if any(a >= d for a in axes) or len(set(axes)) != len(axes):
                raise ParameterError("axes_list", f"axes_list[{i}] = {axes!r}: axes must be distinct and in "
                                                  f"0 .. {d - 1} for a domain of shape {shape}")
            kept.append(tuple(sorted(axes)))
        self.axes_list = kept
        super().__init__(*[Kronecker(*[Identity(n) if a in axes else Total(n) for a, n in enumerate(shape)])
                           for axes in kept])
        self.shape = shape

    def _apply(self, X):
        m = X.shape[1]
        T = X.reshape(*self.shape, m)
        d = len(self.shape)
        out = [T.sum(axis=tuple(a for a in range(d) if a not in axes)).reshape(-1, m) for axes in self.axes_list]
        return np.concatenate(out, axis=0)

    def _gram_instead(self) -> str:
        return "use parts(): each marginal is a Kronecker product of Identity and Total factors"

    def __repr__(self) -> str:
        return f"Marginals(shape={self.shape}, axes_list={self.axes_list})"


class Explicit(Workload):
    """Any query matrix, given densely.

    Parameters
    ----------
    matrix : array_like
        ``(q, N)`` finite real numbers (copied to float64); a 1-D array is
        one query.
    shape : tuple of int, optional
        The domain shape, with ``prod(shape) == N`` (default ``(N,)``).
    """

    def __init__(self, matrix, shape=None) -> None:
        M = np.asarray(matrix)
        if M.dtype.kind not in "iuf":
            raise TypeError(f"matrix must hold real numbers, got dtype {M.dtype}")
        if M.ndim == 1:
            M = M.reshape(1, -1)
        if M.ndim != 2 or M.shape[0] < 1 or M.shape[1] < 1:
            raise ParameterError("matrix", f"matrix must be a non-empty (q, N) array, got shape {M.shape}")
        M = np.array(M, dtype=np.float64, order="C")
        if not np.isfinite(M).all():
            raise ParameterError("matrix", "matrix must hold finite numbers (found NaN or infinity)")
        self.shape = (M.shape[1],) if shape is None else _as_shape(shape)
        if math.prod(self.shape) != M.shape[1]:
            raise ParameterError("shape", f"shape {self.shape} has {math.prod(self.shape)} cells but matrix has "
                                          f"{M.shape[1]} columns")
        self._M = M

    @property
    def n_queries(self) -> int:
        return int(self._M.shape[0])

    def _apply(self, X):
        return self._M @ X

    def _matrix(self):
        return self._M.copy()

    def _gram(self):
        return self._M.T @ self._M

    def frobenius_squared(self) -> float:
        return float(np.sum(self._M * self._M))

    def __repr__(self) -> str:
        return f"Explicit(shape={self.shape}, n_queries={self.n_queries})"
