"""Reading a spec's data source in batches of bounded size (CSV, gzip CSV, Parquet, bundled datasets).

The local engine never holds the table: the needed columns are read in
batches and folded into the aggregates (``partition_aggregates(...,
into=...)``), so its peak memory is the aggregates plus one batch,
whatever the number of rows.  A "column" need (pufferfish_sum) keeps the
column's values, 8 bytes a row: only histograms are bounded.

Every failure to read is a :class:`DataError` naming the spec file, the
data file and the problem, never a value or a row.  pyarrow is optional:
it is imported where it is used, and the stdlib CSV reader serves without it.

A CSV row with more or fewer fields than the header line is *malformed*:
pyarrow's reader hands such a file to the stdlib reader (as it does a cell
it does not take), which skips the row (it is never counted, and no cell
of it reaches the map step) and, when malformed rows must be refused,
gives the :data:`MALFORMED` marker once (see
:func:`.._aggregate.malformed_mode`).
The Dask engine reads a CSV file in blocks of whole lines with the same
readers (:class:`_CsvBlock`), so both engines see the same rows.
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
from .spec import BUNDLED

#: Rows per batch of the Parquet reader and of the stdlib CSV reader (a few MiB of int64 columns).
BATCH_ROWS = 1 << 18
#: Bytes of CSV text per block of pyarrow's streaming CSV reader.  Its I/O thread reads up to 32 blocks
#: ahead of the parser, whatever we consume (a fixed queue, not an option: ARROW-12090), and page-cached
#: text arrives faster than it is parsed: with 16 MiB blocks that queue alone held up to 512 MiB, the
#: peak then growing with the file up to that size.  1 MiB blocks bound it to 32 MiB and parse as fast.
CSV_BLOCK_BYTES = 1 << 20
#: Bytes the Parquet reader reads at a time inside a column chunk (``ParquetFile(buffer_size=...)``):
#: pages are streamed, so a file written as one huge row group is bounded too.
PARQUET_BUFFER_BYTES = 1 << 20

_GZIP_PROBLEM = "is not a readable gzip file (truncated, damaged or not gzip-compressed)"
#: What to do with a malformed CSV row (more or fewer fields than the header): see ``malformed_mode``.
MALFORMED_MODES = ("error", "drop")


class _Fallback(Exception):
    """pyarrow's typed CSV reading met a cell or a row it does not take: read again with the stdlib reader."""


def _bundled_file(name: str):
    """A context manager giving the path of a bundled dataset (a gzip CSV)."""
    return resources.as_file(resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]))


def _bundled_text(name: str) -> str:
    raw = resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]).read_bytes()
    return gzip.decompress(raw).decode("utf-8-sig")


def _problem(spec, what: str, problem: str, key: str = "dataset.path") -> DataError:
    return DataError(f"{spec.path}: {key}: {what} {problem}")


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def _to_numpy(arr) -> np.ndarray:
    """A pyarrow array as numpy, as ``ChunkedArray.to_numpy`` gives it (nulls of an int column: NaN)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    dtype = _NUMERIC.get(str(arr.type))
    if dtype is not None and arr.null_count == 0:
        # a read-only view of the values; to_numpy (even zero_copy_only=True) imports pandas: 0.25 s, 50 MiB
        data = arr.buffers()[1]
        return np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    return arr.to_numpy(zero_copy_only=False)


_NUMERIC = {name: np.dtype(name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                              "uint64")}
_NUMERIC.update({"float": np.dtype(np.float32), "double": np.dtype(np.float64)})


def _arrow_ints(col):
    """A pyarrow text column of plain integers as int64, else :class:`_Fallback` (the text path reads it).

    pyarrow's integer parser takes what Python's ``int`` takes but for
    surrounding spaces, underscores and a ``+`` (refused: the text path
    then reads them as ``int`` does) and hexadecimal, ``0x1f`` (taken as
    31: refused here, as any cell with an ``x``, so that the value is read
    as the text path reads it, and refused).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    text = col.buffers()[2]
    if text is not None and ((np.frombuffer(text, dtype=np.uint8) | 0x20) == ord("x")).any():
        raise _Fallback()
    return pc.cast(col, pa.int64())  # a cell that is not an integer: ArrowInvalid, then _Fallback


