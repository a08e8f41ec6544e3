"""The batch-release product: TOML specs, the SQLite budget ledger, engines, outputs.

>>> from blowfish_privacy.release import load_spec, run_spec, Ledger, LocalEngine
"""

from .api import TableEngine, release
from .engines import DaskEngine, DataError, LocalEngine
from .kinds import KINDS, UNAVAILABLE_KINDS
from .ledger import Ledger, LedgerError, default_ledger_path
from .runner import RunResult, run_spec
from .spec import Spec, SpecError, load_spec, parse_spec

__all__ = [
    "DaskEngine", "DataError", "KINDS", "Ledger", "LedgerError", "LocalEngine", "RunResult",
    "Spec", "SpecError", "TableEngine", "release", "UNAVAILABLE_KINDS", "default_ledger_path", "load_spec", "parse_spec", "run_spec",
]
