"""The batch-release product: TOML specs, the SQLite budget ledger, engines, outputs.

>>> from blowfish_privacy.release import load_spec, run_spec, Ledger, LocalEngine
"""

from ..errors import DataError
from .api import TableEngine, release
from .dask_engine import DaskEngine
from .engines import ENGINES, engine_names, make_engine, register_engine
from .local_engine import LocalEngine
from .kinds import KINDS, UNAVAILABLE_KINDS
from .ledger import Ledger, LedgerError, default_ledger_path
from .runner import RunResult, run_spec
from .spec import Spec, SpecError, load_spec, parse_spec

__all__ = [
    "DaskEngine", "DataError", "ENGINES", "KINDS", "Ledger", "LedgerError", "LocalEngine", "RunResult",
    "Spec", "SpecError", "TableEngine", "release", "UNAVAILABLE_KINDS", "default_ledger_path", "engine_names", "load_spec", "make_engine",
    "parse_spec", "register_engine", "run_spec",
]
