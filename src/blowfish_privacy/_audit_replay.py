"""Running a mechanism for the exact auditor: its generator, its sandbox, its draw tree.

The machinery behind :func:`.audit.exact`:

* the generator of an audited run, which models every public method of
  :class:`~blowfish_privacy.noise.Generator` (found by enumerating them, so
  a method added later is refused until it is modelled): the noisy stage
  ``add_discrete_laplace`` is recorded (values and exact scale) or replayed
  (a recorded stage plus fixed offsets); ``integers``, ``bernoulli_exp``
  and ``random_raw`` return scripted outcomes so that every outcome of
  every draw can be enumerated with its probability; ``discrete_laplace``,
  the private keystream and any unknown method refuse the run;
* the sandbox that runs a mechanism under that generator and refuses
  randomness from outside it (numpy's or Python's global generators, the
  operating system's entropy, a secure generator made inside the
  mechanism, or two runs with the same draws that differ; the sources it
  watches are listed in :mod:`._audit_entropy`);
* the enumeration of a database's draw tree (one run per joint outcome),
  the replay offsets, and where two outcomes or requests differ.

Running a mechanism or plan on a histogram is :mod:`._audit_runner`;
comparing whole results leaf by leaf (closures and defaults of returned
functions, attributes of objects with their own ``__eq__``, fields set
outside a dataclass's fields) is :mod:`._audit_compare`.

:class:`RecordingGenerator` (re-exported by :mod:`.audit`) is a noise-free
generator for tests of estimators; the auditor does not use it.
"""

from __future__ import annotations

import functools
import math
import random
import threading
import weakref
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn

import numpy as np
import numpy.typing as npt

from ._audit_compare import difference, fingerprint, same
from ._audit_entropy import entropy_sources, file_openers, names_random_device
from ._validation import as_fraction, as_int, as_int64_array, as_size
from .errors import BlowfishError
from ._typing import Real
from .noise import Generator, round_scale_up

__all__ = ["CannotAudit", "RecordingGenerator"]


class RecordingGenerator(Generator):
    """A generator that adds no noise and records every noisy draw.

    ``add_discrete_laplace(values, scale)`` returns ``values`` unchanged and
    appends (the exact values, the rational scale the sampler would use) to
    ``records``; its other methods are those of a generator seeded with 0.
    A noise-free generator for tests of estimators; :func:`.audit.exact`
    runs mechanisms under its own generator, which models every draw.  Its
    releases are not private.
    """

    #: Mechanisms with a fused path that draws noise apart from the values
    #: take their value-by-value path (bit-identical) for this generator.
    needs_values = True

    def __init__(self) -> None:
        super().__init__(seed=0, threads=1)
        self.records: list[tuple[np.ndarray, Fraction]] = []

    def add_discrete_laplace(self, values: npt.ArrayLike, scale: Real) -> npt.NDArray[np.int64]:
        arr = np.ascontiguousarray(np.asarray(values, dtype=np.int64))
        self.records.append((arr.reshape(-1).copy(), round_scale_up(scale)))
        return arr.copy()

    def discrete_laplace(self, scale: object, size: object = None) -> NoReturn:
        raise TypeError(
            "this mechanism draws noise apart from the data; the exact auditor needs "
            "add_discrete_laplace (use audit.sampled instead)"
        )


# ---------------------------------------------------------------------------
# the generator of an audited run: every public method modelled or refused


class CannotAudit(BlowfishError, ValueError):
    """The exact auditor cannot compute the mechanism's output distribution.

    Raised instead of a verdict when the mechanism draws randomness the
    auditor does not model (a generator method it does not know, randomness
    from outside the generator, draws with too many outcomes to enumerate)
    or when its later noise depends on earlier noisy outputs (adaptive).
    """


class _Halt(BaseException):
    """Ends an audited run (a replay mismatch or a refusal).

    Not an :class:`Exception`, so a mechanism's ``except Exception`` does
    not swallow it; the generator also keeps the reason, so a run that
    swallows it anyway is still treated as halted.
    """


#: Public methods of :class:`Generator` the audit generator models: the
#: noisy stage, and draws whose outcomes are enumerated (or refused).
_MODELLED = frozenset({"add_discrete_laplace", "discrete_laplace", "integers", "random_raw", "bernoulli_exp"})
#: Public attributes of :class:`Generator` that draw nothing.
_NO_DRAWS = frozenset({"effective_scale", "is_secure", "seed", "threads"})

