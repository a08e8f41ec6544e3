"""A spec's data source read in batches of bounded size (CSV, gzip CSV, Parquet, bundled datasets): :class:`Table`.

The local engine never holds the table: the needed columns are read in
batches and folded into the aggregates (``partition_aggregates(...,
into=...)``), so its peak memory is the aggregates plus one batch,
whatever the number of rows.  A "column" need (pufferfish_sum) keeps the
column's values, 8 bytes a row: only histograms are bounded.

Every failure to read is a :class:`DataError` naming the spec file, the
data file and the problem, never a value or a row (:mod:`._read_errors`).
pyarrow is optional: it is imported where it is used, and the stdlib CSV
reader serves without it.  CSV text is read by :mod:`._csv_reading` (which
documents the line limit, malformed rows and when a read is refused),
Parquet by :mod:`._parquet`.  The Dask engine reads a CSV file in blocks
of whole lines (:class:`CsvBlock`) and a Parquet file in slices of its
row groups (:class:`ParquetSlice`) with the same readers, so every engine
sees the same rows.
"""

from __future__ import annotations

import csv
import gzip
import io
import queue
import threading
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

from .._aggregate import MALFORMED, RESTART
from ..errors import DataError
from ._csv_feed import CSV_BLOCK_BYTES
from ._csv_lines import CsvHeader
from ._csv_reading import csv_batches, read_header
from ._parquet import parquet_batches, parquet_parts
from ._read_errors import check_columns, read_problem
from .spec import BUNDLED, DEFAULT_MAX_LINE_BYTES

__all__ = ["BATCH_ROWS", "CsvBlock", "ParquetSlice", "Table", "bundled_file", "bundled_text", "have_pyarrow",
           "max_line_bytes", "prefetch", "read_table"]

#: Rows per batch of the Parquet reader and of the stdlib CSV reader (a few MiB of int64 columns).
BATCH_ROWS = 1 << 18

_GZIP_PROBLEM = "is not a readable gzip file (truncated, damaged or not gzip-compressed)"


def max_line_bytes(spec) -> int:
    """The longest CSV line (or record) the readers take for ``spec``: its ``dataset.max_line_bytes``."""
    limit = getattr(spec, "max_line_bytes", None)
    return int(limit) if limit else DEFAULT_MAX_LINE_BYTES


def bundled_file(name: str):
    """A context manager giving the path of a bundled dataset (a gzip CSV)."""
    return resources.as_file(resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]))


def bundled_text(name: str) -> str:
    """The text of a bundled dataset, decompressed."""
    raw = resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]).read_bytes()
    return gzip.decompress(raw).decode("utf-8-sig")


