"""Exceptions raised by blowfish-privacy, all in one place.

Every error names the parameter (or the spec key, file and column), what it
got and what is allowed; errors about data never quote a value, a row or a
count of the data.  Each class also subclasses the built-in exception a
caller would expect (``ValueError`` for bad values), so ``except
ValueError`` keeps working, and :class:`BlowfishError` catches all of them::

    Exception
    └── BlowfishError                    anything this library raises on purpose
        ├── BudgetExceededError          (ValueError) a spend would pass the budget
        ├── UnsupportedPolicyError       (NotImplementedError) valid policy, no proven sensitivity
        │   └── NoProvenSensitivityError (+ ValueError) for this query under these constraints
        │       └── NotSparseError       the constraints are not sparse (000 Def 8.2)
        ├── SpecError                    (ValueError) an invalid release spec
        ├── ParameterError               (ValueError) an argument outside what is allowed; .parameter names it
        │   └── OptionError              an invalid option of one release; .key names it
        ├── LedgerError                  (ValueError) the ledger cannot be used as asked
        │   └── ExportError              result files not written (results kept in the ledger)
        └── DataMismatchError            (ValueError) data that do not fit their domain
            ├── DataError                a file or column that does not match the spec
            ├── InvalidColumn            values outside the domain under invalid = "error"
            └── TableError               an in-memory table that does not match the domain

Refusals that protect the guarantee are :class:`UnsupportedPolicyError` and
:class:`BudgetExceededError`: the library raises them instead of calibrating
below a proven sensitivity or spending past the budget.

The names are also importable from the modules that raise them
(``blowfish_privacy.policy.constraints``, ``blowfish_privacy.release``,
``blowfish_privacy.frames``), as the same classes.
"""

from __future__ import annotations

__all__ = [
    "BlowfishError",
    "MissingDependencyError",
    "BudgetExceededError",
    "UnsupportedPolicyError",
    "NoProvenSensitivityError",
    "NotSparseError",
    "SpecError",
    "ParameterError",
    "OptionError",
    "LedgerError",
    "ExportError",
    "DataMismatchError",
    "DataError",
    "InvalidColumn",
    "TableError",
]


class BlowfishError(Exception):
    """Base class of every error blowfish-privacy raises on purpose."""


# -- budget and policy ---------------------------------------------------------
class BudgetExceededError(BlowfishError, ValueError):
    """A spend would take the privacy budget past its total."""


class UnsupportedPolicyError(BlowfishError, NotImplementedError):
    """The policy is valid but no proven sensitivity exists for it here.

    Raised instead of guessing: calibrating noise below a proven bound would
    break the guarantee.
    """


class NoProvenSensitivityError(UnsupportedPolicyError, ValueError):
    """No proven sensitivity exists for this policy and query."""


class NotSparseError(NoProvenSensitivityError):
    """The count constraints are not sparse (000 Def 8.2) w.r.t. the complete graph."""


# -- the release product -------------------------------------------------------
class SpecError(BlowfishError, ValueError):
    """An invalid release spec; the message names the file and the key."""


class ParameterError(BlowfishError, ValueError):
    """An argument is outside what is allowed: ``parameter`` names it as the function calls it.

    The message is the whole explanation (the parameter, its value, what is
    allowed); ``parameter`` lets a caller map the failure to its own name
    for it (the release product: a spec key) without reading the text.
    """

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


class MissingDependencyError(BlowfishError, ImportError):
    """An optional dependency a feature needs is not installed; the message names the extra to install."""


class OptionError(ParameterError):
    """A release option is invalid: ``key`` names it, ``message`` says what is allowed."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, f"{key}: {message}")
        self.key = key
        self.message = message


class LedgerError(BlowfishError, ValueError):
    """The ledger cannot be used as asked (wrong file, conflicting budget)."""


class ExportError(LedgerError):
    """Writing the result files failed after the spend (the results are kept in the ledger)."""


# -- data ----------------------------------------------------------------------
class DataMismatchError(BlowfishError, ValueError):
    """Data that do not fit their domain or spec.

    Messages name the file, the key, the attribute, the column and the rule
    broken; never a value, a row or a count of the data.
    """


class DataError(DataMismatchError):
    """The data do not match the spec (a missing column, a value outside the domain).

    Messages name the file, the key, the column and the rule broken; never a
    value or a row of the data.
    """


class InvalidColumn(DataMismatchError):
    """Columns hold values outside their attributes' domains, under ``invalid = "error"``.

    ``entries`` are ``(attribute, column, rule)``, all from the spec: the
    message never holds a value, a row or a count, and does not depend on
    the order of the rows.
    """

    def __init__(self, entries) -> None:
        self.entries = tuple(sorted(set(entries)))
        super().__init__(self.entries)

    def __str__(self) -> str:
        return "; ".join(f"attribute {a!r}: column {c!r} {r}" for a, c, r in self.entries)


class TableError(DataMismatchError):
    """A table does not match the domain (a missing column, values outside the domain).

    Messages name the attribute, the column and the rule broken, never a
    value, a row or a count from the data.
    """
