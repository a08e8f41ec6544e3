"""The local engine: aggregates on this machine, streaming the source in bounded batches."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from .._aggregate import fold_table
from .._progress import progress_bar
from ._reading import prefetch
from .aggregation import aggregate
from .sources import Source, SpecSource

if TYPE_CHECKING:
    from .spec import Spec

_T = TypeVar("_T")  # what one map step gives and the reduction keeps

__all__ = ["PROGRESS_MIN_BYTES", "LocalEngine"]

#: Data smaller than this is read without a progress bar.
PROGRESS_MIN_BYTES = 1 << 26


class LocalEngine:
    """Aggregates on this machine, streaming: the table is read in bounded batches.

    Peak memory is the aggregates plus a bounded read window, whatever the
    number of rows: one batch of ``BATCH_ROWS`` rows of Parquet (pages read
    ``PARQUET_BUFFER_BYTES`` at a time, no pre-buffering of the file), or
    pyarrow's CSV read-ahead of at most 32 blocks of ``CSV_BLOCK_BYTES`` of
    text (``benchmarks/bench_scaling.py``: at most about 100 MiB above the
    interpreter from 10^6 to 10^8 rows).  A ``column`` need
    (pufferfish_sum) keeps its column, 8 bytes a row.  ``batch_rows`` and
    ``block_bytes`` override those bounds.  The next batch is decoded on a
    helper thread while this one is counted (:func:`._reading.prefetch`).
    """

    name = "local"

    def __init__(self, *, progress: bool | None = None, batch_rows: int | None = None,
                 block_bytes: int | None = None) -> None:
        self.progress = progress
        self.batch_rows = batch_rows
        self.block_bytes = block_bytes

    def aggregate(self, spec: Spec, needs: list) -> dict:
        """The exact aggregates of ``needs`` over the spec's data (:func:`.aggregation.aggregate`)."""
        return aggregate(self, spec, needs, partial(SpecSource, batch_rows=self.batch_rows,
                                                    block_bytes=self.block_bytes))

    def map_reduce(self, source: Source, map_fn: Callable[[Any], _T], reduce_fn: Callable[[_T, _T], _T]) -> _T:
        """The partitions of ``source`` (as few as a streaming read allows) mapped one after another, reduced."""
        parts = source.partitions(parallel=False)
        # shown on a terminal when the data are larger than a few batches, unless progress=False
        show = None if self.progress is not False and source.total > PROGRESS_MIN_BYTES else False
        result = None
        with progress_bar(max(1, source.total >> 20), "reading (MiB)", enabled=show) as bar:
            read = [0, 0]  # MiB shown, bytes of the partitions read before this one
            for part in parts:
                got = map_fn(_shown(prefetch(source.read(part)), bar, read))
                result = got if result is None else reduce_fn(result, got)
        return result

    def aggregate_table(self, table: dict, plan: list) -> list:
        """Exact aggregates of in-memory columns (``{column name: array}``), in chunks of ``batch_rows``.

        ``plan`` is as in :func:`~blowfish_privacy._aggregate.partition_aggregates`.
        """
        return fold_table(table, plan, self.batch_rows)


def _shown(batches, bar, read):
    """The batches, the progress bar advanced by the MiB read (``read``: MiB shown, bytes before this partition)."""
    done = 0
    for item in batches:
        done = int(item[1])
        mib = (read[1] + done) >> 20
        if mib > read[0]:
            bar.advance(mib - read[0])
            read[0] = mib
        yield item
        item = None  # not kept alive while the next batch is read
    read[1] += done
