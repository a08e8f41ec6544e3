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
  with a recording generator that captures the exact values and scales of
  every noisy draw (the noisy stage as implemented, not as documented);
  post-processing cannot increase the log-ratio.  It also checks, by
  replaying one database's noisy stage into its neighbour's run, that
  everything the mechanism returns is a function of the noisy stage alone:
  any other dependence on the data (a raw count, a data-dependent field) is
  an infinite loss.
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

Running a mechanism under the recording and replaying generators and
comparing its results leaf by leaf live in :mod:`._audit_replay`
(:class:`RecordingGenerator` is importable from here).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from ._audit_replay import (
    _REPLAY_OFFSETS,
    RecordingGenerator,
    _ReplayGenerator,
    _canon,
    _offsets,
    _outcome,
    _outcome_difference,
    _runner,
    _same,
)
from ._validation import as_int, check_epsilon
from .noise import Generator, round_scale_up

__all__ = [
    "AuditReport",
    "RecordingGenerator",
    "SampledAuditReport",
    "exact",
    "exact_linear",
    "neighbour_pairs",
    "sampled",
]


# ---------------------------------------------------------------------------
# neighbours (000 Def 4.1)


def _constraint_matrix(policy) -> np.ndarray:
    """0/1 matrix (queries x |T|) of the policy's public count constraints."""
    domain = policy.domain
    rows = []
    for c in getattr(policy, "constraints", ()):
        labels = np.asarray(c.labels(domain), dtype=np.int64)
        q = int(c.num_queries(domain))
        rows.append((labels[None, :] == np.arange(q)[:, None]).astype(np.int64))
    if not rows:
        return np.zeros((0, domain.size), dtype=np.int64)
    return np.concatenate(rows, axis=0)


def _edge_matrix(policy) -> np.ndarray:
    m = policy.domain.size
    i, j = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    return np.asarray(policy.is_edge(i.ravel(), j.ravel()), dtype=bool).reshape(m, m)


def neighbour_pairs(policy, n: int, *, literal: bool | None = None, max_databases: int = 200_000):
    """Every neighbour pair of ``policy`` on databases of ``n`` records.

    Returns a list of (D1, D2) with D1, D2 tuples of flat values indexed by
    individual; one D1 per multiset (the sensitivity and the audit are
    invariant under renaming individuals), every D2.

    With public constraints (or ``literal=True``) this applies 000 Def 4.1
    word for word: both satisfy Q; T(D1, D2) is non-empty; no D3 satisfying
    Q has a non-empty T(D1, D3) strictly inside T(D1, D2) (3a, with the
    reading of DESIGN.md sec 3 item 4), and none has T(D1, D3) = T(D1, D2)
    with Delta(D3, D1) strictly inside Delta(D2, D1) (3b).  Without
    constraints the pairs are the single-record moves along an edge.
    """
    n = as_int(n, "n", minimum=1)
    m = policy.domain.size
    if m**n > max_databases:
        raise ValueError(
            f"{m}^{n} = {m**n} databases exceed max_databases={max_databases}; "
            "audit on a smaller domain or fewer records"
        )
    edge = _edge_matrix(policy)
    C = _constraint_matrix(policy)
    if literal is None:
        literal = C.shape[0] > 0
    if not literal:
        pairs = []
        for d1 in itertools.combinations_with_replacement(range(m), n):
            for i in range(n):
                if i > 0 and d1[i] == d1[i - 1]:
                    continue  # the same move on an equal value is a renaming
                for y in np.flatnonzero(edge[d1[i]]):
                    d2 = d1[:i] + (int(y),) + d1[i + 1 :]
                    pairs.append((d1, d2))
        return pairs

    dbs = np.array(list(itertools.product(range(m), repeat=n)), dtype=np.int64)
    hist = np.zeros((dbs.shape[0], m), dtype=np.int64)
    for i in range(n):
        np.add.at(hist, (np.arange(dbs.shape[0]), dbs[:, i]), 1)
    answers = hist @ C.T if C.shape[0] else np.zeros((dbs.shape[0], 0), dtype=np.int64)
    groups: dict[tuple, list[int]] = {}
    for idx, key in enumerate(map(tuple, answers)):
        groups.setdefault(key, []).append(idx)

    pairs = []
    for members in groups.values():
        group = dbs[members]
        for d1 in group:
            if np.any(np.diff(d1) < 0):
                continue  # one D1 per multiset: the sorted one
            diff = group != d1
            on_edge = diff & edge[d1[None, :], group]
            tsets, dsets = [], []
            for row, dm, em in zip(group, diff, on_edge):
                tsets.append(frozenset((int(i), int(row[i])) for i in np.flatnonzero(em)))
                dsets.append(frozenset((int(i), int(row[i])) for i in np.flatnonzero(dm)))
            nonempty_t = {t for t in tsets if t}
            dsets_by_t: dict[frozenset, set] = {}
            for t, dset in zip(tsets, dsets):
                dsets_by_t.setdefault(t, set()).add(dset)
            for row, t, dset in zip(group, tsets, dsets):
                if not t:
                    continue  # condition 2
                items = list(t)
                if any(
                    frozenset(sub) in nonempty_t
                    for r in range(1, len(items))
                    for sub in itertools.combinations(items, r)
                ):
                    continue  # 3(a)
                extra = list(dset - t)
                if any(
                    (t | frozenset(sub)) in dsets_by_t[t]
                    for r in range(len(extra))
                    for sub in itertools.combinations(extra, r)
                ):
                    continue  # 3(b): a proper subset of Delta with the same T
                pairs.append((tuple(int(v) for v in d1), tuple(int(v) for v in row)))
    return pairs


