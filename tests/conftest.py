"""Fixtures shared by test modules in several folders, and where the tests find the shared data."""

import os
import shutil
import sys
from pathlib import Path

import pytest

# The package reads the DPBench data from BLOWFISH_DATA (or --data) only: point the variable at the shared data
# beside this test tree when it is there and unset.
_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not os.environ.get("BLOWFISH_DATA") and _SHARED.is_dir():
    os.environ["BLOWFISH_DATA"] = str(_SHARED)

#: The master of the tests' one Spark context.
SPARK_MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark():
    """The test session's one local[2] Spark context (the engine reuses a running context and leaves it running).

    Modules that use it skip themselves, with the reason, where pyspark or
    Java is missing.
    """
    from pyspark import SparkConf, SparkContext

    conf = (SparkConf().setMaster(SPARK_MASTER).setAppName("blowfish-tests").set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false").set("spark.pyspark.python", sys.executable))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    sc.pythonExec = sys.executable
    yield sc
    sc.stop()


@pytest.fixture
def spark_session(request):
    """A SparkSession on the session's one context; skips, saying which, without pyspark or Java."""
    pytest.importorskip("pyspark", reason="needs pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("needs Java for Spark")
    from pyspark.sql import SparkSession

    return SparkSession(request.getfixturevalue("spark"))
