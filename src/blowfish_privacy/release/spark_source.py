"""A Spark DataFrame as a source: its partitions are the DataFrame's, mapped by the Spark engine with mapInArrow.

The data stay in Spark: :meth:`SparkFrameSource.map_partitions` maps the
needed columns of every partition with ``DataFrame.mapInArrow`` and adds
the partial results in an ordered tree on the executors
(:func:`blowfish_privacy._spark_frames.map_frame`, shared with
``histogram`` of a Spark DataFrame).  The map function returns errors as
values, so no row, cell or exception text leaves an executor.
"""

from __future__ import annotations

from .._spark_frames import map_frame
from ..errors import DataError

__all__ = ["SparkFrameSource"]


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

    def map_partitions(self, map_fn, reduce_fn):
        """``map_fn`` of every partition's batches, run in Spark, reduced in partition order (:func:`map_frame`)."""
        return map_frame(self.frame, self.columns, map_fn, reduce_fn,
                         result_bytes=getattr(map_fn, "result_bytes", None))
