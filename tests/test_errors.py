"""The error hierarchy: one base to catch, the built-in bases kept."""

from __future__ import annotations

import importlib

import pytest

from blowfish_privacy import errors

BUILTIN = {
    "BudgetExceededError": ValueError,
    "UnsupportedPolicyError": NotImplementedError,
    "NoProvenSensitivityError": (NotImplementedError, ValueError),
    "NotSparseError": (NotImplementedError, ValueError),
    "SpecError": ValueError,
    "ParameterError": ValueError,
    "OptionError": ValueError,
    "MissingDependencyError": ImportError,
    "LedgerError": ValueError,
    "ExportError": ValueError,
    "DataMismatchError": ValueError,
    "DataError": ValueError,
    "InvalidColumn": ValueError,
    "TableError": ValueError,
}


@pytest.mark.parametrize("name", errors.__all__)
def test_every_error_is_a_blowfish_error_and_keeps_its_builtin(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.BlowfishError) and issubclass(cls, Exception)
    if name != "BlowfishError":
        bases = BUILTIN[name] if isinstance(BUILTIN[name], tuple) else (BUILTIN[name],)
        for b in bases:
            assert issubclass(cls, b), (name, b)


def test_tree():
    assert issubclass(errors.NotSparseError, errors.NoProvenSensitivityError)
    assert issubclass(errors.NoProvenSensitivityError, errors.UnsupportedPolicyError)
    assert issubclass(errors.ExportError, errors.LedgerError)
    for name in ("DataError", "InvalidColumn", "TableError"):
        assert issubclass(getattr(errors, name), errors.DataMismatchError)
    # siblings stay siblings: code that catches one does not catch another
    assert not issubclass(errors.InvalidColumn, errors.DataError)
    assert not issubclass(errors.BudgetExceededError, errors.LedgerError)


def test_error_payloads():
    e = errors.OptionError("fanout", "must be an int >= 2")
    assert str(e) == "fanout: must be an int >= 2" and e.key == "fanout" and e.message == "must be an int >= 2"
    assert e.parameter == "fanout" and isinstance(e, errors.ParameterError)
    e = errors.ParameterError("epsilon", "epsilon must be a finite number > 0, got -1")
    assert str(e) == "epsilon must be a finite number > 0, got -1" and e.parameter == "epsilon"
    e = errors.InvalidColumn([("b", "B", "r2"), ("a", "A", "r1"), ("a", "A", "r1")])
    assert e.entries == (("a", "A", "r1"), ("b", "B", "r2"))
    assert str(e) == "attribute 'a': column 'A' r1; attribute 'b': column 'B' r2"


def test_policy_refusals_are_blowfish_errors():
    from blowfish_privacy import constraints

    assert issubclass(constraints.NoProvenSensitivityError, errors.BlowfishError)
    assert issubclass(constraints.NoProvenSensitivityError, errors.UnsupportedPolicyError)


# Where each name is importable today; each module is to import it from
# errors.py so that both names are the same class (tracked by issue 17).
RE_EXPORTS = [
    ("blowfish_privacy.accountant", "BudgetExceededError"),
    ("blowfish_privacy.policy.constraints", "NoProvenSensitivityError"),
    ("blowfish_privacy.policy.constraints", "NotSparseError"),
    ("blowfish_privacy.release", "SpecError"),
    ("blowfish_privacy.release.spec", "SpecError"),
    ("blowfish_privacy.release.kinds", "OptionError"),
    ("blowfish_privacy.release", "LedgerError"),
    ("blowfish_privacy.release.ledger", "LedgerError"),
    ("blowfish_privacy.release.runner", "ExportError"),
    ("blowfish_privacy.release", "DataError"),
    ("blowfish_privacy.frames", "TableError"),
]


@pytest.mark.parametrize("module,name", RE_EXPORTS, ids=[f"{m}.{n}" for m, n in RE_EXPORTS])
def test_names_importable_where_they_were_are_the_same_class(module, name):
    cls = getattr(importlib.import_module(module), name)
    assert cls is getattr(errors, name), f"{module} defines its own {name}; it must import it from blowfish_privacy.errors"
