"""Exact aggregation engines: the local one (streaming, bounded batches) and Dask.

Both compute the same exact aggregates with the same map step,
:func:`~blowfish_privacy._aggregate.partition_aggregates` (per partition:
encode the rows into flat domain indices and ``numpy.bincount`` them), and
a sum as the reduce step, so their results are identical (a Dask task
gathers the integer fast path's indices in buffers of its own first,
:class:`_Gather`: the same indices, counted in larger runs).  Noise is never
added here: the driver adds it once, after the budget is spent.  The
sources are read by :mod:`._reading`.

Values outside the domain are clamped, dropped or refused as the spec's
``invalid`` says; no message made from the data quotes a value, a row
number or a count.  Every row counts once: under ``"clamp"`` an ordinal
cell that is not an integer counts as the attribute's ``low``.  A CSV row
with more or fewer fields than the header (a malformed row) is a row whose
every cell is invalid, handled by each attribute's rule, or refused when
an attribute the run reads has ``invalid = "error"``
(:func:`~blowfish_privacy._aggregate.malformed_mode`); both engines read
CSV text and Parquet with the same readers, so they see the same rows.
Dask, distributed and pandas are optional (the ``dask`` extra): they are
imported inside the Dask engine's methods.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from pathlib import Path

import numpy as np

from .._aggregate import (  # noqa: F401  (re-exported: importable from here as before)
    AGGREGATION_ERRORS as _AGGREGATION_ERRORS, INVALID_MODES, MALFORMED, MALFORMED_ENTRY, RESTART, Need,
    fast_index, fold_counts, int_columns, int_range, _map, _plan, plan_columns, reduce, unwrap, combine, fold,
    fold_table, malformed_mode, partition_aggregates, plan_for,
)
from .._progress import progress_bar
from ..errors import DataError, InvalidColumn  # noqa: F401  (re-exported)
from ._reading import (  # noqa: F401  (re-exported)
    BATCH_ROWS, CSV_BLOCK_BYTES, HEADER_MAX_BYTES, PARQUET_BUFFER_BYTES, bundled_text, check_columns, CsvBlock,
    parquet_file, parquet_parts, parquet_slices, ParquetSlice, prefetch, _problem, read_block, source_text,
    Table, to_numpy, unreadable, max_line_bytes, read_table,
)

__all__ = ["DataError", "InvalidColumn", "INVALID_MODES", "Need", "LocalEngine", "DaskEngine",
           "partition_aggregates", "read_table"]

#: Data smaller than this is read without a progress bar.
PROGRESS_MIN_BYTES = 1 << 26
#: Seconds to wait for a Dask scheduler (``--scheduler``) at each step (TCP connection, Dask's handshake and an
#: identity request) before giving up.
SCHEDULER_TIMEOUT = 5.0
#: Bytes of CSV text per Dask partition (the Dask engine's per-task bound).
DASK_CSV_BLOCKSIZE = "16MB"
#: Most bytes of a Parquet file (on disk) one Dask task reads: a larger file is split at row-group boundaries.  A
#: task's memory does not grow with it (it reads a batch at a time); see also :data:`DASK_TASKS_PER_THREAD`.
DASK_PARQUET_BYTES = 256 << 20
#: Parquet files are split at row-group boundaries until there are this many Dask tasks per worker thread, where
#: the row groups allow (the load is then balanced; fewer, larger tasks cost less than many small ones).
DASK_TASKS_PER_THREAD = 2
#: Flat indices a Dask task gathers (:class:`_Gather`, over all its needs) before counting them: 8 MiB.
GATHER_ROWS = 1 << 20
#: Bytes of partial histograms one reduce task adds at most (its fan-in is 2 to :data:`REDUCE_FAN_IN`).
REDUCE_BYTES = 256 << 20
#: Most partial results one reduce task adds: the partials are reduced in a tree on the workers, and only the
#: root comes to the driver.
REDUCE_FAN_IN = 8


def _invalid_error(spec, exc: InvalidColumn) -> DataError:
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


def _data_error(spec, plan, exc) -> DataError:
    """A value-free message for an error raised while aggregating the data."""
    if isinstance(exc, InvalidColumn):
        return _invalid_error(spec, exc)
    names = sorted({a for _, d, _, flt, _ in plan for a in d.names + tuple(f[0].name for f in flt)})
    return DataError(f"{spec.path}: domain: the data in {source_text(spec)} could not be aggregated over "
                     f"{names} ({type(exc).__name__}; details withheld: they may quote the data)")


class LocalEngine:
    """Aggregates on this machine, streaming: the table is read in bounded batches.

    Peak memory is the aggregates plus a bounded read window, whatever the
    number of rows: one batch of ``BATCH_ROWS`` rows of Parquet (pages read
    ``PARQUET_BUFFER_BYTES`` at a time, no pre-buffering of the file), or
    pyarrow's CSV read-ahead of at most 32 blocks of ``CSV_BLOCK_BYTES`` of
    text (``benchmarks/bench_scaling.py``: at most about 100 MiB above the
    interpreter from 10^6 to 10^8 rows).  A ``column`` need
    (pufferfish_sum) keeps its column, 8 bytes a row.  ``batch_rows`` and
    ``block_bytes`` override those bounds.
    """

    name = "local"

    def __init__(self, *, progress: bool | None = None, batch_rows: int | None = None,
                 block_bytes: int | None = None) -> None:
        self.progress = progress
        self.batch_rows = batch_rows
        self.block_bytes = block_bytes

    def aggregate(self, spec, needs: list) -> dict:
        plan = _plan(spec, needs)
        columns = plan_columns(plan)
        try:
            table = Table(spec, columns, int_columns=int_columns(plan), batch_rows=self.batch_rows,
                           block_bytes=self.block_bytes)
        except (DataError, PermissionError):
            raise
        except OSError as exc:
            raise _problem(spec, source_text(spec), f"cannot be opened ({exc.strerror or type(exc).__name__})") \
                from None
        # shown on a terminal when the data are larger than a few batches, unless progress=False
        show = None if self.progress is not False and table.total > PROGRESS_MIN_BYTES else False
        try:
            with progress_bar(max(1, table.total >> 20), "reading (MiB)", enabled=show) as bar:
                return dict(zip(needs, fold(prefetch(table), plan, columns, bar)))
        except DataError:
            raise
        except _AGGREGATION_ERRORS as exc:
            raise _data_error(spec, plan, exc) from None
    def aggregate_table(self, table: dict, plan: list) -> list:
        """Exact aggregates of in-memory columns (``{column name: array}``), in chunks of ``batch_rows``.

        ``plan`` is as in :func:`partition_aggregates`.
        """
        return fold_table(table, plan, self.batch_rows)


def _task(spec, plan, work):
    """A Dask task's result: ``("ok", aggregates)``, ``("invalid", entries)`` or ``("error", message)``.

    A failure to read is returned as a value, not raised: a worker logs a
    task's exception with its traceback, and the command prints one line.
    """
    try:
        return "ok", work()
    except InvalidColumn as exc:
        return "invalid", exc.entries
    except DataError as exc:  # raised by the readers: already value-free
        return "error", str(exc)
    except _AGGREGATION_ERRORS + (OSError, MemoryError) as exc:
        return "error", str(_data_error(spec, plan, exc))


_INT64 = (-(1 << 63), (1 << 63) - 1)


class _Gather:
    """The map step's integer fast path, its flat indices gathered in buffers of its own before they are counted.

    For a plan whose every need is a histogram without a selection over
    attributes that are integer ranges (:func:`~blowfish_privacy._aggregate._fast_index`'s
    case), a batch whose needed columns are integer arrays with every value
    inside its attribute's range is taken here: its flat indices (the same
    arithmetic as ``fast_index``) are written into a buffer of
    ``rows`` indices per need, counted into the need's histogram when the
    buffer is full (:func:`~blowfish_privacy._aggregate._fold_counts`).  Any
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


