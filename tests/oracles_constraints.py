"""Brute-force oracles for policies with public count constraints.

Written from the definitions only, on explicit flat indices, without calling
the library's constraint, sparsity or policy-graph code.

``blowfish_sensitivity`` applies 000 Def 4.1 literally.  A database is a
tuple of ``n`` values (position ``i`` is the tuple with id ``i``).  For
databases ``D1, D2``:

* ``T(D1, D2)`` is the set of discriminative pairs ``(i, D2[i])`` over ids
  ``i`` whose values differ along a secret edge;
* ``Delta(D2, D1) subset Delta(D3, D1)`` for databases over the same ids
  reduces to: every id that ``D3`` changes, ``D2`` changes to the same value.
  So ``Delta`` is compared through the change set ``{(i, D[i]) : D[i] !=
  D1[i]}``.

``(D1, D2)`` are neighbours iff both satisfy ``Q`` (same answers), ``T(D1,
D2)`` is non-empty, and no ``D3`` satisfying ``Q`` has (a) a non-empty
``T(D1, D3)`` strictly inside ``T(D1, D2)`` (the non-empty reading of 3(a),
docs/explanation/corrections.md), or (b) ``T(D1, D3) = T(D1, D2)`` with a change set
strictly inside that of ``D2``.  ``S(h, P)`` is the largest
``||h(D1) - h(D2)||_1`` over neighbours.  The sensitivity is invariant under
permuting ids, so one ``D1`` per multiset (the sorted tuples) is enough.

Sets of pairs are encoded as integer keys: position ``i`` contributes
``(value + 1) * base**i`` (``0`` for "not in the set"), so the keys of all
subsets of a set are found by zeroing positions, and strict inclusion tests
become look-ups of the subset keys among the keys of feasible databases.

``move_sensitivity`` is the oracle for the exact-cuboid neighbour model of
004 Sec 3-4: tables are histograms, neighbours ``T_a, T_b`` are feasible
tables such that no non-trivial proper part of the minimal add/remove move
sequence from ``T_a`` to ``T_b`` (remove ``(T_a - T_b)^+``, add ``(T_b -
T_a)^+``) leads to another feasible table.

Meant for tiny cases: ``|T| <= 12`` and ``n <= 5``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass
class OracleResult:
    """Exact ``S(h, P)`` with one witness pair (``None`` when no neighbours)."""

    value: int
    d1: tuple | None
    d2: tuple | None
    pairs: int


def masks_from_sets(size: int, sets) -> np.ndarray:
    """Boolean matrix ``(q, size)`` of count-query predicates given as value sets."""
    out = np.zeros((len(sets), size), dtype=bool)
    for k, s in enumerate(sets):
        out[k, list(s)] = True
    return out


def complete_edges(size: int) -> np.ndarray:
    """The complete secret graph (full-domain secrets) as a boolean matrix."""
    e = np.ones((size, size), dtype=bool)
    np.fill_diagonal(e, False)
    return e


def _subset_matrix(n: int) -> np.ndarray:
    """Row ``s`` is the 0/1 indicator of subset ``s`` of ``range(n)``."""
    s = np.arange(1 << n)
    return ((s[:, None] >> np.arange(n)[None, :]) & 1).astype(np.int64)


def blowfish_sensitivity(size: int, edges: np.ndarray, masks: np.ndarray, n: int) -> OracleResult:
    """``S(h, (T, G, I_Q))`` by 000 Def 4.1 read literally.

    Parameters
    ----------
    size : int
        ``|T|``; values are ``0 .. size-1``.
    edges : numpy.ndarray of bool, shape (size, size)
        Symmetric adjacency of the secret graph ``G`` (diagonal ignored).
    masks : numpy.ndarray of bool, shape (q, size)
        Count-query predicates; ``q = 0`` means no constraints.
    n : int
        Number of tuples.
    """
    edges = np.asarray(edges, dtype=bool).copy()
    np.fill_diagonal(edges, False)
    masks = np.asarray(masks, dtype=bool).reshape(-1, size)
    dbs = np.array(list(itertools.product(range(size), repeat=n)), dtype=np.int64).reshape(-1, n)
    answers = masks[:, dbs].sum(axis=2).T if masks.shape[0] else np.zeros((dbs.shape[0], 0), dtype=np.int64)
    _, group = np.unique(answers, axis=0, return_inverse=True)
    group = group.ravel()
    members = {}
    for g in np.unique(group):
        members[int(g)] = np.flatnonzero(group == g)
    base = size + 1
    weights = base ** np.arange(n, dtype=np.int64)
    subsets = _subset_matrix(n)  # (2^n, n)
    best = OracleResult(0, None, None, 0)
    pairs = 0
    sorted_rows = np.flatnonzero((np.diff(dbs, axis=1) >= 0).all(axis=1)) if n > 1 else np.arange(dbs.shape[0])
    for r in sorted_rows:
        d1 = dbs[r]
        cand = dbs[members[int(group[r])]]
        changed = cand != d1
        secret = changed & edges[d1[None, :], cand]
        tt = np.where(secret, cand + 1, 0)
        cc = np.where(changed, cand + 1, 0)
        tkey = tt @ weights
        ckey = cc @ weights
        nonempty = tkey != 0
        if not nonempty.any():
            continue
        feasible_t = np.unique(tkey[nonempty])
        feasible_c = np.unique(ckey)
        # (a): a proper non-empty subset of T(D1, D2) achieved by a feasible D3.
        idx = np.flatnonzero(nonempty)
        sub_t = (tt[idx][:, None, :] * subsets[None, :, :]) @ weights  # (m, 2^n)
        proper = (sub_t != 0) & (sub_t != tkey[idx][:, None])
        bad_a = (np.isin(sub_t, feasible_t) & proper).any(axis=1)
        idx = idx[~bad_a]
        if idx.size == 0:
            continue
        # (b): same T, strictly smaller change set: subsets of the changed ids
        # that keep every secret id of D2.
        sec = secret[idx]
        keep_secret = ((subsets[None, :, :] >= sec[:, None, :]) | ~sec[:, None, :]).all(axis=2)
        sub_c = (cc[idx][:, None, :] * subsets[None, :, :]) @ weights
        proper_c = sub_c != ckey[idx][:, None]
        bad_b = (np.isin(sub_c, feasible_c) & proper_c & keep_secret).any(axis=1)
        idx = idx[~bad_b]
        if idx.size == 0:
            continue
        pairs += idx.size
        h1 = np.bincount(d1, minlength=size)
        for k in idx:
            diff = int(np.abs(np.bincount(cand[k], minlength=size) - h1).sum())
            if diff > best.value:
                best = OracleResult(diff, tuple(int(v) for v in d1), tuple(int(v) for v in cand[k]), 0)
    best.pairs = pairs
    return best


def check_neighbours(size: int, edges: np.ndarray, masks: np.ndarray, d1, d2) -> bool:
    """Whether ``(d1, d2)`` are neighbours by Def 4.1 (direct, for witnesses)."""
    edges = np.asarray(edges, dtype=bool).copy()
    np.fill_diagonal(edges, False)
    masks = np.asarray(masks, dtype=bool).reshape(-1, size)
    d1, d2 = np.asarray(d1), np.asarray(d2)
    n = d1.size

    def answers(d):
        return masks[:, d].sum(axis=1)

    def tset(d):
        return {(i, int(d[i])) for i in range(n) if d[i] != d1[i] and edges[d1[i], d[i]]}

    def cset(d):
        return {(i, int(d[i])) for i in range(n) if d[i] != d1[i]}

    a1 = answers(d1)
    if not np.array_equal(a1, answers(d2)):
        return False
    t2, c2 = tset(d2), cset(d2)
    if not t2:
        return False
    for d3 in itertools.product(range(size), repeat=n):
        d3 = np.asarray(d3)
        if not np.array_equal(answers(d3), a1):
            continue
        t3 = tset(d3)
        if t3 and t3 < t2:
            return False
        if t3 == t2 and cset(d3) < c2:
            return False
    return True


def move_sensitivity(size: int, masks: np.ndarray, n: int) -> OracleResult:
    """Sensitivity of the histogram in the 004 add/remove move model.

    Tables are histograms with ``n`` tuples; ``masks`` are the cells of the
    exact cuboids (one count query per cell).  ``T_a, T_b`` feasible and
    different are neighbours iff no table ``T_c = T_a - r + a`` with
    ``0 <= r <= (T_a - T_b)^+``, ``0 <= a <= (T_b - T_a)^+``, ``(r, a)``
    neither empty nor everything, satisfies the cuboids.
    """
    masks = np.asarray(masks, dtype=bool).reshape(-1, size).astype(np.int64)
    hists = []
    for combo in itertools.combinations_with_replacement(range(size), n):
        hists.append(np.bincount(np.array(combo, dtype=np.int64), minlength=size))
    H = np.array(hists)
    answers = H @ masks.T
    _, group = np.unique(answers, axis=0, return_inverse=True)
    group = group.ravel()
    best = OracleResult(0, None, None, 0)
    pairs = 0
    for g in np.unique(group):
        rows = H[group == g]
        for a, b in itertools.combinations(range(rows.shape[0]), 2):
            d = rows[b] - rows[a]
            # any non-zero e != d conformal to d (|e| <= |d| with d's signs) in ker(masks)
            ranges = [range(0, int(v) + 1) if v >= 0 else range(int(v), 1) for v in d]
            prim = True
            for e in itertools.product(*ranges):
                e = np.array(e, dtype=np.int64)
                if not e.any() or np.array_equal(e, d):
                    continue
                if not (masks @ e).any():
                    prim = False
                    break
            if prim:
                pairs += 1
                diff = int(np.abs(d).sum())
                if diff > best.value:
                    best = OracleResult(diff, tuple(rows[a]), tuple(rows[b]), 0)
    best.pairs = pairs
    return best
