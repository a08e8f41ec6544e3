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

__all__ = ["COLLECT_BYTES", "GROUP_CELLS", "JOB_DESCRIPTION", "MERGE_ROWS", "REDUCE_BYTES", "REDUCE_FAN_IN", "counts_by_group",
           "group_name", "is_spark_frame", "map_frame", "reduce_in_order", "reduce_tree", "tree_fan_in"]

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


def map_frame(frame, columns: list, map_fn, reduce_fn, *, result_bytes: int | None = None,
              group_as: str | None = None):
    """``map_fn`` of every partition's batches of ``frame[columns]``, run in Spark; reduced in partition order.

    ``map_fn`` takes an iterator of ``({column: numpy array}, bytes so
    far)`` pairs and returns a picklable partial result; ``reduce_fn`` adds
    two of them.  Partials go through :func:`reduce_tree` (fan-in and
    levels from ``result_bytes``, the size of one partial, when known); a Spark Connect DataFrame,
    which has no RDDs, has its partials added on the driver.  A frame with
    no partitions gives ``map_fn(iter(()))``.

    With ``group_as`` (a name that is not a column of ``frame``), Spark
    first counts the distinct value tuples of ``columns``
    (``groupBy(columns).agg(count)``, its own aggregation in the JVM) and
    ``map_fn`` receives the tuples with their counts in the column
    ``group_as``: for counts of functions of a row's values, the same
    result with far fewer rows through Arrow (:func:`group_name`).
    """
    from pyspark.sql import functions as F

    columns = list(dict.fromkeys(columns))
    selected = frame.select(*[frame[c] for c in columns])
    if group_as is not None:
        selected = selected.groupBy(*columns).agg(F.count(F.lit(1)).alias(group_as))
        columns = columns + [group_as]
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


#: Grouping (:func:`map_frame`'s ``group_as``) is chosen only when the distinct valid tuples number at most this.
GROUP_CELLS = 1 << 20
_INTEGER_TYPES = ("byte", "short", "integer", "long")


def counts_by_group(frame, plan: list) -> bool:
    """Whether ``plan`` is served faster from ``groupBy(...).count()`` of ``frame`` than from its rows.

    Decided from public inputs only (the plan and the frame's schema), as
    measured by ``benchmarks/bench_spark_scaling.py``: Spark's own
    aggregation beats sending every row through Arrow when the distinct
    tuples are few, and is many times slower when they are as many as the
    rows.  So: every need a histogram (a column need keeps every row), and
    every column it reads (selections too) an integer column of an
    attribute of bin width 1, or an integer or string column of a
    categorical attribute, with at most :data:`GROUP_CELLS` tuples of valid
    values in all.  (Values outside the domain add tuples of their own; a
    column full of them is refused, clamped or dropped as in any path.)
    """
    if not plan or any(need[0] != "histogram" for need, *_ in plan):
        return False
    types = {f.name: f.dataType.typeName() for f in frame.schema.fields}
    sizes: dict = {}
    for _, domain, cols, filters, _ in plan:
        for attr, col in list(zip(domain.attributes, cols)) + [(f[0], f[1]) for f in filters]:
            kind = types.get(col)
            width = getattr(attr, "bin_width", None)
            if width is not None and (width != 1 or kind not in _INTEGER_TYPES):
                return False
            if width is None and kind not in _INTEGER_TYPES + ("string",):
                return False
            sizes[col] = max(sizes.get(col, 0), int(attr.size))
    cells = 1
    for size in sizes.values():
        cells *= size
    return cells <= GROUP_CELLS


def group_name(frame) -> str:
    """A column name for the counts of :func:`map_frame`'s ``group_as`` that is not a column of ``frame``."""
    taken = set(frame.columns)
    name, k = "rows", 0
    while name in taken:
        k += 1
        name = f"rows_{k}"
    return name


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
            return {c: to_numpy(held[0].column(c)) for c in self.columns}
        table = pa.Table.from_batches(held).combine_chunks()
        return {c: to_numpy(table.column(c).chunk(0)) for c in self.columns}


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
