"""Reading the tables of a TOML release spec: typed values and errors that name the key.

Every error is a :class:`~blowfish_privacy.errors.SpecError` whose message
names the file, the key, the value and what is allowed; the spec reader
(:mod:`.spec`), its policies (:mod:`._spec_policies`) and the dataset's
protection rule (:mod:`._protection`) share these helpers.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError

__all__ = ["fail", "type_name", "check_keys", "typed", "str_list"]


def fail(where: str, key: str, message: str) -> SpecError:
    """The error for ``key`` of the spec ``where``."""
    return SpecError(f"{where}: {key}: {message}")


def type_name(value: Any) -> str:
    """The TOML name of a value's type (for messages)."""
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array", dict: "table"}.get(
        type(value), type(value).__name__
    )


def check_keys(table: dict, allowed: set, where: str, prefix: str) -> None:
    """Refuse a key of ``table`` outside ``allowed``."""
    for k in table:
        if k not in allowed:
            raise fail(where, f"{prefix}{k}", f"unknown key; allowed keys here: {sorted(allowed)}")


def typed(table: dict, key: str, types, what: str, where: str, prefix: str, *, required=True, default=None):
    """``table[key]`` checked to be of ``types`` (never a boolean for a number); ``default`` when absent."""
    if key not in table:
        if required:
            raise fail(where, f"{prefix}{key}", f"missing; must be {what}")
        return default
    value = table[key]
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise fail(where, f"{prefix}{key}", f"must be {what}, got {value!r} ({type_name(value)})")
    return value


def str_list(table, key, where, prefix, *, required=True):
    """``table[key]`` checked to be an array of strings (None when absent and not required)."""
    value = typed(table, key, list, "an array of strings", where, prefix, required=required)
    if value is None:
        return None
    for v in value:
        if not isinstance(v, str):
            raise fail(where, f"{prefix}{key}", f"must be an array of strings, got element {v!r} ({type_name(v)})")
    return value
