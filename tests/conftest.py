"""Fixtures shared by test modules in several folders, and where the tests find the shared data."""

import os
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
