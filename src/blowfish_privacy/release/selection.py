"""Selections (``where``) and the secret edges that cross their boundary.

A release with ``where = { A = a }`` sees the rows whose attribute A has
value a.  Its neighbours include the moves of one record into or out of
the selection along a secret edge, so

* the number of selected rows is public (invariant over neighbours) only
  when no secret edge joins a selected value to an unselected one;
* every sensitivity of a selected release must cover those moves: the
  query is ``g(x) * [x selected]`` over the *whole* domain of the release.

Both are decided here from public inputs (the policy and the selection).
When in doubt the answer is "crosses" (the safe side: more noise or a
refusal, never less).
"""

from __future__ import annotations

import numpy as np

from ..policy.domain import Domain

__all__ = ["selection_codes", "selection_mask", "crosses_boundary"]

#: Largest domain for which the selection is checked value by value.
_EXPLICIT_LIMIT = 1 << 22


def selection_codes(domain: Domain, where) -> dict:
    """``{attribute position: code}`` of a ``where`` tuple of (name, value)."""
    out = {}
    for name, value in where:
        pos = domain.names.index(name)
        out[pos] = int(domain.attributes[pos].codes_of([value])[0])
    return out


def selection_mask(domain: Domain, where) -> np.ndarray:
    """Boolean mask over the flat domain: True for the selected values."""
    codes = selection_codes(domain, where)
    mask = np.ones(domain.shape, dtype=bool)
    for pos, code in codes.items():
        keep = np.zeros(domain.shape[pos], dtype=bool)
        keep[code] = True
        shape = [1] * domain.ndim
        shape[pos] = domain.shape[pos]
        mask &= keep.reshape(shape)
    return mask.reshape(-1)


def _is_whole_domain(domain: Domain, codes: dict) -> bool:
    return all(domain.shape[pos] == 1 for pos in codes)


def crosses_boundary(policy, where) -> bool:
    """Whether some secret edge of ``policy`` joins a selected value to an unselected one.

    Exact for the library's secret graphs: the graph answers itself when
    it can (:meth:`~blowfish_privacy.policy.secrets.SecretGraph.crosses_selection`),
    else partitions are decided block by block and other graphs edge by
    edge on small domains; True (the safe answer) for any graph it cannot
    decide.
    """
    if not where:
        return False
    domain, graph = policy.domain, policy.secrets
    codes = selection_codes(domain, where)
    if _is_whole_domain(domain, codes):
        return False
    if not graph.has_edge(domain):
        return False
    crossed = graph.crosses_selection(domain, codes)
    if crossed is not None:
        return crossed
    if domain.size > _EXPLICIT_LIMIT:
        return True
    mask = selection_mask(domain, where)
    ids = graph.block_ids(domain)
    if ids is not None:
        ids = ids - ids.min()
        inside = np.bincount(ids, weights=mask, minlength=int(ids.max()) + 1)
        total = np.bincount(ids, minlength=int(ids.max()) + 1)
        return bool(np.any((inside > 0) & (inside < total)))
    try:
        i, j = graph.iter_edges(domain)
    except ValueError:
        return True
    return bool(np.any(mask[i] != mask[j]))