def _hist(d, m: int) -> np.ndarray:
    return np.bincount(np.asarray(d, dtype=np.int64), minlength=m).astype(np.int64)


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


def exact_linear(W, scale, policy, *, epsilon, n: int, tail: float = 1e-9) -> AuditReport:
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
        h1, h2 = _hist(d1, m), _hist(d2, m)
        key = (h1.tobytes(), h2.tobytes())
        if key not in cache:
            cache[key] = _max_log_ratio(W @ h1, W @ h2, scales, tail)
        value, out = cache[key]
        results.append((value, {"d1": d1, "d2": d2, "output": out}))
    return _verdict(results, eps, tail, len(pairs))
# (recording, replaying and comparing results: :mod:`._audit_replay`)


def exact(mechanism, policy, *, epsilon, n: int, tail: float = 1e-9, **options) -> AuditReport:
    """Exact audit of one of the library's histogram mechanisms.

    The mechanism runs on the histogram of every database of a neighbour
    pair with a :class:`RecordingGenerator`; the recorded noisy stage
    (values and scales, as implemented) gives the exact output
    distribution.  A stage whose shape or scales differ between D1 and D2
    (an adaptive mechanism) is refused: audit it with :func:`sampled`; so
    is a plan that declares itself adaptive (``options["adaptive"]``: MWEM,
    AHP), whose stages keep one shape while later draws depend on earlier
    noisy outputs.

    Everything the mechanism returns is audited, not only the noisy stage:
    the whole result must be a function of the noisy stage.  The run on D2
    is repeated with D1's recorded stage replayed in place of its noise,
    then both runs with a common stage plus a few fixed integer offsets;
    the results (dataclass fields recursively, arrays, dicts, lists,
    numbers; plans by ``describe()``, generators skipped) and the noise
    draws requested must be equal.  Otherwise the output depends on the
    data other than through the noise, an infinite loss (``ok`` False, a
    note names the leaf).  An error raised on one database of a pair and
    not the other (or with a different message) counts the same way.

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
        is called once as ``mechanism(policy, epsilon, **options)`` (the DP
        baselines ``plan_dawa``, ``plan_privelet``, ``plan_hierarchical``,
        ``plan_identity`` get ``policy.domain.size`` instead of the policy)
        and its plan measures every histogram.
    policy : Policy
    epsilon : float
    n : int
    **options
        Passed to the mechanism (e.g. ``fanout=2``).
    """
    eps = check_epsilon(epsilon)
    feps = float(eps)
    run = _runner(mechanism, dict(options), policy, feps)
    m = policy.domain.size
    pairs = neighbour_pairs(policy, n)
    stages: dict[bytes, dict] = {}
    spent = []

    def stage(d):
        h = _hist(d, m)
        key = h.tobytes()
        if key not in stages:
            gen = RecordingGenerator()
            outcome = _outcome(run, h, policy, feps, gen)
            plan = getattr(outcome[0][1], "plan", None) if outcome[0][0] == "result" else None
            if getattr(plan, "options", {}).get("adaptive"):
                # later draws are added to quantities chosen from earlier noisy
                # outputs: reading every draw as an independent release would
                # give a wrong verdict either way
                raise ValueError(f"{plan.mechanism} is adaptive (later noise depends on earlier noisy "
                                 "outputs); this audit reads every draw as an independent release: use "
                                 "audit.sampled, or the mechanism's exact privacy-loss test")
            if outcome[0][0] == "result":
                spent.append(getattr(outcome[0][1], "epsilon_exact", None))
            recs = list(gen.records)
            stages[key] = {
                "h": h, "key": key, "records": recs, "outcome": outcome, "fp": None,
                "values": np.concatenate([r[0] for r in recs]) if recs else np.zeros(0, np.int64),
                "scales": np.concatenate([np.full(r[0].size, float(r[1])) for r in recs]) if recs else np.zeros(0),
            }
        return stages[key]

    def fingerprint(o):
        return _canon((o[0], o[1]))

    common: dict = {}

    def common_round(s, r):
        """Outcome of ``s``'s database with the common stage of round ``r``."""
        key = (s["key"], r)
        if key not in common:
            base = common.setdefault("base", s["records"])  # the first stage seen
            o = _outcome(run, s["h"], policy, feps, _ReplayGenerator(base, _offsets(base, r)))
            common[key] = (o, fingerprint(o))
        return common[key]

    own: dict = {}

    def leak(s1, s2):
        """(leaf, round) of the first output difference under one replayed stage, or None."""
        key = tuple(sorted((s1["key"], s2["key"])))
        if key not in own:
            # round 0: D2 with D1's own recorded stage (one direction per unordered pair)
            if s1["fp"] is None:
                s1["fp"] = fingerprint(s1["outcome"])
            o2 = _outcome(run, s2["h"], policy, feps, _ReplayGenerator(s1["records"], _offsets(s1["records"], 0)))
            own[key] = None if _same(s1["fp"], fingerprint(o2)) else (_outcome_difference(s1["outcome"], o2), 0)
        if own[key] is not None:
            return own[key]
        for r in range(1, _REPLAY_OFFSETS + 1):
            (o1, f1), (o2, f2) = common_round(s1, r), common_round(s2, r)
            if not _same(f1, f2):
                return _outcome_difference(o1, o2), r
        return None

    results = []
    notes: list[str] = []
    for d1, d2 in pairs:
        s1, s2 = stage(d1), stage(d2)
        out1, out2 = s1["outcome"][0], s2["outcome"][0]
        wit = {"d1": d1, "d2": d2, "output": {}}
        if out1[0] != "result" or out2[0] != "result":
            if out1 != out2:  # an error on one neighbour only, or a different message
                results.append((math.inf, wit))
                if len(notes) < 3:
                    notes.append(f"the mechanism raised an error on D1={d1} or D2={d2} but not the same on both")
            continue
        a, sa, b, sb = s1["values"], s1["scales"], s2["values"], s2["scales"]
        if a.shape != b.shape or not np.array_equal(sa, sb):
            raise ValueError(
                "the mechanism's noisy stage differs in shape or scale between neighbours "
                f"{d1} and {d2} (adaptive); use audit.sampled"
            )
        value, out = _max_log_ratio(a, b, sa, tail)
        wit["output"] = out
        found = leak(s1, s2)
        if found is not None:
            path, r = found
            value = math.inf
            wit["leak"] = path
            if len(notes) < 3 and not any(path in note for note in notes):
                how = "D1's recorded stage" if r == 0 else f"a common stage with offsets, round {r}"
                notes.append(
                    f"output leaf {path} differs between D1={d1} and D2={d2} given the same noisy stage ({how}): "
                    "it depends on the data other than through the noise (infinite privacy loss)"
                )
        results.append((value, wit))
    raised = [st["outcome"][2] for st in stages.values()]
    if raised and all(e is not None for e in raised):
        raise raised[0]  # raised on every database: a usage error, not a leak
    report = _verdict(results, eps, tail, len(pairs), notes)
    if any(s is not None and s > eps for s in spent):
        report = replace(report, ok=False, notes=report.notes + ("the mechanism reports spending more than the epsilon audited",))
    return report