def _fold_gathered(batches, plan, columns) -> list:
    """:func:`~blowfish_privacy._aggregate.fold`, the batches of the integer fast path gathered (:class:`_Gather`)."""
    gather = _Gather.for_plan(plan)
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


class _Part:
    """A map task's share of the data: called on the worker with the :class:`_Job`, it gives the batches.

    Plain objects (not tuples): Dask looks into the tuples and lists of a
    task's arguments for other tasks' keys.
    """

    __slots__ = ()

    def __init__(self, *values) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            setattr(self, name, value)

    def __reduce__(self):
        return type(self), tuple(getattr(self, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(getattr(self, n)) for n in self.__slots__)})"


class _Job(_Part):
    """What every map task reads besides its part (spec, plan, columns): sent once to each worker, not per task."""

    __slots__ = ("spec", "plan", "columns", "int_columns")


class _StreamPart(_Part):
    """A whole source streamed by one task in bounded batches (a gzip CSV, a bundled dataset)."""

    __slots__ = ()

    def __call__(self, job: _Job):
        return Table(job.spec, job.columns, int_columns=job.int_columns)


class _CsvPart(_Part):
    """The lines of a plain CSV file that begin in ``[start, stop)``, read as the local engine reads them.

    The task reads its own share of the file (:func:`._reading._read_block`):
    at most ``stop - start`` bytes plus one line, a line longer than the
    spec's ``dataset.max_line_bytes`` refused.
    """

    __slots__ = ("header", "path", "start", "stop", "size")

    def __call__(self, job: _Job):
        block = CsvBlock(job.spec, job.columns, self.header, b"", int_columns=job.int_columns)
        block.data = read_block(block, self.path, self.start, self.stop, self.header.end, self.size)
        block.total = len(block.data)
        return block if block.data else iter(())


