"""Spark DataFrames mapped where their partitions live, and partial results reduced in an ordered tree.

Below :mod:`.frames` (``histogram`` of a Spark DataFrame) and the release
product's Spark engine and source, which use the same two steps:

- :func:`map_frame` selects the needed columns and runs
  ``DataFrame.mapInArrow`` with a function that turns each Arrow batch into
  ``{column name: numpy array}`` (:func:`._arrow_columns.to_numpy`: nulls
  and text that is not UTF-8 become the same invalid cells as in a file),
  hands the partition's batches to a map function and returns one row per
  partition: its index and its partial result, pickled.  A map function
  returns errors as values, so no row, cell or exception text leaves an
  executor.
- :func:`reduce_tree` adds partial results keyed by partition index in a
  tree of reduce steps on the executors, each over consecutive partitions
  in index order, so the result is the same for any number of executors
  (pyspark's ``treeReduce`` groups partitions ``i % n`` and does not keep
  their order).  Only the root's few results reach the driver.

pyspark and pyarrow are optional (the ``spark`` extra): imported inside the
functions that run with them.
"""

from __future__ import annotations

import pickle

from ._arrow_columns import to_numpy

__all__ = ["COLLECT_BYTES", "JOB_DESCRIPTION", "MERGE_ROWS", "REDUCE_BYTES", "REDUCE_FAN_IN", "is_spark_frame",
           "map_frame", "reduce_in_order", "reduce_tree", "tree_fan_in"]

#: The description of the Spark jobs that map a DataFrame (shown in the Spark UI).
JOB_DESCRIPTION = "blowfish-privacy: exact aggregates of a DataFrame"
#: Rows of the batches a map function is given (Spark sends Arrow batches of 10,000 rows; merged, the map step's
#: fixed cost per batch is paid about 26 times less often).
MERGE_ROWS = 1 << 18
#: Partial results the driver collects at once at most, in bytes (more: reduce steps on the executors first).
COLLECT_BYTES = 64 << 20
#: Largest number of partial results one reduce step adds.
REDUCE_FAN_IN = 8
#: Partial results held by one reduce step at most, in bytes (wide histograms get a smaller fan-in, >= 2).
REDUCE_BYTES = 256 << 20


def is_spark_frame(obj) -> bool:
    """True for a Spark DataFrame (classic or Spark Connect), recognised by its type's module: nothing imported."""
    kind = type(obj)
    return kind.__name__ == "DataFrame" and (kind.__module__ or "").startswith("pyspark.sql")


