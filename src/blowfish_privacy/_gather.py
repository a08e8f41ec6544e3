"""The map step's integer fast path with its flat indices gathered in buffers before they are counted.

:func:`fold_gathered` is :func:`~blowfish_privacy._aggregate.fold` with
the batches that :class:`Gather` takes (integer columns of integer-range
attributes, every value inside the domain, no selection) indexed into
buffers of :data:`GATHER_ROWS` indices and counted a buffer at a time;
every other batch is left to ``fold``.  The counts are those of the map
step, exactly: the same indices, counted in larger runs.
"""

from __future__ import annotations

import numpy as np

from ._aggregate import MALFORMED, RESTART, fold, fold_counts, int_range

__all__ = ["GATHER_ROWS", "Gather", "fold_gathered"]

#: Flat indices a :class:`Gather` holds (over all its needs) before counting them: 8 MiB.
GATHER_ROWS = 1 << 20

_INT64 = (-(1 << 63), (1 << 63) - 1)


class Gather:
    """The map step's integer fast path, its flat indices gathered in buffers of its own before they are counted.

    For a plan whose every need is a histogram without a selection over
    attributes that are integer ranges (:func:`~blowfish_privacy._aggregate.fast_index`'s
    case), a batch whose needed columns are integer arrays with every value
    inside its attribute's range is taken here: its flat indices (the same
    arithmetic as ``fast_index``) are written into a buffer of
    ``rows`` indices per need, counted into the need's histogram when the
    buffer is full (:func:`~blowfish_privacy._aggregate.fold_counts`).  Any
    other batch is left to :func:`~blowfish_privacy._aggregate.fold`, so the
    counts are those of the map step, exactly.  No array is allocated per
    batch: a Dask worker (whose ``malloc`` returns freed memory to the
    system at once, Dask's ``MALLOC_TRIM_THRESHOLD_``) would otherwise fault
    in fresh pages for every batch's temporaries, a third more CPU time.
    """

    def __init__(self, plan, rows: int) -> None:
        self.needs = [(d.size, [(c, *int_range(a), s) for a, c, s in zip(d.attributes, cols, d.strides)])
                      for _, d, cols, _, _ in plan]
        self.rows = rows
        self.flat = [np.empty(rows, np.int64) for _ in plan]
        self.tmp = None
        self.counts = [np.zeros(size, np.int64) for size, _ in self.needs]
        self.fill = 0

    @classmethod
    def for_plan(cls, plan, rows: int | None = None):
        """A gatherer for ``plan``, or None when some need is not an unselected histogram of integer ranges."""
        for need, domain, _, filters, _ in plan:
            if need[0] != "histogram" or filters:
                return None
            for attr in domain.attributes:
                rng = int_range(attr)
                if rng is None or rng[0] < _INT64[0] or rng[1] > _INT64[1]:
                    return None
        if not plan:
            return None
        return cls(plan, max(1 << 10, (rows or GATHER_ROWS) // len(plan)))

    def reset(self) -> None:
        """Forget every row taken (the source is read again from its start)."""
        self.fill = 0
        for c in self.counts:
            c[:] = 0

    def flush(self) -> None:
        if self.fill:
            for acc, flat in zip(self.counts, self.flat):
                fold_counts(acc, flat[:self.fill])
            self.fill = 0

    def take(self, cols) -> bool:
        """Gather the batch ``cols`` and return True, or return False (left to the map step) and change nothing."""
        bad = cols.get(MALFORMED)
        if bad is not None and np.asarray(bad, dtype=bool).any():
            return False
        n = None
        checked = set()
        for _, attrs in self.needs:
            for c, low, high, _, _ in attrs:
                arr = cols.get(c)
                if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu" or arr.ndim != 1:
                    return False
                if n is None:
                    n = arr.size
                elif arr.size != n:
                    return False
                if (c, low, high) not in checked:
                    if arr.size and (int(arr.min()) < low or int(arr.max()) > high):
                        return False
                    checked.add((c, low, high))
        for start in range(0, n or 0, self.rows):
            m = min(self.rows, n - start)
            if self.fill + m > self.rows:
                self.flush()
            for (_, attrs), flat in zip(self.needs, self.flat):
                self._index([cols[c][start:start + m] for c, *_ in attrs], attrs, flat[self.fill:self.fill + m])
            self.fill += m
        return True

    def _index(self, arrays, attrs, out) -> None:
        """``out`` = the flat indices of ``arrays`` (every value inside its attribute's range), as ``fast_index``."""
        for k, (arr, (_, low, _, width, stride)) in enumerate(zip(arrays, attrs)):
            plain = low == 0 and width == 1
            if k and plain and stride == 1:
                np.add(out, arr, out=out, dtype=np.int64, casting="unsafe")  # exact: both inside the domain
                continue
            if k:
                if self.tmp is None:
                    self.tmp = np.empty(self.rows, np.int64)
                t = self.tmp[:out.size]
            else:
                t = out
            if plain:
                np.multiply(arr, stride, out=t, dtype=np.int64, casting="unsafe")
            else:
                np.subtract(arr, low, out=t, dtype=np.int64, casting="unsafe")
                if width != 1:
                    np.floor_divide(t, width, out=t)
                if stride != 1:
                    np.multiply(t, stride, out=t)
            if k:
                np.add(out, t, out=out)


def fold_gathered(batches, plan, columns) -> list:
    """:func:`~blowfish_privacy._aggregate.fold`, the batches of the integer fast path gathered (:class:`Gather`)."""
    gather = Gather.for_plan(plan)
    if gather is None:
        return fold(batches, plan, columns)

    left = [False]  # whether any batch was left to the map step

    def rest():
        for cols, done in batches:
            if cols is RESTART:
                gather.reset()
            elif gather.take(cols):
                continue
            left[0] = True
            yield cols, done

    out = fold(rest(), plan, columns)
    gather.flush()
    if not left[0]:  # every batch gathered: no second histogram of the domain's size
        return gather.counts
    for acc, counts in zip(out, gather.counts):
        acc += counts
    return out
