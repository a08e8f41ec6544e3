"""The neighbour pairs of a policy on a tiny domain (000 Def 4.1), for the exact auditors.

Without public constraints two databases are neighbours when one record
moves along an edge of the secret graph; with constraints the definition
is applied word for word over every database of ``n`` records (see
:func:`neighbour_pairs`).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from ._validation import as_int

if TYPE_CHECKING:
    from .policy import Policy

__all__ = ["histogram_of", "neighbour_pairs"]


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


def neighbour_pairs(policy: Policy, n: int, *, literal: bool | None = None,
                    max_databases: int = 200_000) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every neighbour pair of ``policy`` on databases of ``n`` records.

    Returns a list of (D1, D2) with D1, D2 tuples of flat values indexed by
    individual; one D1 per multiset (the sensitivity and the audit are
    invariant under renaming individuals), every D2.

    With public constraints (or ``literal=True``) this applies 000 Def 4.1
    word for word: both satisfy Q; T(D1, D2) is non-empty; no D3 satisfying
    Q has a non-empty T(D1, D3) strictly inside T(D1, D2) (3a, read with
    "non-empty" as explained in Corrections to the papers,
    docs/explanation/corrections.md), and none has T(D1, D3) = T(D1, D2)
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


def histogram_of(d, m: int) -> np.ndarray:
    """Histogram over ``m`` values of a database given as values per individual."""
    return np.bincount(np.asarray(d, dtype=np.int64), minlength=m).astype(np.int64)