#: At most this many outcomes of a run's generator draws are enumerated per database.
MAX_OUTCOMES = 4096


def _generator_api() -> frozenset:
    """Every public attribute :class:`Generator` defines (its own and inherited)."""
    names = set()
    for cls in Generator.__mro__:
        if cls is not object:
            names.update(n for n in vars(cls) if not n.startswith("_"))
    return frozenset(names)


def _unmodelled_message(name: str) -> str:
    return (f"the mechanism uses Generator.{name}, which the exact auditor does not model "
            "(it cannot enumerate that draw's outcomes): cannot audit")


class _Unmodelled:
    """Stands for a public :class:`Generator` attribute the auditor does not model: using it refuses."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, gen, owner=None):
        if gen is None:
            return self
        gen._refuse(CannotAudit(_unmodelled_message(self.name)))


class _NoStream:
    """Stands for the keystream: an audited run may not draw around the public methods."""

    def __init__(self, gen):
        self._gen = weakref.proxy(gen)  # no reference cycle: one generator per run

    def __getattr__(self, name):
        self._gen._refuse(CannotAudit(
            f"the mechanism reads the generator's private keystream ({name}) instead of its public "
            "methods: cannot audit"
        ))


def _count_outcomes(request) -> int | None:
    """Outcomes of a draw request, or None when there are more than 2**64."""
    kind, shape = request[0], request[-1]
    n = math.prod(shape)
    if n == 0:
        return 1
    if kind == "integers":
        high = request[1]
        if high == 1:
            return 1
        return high**n if n * (high - 1).bit_length() <= 64 else None
    if kind == "bernoulli_exp":
        if request[1] == 0:
            return 1  # exp(-0) = 1: always 1
        return 2**n if n <= 64 else None
    return None if n * 32 > 64 else 2 ** (32 * n)  # random_raw


def _draw_outcome(request, index: int) -> tuple[np.ndarray, float]:
    """The ``index``-th outcome of a draw (flat array) and its probability."""
    kind, shape = request[0], request[-1]
    n = math.prod(shape)
    if kind == "integers":
        high = request[1]
        digits = np.zeros(n, dtype=np.int64)
        for i in range(n):
            index, digits[i] = divmod(index, high)
        return digits, 1.0 / float(high) ** n
    if kind == "bernoulli_exp":
        gamma = request[1]
        if gamma == 0:
            return np.ones(n, dtype=np.uint8), 1.0
        bits = np.array([(index >> i) & 1 for i in range(n)], dtype=np.uint8)
        ones = int(bits.sum())
        p, q = math.exp(-float(gamma)), -math.expm1(-float(gamma))
        return bits, p**ones * q ** (n - ones)
    words = np.array([(index >> (32 * i)) & 0xFFFFFFFF for i in range(n)], dtype=np.uint32)
    return words, 2.0 ** (-32 * n)


def describe_request(request) -> str:
    kind, shape = request[0], request[-1]
    size = "" if shape == () else f", size={shape}"
    if kind == "add_discrete_laplace":
        return f"add_discrete_laplace(values of shape {request[1]}, scale={request[2]})"
    if kind == "integers":
        return f"integers({request[1]}{size})"
    if kind == "bernoulli_exp":
        return f"bernoulli_exp({request[1]}{size})"
    return f"random_raw({'' if shape == () else shape})"


class _AuditGenerator(Generator):
    """The generator of an audited run: models every draw, refuses what it cannot model.

    ``add_discrete_laplace`` is the noisy stage: in record mode (no
    ``stage``) it returns the values unchanged, in replay mode the k-th call
    returns ``stage[k] + offsets[k]``; either way it records the values (the
    centres) and the rational scale.  ``integers``, ``bernoulli_exp`` and
    ``random_raw`` return the outcome of index ``script[j]`` for the j-th
    such draw (index 0 beyond the script) and record the request, so that
    the auditor can enumerate every outcome with its probability; a draw
    with more than ``limit`` outcomes is refused.  ``discrete_laplace``
    (noise drawn apart from the values), the private keystream and every
    public method of :class:`Generator` not modelled here refuse the run.
    """

    needs_values = True

    def __init__(self, script=(), stage=None, offsets=None, *, limit: int = MAX_OUTCOMES):
        super().__init__(seed=0, threads=1)
        self._script = tuple(script)
        self._stage = stage
        self._offsets = offsets
        self._limit = limit
        self._requests: list[tuple] = []
        self._centres: list[np.ndarray] = []
        self._draws: list[tuple[int, int, float]] = []  # (outcome index, outcomes, probability)
        self._halted: tuple | None = None
        self._stream = _NoStream(self)

    # -- ending a run ------------------------------------------------------
    def _halt(self, kind: str, detail):
        if self._halted is None:
            self._halted = (kind, detail)
        raise _Halt(kind)

    def _refuse(self, exc: BaseException):
        self._halt("refused", exc)

    def _check(self):
        if self._halted is not None:
            raise _Halt(self._halted[0])

    # -- the noisy stage ---------------------------------------------------
    def add_discrete_laplace(self, values, scale):
        self._check()
        arr = as_int64_array(values, "values")
        frac = round_scale_up(scale)
        flat = arr.reshape(-1).copy()
        self._requests.append(("add_discrete_laplace", arr.shape, frac))
        self._centres.append(flat)
        if self._stage is None:
            return flat.reshape(arr.shape)
        k = len(self._centres) - 1
        if k >= len(self._stage) or self._stage[k].size != flat.size:
            self._halt("mismatch", f"noise draw {k} of shape {arr.shape} is not in the replayed noisy stage")
        return (self._stage[k] + self._offsets[k]).reshape(arr.shape)

    def discrete_laplace(self, scale, size=None):
        self._refuse(TypeError(
            "this mechanism draws noise apart from the data (Generator.discrete_laplace); the exact "
            "auditor needs add_discrete_laplace (use audit.sampled instead)"
        ))

    def _noise(self, frac, n):
        self._refuse(CannotAudit(
            "the mechanism calls the generator's private sampler instead of its public methods: cannot audit"))

    # -- draws with enumerable outcomes ------------------------------------
    def _draw(self, request, size, dtype):
        self._check()
        count = _count_outcomes(request)
        if count is None or count > self._limit:
            many = "more than 2**64" if count is None else str(count)
            self._refuse(CannotAudit(
                f"the mechanism draws {describe_request(request)} from the generator: {many} outcomes, "
                f"more than the {self._limit} the exact auditor enumerates per run, and it cannot bound "
                "their effect otherwise: cannot audit (use audit.sampled, or draw from fewer outcomes)"
            ))
        j = len(self._draws)
        index = self._script[j] if j < len(self._script) else 0
        if index >= count:
            self._halt("mismatch", f"generator draw {j} ({describe_request(request)}) has no outcome {index}")
        value, prob = _draw_outcome(request, index)
        self._requests.append(request)
        self._draws.append((index, count, prob))
        value = value.astype(dtype, copy=False)
        return int(value[0]) if size is None else value.reshape(request[-1])

    def integers(self, high: int, size=None):
        high = as_int(high, "high", minimum=1)
        if high > 2**63:
            raise ValueError(f"high must be at most 2**63, got {high}")
        return self._draw(("integers", high, as_size(size)), size, np.int64)

    def random_raw(self, size=None):
        return self._draw(("random_raw", as_size(size)), size, np.uint32)

    def bernoulli_exp(self, gamma, size=None):
        g = as_fraction(gamma, "gamma", allow_zero=True)
        if g.numerator >= 2**64 or g.denominator >= 2**64:
            raise ValueError(f"gamma must be a ratio of integers below 2**64, got {g}")
        return self._draw(("bernoulli_exp", g, as_size(size)), size, np.uint8)


def sync_unmodelled() -> None:
    """Refuse every public :class:`Generator` attribute that is neither modelled nor draw-free.

    Run at import and before each audit, so that a method added to the
    generator later is refused until the auditor models it.
    """
    api = _generator_api()
    for name, attr in list(vars(_AuditGenerator).items()):
        if isinstance(attr, _Unmodelled) and name not in api:
            delattr(_AuditGenerator, name)
    for name in api - _MODELLED - _NO_DRAWS:
        if not isinstance(vars(_AuditGenerator).get(name), _Unmodelled):
            setattr(_AuditGenerator, name, _Unmodelled(name))


sync_unmodelled()


# ---------------------------------------------------------------------------
# running a mechanism: one audited run, randomness from outside refused


@dataclass(frozen=True)
class _Outcome:
    """What one audited run showed and what it asked the generator for.

    ``shown`` is ``("result", value)``, ``("error", type name, message)``
    or ``("replay mismatch", message)``; ``requests`` the noise and draws
    requested in order (kind, parameters, shape); ``centres`` the values
    each ``add_discrete_laplace`` call was given; ``script`` the outcome
    index of each generator draw and ``prob`` the probability of them all.
    """

    shown: tuple
    requests: tuple
    centres: tuple
    script: tuple
    prob: float
    exc: BaseException | None

    @property
    def ok(self) -> bool:
        return self.shown[0] == "result"

    @property
    def noisy(self) -> bool:
        return bool(self.centres)

    @functools.cached_property
    def fp(self):
        """Fingerprint of what the run showed and requested (equal exactly when no leaf differs)."""
        return fingerprint((self.shown, self.requests))


class Sandbox:
    """Runs a mechanism under :class:`_AuditGenerator` and refuses randomness from elsewhere.

    While active (a context manager) it watches the entropy sources of
    :func:`._audit_entropy.entropy_sources` and a secure :class:`Generator` being made on
    the auditing thread; before each run it seeds numpy's and Python's
    global random generators and after it checks that their next outputs
    are the seed's first ones.  Any use of these is refused: the auditor
    would read a random output as a deterministic one.  The global states
    are restored on exit.
    """

    def __init__(self, run, policy, eps, limit: int):
        self._run, self._policy, self._eps, self._limit = run, policy, eps, limit
        self._used: list[str] = []
        self._saved: list = []
        self._owner = threading.get_ident()
        self.runs = 0

    #: Seeds of the global generators for ordinary runs and for the repeated run.
    _SEEDS = (0x5EED, 0xD1CE)

    def __enter__(self):
        self._np_state = np.random.get_state()
        self._py_state = random.getstate()
        self._sentinels = {}
        for seed in self._SEEDS:
            np.random.seed(seed)
            random.seed(seed)
            self._sentinels[seed] = (np.random.random(), random.random())
        for module, name in entropy_sources():
            real = getattr(module, name, None)
            if real is not None:
                self._saved.append((module, name, real))
                setattr(module, name, self._watch(f"{module.__name__}.{name}", real))
        for module, name in file_openers():
            real = getattr(module, name)
            self._saved.append((module, name, real))
            setattr(module, name, self._watch_device(f"{module.__name__}.{name} of a random device", real))
        real_init = Generator.__init__
        self._saved.append((Generator, "__init__", real_init))
        sandbox = self

        def init(gen, seed=None, *, threads=None):
            if seed is None and threading.get_ident() == sandbox._owner:
                sandbox._used.append("a secure blowfish_privacy.Generator made inside the mechanism")
            real_init(gen, seed, threads=threads)

        Generator.__init__ = init
        return self

    def __exit__(self, *exc):
        for module, name, real in reversed(self._saved):
            setattr(module, name, real)
        self._saved.clear()
        np.random.set_state(self._np_state)
        random.setstate(self._py_state)
        return False

    def _watch(self, label, real):
        def watched(*args, **kwargs):
            if threading.get_ident() == self._owner:
                self._used.append(label)
            return real(*args, **kwargs)

        return watched

    def _watch_device(self, label, real):
        def watched(file, *args, **kwargs):
            if threading.get_ident() == self._owner and names_random_device(file):
                self._used.append(label)
            return real(file, *args, **kwargs)

        return watched

    def execute(self, h, script=(), stage=None, offsets=None, *, repeat: bool = False,
                watch: bool = True) -> _Outcome:
        """One run on histogram ``h`` with the given draws (and replayed noisy stage).

        The global generators are seeded before the run (differently for a
        repeated run, so that a hidden draw differs) and must give the
        seed's first output after it: any draw from them is refused.
        """
        gen = _AuditGenerator(script, stage, offsets, limit=self._limit)
        seed = self._SEEDS[1 if repeat else 0]
        np.random.seed(seed)
        random.seed(seed)
        self._used.clear()
        exc = None
        try:
            shown = ("result", self._run(h, self._policy, self._eps, gen))
        except _Halt:
            shown = None
        except Exception as e:  # noqa: BLE001 - an error is an output too
            shown, exc = ("error", type(e).__name__, str(e)), e
        self.runs += 1
        if gen._halted is not None and gen._halted[0] == "refused":
            raise gen._halted[1]
        if watch:
            self._check_outside(seed)
        if gen._halted is not None:
            shown, exc = ("replay mismatch", gen._halted[1]), None
        prob = math.prod(d[2] for d in gen._draws)
        return _Outcome(shown, tuple(gen._requests), tuple(gen._centres),
                        tuple(d[0] for d in gen._draws), prob, exc)

    def _check_outside(self, seed: int) -> None:
        np_first, py_first = self._sentinels[seed]
        where = None
        if self._used:
            where = self._used[0]
        elif np.random.random() != np_first:
            where = "numpy's global random generator (numpy.random.*)"
        elif random.random() != py_first:
            where = "Python's random module"
        if where is not None:
            raise CannotAudit(
                f"the mechanism uses randomness outside the generator ({where}): cannot audit; "
                "draw every random value from the blowfish_privacy.Generator it is given"
            )

    def check_repeatable(self, h, outcome: _Outcome) -> None:
        """Run ``outcome``'s database again with the same draws; refuse if anything differs."""
        again = self.execute(h, outcome.script, repeat=True)
        first = fingerprint((outcome.shown, outcome.requests, outcome.centres, outcome.script))
        second = fingerprint((again.shown, again.requests, again.centres, again.script))
        if not same(first, second):
            where = outcome_difference(outcome, again)
            raise CannotAudit(
                f"the mechanism uses randomness outside the generator: two runs on the same database with "
                f"the same generator draws differ ({where}): cannot audit"
            )