# ---------------------------------------------------------------------------
# statistical audit


@dataclass(frozen=True)
class SampledAuditReport:
    """Verdict of :func:`sampled`.

    ``ok`` is False only when some output bin's log-ratio is above epsilon
    with the stated confidence (a one-sided test, Bonferroni-corrected over
    bins); ``max_log_ratio`` is the point estimate, ``lower_bound`` the
    largest confidence lower bound, ``witness`` the bin attaining it.
    """

    ok: bool
    max_log_ratio: float
    lower_bound: float
    epsilon: float
    confidence: float
    runs: int
    witness: object


def _clopper_pearson(k: int, n: int, alpha: float, side: str) -> float:
    from scipy.stats import beta

    if side == "lower":
        return 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    return 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))


def sampled(
    mechanism,
    d1,
    d2,
    *,
    epsilon,
    runs: int = 20_000,
    statistic=None,
    bins=None,
    confidence: float = 0.99,
    seed: int = 0,
) -> SampledAuditReport:
    """Statistical audit of any mechanism on one neighbour pair.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, generator)`` returning an output.
    d1, d2 : object
        The two neighbouring inputs.
    epsilon : float
        The claimed epsilon.
    runs : int
        Seeded runs per input.
    statistic : callable, optional
        Maps an output to a number (default: the output itself).
    bins : int or sequence, optional
        Histogram bins for real-valued statistics (default: exact values).
    confidence : float
        Confidence of the one-sided test.
    seed : int
        Seeds the runs (reproducible audit).

    Notes
    -----
    A PASS is not a proof (only exact audits prove); a FAIL means the ratio
    exceeds e^epsilon in some bin with the stated confidence.
    """
    eps = float(check_epsilon(epsilon))
    runs = as_int(runs, "runs", minimum=10)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    stat = statistic if statistic is not None else (lambda o: o)
    g1, g2 = Generator(seed=seed), Generator(seed=seed + 1)
    x1 = np.array([float(stat(mechanism(d1, g1))) for _ in range(runs)])
    x2 = np.array([float(stat(mechanism(d2, g2))) for _ in range(runs)])
    if bins is None:
        values = np.unique(np.concatenate([x1, x2]))
        c1 = np.searchsorted(values, x1)
        c2 = np.searchsorted(values, x2)
        k1 = np.bincount(c1, minlength=values.size)
        k2 = np.bincount(c2, minlength=values.size)
        labels = values
    else:
        edges = np.histogram_bin_edges(np.concatenate([x1, x2]), bins=bins)
        k1 = np.histogram(x1, edges)[0]
        k2 = np.histogram(x2, edges)[0]
        labels = list(zip(edges[:-1], edges[1:]))
    alpha = (1 - confidence) / max(len(k1), 1) / 2  # Bonferroni over bins and directions
    best_point, best_lower, witness = 0.0, -math.inf, None
    for idx in range(len(k1)):
        for ka, kb in ((k1[idx], k2[idx]), (k2[idx], k1[idx])):
            if ka == 0:
                continue
            point = math.log(ka / kb) if kb else math.inf
            lower = math.log(max(_clopper_pearson(int(ka), runs, alpha, "lower"), 1e-300)) - math.log(
                _clopper_pearson(int(kb), runs, alpha, "upper")
            )
            best_point = max(best_point, point)
            if lower > best_lower:
                best_lower, witness = lower, labels[idx]
    return SampledAuditReport(
        ok=best_lower <= eps,
        max_log_ratio=best_point,
        lower_bound=best_lower,
        epsilon=eps,
        confidence=confidence,
        runs=runs,
        witness=witness,
    )