def have_pyarrow() -> bool:
    """Whether pyarrow (with its CSV reader) can be imported."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


class Table:
    """The needed columns of a spec's table, read in batches of bounded size.

    Iterating gives ``({column name: numpy array}, bytes read so far)``;
    ``total`` is the size in bytes of what is read (the progress bar's scale).
    Every failure to read is a :class:`DataError` naming the spec file, the
    data file and the problem, never a value or a row.
    ``int_columns`` are read as int64 by pyarrow when every cell is a plain
    integer (else the file is read again as text, as the stdlib reader sees
    it); ``batch_rows`` and ``block_bytes`` bound a batch, and the spec's
    ``max_line_bytes`` a line (:func:`max_line_bytes`).  Every CSV record
    is given; a batch holding malformed ones marks them in the boolean
    mask ``cols[MALFORMED]`` (their cells are empty placeholders).
    """

    def __init__(self, spec, columns, *, int_columns=(), batch_rows=None, block_bytes=None, arrow=None):
        self._setup(spec, columns, int_columns, batch_rows, block_bytes, arrow)
        src = spec.source
        if "bundled" in src:
            self.kind, self.what, self.key = "csv", f"bundled dataset {src['bundled']!r}", "dataset.bundled"
            with bundled_file(src["bundled"]) as p:
                self.total = Path(p).stat().st_size
        else:
            self.kind, self.what, self.key = src["format"], repr(src["path"]), "dataset.path"
            if self.kind == "csv":
                self.total = Path(src["path"]).stat().st_size
            else:
                self.parts = parquet_parts(spec, self.columns)
                self.total = sum(size for _, _, size in self.parts)

    def _setup(self, spec, columns, int_columns, batch_rows, block_bytes, arrow) -> None:
        self.spec = spec
        self.columns = list(columns)
        self.int_columns = set(int_columns)
        self.batch_rows = batch_rows or BATCH_ROWS
        self.limit = max_line_bytes(spec)
        # pyarrow never takes a record longer than two of its blocks: half the limit refuses every longer one
        self.block_bytes = max(1, min(block_bytes or CSV_BLOCK_BYTES, self.limit // 2))
        self.arrow = have_pyarrow() if arrow is None else arrow
        self.row_groups = None  # Parquet: every row group (see ParquetSlice)

    def __iter__(self):
        if self.kind == "parquet":
            return parquet_batches(self)
        return self._csv()

    # -- CSV --------------------------------------------------------------------------------------------
    def _csv(self):
        src = self.spec.source
        if "bundled" in src:
            with bundled_file(src["bundled"]) as p:
                yield from self._csv_file(Path(p), True)
        else:
            path = Path(src["path"])
            yield from self._csv_file(path, path.name.lower().endswith(".gz"))

    def _csv_file(self, path: Path, gz: bool):
        header = read_header(self, path, gz)
        check_columns(self.columns, header.found, self.spec, self.what)

        def arrow_source():
            import pyarrow as pa

            return pa.OSFile(str(path))

        yield from csv_batches(self, header, gz, arrow_source, lambda: open(path, "rb"), skip=header.end)

    def fail(self, problem: str) -> DataError:
        """A :class:`DataError` naming the spec, the key and the data: ``problem`` must quote no data."""
        return read_problem(self.spec, self.what, problem, self.key)

    def too_long(self) -> DataError:
        """The refusal of a line longer than ``dataset.max_line_bytes``."""
        return self.fail(f"has a line longer than dataset.max_line_bytes = {self.limit} bytes (the line is not "
                          "shown); raise dataset.max_line_bytes if the data are meant to hold such lines")

    def read_error(self, exc, gz: bool) -> DataError:
        """The value-free refusal of a read that failed with ``exc`` (its text is never shown)."""
        if isinstance(exc, UnicodeDecodeError):
            return self.fail("is not UTF-8 text (UnicodeDecodeError); save it as UTF-8")
        if gz and isinstance(exc, (OSError, EOFError, zlib.error)) and not isinstance(exc, PermissionError):
            return self.fail(_GZIP_PROBLEM)
        if isinstance(exc, csv.Error):
            return self.fail(f"is not well-formed CSV ({type(exc).__name__}; details withheld: they may quote "
                              "the data)")
        if isinstance(exc, MemoryError):
            return self.fail("cannot be read in the memory available (MemoryError)")
        return self.fail(f"cannot be read ({type(exc).__name__}; details withheld: they may quote the data)")


class CsvBlock(Table):
    """One block of whole lines of a spec's CSV file, read as :class:`Table` reads the file.

    The Dask engine's tasks read a plain CSV file this way: the same
    readers, so the same rows (malformed ones included) as the local
    engine.  ``header`` is the file's :class:`CsvHeader`, read once by the
    driver; ``data`` holds lines of the file after it.
    """

    def __init__(self, spec, columns, header: CsvHeader, data: bytes, *, int_columns=(), arrow=None):
        self._setup(spec, columns, int_columns, None, None, arrow)
        self.kind, self.what, self.key = "csv", repr(spec.source["path"]), "dataset.path"
        self.header, self.data = header, data
        self.total = len(data)

    def _csv(self):
        def arrow_source():
            import pyarrow as pa

            return pa.BufferReader(self.data)

        yield from csv_batches(self, self.header, False, arrow_source, lambda: io.BytesIO(self.data), skip=0)


class ParquetSlice(Table):
    """Some row groups of one file of a spec's Parquet source, read as :class:`Table` reads the source.

    The Dask engine's tasks read Parquet this way: the same reader (text
    that is not UTF-8, nulls and hive partition keys as the local engine
    reads them), a batch at a time.  ``part`` is one ``(file, hive keys,
    size)`` of :func:`parquet_parts`, checked by the driver; ``row_groups``
    the indices to read (None: all).
    """

    def __init__(self, spec, columns, part, row_groups=None, *, batch_rows=None):
        self._setup(spec, columns, (), batch_rows, None, None)
        self.kind, self.what, self.key = "parquet", repr(part[0]), "dataset.path"
        self.parts = [part]
        self.row_groups = row_groups
        self.total = part[2]


def prefetch(batches, depth: int = 2):
    """The items of ``batches``, produced on a helper thread at most ``depth`` items ahead.

    Decoding the next batch (pyarrow, without the GIL) then overlaps the
    fold of this one (numpy): pyarrow's Parquet reader decodes only when
    asked.  Memory: ``depth + 2`` batches.  An exception of the producer is
    raised here; when the consumer stops early the producer stops too and
    closes ``batches``' iterator.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(msg) -> bool:
        while not stop.is_set():
            try:
                q.put(msg, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        it = iter(batches)
        try:
            for item in it:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, raised there
            put(("error", exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name="blowfish-read", daemon=True)
    worker.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "item":
                yield item
            elif kind == "end":
                return
            else:
                raise item
    finally:
        stop.set()
        worker.join()


def read_table(spec, columns: list[str], malformed: str = "error") -> dict:
    """Read ``columns`` of the spec's whole table into numpy arrays (the engines stream instead).

    Malformed CSV rows are dropped (``malformed="drop"``) or refused with a
    :class:`DataError` that quotes no row (``"error"``).
    """
    if malformed not in ("error", "drop"):
        raise ValueError(f"malformed must be 'error' or 'drop', got {malformed!r}")
    got = {c: [] for c in columns}
    table = Table(spec, columns)
    for cols, _ in table:
        if cols is RESTART:
            got = {c: [] for c in columns}
            continue
        bad = cols.get(MALFORMED)
        if bad is not None and malformed == "error":
            raise table.fail("holds malformed rows (more or fewer fields than the header line); the rows are "
                              "not shown")
        for c in columns:
            got[c].append(cols[c] if bad is None else cols[c][~bad])
    return {c: np.concatenate(v) if v else np.array([], dtype=str) for c, v in got.items()}


