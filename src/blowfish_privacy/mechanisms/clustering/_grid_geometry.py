"""Grid geometry of :mod:`.kmeans_grid`: cells, nodes and node weights.

A grid of side ``cell`` bins over a domain of ordinal attributes.  With
``interpolation="linear"`` (cloud-in-cell, Hockney and Eastwood, Computer
Simulation Using Particles, 1988) a point spreads integer weight over the
2**d corner nodes of its cell, ``s**d`` in all; with ``"nearest"`` it
counts 1 in its cell (EUGkM, Su et al., CODASPY 2016).  The node weights
are a linear query ``W h`` of the histogram: :func:`grid_weights` computes
it from a histogram (small domains, audits), ``weights_from_points`` from
the points in O(n 2**d).
"""

from __future__ import annotations

import numpy as np

from ...policy.domain import Domain, Ordinal
from ._points import check_points

__all__ = ["grid_weights"]


def grid_domain(domain: Domain):
    for attr in domain.attributes:
        if not isinstance(attr, Ordinal):
            raise ValueError(f"policy: grid k-means needs ordinal attributes, got categorical attribute {attr.name!r}")
    shape = np.array(domain.shape, dtype=np.int64)
    low = np.array([a.low for a in domain.attributes], dtype=np.float64)
    width = np.array([a.bin_width for a in domain.attributes], dtype=np.float64)
    return shape, low, width


def nodes_per_axis(shape, s: int, interpolation: str) -> list[int]:
    if interpolation == "linear":
        return [int(-(-(int(n) - 1) // s)) + 1 for n in shape]
    return [int(-(-int(n) // s)) for n in shape]


def node_positions(domain: Domain, s: int, interpolation: str) -> np.ndarray:
    """Value-unit positions of the grid's nodes (cell centres for ``"nearest"``), one row per node."""
    shape, low, width = grid_domain(domain)
    axes = []
    for a, m in enumerate(nodes_per_axis(shape, s, interpolation)):
        j = np.arange(m, dtype=np.float64)
        if interpolation == "linear":
            codes = j * s  # nodes may lie past the last bin (a public position)
        else:
            codes = (j * s + np.minimum((j + 1) * s, shape[a]) - 1) / 2.0  # cell centre
        axes.append(low[a] + codes * width[a])
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.reshape(-1) for g in mesh], axis=1)


def _axis_matrix(n: int, s: int, interpolation: str) -> np.ndarray:
    """Integer (m, n) matrix: column c is the node weights of bin code c."""
    c = np.arange(n)
    j, r = c // s, c % s
    if interpolation == "linear":
        A = np.zeros((-(-(n - 1) // s) + 1, n), dtype=np.int64)
        A[j, c] += s - r
        nz = r > 0
        A[j[nz] + 1, c[nz]] += r[nz]
    else:
        A = np.zeros((-(-n // s), n), dtype=np.int64)
        A[j, c] = 1
    return A


def grid_weights(hist, domain: Domain, cell: int, interpolation: str = "linear") -> np.ndarray:
    """The exact node weights ``W h`` of a histogram (int64, flat, C order).

    ``hist`` has ``domain.size`` entries (flat or the domain's shape).
    """
    shape, _, _ = grid_domain(domain)
    H = np.asarray(hist, dtype=np.int64).reshape(tuple(shape))
    for a, n in enumerate(shape):
        A = _axis_matrix(int(n), cell, interpolation)
        H = np.moveaxis(np.tensordot(A, H, axes=([1], [a])), 0, a)
    return np.ascontiguousarray(H.reshape(-1), dtype=np.int64)


def _point_codes(points, domain: Domain) -> np.ndarray:
    """(n, d) bin codes; values outside the box are clamped, NaN to the lowest (k-means' own point check)."""
    values = check_points(points, domain)
    lows = np.array([a.low for a in domain.attributes], dtype=np.int64)
    widths = np.array([a.bin_width for a in domain.attributes], dtype=np.int64)
    return (values - lows) // widths


def weights_from_points(points, domain: Domain, cell: int, interpolation: str) -> np.ndarray:
    """Node weights of points, equal to ``grid_weights(histogram(points))``, in O(n 2**d)."""
    codes = _point_codes(points, domain)
    shape, _, _ = grid_domain(domain)
    m = nodes_per_axis(shape, cell, interpolation)
    strides = np.cumprod([1] + m[::-1])[:-1][::-1].astype(np.int64)
    out = np.zeros(int(np.prod(m)), dtype=np.int64)
    j, r = codes // cell, codes % cell
    if interpolation == "nearest":
        np.add.at(out, j @ strides, 1)
        return out
    d = domain.ndim
    for corner in range(2**d):
        bits = np.array([(corner >> a) & 1 for a in range(d)], dtype=np.int64)
        w = np.prod(np.where(bits == 1, r, cell - r), axis=1)
        keep = w > 0
        np.add.at(out, (j[keep] + bits) @ strides, w[keep])
    return out
