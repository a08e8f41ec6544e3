"""CSV text (plain, gzip, a block of whole lines) read in batches of bounded size: pyarrow's reader, else the stdlib's.

Each function takes the :class:`~._reading.Table` being read: its
columns, bounds and value-free errors (``table.fail``, ``table.too_long``,
``table.read_error``).

Every CSV reader is bounded by the longest line it takes, the spec's
``dataset.max_line_bytes`` (:func:`~._reading.max_line_bytes`): a line, or a record
whose quoted cells hold line breaks, longer than that refuses the read in
one line naming the key, after at most that many bytes of it were held.
pyarrow's reader works in blocks of half the limit (it never takes a
record longer than two blocks: a longer one is read by the stdlib reader,
which refuses it), and the stdlib reader reads fixed chunks of bytes and
cuts lines itself, never asking for a whole line of unknown length.  The
header record is read apart, up to :data:`HEADER_MAX_BYTES` (or the line
limit when that is larger), and only the fields that name needed columns
are kept, so a header of a million columns costs little more than its
bytes; the data are then read from the first byte after it.

pyarrow's reader is given the text by a :class:`Feed`, which looks at
each chunk once (``bytes.find``, ``isascii``: no copy, no work per cell):
up to the first ``"`` records are cut at line breaks (the fast parser), up
to the first ``0x`` / ``0X`` the integer columns are parsed as int64
directly (pyarrow would read ``0x1f`` as 31, which the text path refuses),
and up to the first byte that is not UTF-8 no text cell is checked again.
From the start of the line holding the first of these, the rest is read
with the careful options, so the rows are those of the stdlib reader
whatever the text holds.

Every record after the header is a row, and counts once whatever it
holds: an empty line is a row of empty cells (as pyarrow reads it).  A CSV
row with more or fewer fields than the header line is *malformed*:
pyarrow's reader hands such a file to the stdlib reader (as it does a cell
it does not take), which gives the row with empty placeholder cells and
marks it in the batch's mask (``columns[MALFORMED]``): each of its cells
is then invalid, handled by its attribute's rule, and the run is refused
when an attribute it reads has ``invalid = "error"`` (see
:func:`.._aggregate.malformed_mode`).  No cell of a malformed row reaches
the map step.

Whether a read is refused never depends on the cells after the header:
the stdlib reader decodes text with ``errors="surrogateescape"`` (an
undecodable cell of a read column is an invalid cell, a cell of another
column is never looked at), takes fields as long as the line limit, and
gives every record, malformed or not.  What may refuse a read: properties
of the file found before any row is read (it cannot be opened, is empty,
UTF-16, binary or not gzip, its header is too long or not UTF-8, a needed
column is missing), a line longer than ``dataset.max_line_bytes`` (the
one refusal that depends on the text after the header: documented and
configurable), and a file that cannot be read to its end (an I/O error, a
damaged gzip stream or Parquet page).  The Dask engine reads a CSV file in blocks of whole lines with the same
readers (:func:`read_block`), so every engine sees the same rows.
"""

from __future__ import annotations

import csv
import gzip
import zlib
from pathlib import Path

import numpy as np

from .._aggregate import MALFORMED, RESTART
from ..errors import DataError
from .._arrow_columns import Fallback, arrow_ints, text_cells, to_numpy
from ._csv_feed import HEX, QUOTE, Feed
from ._read_errors import check_columns
from ._csv_lines import (
    LINE_CHUNK_BYTES,
    CsvHeader,
    LineTooLong,
    line_lists,
    line_start,
    scan_header,
    text_lines,
)

__all__ = ["ARROW_MAX_COLUMNS", "BATCH_CHARS", "HEADER_MAX_BYTES", "arrow_batches", "csv_batches", "read_block",
           "read_header", "stdlib_batches"]