def tree_fan_in(result_bytes: int) -> int:
    """The fan-in of the reduce steps for partial results of ``result_bytes`` bytes each."""
    return max(2, min(REDUCE_FAN_IN, REDUCE_BYTES // max(1, int(result_bytes))))


def reduce_in_order(values: list, reduce_fn):
    """``reduce_fn`` folded over ``values`` from the first to the last."""
    acc = values[0]
    for v in values[1:]:
        acc = reduce_fn(acc, v)
    return acc


def reduce_tree(level, n: int, fan: int, reduce_fn, *, result_bytes: int | None = None):
    """The ordered reduction of an RDD of ``(index, partial)`` pairs, indices ``0 .. n-1``.

    Steps of ``ceil(n / fan)``, ``ceil(n / fan**2)``, ... groups of
    consecutive indices run on the executors until at most ``fan`` remain,
    or until the partials left, of ``result_bytes`` each when that is
    known, hold at most :data:`COLLECT_BYTES` (each step is a Spark stage
    with a shuffle: measured, half a second on a local session); those are
    collected and added on the driver, in index order.
    """
    while n > fan and (result_bytes is None or n * result_bytes > COLLECT_BYTES):
        n = -(-n // fan)
        level = (level.map(_TreeGroup(fan)).partitionBy(n, _identity)
                 .mapPartitions(_TreeReduce(reduce_fn), preservesPartitioning=True))
    rest = sorted(level.collect(), key=_first)
    return reduce_in_order([r for _, r in rest], reduce_fn)


def map_frame(frame, columns: list, map_fn, reduce_fn, *, result_bytes: int | None = None):
    """``map_fn`` of every partition's batches of ``frame[columns]``, run in Spark; reduced in partition order.

    ``map_fn`` takes an iterator of ``({column: numpy array}, bytes so
    far)`` pairs and returns a picklable partial result; ``reduce_fn`` adds
    two of them.  Partials go through :func:`reduce_tree` (fan-in and
    levels from ``result_bytes``, the size of one partial, when known); a Spark Connect DataFrame,
    which has no RDDs, has its partials added on the driver.  A frame with
    no partitions gives ``map_fn(iter(()))``.

    Why every row and not Spark's own ``groupBy(...).count()``, which is
    about twice as fast on integer columns (``benchmarks/
    bench_spark_scaling.py``): its work, its time and the shuffle records
    Spark reports for it (in the UI, the event log, to listeners) follow
    the number of distinct rows, an exact statistic of the data; the rows
    of a partition are public in number.
    """
    columns = list(dict.fromkeys(columns))
    # the columns renamed by position first: a name would be parsed (dots, backticks) and matched regardless of
    # case, by select and by mapInArrow, which looks its input columns up by name
    names = list(frame.columns)
    renamed = frame.toDF(*[f"c{i}" for i in range(len(names))])
    selected = renamed.select(*[f"c{names.index(c)}" for c in columns])
    mapped = selected.mapInArrow(_ArrowMap(map_fn, columns), "part long, result binary")
    try:
        rdd = mapped.rdd
    except Exception:  # noqa: BLE001 - Spark Connect has no RDD API: the partials come to the driver
        rows = mapped.collect()
        results = [pickle.loads(r["result"]) for r in sorted(rows, key=lambda r: r["part"])]
        return reduce_in_order(results, reduce_fn) if results else map_fn(iter(()))
    sc = rdd.context
    sc.setJobDescription(JOB_DESCRIPTION)  # the Spark UI's name for the jobs: no value, no column
    try:
        n = rdd.getNumPartitions()
        if n == 0:
            return map_fn(iter(()))
        return reduce_tree(rdd.map(_unpickle_row), n, tree_fan_in(result_bytes or 0), reduce_fn,
                           result_bytes=result_bytes)
    finally:
        sc.setJobDescription(None)


class _ArrowMap:
    """The mapInArrow function: a partition's Arrow batches to one row ``(partition index, pickled result)``."""

    def __init__(self, map_fn, columns: list) -> None:
        self.map_fn = map_fn
        self.columns = columns

    def __call__(self, batches):
        import pyarrow as pa
        from pyspark import TaskContext

        result = self.map_fn(self._batches(batches))
        part = TaskContext.get().partitionId()
        yield pa.RecordBatch.from_pydict({"part": [part], "result": [pickle.dumps(result)]},
                                         schema=pa.schema([("part", pa.int64()), ("result", pa.binary())]))

    def _batches(self, batches):
        """Spark's Arrow batches (10,000 rows by default) merged into batches of about :data:`MERGE_ROWS` rows."""
        import pyarrow as pa

        done, held, rows = 0, [], 0
        for batch in batches:
            done += batch.nbytes
            held.append(batch)
            rows += batch.num_rows
            if rows >= MERGE_ROWS:
                yield self._columns(pa, held), done
                held, rows = [], 0
        if held:
            yield self._columns(pa, held), done

    def _columns(self, pa, held: list) -> dict:
        if len(held) == 1 or sum(b.num_rows for b in held) == 0:
            return {c: to_numpy(held[0].column(i)) for i, c in enumerate(self.columns)}
        table = pa.Table.from_batches(held).combine_chunks()
        return {c: to_numpy(table.column(i).chunk(0)) for i, c in enumerate(self.columns)}


def _unpickle_row(row):
    return row["part"], pickle.loads(row["result"])


class _TreeGroup:
    """``(index, partial)`` to ``(index // fan, (index, partial))``: consecutive partials meet in one group."""

    def __init__(self, fan: int) -> None:
        self.fan = fan

    def __call__(self, item):
        return item[0] // self.fan, item


class _TreeReduce:
    """A reduce step: each group's partials in index order, added by ``reduce_fn``; ``(group, sum)`` out."""

    def __init__(self, reduce_fn) -> None:
        self.reduce_fn = reduce_fn

    def __call__(self, items):
        groups: dict = {}
        for key, (index, value) in items:
            groups.setdefault(key, []).append((index, value))
        for key in sorted(groups):
            yield key, reduce_in_order([v for _, v in sorted(groups[key], key=_first)], self.reduce_fn)


def _identity(key):
    return key


def _first(item):
    return item[0]
