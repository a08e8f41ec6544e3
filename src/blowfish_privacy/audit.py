"""Privacy auditors: exact on tiny domains, statistical elsewhere.

Blowfish privacy is a set of linear constraints on output probabilities
(000 Def 4.2; 002, "generic privacy definition"): for every neighbour pair
(D1, D2) of the policy and every output o, Pr[M(D1) = o] <= e^eps Pr[M(D2) = o].
On a tiny domain the neighbour pairs can be enumerated (000 Def 4.1, read
literally, with public constraints) and, for a mechanism whose noisy stage
adds independent discrete Laplace noise to integer values, the output
distribution is known exactly, so the largest log-ratio over all outputs
can be computed and compared with epsilon.

* :func:`exact_linear` audits "release W h(D) + noise" for a query matrix W.
* :func:`exact` audits the library's own mechanisms: it runs the mechanism
  under an auditing generator that models every public method of the
  generator: the noisy stage (exact values and scales of every discrete
  Laplace draw, as implemented, not as documented) and every other draw
  (``integers``, ``bernoulli_exp``, ``random_raw``), whose outcomes it
  enumerates with their probabilities or, when there are too many, refuses
  (:class:`CannotAudit`).  It also checks, by replaying one database's
  noisy stage into its neighbour's run under the same draws, that
  everything the mechanism returns is a function of the noisy stage and
  the draws alone: any other dependence on the data (a raw count, a
  data-dependent field, a data-dependent noise scale) is an infinite loss.
  Randomness from outside the generator is refused.
* :func:`sampled` is a statistical auditor for outputs with no exact
  distribution (post-processed or real-valued): many seeded runs on one
  neighbour pair and a one-sided test of the ratio.

Independent noise per coordinate makes the log-ratio of a joint output the
sum of the coordinates' log-ratios, and for discrete Laplace noise each is
maximal for outputs between (or at) the two centres, so enumerating a
window around them finds the exact maximum over all outputs.  ``tail`` is
the probability mass (under D1) of the outputs outside the enumerated
window; it is reported as ``delta`` and added to the verdict's allowance
only in that sense (for discrete Laplace it does not change the maximum).

Running a mechanism under the auditing generator, refusing randomness from
outside it and enumerating its draws live in :mod:`._audit_replay`;
running a plan or mechanism on a histogram in :mod:`._audit_runner`;
comparing results leaf by leaf in :mod:`._audit_compare`; the neighbour
pairs in :mod:`._audit_neighbours` and the statistical auditor in
:mod:`._audit_sampled` (:class:`CannotAudit`, the noise-free
:class:`RecordingGenerator`, :func:`neighbour_pairs` and :func:`sampled`
are importable from here).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._audit_compare import same
from ._audit_neighbours import histogram_of, neighbour_pairs
from ._audit_replay import (
    MAX_OUTCOMES,
    REPLAY_OFFSETS,
    CannotAudit,
    RecordingGenerator,
    Sandbox,
    describe_request,
    explore,
    outcome_difference,
    replay_offsets,
    request_difference,
    sync_unmodelled,
)
from ._audit_runner import runner
from ._audit_sampled import SampledAuditReport, sampled
from ._validation import as_int, check_epsilon
from ._typing import Real
from .noise import round_scale_up

if TYPE_CHECKING:
    from .mechanisms.plan import Release
    from .policy import Policy

__all__ = [
    "AuditReport",
    "CannotAudit",
    "MAX_OUTCOMES",
    "RecordingGenerator",
    "SampledAuditReport",
    "exact",
    "exact_linear",
    "neighbour_pairs",
    "sampled",
]


# ---------------------------------------------------------------------------
# exact log-ratios of independent discrete Laplace coordinates


def _log_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    p = math.exp(-1.0 / scale)
    return math.log((1 - p) / (1 + p)) - np.abs(z) / scale


def _max_log_ratio(a: np.ndarray, b: np.ndarray, scales: np.ndarray, tail: float):
    """Largest log Pr[o | a] / Pr[o | b] over outputs o, and the witness output.

    Per coordinate the output pmfs are enumerated on a window around the
    two centres wide enough that the mass outside is at most ``tail`` under
    either centre or the log-ratio is already constant there.
    """
    total = 0.0
    witness = {}
    for i in np.flatnonzero(a != b):
        s = float(scales[i])
        lo, hi = int(min(a[i], b[i])), int(max(a[i], b[i]))
        p = math.exp(-1.0 / s)
        # P(|Z| > w) = 2 p^(w+1)/(1+p) <= tail; capped: the ratio is constant beyond [lo, hi]
        w = 1 if tail <= 0 else int(min(max(math.log(tail * (1 + p) / 2) / math.log(p) - 1, 1), 64))
        o = np.arange(lo - w, hi + w + 1)
        lr = _log_pmf(o - a[i], s) - _log_pmf(o - b[i], s)
        k = int(np.argmax(lr))
        total += float(lr[k])
        witness[int(i)] = int(o[k])
    return total, witness


@dataclass(frozen=True)
class AuditReport:
    """Verdict of an exact audit.

    Attributes
    ----------
    ok : bool
        True when every neighbour pair's largest log-ratio is within
        epsilon (plus 1e-9 for rounding).
    max_log_ratio : float
    epsilon : float
        The epsilon the mechanism claims.
    delta : float
        Probability mass of outputs not enumerated (see module docstring).
    witness : dict or None
        ``{"d1": ..., "d2": ..., "output": {coordinate: value}}`` for the
        worst pair: the databases (values per individual) and an output
        attaining the maximum (coordinates not listed are equal under both).
        :func:`exact` adds ``"draws"`` (the outcome indices of the
        generator's draws at the worst case), ``"leak"`` (the output leaf
        that depends on the data other than through the noise) and
        ``"noise"`` (the noise request that differs between D1 and D2 when
        the noise itself depends on the data) where they apply.
    pairs : int
        Neighbour pairs checked.
    """

    ok: bool
    max_log_ratio: float
    epsilon: float
    delta: float
    witness: dict | None
    pairs: int
    notes: tuple = field(default=())

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        lines = [
            f"{verdict}: largest log-ratio {self.max_log_ratio:.6g} vs epsilon {self.epsilon:.6g} "
            f"over {self.pairs} neighbour pairs (delta {self.delta:g})"
        ]
        if self.witness:
            lines.append(f"  worst pair: D1={self.witness['d1']} D2={self.witness['d2']}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _verdict(results, epsilon, tail, pairs, notes=()) -> AuditReport:
    worst = max(results, key=lambda r: r[0]) if results else (0.0, None)
    value, wit = worst
    eps = float(epsilon)
    return AuditReport(
        ok=value <= eps + 1e-9,
        max_log_ratio=value,
        epsilon=eps,
        delta=float(tail),
        witness=wit,
        pairs=pairs,
        notes=tuple(notes),
    )


def _integer_matrix(W: np.ndarray) -> np.ndarray:
    """``W`` as int64; floats are accepted when every entry is a whole number."""
    if W.dtype.kind in "iu":
        return W.astype(np.int64, copy=False)
    if W.dtype.kind != "f":
        raise TypeError(f"W must be an integer matrix (or floats with whole-number entries), got dtype {W.dtype}")
    bad = ~np.isfinite(W) | (np.round(W) != W) | (np.abs(W) >= 2.0**63)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            f"W must hold whole numbers within int64; entry W[{r}, {c}] = {W[r, c]!r} is not one "
            "(a float matrix is accepted only when every entry is integral)"
        )
    return W.astype(np.int64)


def exact_linear(W: npt.ArrayLike, scale: Real, policy: Policy, *, epsilon: Real, n: int,
                 tail: float = 1e-9) -> AuditReport:
    """Audit "release W h(D) + Z", Z independent discrete Laplace of ``scale``.

    Parameters
    ----------
    W : array_like of int, shape (q, |T|)
        Integer linear query on the histogram h(D); a float matrix is
        accepted when every entry is a whole number.
    scale : float, Fraction or array_like of shape (q,)
        Discrete Laplace scale per query (rounded up as the sampler would).
    policy : Policy
        Tiny domain (``|T|^n`` databases are enumerated when it has
        constraints).
    epsilon : float
        The claimed epsilon.
    n : int
        Records per database.
    tail : float
        Output mass allowed outside the enumerated window.
    """
    eps = check_epsilon(epsilon)
    W = np.asarray(W)
    m = policy.domain.size
    if W.ndim != 2 or W.shape[1] != m:
        raise ValueError(f"W must have shape (q, {m}), got {W.shape}")
    W = _integer_matrix(W)
    scales = np.broadcast_to(np.asarray(
        [float(round_scale_up(s)) for s in np.atleast_1d(np.asarray(scale, dtype=object))], dtype=np.float64
    ), (W.shape[0],))
    pairs = neighbour_pairs(policy, n)
    results = []
    cache = {}
    for d1, d2 in pairs:
        h1, h2 = histogram_of(d1, m), histogram_of(d2, m)
        key = (h1.tobytes(), h2.tobytes())
        if key not in cache:
            cache[key] = _max_log_ratio(W @ h1, W @ h2, scales, tail)
        value, out = cache[key]
        results.append((value, {"d1": d1, "d2": d2, "output": out}))
    return _verdict(results, eps, tail, len(pairs))


def exact(mechanism: Callable[..., Release], policy: Policy, *, epsilon: Real, n: int, tail: float = 1e-9,
          max_outcomes: int = MAX_OUTCOMES, **options: Any) -> AuditReport:
    """Exact audit of one of the library's histogram mechanisms.

    The mechanism runs on the histogram of every database of a neighbour
    pair under an auditing generator that models every public method of
    :class:`~blowfish_privacy.noise.Generator`:

    * ``add_discrete_laplace`` (the noisy stage) is recorded: the values
      and the rational scale of each draw, as implemented, give the exact
      distribution of the noisy values;
    * ``integers``, ``bernoulli_exp`` and ``random_raw`` are enumerated:
      the mechanism runs once for every joint outcome of its draws (each
      with its exact probability), up to ``max_outcomes`` per database;
      a draw with more outcomes (``integers(10**6)``, any ``random_raw``
      word) is refused with :class:`CannotAudit`, never passed;
    * ``discrete_laplace`` (noise drawn apart from the values) is refused
      with a ``TypeError`` (audit it with :func:`sampled`), and so is any
      public method the auditor does not model, or the private keystream.

    Randomness from outside the generator is refused with
    :class:`CannotAudit` ("uses randomness outside the generator: cannot
    audit"): a draw from numpy's or Python's global generator, the
    operating system's entropy, numpy generators seeded from it, a secure
    :class:`~blowfish_privacy.noise.Generator` made inside the mechanism,
    or a second run with the same draws whose result differs.

    For a neighbour pair (D1, D2) and each joint outcome u of the draws
    (the same u for both, as the draws do not depend on the data):

    * where neither run draws noise, the result is a function of u, and
      the exact output distributions (summed over u) are compared output
      by output;
    * where they do, the largest log-ratio of the noisy stage is computed
      exactly, and everything the mechanism returns must be a function of
      the noisy stage and u: the run on D2 is repeated with D1's recorded
      stage replayed in place of its noise, then both runs with a common
      stage plus a few fixed integer offsets; the results (dataclass fields
      recursively, arrays, dicts, lists, numbers; plans by ``describe()``,
      generators skipped) must be equal, else the output depends on the
      data other than through the noise, an infinite loss (a note names
      the leaf).

    The verdict is the larger of the two parts' log-ratios (a ratio of
    sums is at most the larger ratio of its parts), so independent
    post-processing randomness (a dither drawn after the noise) passes, and
    a randomised response over enumerated draws is audited exactly.  An
    error raised on one database of a pair and not the other (or with a
    different message) for the same draws counts as a different output.

    Noise whose shape or scale, or draws whose distribution, differ
    between D1 and D2 even when D2 is given D1's noisy outputs depend on
    the data: the pair FAILs with an unbounded loss (a data-dependent
    noise scale, for instance).  When they differ only because the noisy
    outputs differ, or a replayed stage changes the values the noise is
    added to, the mechanism is adaptive and is refused with
    :class:`CannotAudit` (audit it with :func:`sampled`); so is a plan that
    declares itself adaptive (``options["adaptive"]``: MWEM, AHP).

    Parameters
    ----------
    mechanism : callable
        ``mechanisms.laplace`` (option ``query``, default "histogram"),
        ``ordered``, ``ordered_hierarchical``, ``hierarchical``,
        ``identity``, ``privelet``, ``transformed_laplace``,
        ``constrained_histogram``, ``kmeans`` (give ``init`` centroids; one
        round per ``iterations``: later rounds depend on earlier noisy
        output, so audit them one round at a time), or any
        ``f(hist, policy, epsilon, generator, **options)``.  A plan factory
        (a function named ``plan_*``, e.g. ``mechanisms.plan_histogram``)
        is called once as ``mechanism(policy, epsilon, **options)`` (with
        ``policy.domain.size`` instead of the policy when its first
        parameter is named ``size``, as for the DP baselines
        ``plan_identity`` or ``plan_dawa``) and its plan measures every
        histogram.  Wrap a plan that takes something else first (a
        workload, a strategy) in a function ``plan_*(policy, epsilon)``.
    policy : Policy
    epsilon : float
    n : int
    tail : float
        Output mass allowed outside the enumerated window of the noisy stage.
    max_outcomes : int
        Most joint outcomes of the generator's draws enumerated per database.
    **options
        Passed to the mechanism (e.g. ``fanout=2``).

    Returns
    -------
    AuditReport
        ``witness`` names the worst pair; ``witness["draws"]`` the outcome
        indices of the generator's draws where they matter, and
        ``witness["noise"]`` the request that differs for a data-dependent
        noise stage.

    Raises
    ------
    CannotAudit
        The distribution cannot be computed exactly (see above).
    TypeError
        The mechanism draws noise apart from the data (``discrete_laplace``).
    """
    eps = check_epsilon(epsilon)
    feps = float(eps)
    limit = as_int(max_outcomes, "max_outcomes", minimum=1)
    run = runner(mechanism, dict(options), policy, feps)
    pairs = neighbour_pairs(policy, n)
    sync_unmodelled()
    with Sandbox(run, policy, feps, limit) as sandbox:
        return _ExactAudit(sandbox, policy.domain.size, eps, tail, limit).audit(pairs)


@dataclass
class _Database:
    """One histogram's record-mode runs, one per joint outcome of the generator's draws."""

    h: np.ndarray
    key: bytes
    leaves: dict  # script (outcome indices) -> _Outcome


def _hashable(fp):
    try:
        hash(fp)
        return fp
    except TypeError:
        return ("repr", repr(fp))


def _stage_arrays(o) -> tuple[np.ndarray, np.ndarray]:
    """The noisy stage of a run: its values (centres) and each value's scale, concatenated."""
    scales = [np.full(c.size, float(r[2])) for r, c in zip((r for r in o.requests if r[0] == "add_discrete_laplace"),
                                                            o.centres)]
    return np.concatenate(o.centres), np.concatenate(scales)


