"""The CSV writer of long release vectors: the Arrow path writes the same bytes as the pure-Python writer.

The oracle is :func:`vector_files.write_csv_reference` (the writer as it was,
one ``repr`` per cell), and, not to be circular, literal cells written by
hand for the extremes.  Blocks are made small (``ARROW_CSV_ROWS``) in most
tests so that block edges, padding of shorter vectors and the two
formatting threads are crossed in vectors of a few hundred values.
"""

import io
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blowfish_privacy._atomic import atomic_write
from blowfish_privacy.release import vector_files

pytest.importorskip("pyarrow")

I64 = np.iinfo(np.int64)

EXTREMES = [0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e16, 2.0**53, 2.0**53 + 2, -1e22, 1 / 3, np.inf, -np.inf, np.nan,
            -np.nan, 1e-5, 1e-4, 9.999e-05, 0.0001234, 2.5e-7, 1e15, 123456789012345.6, 4503599627370495.5, 1e16 + 2,
            1.5e16, 1.5, -1.5, 100.0, -100.0, 1e21, 1e22, 1e23, 1.7976931348623157e308, -1.7976931348623157e308,
            2.2250738585072014e-308, 0.1, 12345.678, 2.0**63, -2.0**63, 2.0**64, 123456789012345677.0,
            float(I64.max), 999999999999999.9, 0.30000000000000004]

#: The cells by hand: integer-valued floats as all their digits, others as Python's repr.
EXPECTED = {0.0: "0", -0.0: "0", 1e16: "10000000000000000", 2.0**53 + 2: "9007199254740994",
            -1e22: "-10000000000000000000000", 1 / 3: "0.3333333333333333", np.inf: "inf", -np.inf: "-inf",
            1e-5: "1e-05", 1e-4: "0.0001", 2.5e-7: "2.5e-07", 1e15: "1000000000000000",
            123456789012345.6: "123456789012345.6", 100.0: "100", 5e-324: "5e-324", 2.0**64: "18446744073709551616",
            0.1: "0.1", 1.5: "1.5"}


def _both(vectors: dict) -> tuple[str, str]:
    new, old = io.StringIO(), io.StringIO()
    vector_files.write_csv(new, vectors)
    vector_files.write_csv_reference(old, vectors)
    return new.getvalue(), old.getvalue()


def _same(vectors: dict) -> str:
    new, old = _both(vectors)
    if new != old:  # the first differing cell, for the message
        for i, (a, b) in enumerate(zip(new.split("\n"), old.split("\n"))):
            assert a == b, f"line {i}: {a!r} != {b!r} (reference)"
        assert len(new) == len(old)
    return new


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(vector_files, "ARROW_CSV_ROWS", 7)


def test_extremes_are_written_as_by_hand_and_as_the_reference(small_blocks):
    text = _same({"x": np.array(EXTREMES)})
    lines = text.split("\n")
    assert lines[0] == "x" and text.endswith("\n") and len(lines) == len(EXTREMES) + 2
    cells = dict(zip(map(float, EXTREMES), lines[1:]))
    for v, cell in EXPECTED.items():
        assert cells[v] == cell, (v, cells[v])
    assert lines[1 + EXTREMES.index(-0.0)] == "0" and lines[1 + EXTREMES.index(np.nan)] == "nan"


def test_random_vectors_with_extremes_mixed_lengths_and_dtypes(small_blocks):
    rng = np.random.default_rng(2026)
    for trial in range(20):
        n = int(rng.integers(0, 120))
        x = rng.choice(np.array(EXTREMES), n) * rng.choice([1.0, -1.0], n)
        some = rng.random(n) < 0.3
        x[some] = rng.standard_normal(some.sum()) * 10.0 ** rng.integers(-6, 16, some.sum())
        y = np.round(rng.standard_normal(rng.integers(1, 90)) * 10.0 ** rng.integers(-8, 20))  # whole and not
        y[::3] = rng.standard_normal(y[::3].size) * 10.0 ** float(rng.integers(-10, 17))
        vectors = {
            "x": x,
            "cum": np.cumsum(rng.integers(0, 3, int(rng.integers(1, 100)))).astype(np.float64),
            "y": y,
            "i": rng.integers(I64.min, I64.max, int(rng.integers(0, 50)), dtype=np.int64, endpoint=True),
            "ends": np.array([I64.min, I64.max, 0, -1]),
            "u": np.array([0, 2**64 - 1], dtype=np.uint64),
            "b": rng.random(int(rng.integers(0, 30))) < 0.5,
            "f32": (rng.standard_normal(int(rng.integers(0, 40))) * 1e3).astype(np.float32),
            "i8": np.arange(-5, 5, dtype=np.int8),
            "empty": np.array([], dtype=np.float64),
        }
        keep = [k for k in vectors if rng.random() < 0.7] or ["x"]
        _same({k: vectors[k] for k in keep})


