"""The map step: the integer fast path gives exactly Domain.encode's indices."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy._aggregate import combine, partition_aggregates, plan_for
from blowfish_privacy._aggregate import fast_index as _fast_index


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


@pytest.mark.slow
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
    from blowfish_privacy._aggregate import unwrap as _unwrap
    from blowfish_privacy._aggregate import reduce as _reduce

    ok = ("ok", [np.zeros(3, np.int64)])
    first, second = ("error", "first problem"), ("error", "second problem")
    assert _reduce(ok, first) == first and _reduce(first, ok) == first
    assert _reduce(_reduce(ok, first), second) == first
    assert _reduce(("invalid", (("a", "a", "r"),)), second) == second
    with pytest.raises(DataError, match="^first problem$"):
        _unwrap(_reduce(first, second))


# -- the Dask engine's map step and reduce -------------------------------------------------------------------

def _random_case(rng):
    """A random plan over integer and text attributes, and batches that take the gathered path or not."""
    from blowfish_privacy._aggregate import MALFORMED, RESTART

    attrs = []
    for k in range(rng.integers(1, 4)):
        kind = rng.integers(0, 3)
        if kind == 0:
            low = int(rng.integers(-50, 50))
            attrs.append(Ordinal(f"o{k}", low, low + int(rng.integers(0, 40)), bin_width=int(rng.integers(1, 4))))
        elif kind == 1:
            first = int(rng.integers(-5, 5))
            attrs.append(Categorical(f"c{k}", list(range(first, first + int(rng.integers(1, 6))))))
        else:
            attrs.append(Categorical(f"c{k}", [1, 3, 4]))  # not an integer range: never gathered
    dom = Domain(attrs)
    names = dom.names
    needs = []
    for _ in range(rng.integers(1, 4)):
        pick = sorted(rng.choice(len(names), size=rng.integers(1, len(names) + 1), replace=False))
        needs.append(("histogram", tuple(names[i] for i in pick)))
    if rng.random() < 0.15:
        needs.append(("column", (names[0],)))  # not a histogram: the plan is not gathered
    if rng.random() < 0.15:
        a = dom.attributes[0]
        needs.append(("histogram", (names[-1],), ((a.name, a.labels[0] if isinstance(a, Categorical) else a.low),)))
    invalid = {n: str(rng.choice(["clamp", "drop", "error"], p=[0.45, 0.45, 0.1])) for n in names}
    plan = plan_for(dom, {n: n for n in names}, needs, invalid=invalid)
    dtypes = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64]
    batches = []
    for _ in range(rng.integers(0, 6)):
        if rng.random() < 0.1:
            batches.append((RESTART, 0))
            continue
        n = int(rng.integers(0, 3000))
        cols = {}
        for a in dom.attributes:
            lo, hi = (a.low, a.high) if isinstance(a, Ordinal) else (min(a.labels), max(a.labels))
            v = rng.integers(lo, hi + 1, n)
            if rng.random() < 0.2 and n:
                v[rng.integers(0, n)] = hi + 1 + int(rng.integers(0, 5))  # outside: the map step's rules
            if rng.random() < 0.1:
                col = v.astype(np.float64)
            else:
                lo_v, hi_v = v.min(initial=0), v.max(initial=0)
                fits = [d for d in dtypes if np.iinfo(d).min <= lo_v and hi_v <= np.iinfo(d).max]
                col = v.astype(fits[rng.integers(0, len(fits))])
            cols[a.name] = col
        if rng.random() < 0.1 and n:
            cols[MALFORMED] = rng.random(n) < 0.05
        batches.append((cols, n))
    return plan, list(names), batches


def _outcome(f):
    from blowfish_privacy.errors import InvalidColumn

    try:
        return "ok", f()
    except InvalidColumn as exc:
        return "invalid", exc.entries


@pytest.mark.parametrize("seed", range(40))
def test_gathered_fold_equals_the_map_step(monkeypatch, seed):
    """The Dask task's fold (integer batches gathered into reused buffers) gives fold's aggregates exactly."""
    from blowfish_privacy import _gather
    from blowfish_privacy._aggregate import fold
    from blowfish_privacy._gather import fold_gathered as _fold_gathered

    monkeypatch.setattr(_gather, "GATHER_ROWS", 1)  # the smallest buffers: batches split, many flushes
    rng = np.random.default_rng(seed)
    for _ in range(10):
        plan, cols, batches = _random_case(rng)
        want = _outcome(lambda: fold(iter(batches), plan, cols))
        got = _outcome(lambda: _fold_gathered(iter(batches), plan, cols))
        assert got[0] == want[0]
        if want[0] == "invalid":
            assert got[1] == want[1]
            continue
        for a, b in zip(want[1], got[1]):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_gather_takes_only_integer_batches_inside_the_domain():
    from blowfish_privacy._aggregate import MALFORMED
    from blowfish_privacy._gather import Gather as _Gather

    dom = Domain([Ordinal("a", -3, 40, bin_width=4), Categorical("b", [5, 6, 7])])
    plan = plan_for(dom, {"a": "a", "b": "b"}, [("histogram", ("a", "b")), ("histogram", ("b",))])
    g = _Gather.for_plan(plan, rows=1)
    assert g.rows == 1 << 10
    a, b = np.array([-3, 40, 7], np.int16), np.array([5, 7, 6], np.uint64)
    assert g.take({"a": a, "b": b}) and g.take({"a": a[:0], "b": b[:0]})
    assert not g.take({"a": np.array([-4, 0]), "b": np.array([5, 5])})  # outside: left to the map step
    assert not g.take({"a": a.astype(float), "b": b})
    assert not g.take({"a": a, "b": b, MALFORMED: np.array([False, True, False])})
    assert g.take({"a": a, "b": b, MALFORMED: np.zeros(3, bool)})
    g.flush()
    np.testing.assert_array_equal(g.counts[0], 2 * np.bincount(dom.encode({"a": a, "b": b}), minlength=dom.size))
    np.testing.assert_array_equal(g.counts[1], [2, 2, 2])
    assert _Gather.for_plan(plan_for(dom, {"a": "a", "b": "b"}, [("column", ("a",))])) is None
    assert _Gather.for_plan(plan_for(Domain([Categorical("s", ["f", "m"])]), {"s": "s"},
                                     [("histogram", ("s",))])) is None
    huge = Domain([Categorical("h", [2**63, 2**63 + 1])])  # labels beyond int64: the map step's own arithmetic
    assert _Gather.for_plan(plan_for(huge, {"h": "h"}, [("histogram", ("h",))])) is None


def test_reduce_many_is_the_pairwise_reduce_in_order():
    """A reduce task of any fan-in gives the left fold of the pairwise reduce, and leaves its inputs unchanged."""
    from functools import reduce

    from blowfish_privacy.release.dask_engine import _reduce_many
    from blowfish_privacy._aggregate import reduce as _reduce

    rng = np.random.default_rng(5)
    for _ in range(300):
        results = []
        for _ in range(rng.integers(2, 9)):  # a reduce task takes two partials or more
            u = rng.random()
            if u < 0.1:
                results.append(("error", f"problem {rng.integers(0, 3)}"))
            elif u < 0.25:
                results.append(("invalid", tuple(sorted({("a", "a", f"r{k}") for k in rng.integers(0, 3, 2)}))))
            else:
                results.append(("ok", [rng.integers(0, 9, 4).astype(np.int64), rng.random(int(rng.integers(0, 3)))]))
        copies = [(k, [x.copy() for x in v]) if k == "ok" else (k, v) for k, v in results]
        want, got = reduce(_reduce, results), _reduce_many(results, _reduce)
        assert got[0] == want[0]
        if want[0] == "ok":
            for a, b in zip(want[1], got[1]):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
            assert all(got[1][0] is not r[1][0] for r in results)  # an array of its own
        else:
            assert got == want
        for (k, v), (_, c) in zip(results, copies):
            if k == "ok":
                for x, y in zip(v, c):
                    np.testing.assert_array_equal(x, y)


def test_row_groups_are_split_in_order_and_whole():
    from blowfish_privacy.release.sources import split_rows as _split_rows

    rng = np.random.default_rng(3)
    for _ in range(500):
        rows = [int(r) for r in rng.integers(0, 50, rng.integers(1, 30))]
        pieces = int(rng.integers(1, 40))
        runs = _split_rows(rows, pieces)
        assert [i for run in runs for i in run] == list(range(len(rows)))
        assert all(runs) and len(runs) <= pieces
        if pieces <= len(rows) and sum(rows) and min(rows):
            assert len(runs) == pieces or max(sum(rows[i] for i in run) for run in runs) <= 2 * sum(rows) / pieces + 50


def test_parquet_files_become_one_task_each_unless_large(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from blowfish_privacy.release import sources
    from blowfish_privacy.release.sources import ParquetPart as _ParquetPart
    from blowfish_privacy.release.sources import _split_parquet as _pieces

    sizes = {}
    for name, rows, groups in (("small", 1000, 4), ("big", 40_000, 8), ("one", 40_000, 1)):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"a": np.arange(rows)}), path, row_group_size=rows // groups)
        sizes[name] = path.stat().st_size
    parts = [_ParquetPart((str(tmp_path / f"{n}.parquet"), {}, sizes[n])) for n in ("small", "big", "one")]
    # two worker threads: four tasks wanted, so each file above a quarter of the bytes is split (if it can be)
    out = _pieces(parts, 2)
    names = [Path(p.part[0]).stem for p in out]
    assert names.count("small") == 1 and names.count("one") == 1 and 2 <= names.count("big") <= 8
    big = [p.row_groups for p in out if Path(p.part[0]).stem == "big"]
    assert [i for run in big for i in run] == list(range(8))
    # many threads: a task per row group of every file with row groups to split
    assert len(_pieces(parts, 1000)) == 4 + 8 + 1
    # a file larger than PARQUET_PARTITION_BYTES is split even when there are tasks enough
    monkeypatch.setattr(sources, "PARQUET_PARTITION_BYTES", 1)
    assert len(_pieces(parts[:1], 1)) == 4
    assert _pieces(parts[:1], 1)[0].row_groups == (0,)


# -- the engine protocol and the registry ----------------------------------------------------------------------

def test_every_registered_engine_follows_the_protocol():
    from blowfish_privacy.release.aggregation import Engine
    from blowfish_privacy.release.engines import ENGINES, engine_names

    assert engine_names()[:2] == ["local", "dask"]
    for name, entry in ENGINES.items():
        assert entry.name == name == entry.cls.name
        assert entry.description and callable(entry.cls.map_reduce) and callable(entry.cls.aggregate)
    assert isinstance(ENGINES["local"].cls(progress=False), Engine)


def test_unknown_engines_and_options_are_refused_naming_what_is_allowed():
    from blowfish_privacy.release.engines import make_engine, register_engine, resolve_engine
    from blowfish_privacy.release.local_engine import LocalEngine

    with pytest.raises(ValueError, match=r"engine must be one of \['local', 'dask'.*got 'ray'"):
        make_engine("ray")
    with pytest.raises(ValueError, match=r"engine must be one of \['local', 'dask'.*got 'ray'"):
        resolve_engine("ray")
    with pytest.raises(TypeError, match=r"engine must be one of \['local', 'dask'.*got int"):
        resolve_engine(3)
    with pytest.raises(ValueError, match="scheduler: applies only with engine 'dask', not with engine 'local'"):
        make_engine("local", scheduler="tcp://x:1")
    assert isinstance(resolve_engine(None), LocalEngine) and isinstance(make_engine("local", workers=None), LocalEngine)
    engine = LocalEngine(progress=False)
    assert resolve_engine(engine) is engine
    with pytest.raises(ValueError, match="already registered"):
        register_engine("local", type("Other", (), {"name": "local", "map_reduce": lambda self, *a: None}), "x")
    with pytest.raises(ValueError, match="cls.name must be the registered name 'ray'"):
        register_engine("ray", LocalEngine, "x")


def test_release_checks_its_engine_against_the_registry(tmp_path):
    from release_specs import BASE, people, write_csv

    from blowfish_privacy.release import release
    from blowfish_privacy.release.local_engine import LocalEngine

    ages, sexes = people(200)
    write_csv(tmp_path / "people.csv", {"age": ages, "sex": sexes})
    (tmp_path / "spec.toml").write_text(BASE)
    ledger, out = tmp_path / "l.sqlite", tmp_path / "out"
    with pytest.raises(ValueError, match=r"engine must be one of \['local', 'dask'.*got 'ray'"):
        release(tmp_path / "spec.toml", ledger=ledger, new_ledger=True, out_dir=out, engine="ray")
    with pytest.raises(TypeError, match=r"engine must be one of \['local', 'dask'.*got int"):
        release(tmp_path / "spec.toml", ledger=ledger, new_ledger=True, out_dir=out, engine=3)
    assert not ledger.exists() and not out.exists()  # refused before the ledger or the output is touched
    result = release(tmp_path / "spec.toml", ledger=ledger, new_ledger=True, out_dir=out, engine="local", plots=False)
    assert [d["engine"] for d in result.releases] == [LocalEngine.name] * 2


def test_command_line_engines_come_from_the_registry(monkeypatch, capsys):
    from blowfish_privacy import cli
    from blowfish_privacy.release import engines
    from blowfish_privacy.release.local_engine import LocalEngine

    class Echo(LocalEngine):
        name = "echo"

    monkeypatch.setitem(engines.ENGINES, "echo", engines.EngineEntry("echo", Echo, "an engine of the test"))
    parser = cli.build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["release", "--help"])
    assert "echo (an engine of the test)" in " ".join(capsys.readouterr().out.split())
    args = parser.parse_args(["release", "spec.toml", "--engine", "echo"])
    assert isinstance(cli._engine(args), Echo)
    args = parser.parse_args(["release", "spec.toml", "--engine", "echo", "--scheduler", "tcp://x:1"])
    with pytest.raises(ValueError, match="--scheduler applies only with --engine dask"):
        cli._engine(args)


def test_a_frame_source_maps_like_the_table_fold():
    from blowfish_privacy._aggregate import fold_table, reduce, unwrap
    from blowfish_privacy.release.aggregation import AggregateMap
    from blowfish_privacy.release.local_engine import LocalEngine
    from blowfish_privacy.release.sources import FrameSource

    rng = np.random.default_rng(4)
    dom = Domain([Ordinal("a", 0, 9), Categorical("b", ["x", "y"])])
    cols = {"a": rng.integers(-2, 12, 1000), "b": rng.choice(["x", "y", "z"], 1000)}
    plan = plan_for(dom, {"a": "a", "b": "b"}, [("histogram", ("a", "b")), ("column", ("a",))], "clamp")
    spec = SimpleNamespace(path="spec.toml", source={"path": "<table>", "format": "table"})
    source = FrameSource(cols, "spec.toml: the data in a table", rows=64)
    got = unwrap(LocalEngine(progress=False).map_reduce(source, AggregateMap(spec, plan, list(cols)), reduce))
    for a, b in zip(got, fold_table(cols, plan)):
        np.testing.assert_array_equal(a, b)
    assert len(source.partitions(parallel=True)) == 16
    with pytest.raises(ValueError, match="rows must be a positive number"):
        FrameSource(cols, "t", rows=0)


def test_the_map_function_returns_errors_as_values_quoting_no_data():
    from blowfish_privacy.release.aggregation import AggregateMap

    dom = Domain([Ordinal("a", 0, 9)])
    spec = SimpleNamespace(path="spec.toml", source={"path": "d.csv", "format": "csv"})
    plan = plan_for(dom, {"a": "a"}, [("histogram", ("a",))], "error")
    fmap = AggregateMap(spec, plan, ["a"])
    assert fmap.result_bytes == 80
    kind, entries = fmap(iter([({"a": np.array([1, 31337])}, 0)]))
    assert kind == "invalid" and "31337" not in repr(entries)

    def broken():
        yield {"a": np.array([1])}, 0
        raise ValueError("cell 'secret-31337' is bad")

    kind, message = fmap(broken())
    assert kind == "error" and "31337" not in message and "ValueError" in message and "spec.toml" in message


def test_spark_options_are_refused_with_another_engine_and_conf_needs_key_value(workdir, capsys):
    from blowfish_privacy.cli import main

    base = ["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.db"), "--new-ledger"]
    assert main(base + ["--spark-master", "local[2]"]) == 2
    assert "--spark-master applies only with --engine spark" in capsys.readouterr().err
    assert main(base + ["--engine", "dask", "--spark-conf", "a=b"]) == 2
    assert "--spark-conf applies only with --engine spark" in capsys.readouterr().err
    assert main(base + ["--engine", "local", "--scheduler", "tcp://x:1"]) == 2
    assert "--scheduler applies only with --engine dask" in capsys.readouterr().err
    assert not (workdir / "l.db").exists()


def test_spark_engine_without_pyspark_or_java_is_one_line_naming_both(monkeypatch, workdir, capsys):
    import importlib.util
    import sys

    from blowfish_privacy.cli import main
    from blowfish_privacy.release import DataError, spark_engine
    from blowfish_privacy.release.spark_engine import SparkEngine

    monkeypatch.setitem(sys.modules, "pyspark", None)  # not installed
    with pytest.raises(DataError) as info:
        SparkEngine()
    msg = str(info.value)
    assert "pyspark" in msg and "Java 17" in msg and "blowfish-privacy[spark]" in msg and "\n" not in msg
    assert main(["release", str(workdir / "spec.toml"), "--engine", "spark", "--ledger", str(workdir / "l.db"),
                 "--new-ledger", "--out", str(workdir / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pyspark" in err and "Java 17" in err, err
    monkeypatch.delitem(sys.modules, "pyspark")
    if importlib.util.find_spec("pyspark") is None:
        return
    monkeypatch.setattr(spark_engine, "_java", lambda: None)  # pyspark there, no Java
    with pytest.raises(DataError, match=r"needs pyspark and Java 17 or newer"):
        SparkEngine()
    assert not (workdir / "o").exists()
