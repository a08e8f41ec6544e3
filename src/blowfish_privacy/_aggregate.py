"""The map step of exact aggregation: rows to flat domain indices, counted.

:func:`partition_aggregates` encodes one partition's rows into flat domain
indices and counts them (``numpy.bincount``), the cells read by
:mod:`._cell_codes`; :func:`combine` is the reduce step (a sum), and
:func:`reduce` its form over partial results that carry errors.  Every
engine of the release product (:mod:`blowfish_privacy.release.aggregation`)
and :func:`blowfish_privacy.frames.histogram` aggregate through it, so
their results are identical.  Noise is never added here.

Values outside the domain are clamped, dropped or refused as the spec's
``invalid`` says (:data:`INVALID_MODES`); no message made from the data
quotes a value, a row number or a count.

Every row counts once, whatever its cells hold (the row count is public to
many releases: bounded differential privacy keeps it fixed).  Under
``"clamp"`` an ordinal cell that is not an integer (empty, text, ``7.5``,
``nan``, ``inf``, undecodable bytes) counts as the attribute's ``low``
value; only ``"drop"`` and unknown labels of a categorical attribute take a
row out of the aggregates that read that attribute.

A *malformed row* (a CSV row with more or fewer fields than the header) is
a row whose every cell is invalid: it counts once, each of its cells
handled by its attribute's rule (ordinal ``"clamp"``: ``low``; ``"drop"``
and categorical: the row leaves the aggregates that read the attribute),
and it is refused when an attribute the run reads has ``"error"``
(:func:`malformed_mode`).  The readers give it with placeholder cells and
mark it in the batch's boolean mask under the key :data:`MALFORMED`;
:func:`partition_aggregates` then treats its cells as invalid and, under
``"error"``, reports :data:`MALFORMED_ENTRY` with the invalid columns,
whatever the rows' positions.
"""

from __future__ import annotations

import numpy as np

from ._cell_codes import column_values, parse_column
from .errors import DataError, InvalidColumn
from .policy.domain import Domain, Ordinal

__all__ = ["AGGREGATION_ERRORS", "INVALID_MODES", "FoldMap", "MALFORMED", "MALFORMED_ENTRY", "Need", "RESTART", "combine",
           "fast_index", "fold", "fold_counts", "fold_table", "int_columns", "int_range", "malformed_mode",
           "map_partition", "partition_aggregates", "plan_columns", "plan_for", "reduce", "spec_plan", "unwrap"]

#: Rows per chunk when in-memory columns are aggregated (:func:`fold_table`).
CHUNK_ROWS = 1 << 22

#: Errors whose messages could come from parsing data: never passed on.
AGGREGATION_ERRORS = (ValueError, TypeError, OverflowError, ArithmeticError, KeyError, IndexError)


# A need is ("histogram", attribute names) or ("column", (attribute name,)).
Need = tuple

#: What to do with a value outside its attribute's domain (``dataset.invalid``).
INVALID_MODES = ("error", "clamp", "drop")


def fold_counts(acc: np.ndarray, flat: np.ndarray) -> None:
    """Add the counts of the flat indices ``flat`` into the histogram ``acc``, in place."""
    if flat.size * 4 >= acc.size:
        acc += np.bincount(flat, minlength=acc.size).astype(np.int64, copy=False)
    elif flat.size:
        np.add.at(acc, flat, 1)  # a small batch into a large domain: no temporary of the domain's size