def test_only_empty_vectors_and_a_two_dimensional_vector(small_blocks):
    assert _same({"a": np.array([]), "b": np.array([], dtype=np.int64)}) == "a,b\n"
    assert _same({"m": np.arange(12.0).reshape(3, 4) / 4, "s": np.float64(2.5)}).startswith("m,s\n0,2.5\n0.25,\n")


def test_cells_past_a_shorter_vector_are_empty(small_blocks):
    text = _same({"long": np.arange(20.0) + 0.5, "short": np.arange(3), "b": np.array([True, False])})
    lines = text.split("\n")
    assert lines[1:4] == ["0.5,0,True", "1.5,1,False", "2.5,2,"] and lines[-2] == "19.5,,"


def test_non_numeric_vectors_take_the_reference_path():
    vectors = {"labels": np.array(["a", "b b", "c"]), "o": np.array([1.0, 2.5, None], dtype=object),
               "z": np.array([1 + 2j, 3.0, 0j])}
    assert _same(vectors) == "labels,o,z\na,1,(1+2j)\nb b,2.5,(3+0j)\nc,None,0j\n"


def test_without_pyarrow_the_reference_writer_is_used(monkeypatch):
    x = np.array(EXTREMES)
    for name in ("pyarrow", "pyarrow.compute", "pyarrow.csv"):
        monkeypatch.setitem(sys.modules, name, None)  # import now raises ImportError
    new, old = _both({"x": x})
    assert new == old


def test_a_real_file_gets_the_same_bytes_through_its_byte_buffer(tmp_path, small_blocks):
    rng = np.random.default_rng(5)
    vectors = {"value": np.arange(500), "cumulative": np.cumsum(rng.random(500)) * 1e-3}
    path = tmp_path / "v.csv"
    atomic_write(path, lambda fh: vector_files.write_csv(fh, vectors))
    ref = io.StringIO()
    vector_files.write_csv_reference(ref, vectors)
    assert path.read_bytes() == ref.getvalue().encode("ascii")


def test_numeric_vectors_never_take_the_reference_path(monkeypatch, small_blocks):
    def refused(*a, **k):
        raise AssertionError("the reference writer was used")

    vectors = {"x": np.array(EXTREMES), "i": np.arange(9), "b": np.array([True])}
    expected = io.StringIO()
    vector_files.write_csv_reference(expected, vectors)
    monkeypatch.setattr(vector_files, "write_csv_reference", refused)
    out = io.StringIO()
    vector_files.write_csv(out, vectors)
    assert out.getvalue() == expected.getvalue()


def test_long_vectors_cross_blocks_of_thousands(monkeypatch):
    monkeypatch.setattr(vector_files, "ARROW_CSV_ROWS", 1 << 13)
    rng = np.random.default_rng(11)
    n = vector_files.ARROW_CSV_ROWS * 3 + 17
    cum = np.maximum.accumulate(np.cumsum(rng.integers(0, 3, n)) + rng.laplace(0, 50, n))
    cum[rng.integers(0, n, 50)] = rng.choice(np.array(EXTREMES), 50)
    _same({"value": np.arange(n), "cumulative": cum})


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(allow_nan=True, allow_infinity=True)),
       hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(allow_nan=False, allow_infinity=False,
                                                                         width=32)),
       st.lists(st.integers(I64.min, I64.max), max_size=20))
def test_hypothesis_float_arrays_give_the_reference_bytes(x, y, ints):
    old = vector_files.ARROW_CSV_ROWS
    vector_files.ARROW_CSV_ROWS = 5
    try:
        _same({"x": x, "y": y, "i": np.array(ints, dtype=np.int64)})
        _same({"whole": np.round(x)})  # integer-valued (or not finite): the int64 path when every cell allows
    finally:
        vector_files.ARROW_CSV_ROWS = old


def test_runs_of_equal_values_are_formatted_once_each(monkeypatch):
    monkeypatch.setattr(vector_files, "ARROW_CSV_ROWS", 1 << 12)
    rng = np.random.default_rng(3)
    heads = np.concatenate([np.array(EXTREMES), np.cumsum(rng.random(200)) * 10.0 ** rng.integers(-6, 17, 200)])
    x = np.repeat(heads, rng.integers(1, 60, heads.size))
    x[rng.integers(0, x.size, 40)] = -0.0  # equal to 0.0 inside a run of zeros: still written 0
    sizes = []
    real = vector_files._arrow_float_cells
    monkeypatch.setattr(vector_files, "_arrow_float_cells", lambda v, pa, pc: sizes.append(v.size) or real(v, pa, pc))
    _same({"cumulative": x, "value": np.arange(x.size)})
    assert sizes and sum(sizes) < x.size / 4  # the run heads only
