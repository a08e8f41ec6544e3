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

The interface lives in :mod:`._workload_base`, the range and rectangle
workloads in :mod:`._workload_ranges`, products, unions, marginals and
explicit matrices here; every workload is imported from this module.

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

import math
import numbers
from typing import Sequence

import numpy as np
import numpy.typing as npt

from ._validation import as_int
from ._workload_base import DENSE_LIMIT, Workload, WorkloadTooLargeError, as_shape
from ._workload_ranges import (
    RANGE_SAMPLERS,
    AllRanges,
    Identity,
    Prefix,
    RandomRanges,
    RandomRectangles,
    Ranges,
    Rectangles,
    Total,
)
from .errors import ParameterError

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

    def __init__(self, *factors: Workload) -> None:
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

    def __init__(self, *workloads: Workload) -> None:
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

    def __init__(self, shape: int | Sequence[int], axes_list: Sequence[Sequence[int]]) -> None:
        shape = as_shape(shape, "shape")
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

    def __init__(self, matrix: npt.ArrayLike, shape: int | Sequence[int] | None = None) -> None:
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
        self.shape = (M.shape[1],) if shape is None else as_shape(shape)
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
