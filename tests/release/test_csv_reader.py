"""pyarrow's CSV reading (fast parser, int64 columns, careful options past the first '"' or '0x') against the stdlib's.

The stdlib reader is the reference: it takes every record and gives each
cell as text, read by the same map step.  pyarrow's reader reads text
without ``"`` with ``newlines_in_values=False`` and text without ``0x`` /
``0X`` with the integer columns parsed as int64 directly (:class:`_Feed`
cuts the text at the start of the line where either first appears, and
the careful options read the rest).  On random files holding quotes
(with line breaks, commas and doubled quotes inside), CRLF and CR line
ends, byte-order marks, empty fields and lines, signs, spaces, tabs,
hexadecimal-looking text in integer, label and unread columns, huge
values, bytes that are not UTF-8, malformed rows and gzip, both readers
give the same aggregates under ``clamp`` and ``drop``, and the same
refusal under ``error``.

The spec is a plain object with the fields the engines read.
"""

import gzip
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy.errors import InvalidColumn
from blowfish_privacy.release import DataError
from blowfish_privacy import _aggregate
from blowfish_privacy import _arrow_columns
from blowfish_privacy.release import _csv_feed, _reading

pa = pytest.importorskip("pyarrow")
pcsv = pytest.importorskip("pyarrow.csv")

DOM = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"]), Ordinal("income", -5, 9)])
NEEDS = [("histogram", ("sex", "age")), ("histogram", ("income",)), ("column", ("income",))]
COLUMNS = ["age", "income", "sex"]


def _spec(path: Path, invalid="clamp") -> SimpleNamespace:
    return SimpleNamespace(path=str(path.parent / "spec.toml"), source={"path": str(path), "format": "csv"},
                           domain=DOM, columns={n: n for n in DOM.names}, invalid={n: invalid for n in DOM.names},
                           max_line_bytes=1 << 16)


def _read(spec, arrow: bool, block_bytes: int):
    """``("ok", aggregates)``, ``("invalid", entries)`` or ``("refused", message)``, and the items' RESTART count."""
    plan = _aggregate.spec_plan(spec, NEEDS)
    table = _reading.Table(spec, COLUMNS, int_columns=_aggregate.int_columns(plan), arrow=arrow,
                           block_bytes=block_bytes, batch_rows=97)
    items = []
    try:
        for item in table:
            items.append(item)
        got = _aggregate.fold(iter(items), plan, COLUMNS)
    except InvalidColumn as exc:
        return ("invalid", sorted(exc.entries)), items
    except DataError as exc:
        return ("refused", str(exc)), items
    return ("ok", got), items


def _same(a, b) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] != "ok":
        assert a[1] == b[1]
        return
    for x, y in zip(a[1], b[1]):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


# -- random files ---------------------------------------------------------------------------------------

CLEAN_INTS = ["0", "5", "42", "99", "7", "-3", "12", "9", "007", "-0", "100", "-6", "123456"]
ODD_INTS = [" 5", "5 ", "\t8\t", "+5", "0x1f", "0X1F", " 0x2", "-0x1", "0x", "1e1", "7.0", "", "abc", "x5",
            "99999999999999999999", "-99999999999999999999", "9223372036854775807", "-9223372036854775808",
            "0x8000000000000000", "\uff11\uff12", "1_0", '"12"', '" 13 "', '"0x1f"', '"4\n"', '"1,2"', "\x0c3",
            "\u00a04", "1\u00a0"]
CLEAN_LABELS = ["f", "m"]
ODD_LABELS = [" f", "m ", "", "x", "0x1", "0xf", "mex", "Mexico", '"f"', '"m"', '"f,m"', '"f\nm"', '"f""m"',
              "\ufefff", "F", "f" * 70, "m" + " " * 80, " " * 66 + "f", "\u00e9t\u00e9", "f\x00"]
CLEAN_NOTES = ["a", "bc", "", "note", "x", "y z", "tax", "box-1"]
ODD_NOTES = ['"a,b"', '"line\nbreak"', '"cr\rlf\r\n"', '"say ""hi"""', "0x10", "0Xab", 'mid"quote', "trail\"",
             "\ufeffbom"]