def partition_aggregates(columns: dict, plan: list, *, into: list | None = None) -> list:
    """The map step: exact aggregates of one partition.

    ``columns`` maps column names to arrays (or a pandas DataFrame);
    ``plan`` lists ``(need, domain, column names, filters, modes)`` (see
    :func:`plan_for`), each filter ``(attribute, column name, code, mode)``
    keeping the rows whose attribute has that code.  Every value of every
    column a need uses is checked against its attribute under its mode
    (``"error"``: :class:`InvalidColumn`; ``"clamp"``: ordinal values into
    ``[low, high]``, an ordinal cell that is not an integer counted as
    ``low``, an unknown label dropped; ``"drop"``: the row dropped), so a
    row invalid only in a column a need does not use never affects it.
    ``columns`` may hold, under the key :data:`MALFORMED`, a boolean mask
    of malformed rows (their cells are placeholders): each of their cells
    is invalid, and under ``"error"`` (:func:`malformed_mode`) they add
    :data:`MALFORMED_ENTRY` to the invalid columns reported.  A histogram
    need gives an int64 array of ``domain.size`` counts, a column need the
    column's (clamped) values as float64.

    With ``into`` (the streaming reader's accumulators, one per need: an
    int64 histogram, or a list of float64 arrays for a column need) the
    partition is folded into them in place and ``into`` is returned; a
    histogram then costs no temporary of the domain's size for a small
    partition.  After an :class:`InvalidColumn` the accumulators are
    partly updated and must be discarded.
    """
    out = []

    def emit_hist(flat, size):
        if into is None:
            out.append(np.bincount(flat, minlength=size).astype(np.int64, copy=False))
        else:
            fold_counts(into[len(out)], flat)
            out.append(into[len(out)])

    def emit_column(values):
        if into is not None:
            into[len(out)].append(values)
            values = into[len(out)]
        out.append(values)

    parsed: dict = {}
    failed: list = []
    bad = columns.get(MALFORMED) if isinstance(columns, dict) else None
    if bad is not None:
        bad = np.asarray(bad, dtype=bool).reshape(-1)
        if not bad.any():
            bad = None
        elif malformed_mode(plan) == "error":
            failed.append(MALFORMED_ENTRY)

    def parse(attr, col, mode):
        key = (attr, col, mode)
        if key not in parsed:
            try:
                parsed[key] = parse_column(attr, col, columns[col], mode, bad)
            except InvalidColumn as exc:  # go on: report every invalid column, not the first
                failed.extend(exc.entries)
                parsed[key] = None
        return parsed[key]

    for need, domain, cols, filters, modes in plan:
        if need[0] == "histogram" and not filters and bad is None:
            idx = fast_index(domain, {a.name: column_values(columns[c]) for a, c in zip(domain.attributes, cols)})
            if idx is not None:  # integer columns, every value inside the domain
                emit_hist(idx, domain.size)
                continue
        got = [parse(attr, col, mode) for attr, col, _, mode in filters]
        got += [parse(a, c, m) for a, c, m in zip(domain.attributes, cols, modes)]
        if any(g is None for g in got):
            out.append(None if into is None else into[len(out)])
            continue
        keep = None
        for (_, _, code, _), (_, codes, _) in zip(filters, got):
            keep = codes == code if keep is None else keep & (codes == code)
        for _, _, drop in got:
            if drop is not None:
                keep = ~drop if keep is None else keep & ~drop
        got = got[len(filters):]
        if need[0] == "histogram":
            flat = None
            for (_, codes, _), stride in zip(got, domain.strides):
                term = codes if stride == 1 else codes.astype(np.int64) * stride
                flat = term if flat is None else flat + term
            if keep is not None:
                flat = flat[keep]
            emit_hist(flat, domain.size)
        else:
            values = got[0][0]
            if values is None:  # a categorical column: its codes
                values = got[0][1]
            emit_column(np.asarray(values if keep is None else values[keep], dtype=np.float64))
    if failed:
        raise InvalidColumn(failed)
    return out


def map_partition(columns: dict, plan: list):
    """:func:`partition_aggregates`, with invalid columns as a value: ``("ok", list)`` or ``("invalid", entries)``."""
    try:
        return "ok", partition_aggregates(columns, plan)
    except InvalidColumn as exc:
        return "invalid", exc.entries


def reduce(a, b):
    """:func:`combine` of two :func:`map_partition` results; the invalid columns of every partition are kept.

    A result ``("error", message)`` (a partition that could not be read)
    wins, the first one in the partitions' order (``a`` before ``b``).
    """
    for r in (a, b):
        if r[0] == "error":
            return r
    if a[0] == b[0] == "ok":
        return "ok", combine(a[1], b[1])
    return "invalid", tuple(sorted(set((a[1] if a[0] == "invalid" else ()) + (b[1] if b[0] == "invalid" else ()))))


def unwrap(result) -> list:
    """The aggregates of a :func:`reduce` result; an invalid or an error result raised (value-free)."""
    if result[0] == "invalid":
        raise InvalidColumn(result[1])
    if result[0] == "error":
        raise DataError(result[1])
    return result[1]


