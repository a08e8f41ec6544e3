"""Reading a spec's data source in batches of bounded size (CSV, gzip CSV, Parquet, bundled datasets).

The local engine never holds the table: the needed columns are read in
batches and folded into the aggregates (``partition_aggregates(...,
into=...)``), so its peak memory is the aggregates plus one batch,
whatever the number of rows.  A "column" need (pufferfish_sum) keeps the
column's values, 8 bytes a row: only histograms are bounded.

Every failure to read is a :class:`DataError` naming the spec file, the
data file and the problem, never a value or a row.  pyarrow is optional:
it is imported where it is used, and the stdlib CSV reader serves without it.

Every CSV reader is bounded by the longest line it takes, the spec's
``dataset.max_line_bytes`` (:func:`max_line_bytes`): a line, or a record
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

pyarrow's reader is given the text by a :class:`_Feed`, which looks at
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
damaged gzip stream or Parquet page).
The Dask engine reads a CSV file in blocks of whole lines with the same
readers (:class:`CsvBlock`, :func:`read_block`), and a Parquet file in
slices of its row groups with the same reader (:class:`ParquetSlice`), so
both engines see the same rows.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import queue
import re
import threading
import zlib
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .._aggregate import MALFORMED, RESTART, TEXT_CELL_CHARS
from ..errors import DataError
from .spec import BUNDLED

try:
    from .spec import DEFAULT_MAX_LINE_BYTES
except ImportError:  # pragma: no cover - a spec module without the key
    #: Default of ``dataset.max_line_bytes``: the longest CSV line (or record) read, in bytes.
    DEFAULT_MAX_LINE_BYTES = 1 << 20

#: Rows per batch of the Parquet reader and of the stdlib CSV reader (a few MiB of int64 columns).
BATCH_ROWS = 1 << 18
#: Bytes of CSV text per block of pyarrow's streaming CSV reader.  Its I/O thread reads up to 32 blocks
#: ahead of the parser, whatever we consume (a fixed queue, not an option: ARROW-12090), and page-cached
#: text arrives faster than it is parsed: with 16 MiB blocks that queue alone held up to 512 MiB, the
#: peak then growing with the file up to that size.  1 MiB blocks bound it to 32 MiB and parse as fast.
#: The block is at most half the line limit (see :func:`max_line_bytes`).
CSV_BLOCK_BYTES = 1 << 20
#: Bytes the Parquet reader reads at a time inside a column chunk (``ParquetFile(buffer_size=...)``):
#: pages are streamed, so a file written as one huge row group is bounded too.
PARQUET_BUFFER_BYTES = 1 << 20
#: The longest CSV header record read (bytes), unless ``dataset.max_line_bytes`` is larger: a header of
#: 10**6 columns named in a few characters each (about 8 MiB) is read whole.  Only the fields naming a
#: needed column are kept, so the header costs about twice its bytes while it is read.
HEADER_MAX_BYTES = 64 << 20
#: Widest CSV header (fields) read by pyarrow: its reader costs memory per column of the file, read or not
#: (about 240 MiB more for 10**6 columns), so a wider file is read by the stdlib reader, which holds one row.
ARROW_MAX_COLUMNS = 1 << 16
#: Bytes the stdlib CSV reader reads at a time; lines are cut from these chunks.
LINE_CHUNK_BYTES = 1 << 16
#: Cells of one column of a stdlib reader's batch times its longest cell (characters): a batch is cut when
#: it would hold more, so the batch's fixed-width numpy text array stays within 4 bytes times this.
BATCH_CHARS = 1 << 22

_GZIP_PROBLEM = "is not a readable gzip file (truncated, damaged or not gzip-compressed)"


def max_line_bytes(spec) -> int:
    """The longest CSV line (or record) the readers take for ``spec``: its ``dataset.max_line_bytes``."""
    limit = getattr(spec, "max_line_bytes", None)
    return int(limit) if limit else DEFAULT_MAX_LINE_BYTES


class _Fallback(Exception):
    """pyarrow's typed CSV reading met a cell or a row it does not take: read again with the stdlib reader.

    The stdlib reader takes every record pyarrow takes and more (malformed
    rows, undecodable text, cells that are not plain integers), giving the
    same cells, so which reader read a file never shows in the result.
    """


class _TooLong(Exception):
    """A line (or record) of CSV text is longer than the reader's limit."""


class _Header(NamedTuple):
    """What the readers need of a CSV header record (the names themselves are not kept).

    ``width``: its number of fields; ``positions``: the first field of each
    needed column that it names; ``found``: the needed names it holds, once
    per field naming them (for :func:`check_columns`); ``end``: the bytes
    of (decompressed) text before the first data line.
    """

    width: int
    positions: dict
    found: list
    end: int