class _ParquetPart(_Part):
    """Some row groups (None: all) of one file of a Parquet source, read as the local engine reads it.

    ``part`` is one ``(file, hive keys, size)`` of :func:`._reading._parquet_parts`.
    """

    __slots__ = ("part", "row_groups")

    def __init__(self, part, row_groups=None) -> None:
        super().__init__(part, row_groups)

    def __call__(self, job: _Job):
        groups = None if self.row_groups is None else list(self.row_groups)
        return ParquetSlice(job.spec, job.columns, self.part, groups)


class _GivenPart(_Part):
    """A part of :meth:`DaskEngine.aggregate_parts`: a callable given the column names, giving batches."""

    __slots__ = ("make",)

    def __call__(self, job: _Job):
        return self.make(list(job.columns))


def _map_part(part, job: _Job):
    """A Dask map task: the aggregates of one part, :func:`_task`'s result."""
    return _task(job.spec, job.plan, lambda: _fold_gathered(part(job), job.plan, job.columns))


def _reduce_many(results):
    """:func:`~blowfish_privacy._aggregate._reduce` of ``results`` in order, without changing them.

    The first ``("error", message)`` in order wins; else the invalid
    columns of every result; else the histograms added (into one array of
    this task's own) and the columns concatenated.
    """
    for r in results:
        if r[0] == "error":
            return r
    invalid = {e for r in results if r[0] == "invalid" for e in r[1]}
    if invalid:
        return "invalid", tuple(sorted(invalid))
    out = []
    for k, first in enumerate(results[0][1]):
        items = [r[1][k] for r in results]
        if first.dtype == np.int64:
            acc = items[0] + items[1] if len(items) > 1 else items[0].copy()
            for x in items[2:]:
                acc += x
        else:
            acc = np.concatenate(items)
        out.append(acc)
    return "ok", out


def _split_rows(rows: list, pieces: int) -> list:
    """Row-group indices cut into at most ``pieces`` contiguous runs of about equal rows (``rows``: each group's)."""
    total = sum(rows)
    runs, cur, seen = [], [], 0
    for i, r in enumerate(rows):
        cur.append(i)
        seen += r
        if len(runs) < pieces - 1 and seen * pieces >= (len(runs) + 1) * total:
            runs.append(tuple(cur))
            cur = []
    if cur:
        runs.append(tuple(cur))
    return runs


