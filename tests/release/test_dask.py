"""The Dask engine: same exact aggregates as the local engine, with two worker processes."""

import json

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("distributed")

from release_specs import BASE, SEEDED  # noqa: E402

from blowfish_privacy.cli import main  # noqa: E402
from blowfish_privacy.release import DaskEngine, LocalEngine, load_spec  # noqa: E402


def _parquet_dataset(folder, parts=3, rows=20_000, bad=False):
    folder.mkdir()
    rng = np.random.default_rng(11)
    for k in range(parts):
        age = rng.integers(0, 100, rows)
        if bad and k == parts - 1:
            age[17] = 120
        df = pd.DataFrame({"age": age, "sex": rng.choice(["f", "m"], rows), "other": rng.random(rows)})
        df.to_parquet(folder / f"part-{k}.parquet", index=False)


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        assert len(c.workers) == 2
        yield c


@pytest.mark.slow
def test_dask_and_local_aggregates_and_releases_are_identical(tmp_path, cluster, capsys):
    _parquet_dataset(tmp_path / "people")
    (tmp_path / "spec.toml").write_text(BASE.replace('path = "people.csv"', 'path = "people"') + SEEDED)
    spec = load_spec(tmp_path / "spec.toml")
    assert spec.source["format"] == "parquet"
    needs = [("histogram", ("age",)), ("histogram", ("sex", "age")), ("histogram", ("sex", "age"), (("sex", "m"),)),
             ("column", ("age",))]
    local = LocalEngine(progress=False).aggregate(spec, needs)
    dask = DaskEngine(cluster.scheduler_address).aggregate(spec, needs)
    for need in needs:
        assert local[need].dtype == dask[need].dtype
        np.testing.assert_array_equal(np.sort(local[need]), np.sort(dask[need]))  # a column's row order may differ
        if need[0] == "histogram":
            np.testing.assert_array_equal(local[need], dask[need])
    assert local[needs[2]].sum() < local[needs[1]].sum()
    assert local[needs[0]].sum() == 60_000

    docs = {}
    for engine in ("local", "dask"):
        args = ["release", str(tmp_path / "spec.toml"), "--engine", engine, "--ledger", str(tmp_path / f"{engine}.db"), "--new-ledger",
                "--out", str(tmp_path / engine), "--no-plots", "--quiet", "--seeded-test"]
        if engine == "dask":
            args += ["--scheduler", cluster.scheduler_address]
        assert main(args) == 0, capsys.readouterr().err
        docs[engine] = [json.loads((tmp_path / engine / f"{n}.json").read_text()) for n in ("age-cdf", "age-sex")]
    for a, b in zip(docs["local"], docs["dask"]):
        assert a["engine"] == "local" and b["engine"] == "dask"
        for key in ("counts", "cumulative", "ranges", "quantiles"):
            assert a.get(key) == b.get(key)