def int_range(attr):
    """``(low, high, bin_width)`` when the attribute's codes are integer arithmetic on its values."""
    if isinstance(attr, Ordinal):
        return attr.low, attr.high, attr.bin_width
    labels = attr.labels
    if all(type(v) is int for v in labels) and labels == tuple(range(labels[0], labels[0] + len(labels))):
        return labels[0], labels[-1], 1
    return None


def fast_index(domain: Domain, data: dict):
    """Flat indices of integer columns by range checks and arithmetic, or None.

    None (the caller then uses :meth:`Domain.encode`) when a column is not
    an integer array, an attribute is not an integer range, or a value lies
    outside the domain.
    """
    flat = None
    owned = False  # flat is an array of ours (not a column of the data): added into in place
    for attr, stride in zip(domain.attributes, domain.strides):
        arr = data[attr.name]
        rng = int_range(attr)
        if rng is None or not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu" or arr.size == 0:
            return None
        low, high, width = rng
        if int(arr.min()) < low or int(arr.max()) > high:
            return None
        if arr.dtype == np.uint64:
            arr = arr.astype(np.int64)  # in range, so exact
        fresh = False  # codes is an array of ours
        if low == 0 and width == 1:
            codes = arr
        else:
            codes, fresh = np.subtract(arr, low, dtype=np.int64), True
            if width != 1:
                codes //= width
        if stride != 1:
            if fresh:
                codes *= stride
            else:
                codes, fresh = np.multiply(codes, stride, dtype=np.int64), True
        # no copies beyond one int64 array per column (at most): these run on every batch of every row
        if flat is None:
            flat, owned = codes, fresh
        elif owned:
            np.add(flat, codes, out=flat, casting="unsafe")  # both integers inside the domain: exact
        elif fresh:
            np.add(codes, flat, out=codes, casting="unsafe")
            flat, owned = codes, True
        else:
            flat, owned = np.add(flat, codes, dtype=np.int64), True
    return flat


def combine(a: list, b: list) -> list:
    """The reduce step: add histograms, concatenate columns."""
    return [x + y if x.dtype == np.int64 else np.concatenate([x, y]) for x, y in zip(a, b)]


def plan_for(domain: Domain, columns: dict, needs, invalid="error") -> list:
    """The map plan of ``needs`` over ``domain``: ``(need, sub-domain, column names, filters, modes)`` each.

    A need is ``(aggregate, attribute names)`` or ``(aggregate, attribute
    names, where)`` with ``where`` a tuple of ``(attribute name, value)``.
    ``invalid`` is one of :data:`INVALID_MODES` for every attribute, or a
    mapping from attribute names to modes (missing names: ``"error"``).
    """
    def mode(name):
        m = invalid if isinstance(invalid, str) else invalid.get(name, "error")
        if m not in INVALID_MODES:
            raise ValueError(f"invalid must be one of {list(INVALID_MODES)}, got {m!r}")
        return m

    plan = []
    for need in needs:
        where = need[2] if len(need) > 2 else ()
        filters = []
        for name, value in where:
            attr = domain.attribute(name)
            filters.append((attr, columns[name], int(attr.codes_of([value])[0]), mode(name)))
        plan.append((need, Domain([domain.attribute(a) for a in need[1]]), tuple(columns[a] for a in need[1]),
                     tuple(filters), tuple(mode(a) for a in need[1])))
    return plan


def spec_plan(spec, needs) -> list:
    """The map plan of ``needs`` over a release spec's domain, columns and ``dataset.invalid``."""
    return plan_for(spec.domain, spec.columns, needs, getattr(spec, "invalid", None) or "error")


def plan_columns(plan) -> list:
    """The column names ``plan`` reads (its needs' and their selections'), sorted."""
    return sorted({c for _, _, cols, flt, _ in plan for c in cols + tuple(f[1] for f in flt)})