#: The longest CSV header record read (bytes), unless ``dataset.max_line_bytes`` is larger: a header of
#: 10**6 columns named in a few characters each (about 8 MiB) is read whole.  Only the fields naming a
#: needed column are kept, so the header costs about twice its bytes while it is read.
HEADER_MAX_BYTES = 64 << 20
#: Widest CSV header (fields) read by pyarrow: its reader costs memory per column of the file, read or not
#: (about 240 MiB more for 10**6 columns), so a wider file is read by the stdlib reader, which holds one row.
ARROW_MAX_COLUMNS = 1 << 16
#: Cells of one column of a stdlib reader's batch times its longest cell (characters): a batch is cut when
#: it would hold more, so the batch's fixed-width numpy text array stays within 4 bytes times this.
BATCH_CHARS = 1 << 22


def csv_batches(table, header: CsvHeader, gz: bool, arrow_source, byte_source, *, skip: int):
    """Batches of CSV text whose fields are placed by ``header``: pyarrow's reader, else the stdlib's.

    ``arrow_source`` and ``byte_source`` open the raw bytes (a pyarrow
    input file, a Python binary file); the (decompressed) text's first
    ``skip`` bytes, its header record, are not read.
    """
    if table.arrow and header.width <= ARROW_MAX_COLUMNS:
        started = False
        try:
            for item in arrow_batches(table, arrow_source, gz, header, skip):
                started = True
                yield item
            return
        except Fallback:
            if started:  # batches already given hold rows the stdlib reader reads again
                yield RESTART, 0
    yield from stdlib_batches(table, byte_source, gz, header, skip)


#: Delimiters a CSV file is often written with instead of the comma, as messages name them.
OTHER_DELIMITERS = {b";": "';'", b"\t": "a tab", b"|": "'|'"}


def other_delimiter(first: bytes, missing: list) -> str | None:
    """How to name the delimiter the header line ``first`` seems to use, when the needed columns ``missing``
    from it appear in it split by that delimiter (None otherwise, and when nothing is missing)."""
    if not missing:
        return None
    for delim, name in OTHER_DELIMITERS.items():
        if delim not in first:
            continue
        fields = {f.strip(b"\r\n\t \xef\xbb\xbf\"").decode("utf-8", "replace") for f in first.split(delim)}
        if all(c in fields for c in missing):
            return name
    return None