def _line_lists(fh, limit: int, chunk: int = LINE_CHUNK_BYTES):
    """The lines of a binary file, a list of them per chunk read; each with its line break.

    A line ends at ``\\n``, ``\\r`` or ``\\r\\n`` (as the stdlib and pyarrow
    CSV readers end them).  A line longer than ``limit`` bytes (its line
    break included) raises :class:`_TooLong` once ``limit`` bytes of it
    were read, so at most about ``limit + chunk`` bytes are held.
    """
    read = fh.read
    pending: list = []  # pieces of a line that goes on in the next chunk
    size = 0
    check_all = limit <= chunk + 1  # else only a line made of pieces can be too long
    carry = b""
    while True:
        fresh = read(chunk)
        data = carry + fresh if carry else fresh
        carry = b""
        if not data:
            break
        if fresh and data[-1] == 13:  # b"\r": cut with the next chunk, where its "\n" may be
            carry, data = b"\r", data[:-1]
            if not data:
                continue
        lines = data.splitlines(True)
        tail = lines[-1]
        open_tail = tail[-1] not in (10, 13)
        if open_tail:
            lines.pop()
        if pending and lines:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending, size = [], 0
            if len(lines[0]) > limit:
                raise _TooLong()
        if check_all and any(len(line) > limit for line in lines):
            raise _TooLong()
        if lines:
            yield lines
        if open_tail:
            pending.append(tail)
            size += len(tail)
            if size > limit:
                raise _TooLong()
    if pending:
        yield [b"".join(pending)]


def _text_lines(fh, limit: int, used: list):
    """The lines of a binary file as UTF-8 text, for ``csv.reader``; ``used[0]`` counts the record's bytes.

    Bytes that are not UTF-8 are kept as lone surrogates
    (``errors="surrogateescape"``): such a cell is never a label nor a
    number, so it is an invalid cell of its column, and a cell of a column
    no release reads is never looked at.  The caller sets ``used[0] = 0``
    after each record: a record whose lines (quoted cells holding line
    breaks) add up to more than ``limit`` bytes raises :class:`_TooLong` as
    a long line does.
    """
    for lines in _line_lists(fh, limit):
        for line in lines:
            n = used[0] + len(line)
            if n > limit:
                raise _TooLong()
            used[0] = n
            yield line.decode("utf-8", "surrogateescape")


def _scan_header(lines, limit: int, wanted) -> _Header:
    """The header record of CSV text (``csv.reader``'s default dialect), keeping only the wanted names.

    ``lines`` are the text's lines (bytes, each with its line break).
    Fields are cut as the stdlib reader cuts them (quoted fields may hold
    delimiters, doubled quotes and line breaks; text after a closing quote
    joins the field), each decoded as UTF-8 (a byte-order mark before the
    first is dropped) and stripped; only one field at a time is held.
    Raises :class:`_TooLong` when the record is longer than ``limit``
    bytes, UnicodeDecodeError when a field is not UTF-8.
    """
    wanted = set(wanted)
    positions: dict = {}
    found: list = []
    width = 0
    field: list = []
    end = 0
    state = 0  # 0: a field starts, 1: in an unquoted field, 2: in a quoted field, 3: after a quote in one

    def save():
        nonlocal width, field
        name = b"".join(field).decode("utf-8").strip() if field else ""
        field = []
        if name in wanted:
            found.append(name)
            positions.setdefault(name, width)
        width += 1

    for line in lines:
        i = 3 if end == 0 and line.startswith(b"\xef\xbb\xbf") else 0
        end += len(line)
        if end > limit:
            raise _TooLong()
        n = len(line)
        while True:
            if state == 2:  # inside quotes: up to the next quote, or on to the next line
                j = line.find(b'"', i)
                if j < 0:
                    field.append(line[i:])
                    break
                field.append(line[i:j])
                i, state = j + 1, 3
                continue
            if i >= n:  # the text ends without a line break
                save()
                return _Header(width, positions, found, end)
            if state == 3:
                if line[i] == 34:  # a doubled quote
                    field.append(b'"')
                    i, state = i + 1, 2
                    continue
                state = 1  # a delimiter or a line break ends the field; other text joins it
            elif state == 0 and line[i] == 34:
                i, state = i + 1, 2
                continue
            m = _UNQUOTED.match(line, i)
            field.append(m.group())
            i, state = m.end(), 1
            if i >= n:
                continue
            save()
            if line[i] != 44:  # "\r" or "\n": the record ends with this line
                return _Header(width, positions, found, end)
            i, state = i + 1, 0
    if state == 2:  # the text ends inside quotes: the field is kept, as the stdlib reader keeps it
        save()
    return _Header(width, positions, found, end)


