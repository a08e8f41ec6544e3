"""Rectangles of a 2-D grid: their counts and uniform expansion.

The geometry shared by the 2-D DP baselines UGrid and AGrid
(:mod:`blowfish_privacy.baselines.grids_2d`, after Qardaji, Yang, Li,
Differentially Private Grids for Geospatial Data, ICDE 2013), DPCube and
HybridTree: an integral image gives the count of any half-open rectangle
[r0, r1) x [c0, c1) in O(1); a tiling of the domain by rectangles is cut
into nearly equal bands; and values per rectangle are spread uniformly
over its cells by a 2-D difference array, O(|T|) for any tiling.  No
noise and no checks here: the callers pass validated, public shapes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["integral_image", "rect_sums", "paint_uniform", "uniform_rects", "grid_cells"]


def integral_image(hist: np.ndarray) -> np.ndarray:
    """int64 array of shape (R + 1, C + 1): entry [r, c] is the count of [0, r) x [0, c)."""
    R, C = hist.shape
    I = np.zeros((R + 1, C + 1), dtype=np.int64)
    I[1:, 1:] = hist.cumsum(0).cumsum(1)
    return I


def rect_sums(I, r0, r1, c0, c1) -> np.ndarray:
    """Counts of the rectangles [r0, r1) x [c0, c1) (arrays of bounds) from an integral image ``I``."""
    return I[r1, c1] - I[r0, c1] - I[r1, c0] + I[r0, c0]


def paint_uniform(shape, r0, r1, c0, c1, values) -> np.ndarray:
    """Spread each rectangle's value uniformly over its cells (rectangles tile the domain)."""
    R, C = shape
    dens = values / ((r1 - r0) * (c1 - c0))
    D = np.zeros((R + 1, C + 1), dtype=np.float64)
    np.add.at(D, (r0, c0), dens)
    np.add.at(D, (r0, c1), -dens)
    np.add.at(D, (r1, c0), -dens)
    np.add.at(D, (r1, c1), dens)
    return D.cumsum(0).cumsum(1)[:R, :C]


def uniform_rects(R0, R1, C0, C1, mr, mc):
    """Sub-rectangles of rectangles [R0, R1) x [C0, C1), each cut into mr x mc nearly equal bands.

    Arrays in, arrays out (one entry per sub-rectangle, grouped by parent), and the parent of each.
    """
    q = mr * mc
    parent = np.repeat(np.arange(R0.size, dtype=np.int64), q)
    start = np.cumsum(q) - q
    t = np.arange(int(q.sum()), dtype=np.int64) - np.repeat(start, q)
    mcp, mrp = mc[parent], mr[parent]
    tr, tc = t // mcp, t % mcp
    H, W = (R1 - R0)[parent], (C1 - C0)[parent]
    r0 = R0[parent] + tr * H // mrp
    r1 = R0[parent] + (tr + 1) * H // mrp
    c0 = C0[parent] + tc * W // mcp
    c1 = C0[parent] + (tc + 1) * W // mcp
    return r0, r1, c0, c1, parent


def grid_cells(shape, m_r, m_c):
    """(r0, r1, c0, c1) of an m_r x m_c grid over ``shape``, each count clipped to [1, side]."""
    one = np.zeros(1, dtype=np.int64)
    return uniform_rects(one, one + shape[0], one, one + shape[1],
                         np.array([min(max(m_r, 1), shape[0])]), np.array([min(max(m_c, 1), shape[1])]))[:4]