def explore(sandbox: Sandbox, h, limit: int) -> list[_Outcome]:
    """Every outcome of the generator's draws on histogram ``h``: one record-mode run per leaf.

    A run takes outcome 0 of every draw past its script; for each such
    draw the other outcomes are queued as new scripts, so every leaf of the
    draw tree runs exactly once.  Refuses when the leaves exceed ``limit``.
    """
    leaves: list[_Outcome] = []
    queue: list[tuple] = [()]
    while queue:
        script = queue.pop()
        o = sandbox.execute(h, script)
        if o.shown[0] == "replay mismatch":  # the same draws gave other requests: not a function of them
            raise CannotAudit(
                "the mechanism uses randomness outside the generator: the same generator draws led to "
                f"different requests on one database ({o.shown[1]}): cannot audit"
            )
        if not leaves and not queue:
            sandbox.check_repeatable(h, o)
        positions = _draw_positions(o.requests)
        for j in range(len(script), len(o.script)):
            count = _count_outcomes(o.requests[positions[j]])
            if count > 1:
                if len(leaves) + len(queue) + count > limit:
                    raise CannotAudit(
                        f"the mechanism's generator draws have more than {limit} joint outcomes on one "
                        "database, more than the exact auditor enumerates: cannot audit (use audit.sampled, "
                        "or draw from fewer outcomes)"
                    )
                queue.extend(o.script[:j] + (v,) for v in range(count - 1, 0, -1))
        leaves.append(o)
    return leaves