_UNQUOTED = re.compile(rb"[^,\r\n]*")
def _bundled_file(name: str):
    """A context manager giving the path of a bundled dataset (a gzip CSV)."""
    return resources.as_file(resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]))


def bundled_text(name: str) -> str:
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


def to_numpy(arr) -> np.ndarray:
    """A pyarrow array as numpy, as ``ChunkedArray.to_numpy`` gives it (nulls of an int column: NaN).

    A text column holding bytes that are not UTF-8 (a Parquet writer need
    not check) gives them as lone surrogates, as the CSV reader does: an
    invalid cell, never a failure to read.
    """
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    dtype = _NUMERIC.get(str(arr.type))
    if dtype is not None and arr.null_count == 0:
        # a read-only view of the values; to_numpy (even zero_copy_only=True) imports pandas: 0.25 s, 50 MiB
        data = arr.buffers()[1]
        return np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    try:
        return arr.to_numpy(zero_copy_only=False)
    except (pa.ArrowException, UnicodeDecodeError):
        text = {str(pa.string()): pa.binary(), str(pa.large_string()): pa.large_binary()}.get(str(arr.type))
        if text is None:
            raise
        return np.array([None if v is None else v.decode("utf-8", "surrogateescape")
                         for v in arr.view(text).to_pylist()], dtype=object)


def _text_cells(col) -> np.ndarray:
    """A pyarrow text column (valid UTF-8, no nulls; plain or dictionary) as a numpy text array.

    The cells are what ``to_numpy`` gives (one str each) put in a numpy
    text array, as the map step does with them: each distinct value is
    made a str once (the CSV reader parses text columns as dictionaries),
    not each cell.  Cells longer than :data:`TEXT_CELL_CHARS` (which the
    map step reads one by one) keep the per-cell path.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):
        enc = col
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        enc = pc.dictionary_encode(col)
    else:
        return to_numpy(col)
    if len(col) == 0 or col.null_count:
        return to_numpy(col)
    values = enc.dictionary
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return to_numpy(col)
    if len(values) and pc.max(pc.utf8_length(values)).as_py() > TEXT_CELL_CHARS:
        return to_numpy(col)
    table = np.array(values.to_pylist(), dtype=str)
    return table[to_numpy(enc.indices)]


_NUMERIC = {name: np.dtype(name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                              "uint64")}
_NUMERIC.update({"float": np.dtype(np.float32), "double": np.dtype(np.float64)})


def _arrow_ints(col, check: bool = True):
    """A pyarrow text column of plain integers as int64, else :class:`_Fallback` (the text path reads it).

    pyarrow's integer parser takes what Python's ``int`` takes but for
    surrounding spaces, underscores and a ``+`` (refused: the text path
    then reads them as ``int`` does) and hexadecimal, ``0x1f`` (taken as
    31: refused here, as any cell with an ``x``, so that the value is read
    as the text path reads it, and refused).  ``check=False`` when the
    text the column was parsed from holds no ``0x`` nor ``0X`` (see
    :class:`_Feed`): no cell can then be read as hexadecimal.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if check and _has_x(col.buffers()[2]):
        raise _Fallback()
    return pc.cast(col, pa.int64())  # a cell that is not an integer: ArrowInvalid, then _Fallback


#: Bytes of a text buffer looked at a time by :func:`_has_x`: its temporaries stay this small.
_X_SCAN_BYTES = 1 << 16


def _has_x(buf) -> bool:
    """Whether a buffer (a pyarrow text column's data) holds an ``x`` or an ``X``, without copying it."""
    if buf is None or not buf.size:
        return False
    view = np.frombuffer(buf, dtype=np.uint8)
    tmp = np.empty(min(view.size, _X_SCAN_BYTES), dtype=np.uint8)
    for start in range(0, view.size, _X_SCAN_BYTES):
        part = view[start:start + _X_SCAN_BYTES]
        low = np.bitwise_or(part, 0x20, out=tmp[:part.size])
        if (low == 0x78).any():
            return True
    return False


#: Why a :class:`_Feed` stopped: a ``"`` (quoted cells may hold line breaks), ``0x`` / ``0X`` (a cell
#: pyarrow's int64 parser would read as hexadecimal), or bytes that are not UTF-8 (pyarrow must check text cells).
_QUOTE, _HEX, _UTF8 = "quote", "hex", "utf8"


