"""Sources: the rows an engine aggregates, cut into partitions that each give batches of columns.

A source follows :class:`Source`.  The driver asks it for its partitions
(:meth:`Source.partitions`: every header, footer and needed column is
checked there, before any row is read), an engine may split them for its
worker threads (:meth:`Source.balance`), and each map task reads one
(:meth:`Source.read`), a batch at a time: ``({column name: numpy array},
bytes read so far)``, or ``(RESTART, 0)`` before the partition is read
again from its start.  A partition is a small picklable description (a
path, a byte range, some row groups, a callable); the source is sent to
each worker once.  Every error a source raises is a
:class:`~blowfish_privacy.errors.DataError` that quotes no data: no cell,
no row number, no count (:meth:`Source.failure` words any other exception
met while reading).

:class:`SpecSource` reads a release spec's file or bundled dataset (CSV,
gzip CSV, Parquet file or folder) with the readers of :mod:`._reading`;
:class:`FrameSource` in-memory columns (a DataFrame's, in slices of
rows); :class:`GivenSource` partitions given as callables (rows made on
the worker, e.g. from a seed).  A new kind of data (a table of a
database) is a new class with these four methods; an engine that holds
such data natively may read it its own way, as long as ``map_fn`` sees the
same batches: a Spark DataFrame is
:class:`~.spark_source.SparkFrameSource`, mapped by the Spark engine with
``mapInArrow``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Protocol, runtime_checkable

from .._aggregate import AGGREGATION_ERRORS
from ..errors import DataError
from ._csv_reading import read_block, read_header
from ._parquet import parquet_file, parquet_parts
from ._read_errors import check_columns, read_problem, source_text, unreadable
from ._reading import CsvBlock, ParquetSlice, Table

__all__ = ["CSV_PARTITION_BYTES", "PARQUET_PARTITION_BYTES", "PARTITIONS_PER_SLOT", "FrameSource", "GivenSource",
           "Source", "SpecSource", "split_rows"]

#: Bytes of CSV text per partition of a plain CSV file when partitions are wanted for parallel reading.
CSV_PARTITION_BYTES = 16_000_000
#: Most bytes of a Parquet file (on disk) one partition reads: a larger file is split at row-group boundaries.
#: A task's memory does not grow with it (it reads a batch at a time); see also :data:`PARTITIONS_PER_SLOT`.
PARQUET_PARTITION_BYTES = 256 << 20
#: Parquet files are split at row-group boundaries until there are this many partitions per worker thread,
#: where the row groups allow (the load is then balanced; fewer, larger tasks cost less than many small ones).
PARTITIONS_PER_SLOT = 2


@runtime_checkable
class Source(Protocol):
    """What an engine reads: partitions, each read as batches of columns.

    ``what`` names the data in messages (a file's name, never its
    content); ``total`` is the bytes to read (a progress bar's scale; 0
    when unknown), known once :meth:`partitions` has run.
    """

    what: str
    total: int

    def partitions(self, parallel: bool) -> list:
        """The partitions, every header, footer and needed column checked here, before any row is read.

        ``parallel=False``: as few as a streaming read allows (one for a
        file); ``True``: one per file, block of lines or slice, for map
        tasks on many workers.
        """

    def balance(self, partitions: list, slots: int) -> list:
        """``partitions`` split further for ``slots`` worker threads (or returned as they are)."""

    def read(self, partition) -> Iterator:
        """The batches of one partition, lazily: nothing is read before the first batch is asked for."""

    def failure(self, exc: BaseException) -> DataError:
        """A value-free :class:`DataError` for ``exc``, met while reading or mapping this source."""


class _Part:
    """A partition: a picklable description read by :meth:`SpecSource.read`.

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


class WholePart(_Part):
    """The whole source, streamed by one reader in bounded batches (a gzip CSV, a bundled dataset, any file)."""

    __slots__ = ()

    def read(self, source: SpecSource):
        return source.table() if source.opened is None else source.opened


class CsvLinesPart(_Part):
    """The lines of a plain CSV file that begin in ``[start, stop)``, read as the whole file is read.

    The task reads its own share of the file (:func:`._csv_reading.read_block`):
    at most ``stop - start`` bytes plus one line, a line longer than the
    spec's ``dataset.max_line_bytes`` refused.
    """

    __slots__ = ("header", "path", "start", "stop", "size")

    def read(self, source: SpecSource):
        block = CsvBlock(source.spec, source.columns, self.header, b"", int_columns=source.int_columns)
        block.data = read_block(block, self.path, self.start, self.stop, self.header.end, self.size)
        block.total = len(block.data)
        return iter(block) if block.data else iter(())