def _draw_positions(requests) -> list[int]:
    """Positions in ``requests`` of the generator draws (not the noisy stage)."""
    return [i for i, r in enumerate(requests) if r[0] != "add_discrete_laplace"]


#: Replay rounds after the pair's own stage: a common stage plus fixed offsets.
REPLAY_OFFSETS = 3
_OFFSET_RANGE = 3


def replay_offsets(stage, round_: int) -> list[np.ndarray]:
    """Fixed integer offsets per noise draw of ``stage`` (a list of flat arrays; zeros in round 0)."""
    rng = np.random.default_rng(round_)
    return [
        np.zeros(v.size, np.int64) if round_ == 0 else rng.integers(-_OFFSET_RANGE, _OFFSET_RANGE + 1, v.size)
        for v in stage
    ]


def outcome_difference(o1: _Outcome, o2: _Outcome) -> str:
    """Where two outcomes differ (the first leaf found)."""
    out1, out2 = o1.shown, o2.shown
    if out1[0] != out2[0]:
        return f"outcome ({out1[0]} vs {out2[0]})"
    if out1[0] == "result":
        d = difference(out1[1], out2[1], "result")
    else:
        d = None if out1 == out2 else f"{out1[0]} message"
    return (d or request_difference(o1.requests, o2.requests)
            or difference(list(o1.centres), list(o2.centres), "values given to the noise") or "result")


def request_difference(r1, r2) -> str | None:
    """The first request (noise or generator draw) that differs, described; None when equal."""
    for k, (a, b) in enumerate(zip(r1, r2)):
        if a != b:
            return f"request {k}: {describe_request(a)} vs {describe_request(b)}"
    if len(r1) != len(r2):
        k = min(len(r1), len(r2))
        extra = r1[k] if len(r1) > k else r2[k]
        return f"request {k}: {describe_request(extra)} made on one run only"
    return None
