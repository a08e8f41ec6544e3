"""Partitioned secrets: :class:`Partition` (000 eq. 6).

A clique on each block of a partition of the domain: values inside a block
are secret, the block itself is public.  Blocks are listed explicitly, or
described by the attributes they agree on (:meth:`Partition.by_attributes`)
or by intervals of a 1-D ordinal domain (:meth:`Partition.intervals`), so
any domain size works without listing values.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from ..domain import Ordinal, is_int
from . import limits as _limits
from .base import NO_EDGES, SecretGraph, SpecParameter, bin_widths, listing, ranges
from .records import differ, encode_values, norm_record, norm_value, row_keys

if TYPE_CHECKING:
    from ..domain import Domain


class _BlocksBinding:
    """Block id of every flat index, for explicitly listed blocks."""

    def __init__(self, block_of: np.ndarray, sizes: np.ndarray) -> None:
        self.block_of = block_of
        self.sizes = sizes


class Partition(SecretGraph):
    """A clique on each block of a partition of the domain (000 eq. 6).

    Two distinct values are an edge iff they lie in the same block;
    ``d_G`` is 1 inside a block and ``inf`` across blocks (000 Sec 4).

    Parameters
    ----------
    blocks : sequence of sequences of records
        Disjoint, non-empty blocks.  Bound to a domain they must cover it
        exactly: a value left out would have no secret at all and so no
        protection, which is refused rather than assumed.

    Attributes
    ----------
    mode : {"blocks", "attributes", "intervals"}
        How the partition was described.
    blocks : tuple of tuples or None
        The listed blocks (records normalised: scalars in 1-D, else tuples).
    names : tuple or None
        For :meth:`by_attributes`, the attribute names or positions.
    boundaries : tuple or None
        For :meth:`intervals`, the interval boundaries.

    See Also
    --------
    Partition.by_attributes, Partition.intervals :
        Partitions described without listing the values (any domain size).
    """

    spec_name = "partition"
    spec_parameters = (
        SpecParameter("by", (list,), "an array of strings", items=str),
        SpecParameter("intervals", (list,), "an array of numbers"),
        SpecParameter("blocks", (list,), "an array of arrays of values"),
    )

    def __init__(self, blocks: Sequence[Sequence[Any]]) -> None:
        super().__init__()
        if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Iterable):
            raise TypeError(f"blocks must be a sequence of blocks (sequences of records), got {blocks!r}")
        blocks = list(blocks)
        if not blocks:
            raise ValueError("blocks must be a non-empty sequence of blocks, got []")
        normalised: list[tuple] = []
        where: dict[Any, int] = {}
        for b, block in enumerate(blocks):
            if isinstance(block, (str, bytes)) or not isinstance(block, Iterable):
                raise TypeError(f"blocks[{b}] must be a sequence of records, got {block!r}")
            records = tuple(norm_record(r) for r in block)
            if not records:
                raise ValueError(f"blocks[{b}] must be a non-empty sequence of records, got []")
            for record in records:
                try:
                    other = where.get(record)
                except TypeError:
                    raise TypeError(f"blocks[{b}] holds an unhashable record {record!r}") from None
                if other is not None:
                    raise ValueError(
                        f"blocks must be disjoint, got value {record!r} in blocks[{other}] and blocks[{b}]"
                    )
                where[record] = b
            normalised.append(records)
        self.mode = "blocks"
        self.blocks: tuple[tuple, ...] | None = tuple(normalised)
        self.names: tuple | None = None
        self.boundaries: tuple | None = None
        self._where = where

    @classmethod
    def by_attributes(cls, names: Sequence[str | int]) -> Partition:
        """Blocks of values that agree on the attributes ``names``.

        Parameters
        ----------
        names : sequence of str or int
            Attribute names (or positions, usable without a domain).  An
            empty sequence gives one block, the complete graph.
        """
        if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
            raise TypeError(f"names must be a sequence of attribute names or positions, got {names!r}")
        names = tuple(norm_value(n) for n in names)
        for n in names:
            if not (isinstance(n, str) or is_int(n)):
                raise TypeError(f"names must hold attribute names (str) or positions (int), got {n!r}")
            if is_int(n) and n < 0:
                raise ValueError(f"names: attribute positions must be >= 0, got {n}")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {list(names)!r}")
        return cls._described("attributes", names=names)

    @classmethod
    def intervals(cls, boundaries: Sequence[float]) -> Partition:
        """Blocks ``[b_k, b_{k+1})`` of a 1-D ordinal domain.

        Parameters
        ----------
        boundaries : sequence of numbers
            At least two, strictly increasing and finite.  Bound to a domain
            they must cover it: ``b_0 <= low`` and ``b_last >`` the last bin
            value.
        """
        if isinstance(boundaries, (str, bytes)) or not isinstance(boundaries, Iterable):
            raise TypeError(f"boundaries must be a sequence of numbers, got {boundaries!r}")
        values = []
        for b in boundaries:
            b = norm_value(b)
            if isinstance(b, bool) or not isinstance(b, numbers.Real):
                raise TypeError(f"boundaries must hold finite numbers, got {b!r}")
            if isinstance(b, float) and not math.isfinite(b):
                raise ValueError(f"boundaries must hold finite numbers, got {b!r}")
            values.append(b)
        if len(values) < 2:
            raise ValueError(f"boundaries must hold at least 2 numbers, got {values!r}")
        for a, b in zip(values, values[1:]):
            if not a < b:
                raise ValueError(f"boundaries must be strictly increasing, got {a!r} before {b!r}")
        return cls._described("intervals", boundaries=tuple(values))

    @classmethod
    def _described(cls, mode: str, *, names: tuple | None = None, boundaries: tuple | None = None) -> Partition:
        """A partition given by attribute names or interval boundaries (blocks found when bound)."""
        self = cls.__new__(cls)
        SecretGraph.__init__(self)
        self.mode = mode
        self.blocks = None
        self.names = names
        self.boundaries = boundaries
        return self

    @classmethod
    def from_spec(cls, by=None, intervals=None, blocks=None) -> Partition:
        """A partition from a spec: exactly one of ``by``, ``intervals``, ``blocks``."""
        given = [v for v in (by, intervals, blocks) if v is not None]
        if len(given) != 1:
            raise ValueError("a partition needs exactly one of by (attribute names), intervals (boundaries of a "
                             "1-D ordinal domain) or blocks (arrays of values)")
        if by is not None:
            return cls.by_attributes(by)
        if intervals is not None:
            return cls.intervals(intervals)
        return cls(blocks)

    # -- identity ----------------------------------------------------------
    def _key(self) -> tuple:
        return (self.mode, self.blocks, self.names, self.boundaries)

    # -- capabilities ----------------------------------------------------------
    def is_complete(self) -> bool:
        return self.mode == "attributes" and not self.names

    def agreement_cliques(self, domain: Domain) -> list[tuple[int, ...]] | None:
        bound = self._binding(domain)
        return [tuple(bound)] if self.mode == "attributes" else None

    def block_ids(self, domain: Domain, indices: Any = None) -> np.ndarray | None:
        bound = self._binding(domain)
        if indices is None:
            i = np.arange(domain.size, dtype=np.int64)
        else:
            i = domain.check_indices(indices, "indices")
        shape = i.shape
        return np.asarray(self._block_ids(domain, bound, i.reshape(-1)), dtype=np.int64).reshape(shape)

    def on_bins(self, domain: Domain) -> tuple[SecretGraph, str]:
        if self.mode != "intervals" or domain.ndim != 1 or not any(w > 1 for w in bin_widths(domain)):
            return self, ""
        attr = domain.attributes[0]
        for b in self.boundaries:
            if attr.low < b <= attr.high and (b - attr.low) % attr.bin_width:
                raise ValueError(
                    f"interval boundary {b} falls inside a bin of attribute {attr.name!r} (bins of width "
                    f"{attr.bin_width} from {attr.low}): that bin would hold raw values of two blocks; use "
                    f"boundaries at bin edges ({attr.low} + k * {attr.bin_width})"
                )
        return self, ""

    def __repr__(self) -> str:
        if self.mode == "attributes":
            return f"Partition.by_attributes({list(self.names)!r})"
        if self.mode == "intervals":
            return f"Partition.intervals({list(self.boundaries)!r})"
        count = sum(len(b) for b in self.blocks)
        if count <= 20:
            return f"Partition({[list(b) for b in self.blocks]!r})"
        return f"Partition(<{len(self.blocks)} blocks, {count} values>)"

    def describe(self, domain: Domain) -> str:
        bound = self._binding(domain)
        if not self._has_edge(domain, bound):
            return NO_EDGES
        unprotected = "is NOT protected (an adversary may learn it with certainty)"
        if self.mode == "attributes":
            public = [domain.names[p] for p in bound]
            if not public:
                return ("One block holds every value: every two values are secret (the complete graph), "
                        "i.e. bounded differential privacy.")
            free = [n for p, n in enumerate(domain.names) if p not in bound]
            return (
                f"Values that agree on {listing(public)} are secret (any change of {listing(free)}): "
                f"an adversary cannot tell them apart better than e^epsilon. The value of "
                f"{listing(public)} itself {unprotected}."
            )
        if self.mode == "intervals":
            name = domain.names[0]
            cuts = listing(list(self.boundaries))
            return (
                f"Values of {name} inside one interval [b_k, b_k+1) between the boundaries {cuts} are "
                f"secret: an adversary cannot tell them apart better than e^epsilon. Which interval an "
                f"individual's value lies in {unprotected}."
            )
        if len(self.blocks) == 1:
            return ("One block holds every value: every two values are secret (the complete graph), "
                    "i.e. bounded differential privacy.")
        return (
            f"Values inside one of the {len(self.blocks)} listed blocks are secret: an adversary cannot "
            f"tell them apart better than e^epsilon. Which block an individual is in {unprotected}."
        )

    # -- record level --------------------------------------------------------
    def _record_blocks(self, X: np.ndarray) -> np.ndarray:
        if self.mode == "blocks":
            return np.array([self._where.get(k, -1) for k in row_keys(X)], dtype=np.int64)
        if X.shape[1] != 1 or X.dtype.kind not in "iuf":
            raise ValueError(f"Partition.intervals works on 1-D numeric records, got records of {X.shape[1]} values")
        bounds = np.array(self.boundaries, dtype=np.float64)
        block = np.searchsorted(bounds, X[:, 0], side="right") - 1
        return np.where((block >= 0) & (block < len(bounds) - 1), block, -1)

    def _record_same(self, X, Y):
        if self.mode == "attributes":
            for n in self.names:
                if isinstance(n, str):
                    raise ValueError(
                        f"names: Partition.by_attributes({list(self.names)!r}) names attributes, so it needs a "
                        f"domain to find them; pass domain=... or give attribute positions"
                    )
                if n >= X.shape[1]:
                    raise ValueError(f"names: attribute position {n} is out of range for records of {X.shape[1]} values")
            pos = list(self.names)
            return ~differ(X[:, pos], Y[:, pos]).any(axis=1)
        bx, by = self._record_blocks(X), self._record_blocks(Y)
        return (bx == by) & (bx >= 0)

    def _record_edge(self, X, Y):
        return self._record_same(X, Y) & differ(X, Y).any(axis=1)

    def _record_distance(self, X, Y):
        return np.where(self._record_same(X, Y), 1.0, np.inf)

    # -- domain level ----------------------------------------------------------
    def _bind(self, domain):
        if self.mode == "attributes":
            positions = []
            for n in self.names:
                if isinstance(n, str):
                    if n not in domain.names:
                        raise ValueError(f"names must be attribute names of the domain {list(domain.names)}, got {n!r}")
                    positions.append(domain.position(n))
                else:
                    if n >= domain.ndim:
                        raise ValueError(f"names: attribute position {n} is out of range for a domain of {domain.ndim} attributes")
                    positions.append(int(n))
            if len(set(positions)) != len(positions):
                raise ValueError(f"names must name distinct attributes, got {list(self.names)!r}")
            return tuple(positions)
        if self.mode == "intervals":
            if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
                raise ValueError(f"domain: Partition.intervals needs a 1-D ordinal domain, got {domain!r}")
            attr = domain.attributes[0]
            if not (self.boundaries[0] <= attr.low and self.boundaries[-1] > attr.last_value):
                raise ValueError(
                    f"boundaries must cover the domain, i.e. b_0 <= {attr.low} and b_last > {attr.last_value}, "
                    f"got [{self.boundaries[0]!r}, ..., {self.boundaries[-1]!r}] (values left out would lose all protection)"
                )
            # first bin code of each interval: ceil((b - low) / w), clipped to [0, size]
            starts = [min(max(math.ceil((Fraction(b) - attr.low) / attr.bin_width), 0), attr.size) for b in self.boundaries]
            return np.array(starts, dtype=np.int64)
        records = [r for block in self.blocks for r in block]
        ids = np.repeat(np.arange(len(self.blocks), dtype=np.int64), [len(b) for b in self.blocks])
        flat = encode_values(domain, records, "blocks must hold values of the domain")
        block_of = np.full(domain.size, -1, dtype=np.int64)
        order = np.argsort(flat, kind="stable")
        sorted_flat = flat[order]
        dup = np.flatnonzero(sorted_flat[1:] == sorted_flat[:-1])
        if dup.size:
            k1, k2 = order[dup[0]], order[dup[0] + 1]
            raise ValueError(
                f"blocks must be disjoint, got {records[k1]!r} (blocks[{ids[k1]}]) and {records[k2]!r} "
                f"(blocks[{ids[k2]}]) which are the same domain value {domain.record_of(int(flat[k1]))!r}"
            )
        block_of[flat] = ids
        if flat.shape[0] != domain.size:
            missing = int(np.argmax(block_of < 0))
            raise ValueError(
                f"blocks must cover the domain, got no block for value {domain.record_of(missing)!r} "
                f"(values left out would lose all protection)"
            )
        sizes = np.bincount(ids, minlength=len(self.blocks))
        return _BlocksBinding(block_of, sizes)

    def _block_ids(self, domain, bound, i):
        if self.mode == "blocks":
            return bound.block_of[i]
        if self.mode == "intervals":
            return np.searchsorted(bound, i, side="right") - 1
        if not bound:
            return np.zeros(i.shape[0], dtype=np.int64)
        codes = domain._codes_unchecked(i)[:, list(bound)]
        return np.ravel_multi_index(tuple(codes.T), tuple(domain.shape[p] for p in bound))

    def _edge_mask(self, domain, bound, i, j):
        return (self._block_ids(domain, bound, i) == self._block_ids(domain, bound, j)) & (i != j)

    def _distance_index(self, domain, bound, i, j):
        same = self._block_ids(domain, bound, i) == self._block_ids(domain, bound, j)
        return np.where(same, 1.0, np.inf)

    def _block_sizes(self, domain, bound) -> Iterable[int]:
        if self.mode == "blocks":
            return bound.sizes.tolist()
        if self.mode == "intervals":
            return np.diff(bound).tolist()
        free = [n for p, n in enumerate(domain.shape) if p not in bound]
        return [math.prod(free)]

    def _has_edge(self, domain, bound):
        return max(self._block_sizes(domain, bound)) >= 2

    def _edge_chunks(self, domain, bound, max_pairs):
        ids = self._block_ids(domain, bound, np.arange(domain.size, dtype=np.int64))
        order = np.argsort(ids, kind="stable")
        starts = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1]])
        ends = np.r_[starts[1:], order.shape[0]]
        for s, e in zip(starts.tolist(), ends.tolist()):
            members = np.sort(order[s:e])
            if members.shape[0] >= 2:
                a, b = np.triu_indices(members.shape[0], k=1)
                yield members[a], members[b]

    def _max_weighted_l1(self, domain, bound, scale):
        if not self._has_edge(domain, bound):
            return 0, True, ""
        if self.mode == "attributes":
            return sum(r for p, r in enumerate(ranges(domain, scale)) if p not in bound), True, ""
        if self.mode == "intervals":
            widest = max(int(e - s) - 1 for s, e in zip(bound[:-1], bound[1:]))
            return scale[0] * max(widest, 0), True, ""
        return self._listed_max(domain, bound, scale)

    def _listed_max(self, domain, bound, scale):
        sel = [a for a in range(domain.ndim) if scale[a] > 0 and domain.shape[a] > 1]
        if not sel:
            return 0, True, ""
        size = domain.size
        order = np.argsort(bound.block_of, kind="stable")
        starts = np.flatnonzero(np.r_[True, bound.block_of[order][1:] != bound.block_of[order][:-1]])
        flat = order.astype(np.int64)
        coords = []
        for a in sel:
            code = (flat // domain.strides[a]) % domain.shape[a]
            coords.append(code * scale[a])

        def spread(values: np.ndarray) -> np.ndarray:
            return np.maximum.reduceat(values, starts) - np.minimum.reduceat(values, starts)

        if sum(ranges(domain, scale)) >= _limits.SAFE:
            coords = [c.astype(object) for c in coords]
        signs = 2 ** (len(sel) - 1)
        if signs * size <= _limits.SIGN_LIMIT:
            best = 0
            for bits in range(signs):
                proj = coords[0].copy()
                for k in range(1, len(sel)):
                    proj = proj - coords[k] if (bits >> (k - 1)) & 1 else proj + coords[k]
                best = max(best, int(spread(proj).max()))
            return best, True, ""
        total = sum(spread(c) for c in coords)
        return (
            int(total.max()),
            False,
            f"upper bound: per block, the sum of the attributes' ranges ({len(sel)} attributes are too many "
            f"for the exact search over 2^{len(sel) - 1} sign vectors)",
        )
