"""CSV text cut into lines and its header record scanned, every line bounded by a limit in bytes.

:func:`line_lists` reads fixed chunks of bytes and cuts lines itself, never
asking for a whole line of unknown length: a line longer than the limit
raises :class:`LineTooLong` after at most about that many bytes were held.
:func:`scan_header` reads the header record field by field, keeping only
the fields that name needed columns (:class:`CsvHeader`), so a header of a
million columns costs little more than its bytes.  :func:`line_start`
moves a block's end to the next line start (the Dask engine's blocks of
whole lines).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["LINE_CHUNK_BYTES", "CsvHeader", "LineTooLong", "line_lists", "line_start", "scan_header", "text_lines"]

#: Bytes read at a time by the line cutters; lines are cut from these chunks.
LINE_CHUNK_BYTES = 1 << 16


class LineTooLong(Exception):
    """A line (or record) of CSV text is longer than the reader's limit."""


class CsvHeader(NamedTuple):
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


def line_lists(fh, limit: int, chunk: int = LINE_CHUNK_BYTES):
    """The lines of a binary file, a list of them per chunk read; each with its line break.

    A line ends at ``\\n``, ``\\r`` or ``\\r\\n`` (as the stdlib and pyarrow
    CSV readers end them).  A line longer than ``limit`` bytes (its line
    break included) raises :class:`LineTooLong` once ``limit`` bytes of it
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
                raise LineTooLong()
        if check_all and any(len(line) > limit for line in lines):
            raise LineTooLong()
        if lines:
            yield lines
        if open_tail:
            pending.append(tail)
            size += len(tail)
            if size > limit:
                raise LineTooLong()
    if pending:
        yield [b"".join(pending)]


def text_lines(fh, limit: int, used: list):
    """The lines of a binary file as UTF-8 text, for ``csv.reader``; ``used[0]`` counts the record's bytes.

    Bytes that are not UTF-8 are kept as lone surrogates
    (``errors="surrogateescape"``): such a cell is never a label nor a
    number, so it is an invalid cell of its column, and a cell of a column
    no release reads is never looked at.  The caller sets ``used[0] = 0``
    after each record: a record whose lines (quoted cells holding line
    breaks) add up to more than ``limit`` bytes raises :class:`LineTooLong` as
    a long line does.
    """
    for lines in line_lists(fh, limit):
        for line in lines:
            n = used[0] + len(line)
            if n > limit:
                raise LineTooLong()
            used[0] = n
            yield line.decode("utf-8", "surrogateescape")


def scan_header(lines, limit: int, wanted) -> CsvHeader:
    """The header record of CSV text (``csv.reader``'s default dialect), keeping only the wanted names.

    ``lines`` are the text's lines (bytes, each with its line break).
    Fields are cut as the stdlib reader cuts them (quoted fields may hold
    delimiters, doubled quotes and line breaks; text after a closing quote
    joins the field), each decoded as UTF-8 (a byte-order mark before the
    first is dropped) and stripped; only one field at a time is held.
    Raises :class:`LineTooLong` when the record is longer than ``limit``
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
            raise LineTooLong()
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
                return CsvHeader(width, positions, found, end)
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
                return CsvHeader(width, positions, found, end)
            i, state = i + 1, 0
    if state == 2:  # the text ends inside quotes: the field is kept, as the stdlib reader keeps it
        save()
    return CsvHeader(width, positions, found, end)


_UNQUOTED = re.compile(rb"[^,\r\n]*")


def line_start(fh, at: int, low: int, size: int, limit: int) -> int:
    """The first position at or after ``at`` where a line of the file begins (``low`` and ``size`` included).

    ``low`` is where the data lines begin (after the header), ``size`` the
    file's length.  At most ``limit`` bytes are read past ``at``: a line
    break not found within them means a line longer than ``limit``
    (:class:`LineTooLong`).
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
            raise LineTooLong()


_BREAK = re.compile(rb"[\r\n]")