class _ExactAudit:
    """State of one :func:`exact` audit: the databases' runs, replays and verdicts per pair."""

    def __init__(self, sandbox, m: int, eps, tail: float, limit: int):
        self.sandbox, self.m, self.eps, self.tail, self.limit = sandbox, m, eps, tail, limit
        self.dbs: dict[bytes, _Database] = {}
        self.spent: list = []
        self.own: dict = {}
        self.common: dict = {}
        self.bases: dict = {}
        self.notes: list[str] = []

    def note(self, text: str, key: str | None = None) -> None:
        if len(self.notes) < 3 and not (key and any(key in n for n in self.notes)):
            self.notes.append(text)

    # -- runs ----------------------------------------------------------------
    def database(self, d) -> _Database:
        h = histogram_of(d, self.m)
        key = h.tobytes()
        if key not in self.dbs:
            if not self.dbs:
                self.sandbox.execute(h, watch=False)  # first call: lazy imports and set-up, unwatched
            leaves = explore(self.sandbox, h, self.limit)
            first = leaves[0]
            plan = getattr(first.shown[1], "plan", None) if first.ok else None
            if getattr(plan, "options", {}).get("adaptive"):
                # later draws are added to quantities chosen from earlier noisy
                # outputs: reading every draw as an independent release would
                # give a wrong verdict either way
                raise CannotAudit(f"{plan.mechanism} is adaptive (later noise depends on earlier noisy "
                                  "outputs); this audit reads every draw as an independent release: use "
                                  "audit.sampled, or the mechanism's exact privacy-loss test")
            self.spent.extend(getattr(o.shown[1], "epsilon_exact", None) for o in leaves if o.ok)
            self.dbs[key] = _Database(h, key, {o.script: o for o in leaves})
        return self.dbs[key]

    def replay(self, db: _Database, script, stage, offsets):
        """``db``'s run with the draws ``script`` and a replayed noisy stage; refuses adaptive noise."""
        o = self.sandbox.execute(db.h, script, stage, offsets)
        rec = db.leaves[script]
        for k, (a, b) in enumerate(zip(rec.requests, o.requests)):
            if a != b:
                raise CannotAudit(
                    f"the mechanism is adaptive: its request {k} changes with the noisy outputs it was given "
                    f"({describe_request(a)} vs {describe_request(b)}); this audit reads every draw as "
                    "independent of earlier noisy outputs: use audit.sampled"
                )
        if rec.ok and o.ok and len(rec.requests) != len(o.requests):
            raise CannotAudit(
                "the mechanism is adaptive: the number of noise draws and generator draws changes with the "
                "noisy outputs it was given; use audit.sampled"
            )
        for k, (a, b) in enumerate(zip(rec.centres, o.centres)):
            if not np.array_equal(a, b):
                raise CannotAudit(
                    f"the mechanism is adaptive: the values given to noise draw {k} change with earlier noisy "
                    "outputs; this audit reads every draw as independent of them: use audit.sampled"
                )
        return o

    def common_round(self, db: _Database, script, r: int):
        """``db``'s outcome (and fingerprint) with the common stage of round ``r`` for these draws."""
        key = (db.key, script, r)
        if key not in self.common:
            rec = db.leaves[script]
            base = self.bases.setdefault((script, rec.requests), list(rec.centres))  # the first stage seen
            o = self.replay(db, script, base, replay_offsets(base, r))
            self.common[key] = (o, o.fp)
        return self.common[key]

    def leak(self, s1: _Database, s2: _Database, script):
        """(leaf, round) of the first output difference under one replayed stage, or None."""
        a = s1.leaves[script]
        key = (*sorted((s1.key, s2.key)), script)
        if key not in self.own:
            # round 0: D2 with D1's own recorded stage (one direction per unordered pair)
            o2 = self.replay(s2, script, list(a.centres), replay_offsets(a.centres, 0))
            self.own[key] = None if same(a.fp, o2.fp) else (outcome_difference(a, o2), 0)
        if self.own[key] is not None:
            return self.own[key]
        for r in range(1, REPLAY_OFFSETS + 1):
            (o1, f1), (o2, f2) = self.common_round(s1, script, r), self.common_round(s2, script, r)
            if not same(f1, f2):
                return outcome_difference(o1, o2), r
        return None

    # -- one pair --------------------------------------------------------------
    def data_dependent(self, src: _Database, dst: _Database, rec, wit):
        """A request differs between neighbours: adaptive (refused) or dependent on the data (FAIL)."""
        o = self.sandbox.execute(dst.h, rec.script, list(rec.centres), replay_offsets(rec.centres, 0))
        if o.ok and o.requests == rec.requests:
            raise CannotAudit(
                f"the mechanism is adaptive: its noise or generator draws differ between D1={wit['d1']} and "
                f"D2={wit['d2']} only through earlier noisy outputs; this audit reads every draw as "
                "independent of them: use audit.sampled"
            )
        what = request_difference(rec.requests, o.requests) or outcome_difference(rec, o)
        self.note(
            f"the noise requested differs between D1={wit['d1']} and D2={wit['d2']} even when both see the same "
            f"noisy outputs and draws ({what}): its shape, scale or distribution depends on the data, an "
            "unbounded privacy loss", key="noise requested differs")
        return math.inf, {**wit, "noise": what, "draws": list(rec.script)}

    def pair(self, d1, d2):
        s1, s2 = self.database(d1), self.database(d2)
        wit = {"d1": d1, "d2": d2, "output": {}}
        scripts = list(s1.leaves) + [u for u in s2.leaves if u not in s1.leaves]
        det1: dict = {}
        det2: dict = {}
        det_leaf: dict = {}
        best, best_wit = 0.0, wit
        for u in scripts:
            a, b = s1.leaves.get(u), s2.leaves.get(u)
            if a is None or b is None or (a.ok and b.ok and a.requests != b.requests):
                src, dst, rec = (s1, s2, a) if a is not None else (s2, s1, b)
                return self.data_dependent(src, dst, rec, wit)
            if not a.noisy and not b.noisy and a.requests == b.requests:
                fa, fb = _hashable(a.fp), _hashable(b.fp)
                det1[fa] = det1.get(fa, 0.0) + a.prob
                det2[fb] = det2.get(fb, 0.0) + b.prob
                det_leaf.setdefault(fa, (u, a, b))
                det_leaf.setdefault(fb, (u, a, b))
                continue
            if not (a.ok and b.ok):
                if a.shown != b.shown:  # an error on one neighbour only, or a different message
                    value, w = math.inf, {**wit, "draws": list(u)}
                    self.note(f"the mechanism raised an error on D1={d1} or D2={d2} but not the same on both")
                else:
                    continue
            else:
                va, sa = _stage_arrays(a)
                vb, _ = _stage_arrays(b)
                value, out = _max_log_ratio(va, vb, sa, self.tail)
                w = {**wit, "output": out, "draws": list(u)}
                found = self.leak(s1, s2, u)
                if found is not None:
                    path, r = found
                    value = math.inf
                    w["leak"] = path
                    how = "D1's recorded stage" if r == 0 else f"a common stage with offsets, round {r}"
                    self.note(
                        f"output leaf {path} differs between D1={d1} and D2={d2} given the same noisy stage ({how}"
                        f"{', generator draws ' + str(list(u)) if u else ''}): it depends on the data other than "
                        "through the noise (infinite privacy loss)", key=path)
            if best_wit is wit or value > best:
                best, best_wit = value, w
        if det1 or det2:
            value, fp = 0.0, None
            for key in set(det1) | set(det2):
                p1, p2 = det1.get(key, 0.0), det2.get(key, 0.0)
                v = math.inf if (p1 == 0.0) != (p2 == 0.0) else (abs(math.log(p1 / p2)) if p1 > 0 else 0.0)
                if v > value:
                    value, fp = v, key
            if fp is not None and value >= best:
                u, a, b = det_leaf[fp]
                w = {**wit, "draws": list(u)}
                if value > float(self.eps) + 1e-9:
                    if math.isinf(value):
                        path = outcome_difference(a, b)
                        w["leak"] = path
                        self.note(
                            f"output leaf {path} differs between D1={d1} and D2={d2} under the same generator draws "
                            f"{list(u)}, and no other draws give the other database that output (infinite "
                            "privacy loss)", key=path)
                    else:
                        self.note(f"the exact output distribution over the generator's draws has log-ratio "
                                  f"{value:.6g} between D1={d1} and D2={d2}", key="exact output distribution")
                best, best_wit = value, w
        return best, best_wit

    def audit(self, pairs) -> AuditReport:
        results = [self.pair(d1, d2) for d1, d2 in pairs]
        raised = [o.exc for db in self.dbs.values() for o in db.leaves.values()]
        if raised and all(e is not None for e in raised):
            raise raised[0]  # raised on every database: a usage error, not a leak
        report = _verdict(results, self.eps, self.tail, len(pairs), self.notes)
        if any(s is not None and s > self.eps for s in self.spent):
            report = replace(report, ok=False,
                             notes=report.notes + ("the mechanism reports spending more than the epsilon audited",))
        return report
