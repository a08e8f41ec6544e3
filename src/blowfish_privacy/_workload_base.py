"""The workload interface: a set of linear queries on a histogram, answered without building its matrix.

:class:`Workload` is what every workload of :mod:`blowfish_privacy.workloads`
implements (``answer``, ``gram``, ``frobenius_squared``, ``matrix``); dense
results above :data:`DENSE_LIMIT` entries, or above the memory available,
are refused with :class:`WorkloadTooLargeError`.
"""

from __future__ import annotations

import abc
import math
import numbers

import numpy as np
import numpy.typing as npt

from ._validation import as_int, memory_limit
from .errors import BlowfishError, ParameterError

__all__ = ["DENSE_LIMIT", "Workload", "WorkloadTooLargeError", "as_shape"]

#: Largest dense array (entries) that :meth:`Workload.matrix` and
#: :meth:`Workload.gram` build unless told otherwise: 2**28 float64
#: entries, 2 GiB (the Gram matrix of a 128 x 128 domain, not that of
#: 256 x 256).
DENSE_LIMIT = 2**28
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

def as_shape(shape, name: str = "shape", dims: int | None = None) -> tuple[int, ...]:
    """``shape`` as a tuple of positive ints (an int is one axis), with ``dims`` axes when given."""
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

    def answer(self, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
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
