"""The release product from Python: run a spec on an in-memory table.

:func:`release` does what ``blowfish release SPEC.toml`` does (plan every
release from public inputs, refuse before anything is spent, aggregate,
spend in the ledger, measure, write JSON/CSV/PNG), with the table given as
a pandas or Polars DataFrame, a pyarrow Table or a mapping of column names
to arrays instead of the spec's file.  The table is aggregated by
:class:`TableEngine` with the local engine's map step, so ``dataset.invalid``
and every error message behave exactly as on the command line (messages
name the spec, the attribute and the column, never a data value).

>>> from blowfish_privacy.release import release            # doctest: +SKIP
>>> result = release("spec.toml", df, ledger="ledger.sqlite", out_dir="out")  # doctest: +SKIP
>>> result.releases[0]["epsilon_spent"]                      # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from .._aggregate import plan_for
from .._spark_frames import is_spark_frame
from ..errors import DataError, InvalidColumn, LedgerError
from ..frames import TableError, column_names, is_table, table_columns, table_kind
from .aggregation import Engine
from .engines import resolve_engine
from .ledger import Ledger
from .local_engine import LocalEngine
from .runner import RunResult, check_flags, check_memory_limit, run_spec
from .spark_engine import SparkEngine
from .spec import Spec, SpecError, load_spec, parse_spec, read_spec_file

__all__ = ["release", "TableEngine", "as_spec"]

_AGGREGATION_ERRORS = (ValueError, TypeError, OverflowError, ArithmeticError, KeyError, IndexError)
# where the placeholder source goes when a spec meant for a table names no file
_DATASET_HEADER = re.compile(r"^[ \t]*\[[ \t]*dataset[ \t]*\][ \t]*(#.*)?$", re.MULTILINE)


def _describe(table: Any) -> str:
    kind = table_kind(table)
    return {"pandas": "pandas DataFrame", "polars": "Polars DataFrame", "polars-lazy": "Polars LazyFrame",
            "pyarrow": f"pyarrow {type(table).__name__}"}.get(kind or "", "mapping of columns")


class TableEngine:
    """Aggregates an in-memory table with the local engine's map step.

    Parameters
    ----------
    table : DataFrame, Table or mapping
        A pandas or Polars DataFrame (or LazyFrame), a pyarrow Table or
        RecordBatch, or a mapping ``{column name: array}``.  Columns are
        looked up by the spec's column names (``domain.NAME.column``,
        default the attribute name); integer columns are used without a copy.
    progress : bool, optional
        Progress bar for tables of several chunks (default: on a terminal).
    """

    name = "table"

    def __init__(self, table: Any, *, progress: bool | None = None) -> None:
        if not is_table(table) and not isinstance(table, dict):
            raise TypeError(f"table must be a pandas or Polars DataFrame, a pyarrow Table or a dict of column arrays, "
                            f"got {type(table).__name__}")
        self.table = table
        self.progress = progress
        self.description = f"in-memory {_describe(table)}"

    def aggregate(self, spec: Spec, needs: list) -> dict:
        plan = plan_for(spec.domain, spec.columns, needs, getattr(spec, "invalid", None) or "error")
        wanted = sorted({c for _, _, cols, flt, _ in plan for c in cols + tuple(f[1] for f in flt)})
        available = column_names(self.table)
        for c in wanted:
            if c not in available:
                attr = next((a for a, col in spec.columns.items() if col == c), c)
                shown = available if len(available) <= 50 else available[:50] + ["..."]
                raise DataError(f"{spec.path}: domain.{attr}: column {c!r} not found in the {self.description}; "
                                f"its columns are {shown}")
        try:
            data = table_columns(self.table, wanted)
        except TableError as exc:
            raise DataError(f"{spec.path}: dataset: {exc}") from None
        try:
            result = LocalEngine(progress=self.progress).aggregate_table(data, plan)
        except InvalidColumn as exc:
            parts = "; ".join(f"domain.{a}: column {c!r} {r}" for a, c, r in exc.entries)
            labels_only = all(r.startswith("has values that are not among") for _, _, r in exc.entries)
            hint = ('set dataset.invalid = "drop" (or "clamp", which drops unknown labels too)' if labels_only
                    else 'set dataset.invalid = "clamp" or "drop"')
            raise DataError(f"{spec.path}: {parts} (the data in the {self.description}); {hint}, "
                            "or correct the data") from None
        except _AGGREGATION_ERRORS as exc:
            names = sorted({a for _, d, _, flt, _ in plan for a in d.names + tuple(f[0].name for f in flt)})
            raise DataError(f"{spec.path}: domain: the data in the {self.description} could not be aggregated over "
                            f"{names} ({type(exc).__name__}; details withheld: they may quote the data)") from None
        return dict(zip(needs, result))


def _looks_like_toml(text: str) -> bool:
    return "\n" in text or "=" in text or text.lstrip().startswith("[")


def as_spec(spec: Any, *, for_table: bool = False) -> Spec:
    """A :class:`Spec` from a Spec, a path to a TOML file, or TOML text.

    With ``for_table=True`` the spec may leave out ``dataset.path`` and
    ``dataset.bundled`` (the data come from a table); its ``text`` and
    ``sha256`` are those of the text as given.
    """
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and not _looks_like_toml(spec)):
        p = Path(spec)
        if not for_table:
            return load_spec(p)
        return _parse(read_spec_file(p), str(p), p.parent, for_table)
    if isinstance(spec, str):
        return _parse(spec, "<spec>", Path.cwd(), for_table)
    raise TypeError(f"spec must be a path to a TOML spec, TOML text or a Spec, got {type(spec).__name__}")


def _parse(text: str, where: str, base_dir: Path, for_table: bool) -> Spec:
    if for_table:
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            raw = None  # parse_spec reports it
        ds = raw.get("dataset") if isinstance(raw, dict) else None
        if isinstance(ds, dict) and "path" not in ds and "bundled" not in ds:
            m = _DATASET_HEADER.search(text)
            if m is None:
                raise SpecError(f"{where}: dataset: with an in-memory table, write the dataset as a [dataset] table "
                                "(its path may be left out)")
            # a placeholder source so the spec validates; the table replaces it
            patched = text[:m.end()] + '\nbundled = "adult"' + text[m.end():]
            spec = parse_spec(patched, where, base_dir=base_dir)
            return dataclasses.replace(spec, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                                       raw=raw)
    return parse_spec(text, where, base_dir=base_dir)


def release(spec: str | os.PathLike[str] | Spec, table: Any = None, *, ledger: Ledger | str | os.PathLike[str],
            out_dir: str | os.PathLike[str], engine: str | Engine | None = None, plots: bool = True,
            allow_seeded: bool = False,
            memory_limit: int | None = None, overwrite: bool = False, progress: bool | None = False,
            new_ledger: bool = False) -> RunResult:
    """Run a release spec, on an in-memory table or on the spec's own data.

    The same run as ``blowfish release``: every release is planned from
    public inputs and anything impossible is refused before a row is read;
    a seeded spec (``run.seed``) is refused unless ``allow_seeded=True``
    (then it spends nothing, is recorded in the ledger as a disclosure, and
    every output says ``seeded: NOT private``); ``out_dir`` must be new or
    empty unless ``overwrite=True``; the ledger admits the run (the
    dataset's total and protection policy, the remaining budget) before the
    table is read; the table is aggregated (values outside the domain as
    ``invalid`` says: clamped or dropped by default); the spend and the results
    are committed to the ledger in one transaction; then the files are
    written (``NAME.json``, ``NAME.csv`` for long vectors, ``NAME.png``,
    ``summary.json``).

    Parameters
    ----------
    spec : str, path or Spec
        A path to a TOML spec, TOML text, or a parsed
        :class:`~blowfish_privacy.release.Spec`.  With a ``table`` the spec's
        ``[dataset]`` may leave out ``path`` (it is ignored if given, but
        must then exist); its ``id`` names the dataset in the ledger, so a
        table released under the same id shares that dataset's budget.
    table : DataFrame, Table or dict, optional
        A pandas or Polars DataFrame (or LazyFrame), a pyarrow Table or
        RecordBatch, or a dict ``{column name: array}``, read instead of the
        spec's file.  Columns are looked up by ``domain.NAME.column``
        (default: the attribute name).  Without it the spec's own data are
        read by ``engine`` (default: the local engine).
    ledger : Ledger or path
        The budget ledger.  A path must name an existing ledger unless
        ``new_ledger=True`` (a typo never starts a fresh, full budget).
    out_dir : path
        The output folder.
    engine : str or engine, optional
        For specs read from their file (not with ``table``): a registered
        engine's name (:func:`~blowfish_privacy.release.engine_names`, e.g.
        ``"local"`` or ``"dask"``) or an engine object (``name`` and
        ``map_reduce``), e.g. :class:`~blowfish_privacy.release.DaskEngine`;
        default the local engine.
    plots, allow_seeded, overwrite : bool
        As in :func:`~blowfish_privacy.release.run_spec` (True or False;
        anything else is a TypeError, so ``plots="no"`` never writes plots).
    memory_limit : int, optional
        Bytes the run may use (an int >= 1, e.g. ``2**30``); default the
        memory available now.  A run that would need more is refused before
        anything is read.
    progress : bool, optional
        Progress bar while aggregating (default False; None: on a terminal).
    new_ledger : bool
        Create the ledger at the path ``ledger`` when it does not exist.

    Returns
    -------
    RunResult
        ``releases`` (the JSON documents written), ``files``, ``run`` (the
        run's id in the ledger), ``out_dir``.

    Raises
    ------
    SpecError
        An invalid spec or a release that cannot be planned (nothing spent).
    DataError
        A missing column or values outside the domain (nothing spent).
    BudgetExceededError
        Not enough budget left in the ledger (nothing spent).
    LedgerError
        ``ledger`` names no existing file and ``new_ledger`` is False.
    ValueError
        ``engine`` names no registered engine (the message lists them), or
        is given with ``table``; ``memory_limit`` below 1.
    TypeError
        ``engine`` is neither a name nor an engine object; ``ledger`` or
        ``out_dir`` is not a path; a flag is not a bool; ``memory_limit`` is
        not an int.

    Privacy
    -------
    Each release is the output of its mechanism's plan: (epsilon_i, P_i)-
    Blowfish privacy for the policy P_i and the epsilon_i its spec entry
    names (rounded down to what the exact sampler spends); the run spends
    their sequential sum, parallel groups their largest member (He,
    Machanavajjhala, Ding, SIGMOD 2014, Thm 4.1-4.2), charged to the
    dataset's ledger before anything is written.  Nothing else a reader
    can see (files, messages, exit status, ledger rows) depends on the
    data except through the calibrated noise.  A seeded run is not private
    and says so.

    Sensitivity
    -----------
    Per release, as its plan states (``blowfish plan SPEC`` prints them):
    exact where proven by the mechanism's scan or theorem, else the safe
    upper bound, said so in the JSON.

    Runtime
    -------
    One streaming pass over the table per distinct aggregate, then each
    mechanism's own cost (its plan's ``runtime``).

    References
    ----------
    He, Machanavajjhala, Ding, "Blowfish Privacy: Tuning Privacy-Utility
    Trade-offs using Policies", SIGMOD 2014 (policies, Sec 3-5;
    composition, Sec 4.2); each mechanism's own reference in its JSON.

    Examples
    --------
    >>> import pandas as pd                                                       # doctest: +SKIP
    >>> from blowfish_privacy.release import release
    >>> spec = '''
    ... [dataset]
    ... id = "people"
    ... total_epsilon = 1.0
    ... [domain.age]
    ... type = "ordinal"
    ... low = 0
    ... high = 99
    ... [policies.near]
    ... secrets = "distance_threshold"
    ... theta = 5
    ... [[release]]
    ... name = "age-cdf"
    ... kind = "cdf"
    ... attributes = ["age"]
    ... policy = "near"
    ... epsilon = 0.5
    ... '''
    >>> r = release(spec, pd.DataFrame({"age": [31, 45, 45]}), ledger="ledger.sqlite", out_dir="out")  # doctest: +SKIP
    """
    check_flags(plots=plots, allow_seeded=allow_seeded, overwrite=overwrite, new_ledger=new_ledger)
    if progress is not None and not _is_bool(progress):
        raise TypeError(f"progress must be True, False or None (on a terminal), got {progress!r} of type "
                        f"{type(progress).__name__}")
    check_memory_limit(memory_limit)
    if table is not None and engine is not None:
        raise ValueError("engine: give either a table (read in memory) or an engine (reading the spec's file), "
                         "not both")
    out = _output_folder(out_dir)
    ledger = _ledger_or_path(ledger, new_ledger)
    parsed = as_spec(spec, for_table=table is not None)
    if not overwrite and out.is_dir() and any(out.iterdir()):  # in Python words: run_spec says --overwrite
        raise SpecError(f"out_dir: the output folder {str(out)!r} is not empty; earlier results are never replaced "
                        "silently: choose a new folder or pass overwrite=True")
    if parsed.seed is not None and not allow_seeded:  # in Python words: run_spec names the command's flag first
        raise SpecError(f"{parsed.path}: run.seed: a seeded run is a test, not a private release (the seed lets "
                        "anyone subtract the noise); pass allow_seeded=True to run it as a recorded disclosure (the "
                        "dataset must allow disclosures), or remove run.seed")
    if table is not None:
        if is_spark_frame(table):  # aggregated where it lives, by the Spark engine
            engine = SparkEngine(frame=table, progress=progress)
            parsed = dataclasses.replace(parsed, source={"path": "<in-memory Spark DataFrame>", "format": "table"})
        else:
            engine = TableEngine(table, progress=progress)
            parsed = dataclasses.replace(parsed, source={"path": f"<{engine.description}>", "format": "table"})
    else:
        engine = resolve_engine(engine, progress=progress)
    if not isinstance(ledger, Ledger):
        ledger = Ledger(ledger, create=new_ledger)
    return run_spec(parsed, engine=engine, ledger=ledger, out_dir=out, plots=plots, allow_seeded=allow_seeded,
                    memory_limit=memory_limit, overwrite=overwrite)


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _path_argument(value: Any, must: str) -> Path:
    """``value`` (a str or os.PathLike, not empty) as a Path; ``must`` says what it must be ("out_dir must be ...")."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{must} (str or os.PathLike), got {value!r} of type {type(value).__name__}")
    if str(value) == "":
        raise ValueError(f"{must}, got '' (an empty path)")
    return Path(value)


