"""The Spark engine: map tasks on a Spark cluster, one per partition, partial results reduced in an ordered tree.

Where the work runs and what travels: the partitions are described on the
driver (:meth:`~.sources.Source.partitions`: headers, footers and columns
checked before the cluster is reached); the source and the map function
are broadcast once (``sc.broadcast``, unpickled once per Python worker);
each Spark task carries one partition's description (a file, some row
groups, a block of lines), reads it a batch at a time and returns its
partial aggregates (or an error as a value: the map function never raises
on the data).  The partials are added in a tree of reduce steps on the
executors, each step in partition order (``reduce_fn(a, b)`` takes the
earlier partitions first), so the first error in order wins and a
column's rows keep the local engine's order; only the root comes to the
driver.  Rows never leave the executors, and no data value reaches a log
line, an error or a job description.

pyspark (and Java to run it) is optional (the ``spark`` extra): it is
imported inside the engine's methods.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from urllib.parse import urlsplit
from typing import Any, Callable, TypeVar

from .._aggregate import AGGREGATION_ERRORS
from .._spark_frames import reduce_tree, tree_fan_in
from ..errors import DataError
from .aggregation import aggregate
from .sources import GivenSource, Source, SpecSource
from .spark_source import SparkFrameSource

_T = TypeVar("_T")  # what one map step gives and the reduction keeps

__all__ = ["LOG4J2", "MASTER_TIMEOUT", "REGISTER_TIMEOUT", "SparkEngine", "probe_master"]

#: The masters of a session in this process: local, local[N], local[*], local[N,F], local-cluster[N,C,M].
_LOCAL = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]")

#: Seconds to wait for a Spark master's port (``--spark-master spark://HOST:PORT``) before giving up.
MASTER_TIMEOUT = 5.0
#: Seconds a standalone master (``spark://``) has to accept the application once its port answers: a server
#: there that is not a Spark master never does (Spark itself would retry for a minute before giving up).
REGISTER_TIMEOUT = 20.0

#: The driver's log4j2 configuration in a session the engine starts: errors only, and nothing from the loggers
#: that quote a failed task's exception text (a Python traceback may quote the data).
LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.python.name = org.apache.spark.api.python
logger.python.level = off
"""

_NEEDS = ("--engine spark needs pyspark and Java 17 or newer: pip install 'blowfish-privacy[spark]' and install a "
          "Java runtime (java on the PATH or JAVA_HOME)")