class _Table:
    """The needed columns of a spec's table, read in batches of bounded size.

    Iterating gives ``({column name: numpy array}, bytes read so far)``;
    ``total`` is the size in bytes of what is read (the progress bar's scale).
    Every failure to read is a :class:`DataError` naming the spec file, the
    data file and the problem, never a value or a row.
    ``int_columns`` are read as int64 by pyarrow when every cell is a plain
    integer (else the file is read again as text, as the stdlib reader sees
    it); ``batch_rows`` and ``block_bytes`` bound a batch.  Malformed CSV
    rows are skipped; under ``malformed="error"`` the item ``(MALFORMED,
    bytes read)`` is given once after the first of them.
    """

    def __init__(self, spec, columns, *, int_columns=(), batch_rows=None, block_bytes=None, arrow=None,
                 malformed="error"):
        self._setup(spec, columns, int_columns, batch_rows, block_bytes, arrow, malformed)
        src = spec.source
        if "bundled" in src:
            self.kind, self.what, self.key = "csv", f"bundled dataset {src['bundled']!r}", "dataset.bundled"
            with _bundled_file(src["bundled"]) as p:
                self.total = Path(p).stat().st_size
        else:
            self.kind, self.what, self.key = src["format"], repr(src["path"]), "dataset.path"
            if self.kind == "csv":
                self.total = Path(src["path"]).stat().st_size
            else:
                self.parts = _parquet_parts(spec, self.columns)
                self.total = sum(size for _, _, size in self.parts)

    def _setup(self, spec, columns, int_columns, batch_rows, block_bytes, arrow, malformed) -> None:
        if malformed not in MALFORMED_MODES:
            raise ValueError(f"malformed must be one of {list(MALFORMED_MODES)}, got {malformed!r}")
        self.spec = spec
        self.columns = list(columns)
        self.int_columns = set(int_columns)
        self.batch_rows = batch_rows or BATCH_ROWS
        self.block_bytes = block_bytes or CSV_BLOCK_BYTES
        self.arrow = _have_pyarrow() if arrow is None else arrow
        self.malformed = malformed

    def __iter__(self):
        if self.kind == "parquet":
            return self._parquet()
        return self._csv()

    # -- CSV --------------------------------------------------------------------------------------------
    def _csv(self):
        src = self.spec.source
        if "bundled" in src:
            with _bundled_file(src["bundled"]) as p:
                yield from self._csv_file(Path(p), True)
        else:
            path = Path(src["path"])
            yield from self._csv_file(path, path.name.lower().endswith(".gz"))

    def _csv_file(self, path: Path, gz: bool):
        header = self._header(path, gz)
        _check_columns(self.columns, header, self.spec, self.what)

        def arrow_source():
            import pyarrow as pa

            return pa.OSFile(str(path))

        yield from self._csv_text(header, gz, arrow_source, lambda: open(path, "rb"), skip_header=True)

    def _csv_text(self, header: list[str], gz: bool, arrow_source, byte_source, *, skip_header: bool):
        """Batches of CSV text whose fields are named by ``header``: pyarrow's reader, else the stdlib's.

        ``arrow_source`` and ``byte_source`` open the raw bytes (a pyarrow
        input file, a Python binary file); ``skip_header``: the text begins
        with the header line.
        """
        if self.arrow:
            started = False
            try:
                for item in self._csv_arrow(arrow_source, gz, header, skip_header):
                    started = True
                    yield item
                return
            except _Fallback:
                if started:  # batches already given hold rows the stdlib reader reads again
                    yield RESTART, 0
        yield from self._csv_stdlib(byte_source, gz, header, skip_header)

    def _fail(self, problem: str) -> DataError:
        return _problem(self.spec, self.what, problem, self.key)

    def _read_error(self, exc, gz: bool) -> DataError:
        if isinstance(exc, UnicodeDecodeError):
            return self._fail("is not UTF-8 text (UnicodeDecodeError); save it as UTF-8")
        if gz and isinstance(exc, (OSError, EOFError, zlib.error)) and not isinstance(exc, PermissionError):
            return self._fail(_GZIP_PROBLEM)
        if isinstance(exc, csv.Error):
            return self._fail(f"is not well-formed CSV ({type(exc).__name__}; details withheld: they may quote "
                              "the data)")
        return self._fail(f"cannot be read ({type(exc).__name__}; details withheld: they may quote the data)")

    def _header(self, path: Path, gz: bool) -> list[str]:
        try:
            with open(path, "rb") as raw:
                if gz and raw.read(2) != b"\x1f\x8b":
                    raise self._fail("is named .gz but is not gzip-compressed")
                raw.seek(0)
                fh = gzip.GzipFile(fileobj=raw) if gz else raw
                line = fh.readline(1 << 20)
        except DataError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
                raise self._fail(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
            raise self._read_error(exc, gz) from None
        if not line.strip(b"\r\n\t \xef\xbb\xbf"):
            raise self._fail("is empty (not even a header line)")
        if line.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise self._fail("is UTF-16 text; save it as UTF-8")
        if b"\x00" in line:
            raise self._fail("is not CSV text (it holds NUL bytes: binary data, or UTF-16 without a byte-order mark)")
        try:
            text = line.decode("utf-8-sig")  # a byte-order mark (Excel) is not part of the first name
        except UnicodeDecodeError as exc:
            raise self._read_error(exc, gz) from None
        try:
            return [h.strip() for h in next(csv.reader([text]))]
        except (csv.Error, StopIteration) as exc:
            raise self._read_error(exc if isinstance(exc, csv.Error) else csv.Error(), gz) from None

    def _csv_arrow(self, source, gz: bool, header: list[str], skip_header: bool):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        names = [f"c{i}" for i in range(len(header))]  # distinct, whatever the header holds
        pick = {c: names[header.index(c)] for c in self.columns}
        # every column as text: pyarrow's int64 parser also takes hexadecimal ('0x1f' is 31), which the text
        # path refuses; integer columns are cast below once no cell holds an x
        types = {pick[c]: pa.string() for c in self.columns}
        # no invalid_row_handler: pyarrow decodes a malformed row's text for it, and a row that is not UTF-8
        # then prints its bytes to stderr; a malformed row is an ArrowInvalid, and the stdlib reader reads
        # the text instead (it drops or marks such rows)
        read = pcsv.ReadOptions(column_names=names, skip_rows=1 if skip_header else 0, block_size=self.block_bytes,
                                use_threads=True)
        parse = pcsv.ParseOptions(newlines_in_values=True)
        convert = pcsv.ConvertOptions(include_columns=list(dict.fromkeys(pick.values())), column_types=types,
                                      null_values=[], true_values=[], false_values=[], strings_can_be_null=False,
                                      quoted_strings_can_be_null=False)
        try:
            raw = source()
        except OSError as exc:
            raise self._read_error(exc, gz) from None
        try:
            try:
                stream = pa.CompressedInputStream(raw, "gzip") if gz else raw
                reader = pcsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
                for batch in reader:
                    cols = {c: _to_numpy(_arrow_ints(batch.column(pick[c])) if c in self.int_columns
                                         else batch.column(pick[c])) for c in self.columns}
                    del batch  # only the numpy views (zero-copy) keep the batch's buffers alive
                    yield cols, raw.tell()
                    del cols
            except pa.ArrowInvalid:  # a cell that is not a plain integer, a malformed row, bad UTF-8 ...
                raise _Fallback() from None
            except (OSError, EOFError, pa.ArrowException) as exc:
                raise self._read_error(exc, gz) from None
        finally:
            raw.close()

    def _csv_stdlib(self, source, gz: bool, header: list[str], skip_header: bool):
        pos = [header.index(c) for c in self.columns]
        rows = self.batch_rows
        width = len(header)
        refuse = self.malformed == "error"

        def batch(cols):
            return {c: np.array(v, dtype=str) for c, v in zip(self.columns, cols)}

        try:
            with source() as raw:
                fh = gzip.GzipFile(fileobj=raw) if gz else raw
                reader = csv.reader(io.TextIOWrapper(fh, encoding="utf-8-sig", newline=""))
                if skip_header:
                    next(reader, None)
                cols, k = [[] for _ in pos], 0
                for row in reader:
                    if len(row) != width:
                        if row and refuse:  # an empty line is no row; a malformed row is never counted
                            yield MALFORMED, raw.tell()
                            refuse = False  # once is enough
                        continue
                    for j, p in enumerate(pos):
                        cols[j].append(row[p].strip())
                    k += 1
                    if k == rows:
                        yield batch(cols), raw.tell()
                        cols, k = [[] for _ in pos], 0
                if k:
                    yield batch(cols), raw.tell()
        except (ValueError, EOFError, OSError, csv.Error, zlib.error) as exc:  # UnicodeDecodeError is a ValueError
            raise self._read_error(exc, gz) from None

    # -- Parquet ----------------------------------------------------------------------------------------
    def _parquet(self):
        import pyarrow as pa
        import pyarrow.parquet as pq

        done = 0
        for path, keys, size in self.parts:
            what = repr(path)
            try:
                pf = _parquet_file(pq, path)
                present = [c for c in self.columns if c not in keys]
                n_rows = max(pf.metadata.num_rows, 1)
                seen = 0
                for batch in pf.iter_batches(batch_size=self.batch_rows, columns=present, use_threads=True):
                    cols = {c: _to_numpy(batch.column(c)) for c in present}
                    for c in self.columns:
                        if c in keys:  # a hive partition key (folder name k=v): the same text on every row
                            cols[c] = np.full(batch.num_rows, keys[c])
                    seen += batch.num_rows
                    yield cols, done + size * min(seen, n_rows) // n_rows
            except (OSError, EOFError, ValueError, pa.ArrowException) as exc:
                raise _problem(self.spec, what, "holds damaged Parquet data (a page or its header cannot be "
                               f"decoded: {type(exc).__name__}; details withheld: they may quote the data)") from None
            done += size


class _CsvBlock(_Table):
    """One block of whole lines of a spec's CSV file, read as :class:`_Table` reads the file.

    The Dask engine's tasks read a plain CSV file this way: the same
    readers, so the same rows (malformed ones included) as the local
    engine.  ``header`` is the file's header line, read once by the driver;
    ``first`` says the block begins with it.
    """

    def __init__(self, spec, columns, header, data: bytes, first: bool, *, int_columns=(), arrow=None,
                 malformed="error"):
        self._setup(spec, columns, int_columns, None, None, arrow, malformed)
        self.kind, self.what, self.key = "csv", repr(spec.source["path"]), "dataset.path"
        self.header, self.data, self.first = list(header), data, first
        self.total = len(data)

    def _csv(self):
        def arrow_source():
            import pyarrow as pa

            return pa.BufferReader(self.data)

        yield from self._csv_text(self.header, False, arrow_source, lambda: io.BytesIO(self.data),
                                  skip_header=self.first)


def _parquet_file(pq, path):
    """A ``ParquetFile`` that streams: no pre-buffering, column chunks read ``PARQUET_BUFFER_BYTES`` at a time.

    pyarrow (>= 15) pre-buffers by default: ``iter_batches`` then first
    reads every requested column chunk of the whole file into memory.
    """
    kw = {"pre_buffer": False, "buffer_size": PARQUET_BUFFER_BYTES}
    try:
        return pq.ParquetFile(path, page_checksum_verification=True, **kw)
    except TypeError:  # an older pyarrow
        return pq.ParquetFile(path, **kw)


def _parquet_parts(spec, columns) -> list:
    """``(file, hive partition keys, size)`` of every file of the spec's Parquet source, each checked.

    Every file's footer is read here, before any row: a truncated or
    non-Parquet file and a file that lacks a needed column are reported
    with the file's name.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"{spec.path}: dataset.path: reading Parquet needs pyarrow: pip install 'blowfish-privacy[dask]'"
        ) from None
    root = Path(spec.source["path"])
    if root.is_file():
        files = [(root, {})]
    elif root.is_dir():
        files = []
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).parts
            if not p.is_file() or any(part.startswith(("_", ".")) for part in rel):
                continue  # metadata and hidden files, as pyarrow skips them
            keys = dict(part.split("=", 1) for part in rel[:-1] if "=" in part)
            files.append((p, keys))
        if not files:
            raise _problem(spec, repr(str(root)), "holds no Parquet files")
    else:
        raise _problem(spec, repr(str(root)), "cannot be opened (no such file or folder)")
    parts = []
    for p, keys in files:
        try:
            names = _parquet_file(pq, p).schema_arrow.names
            size = p.stat().st_size
        except PermissionError as exc:
            raise _problem(spec, repr(str(p)), f"cannot be opened ({exc.strerror})") from None
        except Exception:  # pyarrow raises many kinds; their text may quote the file
            raise _problem(spec, repr(str(p)), "is not a readable Parquet file (truncated, damaged or not "
                           "Parquet)") from None
        _check_columns(columns, list(names) + [k for k in keys if k not in names], spec, repr(str(p)))
        parts.append((str(p), {k: v for k, v in keys.items() if k not in names}, size))
    return parts


def _prefetch(batches, depth: int = 2):
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
    got = {c: [] for c in columns}
    table = _Table(spec, columns, malformed=malformed)
    for cols, _ in table:
        if cols is MALFORMED:
            raise table._fail("holds malformed rows (more or fewer fields than the header line); the rows are "
                              "not shown")
        if cols is RESTART:
            got = {c: [] for c in columns}
            continue
        for c in columns:
            got[c].append(cols[c])
    return {c: np.concatenate(v) if v else np.array([], dtype=str) for c, v in got.items()}


def _unreadable(spec, exc) -> DataError:
    return DataError(f"{spec.path}: dataset: cannot read the data in {_source_text(spec)} "
                     f"({type(exc).__name__}; details withheld: they may quote the data)")


def _check_columns(columns, available, spec, what) -> None:
    # the header is not quoted back: in a file without one, it is the first record
    available = list(available)
    for c in columns:
        attr = next((a for a, col in spec.columns.items() if col == c), c)
        if c not in available:
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} not found in {what} (the header is not "
                            "shown: in a file without one it would be data); check the header line, "
                            f"domain.{attr}.column and dataset.columns")
        if available.count(c) > 1:
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} appears more than once in the header of "
                            f"{what}; rename one of them")


def _source_text(spec) -> str:
    src = spec.source
    return f"bundled dataset {src['bundled']!r}" if "bundled" in src else repr(src["path"])

