"""Exact aggregation as one map-reduce: the :class:`Engine` protocol, the map and reduce functions, the driver.

Every engine computes the same exact aggregates the same way: a source's
partitions (:mod:`.sources`) are each folded by :class:`AggregateMap`
(per batch: encode the rows into flat domain indices and count them,
:func:`~blowfish_privacy._aggregate.partition_aggregates`; on engines
that ask for it, the integer fast path gathered by
:func:`~blowfish_privacy._gather.fold_gathered`),
and the partial results are added by
:func:`~blowfish_privacy._aggregate.reduce`, so every engine's results are
identical.  Noise is never added here: the driver adds it once, after the
budget is spent.

The map function never raises on the data: a partial result is
``("ok", aggregates)``, ``("invalid", entries)`` (columns with values
outside the domain under ``invalid = "error"``) or ``("error", message)``
(a partition that could not be read, worded without any value), so a
worker never logs a traceback that quotes the data, and the driver words
one line (:func:`aggregate`).  Values outside the domain are clamped,
dropped or refused as the spec's ``invalid`` says; a CSV row with more or
fewer fields than the header (a malformed row) is a row whose every cell
is invalid (:func:`~blowfish_privacy._aggregate.malformed_mode`).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, TypeVar, runtime_checkable

from .._aggregate import (
    AGGREGATION_ERRORS,
    MALFORMED_ENTRY,
    fold,
    int_columns,
    plan_columns,
    reduce,
    spec_plan,
    unwrap,
)
from .._gather import fold_gathered
from ..errors import DataError, InvalidColumn
from ._read_errors import source_text
from .sources import Source, SpecSource

__all__ = ["AggregateMap", "Engine", "aggregate", "data_error", "invalid_error"]

_T = TypeVar("_T")  # what one map step gives and the reduction keeps


@runtime_checkable
class Engine(Protocol):
    """Where the exact aggregates are computed.

    ``name`` is the engine's name in the registry
    (:mod:`.engines`), in the command line's ``--engine`` and in every
    release's JSON.  :meth:`map_reduce` is the whole interface: the
    aggregates of a release spec are
    ``map_reduce(source, AggregateMap(...), reduce)`` (:func:`aggregate`).
    An engine may set ``gather_batches = True``: its map tasks then gather
    the integer fast path's indices in reused buffers before counting them
    (:func:`~blowfish_privacy._gather.fold_gathered`), which pays where a
    worker's allocator returns freed memory to the system at once (Dask's
    workers); in one process, counting each batch as it comes is faster.
    """

    name: str

    def map_reduce(self, source: Source, map_fn: Callable[[Any], _T], reduce_fn: Callable[[_T, _T], _T]) -> _T:
        """``reduce_fn`` over ``map_fn(source.read(p))`` of every partition ``p`` of ``source``, in their order.

        ``map_fn`` and ``reduce_fn`` are picklable and never raise on the
        data (their results carry the errors); ``reduce_fn(a, b)`` is
        associative, takes ``a`` (earlier partitions) before ``b`` and
        changes neither.  The partitions come from
        ``source.partitions(parallel)``, asked for on the driver before
        any row is read (and ``source.balance`` once the workers are
        known); any other exception met while reading is worded by
        ``source.failure``.  The result goes to the driver; only partial
        aggregates (never rows) travel between workers.
        """


class AggregateMap:
    """The map function: the aggregates of ``plan`` over one partition's batches, as a value (never raised).

    ``("ok", aggregates)``, ``("invalid", entries)`` or ``("error",
    message)``; picklable (the spec, the plan and the column names).
    ``result_bytes`` is the size of the histograms of one result (an
    engine may size its reduce steps by it).  ``gather``: fold with
    :func:`~blowfish_privacy._gather.fold_gathered` (the same counts).
    """

    def __init__(self, spec, plan: list, columns: list, *, gather: bool = False) -> None:
        self.spec = spec
        self.plan = plan
        self.columns = list(columns)
        self.gather = gather
        self.result_bytes = sum(d.size * 8 for need, d, *_ in plan if need[0] == "histogram")

    def __call__(self, batches):
        try:
            return "ok", (fold_gathered if self.gather else fold)(batches, self.plan, self.columns)
        except InvalidColumn as exc:
            return "invalid", exc.entries
        except DataError as exc:  # raised by the readers: already value-free
            return "error", str(exc)
        except AGGREGATION_ERRORS + (OSError, MemoryError) as exc:
            return "error", str(data_error(self.spec, self.plan, exc))


def aggregate(engine: Engine, spec, needs: list, source: Callable = SpecSource) -> dict:
    """The exact aggregates of ``needs`` over ``spec``'s data, by ``engine.map_reduce``: ``{need: aggregate}``.

    ``source(spec, columns, int_columns)`` makes the source (default: the
    spec's file or bundled dataset, :class:`~.sources.SpecSource`).
    Values outside the domain under ``invalid = "error"`` and data that
    cannot be read are one :class:`DataError` that quotes no value.
    """
    plan = spec_plan(spec, needs)
    columns = plan_columns(plan)
    fmap = AggregateMap(spec, plan, columns, gather=bool(getattr(engine, "gather_batches", False)))
    result = engine.map_reduce(source(spec, columns, int_columns(plan)), fmap, reduce)
    try:
        return dict(zip(needs, unwrap(result)))
    except InvalidColumn as exc:
        raise invalid_error(spec, exc) from None


def invalid_error(spec, exc: InvalidColumn) -> DataError:
    """The one-line refusal of columns with values outside the domain (names, columns and rules; no value)."""
    entries = [e for e in exc.entries if e != MALFORMED_ENTRY]
    malformed = len(entries) != len(exc.entries)
    parts = [f"domain.{a}: column {c!r} {r}" for a, c, r in entries]
    if malformed:
        parts.insert(0, f"dataset: the data hold {MALFORMED_ENTRY[2]}")
    labels_only = bool(entries) and all(r.startswith("has values that are not among") for _, _, r in entries)
    hint = ('set dataset.invalid = "drop" (or "clamp", which drops unknown labels too)' if labels_only
            else 'set dataset.invalid = "clamp" or "drop"')
    if malformed:
        hint += (' (malformed rows then count once each, every cell of them handled by its attribute\'s rule; they '
                 'are refused while any attribute the releases read has invalid = "error")')
    return DataError(f"{spec.path}: {'; '.join(parts)} (the data in {source_text(spec)}); {hint}, "
                     "or correct the data")


def data_error(spec, plan, exc) -> DataError:
    """A value-free message for an error raised while aggregating the data."""
    if isinstance(exc, InvalidColumn):
        return invalid_error(spec, exc)
    names = sorted({a for _, d, _, flt, _ in plan for a in d.names + tuple(f[0].name for f in flt)})
    return DataError(f"{spec.path}: domain: the data in {source_text(spec)} could not be aggregated over "
                     f"{names} ({type(exc).__name__}; details withheld: they may quote the data)")