def _java() -> str | None:
    """The java command Spark would launch (JAVA_HOME's, else the PATH's), or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        path = os.path.join(home, "bin", "java")
        return path if os.access(path, os.X_OK) else None
    return shutil.which("java")


def probe_master(master: str, timeout: float) -> str | None:
    """None when ``master`` may be tried (a TCP connection to each of its hosts succeeds), else why not.

    ``local``, ``local[N]``, ``local[*]``, ``local-cluster[...]`` and
    ``yarn`` are not probed (no address of their own); ``spark://`` (one
    or several ``HOST:PORT``, comma-separated) and ``k8s://`` addresses
    are, each within ``timeout`` seconds; Spark Connect (``sc://``) has no
    RDDs and is refused.
    """
    if master == "yarn" or _LOCAL.fullmatch(master):
        return None
    if master.startswith("sc://"):
        return "a Spark Connect address (sc://): the engine needs a classic Spark master (spark://HOST:PORT, " \
               "local[N], yarn, k8s://...)"
    if master.startswith("spark://"):
        hosts = master[len("spark://"):].split(",")
        default = 7077
    elif master.startswith("k8s://"):
        rest = master[len("k8s://"):]
        url = urlsplit(rest if "://" in rest else "https://" + rest)
        hosts = [url.netloc]
        default = 443
    else:
        return "not a Spark master URL (spark://HOST:PORT, local[N], yarn, k8s://...)"
    for host in hosts:
        try:
            url = urlsplit("//" + host)
            name, port = url.hostname, url.port or default
        except ValueError:
            return "not a Spark master URL (spark://HOST:PORT, local[N], yarn, k8s://...)"
        if not name:
            return "not a Spark master URL (spark://HOST:PORT, local[N], yarn, k8s://...)"
        try:
            socket.create_connection((name, port), timeout=timeout).close()
        except TimeoutError:
            return f"cannot reach it (no answer within {timeout:g} s)"
        except (OverflowError, ValueError):
            return "not a Spark master URL (spark://HOST:PORT, local[N], yarn, k8s://...)"
        except OSError as exc:
            return f"cannot reach it ({exc.strerror or type(exc).__name__})"
    return None


class SparkEngine:
    """Aggregates on a Spark cluster: one task per partition, partial results reduced in an ordered tree.

    Parameters
    ----------
    master : str, optional
        The Spark master URL (``spark://HOST:PORT``, ``local[N]``, ``yarn``,
        ``k8s://...``).  Without it, a Spark context already running in
        this process is used (and left running); with none, a local session
        ``local[N]`` (N: this machine's CPUs) is started and stopped after.
        A master whose address does not answer is a one-line
        :class:`DataError` within ``timeout`` seconds (:func:`probe_master`).
    conf : dict, optional
        Spark configuration of the session the engine starts (``{key:
        value}``, as ``--spark-conf key=value``).
    progress : bool, optional
        Accepted for the registry (Spark draws its own console progress).
    timeout : float, optional
        Seconds to wait for the master's address (default :data:`MASTER_TIMEOUT`).
    frame : pyspark.sql.DataFrame, optional
        Aggregate this DataFrame (in its own session, partitions mapped with
        ``mapInArrow``: :class:`~.spark_source.SparkFrameSource`) instead of
        the spec's file.

    The session the engine starts logs only Spark's errors, and nothing of
    the loggers that quote a failed task's exception (:data:`LOG4J2`, unless
    ``conf`` sets ``spark.driver.extraJavaOptions``); a task never raises on
    the data (its errors are values), and anything Spark raises reaches the
    caller as one line that quotes no data.
    """

    name = "spark"

    def __init__(self, master: str | None = None, *, conf: dict | None = None, progress: bool | None = None,
                 timeout: float | None = None, frame=None):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise DataError(_NEEDS) from None
        if _java() is None:
            raise DataError(_NEEDS)
        if master is not None and (not isinstance(master, str) or not master.strip()):
            raise DataError(f"--spark-master must be a Spark master URL (spark://HOST:PORT, local[N]), got {master!r}")
        conf = dict(conf or {})
        for key, value in conf.items():
            if not isinstance(key, str) or not key.strip() or not isinstance(value, (str, int, float, bool)):
                raise DataError(f"--spark-conf must give key=value pairs of Spark configuration, got {key!r}")
            if key.strip() in ("spark.master", "spark.remote"):  # the master is probed: it comes by one way
                raise DataError(f"--spark-conf {key.strip()}=...: give the master with --spark-master, which is "
                                "checked before anything is read")
        self.master = master
        self.frame = frame
        self._log_config = None  # the log4j2 file of a session this engine started
        self.conf = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in conf.items()}
        self.progress = progress
        self.timeout = MASTER_TIMEOUT if timeout is None else timeout

    def aggregate(self, spec, needs: list) -> dict:
        """The exact aggregates of ``needs`` over the spec's data (:func:`.aggregation.aggregate`)."""
        if self.frame is not None:
            return aggregate(self, spec, needs, lambda s, columns, _: SparkFrameSource(self.frame, s, columns))
        return aggregate(self, spec, needs, SpecSource)

    def aggregate_parts(self, spec, needs: list, parts: list) -> dict:
        """The aggregates of ``needs`` over ``parts`` (picklable callables giving batches): one task each."""
        return aggregate(self, spec, needs, lambda s, columns, _: GivenSource(s, columns, parts))

    # -- the session -------------------------------------------------------------------------------------------

    def _refuse(self, source, why: str) -> DataError:
        return DataError(f"{source.what}: --spark-master {self.master!r}: {why}; start a Spark master there, check "
                         "the address, or drop --spark-master to use a local session")

    def _context(self, source):
        """``(SparkContext, owned)``: the running context of this process, or a new one (``owned``: stop it after)."""
        from pyspark import SparkContext

        if self.master is not None:  # an address that does not answer is refused first, whatever runs here
            why = probe_master(self.master, self.timeout)
            if why is not None:
                raise self._refuse(source, why)
        running = SparkContext._active_spark_context
        if running is not None:
            if self.master is not None and self.master != running.master:
                raise DataError(f"{source.what}: --spark-master {self.master!r}: a Spark context with master "
                                f"{running.master!r} is already running in this process; stop it, or give its "
                                "master")
            differ = sorted(k for k, v in self.conf.items() if running.getConf().get(k) != v)
            if differ:
                raise DataError(f"{source.what}: --spark-conf {differ}: a Spark context is already running in this "
                                "process with other values; stop it, or drop these settings")
            return running, False
        master = self.master or f"local[{max(1, os.cpu_count() or 1)}]"
        return self._start(source, master), True

    def _start(self, source, master: str):
        from pyspark import SparkConf, SparkContext

        conf = SparkConf().setMaster(master).setAppName("blowfish-privacy")
        conf.set("spark.ui.showConsoleProgress", "false")
        if master.startswith("local"):  # the executors are this interpreter's children: the same environment
            conf.set("spark.pyspark.python", sys.executable)
        for key, value in self.conf.items():
            conf.set(key, value)
        if "spark.driver.extraJavaOptions" not in self.conf:  # quiet, and no task's exception text in the log
            fd, self._log_config = tempfile.mkstemp(prefix="blowfish-spark-log4j2-", suffix=".properties")
            with os.fdopen(fd, "w") as fh:
                fh.write(LOG4J2)
            conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{self._log_config}")
        try:
            sc = _context_within(conf, REGISTER_TIMEOUT) if master.startswith("spark://") else SparkContext(conf=conf)
        except Exception as exc:  # noqa: BLE001 - the JVM did not start, or the master refused the application
            self._drop_log_config()
            if isinstance(exc, TimeoutError) or (isinstance(exc, _Stopped)):
                raise self._refuse(source, f"its port answers, but it did not accept the application within "
                                           f"{REGISTER_TIMEOUT:g} s (is it a Spark standalone master?)") from None
            if _java() is None or "JAVA_GATEWAY" in type(exc).__name__ + str(getattr(exc, "getErrorClass",
                                                                                       lambda: "")()):
                raise DataError(_NEEDS + f" (the Java gateway did not start: {type(exc).__name__})") from None
            raise DataError(f"{source.what}: a Spark session at master {master!r} could not be started "
                            f"({type(exc).__name__}); check --spark-master and --spark-conf") from None
        sc.setLogLevel("ERROR")
        if master.startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
            sc.pythonExec = sys.executable
        return sc

    # -- the protocol --------------------------------------------------------------------------------------------

    def map_reduce(self, source: Source, map_fn: Callable[[Any], _T], reduce_fn: Callable[[_T, _T], _T]) -> _T:
        """Map every partition on the cluster (source and map function broadcast once), reduce in an ordered tree.

        The partitions are asked for on the driver before the cluster is
        started or reached.  ``map_fn.result_bytes``, when it has one, is
        the size of one partial result: it sets the reduce tree's fan-in.
        """
        from pyspark import cloudpickle

        parts = source.partitions(parallel=True)
        if isinstance(source, SparkFrameSource):  # data that live in Spark: mapped where they are
            return self._map_frame(source, map_fn, reduce_fn)
        sc, owned = self._context(source)
        blob = None
        try:
            try:
                slots = max(1, int(sc.defaultParallelism))
                parts = source.balance(parts, slots)
                if not parts:
                    return map_fn(iter(()))
                blob = sc.broadcast(cloudpickle.dumps((source, map_fn)))
            except DataError:
                raise
            except Exception as exc:  # noqa: BLE001 - the cluster went away: one line, as a failed job
                raise self._failure(source, exc) from None
            sc.setJobDescription(f"blowfish-privacy: exact aggregates of {len(parts)} partitions")
            try:
                level = sc.parallelize(list(enumerate(parts)), len(parts)).map(_Mapper(blob))
                size = getattr(map_fn, "result_bytes", None)
                return reduce_tree(level, len(parts), tree_fan_in(size or 0), reduce_fn, result_bytes=size)
            except DataError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failed executor or task: Spark's text may quote the data
                raise self._failure(source, exc) from None
            finally:
                sc.setJobDescription(None)
                with contextlib.suppress(Exception):  # the context is gone: nothing to release
                    blob.destroy()
        finally:
            if owned:
                sc.stop()
                self._drop_log_config()

    def _drop_log_config(self) -> None:
        """Remove the log4j2 file of a session this engine started (the driver read it at launch)."""
        if self._log_config:
            with contextlib.suppress(OSError):
                os.unlink(self._log_config)
            self._log_config = None

    def _map_frame(self, source, map_fn, reduce_fn):
        """A Spark DataFrame's partitions mapped with mapInArrow in its own session; partials reduced in order."""
        try:
            return source.map_partitions(map_fn, reduce_fn)
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed executor or task: Spark's text may quote the data
            raise self._failure(source, exc) from None

    def _failure(self, source, exc) -> DataError:
        if isinstance(exc, AGGREGATION_ERRORS + (OSError,)):
            return source.failure(exc)
        return DataError(f"{source.what}: the Spark job failed ({type(exc).__name__}: an executor was lost or a task "
                         "failed; details withheld: they may quote the data, see the executors' logs)")


class _Mapper:
    """A Spark map step: ``(index, partition)`` to ``(index, map_fn(source.read(partition)))``."""

    def __init__(self, blob) -> None:
        self.blob = blob

    def __call__(self, item):
        index, part = item
        source, map_fn = _job(self.blob.value)
        return index, map_fn(source.read(part))


#: The job last unpickled in this Python worker: ``(its pickled bytes, (source, map_fn))``.
_CACHE: list = [None, None]


def _job(blob: bytes):
    """The source and the map function of the broadcast ``blob``, unpickled once per Python worker."""
    from pyspark import cloudpickle

    if _CACHE[0] is not blob:
        _CACHE[1] = cloudpickle.loads(blob)
        _CACHE[0] = blob
    return _CACHE[1]


class _Stopped(Exception):
    """The context came up stopped: the master gave up on the application."""


def _context_within(conf, timeout: float):
    """A SparkContext for ``conf``, or :class:`TimeoutError` when its constructor has not returned in ``timeout`` s.

    The constructor waits for the master to accept the application; a
    server that is not a Spark master keeps it waiting about a minute.  It
    runs on a daemon thread; a context that comes up after the caller gave
    up is stopped there.  A context that came up already stopped (the
    master gave up on it) is :class:`_Stopped`.
    """
    from pyspark import SparkContext

    lock = threading.Lock()
    done = threading.Event()
    state: dict = {"abandoned": False}

    def start() -> None:
        try:
            sc = SparkContext(conf=conf)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            with lock:
                state["error"] = exc
                done.set()
            return
        with lock:
            state["context"] = sc
            abandoned = state["abandoned"]
            done.set()
        if abandoned:
            with contextlib.suppress(Exception):
                sc.stop()

    threading.Thread(target=start, name="blowfish-spark-start", daemon=True).start()
    done.wait(timeout)
    with lock:
        if not done.is_set():
            state["abandoned"] = True
            raise TimeoutError
    if "error" in state:
        raise state["error"]
    sc = state["context"]
    if sc._jsc is None or sc._jsc.sc().isStopped():
        with contextlib.suppress(Exception):
            sc.stop()
        raise _Stopped
    return sc
