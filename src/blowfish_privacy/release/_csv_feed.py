"""The CSV text handed to pyarrow's reader up to the first text that needs a slower parser (:class:`Feed`)."""

from __future__ import annotations

import codecs
import re

from .._arrow_columns import Fallback

__all__ = ["CSV_BLOCK_BYTES", "HEX", "QUOTE", "UTF8", "Feed"]

#: Bytes of CSV text per block of pyarrow's streaming CSV reader.  Its I/O thread reads up to 32 blocks
#: ahead of the parser, whatever we consume (a fixed queue, not an option: ARROW-12090), and page-cached
#: text arrives faster than it is parsed: with 16 MiB blocks that queue alone held up to 512 MiB, the
#: peak then growing with the file up to that size.  1 MiB blocks bound it to 32 MiB and parse as fast.
#: The block is at most half the line limit (see :func:`._reading.max_line_bytes`).
CSV_BLOCK_BYTES = 1 << 20

#: Why a :class:`Feed` stopped: a ``"`` (quoted cells may hold line breaks), ``0x`` / ``0X`` (a cell
#: pyarrow's int64 parser would read as hexadecimal), or bytes that are not UTF-8 (pyarrow must check text cells).
QUOTE, HEX, UTF8 = "quote", "hex", "utf8"


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
    m = HEXPAIR.search(data, max(start, first - 1))
    return -1 if m is None else m.start()


HEXPAIR = re.compile(rb"0[xX]")


def _whole_lines(data, end: int) -> int:
    """The length of the longest prefix of ``data[:end]`` made of whole lines (line breaks included).

    A ``\r`` that is the last byte of ``data`` ends no line yet (its ``\n``
    may follow), so a cut never parts ``\r\n``.
    """
    j = max(data.rfind(b"\n", 0, end), data.rfind(b"\r", 0, end))
    if j >= 0 and j + 1 == len(data) and data[j] == 13:
        j = max(data.rfind(b"\n", 0, j), data.rfind(b"\r", 0, j))
    return j + 1


class Feed:
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
    (:func:`arrow_ints`).  Used as ``pa.PythonFile(feed, mode="r")``.
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
        self.stopped = None  # QUOTE or HEX once the feed ended its text early
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
        text is a :class:`Fallback`.
        """
        piece = self._read(n)
        if bytes(piece[:3]) == b"\xef\xbb\xbf":
            raise Fallback()
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
                stop, why = q, QUOTE
        if self.watch_hex or not self.hex_seen:
            h = _first_hex(data, start)
            if self.last_zero and not pending and data[:1] in (b"x", b"X"):
                h = 0  # a pair across the end of a piece given inside a long line: no cut there
            if h >= 0:
                self.hex_seen = True
                if self.watch_hex and h < stop:
                    stop, why = h, HEX
        tail = 0  # the bytes of a sequence cut at the end of the piece: not given before the next piece
        if self.watch_utf8 and not data.isascii():  # one check of the text, not one per cell
            try:
                # a sequence cut at the end of a piece waits for the next one, but not at the end of the text
                _, used = codecs.utf_8_decode(memoryview(data)[:stop], "strict", final and stop == len(data))
                if stop == len(data):
                    tail = stop - used
            except UnicodeDecodeError as exc:
                stop, why = exc.start, UTF8
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

    def resume(self, *, watch_quote: bool, watch_hex: bool, watch_utf8: bool = False) -> "Feed":
        """A feed of the text after what this one gave: its held line, then the rest of the stream."""
        return Feed(self.stream, watch_quote=watch_quote, watch_hex=watch_hex, watch_utf8=watch_utf8,
                     held=self.pending, hex_seen=self.hex_seen)