def _output_folder(out_dir: Any) -> Path:
    """``out_dir`` as a path, refused in Python words when it is no path or names a file."""
    out = _path_argument(out_dir, "out_dir must be the path of the output folder")
    for place in (out, *out.parents):  # the folder, or the first of its parents that exists, must be a folder
        if place.exists() or place.is_symlink():
            if not place.is_dir():
                what = "is" if place == out else f"would be inside {str(place)!r}, which is"
                raise SpecError(f"out_dir: the output folder {str(out)!r} {what} a file, not a folder; choose a new "
                                "or empty folder")
            break
    return out


def _ledger_or_path(ledger: Any, new_ledger: bool) -> Ledger | Path:
    """A Ledger as given, or the path of one, refused in Python words when it is no path or does not exist."""
    if isinstance(ledger, Ledger):
        return ledger
    if ledger is None:
        raise TypeError("ledger must be a Ledger or a path to the ledger file (there is no implicit ledger "
                        "here: blowfish_privacy.release.default_ledger_path() is the command's default)")
    path = _path_argument(ledger, "ledger must be a Ledger or the path of the ledger file")
    if not path.exists() and not new_ledger:  # the Ledger's own message names the command's flag first
        raise LedgerError(f"ledger: {str(path)!r} does not exist; check the path, or pass new_ledger=True to create "
                          "a new ledger there (a missing ledger is never created silently: a typo must not start a "
                          "fresh, full budget)")
    return path