class ParquetPart(_Part):
    """Some row groups (None: all) of one file of a Parquet source, read as the whole source is read.

    ``part`` is one ``(file, hive keys, size)`` of :func:`._parquet.parquet_parts`.
    """

    __slots__ = ("part", "row_groups")

    def __init__(self, part, row_groups=None) -> None:
        super().__init__(part, row_groups)

    def read(self, source: SpecSource):
        groups = None if self.row_groups is None else list(self.row_groups)
        return iter(ParquetSlice(source.spec, source.columns, self.part, groups))


def _lazy(make):
    """The items of ``make()``, which is called only when the first item is asked for."""
    yield from make()


class SpecSource:
    """The needed columns of a release spec's data: a CSV file (plain or gzip), Parquet file or folder, bundled dataset.

    ``columns`` are the column names read, ``int_columns`` those that only
    integer attributes read (pyarrow may parse them as int64);
    ``batch_rows`` and ``block_bytes`` bound a batch (:class:`._reading.Table`).
    Partitions for parallel reading: a Parquet file each (split at
    row-group boundaries by :meth:`balance`), a block of whole lines of
    about :data:`CSV_PARTITION_BYTES` of a plain CSV file (each task reads
    its own share of the file, its ends moved to line starts, so at most
    one line more), and the whole source for a gzip CSV (it cannot be
    split) or a bundled dataset.  Every partition is read by the same
    readers, so every engine sees the same rows, malformed ones included.
    As with any split of CSV text at line ends, a quoted field holding a
    line break may be cut between two blocks: give such a file
    gzip-compressed.
    """

    def __init__(self, spec, columns, int_columns=(), *, batch_rows: int | None = None,
                 block_bytes: int | None = None) -> None:
        self.spec = spec
        self.columns = list(columns)
        self.int_columns = set(int_columns)
        self.batch_rows = batch_rows
        self.block_bytes = block_bytes
        self.what = f"{spec.path}: the data in {source_text(spec)}"
        self.total = 0
        self.opened = None  # the Table of a whole-source read, opened by partitions(parallel=False)

    def __getstate__(self):
        return {**self.__dict__, "opened": None}  # workers open their own readers

    def table(self) -> Table:
        """The whole source as one :class:`._reading.Table` (opened: sizes read, Parquet footers checked)."""
        return Table(self.spec, self.columns, int_columns=self.int_columns, batch_rows=self.batch_rows,
                     block_bytes=self.block_bytes)

    def partitions(self, parallel: bool) -> list:
        try:
            return self._partitions(parallel)
        except (DataError, PermissionError):
            raise
        except OSError as exc:
            if not parallel or isinstance(exc, FileNotFoundError):
                raise read_problem(self.spec, source_text(self.spec),
                                   f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
            raise unreadable(self.spec, exc) from None
        except AGGREGATION_ERRORS as exc:
            raise unreadable(self.spec, exc) from None

    def _partitions(self, parallel: bool) -> list:
        src = self.spec.source
        if not parallel:
            self.opened = self.table()
            self.total = self.opened.total
            return [WholePart()]
        if "bundled" in src:  # small: one task streams it
            return [WholePart()]
        if src["format"] == "csv":
            path = Path(src["path"])
            gz = path.name.lower().endswith(".gz")
            table = Table(self.spec, self.columns)
            header = read_header(table, path, gz)  # encoding, BOM, binary, its width: on the driver, once
            check_columns(self.columns, header.found, self.spec, repr(src["path"]))
            self.total = size = table.total
            if gz:  # gzip cannot be split: one task streams the file in bounded batches (memory bounded)
                return [WholePart()]
            step = max(1, CSV_PARTITION_BYTES)
            starts = range(header.end, size, step) if size > header.end else [header.end]
            # each task moves its ends to line starts itself: the driver reads nothing past the header
            return [CsvLinesPart(header, str(path), a, a + step, size) for a in starts]
        # every file's footer and columns checked before any row is read; each task reads one file (or some of
        # its row groups) with the same reader (so the same cells: nulls, text that is not UTF-8, hive keys)
        parts = [ParquetPart(part) for part in parquet_parts(self.spec, self.columns)]
        self.total = sum(p.part[2] for p in parts)
        return parts

    def balance(self, partitions: list, slots: int) -> list:
        """``partitions`` with the Parquet files larger than a task's share split at row-group boundaries.

        A task's share is at most :data:`PARQUET_PARTITION_BYTES` of a
        file, and small enough that there are :data:`PARTITIONS_PER_SLOT`
        partitions per worker thread (``slots``) where the row groups
        allow; a file at most that large is one partition.  Only the
        footers of the files to split are read again.
        """
        try:
            return _split_parquet(partitions, slots)
        except (DataError, PermissionError):
            raise
        except AGGREGATION_ERRORS + (OSError,) as exc:  # a footer read again (checked before)
            raise unreadable(self.spec, exc) from None

    def read(self, partition) -> Iterator:
        return _lazy(lambda: partition.read(self))

    def failure(self, exc: BaseException) -> DataError:
        return unreadable(self.spec, exc)


def _split_parquet(parts: list, slots: int) -> list:
    files = [p for p in parts if isinstance(p, ParquetPart) and p.row_groups is None]
    if not files:
        return parts
    import pyarrow.parquet as pq

    total = sum(p.part[2] for p in files)
    target = max(1, min(PARQUET_PARTITION_BYTES, -(-total // max(1, PARTITIONS_PER_SLOT * slots))))
    out = []
    for p in parts:
        if not isinstance(p, ParquetPart) or p.row_groups is not None or p.part[2] <= target:
            out.append(p)
            continue
        meta = parquet_file(pq, p.part[0]).metadata
        groups = meta.num_row_groups
        pieces = min(groups, -(-p.part[2] // target))
        if pieces <= 1:
            out.append(p)
            continue
        out.extend(ParquetPart(p.part, run) for run in
                   split_rows([meta.row_group(i).num_rows for i in range(groups)], pieces))
    return out


def split_rows(rows: list, pieces: int) -> list:
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


class FrameSource:
    """In-memory columns (``{column name: array}``, e.g. a DataFrame's), in partitions of ``rows`` rows.

    ``what`` names the table in messages (e.g. ``"spec.toml: the data in
    the in-memory pandas DataFrame"``).  The columns are sliced, not
    copied; a partition is ``(start, stop)`` and the source (with its
    columns) goes to each worker once.
    """

    def __init__(self, columns: dict, what: str, rows: int = 1 << 22) -> None:
        if rows < 1:
            raise ValueError(f"rows must be a positive number of rows per partition, got {rows!r}")
        self.data = dict(columns)
        self.what = what
        self.rows = rows
        self.total = 0
        self.length = len(next(iter(self.data.values()))) if self.data else 0

    def partitions(self, parallel: bool) -> list:
        return [(s, min(s + self.rows, self.length)) for s in range(0, self.length, self.rows)]

    def balance(self, partitions: list, slots: int) -> list:
        return partitions

    def read(self, partition) -> Iterator:
        start, stop = partition
        yield {c: v[start:stop] for c, v in self.data.items()}, 0

    def failure(self, exc: BaseException) -> DataError:
        return DataError(f"{self.what} could not be read ({type(exc).__name__}; details withheld: they may quote "
                         "the data)")


class GivenSource:
    """Partitions given as picklable callables: called on the worker with the column names, each gives batches.

    E.g. rows generated on a worker from a seed
    (``benchmarks/bench_dask_scaling.py``).  ``spec`` names the data in
    messages.
    """

    def __init__(self, spec, columns, makers: list) -> None:
        if not makers:
            raise ValueError("parts must hold at least one part")
        self.spec = spec
        self.columns = list(columns)
        self.makers = list(makers)
        self.what = f"{spec.path}: the data in {source_text(spec)}"
        self.total = 0

    def partitions(self, parallel: bool) -> list:
        return list(range(len(self.makers)))

    def balance(self, partitions: list, slots: int) -> list:
        return partitions

    def read(self, partition) -> Iterator:
        return _lazy(lambda: self.makers[partition](list(self.columns)))

    def failure(self, exc: BaseException) -> DataError:
        return unreadable(self.spec, exc)
