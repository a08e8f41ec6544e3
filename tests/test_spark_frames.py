"""Spark DataFrames as inputs: histogram (counted in Spark), Domain.encode, BlowfishKMeans; the ordered reduce tree.

Every answer is compared with the same rows given as a pandas DataFrame or
a pyarrow Table.  Uses the test session's one local[2] Spark context
(tests/conftest.py); skipped, with the reason, without pyspark or Java.
"""

import os
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark", reason="the Spark DataFrame tests need pyspark (pip install 'blowfish-privacy[spark]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("the Spark DataFrame tests need Java 17 or newer (java on the PATH or JAVA_HOME)",
                allow_module_level=True)

import pyarrow as pa

from blowfish_privacy import Domain, Policy, histogram, secrets
from blowfish_privacy.errors import TableError
from blowfish_privacy._spark_frames import is_spark_frame, map_frame, reduce_tree, tree_fan_in
from blowfish_privacy.policy.domain import Categorical, Ordinal
from blowfish_privacy.sklearn import BlowfishKMeans

pytestmark = pytest.mark.slow

DOMAIN = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99)])


@pytest.fixture(scope="module")
def session(spark):
    from pyspark.sql import SparkSession

    return SparkSession(spark)


def _ordered(session, rows: pd.DataFrame, parts: int):
    """``rows`` as a Spark DataFrame of ``parts`` partitions in the same row order (``repartition`` shuffles)."""
    records = [tuple(r) for r in rows.itertuples(index=False)]
    return session.createDataFrame(session.sparkContext.parallelize(records, parts), list(rows.columns))


def _rows(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(0, 100, n), "sex": rng.choice(["f", "m"], n),
                         "other": rng.normal(size=n)})


def test_a_spark_dataframe_is_recognised_by_type(session):
    df = session.createDataFrame(_rows(10))
    assert is_spark_frame(df) and not is_spark_frame(_rows(10)) and not is_spark_frame(df.rdd)


@pytest.mark.parametrize("parts", [1, 7, 37])  # 37 partitions: two levels of reduce steps (fan-in 8)
def test_histogram_is_counted_in_spark_and_equals_pandas(session, parts):
    rows = _rows()
    df = session.createDataFrame(rows).repartition(parts)
    got = histogram(df, DOMAIN)
    np.testing.assert_array_equal(got, histogram(rows, DOMAIN))
    assert got.dtype == np.int64 and got.sum() == len(rows)


@pytest.mark.parametrize("invalid", ["clamp", "drop", {"age": "clamp"}])
def test_values_outside_the_domain_as_for_pandas(session, invalid):
    rows = _rows()
    small = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 10, 50)])
    df = session.createDataFrame(rows).repartition(5)
    np.testing.assert_array_equal(histogram(df, small, invalid=invalid), histogram(rows, small, invalid=invalid))


def test_an_invalid_value_under_error_is_the_pandas_message_quoting_nothing(session):
    rows = _rows()
    rows.loc[17, "age"] = 123457
    small = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99)])
    with pytest.raises(TableError) as local:
        histogram(rows, small)
    with pytest.raises(TableError) as spark:
        histogram(session.createDataFrame(rows).repartition(4), small)
    assert str(spark.value) == str(local.value)
    assert "123457" not in str(spark.value) and "17" not in str(spark.value).replace("[0, 99]", "")


def test_nulls_and_columns_named_otherwise_as_a_pyarrow_table(session):
    table = pa.table({"a": pa.array([3, None, 5, 99, None], pa.int64()), "s": ["m", "f", None, "m", "f"]})
    df = session.createDataFrame(table.to_pandas().astype({"a": "Int64"})).repartition(3)
    cols = {"age": "a", "sex": "s"}
    for invalid in ("clamp", "drop"):
        np.testing.assert_array_equal(histogram(df, DOMAIN, invalid=invalid, columns=cols),
                                      histogram(table, DOMAIN, invalid=invalid, columns=cols))
    with pytest.raises(TableError, match="column 'a'"):
        histogram(df, DOMAIN, columns=cols)


def test_a_missing_column_is_named_with_the_frames_columns(session):
    df = session.createDataFrame(_rows(5)).drop("sex")
    with pytest.raises(TableError, match=r"column 'sex' not found in the Spark DataFrame; its columns are \['age', "
                                         r"'other'\]"):
        histogram(df, DOMAIN)
    with pytest.raises(TableError, match="column 'sex' not found"):
        DOMAIN.encode(df)


def test_a_column_spark_cannot_count_is_one_line_quoting_nothing(session):
    df = session.createDataFrame([([31, 7777],), ([45],)], "age array<long>")
    with pytest.raises(TableError) as err:
        histogram(df, Domain.ordinal("age", 0, 99))
    text = str(err.value)
    assert "\n" not in text and "7777" not in text and "31" not in text and "age" in text


def test_an_empty_dataframe_counts_zero(session):
    df = session.createDataFrame(_rows(5)).limit(0)
    got = histogram(df, DOMAIN)
    assert got.shape == (DOMAIN.size,) and got.sum() == 0