ENDS = ["\n", "\r\n", "\r"]
BAD_BYTES = [b"\xff", b"\xe9", b"\xc3", b"\x80x"]


def _cell(rng, clean, odd, p_odd):
    pool = odd if rng.random() < p_odd else clean
    return pool[rng.integers(len(pool))]


def _file(rng, n: int, p_odd: float, *, late: bool) -> bytes:
    """A random CSV text (header age,sex,income,note in a random order); odd cells with probability p_odd.

    ``late``: odd cells only in the last tenth of the rows (the fast parser reads the rest).
    """
    order = list(rng.permutation(["age", "sex", "income", "note"]))
    end = ENDS[rng.integers(3)] if rng.random() < 0.7 else None  # None: each line its own end
    out = [",".join(order).encode() + (end or "\n").encode()]
    if rng.random() < 0.2:
        out[0] = b"\xef\xbb\xbf" + out[0]
    for k in range(n):
        p = p_odd if not late or k >= n - n // 10 else 0.0
        cells = {"age": _cell(rng, CLEAN_INTS, ODD_INTS, p), "income": _cell(rng, CLEAN_INTS, ODD_INTS, p),
                 "sex": _cell(rng, CLEAN_LABELS, ODD_LABELS, p), "note": _cell(rng, CLEAN_NOTES, ODD_NOTES, p)}
        fields = [cells[c].encode() for c in order]
        if p and rng.random() < p / 4:
            j = rng.integers(len(fields))
            fields[j] += BAD_BYTES[rng.integers(len(BAD_BYTES))]
        line = b",".join(fields)
        if p and rng.random() < p / 6:
            line = [b"", line + b",extra", b"5", b"\xef\xbb\xbf" + line][rng.integers(4)]
        out.append(line + (end or ENDS[rng.integers(3)]).encode())
    if rng.random() < 0.3:
        out[-1] = out[-1].rstrip(b"\r\n")  # no line break after the last record
    return b"".join(out)


