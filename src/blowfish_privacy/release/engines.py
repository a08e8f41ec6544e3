"""Exact aggregation engines: the local one (streaming, bounded batches) and Dask.

Both compute the same exact aggregates with the same map step,
:func:`~blowfish_privacy._aggregate.partition_aggregates` (per partition:
encode the rows into flat domain indices and ``numpy.bincount`` them), and
a sum as the reduce step, so their results are identical.  Noise is never
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

from .._aggregate import (  # noqa: F401  (re-exported: importable from here as before)
    AGGREGATION_ERRORS as _AGGREGATION_ERRORS, INVALID_MODES, MALFORMED, MALFORMED_ENTRY, RESTART, Need,
    _fast_index, _int_columns, _map, _plan, _plan_columns, _reduce, _unwrap, combine, fold, fold_table,
    malformed_mode, partition_aggregates, plan_for,
)
from .._progress import progress_bar
from ..errors import DataError, InvalidColumn  # noqa: F401  (re-exported)
from ._reading import (  # noqa: F401  (re-exported)
    BATCH_ROWS, CSV_BLOCK_BYTES, HEADER_MAX_BYTES, PARQUET_BUFFER_BYTES, _bundled_text, _check_columns, _CsvBlock,
    _parquet_parts, _parquet_slices, _ParquetSlice, _prefetch, _problem, _read_block, _source_text, _Table, _to_numpy,
    _unreadable, max_line_bytes, read_table,
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
#: Uncompressed bytes of Parquet row groups per Dask task (a file's row groups are split into slices of about this).
DASK_PARQUET_BYTES = 64 << 20


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
    return DataError(f"{spec.path}: {'; '.join(parts)} (the data in {_source_text(spec)}); {hint}, "
                     "or correct the data")


def _data_error(spec, plan, exc) -> DataError:
    """A value-free message for an error raised while aggregating the data."""
    if isinstance(exc, InvalidColumn):
        return _invalid_error(spec, exc)
    names = sorted({a for _, d, _, flt, _ in plan for a in d.names + tuple(f[0].name for f in flt)})
    return DataError(f"{spec.path}: domain: the data in {_source_text(spec)} could not be aggregated over "
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
        columns = _plan_columns(plan)
        try:
            table = _Table(spec, columns, int_columns=_int_columns(plan), batch_rows=self.batch_rows,
                           block_bytes=self.block_bytes)
        except (DataError, PermissionError):
            raise
        except OSError as exc:
            raise _problem(spec, _source_text(spec), f"cannot be opened ({exc.strerror or type(exc).__name__})") \
                from None
        # shown on a terminal when the data are larger than a few batches, unless progress=False
        show = None if self.progress is not False and table.total > PROGRESS_MIN_BYTES else False
        try:
            with progress_bar(max(1, table.total >> 20), "reading (MiB)", enabled=show) as bar:
                return dict(zip(needs, fold(_prefetch(table), plan, columns, bar)))
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


def _stream_map(spec, plan, columns, int_columns):
    """A whole source streamed by one task (a Dask worker): :func:`_task`'s result."""
    return _task(spec, plan, lambda: fold(_Table(spec, columns, int_columns=int_columns), plan, columns))


def _block_map(spec, plan, columns, int_columns, header, path: str, start: int, stop: int, size: int):
    """The lines of a CSV file that begin in ``[start, stop)`` (a Dask task), read as the local engine reads them.

    The task reads its own share of the file (:func:`._reading._read_block`):
    at most ``stop - start`` bytes plus one line, a line longer than the
    spec's ``dataset.max_line_bytes`` refused.  :func:`_task`'s result.
    """
    def work():
        block = _CsvBlock(spec, columns, header, b"", int_columns=int_columns)
        block.data = _read_block(block, path, start, stop, header.end, size)
        block.total = len(block.data)
        return fold(block if block.data else iter(()), plan, columns)

    return _task(spec, plan, work)


