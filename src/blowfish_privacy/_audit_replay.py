"""Running a mechanism for the exact auditor: recording, replaying, comparing.

The machinery behind :func:`.audit.exact`: :class:`RecordingGenerator`
(adds no noise, records every noisy draw with its exact values and scale;
re-exported by :mod:`.audit`), the replaying generator that feeds one
database's noisy stage into its neighbour's run, the adapter that runs any
of the library's mechanisms or plans on a histogram, and the leaf-by-leaf
comparison of whole results (closures and defaults of returned functions,
attributes of objects with their own ``__eq__``, fields set outside a
dataclass's fields), so that anything a result reveals beyond the noisy
stage is found.
"""

from __future__ import annotations

import math
import types
from dataclasses import fields, is_dataclass
from fractions import Fraction

import numpy as np

from . import mechanisms as mech
from .mechanisms.plan import Plan
from .noise import Generator, round_scale_up

__all__ = ["RecordingGenerator"]


class RecordingGenerator(Generator):
    """A generator that adds no noise and records every noisy draw.

    ``add_discrete_laplace(values, scale)`` returns ``values`` unchanged and
    appends (the exact values, the rational scale the sampler would use) to
    ``records``.  For audits only: its releases are not private.
    """

    #: Mechanisms with a fused path that draws noise apart from the values
    #: take their value-by-value path (bit-identical) for this generator.
    needs_values = True

    def __init__(self):
        super().__init__(seed=0, threads=1)
        self.records: list[tuple[np.ndarray, Fraction]] = []

    def add_discrete_laplace(self, values, scale):
        arr = np.ascontiguousarray(np.asarray(values, dtype=np.int64))
        self.records.append((arr.reshape(-1).copy(), round_scale_up(scale)))
        return arr.copy()

    def discrete_laplace(self, scale, size=None):
        raise TypeError(
            "this mechanism draws noise apart from the data; the exact auditor needs "
            "add_discrete_laplace (use audit.sampled instead)"
        )


class _ReplayMismatch(Exception):
    """The run asked for a noisy draw the replayed stage does not have."""


class _ReplayGenerator(Generator):
    """Returns a recorded noisy stage (plus fixed offsets) instead of noise.

    The k-th ``add_discrete_laplace`` call returns the k-th recorded values
    plus ``offsets[k]`` when the sizes agree, and records the (shape, scale)
    it was asked for; any other call raises :class:`_ReplayMismatch`.
    """

    needs_values = True

    def __init__(self, stage, offsets):
        super().__init__(seed=0, threads=1)
        self._stage = stage
        self._offsets = offsets
        self.calls: list[tuple[tuple, Fraction]] = []

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, dtype=np.int64)
        k = len(self.calls)
        self.calls.append((arr.shape, round_scale_up(scale)))
        if k >= len(self._stage) or self._stage[k][0].size != arr.size:
            raise _ReplayMismatch(f"draw {k} of shape {arr.shape} not in the replayed stage")
        return (self._stage[k][0] + self._offsets[k]).reshape(arr.shape)

    def discrete_laplace(self, scale, size=None):
        raise _ReplayMismatch("discrete_laplace is not replayed")


#: DP baselines whose plan takes the domain size instead of a policy.
_SIZE_PLANS = frozenset({"plan_dawa", "plan_privelet", "plan_hierarchical", "plan_identity"})


def _runner(mechanism, options, policy, eps):
    name = getattr(mechanism, "__name__", "")
    if name == "plan_laplace":
        raise TypeError("plan_laplace takes a shape and a sensitivity, not a policy; audit mechanisms.laplace "
                        "(option query) or mechanisms.plan_histogram instead")
    if name.startswith("plan_"):
        # a plan factory: plan once from public inputs, measure every histogram
        first = policy.domain.size if name in _SIZE_PLANS else policy
        plan = mechanism(first, eps, **options)
        if not isinstance(plan, Plan):
            raise TypeError(f"mechanism {name} must return a Plan, got {type(plan).__name__}")
        shape = plan.aggregate_shape

        def measure(h, pol, e, g):
            if name == "plan_kmeans":  # k-means measures points: one record per count, in value order
                idx = np.repeat(np.arange(h.size), h)
                return plan.measure(np.column_stack(pol.domain.values(idx)).astype(np.int64)
                                    .reshape(-1, pol.domain.ndim), g)
            if shape is not None and int(np.prod(shape, dtype=np.int64)) == h.size:
                h = h.reshape(shape)
            return plan.measure(h, g)

        return measure
    if mechanism is mech.laplace:
        query = options.pop("query", "histogram")
        if isinstance(query, str) and query not in ("histogram", "cumulative"):
            raise ValueError(f"query must be 'histogram', 'cumulative' or an integer matrix W, got {query!r}")

        def answer(h):
            if isinstance(query, str):
                return h if query == "histogram" else np.cumsum(h)
            return np.asarray(query) @ h

        return lambda h, pol, eps, g: mech.laplace(
            answer(h), sensitivity=pol.sensitivity(query), epsilon=eps, generator=g
        )
    if mechanism is mech.kmeans:
        # one record per count: the points of the database, in value order
        def run_kmeans(h, pol, eps, g):
            idx = np.repeat(np.arange(h.size), h)
            pts = np.column_stack(pol.domain.values(idx)).astype(np.int64)
            return mech.kmeans(pts, pol, eps, g, **options)

        return run_kmeans
    if mechanism in (mech.hierarchical, mech.identity, mech.dawa, mech.privelet):
        return lambda h, pol, eps, g: mechanism(h, eps, g, **options)
    return lambda h, pol, eps, g: mechanism(h, pol, eps, g, **options)