def _first_hex(data, start: int = 0) -> int:
    """The position of the first ``0x`` or ``0X`` in ``data`` from ``start`` (of its ``0``), or -1.

    ``x`` and ``X`` are rare in numeric text: looked for with ``bytes.find``
    (memchr) first; only where one is found is the pair searched for.
    """
    lo = data.find(b"x", start)
    up = data.find(b"X", start)
    if lo < 0 and up < 0:
        return -1
    first = min(k for k in (lo, up) if k >= 0)
    m = _HEX_PAIR.search(data, max(start, first - 1))
    return -1 if m is None else m.start()


_HEX_PAIR = re.compile(rb"0[xX]")


def _whole_lines(data, end: int) -> int:
    """The length of the longest prefix of ``data[:end]`` made of whole lines (line breaks included).

    A ``\r`` that is the last byte of ``data`` ends no line yet (its ``\n``
    may follow), so a cut never parts ``\r\n``.
    """
    j = max(data.rfind(b"\n", 0, end), data.rfind(b"\r", 0, end))
    if j >= 0 and j + 1 == len(data) and data[j] == 13:
        j = max(data.rfind(b"\n", 0, j), data.rfind(b"\r", 0, j))
    return j + 1


class _Feed:
    """The CSV text after the header, handed to pyarrow's reader up to the first text that needs a slower parser.

    pyarrow's fast parser (``newlines_in_values=False``) cuts records at
    line breaks whatever the quotes, and its int64 parser reads ``0x1f`` as
    31: both are exact only on text that holds no ``"`` (resp. no ``0x`` nor
    ``0X``).  The feed looks for them in every chunk it reads (``bytes.find``
    on the raw bytes: no copy, no per-value work) and, when it meets one it
    watches for, ends its text at the start of that line: everything given
    so far is whole lines read exactly by the fast parser, and the rest
    (:attr:`held` and what the stream still holds) is read by a reader with
    the careful options (:meth:`resume`).  A cut is at a record boundary
    because no ``"`` came before it.

    Every piece given ends at a line break, but a line longer than the
    chunk: such a piece ends inside a line (:attr:`open_line`), and a stop
    inside that line is refused (``OSError``: the file is read by the stdlib
    reader).  ``hex_seen`` tells whether any text read so far holds ``0x`` or
    ``0X``: a text column parsed from that text must then be checked
    (:func:`_arrow_ints`).  Used as ``pa.PythonFile(feed, mode="r")``.
    """

    closed = False

    def __init__(self, stream, *, watch_quote: bool, watch_hex: bool, watch_utf8: bool = False, held: bytes = b"",
                 hex_seen: bool = False):
        self.stream = stream
        self.watch_quote = watch_quote
        self.watch_hex = watch_hex
        self.watch_utf8 = watch_utf8
        self.pending = held  # text read but not given yet: the start of a line
        self.seen = 0  # bytes of pending this feed looked at (a held line is looked at again: other watches)
        self.hex_seen = hex_seen
        self.stopped = None  # _QUOTE or _HEX once the feed ended its text early
        self.done = False
        self.open_line = False
        self.last_zero = False  # the last byte given is a "0"
        self.primed = None  # the first piece, read by prime()
        self.given = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def prime(self, n: int) -> bool:
        """Read the first piece of text; False when there is none (the text ends, or the feed stopped, before it).

        pyarrow skips a byte-order mark at the start of its text (here the
        first cell's): the stdlib reader keeps it, as anywhere else, so such
        text is a :class:`_Fallback`.
        """
        piece = self._read(n)
        if bytes(piece[:3]) == b"\xef\xbb\xbf":
            raise _Fallback()
        self.primed = piece
        return len(piece) > 0

    def read(self, n: int = -1):
        piece = self.primed
        if piece is not None:
            self.primed = None
            return piece
        return self._read(n)

    def _read(self, n: int):
        if self.done:
            return b""
        # never more than n bytes: pyarrow then never takes a record longer than two of its blocks (the line
        # limit is two blocks: a longer record is refused by the stdlib reader)
        want = n if n and n > 0 else CSV_BLOCK_BYTES
        pending = self.pending
        if len(pending) >= want:
            data, final = pending, False
        else:
            fresh = self.stream.read(want - len(pending))
            data = pending + fresh if pending else fresh
            final = not fresh
        start = max(self.seen - 1, 0)  # what was looked at is not again: only a pair may straddle
        stop, why = len(data), None
        if self.watch_quote:
            q = data.find(b'"', start)
            if q >= 0:
                stop, why = q, _QUOTE
        if self.watch_hex or not self.hex_seen:
            h = _first_hex(data, start)
            if self.last_zero and not pending and data[:1] in (b"x", b"X"):
                h = 0  # a pair across the end of a piece given inside a long line: no cut there
            if h >= 0:
                self.hex_seen = True
                if self.watch_hex and h < stop:
                    stop, why = h, _HEX
        tail = 0  # the bytes of a sequence cut at the end of the piece: not given before the next piece
        if self.watch_utf8 and not data.isascii():  # one check of the text, not one per cell
            try:
                # a sequence cut at the end of a piece waits for the next one, but not at the end of the text
                _, used = codecs.utf_8_decode(memoryview(data)[:stop], "strict", final and stop == len(data))
                if stop == len(data):
                    tail = stop - used
            except UnicodeDecodeError as exc:
                stop, why = exc.start, _UTF8
        if why is not None:
            cut = _whole_lines(data, stop)
            if cut == 0 and self.open_line:
                raise OSError("a line longer than the chunk holds text that needs the careful parser")
            self.stopped, self.done = why, True
            self.pending, self.seen = data[cut:], 0
            return self._give(data, cut)
        if final:
            self.done, self.pending = True, b""
            return self._give(data, len(data))
        cut = _whole_lines(data, len(data))
        if cut == 0:  # no line ends in this chunk: give it whole, a part of one long line
            give = len(data) - tail if tail < len(data) else len(data)  # (never an empty piece: that ends the text)
            self.pending, self.seen = data[give:], 0
            self.open_line = True
            return self._give(data, give)
        self.open_line = False
        self.pending = data[cut:]
        self.seen = len(self.pending)
        return self._give(data, cut)

    def _give(self, data, k: int):
        self.given += k
        if k:
            self.last_zero = data[k - 1] == 48
        return data if k == len(data) else memoryview(data)[:k]

    def resume(self, *, watch_quote: bool, watch_hex: bool, watch_utf8: bool = False) -> "_Feed":
        """A feed of the text after what this one gave: its held line, then the rest of the stream."""
        return _Feed(self.stream, watch_quote=watch_quote, watch_hex=watch_hex, watch_utf8=watch_utf8,
                     held=self.pending, hex_seen=self.hex_seen)


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
            with _bundled_file(src["bundled"]) as p:
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
        self.arrow = _have_pyarrow() if arrow is None else arrow
        self.row_groups = None  # Parquet: every row group (see ParquetSlice)

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
        check_columns(self.columns, header.found, self.spec, self.what)

        def arrow_source():
            import pyarrow as pa

            return pa.OSFile(str(path))

        yield from self._csv_text(header, gz, arrow_source, lambda: open(path, "rb"), skip=header.end)

    def _csv_text(self, header: _Header, gz: bool, arrow_source, byte_source, *, skip: int):
        """Batches of CSV text whose fields are placed by ``header``: pyarrow's reader, else the stdlib's.

        ``arrow_source`` and ``byte_source`` open the raw bytes (a pyarrow
        input file, a Python binary file); the (decompressed) text's first
        ``skip`` bytes, its header record, are not read.
        """
        if self.arrow and header.width <= ARROW_MAX_COLUMNS:
            started = False
            try:
                for item in self._csv_arrow(arrow_source, gz, header, skip):
                    started = True
                    yield item
                return
            except _Fallback:
                if started:  # batches already given hold rows the stdlib reader reads again
                    yield RESTART, 0
        yield from self._csv_stdlib(byte_source, gz, header, skip)

    def _fail(self, problem: str) -> DataError:
        return _problem(self.spec, self.what, problem, self.key)

    def _too_long(self) -> DataError:
        return self._fail(f"has a line longer than dataset.max_line_bytes = {self.limit} bytes (the line is not "
                          "shown); raise dataset.max_line_bytes if the data are meant to hold such lines")

    def _read_error(self, exc, gz: bool) -> DataError:
        if isinstance(exc, UnicodeDecodeError):
            return self._fail("is not UTF-8 text (UnicodeDecodeError); save it as UTF-8")
        if gz and isinstance(exc, (OSError, EOFError, zlib.error)) and not isinstance(exc, PermissionError):
            return self._fail(_GZIP_PROBLEM)
        if isinstance(exc, csv.Error):
            return self._fail(f"is not well-formed CSV ({type(exc).__name__}; details withheld: they may quote "
                              "the data)")
        if isinstance(exc, MemoryError):
            return self._fail("cannot be read in the memory available (MemoryError)")
        return self._fail(f"cannot be read ({type(exc).__name__}; details withheld: they may quote the data)")

    def _header(self, path: Path, gz: bool) -> _Header:
        """The header record of the CSV file: its width, where the needed columns are, where the data begin.

        At most ``max(HEADER_MAX_BYTES, limit)`` bytes are read for it: a
        longer header refuses the read (:data:`HEADER_MAX_BYTES`).
        """
        limit = max(HEADER_MAX_BYTES, self.limit)
        try:
            with open(path, "rb") as raw:
                if gz and raw.read(2) != b"\x1f\x8b":
                    raise self._fail("is named .gz but is not gzip-compressed")
                raw.seek(0)
                fh = gzip.GzipFile(fileobj=raw) if gz else raw
                lines = (line for chunk in _line_lists(fh, limit) for line in chunk)
                first = next(lines, b"")
                if not first.strip(b"\r\n\t \xef\xbb\xbf"):
                    raise self._fail("is empty (not even a header line)")
                if first.startswith((b"\xff\xfe", b"\xfe\xff")):
                    raise self._fail("is UTF-16 text; save it as UTF-8")
                if b"\x00" in first:
                    raise self._fail("is not CSV text (it holds NUL bytes: binary data, or UTF-16 without a "
                                     "byte-order mark)")
                return _scan_header(_chain(first, lines), limit, self.columns)
        except DataError:
            raise
        except _TooLong:
            raise self._fail(f"has a header line longer than {limit} bytes, the most read for a header (the larger "
                             f"of {HEADER_MAX_BYTES} bytes and dataset.max_line_bytes); raise "
                             "dataset.max_line_bytes to read it") from None
        except (OSError, EOFError, zlib.error, ValueError, MemoryError) as exc:  # UnicodeDecodeError: ValueError
            if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
                raise self._fail(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
            raise self._read_error(exc, gz) from None

    def _csv_arrow(self, source, gz: bool, header: _Header, skip: int):
        """Batches of the CSV text read by pyarrow, the fast parser wherever the text allows it (:class:`_Feed`).

        Up to the first ``"`` of the text, records are cut at line breaks
        (``newlines_in_values=False``); up to the first ``0x`` or ``0X``, the
        integer columns are parsed as int64 directly.  From there on the
        careful options read the rest: quoted cells may hold line breaks,
        integer columns are read as text, checked for ``x`` where the text
        held ``0x`` (:func:`_arrow_ints`) and cast.  Any cell or row pyarrow
        does not take is a :class:`_Fallback` (the stdlib reader reads the
        file).
        """
        import pyarrow as pa
        import pyarrow.csv as pcsv

        names = [f"c{i}" for i in range(header.width)]  # distinct, whatever the header holds
        pick = {c: names[header.positions[c]] for c in self.columns}
        ints = [c for c in self.columns if c in self.int_columns]
        # no invalid_row_handler: pyarrow decodes a malformed row's text for it, and a row that is not UTF-8
        # then prints its bytes to stderr; a malformed row is an ArrowInvalid, and the stdlib reader reads
        # the text instead (it marks such rows).  A record longer than two blocks (so longer than the line
        # limit) is an ArrowInvalid too: the stdlib reader refuses it, or takes it when within the limit; and
        # so is a read column's cell that is not UTF-8.  An empty line is a row of empty cells (every record
        # counts), as the stdlib reader reads it
        read = pcsv.ReadOptions(column_names=names, block_size=self.block_bytes, use_threads=True)
        include = list(dict.fromkeys(pick.values()))
        text = pa.dictionary(pa.int32(), pa.string())

        def options(careful: bool, typed: bool, checked: bool):
            # typed: the integer columns as int64 (pyarrow's parser also takes hexadecimal, '0x1f' is 31, which
            # the text path refuses: only on text without '0x' / '0X'); else every column as text.  checked:
            # pyarrow checks that each text cell is UTF-8 (else the feed checked the whole text once)
            # a text column read by no integer attribute is parsed as a dictionary: its distinct values once
            types = {pick[c]: (pa.int64() if typed else pa.string()) if c in self.int_columns else text
                     for c in self.columns}
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
            raise self._read_error(exc, gz) from None
        try:
            try:
                # no text column: no UTF-8 check at all (pyarrow's int64 parser takes ASCII digits only)
                careful, typed, checked = False, bool(ints), len(ints) == len(self.columns)
                feed = _Feed(at_data(raw), watch_quote=True, watch_hex=typed, watch_utf8=not checked)
                while True:
                    if feed.prime(self.block_bytes):
                        reader = pcsv.open_csv(pa.PythonFile(feed, mode="r"), **options(careful, typed, checked))
                        for batch in reader:
                            cols = {}
                            for c in self.columns:
                                col = batch.column(pick[c])
                                if c not in self.int_columns:
                                    cols[c] = _text_cells(col)
                                    continue
                                if not typed:
                                    col = _arrow_ints(col, feed.hex_seen)
                                cols[c] = to_numpy(col)
                            del batch, col  # only the numpy views (zero-copy) keep the batch's buffers alive
                            yield cols, raw.tell()
                            del cols
                        del reader
                    if feed.stopped is None:
                        return
                    if feed.stopped == _QUOTE:  # no cut after a quote: nothing is watched any more
                        careful, typed, checked = True, False, True
                    elif feed.stopped == _HEX:
                        typed = False
                    else:
                        checked = True
                    feed = feed.resume(watch_quote=not careful, watch_hex=typed, watch_utf8=not checked)
            except (OSError, EOFError, MemoryError, pa.ArrowException):
                # a cell that is not a plain integer, a malformed row, bad UTF-8 ...: the stdlib reader takes
                # whatever the text holds.  And a failure to read (a damaged gzip stream, an I/O error) is judged
                # by the stdlib reader too, which refuses it or not (gzip's zero padding after the stream, which
                # pyarrow refuses, is taken): the outcome never depends on whether a cell sent the file there
                raise _Fallback() from None
        finally:
            raw.close()

    def _csv_stdlib(self, source, gz: bool, header: _Header, skip: int):
        """Batches of the CSV text read by ``csv.reader``: every record, none refused for what its cells hold.

        A record with as many fields as the header gives its cells
        (stripped); an empty line a row of empty cells (as pyarrow reads
        it); any other record is malformed: empty placeholder cells,
        marked in the batch's ``MALFORMED`` mask.
        """
        pos = [header.positions[c] for c in self.columns]
        rows = self.batch_rows
        width = header.width
        limit = self.limit
        if csv.field_size_limit() <= limit:  # a cell may be as long as a line (pyarrow sets no limit either)
            csv.field_size_limit(limit + 1)
        used = [0]  # bytes of the record being read (see _text_lines)
        empty = [""] * len(pos)

        def batch(cols, bad):
            out = {c: np.array(v, dtype=str) for c, v in zip(self.columns, cols)}
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
                reader = csv.reader(_text_lines(fh, limit, used))
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
        except _TooLong:
            raise self._too_long() from None
        except (ValueError, EOFError, OSError, csv.Error, zlib.error, MemoryError) as exc:
            # the file cannot be read to its end (I/O, a damaged gzip stream); no cell is refused for its text
            raise self._read_error(exc, gz) from None

    # -- Parquet ----------------------------------------------------------------------------------------
    def _parquet(self):
        import pyarrow as pa
        import pyarrow.parquet as pq

        done = 0
        groups = self.row_groups
        for path, keys, size in self.parts:
            what = repr(path)
            try:
                pf = parquet_file(pq, path)
                present = [c for c in self.columns if c not in keys]
                n_rows = max(pf.metadata.num_rows, 1)
                seen = 0
                extra = {} if groups is None else {"row_groups": list(groups)}
                for batch in pf.iter_batches(batch_size=self.batch_rows, columns=present, use_threads=True,
                                             **extra):
                    cols = {c: to_numpy(batch.column(c)) for c in present}
                    for c in self.columns:
                        if c in keys:  # a hive partition key (folder name k=v): the same text on every row
                            cols[c] = np.full(batch.num_rows, keys[c])
                    seen += batch.num_rows
                    yield cols, done + size * min(seen, n_rows) // n_rows
            except (OSError, EOFError, ValueError, pa.ArrowException) as exc:
                raise _problem(self.spec, what, "holds damaged Parquet data (a page or its header cannot be "
                               f"decoded: {type(exc).__name__}; details withheld: they may quote the data)") from None
            done += size


class CsvBlock(Table):
    """One block of whole lines of a spec's CSV file, read as :class:`Table` reads the file.

    The Dask engine's tasks read a plain CSV file this way: the same
    readers, so the same rows (malformed ones included) as the local
    engine.  ``header`` is the file's :class:`_Header`, read once by the
    driver; ``data`` holds lines of the file after it.
    """

    def __init__(self, spec, columns, header: _Header, data: bytes, *, int_columns=(), arrow=None):
        self._setup(spec, columns, int_columns, None, None, arrow)
        self.kind, self.what, self.key = "csv", repr(spec.source["path"]), "dataset.path"
        self.header, self.data = header, data
        self.total = len(data)

    def _csv(self):
        def arrow_source():
            import pyarrow as pa

            return pa.BufferReader(self.data)

        yield from self._csv_text(self.header, False, arrow_source, lambda: io.BytesIO(self.data), skip=0)


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


def parquet_slices(part, target_bytes: int) -> list:
    """Row-group index lists of one Parquet file, each about ``target_bytes`` of uncompressed data or one group."""
    import pyarrow.parquet as pq

    meta = parquet_file(pq, part[0]).metadata
    out, cur, size = [], [], 0
    for i in range(meta.num_row_groups):
        cur.append(i)
        size += max(meta.row_group(i).total_byte_size, 1)
        if size >= target_bytes:
            out.append(cur)
            cur, size = [], 0
    if cur or not out:
        out.append(cur)
    return out


def _chain(first, rest):
    yield first
    yield from rest


def _line_start(fh, at: int, low: int, size: int, limit: int) -> int:
    """The first position at or after ``at`` where a line of the file begins (``low`` and ``size`` included).

    ``low`` is where the data lines begin (after the header), ``size`` the
    file's length.  At most ``limit`` bytes are read past ``at``: a line
    break not found within them means a line longer than ``limit``
    (:class:`_TooLong`).
    """
    if at <= low:
        return low
    if at >= size:
        return size
    fh.seek(at - 1)  # a line begins at `at` when the byte before it ends one
    seen = 0
    while True:
        piece = fh.read(min(LINE_CHUNK_BYTES, limit + 2 - seen))
        if not piece:
            return size
        m = _BREAK.search(piece)
        if m is not None:
            k = at - 1 + seen + m.start()
            if piece[m.start()] == 13:  # "\r": one break with a "\n" after it
                nxt = piece[m.start() + 1:m.start() + 2] or fh.read(1)
                if nxt == b"\n":
                    return k + 2
            return k + 1
        seen += len(piece)
        if seen > limit:
            raise _TooLong()


_BREAK = re.compile(rb"[\r\n]")


def read_block(table: Table, path: str, start: int, stop: int, low: int, size: int) -> bytes:
    """The whole lines of the file that begin in ``[start, stop)`` (a Dask task's share of a CSV file).

    Each end is moved to the first line start at or after it
    (:func:`_line_start`), so neighbouring blocks share their boundary and
    every line is read once; a block holds at most ``stop - start`` bytes
    plus one line.  A line longer than the limit is refused as the readers
    refuse it.
    """
    try:
        with open(path, "rb") as fh:
            begin = _line_start(fh, start, low, size, table.limit)
            end = _line_start(fh, stop, low, size, table.limit)
            if end <= begin:
                return b""
            fh.seek(begin)
            return fh.read(end - begin)
    except _TooLong:
        raise table._too_long() from None
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise table._fail(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
        raise table._read_error(exc, False) from None


def parquet_file(pq, path):
    """A ``ParquetFile`` that streams: no pre-buffering, column chunks read ``PARQUET_BUFFER_BYTES`` at a time.

    pyarrow (>= 15) pre-buffers by default: ``iter_batches`` then first
    reads every requested column chunk of the whole file into memory.
    """
    kw = {"pre_buffer": False, "buffer_size": PARQUET_BUFFER_BYTES}
    try:
        return pq.ParquetFile(path, page_checksum_verification=True, **kw)
    except TypeError:  # an older pyarrow
        return pq.ParquetFile(path, **kw)


def parquet_parts(spec, columns) -> list:
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
            names = parquet_file(pq, p).schema_arrow.names
            size = p.stat().st_size
        except PermissionError as exc:
            raise _problem(spec, repr(str(p)), f"cannot be opened ({exc.strerror})") from None
        except Exception:  # pyarrow raises many kinds; their text may quote the file
            raise _problem(spec, repr(str(p)), "is not a readable Parquet file (truncated, damaged or not "
                           "Parquet)") from None
        check_columns(columns, list(names) + [k for k in keys if k not in names], spec, repr(str(p)))
        parts.append((str(p), {k: v for k, v in keys.items() if k not in names}, size))
    return parts


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
            raise table._fail("holds malformed rows (more or fewer fields than the header line); the rows are "
                              "not shown")
        for c in columns:
            got[c].append(cols[c] if bad is None else cols[c][~bad])
    return {c: np.concatenate(v) if v else np.array([], dtype=str) for c, v in got.items()}


def unreadable(spec, exc) -> DataError:
    return DataError(f"{spec.path}: dataset: cannot read the data in {source_text(spec)} "
                     f"({type(exc).__name__}; details withheld: they may quote the data)")


def check_columns(columns, available, spec, what) -> None:
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


def source_text(spec) -> str:
    src = spec.source
    return f"bundled dataset {src['bundled']!r}" if "bundled" in src else repr(src["path"])

