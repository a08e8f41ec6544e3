"""The base class :class:`SecretGraph`.

:class:`SecretGraph` defines the questions every graph answers, on
records (read by :mod:`.records`) and, bound to a
:class:`~blowfish_privacy.policy.domain.Domain`, vectorised on flat
indices, and caches the per-domain tables each graph builds in ``_bind``.

Besides the questions every graph answers, :class:`SecretGraph` has
*capabilities*: questions with a fast answer for some graphs (the
threshold of a 1-D line, the cliques of a partition, a closed-form
spanning tree, ...).  Each returns None (or False) where a graph has no
such answer, meaning "use the generic path" (listing edges, bounds), so
callers never ask which class a graph is.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain import Domain, Ordinal, is_int
from . import limits as _limits
from .lattice import ThresholdSteps
from .records import differ, is_single, pair_rows

def _scalar_distance(value: float) -> int | float:
    return math.inf if math.isinf(value) else int(value)


@dataclass(frozen=True)
class SpecParameter:
    """One key of a ``[policies.NAME]`` table of a release spec.

    Attributes
    ----------
    name : str
        The key.
    types : tuple of type
        Accepted TOML value types (``bool`` never counts as a number).
    what : str
        What the value must be, for error messages ("an integer >= 1").
    required : bool
        Whether the key must be given.
    default : object
        The value when the key is absent and not required.
    items : type or None
        For arrays, the type every element must have (None: any).
    """

    name: str
    types: tuple
    what: str
    required: bool = False
    default: Any = None
    items: type | None = None


class SecretGraph(abc.ABC):
    """A discriminative secret graph on the values of a domain (000 Sec 3.1).

    Record-level methods (:meth:`is_edge`, :meth:`distance`) need no
    domain; the index-level methods take the :class:`Domain` the graph is
    used with and check that the graph makes sense on it first
    (:meth:`validate`).  Graphs are immutable; per-domain tables are cached.
    """

    #: The graph's name in release specs (``secrets = "..."``), or None.
    spec_name: str | None = None
    #: The keys of its ``[policies.NAME]`` table besides ``secrets`` (see :meth:`from_spec`).
    spec_parameters: tuple[SpecParameter, ...] = ()

    def __init__(self) -> None:
        self._bindings: dict[Domain, Any] = {}
        self._record_cache: dict = {}

    # -- identity ----------------------------------------------------------
    @abc.abstractmethod
    def _key(self) -> tuple:
        """Parameters that identify the graph."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    # -- record level --------------------------------------------------------
    def is_edge(self, x: Any, y: Any, *, domain: Domain | None = None) -> bool | np.ndarray:
        """Whether ``(x, y)`` is an edge.

        Parameters
        ----------
        x, y : record or array of records
            A record is a scalar (1-D) or a tuple of per-attribute values
            (bin values for ordinal attributes, labels for categorical ones).
            A list or numpy array holds several records (a 1-D array:
            scalar records; a 2-D array: one record per row).
        domain : Domain, optional
            When given, records are located in it (bins apply) and the
            index-level rules are used.

        Returns
        -------
        bool, or numpy.ndarray of bool for arrays of records.
        """
        if domain is not None:
            single, i, j = self._encode_pair(domain, x, y)
            mask = self.edge_mask(domain, i, j)
            return bool(mask[0]) if single else mask
        single, X, Y = pair_rows(x, y)
        mask = self._record_edge(X, Y)
        return bool(mask[0]) if single else mask

    def distance(self, x: Any, y: Any, *, domain: Domain | None = None) -> int | float | np.ndarray:
        """Shortest-path length ``d_G(x, y)`` (000 eq. 9).

        Returns
        -------
        int or math.inf for one pair (0 when ``x == y``); a float64 array
        (``inf`` where disconnected) for arrays of records.
        """
        if domain is not None:
            single, i, j = self._encode_pair(domain, x, y)
            dist = self.distance_index(domain, i, j)
            return _scalar_distance(float(dist[0])) if single else dist
        single, X, Y = pair_rows(x, y)
        dist = self._record_distance(X, Y)
        dist = np.where(differ(X, Y).any(axis=1), dist, 0.0)
        return _scalar_distance(float(dist[0])) if single else dist

    @staticmethod
    def _encode_pair(domain: Domain, x: Any, y: Any) -> tuple[bool, np.ndarray, np.ndarray]:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {domain!r}")
        single = is_single(x) and is_single(y)
        out = []
        for value in (x, y):
            if is_single(value):
                out.append(np.array([domain.index_of(value)], dtype=np.int64))
            else:
                out.append(domain.encode(value))
        i, j = np.broadcast_arrays(*out)
        return single, i, j

    @abc.abstractmethod
    def _record_edge(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _record_distance(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray: ...

    # -- domain level ----------------------------------------------------------
    def validate(self, domain: Domain) -> None:
        """Check that the graph is well defined on ``domain``.

        Raises
        ------
        TypeError
            If ``domain`` is not a Domain.
        ValueError
            If the graph does not fit the domain (the message says why).
        """
        self._binding(domain)

    def describe(self, domain: Domain) -> str:
        """What stays secret under this graph on ``domain``, in plain words.

        One or two sentences, as :func:`blowfish_privacy.explain.explain`
        prints them: which pairs of one individual's values an adversary
        cannot tell apart better than ``e^epsilon`` (the edges), how pairs
        farther apart are protected (``e^(epsilon d_G)``, 000 eq. 9) and
        which pairs are not protected at all (``d_G = inf``).  Every graph
        class here says it in its own terms; this default speaks of edges.

        Parameters
        ----------
        domain : Domain
            The domain the graph is used with (checked as by :meth:`validate`).

        Returns
        -------
        str

        Raises
        ------
        TypeError, ValueError
            As :meth:`validate`, when the graph does not fit ``domain``.
        """
        self._binding(domain)
        return "Pairs of values joined by an edge are secret; others are protected by e^(epsilon d_G)."

    def _binding(self, domain: Domain) -> Any:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {domain!r} of type {type(domain).__name__}")
        bound = self._bindings.get(domain)
        if bound is None:
            bound = self._bind(domain)
            if len(self._bindings) >= 8:
                self._bindings.pop(next(iter(self._bindings)))
            self._bindings[domain] = bound
        return bound

    @abc.abstractmethod
    def _bind(self, domain: Domain) -> Any:
        """Validate against ``domain`` and return per-domain tables (never None)."""

    def _pair(self, domain: Domain, i: Any, j: Any) -> tuple[Any, np.ndarray, np.ndarray]:
        bound = self._binding(domain)
        i = domain.check_indices(i, "i")
        j = domain.check_indices(j, "j")
        try:
            i, j = np.broadcast_arrays(i, j)
        except ValueError:
            raise ValueError(f"i and j must have broadcastable shapes, got {i.shape} and {j.shape}") from None
        return bound, i, j

    def edge_mask(self, domain: Domain, i: Any, j: Any) -> np.ndarray:
        """Vectorised edge test on flat indices.

        Parameters
        ----------
        domain : Domain
        i, j : array_like of int
            Flat indices, broadcast together.

        Returns
        -------
        numpy.ndarray of bool, the broadcast shape.
        """
        bound, i, j = self._pair(domain, i, j)
        shape = i.shape
        mask = self._edge_mask(domain, bound, i.reshape(-1), j.reshape(-1))
        return mask.reshape(shape)

    def distance_index(self, domain: Domain, i: Any, j: Any) -> np.ndarray:
        """Vectorised ``d_G`` on flat indices: float64, ``inf`` where disconnected."""
        bound, i, j = self._pair(domain, i, j)
        shape = i.shape
        i, j = i.reshape(-1), j.reshape(-1)
        dist = self._distance_index(domain, bound, i, j)
        dist[i == j] = 0.0
        return dist.reshape(shape)

    def has_edge(self, domain: Domain) -> bool:
        """Whether the graph has at least one edge on ``domain``."""
        return bool(self._has_edge(domain, self._binding(domain)))

    def is_tree(self, domain: Domain) -> bool:
        """Whether the graph on ``domain`` is a tree (connected, ``|E| = |T| - 1``)."""
        return bool(self._is_tree(domain, self._binding(domain)))

    def iter_edges(self, domain: Domain, limit: int = _limits.EDGE_LIMIT) -> tuple[np.ndarray, np.ndarray]:
        """All edges ``(i, j)``, ``i < j``, as two int64 arrays (small domains only).

        Raises
        ------
        ValueError
            If ``domain.size`` exceeds ``limit``.
        """
        bound = self._binding(domain)
        if not is_int(limit) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        if domain.size > limit:
            raise ValueError(
                f"iter_edges lists edges only for domains of at most limit={limit} values, got |T| = {domain.size}"
            )
        parts = list(self._edge_chunks(domain, bound, _limits.PAIRS_PER_CHUNK))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _edge_chunks(self, domain: Domain, bound: Any, max_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        size = domain.size
        rows = max(1, max_pairs // max(size, 1))
        cols = np.arange(size, dtype=np.int64)
        for start in range(0, size, rows):
            ii = np.arange(start, min(size, start + rows), dtype=np.int64)
            I = np.repeat(ii, size)
            J = np.tile(cols, ii.shape[0])
            keep = J > I
            I, J = I[keep], J[keep]
            mask = self._edge_mask(domain, bound, I, J)
            if mask.any():
                yield I[mask], J[mask]

    @abc.abstractmethod
    def _edge_mask(self, domain: Domain, bound: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _distance_index(self, domain: Domain, bound: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _has_edge(self, domain: Domain, bound: Any) -> bool: ...

    def _is_tree(self, domain: Domain, bound: Any) -> bool:
        # Default for graphs made of cliques: a clique is a tree only on <= 2
        # vertices, and two cliques are disconnected.
        return domain.size == 1 or (domain.size == 2 and self._has_edge(domain, bound))

    @abc.abstractmethod
    def _max_weighted_l1(self, domain: Domain, bound: Any, scale: Sequence[int]) -> tuple[int, bool, str]:
        """``max`` over edges of ``sum_a scale[a] * |code_a(x) - code_a(y)|`` (0 without edges)."""

    # -- public forms of the per-domain questions --------------------------------
    def max_weighted_l1(self, domain: Domain, scale: Sequence[int]) -> tuple[int, bool, str]:
        """The largest weighted change of one edge: ``max sum_a scale[a] |code_a(x) - code_a(y)|``.

        Parameters
        ----------
        domain : Domain
        scale : sequence of int
            One non-negative weight per attribute (value units per bin for
            sums, ``[1]`` for the cumulative histogram of a 1-D domain).

        Returns
        -------
        value : int
            0 when the graph has no edge.
        exact : bool
            True for the maximum itself, False for a proven upper bound.
        note : str
            How a bound was obtained ("" when exact).
        """
        return self._max_weighted_l1(domain, self._binding(domain), scale)

    def edge_chunks(self, domain: Domain, max_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every edge ``(i, j)``, ``i < j``, once, in chunks of int64 arrays (about ``max_pairs`` candidates each).

        Unlike :meth:`iter_edges` this never holds all edges at once; it
        still visits them all, so its time grows with the edges (or with
        ``|T|^2`` for graphs without a cheaper enumeration).
        """
        if not is_int(max_pairs) or max_pairs < 1:
            raise ValueError(f"max_pairs must be an int >= 1, got {max_pairs!r}")
        return self._edge_chunks(domain, self._binding(domain), int(max_pairs))

    # -- capabilities: fast answers where a graph has one (None: use the generic path) --
    def is_complete(self) -> bool:
        """Whether the graph is, by its definition, the complete graph on every domain.

        Every two distinct values are then an edge (bounded differential
        privacy, 000 eq. 4), so mechanisms may use the complete graph's
        closed forms (a star as spanning tree, the DP baselines).

        Returns
        -------
        bool
            True for :class:`FullDomain` and ``Partition.by_attributes([])``;
            False otherwise (including graphs that happen to be complete on
            some domain, such as ``Attribute(c)`` with ``c`` at least the
            number of attributes: ask :meth:`agreement_cliques` for those).
        """
        return False

    def edge_threshold(self) -> tuple[str, Any] | None:
        """``(metric, theta)`` when the edges are the pairs ``x != y`` with ``metric(x - y) <= theta``.

        Domain-free: ``theta`` is as given (an int or float, in value
        units; ``fractions.Fraction(theta)`` is exact), ``metric`` one of
        ``"l1"``, ``"l2"``, ``"linf"``.  Use :meth:`threshold_steps` for the
        same graph on a domain's bins.

        Returns
        -------
        tuple of (str, number), or None
            For :class:`DistanceThreshold` and :class:`Line`; None for
            every other graph.
        """
        return None

    def threshold_steps(self, domain: Domain) -> ThresholdSteps | None:
        """The graph on ``domain`` as lattice steps (metric, exact theta, bin widths, caps), or None.

        Parameters
        ----------
        domain : Domain
            Checked as by :meth:`validate`.

        Returns
        -------
        ThresholdSteps or None
            For :class:`DistanceThreshold` and :class:`Line`: its
            ``caps[a]`` is the radius along attribute ``a`` (most bins one
            edge moves it alone).  None for every other graph.
        """
        self._binding(domain)
        return None

    def line_threshold(self, domain: Domain) -> int | None:
        """On a 1-D domain, the ``theta`` (in bins) such that the edges are the pairs at most ``theta`` bins apart.

        Such a graph embeds in the line with stretch ``theta``, and the
        cumulative histogram's sensitivity is ``theta`` (000 Sec 7).

        Returns
        -------
        int or None
            ``min(theta // bin_width, |T| - 1)`` for a distance threshold on
            a 1-D domain (0: no edge); None for a domain of several
            attributes or any other graph.
        """
        steps = self.threshold_steps(domain)
        if steps is None or domain.ndim != 1:
            return None
        return int(steps.caps[0])

    def tree_embedding(self, domain: Domain) -> tuple[str, int] | None:
        """A spanning tree in closed form, as ``(shape, stretch)``, or None (list the edges to find one).

        ``("star", l)``: the star centred at flat index 0, for the
        complete graph (stretch 2, or 1 on at most two values).
        ``("line", theta)``: the line ``0 - 1 - ... - (|T|-1)``, for a 1-D
        threshold graph of :meth:`line_threshold` ``theta`` (0 when the
        graph has no edge: there is then no tree to embed).  The stretch is
        the largest tree distance between the ends of an edge (001 Sec 2).

        Returns
        -------
        tuple of (str, int), or None
        """
        if self.is_complete():
            self._binding(domain)
            return "star", 2 if domain.size > 2 else 1
        theta = self.line_threshold(domain)
        if theta is not None:
            return "line", theta
        return None

    def agreement_cliques(self, domain: Domain) -> list[tuple[int, ...]] | None:
        """The graph as a union of cliques of values that agree on given attributes, or None.

        A list of sets ``F`` of attribute positions such that two distinct
        values are an edge iff they agree on every attribute of some ``F``
        of the list: ``[()]`` for a complete graph, the sets that leave out
        ``c`` attributes for ``Attribute(c)``, the named attributes for
        :meth:`Partition.by_attributes`.

        Returns
        -------
        list of tuple of int, or None
            None for graphs not of this form (thresholds, listed blocks,
            edge lists, intersections).
        """
        self._binding(domain)
        return None

    def block_ids(self, domain: Domain, indices: Any = None) -> np.ndarray | None:
        """For a graph made of disjoint cliques (a partition), the clique of each value; else None.

        Parameters
        ----------
        domain : Domain
        indices : array_like of int, optional
            Flat indices (all values of the domain when omitted).

        Returns
        -------
        numpy.ndarray of int64, or None
            Equal ids exactly for values in one block (ids are not
            necessarily ``0 .. blocks - 1``).  For every :class:`Partition`
            and for :class:`FullDomain` (one block); None otherwise.
        """
        self._binding(domain)
        return None

    def crosses_selection(self, domain: Domain, codes: Mapping[int, int]) -> bool | None:
        """Whether an edge joins a selected value to an unselected one, when known without listing edges.

        Parameters
        ----------
        domain : Domain
        codes : mapping of int to int
            The selection ``{attribute position: bin code}``: the values
            with those codes are selected.

        Returns
        -------
        bool or None
            Exact answers for graphs with :meth:`agreement_cliques` or
            :meth:`threshold_steps`; None otherwise (decide on the edges).
        """
        cliques = self.agreement_cliques(domain)
        if cliques is not None:
            # move one selecting attribute alone while agreeing on F: an edge iff it is outside F
            return any(pos not in F and domain.shape[pos] > 1 for F in cliques for pos in codes)
        steps = self.threshold_steps(domain)
        if steps is not None:
            # a crossing edge changes a selecting attribute by one bin or more, and the metric only grows
            # with the other coordinates: the step of one bin along that attribute decides
            return any(steps.caps[pos] >= 1 for pos in codes)
        return None

    def lists_edges(self) -> bool:
        """Whether the graph is given by its edges, so listing them costs ``O(|E|)`` on any domain.

        True for :class:`Custom`: :meth:`iter_edges` with ``limit=domain.size``
        is then cheap however large the domain.  False otherwise (listing
        scans pairs of values).
        """
        return False

    def on_bins(self, domain: Domain) -> tuple[SecretGraph, str]:
        """The graph to use on the bins of ``domain`` when this one speaks of raw values.

        A binned attribute's domain values are its bins (their lower
        edges); two raw values within a threshold may lie in bins farther
        apart.  The result protects every pair of bins holding a pair of
        raw values this graph protects.

        Parameters
        ----------
        domain : Domain
            The binned domain.

        Returns
        -------
        graph : SecretGraph
            This graph when no attribute is binned or the graph does not
            depend on bin values; a widened threshold for
            :class:`DistanceThreshold`.
        note : str
            How the graph was adapted ("" when it was not).

        Raises
        ------
        ValueError
            If no graph on the bins protects exactly those pairs (an
            interval boundary inside a bin).
        """
        return self, ""

    @classmethod
    def from_spec(cls, **values: Any) -> SecretGraph:
        """The graph of a ``[policies.NAME]`` table, from the values of its :attr:`spec_parameters`.

        Parameters
        ----------
        **values
            One value per key given in the table (type-checked against
            :attr:`spec_parameters`), defaults filled in.

        Raises
        ------
        TypeError, ValueError
            If the values do not define a graph (the message names the key).
        """
        return cls(**values)



def listing(values: Sequence[Any], limit: int = 6) -> str:
    """``a, b and c`` (at most ``limit`` items, then ``...``) for descriptions."""
    shown = [str(v) for v in values[:limit]]
    if len(values) > limit:
        return ", ".join(shown) + f", ... ({len(values)} in all)"
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


NO_EDGES = (
    "The graph has no edge on this domain: no pair of values is secret, so an adversary may tell "
    "any two values of one individual apart (nothing is protected)."
)

ONE_VALUE = "The domain has a single value: there is nothing to tell apart."


def ranges(domain: Domain, scale: Sequence[int]) -> list[int]:
    return [s * (n - 1) for s, n in zip(scale, domain.shape)]


def bin_widths(domain: Domain) -> list[int]:
    """Bin width of each attribute (1 for categorical ones)."""
    return [a.bin_width if isinstance(a, Ordinal) else 1 for a in domain.attributes]
