"""The Dask engine: map tasks on a Dask cluster, one per partition, partial results reduced in a tree on the workers.

Dask, distributed and pandas are optional (the ``dask`` extra): they are
imported inside the engine's methods.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from .._aggregate import AGGREGATION_ERRORS
from ..errors import DataError
from .aggregation import aggregate
from .sources import GivenSource, Source

if TYPE_CHECKING:
    from .spec import Spec

_T = TypeVar("_T")  # what one map step gives and the reduction keeps

__all__ = ["REDUCE_BYTES", "REDUCE_FAN_IN", "SCHEDULER_TIMEOUT", "DaskEngine", "probe_scheduler"]

#: Seconds to wait for a Dask scheduler (``--scheduler``) at each step (TCP connection, Dask's handshake and an
#: identity request) before giving up.
SCHEDULER_TIMEOUT = 5.0
#: Bytes of partial results one reduce task adds at most (its fan-in is 2 to :data:`REDUCE_FAN_IN`).
REDUCE_BYTES = 256 << 20
#: Most partial results one reduce task adds: the partials are reduced in a tree on the workers, and only the
#: root comes to the driver.
REDUCE_FAN_IN = 8


def probe_scheduler(address: str, timeout: float) -> str | None:
    """None when a Dask scheduler answers at ``address``, else why not (in words, for a one-line error).

    Two steps, each within ``timeout`` seconds: a TCP connection (for
    ``tcp://`` and ``tls://`` addresses), then Dask's handshake and an
    ``identity`` request through distributed's own comm layer, in an event
    loop of its own on a helper thread.  Whatever the peer does (nothing,
    HTTP, garbage that decodes to an absurd length) ends as a reason:
    distributed's ``connect`` waits for the peer's handshake without a
    timeout of its own, so the whole exchange is bounded here.
    """
    from distributed.comm import (
        CommClosedError,
        connect,
        parse_address,
        parse_host_port,
    )
    from distributed.comm.registry import get_backend

    try:
        scheme, loc = parse_address(address)
        get_backend(scheme)  # an unknown scheme: ValueError
        if scheme in ("tcp", "tls"):
            host, port = parse_host_port(loc, 8786)
    except (ValueError, TypeError):
        return "not an address of a Dask scheduler (tcp://HOST:PORT)"
    if scheme in ("tcp", "tls"):
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except TimeoutError:
            return f"cannot reach it (no answer within {timeout:g} s)"
        except (OverflowError, ValueError):  # a port out of range
            return "not an address of a Dask scheduler (tcp://HOST:PORT)"
        except OSError as exc:
            return f"cannot reach it ({exc.strerror or type(exc).__name__})"

    async def identity():
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome: dict = {}

    def run():
        try:
            outcome["answer"] = asyncio.run(asyncio.wait_for(identity(), timeout))
        except BaseException as exc:  # noqa: BLE001 - whatever the peer made of it, it is not Dask
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="blowfish-scheduler-probe", daemon=True)
    worker.start()
    worker.join(timeout + 5)
    silent = f"did not answer within {timeout:g} s (a Dask scheduler answers at once)"
    if worker.is_alive() or isinstance(outcome.get("error"), TimeoutError):
        return silent
    exc = outcome.get("error")
    if exc is not None:
        if scheme not in ("tcp", "tls") and not isinstance(exc, CommClosedError):  # no connection made
            return f"cannot reach it ({type(exc).__name__})"
        if isinstance(exc, OSError):  # CommClosedError is one
            return "not a Dask scheduler (it closed the connection without Dask's handshake)"
        return f"not a Dask scheduler (it answered in another protocol: {type(exc).__name__})"
    answer = outcome.get("answer")
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind == "Scheduler":
        return None
    if isinstance(kind, str) and kind in ("Worker", "Nanny"):
        return f"not a Dask scheduler (a Dask {kind.lower()} answered)"
    return "not a Dask scheduler (it answered the handshake, then not as a scheduler)"



class DaskEngine:
    """Aggregates on a Dask cluster: one map task per partition, partial results reduced in a tree.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler; without it a ``LocalCluster`` is
        started (``workers`` processes, one thread each) and closed after.
        An address where no Dask scheduler answers (nothing listening,
        another service such as HTTP, a peer that says nothing or answers
        garbage) is a one-line :class:`DataError` within a few times
        ``timeout`` seconds (:func:`probe_scheduler`).
    workers : int, optional
        Worker processes of the ``LocalCluster`` (without ``scheduler``).
    progress : bool, optional
        Whether to show Dask's progress bar (on a terminal, unless False).
    timeout : float, optional
        Seconds to wait for the scheduler, at each step of the connection
        (default :data:`SCHEDULER_TIMEOUT`).

    The source and the map function go to each worker once; a map task
    carries only its partition's description (a Parquet file or some of
    its row groups, a block of whole lines of a CSV file, a whole gzip CSV:
    :class:`~.sources.SpecSource`), and reads it a batch at a time, so a
    worker's memory is bounded by the batch and its partial aggregates,
    whatever the partition's size.  The partitions are balanced for the
    cluster's worker threads (``source.balance``).  The partials are added
    in a tree of reduce tasks on the workers (at most
    :data:`REDUCE_FAN_IN` at a time, fewer for large partials:
    :data:`REDUCE_BYTES`), and only the root comes to the driver.
    """

    name = "dask"
    #: A worker's ``malloc`` returns freed memory to the system at once (Dask's ``MALLOC_TRIM_THRESHOLD_``): fresh
    #: pages for every batch's temporaries would cost a third more CPU time, so the map step gathers into buffers.
    gather_batches = True

    def __init__(self, scheduler: str | None = None, *, workers: int | None = None, progress: bool | None = None,
                 timeout: float | None = None):
        try:
            import dask  # noqa: F401
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise DataError("--engine dask needs Dask: pip install 'blowfish-privacy[dask]'") from None
        self.scheduler = scheduler
        self.timeout = SCHEDULER_TIMEOUT if timeout is None else timeout
        self.workers = workers
        self.progress = progress

    def aggregate(self, spec: Spec, needs: list) -> dict:
        """The exact aggregates of ``needs`` over the spec's data (:func:`.aggregation.aggregate`)."""
        return aggregate(self, spec, needs)

    def aggregate_parts(self, spec: Spec, needs: list, parts: list) -> dict:
        """The aggregates of ``needs`` over ``parts`` instead of the spec's source: one map task each.

        Each part is a picklable callable: given the list of the column
        names the needs read, it returns an iterable of ``({column name:
        numpy array}, bytes read)`` batches, e.g. rows generated on the
        worker from a seed (``benchmarks/bench_dask_scaling.py``).  The
        spec gives the domain, the columns and ``invalid``, as for
        :meth:`aggregate`; the map step, the reduce and the errors are
        those of :meth:`aggregate` (:class:`~.sources.GivenSource`).
        """
        return aggregate(self, spec, needs, lambda s, columns, _: GivenSource(s, columns, parts))

    def delayed(self, source, map_fn, slots: int = 1) -> list:
        """The map tasks as ``dask.delayed`` objects (``slots`` worker threads), each giving ``map_fn``'s result.

        :meth:`map_reduce` submits the same tasks as futures instead, the
        source and the map function scattered once; this form runs on any
        Dask scheduler.
        """
        import dask

        job = _Job(source, map_fn)
        parts = source.balance(source.partitions(parallel=True), slots)
        return [dask.delayed(_map_task, pure=False)(p, job) for p in parts]

    def _client(self, source):
        """A client of the scheduler at ``self.scheduler``, after :func:`probe_scheduler` found one there.

        Anything else (nothing listening, a service that is not Dask, a peer
        that says nothing or answers garbage) is a one-line
        :class:`DataError` within a few times ``timeout`` seconds.
        """
        import dask
        from distributed import Client

        address = self.scheduler

        def refuse(why):
            return DataError(f"{source.what}: --scheduler {address!r}: {why}; start a Dask scheduler there, check "
                             "the address, or drop --scheduler to use a local cluster")

        why = probe_scheduler(address, self.timeout)
        if why is not None:
            raise refuse(why)
        try:
            with dask.config.set({"distributed.comm.timeouts.connect": f"{self.timeout}s"}):
                return Client(address, timeout=self.timeout)
        except Exception as exc:  # the peer answered the probe, then not as a scheduler: whatever it sent
            raise refuse(f"not a Dask scheduler ({type(exc).__name__} while connecting)") from None

    def map_reduce(self, source: Source, map_fn: Callable[[Any], _T], reduce_fn: Callable[[_T, _T], _T]) -> _T:
        """Map every partition on the cluster (source and map function sent to each worker once), reduce in a tree.

        The partitions are asked for on the driver before the cluster is
        started or reached (headers, footers and columns are checked
        first).  ``map_fn.result_bytes``, when it has one, is the size of
        one partial result: it sets the reduce tree's fan-in.
        """
        from distributed import Client, LocalCluster, progress

        parts = source.partitions(parallel=True)
        cluster = None
        if self.scheduler:
            client = self._client(source)
        else:
            cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        try:
            slots = sum(client.nthreads().values())
            parts = source.balance(parts, max(1, slots))
            job = _Job(source, map_fn)
            if slots:  # sent to every worker once; tasks then take it from their worker's memory
                job = client.scatter([job], broadcast=True, hash=False)[0]
            else:  # no worker yet: one task holds it, and the workers that join fetch it from each other
                job = client.submit(_given, job, pure=False)
            futures = client.map(_map_task, parts, job=job, pure=False)
            fan = max(2, min(REDUCE_FAN_IN, REDUCE_BYTES // max(1, int(getattr(map_fn, "result_bytes", 0)))))
            while len(futures) > 1:  # a tree of reduce tasks, each run as soon as its inputs are (priority)
                futures = [client.submit(_reduce_many, futures[i:i + fan], reduce_fn, pure=False, priority=1)
                           if len(futures) - i > 1 else futures[i] for i in range(0, len(futures), fan)]
            future = futures[0]
            del futures, job  # the partials are released as the reduce tasks consume them
            try:
                if self.progress is not False and sys.stderr.isatty():
                    progress(future)
                return future.result()
            except DataError:  # raised by a worker reading the data: already value-free
                raise
            except AGGREGATION_ERRORS + (OSError,) as exc:
                raise source.failure(exc) from None
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


class _Job:
    """What every map task takes besides its partition: the source and the map function, sent once per worker.

    A plain object (not a tuple): Dask looks into the tuples and lists of a
    task's arguments for other tasks' keys.
    """

    __slots__ = ("source", "map_fn")

    def __init__(self, source, map_fn) -> None:
        self.source = source
        self.map_fn = map_fn

    def __reduce__(self):
        return _Job, (self.source, self.map_fn)


def _map_task(part, job: _Job):
    """A Dask map task: ``map_fn`` of one partition's batches."""
    return job.map_fn(job.source.read(part))


def _reduce_many(results, reduce_fn):
    """``reduce_fn`` over ``results`` in order (a node of the reduce tree), without changing them."""
    acc = results[0]
    for r in results[1:]:
        acc = reduce_fn(acc, r)
    return acc


def _given(value):
    return value
