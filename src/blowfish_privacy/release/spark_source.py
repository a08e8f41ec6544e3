"""A Spark DataFrame as a source: its partitions are the DataFrame's, mapped by the Spark engine with mapInArrow.

The data stay in Spark: :meth:`SparkFrameSource.map_partitions` selects the
needed columns and runs ``DataFrame.mapInArrow`` with a function that turns
each Arrow batch into ``{column name: numpy array}`` with the readers'
conversion (:func:`._arrow_columns.to_numpy`: nulls and text that is not
UTF-8 become the same invalid cells as in a file), hands the partition's
batches to the map function and returns one row per partition: its index
and its partial result, pickled in a binary column.  The partials are
reduced on the driver in partition order.  The map function returns errors
as values, so no row, cell or exception text leaves an executor.

pyspark and pyarrow are optional (the ``spark`` extra): imported inside
the methods.
"""

from __future__ import annotations

import pickle

from ..errors import DataError
from ._arrow_columns import to_numpy

__all__ = ["SparkFrameSource", "is_spark_frame"]


def is_spark_frame(obj) -> bool:
    """True for a Spark DataFrame (classic or Spark Connect), recognised by its type's module: nothing imported."""
    kind = type(obj)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark.sql")


class SparkFrameSource:
    """The needed columns of a Spark DataFrame, mapped where its partitions live (never collected).

    ``spec`` names the data in messages and maps attributes to columns;
    ``columns`` are the column names read.  :meth:`partitions` checks the
    columns (names only) and gives the DataFrame's partition indices;
    :meth:`read` is not used (the batches never come to the driver): the
    Spark engine calls :meth:`map_partitions`.
    """

    def __init__(self, frame, spec, columns) -> None:
        self.frame = frame
        self.spec = spec
        self.columns = list(columns)
        self.what = f"{spec.path}: the data in the Spark DataFrame"
        self.total = 0

    def partitions(self, parallel: bool) -> list:
        available = list(self.frame.columns)
        for c in self.columns:
            if c not in available:
                attr = next((a for a, col in self.spec.columns.items() if col == c), c)
                shown = available if len(available) <= 50 else available[:50] + ["..."]
                raise DataError(f"{self.spec.path}: domain.{attr}: column {c!r} not found in the Spark DataFrame; "
                                f"its columns are {shown}")
        if len(set(available)) != len(available):
            twice = sorted({c for c in self.columns if available.count(c) > 1})
            if twice:
                raise DataError(f"{self.spec.path}: dataset: columns {twice} appear more than once in the Spark "
                                "DataFrame")
        return [self]  # one description: the frame's own partitions are mapped by map_partitions

    def balance(self, partitions: list, slots: int) -> list:
        return partitions

    def read(self, partition):
        raise TypeError("a Spark DataFrame is read where it lives: SparkFrameSource.map_partitions")

    def failure(self, exc: BaseException) -> DataError:
        return DataError(f"{self.what} could not be read ({type(exc).__name__}; details withheld: they may quote "
                         "the data)")

    def map_partitions(self, map_fn) -> list:
        """``map_fn`` of every partition's batches, run in Spark: the partial results in partition order."""
        frame = self.frame.select(*[self.frame[c] for c in dict.fromkeys(self.columns)])
        rows = frame.mapInArrow(_ArrowMap(map_fn, list(self.columns)), "part long, result binary").collect()
        return [pickle.loads(r["result"]) for r in sorted(rows, key=lambda r: r["part"])]


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
        done = 0
        for batch in batches:
            done += batch.nbytes
            yield {c: to_numpy(batch.column(c)) for c in self.columns}, done