@pytest.mark.parametrize("seed", range(48))
def test_the_arrow_reader_agrees_with_the_stdlib_reader(tmp_path, seed):
    rng = np.random.default_rng(seed)
    p_odd = [0.0, 0.002, 0.02, 0.2][seed % 4]
    data = _file(rng, int(rng.integers(200, 1500)), p_odd, late=seed % 3 == 0)
    gz = seed % 5 == 4
    path = tmp_path / ("rows.csv.gz" if gz else "rows.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    block = int([1 << 9, 1 << 11, 1 << 14][seed % 3])
    for invalid in ("clamp", "drop", "error"):
        spec = _spec(path, invalid)
        want, _ = _read(spec, False, block)
        got, items = _read(spec, True, block)
        _same(got, want)
        if p_odd == 0.0:  # clean text: pyarrow reads it all, never handing it to the stdlib reader
            assert not any(cols is _aggregate.RESTART for cols, _ in items)
            assert got[0] == ("ok" if invalid != "error" else "invalid")  # values outside the domain


def test_clean_text_is_read_by_the_fast_parser_with_int64_columns(tmp_path, monkeypatch):
    """No '"' and no '0x': one pyarrow reader, newlines_in_values=False, the integer columns typed int64."""
    seen = []
    real = pcsv.open_csv

    def spy(source, **kw):
        seen.append((kw["parse_options"].newlines_in_values,
                     {str(t).split("<")[0] for t in kw["convert_options"].column_types.values()}))
        return real(source, **kw)

    monkeypatch.setattr(pcsv, "open_csv", spy)
    rows = "".join(f"{k % 100},{'fm'[k % 2]},{k % 10},tax\n" for k in range(5000))
    (tmp_path / "rows.csv").write_text("age,sex,income,note\n" + rows)
    got, items = _read(_spec(tmp_path / "rows.csv"), True, 1 << 12)
    assert seen == [(False, {"int64", "dictionary"})]  # the label column as a dictionary
    assert got[0] == "ok" and int(got[1][0].sum()) == 5000


@pytest.mark.parametrize("what, modes", [
    ('"quoted, cell"', [(False, {"int64", "dictionary"}), (True, {"string", "dictionary"})]),
    ("0x1f", [(False, {"int64", "dictionary"}), (False, {"string", "dictionary"})]),
])
def test_the_text_after_a_quote_or_0x_is_read_with_the_careful_options(tmp_path, monkeypatch, what, modes):
    """The reader in use when the first '"' (or '0x') comes ends at that line; the next reads the rest."""
    seen = []
    real = pcsv.open_csv

    def spy(source, **kw):
        seen.append((kw["parse_options"].newlines_in_values,
                     {str(t).split("<")[0] for t in kw["convert_options"].column_types.values()}))
        return real(source, **kw)

    monkeypatch.setattr(pcsv, "open_csv", spy)
    lines = [f"{k % 100},{'fm'[k % 2]},{k % 10},n" for k in range(4000)]
    lines[3000] = f"1,f,2,{what}"
    (tmp_path / "rows.csv").write_text("age,sex,income,note\n" + "\n".join(lines) + "\n")
    got, items = _read(_spec(tmp_path / "rows.csv"), True, 1 << 12)
    assert seen == modes
    assert not any(cols is _aggregate.RESTART for cols, _ in items)
    want, _ = _read(_spec(tmp_path / "rows.csv"), False, 1 << 12)
    _same(got, want)


@pytest.mark.parametrize("cell, checks", [(b"f\xff", [False, True]), (b"\xc3\xa9t\xc3\xa9", [False]),
                                          (b"m\xe9", [False, True])])
def test_text_cells_are_checked_as_utf8_once_until_a_byte_is_not(tmp_path, monkeypatch, cell, checks):
    """pyarrow checks no cell while the feed found the whole text UTF-8; from the line of a bad byte, it does."""
    seen = []
    real = pcsv.open_csv

    def spy(source, **kw):
        seen.append(kw["convert_options"].check_utf8)
        return real(source, **kw)

    monkeypatch.setattr(pcsv, "open_csv", spy)
    lines = [f"{k % 100},{'fm'[k % 2]},{k % 10},n".encode() for k in range(4000)]
    lines[3000] = b"1," + cell + b",2,n"
    (tmp_path / "rows.csv").write_bytes(b"age,sex,income,note\n" + b"\n".join(lines) + b"\n")
    for invalid in ("clamp", "drop", "error"):
        seen.clear()
        got, items = _read(_spec(tmp_path / "rows.csv", invalid), True, 1 << 12)
        assert seen == checks
        # a cell that is not UTF-8 is an ArrowInvalid under the check: the stdlib reader reads the file
        assert any(cols is _aggregate.RESTART for cols, _ in items) == (len(checks) > 1)
        want, _ = _read(_spec(tmp_path / "rows.csv", invalid), False, 1 << 12)
        _same(got, want)


# -- the feed ---------------------------------------------------------------------------------------------

class _Chunks:
    """A stream giving ``data`` in reads of the asked size."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def read(self, n):
        out = self.data[self.at:self.at + n]
        self.at += len(out)
        return out


def _drain(feed, n):
    pieces = []
    while True:
        piece = bytes(feed.read(n))
        if not piece:
            return pieces
        pieces.append(piece)


@pytest.mark.parametrize("seed", range(30))
def test_the_feed_gives_whole_lines_and_stops_at_the_line_of_the_first_mark(seed):
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(int(rng.integers(1, 300))):
        body = "".join(rng.choice(list("0123456789,abx0"), int(rng.integers(0, 30))))
        lines.append(body + ENDS[rng.integers(3)])
    text = "".join(lines)
    if rng.random() < 0.7:
        mark = ['"', "0x", "0X"][rng.integers(3)]
        k = int(rng.integers(len(text) + 1))
        text = text[:k] + mark + text[k:]
    data = text.encode()
    n = int(rng.integers(8, 200))
    feed = _csv_feed.Feed(_Chunks(data), watch_quote=True, watch_hex=True)
    pieces = _drain(feed, n)
    given = b"".join(pieces)
    assert all(len(p) <= n for p in pieces)
    marks = [i for i in (data.find(b'"'), data.find(b"0x"), data.find(b"0X")) if i >= 0]
    if not marks:
        assert given == data and feed.stopped is None
        return
    mark_at = min(marks)
    assert feed.stopped is not None
    # the text given ends at the start of the mark's line: a line break before it, none after
    assert data.startswith(given)
    line_start = max(data.rfind(b"\n", 0, mark_at), data.rfind(b"\r", 0, mark_at)) + 1
    assert len(given) == line_start
    rest = feed.resume(watch_quote=False, watch_hex=False)
    assert given + b"".join(_drain(rest, n)) == data


def test_the_feed_never_parts_crlf():
    data = b"1,2\r\n3,4\r\n5,0x1\r\n"
    for n in range(6, 20):  # every line fits in a read
        feed = _csv_feed.Feed(_Chunks(data), watch_quote=True, watch_hex=True)
        pieces = _drain(feed, n)
        assert all(not p.endswith(b"\r") for p in pieces)
        assert b"".join(pieces) == b"1,2\r\n3,4\r\n"
        assert feed.stopped == _csv_feed.HEX


def test_a_mark_inside_a_long_line_given_in_pieces_is_a_read_error():
    data = b"1,2\n" + b"9" * 100 + b'"' + b"\n"
    feed = _csv_feed.Feed(_Chunks(data), watch_quote=True, watch_hex=True)
    with pytest.raises(OSError):
        _drain(feed, 16)


def test_hex_seen_tells_whether_the_text_held_0x():
    for data, seen in ((b"1,2\n3,x\n", False), (b"1,2\n3,0x\n", True), (b"1,0X\n", True), (b"x0,x\n", False)):
        feed = _csv_feed.Feed(_Chunks(data), watch_quote=False, watch_hex=False)
        _drain(feed, 3)
        assert feed.hex_seen is seen
    feed = _csv_feed.Feed(_Chunks(b"10\nx\n"), watch_quote=False, watch_hex=False)
    _drain(feed, 4)  # "10\n" then "x\n": no pair across a line break
    assert feed.hex_seen is False


def test_has_x_looks_at_every_piece_of_a_buffer():
    for n in (0, 1, 7, (1 << 16) - 1, 1 << 16, (1 << 16) + 3, 3 << 16):
        plain = pa.py_buffer(b"7" * n)
        assert not _arrow_columns._has_x(plain)
        for at in {0, n // 2, n - 1} if n else set():
            for ch in (b"x", b"X"):
                text = bytearray(b"7" * n)
                text[at:at + 1] = ch
                assert _arrow_columns._has_x(pa.py_buffer(bytes(text)))


@pytest.mark.slow
@pytest.mark.parametrize("end", [b"f\xc3", b"\xe2\x82", b"m\xf0\x9f\x98"])
@pytest.mark.parametrize("rows", [0, 3000])
@pytest.mark.parametrize("gz", [False, True])
def test_a_sequence_cut_at_the_end_of_the_text_is_seen_as_the_stdlib_reader_sees_it(tmp_path, end, rows, gz):
    # the last line has no line break and its last UTF-8 sequence is incomplete: the UTF-8 check is final there,
    # so the cell is what the stdlib reader makes of it (a label outside the domain), never a decoding error
    header = b"age,income,note,sex\n"  # the label column last: its cell ends the text
    body = b"".join(b"%d,%d,n,%s\n" % (i % 100, i % 15 - 5, b"fm"[i % 2:i % 2 + 1]) for i in range(rows))
    text = header + body + b"5,3,n," + end
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(text) if gz else text)
    for invalid in ("clamp", "drop", "error"):
        spec = _spec(path, invalid)
        ref, _ = _read(spec, False, 1 << 16)
        for block in (1 << 16, 64, 37):
            _same(ref, _read(spec, True, block)[0])