# ---------------------------------------------------------------------------
# comparing whole results, leaf by leaf


def _float_equal(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def _array_difference(x: np.ndarray, y: np.ndarray, path: str) -> str | None:
    if x.shape != y.shape or x.dtype != y.dtype:
        return f"{path} (shape or dtype)"
    if x.dtype.kind == "O":
        for idx in np.ndindex(x.shape):
            d = _difference(x[idx], y[idx], f"{path}[{', '.join(map(str, idx))}]")
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


def _difference(x, y, path: str = "result") -> str | None:
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
        return _difference(x.describe(), y.describe(), f"{path}.describe()")
    if is_dataclass(x) and not isinstance(x, type):
        for f in fields(x):
            a, b = getattr(x, f.name), getattr(y, f.name)
            if f.name == "plan" and hasattr(a, "describe") and hasattr(b, "describe"):
                a, b = a.describe(), b.describe()
            d = _difference(a, b, f"{path}.{f.name}")
            if d:
                return d
        # attributes set outside the declared fields are outputs too
        return _difference(_extra_state(x), _extra_state(y), f"{path}.__dict__")
    if isinstance(x, np.ndarray):
        return _array_difference(x, y, path)
    if isinstance(x, np.generic):
        return _array_difference(np.asarray(x), np.asarray(y), path)
    if isinstance(x, dict):
        if set(x) != set(y):
            return f"{path} (keys)"
        for k in x:
            d = _difference(x[k], y[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(x, (list, tuple)):
        if len(x) != len(y):
            return f"{path} (length)"
        for i, (a, b) in enumerate(zip(x, y)):
            d = _difference(a, b, f"{path}[{i}]")
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
        return _difference(_state(x), _state(y), path)
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


def _canon(x):
    """A hashable fingerprint of ``x``: equal exactly when :func:`_difference` finds no leaf."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "O":
            return ("nd", x.shape, tuple(_canon(v) for v in x.reshape(-1)))
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
            out.append((f.name, _canon(v)))
        out.append(("__dict__", _canon(_extra_state(x))))
        return tuple(out)
    if isinstance(x, np.generic):
        return (type(x).__name__, _canon(np.asarray(x)))
    if isinstance(x, dict):
        return ("dict", tuple((_canon(k), _canon(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(_canon(v) for v in x))
    if isinstance(x, float):
        return ("float", "nan" if math.isnan(x) else x + 0.0)
    if isinstance(x, (types.FunctionType, types.MethodType)) or _opaque(x):
        return ("object", type(x).__qualname__, _canon(_state(x)))
    return (type(x).__name__, x)


def _same(fp1, fp2) -> bool:
    try:
        return bool(fp1 == fp2)
    except Exception:  # noqa: BLE001 - a leaf whose == is not a bool
        return repr(fp1) == repr(fp2)


#: Replay rounds after the pair's own stage: a common stage plus fixed offsets.
_REPLAY_OFFSETS = 3
_OFFSET_RANGE = 3


def _offsets(stage, round_: int) -> list[np.ndarray]:
    """Fixed integer offsets per draw of ``stage`` (zeros in round 0)."""
    rng = np.random.default_rng(round_)
    return [
        np.zeros(v.size, np.int64) if round_ == 0 else rng.integers(-_OFFSET_RANGE, _OFFSET_RANGE + 1, v.size)
        for v, _ in stage
    ]


def _outcome(run, h, policy, eps, gen):
    """What a run shows (its result or its error, and the draws it asked for), and the error."""
    try:
        out = ("result", run(h, policy, eps, gen))
        exc = None
    except _ReplayMismatch as e:
        out, exc = ("replay mismatch", str(e)), e
    except Exception as e:  # noqa: BLE001 - an error is an output too
        out, exc = ("error", type(e).__name__, str(e)), e
    if isinstance(gen, RecordingGenerator):
        calls = [(v.size, s) for v, s in gen.records]
    else:
        calls = [(int(np.prod(shape, dtype=np.int64)), s) for shape, s in gen.calls]
    return out, calls, exc


def _outcome_difference(o1, o2) -> str | None:
    """Where two outcomes differ (None when equal)."""
    (out1, calls1, _), (out2, calls2, _) = o1, o2
    if out1[0] != out2[0]:
        return f"outcome ({out1[0]} vs {out2[0]})"
    if out1[0] == "result":
        d = _difference(out1[1], out2[1], "result")
    else:
        d = None if out1 == out2 else f"{out1[0]} message"
    return d or _difference(calls1, calls2, "noise draws requested") or "result"
