"""Reading Parquet (a file, or a folder of files with hive partition keys) a batch at a time, pages streamed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError
from .._arrow_columns import to_numpy
from ._read_errors import check_columns, read_problem

__all__ = ["PARQUET_BUFFER_BYTES", "parquet_batches", "parquet_file", "parquet_parts", "parquet_slices"]

#: Bytes the Parquet reader reads at a time inside a column chunk (``ParquetFile(buffer_size=...)``):
#: pages are streamed, so a file written as one huge row group is bounded too.
PARQUET_BUFFER_BYTES = 1 << 20


def parquet_file(pq, path):
    """A ``ParquetFile`` that streams: no pre-buffering, column chunks read ``PARQUET_BUFFER_BYTES`` at a time.

    pyarrow (>= 15) pre-buffers by default: ``iter_batches`` then first
    reads every requested column chunk of the whole file into memory.
    """
    kw = {"pre_buffer": False, "buffer_size": PARQUET_BUFFER_BYTES}
    try:
        return pq.ParquetFile(path, page_checksum_verification=True, **kw)
    except TypeError:  # an older pyarrow
        return pq.ParquetFile(path, **kw)


def parquet_parts(spec, columns) -> list:
    """``(file, hive partition keys, size)`` of every file of the spec's Parquet source, each checked.

    Every file's footer is read here, before any row: a truncated or
    non-Parquet file and a file that lacks a needed column are reported
    with the file's name.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"{spec.path}: dataset.path: reading Parquet needs pyarrow: pip install 'blowfish-privacy[dask]'"
        ) from None
    root = Path(spec.source["path"])
    if root.is_file():
        files = [(root, {})]
    elif root.is_dir():
        files = []
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).parts
            if not p.is_file() or any(part.startswith(("_", ".")) for part in rel):
                continue  # metadata and hidden files, as pyarrow skips them
            keys = dict(part.split("=", 1) for part in rel[:-1] if "=" in part)
            files.append((p, keys))
        if not files:
            raise read_problem(spec, repr(str(root)), "holds no Parquet files")
    else:
        raise read_problem(spec, repr(str(root)), "cannot be opened (no such file or folder)")
    parts = []
    for p, keys in files:
        try:
            names = parquet_file(pq, p).schema_arrow.names
            size = p.stat().st_size
        except PermissionError as exc:
            raise read_problem(spec, repr(str(p)), f"cannot be opened ({exc.strerror})") from None
        except Exception:  # pyarrow raises many kinds; their text may quote the file
            raise read_problem(spec, repr(str(p)), "is not a readable Parquet file (truncated, damaged or not "
                           "Parquet)") from None
        check_columns(columns, list(names) + [k for k in keys if k not in names], spec, repr(str(p)))
        parts.append((str(p), {k: v for k, v in keys.items() if k not in names}, size))
    return parts


def parquet_slices(part, target_bytes: int) -> list:
    """Row-group index lists of one Parquet file, each about ``target_bytes`` of uncompressed data or one group."""
    import pyarrow.parquet as pq

    meta = parquet_file(pq, part[0]).metadata
    out, cur, size = [], [], 0
    for i in range(meta.num_row_groups):
        cur.append(i)
        size += max(meta.row_group(i).total_byte_size, 1)
        if size >= target_bytes:
            out.append(cur)
            cur, size = [], 0
    if cur or not out:
        out.append(cur)
    return out


def parquet_batches(table):
    """The batches of the Parquet files ``table.parts`` (``table.row_groups`` of each, None: all), pages streamed.

    ``table`` is the :class:`~._reading.Table` read; a hive partition key
    is a column of the same text on every row; a page that cannot be
    decoded refuses the read without quoting it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = 0
    groups = table.row_groups
    for path, keys, size in table.parts:
        what = repr(path)
        try:
            pf = parquet_file(pq, path)
            present = [c for c in table.columns if c not in keys]
            n_rows = max(pf.metadata.num_rows, 1)
            seen = 0
            extra = {} if groups is None else {"row_groups": list(groups)}
            for batch in pf.iter_batches(batch_size=table.batch_rows, columns=present, use_threads=True,
                                         **extra):
                cols = {c: to_numpy(batch.column(c)) for c in present}
                for c in table.columns:
                    if c in keys:  # a hive partition key (folder name k=v): the same text on every row
                        cols[c] = np.full(batch.num_rows, keys[c])
                seen += batch.num_rows
                yield cols, done + size * min(seen, n_rows) // n_rows
        except (OSError, EOFError, ValueError, pa.ArrowException) as exc:
            raise read_problem(table.spec, what, "holds damaged Parquet data (a page or its header cannot be "
                               f"decoded: {type(exc).__name__}; details withheld: they may quote the data)") from None
        done += size
