"""Points on a k-means grid: cells, assignment, noisy sums, the update, Lloyd.

The shared, non-private machinery of :mod:`.kmeans` (SuLQ k-means under a
Blowfish policy, He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014,
000 Sec 6): checking a domain is a grid of ordinal attributes, mapping
points to their cells (never failing on values), the fused C assignment
(exact Python-int sums when int64 could overflow), the centroid update, and
the non-private :func:`lloyd` and :func:`kmeans_objective` used for
comparisons.  Public names are re-exported by :mod:`.kmeans`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ... import _kmeans
from ..._validation import as_int, as_int64_array
from ...policy.domain import Domain, Ordinal
from ...noise import Generator
from ...policy._policy import Policy, require_policy

__all__ = ["kmeans_objective", "lloyd"]

MAX_K = _kmeans.KMEANS_MAXK
#: Per-coordinate sums stay below this in int64 (room for the noise).
SAFE = 2**61


def grid(domain: Domain) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    for attr in domain.attributes:
        if not isinstance(attr, Ordinal):
            raise ValueError(
                f"policy: k-means needs a domain of ordinal attributes (grid coordinates), got categorical "
                f"attribute {attr.name!r}"
            )
    if domain.ndim > _kmeans.KMEANS_MAXDIM:
        raise ValueError(f"policy: k-means supports at most {_kmeans.KMEANS_MAXDIM} attributes, got {domain.ndim}")
    shape = np.array(domain.shape, dtype=np.int64)
    low = np.array([a.low for a in domain.attributes], dtype=np.int64)
    width = np.array([a.bin_width for a in domain.attributes], dtype=np.int64)
    return shape, low, width


def check_policy(policy) -> Policy:
    require_policy(policy)
    return policy


def domain_of(where) -> Domain:
    if isinstance(where, Policy):
        return where.domain
    if isinstance(where, Domain):
        return where
    raise TypeError(f"domain must be a Domain or a Policy, got {where!r} of type {type(where).__name__}")


def check_points(points, domain: Domain) -> np.ndarray:
    """Points as an (n, d) int64 array of cells of ``domain`` (never fails on values).

    Only the public dtype and shape are checked.  Each coordinate is mapped
    to the bin containing it, clamped into the domain's box (NaN counts as
    the lowest value), so the sensitivities computed over the domain hold.
    """
    arr = np.asarray(points)
    d = domain.ndim
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"points must be a numeric array of grid values (integer or float dtype), got dtype {arr.dtype}")
    if arr.ndim == 1 and (d == 1 or arr.size == 0):
        arr = arr.reshape(-1, d)
    if arr.ndim != 2 or arr.shape[1] != d:
        raise ValueError(f"points must have shape (n, {d}) for a domain of {d} attributes, got shape {arr.shape}")
    out = np.empty(arr.shape, dtype=np.int64)
    for a, attr in enumerate(domain.attributes):
        lo, hi, w = attr.low, attr.last_value, attr.bin_width
        col = arr[:, a]
        if col.dtype.kind == "f":
            col = np.clip(np.nan_to_num(col.astype(np.float64), nan=lo, posinf=hi, neginf=lo), lo, hi)
            codes = np.clip(np.floor((col - lo) / w), 0, attr.size - 1).astype(np.int64)
        else:
            if col.dtype == np.uint64:
                col = np.minimum(col, np.uint64(max(hi, 0)))
            col = np.clip(col.astype(np.int64), lo, hi)
            codes = (col - lo) // w
        out[:, a] = lo + codes * w
    return out


def chunk_points(domain: Domain) -> int:
    """Points per assignment call so that int64 sums cannot overflow (public)."""
    spans = sum(a.span for a in domain.attributes)
    # the C pass also sums raw coordinates and count * reference (both in the box)
    far = max(max(abs(a.low), abs(a.last_value)) for a in domain.attributes)
    return max(1, min(SAFE // max(spans, 1), (2**63 - 1) // max(2 * far, 1)))


def assign(pts: np.ndarray, centroids: np.ndarray, refs: np.ndarray, chunk: int):
    """(sizes, sums relative to refs); sums are int64, or exact Python ints
    (object array) when more than ``chunk`` points could overflow int64."""
    if pts.shape[0] <= chunk:
        counts, sums, _ = _kmeans.kmeans_assign(pts, centroids, refs)
        return counts, sums
    k, d = centroids.shape
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros((k, d), dtype=object)
    for s in range(0, pts.shape[0], chunk):
        c, sm, _ = _kmeans.kmeans_assign(pts[s : s + chunk], centroids, refs)
        counts += c
        sums += sm.astype(object)
    return counts, sums


def noisy(values: np.ndarray, scale: Fraction, gen: Generator) -> np.ndarray:
    if scale == 0:
        return values.copy()
    if values.dtype == object:  # exact big sums: noise drawn apart, added as Python ints
        noise = gen.add_discrete_laplace(np.zeros(values.shape, dtype=np.int64), scale)
        return values + noise.astype(object)
    return gen.add_discrete_laplace(values, scale)


def centroid_array(init, k: int, domain: Domain, name: str = "init") -> np.ndarray:
    arr = np.asarray(init)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be 'random' or a numeric array of shape ({k}, {domain.ndim}), got {init!r}")
    arr = np.array(arr, dtype=np.float64)
    if domain.ndim == 1 and arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.shape != (k, domain.ndim):
        raise ValueError(f"{name} must have shape (k, d) = ({k}, {domain.ndim}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    _, low, width = grid(domain)
    high = np.array([a.last_value for a in domain.attributes], dtype=np.float64)
    if (arr < low).any() or (arr > high).any():
        raise ValueError(
            f"{name} must lie inside the domain's box {low.tolist()}..{high.tolist()}, got {arr.tolist()}"
        )
    return arr


def random_init(domain: Domain, k: int, gen: Generator) -> np.ndarray:
    """k distinct uniformly random cells of the domain (data-independent)."""
    if k > domain.size:
        raise ValueError(f"k must be at most the domain size {domain.size} for init='random', got {k}")
    chosen: list[int] = []
    while len(chosen) < k:
        for c in gen.integers(domain.size, size=k).tolist():
            if c not in chosen and len(chosen) < k:
                chosen.append(int(c))
    vals = domain.values(np.array(chosen, dtype=np.int64))
    return np.stack([np.asarray(v, dtype=np.float64) for v in vals], axis=1)


def round_to_grid(centroids: np.ndarray, low: np.ndarray, width: np.ndarray, shape: np.ndarray) -> np.ndarray:
    codes = np.clip(np.floor((centroids - low) / width + 0.5), 0, shape - 1).astype(np.int64)
    return low + codes * width


def clamp(centroids: np.ndarray, domain: Domain) -> np.ndarray:
    low = np.array([a.low for a in domain.attributes], dtype=np.float64)
    high = np.array([a.last_value for a in domain.attributes], dtype=np.float64)
    return np.clip(centroids, low, high)



def reference_array(references) -> np.ndarray:
    """Reference points as int64: integers, or floats with integral values."""
    r = np.asarray(references)
    if r.dtype.kind == "f":
        if not np.isfinite(r).all() or (r != np.floor(r)).any() or (np.abs(r) >= 2.0**63).any():
            raise ValueError(f"references must be integers (grid values), got {r.tolist()}")
        return np.array(r, dtype=np.int64, order="C")
    if r.dtype.kind not in "iu":
        raise TypeError(f"references must be an integer array, got dtype {r.dtype}")
    return as_int64_array(r, "references")


def check_k(k) -> int:
    k = as_int(k, "k", minimum=1)
    if k > MAX_K:
        raise ValueError(f"k must be at most {MAX_K}, got {k}")
    return k


def update(centroids, refs, sizes, sums):
    """New centroids ``ref + sum / size``; clusters with size < 1 keep theirs."""
    out = centroids.copy()
    ok = sizes >= 1
    out[ok] = refs[ok] + sums[ok] / sizes[ok, None]
    return out


def lloyd(points: npt.ArrayLike, domain: Domain, init: npt.ArrayLike, *, iterations: int = 10) -> np.ndarray:
    """Non-private Lloyd k-means with the same assignment rule and update.

    Not private: for comparisons only (e.g. ``init=result.initial_centroids``
    of a :func:`kmeans` run).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Grid values of ``domain`` (as for :func:`kmeans`).
    domain : Domain or Policy
    init : array_like, shape (k, d)
        Initial centroids inside the domain's box.
    iterations : int, default 10

    Returns
    -------
    ndarray of float64, shape (k, d)
        The centroids after ``iterations`` rounds (an empty cluster keeps its
        centroid).

    Privacy
    -------
    None: the exact Lloyd iteration on the points, not a release (a
    comparison point for :func:`kmeans`).

    Sensitivity
    -----------
    Not used: no noise is added.

    Runtime
    -------
    O(iterations n k d) (assignment in C).

    References
    ----------
    .. [1] Lloyd. *Least Squares Quantization in PCM.* IEEE Transactions on Information Theory 28(2), 1982.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 6 (the private version this is compared with).
    """
    domain = domain_of(domain)
    shape, low, width = grid(domain)
    pts = check_points(points, domain)
    arr = np.asarray(init)
    k = check_k(arr.shape[0] if arr.ndim >= 1 else 0)
    centroids = centroid_array(init, k, domain)
    iterations = as_int(iterations, "iterations", minimum=1)
    chunk = chunk_points(domain)
    for _ in range(iterations):
        refs = round_to_grid(centroids, low, width, shape)
        counts, sums = assign(pts, centroids, refs, chunk)
        centroids = update(centroids, refs, counts.astype(np.float64), sums.astype(np.float64))
    return centroids


def kmeans_objective(points: npt.ArrayLike, centroids: npt.ArrayLike) -> float:
    """The k-means objective (000 eq. 10): sum of squared Euclidean distances
    of the points to their nearest centroid.

    Parameters
    ----------
    points : array_like of real, shape (n, d)
    centroids : array_like of real, shape (k, d)

    Returns
    -------
    float

    Privacy
    -------
    None: computed on the points it is given, not a release (use it on
    public or already released data, or for evaluation).

    Sensitivity
    -----------
    Not used: no noise is added.

    Runtime
    -------
    O(n k d).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 6, eq. 10.
    """
    p = np.asarray(points, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    if p.ndim == 1:
        p = p.reshape(-1, 1)
    if c.ndim == 1 and p.shape[1] == 1:
        c = c.reshape(-1, 1)
    if p.ndim != 2 or c.ndim != 2 or p.shape[1] != c.shape[1] or c.shape[0] < 1:
        raise ValueError(f"points (n, d) and centroids (k, d) must agree on d, got {p.shape} and {c.shape}")
    if not (np.isfinite(p).all() and np.isfinite(c).all()):
        raise ValueError("points and centroids must be finite")
    total = 0.0
    step = max(1, (1 << 20) // c.shape[0])
    with np.errstate(over="ignore"):  # an objective beyond the float range is inf, as it should read
        for s in range(0, p.shape[0], step):
            chunk = p[s : s + step]
            d2 = ((chunk[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
            total += float(d2.min(axis=1).sum())
    return total