def _pieces(parts: list, slots: int) -> list:
    """``parts`` with the Parquet files larger than a task's share split at row-group boundaries.

    A task's share is at most :data:`DASK_PARQUET_BYTES` of a file, and
    small enough that there are :data:`DASK_TASKS_PER_THREAD` tasks per
    worker thread (``slots``) where the row groups allow; a file at most
    that large is one task.  Only the footers of the files to split are
    read again.
    """
    files = [p for p in parts if isinstance(p, _ParquetPart) and p.row_groups is None]
    if not files:
        return parts
    import pyarrow.parquet as pq

    total = sum(p.part[2] for p in files)
    target = max(1, min(DASK_PARQUET_BYTES, -(-total // max(1, DASK_TASKS_PER_THREAD * slots))))
    out = []
    for p in parts:
        if not isinstance(p, _ParquetPart) or p.row_groups is not None or p.part[2] <= target:
            out.append(p)
            continue
        meta = parquet_file(pq, p.part[0]).metadata
        groups = meta.num_row_groups
        pieces = min(groups, -(-p.part[2] // target))
        if pieces <= 1:
            out.append(p)
            continue
        out.extend(_ParquetPart(p.part, run) for run in
                   _split_rows([meta.row_group(i).num_rows for i in range(groups)], pieces))
    return out


def _probe_scheduler(address: str, timeout: float) -> str | None:
    """None when a Dask scheduler answers at ``address``, else why not (in words, for a one-line error).

    Two steps, each within ``timeout`` seconds: a TCP connection (for
    ``tcp://`` and ``tls://`` addresses), then Dask's handshake and an
    ``identity`` request through distributed's own comm layer, in an event
    loop of its own on a helper thread.  Whatever the peer does (nothing,
    HTTP, garbage that decodes to an absurd length) ends as a reason:
    distributed's ``connect`` waits for the peer's handshake without a
    timeout of its own, so the whole exchange is bounded here.
    """
    from distributed.comm import CommClosedError, connect, parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, loc = parse_address(address)
        get_backend(scheme)  # an unknown scheme: ValueError
        if scheme in ("tcp", "tls"):
            host, port = parse_host_port(loc, 8786)
    except (ValueError, TypeError):
        return "not an address of a Dask scheduler (tcp://HOST:PORT)"
    if scheme in ("tcp", "tls"):
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except TimeoutError:
            return f"cannot reach it (no answer within {timeout:g} s)"
        except (OverflowError, ValueError):  # a port out of range
            return "not an address of a Dask scheduler (tcp://HOST:PORT)"
        except OSError as exc:
            return f"cannot reach it ({exc.strerror or type(exc).__name__})"

    async def identity():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome: dict = {}

    def run():
        try:
            outcome["answer"] = asyncio.run(asyncio.wait_for(identity(), timeout))
        except BaseException as exc:  # noqa: BLE001 - whatever the peer made of it, it is not Dask
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="blowfish-scheduler-probe", daemon=True)
    worker.start()
    worker.join(timeout + 5)
    silent = f"did not answer within {timeout:g} s (a Dask scheduler answers at once)"
    if worker.is_alive() or isinstance(outcome.get("error"), TimeoutError):
        return silent
    exc = outcome.get("error")
    if exc is not None:
        if scheme not in ("tcp", "tls") and not isinstance(exc, CommClosedError):  # no connection made
            return f"cannot reach it ({type(exc).__name__})"
        if isinstance(exc, OSError):  # CommClosedError is one
            return "not a Dask scheduler (it closed the connection without Dask's handshake)"
        return f"not a Dask scheduler (it answered in another protocol: {type(exc).__name__})"
    answer = outcome.get("answer")
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind == "Scheduler":
        return None
    if isinstance(kind, str) and kind in ("Worker", "Nanny"):
        return f"not a Dask scheduler (a Dask {kind.lower()} answered)"
    return "not a Dask scheduler (it answered the handshake, then not as a scheduler)"


class DaskEngine:
    """Aggregates on a Dask cluster: one map task per file, row groups or block, partials reduced in a tree.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler; without it a ``LocalCluster`` is
        started (``workers`` processes, one thread each) and closed after.
        An address where no Dask scheduler answers (nothing listening,
        another service such as HTTP, a peer that says nothing or answers
        garbage) is a one-line :class:`DataError` within a few times
        ``timeout`` seconds (:func:`_probe_scheduler`).
    workers : int, optional
        Worker processes of the ``LocalCluster`` (without ``scheduler``).
    progress : bool, optional
        Whether to show Dask's progress bar (on a terminal, unless False).
    timeout : float, optional
        Seconds to wait for the scheduler, at each step of the connection
        (default :data:`SCHEDULER_TIMEOUT`).

    The plan (spec, needs, columns) goes to each worker once; a map task
    carries only the description of its part: a Parquet file, or some of
    its row groups when the file is larger than a task's share
    (:func:`_pieces`: at most :data:`DASK_PARQUET_BYTES`, and
    :data:`DASK_TASKS_PER_THREAD` tasks per worker thread where the row
    groups allow); a block of whole CSV lines of about
    :data:`DASK_CSV_BLOCKSIZE` (each task reads its own share of the file,
    its ends moved to line starts, so at most one line more; a line longer
    than ``dataset.max_line_bytes`` is refused); a gzip CSV, which cannot
    be split, or a bundled dataset streamed by one task.  Every part is
    read by the local engine's readers (so both engines see the same rows,
    malformed ones included) a batch at a time, so a worker's memory is
    bounded by the batch and its partial aggregates, whatever the part's
    size.  The partials are added in a tree of reduce tasks on the workers
    (at most :data:`REDUCE_FAN_IN` at a time, fewer for large histograms:
    :data:`REDUCE_BYTES`), and only the root comes to the driver.  As with
    any split of CSV text at line ends, a quoted field holding a line
    break may be cut between two blocks (then the rows that the two blocks
    see depend on the text): give such a file gzip-compressed.
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, *, workers: int | None = None, progress: bool | None = None,
                 timeout: float | None = None):
        try:
            import dask  # noqa: F401
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise DataError("--engine dask needs Dask: pip install 'blowfish-privacy[dask]'") from None
        self.scheduler = scheduler
        self.timeout = SCHEDULER_TIMEOUT if timeout is None else timeout
        self.workers = workers
        self.progress = progress

    def _parts(self, spec, columns) -> list:
        """The parts of the spec's source, one map task each before :func:`_pieces` splits large Parquet files.

        Every header, footer and needed column is checked here, on the
        driver, before any row is read.
        """
        src = spec.source
        if "bundled" in src:  # small: one task streams it, as the local engine does
            return [_StreamPart()]
        if src["format"] == "csv":
            path = Path(src["path"])
            gz = path.name.lower().endswith(".gz")
            table = Table(spec, columns)
            header = table._header(path, gz)  # encoding, BOM, binary, its width: on the driver, once
            check_columns(columns, header.found, spec, repr(src["path"]))
            if gz:  # gzip cannot be split: one task streams the file in bounded batches (memory bounded)
                return [_StreamPart()]
            from dask.utils import parse_bytes

            size = table.total
            step = max(1, parse_bytes(DASK_CSV_BLOCKSIZE))
            starts = range(header.end, size, step) if size > header.end else [header.end]
            # each task moves its ends to line starts itself: the driver reads nothing past the header
            return [_CsvPart(header, str(path), a, a + step, size) for a in starts]
        # every file's footer and columns checked before any row is read; each task reads one file (or some of
        # its row groups) with the local engine's reader (so the same cells: nulls, text that is not UTF-8, hive keys)
        return [_ParquetPart(part) for part in parquet_parts(spec, columns)]

    def _mapped(self, spec, plan, columns, slots: int = 1) -> list:
        """The map tasks as ``dask.delayed`` objects (``slots`` worker threads), each giving a :func:`_task` result.

        :meth:`aggregate` submits the same parts as futures instead, the
        plan scattered once; this form runs on any Dask scheduler.
        """
        import dask

        job = _Job(spec, plan, columns, int_columns(plan))
        return [dask.delayed(_map_part, pure=False)(p, job) for p in _pieces(self._parts(spec, columns), slots)]

    def _client(self, spec):
        """A client of the scheduler at ``self.scheduler``, after :func:`_probe_scheduler` found one there.

        Anything else (nothing listening, a service that is not Dask, a peer
        that says nothing or answers garbage) is a one-line
        :class:`DataError` within a few times ``timeout`` seconds.
        """
        import dask
        from distributed import Client

        address = self.scheduler

        def refuse(why):
            return DataError(f"{spec.path}: --scheduler {address!r}: {why}; start a Dask scheduler there, check the "
                             "address, or drop --scheduler to use a local cluster")

        why = _probe_scheduler(address, self.timeout)
        if why is not None:
            raise refuse(why)
        try:
            with dask.config.set({"distributed.comm.timeouts.connect": f"{self.timeout}s"}):
                return Client(address, timeout=self.timeout)
        except Exception as exc:  # the peer answered the probe, then not as a scheduler: whatever it sent
            raise refuse(f"not a Dask scheduler ({type(exc).__name__} while connecting)") from None

    def aggregate(self, spec, needs: list) -> dict:
        plan = _plan(spec, needs)
        columns = plan_columns(plan)
        try:
            parts = self._parts(spec, columns)
        except (DataError, FileNotFoundError, PermissionError):
            raise
        except _AGGREGATION_ERRORS + (OSError,) as exc:
            raise unreadable(spec, exc) from None
        return dict(zip(needs, self._run(spec, plan, columns, parts)))

    def aggregate_parts(self, spec, needs: list, parts: list) -> dict:
        """The aggregates of ``needs`` over ``parts`` instead of the spec's source: one map task each.

        Each part is a picklable callable: given the list of the column
        names the needs read, it returns an iterable of ``({column name:
        numpy array}, bytes read)`` batches, e.g. rows generated on the
        worker from a seed (``benchmarks/bench_dask_scaling.py``).  The
        spec gives the domain, the columns and ``invalid``, as for
        :meth:`aggregate`; the map step, the reduce and the errors are
        those of :meth:`aggregate`.
        """
        plan = _plan(spec, needs)
        if not parts:
            raise ValueError("parts must hold at least one part")
        return dict(zip(needs, self._run(spec, plan, plan_columns(plan), [_GivenPart(p) for p in parts])))

    def _run(self, spec, plan, columns, parts: list) -> list:
        """Map ``parts`` (the plan sent to each worker once), reduce in a tree on the workers, gather the root."""
        from distributed import Client, LocalCluster, progress

        cluster = None
        if self.scheduler:
            client = self._client(spec)
        else:
            cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        try:
            slots = sum(client.nthreads().values())
            try:
                parts = _pieces(parts, max(1, slots))
            except (DataError, PermissionError):
                raise
            except _AGGREGATION_ERRORS + (OSError,) as exc:  # a footer read again (checked before)
                raise unreadable(spec, exc) from None
            job = _Job(spec, plan, columns, int_columns(plan))
            if slots:  # sent to every worker once; tasks then take it from their worker's memory
                job = client.scatter([job], broadcast=True, hash=False)[0]
            else:  # no worker yet: one task holds it, and the workers that join fetch it from each other
                job = client.submit(_given, job, pure=False)
            futures = client.map(_map_part, parts, job=job, pure=False)
            hist = sum(d.size * 8 for need, d, *_ in plan if need[0] == "histogram")
            fan = max(2, min(REDUCE_FAN_IN, REDUCE_BYTES // max(1, hist)))
            while len(futures) > 1:  # a tree of reduce tasks, each run as soon as its inputs are (priority)
                futures = [client.submit(_reduce_many, futures[i:i + fan], pure=False, priority=1)
                           if len(futures) - i > 1 else futures[i] for i in range(0, len(futures), fan)]
            future = futures[0]
            del futures, job  # the partials are released as the reduce tasks consume them
            try:
                if self.progress is not False and sys.stderr.isatty():
                    progress(future)
                result = unwrap(future.result())
            except DataError:  # raised by a worker reading the data: already value-free
                raise
            except _AGGREGATION_ERRORS + (OSError,) as exc:  # partition_aggregates', or reading a partition
                raise _data_error(spec, plan, exc) from None
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return result


def _given(value):
    return value
