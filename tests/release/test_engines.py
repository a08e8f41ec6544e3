"""The map step: the integer fast path gives exactly Domain.encode's indices."""

import numpy as np
import pytest

from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy.release.engines import _fast_index, combine, partition_aggregates, plan_for


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_fast_index_matches_encode(dtype):
    rng = np.random.default_rng(1)
    dom = Domain([Ordinal("a", 3, 40, bin_width=4), Categorical("b", [5, 6, 7]), Ordinal("c", 0, 9)])
    data = {"a": rng.integers(3, 41, 5000).astype(dtype), "b": rng.integers(5, 8, 5000).astype(dtype),
            "c": rng.integers(0, 10, 5000).astype(dtype)}
    fast = _fast_index(dom, data)
    assert fast is not None
    np.testing.assert_array_equal(fast, dom.encode(data))


def test_fast_index_declines_what_it_cannot_check():
    dom = Domain([Ordinal("a", 0, 9)])
    assert _fast_index(dom, {"a": np.array([0, 10])}) is None  # outside: encode reports it
    assert _fast_index(dom, {"a": np.array([0.0, 1.0])}) is None  # floats
    assert _fast_index(Domain([Categorical("b", [1, 3])]), {"b": np.array([1, 3])}) is None  # gaps in labels
    with pytest.raises(ValueError, match="outside the domain"):
        partition_aggregates({"a": np.array([0, 10])}, plan_for(dom, {"a": "a"}, [("histogram", ("a",))]))


def test_map_reduce_equals_one_pass():
    rng = np.random.default_rng(2)
    dom = Domain([Ordinal("a", 0, 99), Categorical("s", ["f", "m"])])
    a, s = rng.integers(0, 100, 3000), rng.choice(["f", "m"], 3000)
    plan = plan_for(dom, {"a": "a", "s": "s"}, [("histogram", ("a", "s")), ("column", ("a",))])
    whole = partition_aggregates({"a": a, "s": s}, plan)
    parts = [partition_aggregates({"a": a[i:i + 700], "s": s[i:i + 700]}, plan) for i in range(0, 3000, 700)]
    total = parts[0]
    for p in parts[1:]:
        total = combine(total, p)
    np.testing.assert_array_equal(total[0], whole[0])
    np.testing.assert_array_equal(total[1], whole[1])
    assert total[0].sum() == 3000


def test_long_text_cells_are_read_one_by_one():
    """A few long cells among many short ones (object arrays, as pyarrow gives text): read as the short ones are
    read, without a fixed-width text array as wide as the longest cell (100,000 cells of 1 MB: 400 GB)."""
    n = 100_000
    age = np.array([str(k % 100) for k in range(n)], dtype=object)
    sex = np.array(["f" if k % 3 else "m" for k in range(n)], dtype=object)
    long_ = 1 << 20
    age[5] = " " * long_ + "7" + " " * 10  # padded: 7
    age[6] = "0" * 100 + "42"  # leading zeros: 42
    age[7] = "9" * long_  # not an integer of the domain
    sex[8] = " " * long_ + "m"  # padded label: m
    sex[9] = "m" * long_  # not a label
    dom = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"])])
    plan = plan_for(dom, {"age": "age", "sex": "sex"}, [("histogram", ("sex", "age"))], invalid="drop")
    got = partition_aggregates({"age": age, "sex": sex}, plan)[0]
    want_age = np.array([k % 100 for k in range(n)])
    want_age[5], want_age[6] = 7, 42
    want_sex = np.array([0 if k % 3 else 1 for k in range(n)])
    want_sex[8] = 1
    keep = np.ones(n, dtype=bool)
    keep[[7, 9]] = False
    np.testing.assert_array_equal(got, np.bincount((want_sex * 100 + want_age)[keep], minlength=200))
    with pytest.raises(ValueError, match="outside the domain"):  # under "error": refused, quoting nothing
        partition_aggregates({"age": age, "sex": sex}, plan_for(dom, {"age": "age", "sex": "sex"},
                                                                [("histogram", ("age",))], invalid="error"))


def test_a_task_error_is_a_value_and_the_first_wins():
    """A Dask task that cannot read its share returns ("error", message): the reduce keeps the first in order."""
    from blowfish_privacy.release import DataError
    from blowfish_privacy.release.engines import _reduce, _unwrap

    ok = ("ok", [np.zeros(3, np.int64)])
    first, second = ("error", "first problem"), ("error", "second problem")
    assert _reduce(ok, first) == first and _reduce(first, ok) == first
    assert _reduce(_reduce(ok, first), second) == first
    assert _reduce(("invalid", (("a", "a", "r"),)), second) == second
    with pytest.raises(DataError, match="^first problem$"):
        _unwrap(_reduce(first, second))
