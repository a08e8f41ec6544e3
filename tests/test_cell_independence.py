"""A cell's code never depends on the other cells of its batch.

The map step reads a column a batch at a time, and the batches (and the
partitions of an engine, and the distinct rows of a Spark groupBy) are
cut anywhere; so the code of a cell, and whether its row is dropped, must
be a function of that cell alone.  Otherwise one record (a null, a text
cell) would move the counts of others, and the histogram's sensitivity
would be unbounded.  Each probe cell is read alone and beside companions
that change a batch's type (a null, text, a fraction, a wide integer), in
every form a batch takes: an object array, a numpy text or number array,
a pyarrow array (with the readers' conversion), a pandas or Polars column.
"""

import itertools
import math

import numpy as np
import pytest

from blowfish_privacy._arrow_columns import to_numpy
from blowfish_privacy._cell_codes import parse_column
from blowfish_privacy.policy._tables import column_array
from blowfish_privacy.policy.domain import Categorical, Ordinal

BIG = 2**60
ATTRS = [Ordinal("o", 0, 10), Ordinal("w", BIG, BIG + 10), Categorical("s", ["f", "m", "5"]),
         Categorical("n", [1, 2, BIG + 1])]
PROBES = [3, BIG + 3, BIG + 1, 2**53 + 1, "3", " 3", "3.0", "5.5", str(BIG + 3), f" {BIG + 1} ", "f", "f ", " m",
          "f\xa0", "5", "05", None, math.nan, "", "x", 3.0, -0.0, 1, "1"]
COMPANIONS = [None, "x", "5.5", 2**61, 1.5, math.nan, "", "f", 7]


def _fate(attr, arr, mode):
    """(value, code, dropped) of every cell of ``arr`` under ``mode``."""
    ints, codes, drop = parse_column(attr, "c", arr, mode)
    n = len(codes)
    return [(None if ints is None else int(ints[i]), int(codes[i]), bool(drop is not None and drop[i]))
            for i in range(n)]


def _forms(cells):
    """The arrays a batch holding ``cells`` may reach the map step as."""
    yield "object", np.array(cells, dtype=object)
    kinds = {type(c) for c in cells}
    if kinds == {str}:
        yield "text", np.array(cells, dtype=str)
    if kinds == {int} and all(abs(c) < 2**63 for c in cells):
        yield "int64", np.array(cells, dtype=np.int64)
    if kinds == {float}:
        yield "float64", np.array(cells, dtype=np.float64)
    pa = pytest.importorskip("pyarrow")
    if kinds <= {int, type(None)} or kinds <= {str, type(None)} or kinds <= {float, type(None)}:
        try:
            arrow = pa.array(cells)
        except (pa.ArrowException, OverflowError):
            arrow = None
        if arrow is not None:
            yield "arrow", to_numpy(arrow)
            yield "arrow-chunked", column_array(pa.chunked_array([arrow[:1], arrow[1:]]))
            try:
                import pandas as pd

                if kinds <= {int, type(None)} and all(c is None or abs(c) < 2**63 for c in cells):
                    yield "pandas-Int64", column_array(pd.Series(cells, dtype="Int64"))
            except ImportError:
                pass
            try:
                import polars as pl

                yield "polars", column_array(pl.Series(cells, strict=False))
            except (ImportError, TypeError, OverflowError, ValueError, Exception):  # noqa: BLE001 - a type it refuses
                pass


@pytest.mark.parametrize("attr", ATTRS, ids=lambda a: a.name)
@pytest.mark.parametrize("mode", ["clamp", "drop"])
def test_a_cells_code_is_its_own(attr, mode):
    failures = []
    for probe, other in itertools.product(PROBES, COMPANIONS):
        alone = _fate(attr, np.array([probe], dtype=object), mode)[0]
        for form, arr in _forms([probe, other]):
            got = _fate(attr, arr, mode)[0]
            if got != alone:
                failures.append((probe, other, form, alone, got))
    assert not failures, f"{len(failures)} cells read otherwise beside another cell, e.g. {failures[:5]}"


@pytest.mark.parametrize("attr", ATTRS, ids=lambda a: a.name)
def test_a_cell_alone_reads_the_same_in_every_form(attr):
    failures = []
    for probe in PROBES:
        want = _fate(attr, np.array([probe], dtype=object), "drop")[0]
        for form, arr in _forms([probe, probe]):
            got = _fate(attr, arr, "drop")[0]
            if got != want:
                failures.append((probe, form, want, got))
    assert not failures, failures[:5]
