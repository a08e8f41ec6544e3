"""Comparing two results of an audited mechanism, leaf by leaf.

The exact auditor (:func:`.audit.exact`) decides whether everything a
mechanism returns is a function of its noisy stage and its generator draws
by running it twice and comparing the results.  A naive ``==`` would miss
what a result reveals without comparing it: the closure and defaults of a
returned function, the attributes of an object whose own ``__eq__`` looks
at only part of it, fields set outside a dataclass's declared fields.
:func:`difference` names the first leaf where two results differ;
:func:`fingerprint` is a hashable form equal exactly when
:func:`difference` finds none (to count equal outputs); :func:`same`
compares two fingerprints.
"""

from __future__ import annotations

import math
import types
from dataclasses import fields, is_dataclass
from fractions import Fraction

import numpy as np

from .mechanisms.plan import Plan
from .noise import Generator

__all__ = ["difference", "fingerprint", "same"]


def _float_equal(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def _array_difference(x: np.ndarray, y: np.ndarray, path: str) -> str | None:
    if x.shape != y.shape or x.dtype != y.dtype:
        return f"{path} (shape or dtype)"
    if x.dtype.kind == "O":
        for idx in np.ndindex(x.shape):
            d = difference(x[idx], y[idx], f"{path}[{', '.join(map(str, idx))}]")
            if d:
                return d
        return None
    diff = x != y
    if x.dtype.kind in "fc":
        diff &= ~(np.isnan(x) & np.isnan(y))
    if diff.any():
        idx = tuple(int(i) for i in np.argwhere(diff)[0])
        return f"{path}[{', '.join(map(str, idx))}]" if idx else path
    return None


def difference(x, y, path: str = "result") -> str | None:
    """Path of the first leaf where ``x`` and ``y`` differ, or None.

    Dataclasses field by field, arrays element-wise (NaN equals NaN), dicts,
    lists and tuples recursively, floats with NaN equal; generators are
    skipped and plans compared by ``describe()``.
    """
    if isinstance(x, Generator) and isinstance(y, Generator):
        return None
    if type(x) is not type(y):
        return f"{path} (type {type(x).__name__} vs {type(y).__name__})"
    if isinstance(x, Plan):
        return difference(x.describe(), y.describe(), f"{path}.describe()")
    if is_dataclass(x) and not isinstance(x, type):
        for f in fields(x):
            a, b = getattr(x, f.name), getattr(y, f.name)
            if f.name == "plan" and hasattr(a, "describe") and hasattr(b, "describe"):
                a, b = a.describe(), b.describe()
            d = difference(a, b, f"{path}.{f.name}")
            if d:
                return d
        # attributes set outside the declared fields are outputs too
        return difference(_extra_state(x), _extra_state(y), f"{path}.__dict__")
    if isinstance(x, np.ndarray):
        return _array_difference(x, y, path)
    if isinstance(x, np.generic):
        return _array_difference(np.asarray(x), np.asarray(y), path)
    if isinstance(x, dict):
        if set(x) != set(y):
            return f"{path} (keys)"
        for k in x:
            d = difference(x[k], y[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(x, (list, tuple)):
        if len(x) != len(y):
            return f"{path} (length)"
        for i, (a, b) in enumerate(zip(x, y)):
            d = difference(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(x, float):
        return None if _float_equal(x, y) else path
    if isinstance(x, complex):
        return None if _float_equal(x.real, y.real) and _float_equal(x.imag, y.imag) else path
    if isinstance(x, (types.FunctionType, types.MethodType)) or _opaque(x):
        # a function's closure and defaults, an object's attributes: what it
        # can reveal, not what its own __eq__ chooses to compare
        return difference(_state(x), _state(y), path)
    try:
        return None if bool(x == y) else path
    except Exception:  # noqa: BLE001 - objects whose == is not a bool
        return None if repr(x) == repr(y) else path


_PLAIN = (int, str, bytes, bool, type(None), Fraction, complex, float, range, type)


def _opaque(x) -> bool:
    """An object compared through its attributes rather than its own ``__eq__``."""
    return not isinstance(x, _PLAIN) and (hasattr(x, "__dict__") or hasattr(type(x), "__slots__"))


def _extra_state(x) -> dict:
    declared = {f.name for f in fields(x)}
    return {k: v for k, v in getattr(x, "__dict__", {}).items() if k not in declared}


def _state(x) -> dict:
    """What a function or object carries: code, defaults and closure; or its attributes."""
    if isinstance(x, types.MethodType):
        return {"self": x.__self__, "func": x.__func__}
    if isinstance(x, types.FunctionType):
        cells = []
        for c in x.__closure__ or ():
            try:
                cells.append(c.cell_contents)
            except ValueError:  # an empty cell
                cells.append(None)
        return {"code": x.__code__.co_code, "consts": repr(x.__code__.co_consts), "defaults": x.__defaults__,
                "kwdefaults": x.__kwdefaults__, "closure": tuple(cells)}
    out = {"type": type(x).__qualname__}
    out.update(getattr(x, "__dict__", {}))
    for cls in type(x).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if isinstance(slot, str) and hasattr(x, slot) and slot not in out:
                out[slot] = getattr(x, slot)
    return out


def fingerprint(x):
    """A hashable fingerprint of ``x``: equal exactly when :func:`difference` finds no leaf."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "O":
            return ("nd", x.shape, tuple(fingerprint(v) for v in x.reshape(-1)))
        if x.dtype.kind in "fc":
            x = np.where(np.isnan(x), np.nan, x + 0)  # one NaN, no -0.0
        return ("nd", x.shape, x.dtype.str, np.ascontiguousarray(x).tobytes())
    if isinstance(x, Generator):
        return ("generator",)
    if isinstance(x, Plan):
        return ("plan", repr(x.describe()))  # JSON-able: its repr is canonical
    if is_dataclass(x) and not isinstance(x, type):
        out = [type(x).__qualname__]
        for f in fields(x):
            v = getattr(x, f.name)
            if f.name == "plan" and hasattr(v, "describe"):
                out.append((f.name, "plan", repr(v.describe())))
                continue
            out.append((f.name, fingerprint(v)))
        out.append(("__dict__", fingerprint(_extra_state(x))))
        return tuple(out)
    if isinstance(x, np.generic):
        return (type(x).__name__, fingerprint(np.asarray(x)))
    if isinstance(x, dict):
        return ("dict", tuple((fingerprint(k), fingerprint(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(fingerprint(v) for v in x))
    if isinstance(x, float):
        return ("float", "nan" if math.isnan(x) else x + 0.0)
    if isinstance(x, (types.FunctionType, types.MethodType)) or _opaque(x):
        return ("object", type(x).__qualname__, fingerprint(_state(x)))
    return (type(x).__name__, x)


def same(fp1, fp2) -> bool:
    try:
        return bool(fp1 == fp2)
    except Exception:  # noqa: BLE001 - a leaf whose == is not a bool
        return repr(fp1) == repr(fp2)