def read_header(table, path: Path, gz: bool) -> CsvHeader:
    """The header record of the CSV file: its width, where the needed columns are, where the data begin.

    At most ``max(HEADER_MAX_BYTES, limit)`` bytes are read for it: a
    longer header refuses the read (:data:`HEADER_MAX_BYTES`).
    """
    limit = max(HEADER_MAX_BYTES, table.limit)
    try:
        with open(path, "rb") as raw:
            if gz and raw.read(2) != b"\x1f\x8b":
                raise table.fail("is named .gz but is not gzip-compressed")
            raw.seek(0)
            fh = gzip.GzipFile(fileobj=raw) if gz else raw
            lines = (line for chunk in line_lists(fh, limit) for line in chunk)
            first = next(lines, b"")
            if not first.strip(b"\r\n\t \xef\xbb\xbf"):
                raise table.fail("is empty (not even a header line)")
            if first.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise table.fail("is UTF-16 text; save it as UTF-8")
            if b"\x00" in first:
                raise table.fail("is not CSV text (it holds NUL bytes: binary data, or UTF-16 without a "
                                 "byte-order mark)")
            header = scan_header(_chain(first, lines), limit, table.columns)
            delimiter = other_delimiter(first, [c for c in table.columns if c not in header.found])
            if delimiter is not None:  # refused here, where the header line is at hand, with the hint
                check_columns(table.columns, header.found, table.spec, table.what, delimiter=delimiter)
            return header
    except DataError:
        raise
    except LineTooLong:
        raise table.fail(f"has a header line longer than {limit} bytes, the most read for a header (the larger "
                         f"of {HEADER_MAX_BYTES} bytes and dataset.max_line_bytes); raise "
                         "dataset.max_line_bytes to read it") from None
    except (OSError, EOFError, zlib.error, ValueError, MemoryError) as exc:  # UnicodeDecodeError: ValueError
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise table.fail(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
        raise table.read_error(exc, gz) from None


def arrow_batches(table, source, gz: bool, header: CsvHeader, skip: int):
    """Batches of the CSV text read by pyarrow, the fast parser wherever the text allows it (:class:`Feed`).

    Up to the first ``"`` of the text, records are cut at line breaks
    (``newlines_in_values=False``); up to the first ``0x`` or ``0X``, the
    integer columns are parsed as int64 directly.  From there on the
    careful options read the rest: quoted cells may hold line breaks,
    integer columns are read as text, checked for ``x`` where the text
    held ``0x`` (:func:`arrow_ints`) and cast.  Any cell or row pyarrow
    does not take is a :class:`Fallback` (the stdlib reader reads the
    file).
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = [f"c{i}" for i in range(header.width)]  # distinct, whatever the header holds
    pick = {c: names[header.positions[c]] for c in table.columns}
    ints = [c for c in table.columns if c in table.int_columns]
    # no invalid_row_handler: pyarrow decodes a malformed row's text for it, and a row that is not UTF-8
    # then prints its bytes to stderr; a malformed row is an ArrowInvalid, and the stdlib reader reads
    # the text instead (it marks such rows).  A record longer than two blocks (so longer than the line
    # limit) is an ArrowInvalid too: the stdlib reader refuses it, or takes it when within the limit; and
    # so is a read column's cell that is not UTF-8.  An empty line is a row of empty cells (every record
    # counts), as the stdlib reader reads it
    read = pcsv.ReadOptions(column_names=names, block_size=table.block_bytes, use_threads=True)
    include = list(dict.fromkeys(pick.values()))
    text = pa.dictionary(pa.int32(), pa.string())

    def options(careful: bool, typed: bool, checked: bool):
        # typed: the integer columns as int64 (pyarrow's parser also takes hexadecimal, '0x1f' is 31, which
        # the text path refuses: only on text without '0x' / '0X'); else every column as text.  checked:
        # pyarrow checks that each text cell is UTF-8 (else the feed checked the whole text once)
        # a text column read by no integer attribute is parsed as a dictionary: its distinct values once
        types = {pick[c]: (pa.int64() if typed else pa.string()) if c in table.int_columns else text
                 for c in table.columns}
        parse = pcsv.ParseOptions(newlines_in_values=careful, ignore_empty_lines=False)
        convert = pcsv.ConvertOptions(include_columns=include, column_types=types, null_values=[], true_values=[],
                                      false_values=[], strings_can_be_null=False,
                                      quoted_strings_can_be_null=False, check_utf8=checked)
        return {"read_options": read, "parse_options": parse, "convert_options": convert}

    def at_data(raw):
        """The stream of the text after its first ``skip`` bytes (the header record)."""
        if not gz:
            raw.seek(skip)
            return raw
        stream = pa.CompressedInputStream(raw, "gzip")
        left = skip
        while left > 0:  # the header record, decompressed and dropped a chunk at a time
            got = len(stream.read(min(left, LINE_CHUNK_BYTES)))
            if not got:
                break
            left -= got
        return stream

    try:
        raw = source()
    except OSError as exc:
        raise table.read_error(exc, gz) from None
    try:
        try:
            # no text column: no UTF-8 check at all (pyarrow's int64 parser takes ASCII digits only)
            careful, typed, checked = False, bool(ints), len(ints) == len(table.columns)
            feed = Feed(at_data(raw), watch_quote=True, watch_hex=typed, watch_utf8=not checked)
            while True:
                if feed.prime(table.block_bytes):
                    reader = pcsv.open_csv(pa.PythonFile(feed, mode="r"), **options(careful, typed, checked))
                    for batch in reader:
                        cols = {}
                        for c in table.columns:
                            col = batch.column(pick[c])
                            if c not in table.int_columns:
                                cols[c] = text_cells(col)
                                continue
                            if not typed:
                                col = arrow_ints(col, feed.hex_seen)
                            cols[c] = to_numpy(col)
                        del batch, col  # only the numpy views (zero-copy) keep the batch's buffers alive
                        yield cols, raw.tell()
                        del cols
                    del reader
                if feed.stopped is None:
                    return
                if feed.stopped == QUOTE:  # no cut after a quote: nothing is watched any more
                    careful, typed, checked = True, False, True
                elif feed.stopped == HEX:
                    typed = False
                else:
                    checked = True
                feed = feed.resume(watch_quote=not careful, watch_hex=typed, watch_utf8=not checked)
        except (OSError, EOFError, MemoryError, pa.ArrowException):
            # a cell that is not a plain integer, a malformed row, bad UTF-8 ...: the stdlib reader takes
            # whatever the text holds.  And a failure to read (a damaged gzip stream, an I/O error) is judged
            # by the stdlib reader too, which refuses it or not (gzip's zero padding after the stream, which
            # pyarrow refuses, is taken): the outcome never depends on whether a cell sent the file there
            raise Fallback() from None
    finally:
        raw.close()


def stdlib_batches(table, source, gz: bool, header: CsvHeader, skip: int):
    """Batches of the CSV text read by ``csv.reader``: every record, none refused for what its cells hold.

    A record with as many fields as the header gives its cells
    (stripped); an empty line a row of empty cells (as pyarrow reads
    it); any other record is malformed: empty placeholder cells,
    marked in the batch's ``MALFORMED`` mask.
    """
    pos = [header.positions[c] for c in table.columns]
    rows = table.batch_rows
    width = header.width
    limit = table.limit
    if csv.field_size_limit() <= limit:  # a cell may be as long as a line (pyarrow sets no limit either)
        csv.field_size_limit(limit + 1)
    used = [0]  # bytes of the record being read (see text_lines)
    empty = [""] * len(pos)

    def batch(cols, bad):
        out = {c: np.array(v, dtype=str) for c, v in zip(table.columns, cols)}
        if bad:
            mask = np.zeros(len(cols[0]) if cols else 0, dtype=bool)
            mask[bad] = True
            out[MALFORMED] = mask
        return out

    try:
        with source() as raw:
            fh = gzip.GzipFile(fileobj=raw) if gz else raw
            if skip:
                fh.seek(skip)  # gzip: decompressed and dropped a chunk at a time
            reader = csv.reader(text_lines(fh, limit, used))
            cols, bad, k, longest = [[] for _ in pos], [], 0, 0
            for row in reader:
                used[0] = 0
                if len(row) == width:
                    for j, p in enumerate(pos):
                        cell = row[p].strip()
                        cols[j].append(cell)
                        if len(cell) > longest:
                            longest = len(cell)
                else:  # an empty line: a row of empty cells; else malformed: every cell invalid
                    if row:
                        bad.append(k)
                    for j, cell in enumerate(empty):
                        cols[j].append(cell)
                k += 1
                # a numpy text array is as wide as its longest cell: bound the cells times that too
                if k == rows or k * longest >= BATCH_CHARS:
                    yield batch(cols, bad), raw.tell()
                    cols, bad, k, longest = [[] for _ in pos], [], 0, 0
            if k:
                yield batch(cols, bad), raw.tell()
    except LineTooLong:
        raise table.too_long() from None
    except (ValueError, EOFError, OSError, csv.Error, zlib.error, MemoryError) as exc:
        # the file cannot be read to its end (I/O, a damaged gzip stream); no cell is refused for its text
        raise table.read_error(exc, gz) from None


def _chain(first, rest):
    yield first
    yield from rest


def read_block(table, path: str, start: int, stop: int, low: int, size: int) -> bytes:
    """The whole lines of the file that begin in ``[start, stop)`` (a Dask task's share of a CSV file).

    Each end is moved to the first line start at or after it
    (:func:`line_start`), so neighbouring blocks share their boundary and
    every line is read once; a block holds at most ``stop - start`` bytes
    plus one line.  A line longer than the limit is refused as the readers
    refuse it.
    """
    try:
        with open(path, "rb") as fh:
            begin = line_start(fh, start, low, size, table.limit)
            end = line_start(fh, stop, low, size, table.limit)
            if end <= begin:
                return b""
            fh.seek(begin)
            return fh.read(end - begin)
    except LineTooLong:
        raise table.too_long() from None
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise table.fail(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
        raise table.read_error(exc, False) from None