def malformed_mode(plan) -> str:
    """What to do with a malformed row under ``plan``: ``"error"`` (refuse the run) or ``"count"``.

    ``"error"`` when any attribute the plan reads (its needs and their
    selections) has ``invalid = "error"``; else the row counts once, each
    of its cells invalid and handled by its attribute's rule (ordinal
    ``"clamp"``: ``low``; ``"drop"`` and categorical: the row leaves the
    aggregates that read the attribute).
    """
    modes = {m for *_, filters, needs_modes in plan for m in needs_modes + tuple(f[3] for f in filters)}
    return "error" if "error" in modes else "count"


def int_columns(plan) -> set:
    """Columns that only integer attributes read (ordinals, integer labels): pyarrow may read them as int64."""
    ints, other = set(), set()
    for _, domain, cols, filters, _ in plan:
        for attr, col in list(zip(domain.attributes, cols)) + [(f[0], f[1]) for f in filters]:
            integer = isinstance(attr, Ordinal) or all(type(v) is int for v in attr.labels)
            (ints if integer else other).add(col)
    return ints - other

#: What a batch reader yields, as ``(RESTART, 0)``, before reading its source again from the start (after
#: pyarrow's reader met a cell it does not take): whatever was folded so far is discarded.
RESTART = None


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The key of a batch's boolean mask of malformed rows (``columns[MALFORMED]``): rows whose cells the reader gives
#: as placeholders, each of them invalid (see :func:`partition_aggregates`).  Not a string: never a column's name.
MALFORMED = _Marker("MALFORMED")

#: The entry of :class:`InvalidColumn` for malformed rows: no attribute, no column (the engines word it).
MALFORMED_ENTRY = ("", "", "malformed rows (more or fewer fields than the header line)")


def fold(batches, plan, columns, bar=None) -> list:
    """The aggregates of ``plan`` over every batch of ``batches`` (``(columns, bytes read)`` pairs).

    Every batch is read, whatever an earlier one held, so the invalid
    columns reported do not depend on where the rows are.  A batch's
    malformed rows are marked in it (:data:`MALFORMED`).
    """
    acc = None
    invalid: set = set()
    last = 0
    for cols, done in batches:
        if cols is RESTART:  # the source is read again from its start
            acc = None
            invalid.clear()
            continue
        if acc is None:
            acc = [np.zeros(d.size, np.int64) if need[0] == "histogram" else [] for need, d, *_ in plan]
        try:
            partition_aggregates(cols, plan, into=acc)
        except InvalidColumn as exc:
            invalid.update(exc.entries)
        cols = None  # not kept alive while the next batch is read
        if bar is not None:
            mib = int(done) >> 20
            if mib > last:
                bar.advance(mib - last)
                last = mib
    if invalid:
        raise InvalidColumn(invalid)
    if acc is None:  # no rows: zero histograms, empty columns (through the map step, as any batch)
        return partition_aggregates({c: np.array([], dtype=str) for c in columns}, plan)
    return [a if isinstance(a, np.ndarray) else
            (np.concatenate(a) if a else np.zeros(0, np.float64)) for a in acc]


def fold_table(table: dict, plan: list, batch_rows: int | None = None) -> list:
    """Exact aggregates of in-memory columns (``{column name: array}``), folded in chunks of ``batch_rows``.

    ``plan`` is as in :func:`partition_aggregates`.
    """
    n = len(next(iter(table.values()))) if table else 0
    step = batch_rows or CHUNK_ROWS
    batches = (({c: v[s:s + step] for c, v in table.items()}, 0) for s in range(0, n, step))
    return fold(batches, plan, list(table))


class FoldMap:
    """:func:`fold` of one partition's batches as a value (never raised): a map step run where the data live.

    ``("ok", aggregates)``, ``("invalid", entries)`` or ``("error", the
    exception's type name)``; :func:`reduce` adds two results and
    :func:`unwrap` raises.  Picklable (the plan and the column names).
    ``result_bytes`` is the size of one result's histograms.
    """

    def __init__(self, plan: list, columns: list) -> None:
        self.plan = plan
        self.columns = list(columns)
        self.result_bytes = sum(d.size * 8 for need, d, *_ in plan if need[0] == "histogram")

    def __call__(self, batches):
        try:
            return "ok", fold(batches, self.plan, self.columns)
        except InvalidColumn as exc:
            return "invalid", exc.entries
        except AGGREGATION_ERRORS + (MemoryError,) as exc:  # only the type: the text may quote the data
            return "error", type(exc).__name__