def test_encode_equals_pandas_and_its_errors_too(session):
    rows = _rows(500)
    df = _ordered(session, rows, 6)
    np.testing.assert_array_equal(DOMAIN.encode(df), DOMAIN.encode(rows))  # rows in the frame's order
    small = Domain([Categorical("sex", ["f"]), Ordinal("age", 0, 99)])
    with pytest.raises(TableError) as local:
        small.encode(rows)
    with pytest.raises(TableError) as spark:
        small.encode(df)
    assert str(spark.value) == str(local.value)


@pytest.mark.parametrize("method", ["grid", "eugkm", "sulq"])
def test_kmeans_fit_on_spark_equals_pandas(session, method):
    policy = Policy(Domain([Ordinal("x", 0, 15), Ordinal("y", 0, 15)]), secrets.DistanceThreshold(2))
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"x": rng.integers(0, 16, 1500), "y": rng.integers(0, 16, 1500)})
    df = _ordered(session, X, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded: not private (a test)
        local = BlowfishKMeans(policy, n_clusters=3, random_state=3, method=method).fit(X)
        est = BlowfishKMeans(policy, n_clusters=3, random_state=3, method=method).fit(df)
        labels = BlowfishKMeans(policy, n_clusters=3, random_state=3, method=method).fit_predict(df)
    np.testing.assert_array_equal(est.cluster_centers_, local.cluster_centers_)
    assert est.privacy_["epsilon_spent"] == local.privacy_["epsilon_spent"]
    assert not hasattr(est, "labels_")  # one label per row would bring the table to the driver
    np.testing.assert_array_equal(labels, local.labels_)
    np.testing.assert_array_equal(est.predict(df), local.predict(X))
    assert list(est.feature_names_in_) == ["x", "y"]


def test_the_reduce_tree_keeps_the_partitions_order(spark):
    """A reduce that does not commute (concatenation) gives the partitions in index order, for any fan-in."""
    n = 37
    for fan in (2, 3, 8, 64):
        level = spark.parallelize([(i, [i]) for i in range(n)], 7).map(lambda kv: kv)
        assert reduce_tree(level, n, fan, lambda a, b: a + b) == list(range(n))
        assert reduce_tree(level, n, fan, lambda a, b: a + b, result_bytes=100) == list(range(n))  # collected at once
    assert tree_fan_in(0) == 8 and tree_fan_in(1 << 30) == 2


def test_map_frame_reduces_partials_in_partition_order(session):
    df = session.createDataFrame(pd.DataFrame({"v": np.arange(1000)})).repartition(19)
    expected = [r["v"] for r in df.collect()]  # the rows in partition order

    def values(batches):
        return [int(x) for cols, _ in batches for x in cols["v"]]

    assert map_frame(df, ["v"], values, lambda a, b: a + b) == expected



def test_column_names_with_dots_backticks_and_spaces_are_read_literally(session):
    rows = _rows(200)
    odd = pd.DataFrame({"a.b": rows["age"], "s`x": rows["sex"], "my col": rows["other"], "AGE": rows["age"] + 1000})
    df = _ordered(session, odd, 3)
    cols = {"age": "a.b", "sex": "s`x"}
    np.testing.assert_array_equal(histogram(df, DOMAIN, columns=cols), histogram(rows, DOMAIN))
    renamed = Domain([Categorical("s`x", ["f", "m"]), Ordinal("a.b", 0, 99)])
    np.testing.assert_array_equal(renamed.encode(df), DOMAIN.encode(rows))


def test_the_rows_are_mapped_not_grouped(session, spark):
    """One stage, no shuffle: the records Spark reports are the rows (public in number) and the partials.

    A groupBy would shuffle one record per distinct row and partition (an
    exact statistic of the data, shown in the Spark UI and the event log).
    """
    df = _ordered(session, _rows(500), 4)  # no shuffle of its own
    session.sparkContext.setJobGroup("no-group-test", "histogram")
    try:
        histogram(df, DOMAIN)
    finally:
        session.sparkContext.setJobGroup(None, None)
    tracker = spark.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup("no-group-test")]
    assert jobs and all(len(list(j.stageIds)) == 1 for j in jobs), [list(j.stageIds) for j in jobs]


@pytest.mark.parametrize("method", ["grid", "sulq"])
def test_kmeans_fit_predict_on_spark_with_nulls_dropped_is_minus_one_after_the_spend(session, method):
    policy = Policy(Domain([Ordinal("x", 0, 15), Ordinal("y", 0, 15)]), secrets.DistanceThreshold(2))
    rng = np.random.default_rng(6)
    X = pd.DataFrame({"x": rng.integers(0, 16, 300).astype(float), "y": rng.integers(0, 16, 300).astype(float)})
    X.loc[[4, 99], "x"] = np.nan
    df = _ordered(session, X, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = BlowfishKMeans(policy, n_clusters=3, random_state=3, method=method, invalid="drop").fit_predict(X)
        got = BlowfishKMeans(policy, n_clusters=3, random_state=3, method=method, invalid="drop").fit_predict(df)
    np.testing.assert_array_equal(got, local)
    assert got[4] == got[99] == -1


def test_integral_decimals_count_as_integers(session):
    from decimal import Decimal

    df = session.createDataFrame([(Decimal(3),), (Decimal(5),), (Decimal("5.5"),)], "age decimal(10,1)")
    got = histogram(df, Domain.ordinal("age", 0, 9), invalid="drop")
    assert got.tolist() == [0, 0, 0, 1, 0, 1, 0, 0, 0, 0]
