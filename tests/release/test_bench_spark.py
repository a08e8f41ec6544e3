"""benchmarks/bench_spark_scaling.py at a small size: every engine's histogram and Spark's own groupBy identical."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

if importlib.util.find_spec("pyspark") is None:
    pytest.skip("the Spark benchmark needs pyspark (pip install 'blowfish-privacy[spark]')", allow_module_level=True)
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("the Spark benchmark needs Java 17 or newer (java on the PATH or JAVA_HOME)", allow_module_level=True)

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_spark_scaling.py"


def test_spark_scaling_benchmark_runs_small(tmp_path):
    import json

    work, figures = tmp_path / "work", tmp_path / "figures.json"
    work.mkdir()
    args = ["--rows", "2e5", "--files", "4", "--repeats", "1", "--json", str(figures)]
    if importlib.util.find_spec("distributed") is None:
        args.append("--skip-dask")
    res = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                         env={**os.environ, "BENCH_TMP": str(work)}, timeout=600, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    out = res.stdout
    assert "wrote 200,000 rows as 4 Parquet files" in out
    assert "spark identical to local: True" in out
    assert "(a) identical to local: True" in out and "(b) identical to local: True" in out
    if "--skip-dask" not in args:
        assert "dask identical to local: True" in out
    assert "identical to local: False" not in out
    assert "spark JVM" in out and "python worker" in out  # the Spark processes were found and sampled
    report = json.loads(figures.read_text())
    assert report["identical"]["spark"] and all(report["frame"]["identical"].values())
    assert report["session"]["first"] > report["session"]["job"] > 0
    assert list(work.iterdir()) == []  # the files are deleted