@pytest.mark.slow
def test_dask_value_outside_the_domain_spends_nothing(tmp_path, cluster, capsys):
    _parquet_dataset(tmp_path / "people", bad=True)
    # an explicit domain check (invalid = "error"): refused, nothing spent, recorded as a disclosure
    (tmp_path / "spec.toml").write_text(BASE.replace('path = "people.csv"', 'path = "people"\ninvalid = "error"'))
    code = main(["release", str(tmp_path / "spec.toml"), "--engine", "dask", "--scheduler", cluster.scheduler_address,
                 "--ledger", str(tmp_path / "l.db"), "--new-ledger", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.replace(str(tmp_path), "<tmp>")  # the folder's name may hold any digits
    assert code == 2 and "domain.age" in err and "120" not in err  # never a data value
    assert not (tmp_path / "o").exists()
    from blowfish_privacy.release import Ledger

    s = Ledger(tmp_path / "l.db").summary()["people"]
    assert s["spent"] == 0 and s["disclosures"] == 1


def test_scheduler_needs_dask_engine(workdir, capsys):
    assert main(["release", str(workdir / "spec.toml"), "--scheduler", "tcp://127.0.0.1:1",
                 "--ledger", str(workdir / "l.db"), "--new-ledger"]) == 2
    assert "--scheduler applies only with --engine dask" in capsys.readouterr().err


@pytest.mark.slow
def test_dask_engine_starts_its_own_two_worker_cluster_on_bundled_data(tmp_path, capsys):
    from blowfish_privacy.cli import _demo_spec_text

    seeded = _demo_spec_text().replace("total_epsilon = 1.5", "total_epsilon = 1.5\nallow_disclosures = true")
    (tmp_path / "spec.toml").write_text(seeded + "\n[run]\nseed = 5\n")
    outs = {}
    for engine in ("local", "dask"):
        args = ["release", str(tmp_path / "spec.toml"), "--engine", engine, "--ledger", str(tmp_path / f"{engine}.db"), "--new-ledger",
                "--out", str(tmp_path / engine), "--no-plots", "--quiet", "--seeded-test"]
        if engine == "dask":
            args += ["--workers", "2"]
        assert main(args) == 0, capsys.readouterr().err
        outs[engine] = json.loads((tmp_path / engine / "age-histogram.json").read_text())
    assert outs["local"]["counts"] == outs["dask"]["counts"]
    assert sum(outs["local"]["counts"]) != 0


# -- --scheduler pointing at something that is not a Dask scheduler -----------------------------------------

def _serve(kind):
    """A local TCP service, in a thread, that is not a Dask scheduler; its address and a function to stop it."""
    import http.server
    import socket
    import threading

    if kind == "http":  # python3 -m http.server
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return f"tcp://127.0.0.1:{srv.server_address[1]}", lambda: (srv.shutdown(), srv.server_close())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    conns = []

    def loop():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conns.append(conn)
            if kind == "garbage":  # a length prefix of 2**64 - 1 frames, then noise
                conn.sendall(b"\xff" * 8 + bytes(range(256)) * 4)
            elif kind == "closes":
                conn.close()
            # "silent": accepts, reads nothing, says nothing

    threading.Thread(target=loop, daemon=True).start()

    def stop():
        sock.close()
        for c in conns:
            c.close()

    return f"tcp://127.0.0.1:{sock.getsockname()[1]}", stop


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["silent", "garbage", "http", "closes"])
def test_scheduler_that_is_not_dask_fails_in_one_line(workdir, capsys, monkeypatch, kind):
    """Each fails within the timeout (1 s here, at each step) with one line, no traceback, nothing spent."""
    import threading

    from blowfish_privacy.release import Ledger, dask_engine

    monkeypatch.setattr(dask_engine, "SCHEDULER_TIMEOUT", 1.0)
    address, stop = _serve(kind)
    done = {}

    def run():
        done["code"] = main(["release", str(workdir / "spec.toml"), "--engine", "dask", "--scheduler", address,
                             "--ledger", str(workdir / "l.db"), "--new-ledger", "--out", str(workdir / "o"),
                             "--quiet"])

    try:
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(60)  # a guard against a hang (the command used to wait for ever), not a measure
        assert not worker.is_alive(), "the command did not return"
    finally:
        stop()
    err = capsys.readouterr().err.strip()
    assert done["code"] == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("blowfish: error:"), err
    assert f"--scheduler {address!r}: " in err, err
    assert "not a Dask scheduler" in err or "did not answer within 1 s" in err, err
    if kind in ("garbage", "closes"):
        assert "not a Dask scheduler" in err, err
    if kind == "silent":
        assert "did not answer within 1 s" in err, err
    assert not (workdir / "o").exists()
    assert Ledger(workdir / "l.db").summary() == {}


def test_probe_knows_a_scheduler_from_a_worker():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    from blowfish_privacy.release.dask_engine import probe_scheduler as _probe_scheduler

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=":0") as c:
        assert _probe_scheduler(c.scheduler_address, 5.0) is None
        worker = next(iter(c.scheduler.workers))
        assert _probe_scheduler(worker, 5.0) == "not a Dask scheduler (a Dask worker answered)"
    assert _probe_scheduler("foo://x", 1.0).startswith("not an address of a Dask scheduler")