def _parquet_map(spec, plan, columns, part, row_groups):
    """Some row groups of one Parquet file (a Dask task), read as the local engine reads it: :func:`_task`'s result."""
    return _task(spec, plan, lambda: fold(_ParquetSlice(spec, columns, part, row_groups), plan, columns))


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
    """Aggregates on a Dask cluster: map per partition, tree-sum reduce.

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

    Per-worker memory is bounded by the partition: CSV blocks of whole
    lines of about :data:`DASK_CSV_BLOCKSIZE` (each task reads its own
    share of the file, its ends moved to line starts, so at most one line
    more; a line longer than ``dataset.max_line_bytes`` is refused), each
    read by the local engine's CSV readers (so both engines see the same
    rows, malformed ones included); Parquet in slices of a file's row
    groups of about :data:`DASK_PARQUET_BYTES`, each read by the local
    engine's Parquet reader a batch at a time; a gzip CSV, which cannot be
    split, and a bundled dataset are streamed by one task in bounded
    batches.  As with any split of CSV text at line ends, a quoted field
    holding a line break may be cut between two blocks (then the rows that
    the two blocks see depend on the text): give such a file
    gzip-compressed.
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

    def _mapped(self, spec, plan, columns) -> list:
        """The map tasks: ``("ok", aggregates)``, ``("invalid", entries)`` or ``("error", message)`` each."""
        import dask

        src = spec.source
        ints = _int_columns(plan)
        if "bundled" in src:  # small: one task streams it, as the local engine does
            return [dask.delayed(_stream_map)(spec, plan, columns, ints)]
        if src["format"] == "csv":
            path = Path(src["path"])
            gz = path.name.lower().endswith(".gz")
            table = _Table(spec, columns)
            header = table._header(path, gz)  # encoding, BOM, binary, its width: on the driver, once
            _check_columns(columns, header.found, spec, repr(src["path"]))
            if gz:  # gzip cannot be split: one task streams the file in bounded batches (memory bounded)
                return [dask.delayed(_stream_map)(spec, plan, columns, ints)]
            from dask.utils import parse_bytes

            size = table.total
            step = max(1, parse_bytes(DASK_CSV_BLOCKSIZE))
            starts = range(header.end, size, step) if size > header.end else [header.end]
            # each task moves its ends to line starts itself: the driver reads nothing past the header
            return [dask.delayed(_block_map)(spec, plan, columns, ints, header, str(path), a, a + step, size)
                    for a in starts]
        # every file's footer and columns checked before any row is read; each task reads some row groups of one
        # file with the local engine's reader (so the same cells: nulls, text that is not UTF-8, hive keys)
        return [dask.delayed(_parquet_map)(spec, plan, columns, part, groups)
                for part in _parquet_parts(spec, columns) for groups in _parquet_slices(part, DASK_PARQUET_BYTES)]

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
        import dask
        from distributed import Client, LocalCluster, progress

        plan = _plan(spec, needs)
        columns = _plan_columns(plan)
        try:
            mapped = self._mapped(spec, plan, columns)
        except (DataError, FileNotFoundError, PermissionError):
            raise
        except _AGGREGATION_ERRORS + (OSError,) as exc:
            raise _unreadable(spec, exc) from None
        while len(mapped) > 1:  # tree reduce
            mapped = [dask.delayed(_reduce)(mapped[i], mapped[i + 1]) if i + 1 < len(mapped) else mapped[i]
                      for i in range(0, len(mapped), 2)]
        cluster = None
        if self.scheduler:
            client = self._client(spec)
        else:
            cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        try:
            try:
                future = client.compute(mapped[0])
                if self.progress is not False and sys.stderr.isatty():
                    progress(future)
                result = _unwrap(future.result())
            except DataError:  # raised by a worker reading the data: already value-free
                raise
            except _AGGREGATION_ERRORS + (OSError,) as exc:  # partition_aggregates', or reading a partition
                raise _data_error(spec, plan, exc) from None
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return dict(zip(needs, result))
