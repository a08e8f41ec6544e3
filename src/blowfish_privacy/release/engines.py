"""Engines by name: the registry that the command line's ``--engine`` and ``release(engine=...)`` read.

An engine computes the exact aggregates of a release spec: it follows the
:class:`~.aggregation.Engine` protocol (a ``name`` and one
``map_reduce(source, map_fn, reduce_fn)``) and is registered here with a
description and the command-line options it takes.  The built-in engines:
``local`` (:class:`~.local_engine.LocalEngine`), ``dask``
(:class:`~.dask_engine.DaskEngine`) and ``spark``
(:class:`~.spark_engine.SparkEngine`).  Adding one is described in
docs/architecture.md, "Adding an engine".
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .aggregation import Engine
from .dask_engine import DaskEngine
from .local_engine import LocalEngine
from .spark_engine import SparkEngine

__all__ = ["ENGINES", "EngineEntry", "engine_names", "make_engine", "register_engine", "resolve_engine"]


class EngineEntry(NamedTuple):
    """A registered engine: its class, what it is in a line, and the keyword options the command line may pass.

    ``options`` are the names of the constructor's keyword arguments that
    command-line options set (``--scheduler`` sets ``scheduler``);
    ``progress`` is passed to every engine.
    """

    name: str
    cls: type
    description: str
    options: tuple = ()


#: The registered engines by name, in the order the command line lists them.
ENGINES: dict[str, EngineEntry] = {}


def register_engine(name: str, cls: type, description: str, options: tuple = ()) -> EngineEntry:
    """Register ``cls`` (an :class:`~.aggregation.Engine` whose ``name`` is ``name``) under ``name``.

    Raises ValueError when the name is taken by another class or differs
    from ``cls.name``, TypeError when ``cls`` has no ``map_reduce``.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an engine name (letters, digits, _), got {name!r}")
    if getattr(cls, "name", None) != name:
        raise ValueError(f"cls.name must be the registered name {name!r}, got {getattr(cls, 'name', None)!r}")
    if not callable(getattr(cls, "map_reduce", None)):
        raise TypeError(f"cls must define map_reduce(source, map_fn, reduce_fn), got {cls.__name__}")
    old = ENGINES.get(name)
    if old is not None and old.cls is not cls:
        raise ValueError(f"name: engine {name!r} is already registered ({old.cls.__name__})")
    entry = EngineEntry(name, cls, description, tuple(options))
    ENGINES[name] = entry
    return entry


def engine_names() -> list:
    """The registered engines' names (the command line's ``--engine`` choices)."""
    return list(ENGINES)


def make_engine(name: str, **options: Any) -> Engine:
    """A new engine of the registered ``name``, with the keyword ``options`` its class takes.

    Options whose value is None are left to the engine's defaults; an
    option the engine does not take is a ValueError naming the engines
    that take it.
    """
    entry = _entry(name)
    given = {k: v for k, v in options.items() if v is not None}
    for key in given:
        if key != "progress" and key not in entry.options:
            takers = [e.name for e in ENGINES.values() if key in e.options]
            allowed = f"only with engine {' or '.join(repr(t) for t in takers)}" if takers else "with no engine"
            raise ValueError(f"{key}: applies {allowed}, not with engine {name!r}")
    return entry.cls(**given)


def resolve_engine(engine, *, progress: bool | None = None):
    """The engine that ``release(engine=...)`` means: None (the local engine), a registered name, or an engine.

    An engine is an object with ``name`` and ``map_reduce`` (or, as
    before the protocol, ``aggregate(spec, needs)``).  Anything else is a
    ValueError (an unknown name) or a TypeError naming the allowed values.
    """
    if engine is None:
        return make_engine("local", progress=progress)
    if isinstance(engine, str):
        return make_engine(engine, progress=progress)
    if isinstance(getattr(engine, "name", None), str) and (callable(getattr(engine, "map_reduce", None))
                                                            or callable(getattr(engine, "aggregate", None))):
        return engine
    raise TypeError(f"engine must be one of {engine_names()} or an engine object (with name and map_reduce), "
                    f"got {type(engine).__name__}")


def _entry(name) -> EngineEntry:
    entry = ENGINES.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ValueError(f"engine must be one of {engine_names()}, got {name!r}")
    return entry


register_engine("local", LocalEngine, "on this machine, the data streamed in bounded batches; the default")
register_engine("dask", DaskEngine, "on a Dask cluster, partitioned data (files, row groups, blocks of lines) mapped "
                "on its workers and the partials reduced there; pip install 'blowfish-privacy[dask]'",
                ("scheduler", "workers", "timeout"))
register_engine("spark", SparkEngine, "on a Spark cluster (default: a local session local[N]), partitioned data "
                "mapped in Spark tasks and the partials reduced there; pip install 'blowfish-privacy[spark]' (needs "
                "Java 17 or newer)", ("master", "conf", "timeout"))
