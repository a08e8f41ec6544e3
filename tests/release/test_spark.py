"""The Spark engine: the local engine's aggregates, releases and messages, on a local[2] session.

One Spark context serves the whole test session (the ``spark`` fixture of
tests/conftest.py; the engine uses a context that already runs in the
process and leaves it running).  Skipped, with the
reason, without pyspark or Java.
"""

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark", reason="the Spark engine tests need pyspark (pip install 'blowfish-privacy[spark]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("the Spark engine tests need Java 17 or newer (java on the PATH or JAVA_HOME)", allow_module_level=True)

from pyspark.sql import SparkSession

from blowfish_privacy import _spark_frames
from blowfish_privacy.cli import main
from blowfish_privacy.release import (
    DataError,
    Ledger,
    LedgerError,
    LocalEngine,
    SpecError,
    release,
    sources,
)
from blowfish_privacy.release.spark_engine import SparkEngine

pytestmark = pytest.mark.slow
MASTER = "local[2]"
HERE = Path(__file__).resolve().parent


def _module(name):
    """A sibling test module by path (its helpers: spec builders, rows, messages)."""
    spec = importlib.util.spec_from_file_location(f"_spark_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


nb = _module("test_neighbours")
mr = _module("test_malformed_rows")


# -- every release kind: the local engine's files -----------------------------------------------------------------

_DROPPED = nb._VOLATILE | {"engine", "run"}


def _leaves(folder: Path, dropped=_DROPPED) -> dict:
    out = {}
    for f in sorted(folder.iterdir()) if folder.exists() else ():
        if f.suffix == ".json":
            doc = json.loads(f.read_text())
            leaves = {}
            nb._flatten({k: v for k, v in doc.items() if k not in dropped}, f.name, leaves)
            out.update({k: v for k, v in leaves.items() if k.rsplit(".", 1)[-1] not in dropped})
        elif f.suffix == ".csv":
            out[f.name] = f.read_text()
        else:
            out[f"file:{f.name}"] = True
    return out


def _release(tmp: Path, spec: str, rows, engine: str, capsys) -> tuple:
    tmp.mkdir()
    (tmp / "spec.toml").write_text(spec)
    with open(tmp / "data.csv", "w") as fh:
        fh.write("age,sex,hours\n")
        fh.writelines(f"{a},{s},{h}\n" for a, s, h in rows)
    args = ["release", str(tmp / "spec.toml"), "--engine", engine, "--ledger", str(tmp / "l.db"), "--new-ledger",
            "--out", str(tmp / "out"), "--no-plots", "--quiet", "--seeded-test"]
    if engine == "spark":
        args += ["--spark-master", MASTER]
    code = main(args)
    err = capsys.readouterr().err.replace(str(tmp), "<tmp>")
    return code, err, _leaves(tmp / "out")


def _seeded(spec: str) -> str:
    if "allow_disclosures" not in spec:
        spec = spec.replace('id = "people"', 'id = "people"\nallow_disclosures = true', 1)
    return spec + "\n[run]\nseed = 7\n"


#: Every harness kind (every registered kind, the CDF mechanisms and k-means methods each) released under the
#: full-domain policy on clean and on clamped data, then the neighbour harness's fast cases (selections, drop,
#: error, refusals at plan time).
RELEASED = [(k, "full", c) for c in ("plain", "clamp") for k in nb.KINDS]
CASES = RELEASED + [x for x in nb.FAST if x not in RELEASED]


@pytest.mark.parametrize("kind,policy,case", CASES, ids=["-".join(x) for x in CASES])
def test_every_release_kind_is_the_local_engines(tmp_path, spark, capsys, monkeypatch, kind, policy, case):
    """Released files identical to the local engine's for the same seed; refusals word for word; a DataFrame too."""
    monkeypatch.setattr(sources, "CSV_PARTITION_BYTES", 40)  # a dozen tasks: a reduce tree of two levels
    monkeypatch.setattr(_spark_frames, "COLLECT_BYTES", 0)  # its steps run on the executors, however small
    spec = _seeded(nb._spec(kind, policy, case))
    rows = nb._rows(False, nb.CASES[case][2])
    got = {e: _release(tmp_path / e, spec, rows, e, capsys) for e in ("local", "spark")}
    (lc, le, lo), (sc, se, so) = got["local"], got["spark"]
    assert (lc, le) == (sc, se)
    assert lo == so
    if (kind, policy, case) in RELEASED:
        assert lc == 0 and lo, le
    # the same rows as a Spark DataFrame, released from Python: the same files (the source named otherwise)
    native = [(int(a), str(x), int(h)) for a, x, h in rows]
    frame = SparkSession(spark).createDataFrame(spark.parallelize(native, 3), "age long, sex string, hours long")
    try:
        release(spec.replace('path = "data.csv"\n', "", 1), frame, ledger=tmp_path / "f.db", new_ledger=True,
                out_dir=tmp_path / "frame", allow_seeded=True, plots=False)
        fc = 0
    except (DataError, SpecError, LedgerError):
        fc = 2
    assert (fc == 0) == (lc == 0), le
    if lc == 0:
        dropped = _DROPPED | {"source", "spec_sha256"}  # the spec without its path
        assert _leaves(tmp_path / "frame", dropped) == _leaves(tmp_path / "local" / "out", dropped)


def test_every_registered_kind_is_released():
    from blowfish_privacy import registry

    assert {nb.KINDS[k][3] for k, _, _ in RELEASED} == set(registry.kinds())


# -- malformed rows and invalid = "error": the local engine's messages ------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("dirty", [False, True])
def test_malformed_rows_and_invalid_values_as_the_local_engine(tmp_path, spark, monkeypatch, gz, dirty):
    monkeypatch.setattr(sources, "CSV_PARTITION_BYTES", 100)  # many blocks: malformed rows in several of them
    good = mr._good_rows(150, seed=4, dirty=dirty)
    rows = mr._with_malformed(good, [0, 1, 40, 41, 99, 150])
    path = mr._write(tmp_path, rows, gz=gz)
    engine = SparkEngine(MASTER)
    for mode in mr.MODES:
        spec = mr._spec(path, mode)
        if mode == "error":
            msgs = []
            for e in (LocalEngine(progress=False), engine):
                with pytest.raises(DataError) as info:
                    e.aggregate(spec, mr.NEEDS)
                msgs.append(str(info.value))
            assert msgs[0] == msgs[1]
            mr._check_message(msgs[0], tmp_path)
            continue
        want = mr._reference(rows, dict.fromkeys(mr.DOM.names, mode))
        mr._same(LocalEngine(progress=False).aggregate(spec, mr.NEEDS), want)
        mr._same(engine.aggregate(spec, mr.NEEDS), want)


# -- order, broadcast, failures ----------------------------------------------------------------------------------

def _age_spec(tmp_path, invalid="clamp"):
    from types import SimpleNamespace

    from blowfish_privacy import Domain, Ordinal

    return SimpleNamespace(path=str(tmp_path / "spec.toml"), source={"path": str(tmp_path), "format": "parquet"},
                           domain=Domain([Ordinal("age", 0, 99)]), columns={"age": "age"}, invalid={"age": invalid})


def _parts(count, rows, *, fail=(), outside=(), crash=()):
    def make(k):
        def part(columns):
            rng = np.random.default_rng([7, k])
            for b in range(3):
                age = rng.integers(0, 100, rows)
                if k in outside and b == 1:
                    age[rows // 2] = 500
                yield {"age": age}, 8 * rows
                if k in fail and b == 1:
                    raise DataError(f"problem in part {k}")
                if k in crash:
                    raise RuntimeError("cell 'secret-31337' broke the reader")
        return part

    return [make(k) for k in range(count)]


@pytest.mark.parametrize("collect", [0, 64 << 20], ids=["tree-on-executors", "collected-at-once"])
def test_errors_are_the_first_in_partition_order_and_counts_exact(tmp_path, spark, monkeypatch, collect):
    monkeypatch.setattr(_spark_frames, "COLLECT_BYTES", collect)
    from blowfish_privacy._aggregate import fold, plan_columns, spec_plan

    engine = SparkEngine(MASTER)
    needs = [("histogram", ("age",))]
    spec = _age_spec(tmp_path)
    parts = _parts(30, 500, outside={4})
    got = engine.aggregate_parts(spec, needs, parts)[needs[0]]
    plan = spec_plan(spec, needs)
    cols = plan_columns(plan)
    np.testing.assert_array_equal(got, sum(fold(p(cols), plan, cols)[0] for p in parts))
    with pytest.raises(DataError, match="^problem in part 3$"):
        engine.aggregate_parts(spec, needs, _parts(20, 100, fail={17, 3, 11}))
    with pytest.raises(DataError) as info:
        engine.aggregate_parts(_age_spec(tmp_path, "error"), needs, _parts(20, 100, outside={9}))
    assert "domain.age" in str(info.value) and "500" not in str(info.value)


def test_a_failed_task_is_one_line_quoting_no_data(tmp_path, spark):
    engine = SparkEngine(MASTER)
    needs = [("histogram", ("age",))]
    with pytest.raises(DataError) as info:
        engine.aggregate_parts(_age_spec(tmp_path), needs, _parts(4, 50, crash={2}))
    msg = str(info.value)
    assert "\n" not in msg and "31337" not in msg and "the Spark job failed" in msg, msg
    assert engine.aggregate_parts(_age_spec(tmp_path), needs, _parts(4, 50))[needs[0]].sum() == 600  # still usable


def _counted(spec, log):
    from types import SimpleNamespace

    class Counted(SimpleNamespace):
        def __reduce__(self):
            return rebuild, (dict(vars(self)),)

    def rebuild(values):
        with open(log, "a") as fh:
            fh.write("unpickled\n")
        return Counted(**values)

    return Counted(**vars(spec))


def test_the_source_is_sent_once_not_with_each_task(tmp_path, spark):
    engine = SparkEngine(MASTER)
    needs = [("histogram", ("age",))]
    counts = []
    for n in (2, 40):
        log = tmp_path / f"log{n}"
        log.write_text("")
        got = engine.aggregate_parts(_counted(_age_spec(tmp_path), log), needs, _parts(n, 100))
        assert got[needs[0]].sum() == n * 300
        counts.append(len(log.read_text().splitlines()))
    assert counts[1] <= 4, counts  # once per Python worker (local[2]: two, maybe a replacement), not per task


# -- the master ------------------------------------------------------------------------------------------------

def test_an_unreachable_master_fails_in_one_line_spending_nothing(workdir, spark, capsys):
    code = main(["release", str(workdir / "spec.toml"), "--engine", "spark", "--spark-master", "spark://127.0.0.1:1",
                 "--ledger", str(workdir / "l.db"), "--new-ledger", "--out", str(workdir / "o"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("blowfish: error:"), err
    assert "--spark-master 'spark://127.0.0.1:1': cannot reach it" in err, err
    assert not (workdir / "o").exists()
    assert Ledger(workdir / "l.db").summary() == {}


@pytest.mark.parametrize("gone", ["people.csv", "folder"])
def test_a_missing_file_is_the_local_engines_one_line_spending_nothing(workdir, spark, capsys, gone):
    spec = (workdir / "spec.toml").read_text()
    if gone == "folder":
        spec = spec.replace('path = "people.csv"', 'path = "parts"')
    else:
        (workdir / "people.csv").unlink()
    (workdir / "spec.toml").write_text(spec)
    errs = {}
    for engine in ("local", "spark"):
        code = main(["release", str(workdir / "spec.toml"), "--engine", engine, "--ledger", str(workdir / "l.db"),
                     "--new-ledger", "--out", str(workdir / engine), "--quiet"])
        errs[engine] = (code, capsys.readouterr().err.strip())
        assert not (workdir / engine).exists()
    assert errs["spark"] == errs["local"] and errs["spark"][0] == 2
    assert len(errs["spark"][1].splitlines()) == 1 and "blowfish: error:" in errs["spark"][1]
    assert Ledger(workdir / "l.db").summary() == {}


def test_another_master_than_the_running_context_is_refused(workdir, spark):
    from blowfish_privacy.release import load_spec

    with pytest.raises(DataError, match="already running in this process"):
        SparkEngine("local[1]").aggregate(load_spec(workdir / "spec.toml"), [("histogram", ("age",))])
    with pytest.raises(DataError, match="spark://HOST:PORT"):
        SparkEngine("sc://host:15002").aggregate(load_spec(workdir / "spec.toml"), [("histogram", ("age",))])


# -- Spark DataFrames as inputs ------------------------------------------------------------------------------

def test_release_of_a_spark_dataframe_equals_the_pandas_release(tmp_path, spark):
    """release(spec, spark_df): mapped in Spark with mapInArrow, the pandas table's results for the same seed."""
    pd = pytest.importorskip("pandas")
    from release_specs import BASE, people

    session = SparkSession(spark)
    age, sex = people(3000, 3)
    age = age.copy()
    age[[5, 77]] = [250, -4]  # outside: clamped by the default rule
    pdf = pd.DataFrame({"age": age, "sex": sex, "other": np.arange(len(age)) * 0.5})
    sdf = session.createDataFrame(pdf).repartition(5)
    spec = BASE.replace('path = "people.csv"\n', "") + "\n[run]\nseed = 3\n"
    led = tmp_path / "l.db"
    a = release(spec, pdf, ledger=led, new_ledger=True, out_dir=tmp_path / "pandas", allow_seeded=True, plots=False)
    b = release(spec, sdf, ledger=led, new_ledger=True, out_dir=tmp_path / "spark", allow_seeded=True, plots=False)
    skip = {"engine", "run", "time", "source"}
    for x, y in zip(a.releases, b.releases):
        assert {k: v for k, v in x.items() if k not in skip} == {k: v for k, v in y.items() if k not in skip}
        assert y["engine"] == "spark"
    with pytest.raises(DataError) as info:  # invalid = "error": the columns and rules, never a value
        release(spec.replace('id = "people"', 'id = "people"\ninvalid = "error"'), sdf, ledger=led,
                out_dir=tmp_path / "e", allow_seeded=True)
    assert "domain.age: column 'age' has values outside the domain" in str(info.value)
    assert "250" not in str(info.value) and "Spark DataFrame" in str(info.value)
    with pytest.raises(DataError, match="column 'sex' not found in the Spark DataFrame"):
        release(spec, sdf.drop("sex"), ledger=led, out_dir=tmp_path / "m", allow_seeded=True)


# -- a session of the engine's own (another process: this module's context would be reused) ----------------------

_OWN = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/release"]
from pathlib import Path
import test_spark as ts
from blowfish_privacy.cli import main
from blowfish_privacy.release import DataError
from blowfish_privacy.release.spark_engine import SparkEngine
tmp = Path(sys.argv[2])
try:
    SparkEngine().aggregate_parts(ts._age_spec(tmp), [("histogram", ("age",))], ts._parts(4, 50, crash={2}))
except DataError as exc:
    print("FAILED", exc)
code = main(["release", str(tmp / "spec.toml"), "--engine", "spark", "--ledger", str(tmp / "l.db"), "--new-ledger",
             "--out", str(tmp / "spark"), "--no-plots", "--quiet", "--seeded-test", "--spark-conf",
             "spark.sql.shuffle.partitions=3"])
print("CODE", code)
"""


def test_the_engine_starts_and_stops_its_own_local_session(tmp_path):
    import subprocess

    from release_specs import BASE, SEEDED, people, write_csv

    age, sex = people()
    write_csv(tmp_path / "people.csv", {"age": age, "sex": sex}, lineterminator="\n")
    (tmp_path / "spec.toml").write_text(BASE + SEEDED)  # BASE allows disclosures: a seeded run is one
    res = subprocess.run([sys.executable, "-c", _OWN, str(HERE.parent), str(tmp_path)], capture_output=True,
                         text=True, timeout=600, check=False)
    assert "CODE 0" in res.stdout, res.stdout + res.stderr[-3000:]
    assert "FAILED" in res.stdout and "the Spark job failed" in res.stdout
    assert "31337" not in res.stdout + res.stderr and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert main(["release", str(tmp_path / "spec.toml"), "--ledger", str(tmp_path / "l.db"), "--out",
                 str(tmp_path / "local"), "--no-plots", "--quiet", "--seeded-test"]) == 0
    for name in ("age-cdf.json", "age-sex.json"):
        a, b = (json.loads((tmp_path / e / name).read_text()) for e in ("local", "spark"))
        assert a["engine"] == "local" and b["engine"] == "spark"
        assert {k: v for k, v in a.items() if k not in _DROPPED} == {k: v for k, v in b.items() if k not in _DROPPED}


_NOT_SPARK = """
import sys
from blowfish_privacy.release import spark_engine
spark_engine.REGISTER_TIMEOUT = 3
from blowfish_privacy.cli import main
sys.exit(main(["release", sys.argv[1], "--engine", "spark", "--spark-master", sys.argv[2], "--ledger", sys.argv[3],
               "--new-ledger", "--out", sys.argv[4], "--quiet"]))
"""


def test_a_master_address_that_is_not_spark_fails_in_one_line_spending_nothing(workdir):
    """A server that accepts the connection but does not speak Spark: refused when the registration times out."""
    import socket
    import subprocess
    import threading
    import time

    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def accept():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)  # kept open, never answered

    threading.Thread(target=accept, daemon=True).start()
    master = f"spark://127.0.0.1:{server.getsockname()[1]}"
    t0 = time.monotonic()
    try:
        res = subprocess.run([sys.executable, "-c", _NOT_SPARK, str(workdir / "spec.toml"), master,
                              str(workdir / "l.db"), str(workdir / "o")], capture_output=True, text=True,
                             timeout=300, check=False)
    finally:
        server.close()
        for conn in held:
            conn.close()
    took = time.monotonic() - t0
    ours = [line for line in res.stderr.splitlines() if line.startswith("blowfish")]
    assert res.returncode == 2, res.stderr[-3000:]
    assert len(ours) == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert f"--spark-master '{master}': its port answers, but it did not accept the application within 3 s" in ours[0]
    assert held, "the engine never connected"
    assert took < 60, took  # Spark alone would retry for about a minute
    assert not (workdir / "o").exists()
    assert Ledger(workdir / "l.db").summary() == {}


# -- the other sources: a Parquet folder with hive keys (row groups split between tasks), a bundled dataset -------

def test_parquet_folder_with_hive_keys_and_a_bundled_dataset_as_the_local_engine(tmp_path, spark, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from release_specs import BASE

    from blowfish_privacy.cli import _demo_spec_text
    from blowfish_privacy.release import load_spec

    rng = np.random.default_rng(5)
    for s, rows in (("f", 30_000), ("m", 9_000)):
        (tmp_path / "people" / f"sex={s}").mkdir(parents=True)
        age = rng.integers(0, 100, rows)
        age[rows // 2] = 140  # outside: clamped
        pq.write_table(pa.table({"age": age, "other": rng.random(rows)}),
                       tmp_path / "people" / f"sex={s}" / "p.parquet", row_group_size=rows // 7)
    (tmp_path / "spec.toml").write_text(BASE.replace('path = "people.csv"', 'path = "people"\ninvalid = "clamp"'))
    spec = load_spec(tmp_path / "spec.toml")
    needs = [("histogram", ("age",)), ("histogram", ("sex", "age")), ("histogram", ("age",), (("sex", "f"),)),
             ("column", ("age",))]
    monkeypatch.setattr(sources, "PARTITIONS_PER_SLOT", 6)  # the larger file split at row-group boundaries
    local, remote = LocalEngine(progress=False).aggregate(spec, needs), SparkEngine(MASTER).aggregate(spec, needs)
    for need in needs:
        assert local[need].dtype == remote[need].dtype
        np.testing.assert_array_equal(local[need], remote[need])  # a column in the same row order too
    assert local[needs[0]].sum() == 39_000 and local[needs[2]].sum() == 30_000

    (tmp_path / "demo.toml").write_text(_demo_spec_text())
    demo = load_spec(tmp_path / "demo.toml")
    needs = [("histogram", (demo.domain.names[0],))]
    np.testing.assert_array_equal(LocalEngine(progress=False).aggregate(demo, needs)[needs[0]],
                                  SparkEngine(MASTER).aggregate(demo, needs)[needs[0]])


def test_the_master_comes_by_spark_master_only_and_local_means_local():
    from blowfish_privacy.release.spark_engine import probe_master

    for key in ("spark.master", "spark.remote"):
        with pytest.raises(DataError, match=f"--spark-conf {key}=...: give the master with --spark-master"):
            SparkEngine(conf={key: "spark://127.0.0.1:1"})
    for local in ("local", "local[2]", "local[*]", "local[4,2]", "local-cluster[2,1,1024]"):
        assert probe_master(local, 1.0) is None
    for wrong in ("localhost:7077", "local[abc]", "http://host:7077"):
        assert probe_master(wrong, 1.0) == "not a Spark master URL (spark://HOST:PORT, local[N], yarn, k8s://...)"
