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


@pytest.mark.parametrize("kind", ["silent", "garbage", "http", "closes"])
def test_scheduler_that_is_not_dask_fails_in_one_line(workdir, capsys, monkeypatch, kind):
    """Each fails within the timeout (1 s here, at each step) with one line, no traceback, nothing spent."""
    import threading

    from blowfish_privacy.release import Ledger, engines

    monkeypatch.setattr(engines, "SCHEDULER_TIMEOUT", 1.0)
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

    from blowfish_privacy.release.engines import _probe_scheduler

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=":0") as c:
        assert _probe_scheduler(c.scheduler_address, 5.0) is None
        worker = next(iter(c.scheduler.workers))
        assert _probe_scheduler(worker, 5.0) == "not a Dask scheduler (a Dask worker answered)"
    assert _probe_scheduler("foo://x", 1.0).startswith("not an address of a Dask scheduler")