# -- tasks, plan shipping, tree reduce, generated parts -------------------------------------------------------

def _generated_parts(count, rows, *, fail=(), outside=()):
    """Parts drawing their rows from a seed on the worker (closures: Dask sends them by value)."""
    from blowfish_privacy.release import DataError as _DataError

    def make(k):
        def part(columns):
            rng = np.random.default_rng([7, k])
            for b in range(3):
                age = rng.integers(0, 100, rows)
                if k in outside and b == 1:
                    age[rows // 2] = 500
                yield {"age": age}, 8 * rows
                if k in fail and b == 1:
                    raise _DataError(f"problem in part {k}")
        return part

    return [make(k) for k in range(count)]


def _age_spec(tmp_path, invalid="clamp"):
    from types import SimpleNamespace

    from blowfish_privacy import Domain, Ordinal

    return SimpleNamespace(path=str(tmp_path / "spec.toml"), source={"path": str(tmp_path), "format": "parquet"},
                           domain=Domain([Ordinal("age", 0, 99)]), columns={"age": "age"}, invalid={"age": invalid})


@pytest.mark.slow
def test_generated_parts_reduce_in_a_tree_to_the_local_map_step(tmp_path, cluster):
    """30 parts: a reduce tree of three levels (fan-in 8); the counts are those of the local map step."""
    from blowfish_privacy._aggregate import fold
    from blowfish_privacy._aggregate import plan_columns as _plan_columns
    from blowfish_privacy._aggregate import spec_plan as _plan

    spec = _age_spec(tmp_path)
    needs = [("histogram", ("age",))]
    parts = _generated_parts(30, 5000, outside={4})
    got = DaskEngine(cluster.scheduler_address, progress=False).aggregate_parts(spec, needs, parts)[needs[0]]
    plan = _plan(spec, needs)
    cols = _plan_columns(plan)
    want = sum(fold(p(cols), plan, cols)[0] for p in parts)
    np.testing.assert_array_equal(got, want)
    assert got.sum() == 30 * 3 * 5000 and got[99] > 0  # the value outside clamped to the top


@pytest.mark.slow
def test_generated_parts_errors_are_the_first_in_order_and_value_free(tmp_path, cluster):
    from blowfish_privacy.release import DataError

    engine = DaskEngine(cluster.scheduler_address, progress=False)
    needs = [("histogram", ("age",))]
    with pytest.raises(DataError, match="^problem in part 3$"):
        engine.aggregate_parts(_age_spec(tmp_path), needs, _generated_parts(20, 100, fail={17, 3, 11}))
    with pytest.raises(DataError) as info:  # a value outside the domain under invalid = "error"
        engine.aggregate_parts(_age_spec(tmp_path, "error"), needs, _generated_parts(20, 100, outside={9}))
    assert "domain.age" in str(info.value) and "500" not in str(info.value)
    with pytest.raises(ValueError, match="at least one part"):
        engine.aggregate_parts(_age_spec(tmp_path), needs, [])


def _counted(spec, log):
    """``spec`` as an object that appends a line to the file ``log`` each time it is unpickled (on a worker)."""
    from types import SimpleNamespace

    class Counted(SimpleNamespace):
        def __reduce__(self):
            return rebuild, (dict(vars(self)),)

    def rebuild(values):
        with open(log, "a") as fh:
            fh.write("unpickled\n")
        return Counted(**values)  # counted again if it travels on

    return Counted(**vars(spec))


@pytest.mark.slow
def test_the_plan_is_sent_once_not_with_each_task(tmp_path, cluster):
    """The spec reaches each worker once (scattered), not with each of 40 tasks."""
    engine = DaskEngine(cluster.scheduler_address, progress=False)
    needs = [("histogram", ("age",))]
    counts = []
    for n in (2, 40):
        log = tmp_path / f"log{n}"
        log.write_text("")
        got = engine.aggregate_parts(_counted(_age_spec(tmp_path), log), needs, _generated_parts(n, 100))
        assert got[needs[0]].sum() == n * 300
        counts.append(len(log.read_text().splitlines()))
    assert 1 <= counts[1] <= len(cluster.workers) and counts[0] <= len(cluster.workers)


@pytest.mark.slow
def test_parquet_row_groups_split_between_tasks_agree_with_local(tmp_path, cluster, monkeypatch):
    """Few files of many row groups: split between tasks at row-group boundaries, the same aggregates."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from blowfish_privacy.release import sources

    folder = tmp_path / "people"
    folder.mkdir()
    rng = np.random.default_rng(2)
    for k, rows in enumerate((50_000, 7_000)):
        age = rng.integers(0, 100, rows)
        age[rows // 3] = 130  # outside: clamped under "clamp"
        pq.write_table(pa.table({"age": age, "sex": rng.choice(["f", "m"], rows)}), folder / f"p{k}.parquet",
                       row_group_size=rows // 9)
    (tmp_path / "spec.toml").write_text(BASE.replace('path = "people.csv"', 'path = "people"\ninvalid = "clamp"'))
    spec = load_spec(tmp_path / "spec.toml")
    needs = [("histogram", ("age",)), ("histogram", ("sex", "age")), ("histogram", ("age",), (("sex", "f"),)),
             ("column", ("age",))]
    monkeypatch.setattr(sources, "PARTITIONS_PER_SLOT", 6)  # 12 tasks wanted: the larger file is split
    source = sources.SpecSource(spec, ["age", "sex"])
    parts = source.balance(source.partitions(parallel=True), 2)
    assert len(parts) > 2 and any(p.row_groups is not None for p in parts)
    local = LocalEngine(progress=False).aggregate(spec, needs)
    dask = DaskEngine(cluster.scheduler_address, progress=False).aggregate(spec, needs)
    for need in needs:
        if need[0] == "histogram":
            np.testing.assert_array_equal(local[need], dask[need])
        else:
            np.testing.assert_array_equal(np.sort(local[need]), np.sort(dask[need]))
    assert local[needs[0]].sum() == 57_000 and local[needs[0]][99] >= 2


@pytest.mark.slow
def test_progress_bar_follows_the_whole_tree(tmp_path, cluster, monkeypatch):
    import sys

    import distributed

    shown = []
    monkeypatch.setattr(distributed, "progress", lambda *futures: shown.extend(futures))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    needs = [("histogram", ("age",))]
    got = DaskEngine(cluster.scheduler_address).aggregate_parts(_age_spec(tmp_path), needs, _generated_parts(10, 50))
    assert got[needs[0]].sum() == 1500
    assert len(shown) == 1 and str(shown[0].key).startswith("_reduce_many")  # the root: it depends on every task
    shown.clear()
    DaskEngine(cluster.scheduler_address, progress=False).aggregate_parts(_age_spec(tmp_path), needs,
                                                                         _generated_parts(10, 50))
    assert shown == []


@pytest.mark.slow
def test_scaling_benchmark_runs_small(tmp_path):
    """benchmarks/bench_dask_scaling.py at a small size: Dask identical to local, generated counts exact."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_dask_scaling.py"
    res = subprocess.run([sys.executable, str(script), "--rows", "2e5", "--files", "4", "--generated", "2e6",
                          "--part-rows", "3e5", "--repeats", "1", "--check"], capture_output=True, text=True,
                         env={**os.environ, "BENCH_TMP": str(tmp_path)}, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout
    assert "Dask identical to local: True" in out
    assert "2,000,000 rows in 7 parts" in out and "counts sum to the rows: True" in out
    assert "identical to the local map step over the same parts: True" in out
    assert list(tmp_path.iterdir()) == []  # the files are deleted
