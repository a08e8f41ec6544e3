"""Consistency with public constraints: the least-squares estimate that satisfies them.

Private (:func:`consistent_estimate` is re-exported by :mod:`.constrained`):
the exact answers of public marginal constraints, the closed form for one
or two cuboids, conjugate gradients on the constraint system otherwise,
the rank of the system for the expected error, and the final check that
the estimate holds the constraints (He, Machanavajjhala, Ding, Blowfish
Privacy, SIGMOD 2014, 000 Sec 8; exact cuboids, 004).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ...policy.constraints import Constraint, Marginal
from ...policy.domain import Domain

__all__ = ["consistent_estimate"]

_CG_TOL = 1e-13
_HOLD_TOL = 1e-9


def public_answers(domain: Domain, constraints) -> list[np.ndarray]:
    """The public answer of every constraint; refused when one carries none (consistency needs them all)."""
    out = []
    for k, c in enumerate(constraints):
        b = c.public_answers(domain)
        if b is None:
            raise ValueError(
                f"constraints[{k}] ({c!r}) carries no public answer; consistency needs the public answers "
                f"(answer=... / answers=...), or pass consistent=False"
            )
        out.append(b)
    return out


def _keepdims_answer(domain: Domain, c: Marginal, b: np.ndarray) -> np.ndarray:
    """Public cuboid of ``c`` as float64, shaped to broadcast against the cube (size 1 off ``c``)."""
    pos = c.positions(domain)
    order = sorted(pos)
    arr = np.transpose(b.reshape(c.shape(domain)), [pos.index(p) for p in order])
    return arr.reshape([domain.shape[a] if a in pos else 1 for a in range(domain.ndim)]).astype(np.float64)


def _two_cuboids(y: np.ndarray, domain: Domain, c1: Marginal, c2: Marginal | None, b1, b2) -> np.ndarray:
    """Closed-form projection onto one or two exact cuboids, in the cube's own layout.

    With ``S = C1 & C2``, ``P = C1 - C2``, ``R = C2 - C1`` and ``U`` the other
    attributes, the correction is ``lam1[s, p] + lam2[s, r]`` (it must lie in
    the row space of the constraints).  Writing ``e1 = b1 - z1``, ``e2 = b2 -
    z2`` for the gaps of the cuboids of ``y``, the two block equations are
    ``|R||U| lam1 + |U| sum_r lam2 = e1`` and ``|P||U| lam2 + |U| sum_p lam1 =
    e2``; they are singular along ``(lam1 + c, lam2 - c)`` (one direction per
    cell of ``S``), so the gauge ``sum_r lam2 = 0`` gives
    ``lam1 = e1 / (|R||U|)`` and ``lam2 = (e2 - E1 / |R|) / (|P||U|)`` with
    ``E1 = sum_p e1``, valid exactly when the two cuboids agree on ``S``.
    """
    shape = domain.shape
    cube = y.reshape(shape)
    pos1 = set(c1.positions(domain))
    off1 = tuple(a for a in range(domain.ndim) if a not in pos1)
    B1 = _keepdims_answer(domain, c1, b1)
    e1 = B1 - cube.sum(axis=off1, keepdims=True)
    size1 = int(np.prod([shape[a] for a in pos1], dtype=np.int64))
    lam1 = e1 * (size1 / domain.size)
    if c2 is None:
        return (cube + lam1).reshape(-1)
    pos2 = set(c2.positions(domain))
    off2 = tuple(a for a in range(domain.ndim) if a not in pos2)
    only1 = tuple(sorted(pos1 - pos2))
    only2 = tuple(sorted(pos2 - pos1))
    B2 = _keepdims_answer(domain, c2, b2)
    t1, t2 = B1.sum(axis=only1, keepdims=True), B2.sum(axis=only2, keepdims=True)
    if not np.array_equal(t1, t2):
        raise ValueError(
            f"contradictory public answers: the two marginals {list(c1.attributes)} and {list(c2.attributes)} "
            f"disagree on their shared attributes (their totals over the shared cells differ, e.g. "
            f"{t1.ravel()[np.flatnonzero(t1 != t2)[0]]:g} vs {t2.ravel()[np.flatnonzero(t1 != t2)[0]]:g})"
        )
    e2 = B2 - cube.sum(axis=off2, keepdims=True)
    E1 = e1.sum(axis=only1, keepdims=True)
    size2 = int(np.prod([shape[a] for a in pos2], dtype=np.int64))
    n_r = int(np.prod([shape[a] for a in only2], dtype=np.int64))
    lam2 = (e2 - E1 / n_r) * (size2 / domain.size)
    out = cube + lam1
    out += lam2
    return out.reshape(-1)


def _block_sizes(domain: Domain, c1: Marginal, c2: Marginal | None) -> tuple[int, int]:
    size = lambda axes: int(np.prod([domain.shape[a] for a in axes], dtype=np.int64))  # noqa: E731
    p1 = set(c1.positions(domain))
    if c2 is None:
        return size(p1), 0
    p2 = set(c2.positions(domain))
    return size(p1), size(p2) - size(p1 & p2)


def _cg(y: np.ndarray, labels: list[np.ndarray], counts: list[int], b: np.ndarray) -> np.ndarray:
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    nq = int(sum(counts))

    def A(v):
        out = np.empty(nq)
        for lab, off, m in zip(labels, offsets, counts):
            keep = lab >= 0
            out[off : off + m] = np.bincount(lab[keep], weights=v[keep], minlength=m)
        return out

    def At(mu):
        out = np.zeros(y.size)
        for lab, off, m in zip(labels, offsets, counts):
            keep = lab >= 0
            out[keep] += mu[off : off + m][lab[keep]]
        return out

    rhs = A(y) - b
    mu = np.zeros(nq)
    r = rhs.copy()
    p = r.copy()
    rr = r @ r
    stop = _CG_TOL * max(1.0, float(np.abs(rhs).max(initial=0.0))) ** 2 * nq
    for _ in range(10 * nq + 100):
        if rr <= stop:
            break
        Mp = A(At(p))
        pMp = p @ Mp
        if pMp <= 0:
            break
        a = rr / pMp
        mu += a * p
        r -= a * Mp
        rr_new = r @ r
        p = r + (rr_new / rr) * p
        rr = rr_new
    return y - At(mu)


def _rank(domain: Domain, constraints, labels, counts) -> int | None:
    nq = int(sum(counts))
    if nq > 2000:
        return None
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    rows = np.zeros((nq, domain.size), dtype=np.float64) if domain.size * nq <= 5e7 else None
    if rows is None:
        return None
    for lab, off in zip(labels, offsets):
        keep = np.flatnonzero(lab >= 0)
        rows[off + lab[keep], keep] = 1.0
    return int(np.linalg.matrix_rank(rows))


def consistent_estimate(
    noisy, domain: Domain, constraints, *, method: str = "auto", nonnegative: bool = False
) -> tuple[np.ndarray, str, int | None]:
    """Least-squares projection of ``noisy`` onto the histograms with the public answers.

    Parameters
    ----------
    noisy : array_like, shape (|T|,) or ``domain.shape``
        The noisy histogram.
    domain : Domain
    constraints : sequence of Constraint
        Each with its public answers.
    method : {"auto", "cuboids", "cg"}
        "cuboids": the closed forms for one or two :class:`Marginal` (004
        eqs. 6-7 and 10-12, linear time); "cg": conjugate gradient on
        ``(A A^T) mu = A y - b`` for any count queries; "auto" picks the
        closed form when it applies.
    nonnegative : bool
        Also require ``x >= 0``: Dykstra's alternating projections between
        the affine set and the non-negative orthant (up to 2000 rounds).

    Returns
    -------
    (x, method, rank)
        The estimate (float64, flat), the method used and the rank of the
        constraint matrix (None when not computed).

    Raises
    ------
    TypeError
        ``noisy`` not of a real dtype, ``domain`` not a Domain, a
        constraint that is not a :class:`~blowfish_privacy.policy.constraints.Constraint`.
    ValueError
        Missing or contradictory public answers, a bad ``method``, a
        ``noisy`` of the wrong size or with a NaN or infinity.

    Privacy
    -------
    Post-processing (000 Thm 4.3): it reads only the noisy histogram and the
    public answers, so the estimate keeps the guarantee of ``noisy``.  It
    releases nothing by itself.

    Sensitivity
    -----------
    None used: no noise is added here.

    Runtime
    -------
    "cuboids": O(|T|) for one or two marginals; "cg": O(|T| |Q|) per
    conjugate-gradient iteration; ``nonnegative`` multiplies by the number of
    Dykstra rounds (at most 2000).

    References
    ----------
    .. [1] *Background Knowledge in Differential Privacy: Exact Cuboids in a Noisy Data Cube.* Unpublished draft
        (paper 004), Sec 6.1 (eqs. 6-7 and 10-12).
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 4.3 (post-processing).
    """
    if not isinstance(method, str) or method not in ("auto", "cuboids", "cg"):
        raise ValueError(f"method must be 'auto', 'cuboids' or 'cg', got {method!r}")
    if not isinstance(nonnegative, (bool, np.bool_)):
        raise TypeError(f"nonnegative must be a bool, got {nonnegative!r}")
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a blowfish_privacy.Domain, got {type(domain).__name__}")
    try:
        arr = np.asarray(noisy)
    except (TypeError, ValueError):
        raise ValueError("noisy must be an array of numbers (a regular, non-ragged array)") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"noisy must hold real numbers (an integer or float dtype), got dtype {arr.dtype}")
    y = arr.astype(np.float64).reshape(-1)
    if y.size != domain.size:
        raise ValueError(f"noisy must have {domain.size} cells (the domain size), got {y.size}")
    if not np.isfinite(y).all():
        raise ValueError("noisy must hold finite values (no NaN or infinity)")
    if isinstance(constraints, (str, bytes)) or not isinstance(constraints, Iterable):
        raise TypeError(f"constraints must be a sequence of Constraint, got {type(constraints).__name__}")
    constraints = tuple(constraints)
    for k, c in enumerate(constraints):
        if not isinstance(c, Constraint):
            raise TypeError(f"constraints[{k}] must be a Constraint (CountQuery, RangeCount, Marginal), got "
                            f"{type(c).__name__}")
    answers = public_answers(domain, constraints)
    cuboids = all(isinstance(c, Marginal) for c in constraints) and 1 <= len(constraints) <= 2
    if method == "cuboids" and not cuboids:
        raise ValueError("method='cuboids' needs one or two Marginal constraints")
    use_cuboids = cuboids and method != "cg"
    labels = counts = None

    def project(v):
        nonlocal labels, counts
        if use_cuboids:
            c2 = constraints[1] if len(constraints) == 2 else None
            return _two_cuboids(v, domain, constraints[0], c2, answers[0], answers[1] if c2 is not None else None)
        if labels is None:
            labels = [c.labels(domain) for c in constraints]
            counts = [c.num_queries(domain) for c in constraints]
        return _cg(v, labels, counts, np.concatenate(answers).astype(np.float64))

    x = project(y)
    name = ("one cuboid" if len(constraints) == 1 else "two cuboids") if use_cuboids else "conjugate gradient"
    _check_hold(x, domain, constraints, answers)
    if nonnegative:
        p = np.zeros_like(y)
        q = np.zeros_like(y)
        z = x
        for _ in range(2000):
            w = np.maximum(z + p, 0.0)
            p = z + p - w
            z = project(w + q)
            q = w + q - z
            if z.min(initial=0.0) >= -_HOLD_TOL * max(1.0, float(np.abs(z).max(initial=0.0))):
                break
        x = np.maximum(z, 0.0)
        name += " + non-negative"
    rank = None
    if use_cuboids:
        rank = sum(_block_sizes(domain, constraints[0], constraints[1] if len(constraints) == 2 else None))
    elif domain.size <= 1 << 16:
        if labels is None:
            labels = [c.labels(domain) for c in constraints]
            counts = [c.num_queries(domain) for c in constraints]
        rank = _rank(domain, constraints, labels, counts)
    return x, name, rank


def _check_hold(x, domain, constraints, answers) -> None:
    for k, (c, b) in enumerate(zip(constraints, answers)):
        got = c.answers_of(domain, x)
        err = float(np.abs(got - b).max(initial=0.0))
        if err > _HOLD_TOL * max(1.0, float(np.abs(b).max(initial=0))):
            raise ValueError(
                f"contradictory public answers: no histogram meets them all (constraints[{k}] {c!r} is off by "
                f"{err:g} after the least-squares projection)"
            )
