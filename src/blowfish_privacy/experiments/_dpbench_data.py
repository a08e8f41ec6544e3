"""DPBench data and workloads: loading, merging and re-sampling shapes; the error metric.

Part of :mod:`.dpbench` (the DPBench protocol, Hay, Machanavajjhala, Miklau,
Chen, Zhang, SIGMOD 2016): the data folder and its data sets (or the
synthetic shape), merging adjacent cells to a smaller domain, the
deterministic data seed, re-sampling to a scale, random range queries and
the per-workload scaled L1 and squared errors.  Every name is re-exported
by :mod:`.dpbench`.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np

#: Largest 1-D domain for the all-ranges workload (|T|(|T|+1)/2 queries, in closed form).
ALLRANGES_LIMIT = 1 << 24
SYNTHETIC = "SYNTH"


# ---------------------------------------------------------------------------
# data


class DataMissing(Exception):
    """The DPBench data folder or a data set is not there (the message names what, never a path)."""


def default_data_dir() -> Path | None:
    """``$BLOWFISH_DATA``, else None (then ``--data`` must say where the data are)."""
    env = os.environ.get("BLOWFISH_DATA")
    return Path(env) if env else None


def subdir(dims: int) -> str:
    return f"dpbench_{dims}d"


def available_datasets(data_dir: Path | None, dims: int) -> list[str]:
    if data_dir is None or not (Path(data_dir) / subdir(dims)).is_dir():
        return []
    names = []
    for p in sorted((Path(data_dir) / subdir(dims)).glob("*.npy")):
        names.append(p.name.split(".n4096")[0] if dims == 1 else p.name.rsplit("_256_256", 1)[0])
    return names


def _synthetic(dims: int) -> np.ndarray:
    """A fixed smooth-plus-spiky shape (no data needed): mixture of bumps and a few spikes."""
    if dims == 1:
        x = np.arange(4096)
        s = (np.exp(-0.5 * ((x - 900) / 120.0) ** 2) + 0.4 * np.exp(-0.5 * ((x - 2900) / 400.0) ** 2)
             + 0.02)
        s[[100, 1500, 1501, 3900]] += 5.0
        return s
    r, c = np.mgrid[0:256, 0:256]
    s = (np.exp(-0.5 * (((r - 70) / 20.0) ** 2 + ((c - 90) / 30.0) ** 2))
         + 0.5 * np.exp(-0.5 * (((r - 180) / 40.0) ** 2 + ((c - 170) / 15.0) ** 2)) + 0.01)
    s[40, 200] += 30.0
    return s


def load_shape(name: str, dims: int, data_dir: Path | None) -> np.ndarray:
    """The data set's shape (non-negative float64, full resolution: 4096 or 256 x 256)."""
    if name == SYNTHETIC:
        return _synthetic(dims)
    sub = subdir(dims)
    if data_dir is None or not (Path(data_dir) / sub).is_dir():
        raise DataMissing(
            f"the DPBench {dims}-D data folder ({sub}/) was not found: pass --data DIR (the folder holding "
            f"{sub}/), set BLOWFISH_DATA, or run on the built-in shape with --datasets {SYNTHETIC}")
    fname = f"{name}.n4096.npy" if dims == 1 else f"{name}_256_256.npy"
    path = Path(data_dir) / sub / fname
    if not path.is_file():
        raise DataMissing(f"data set {name!r} is not in {sub}/ (expected {fname}); available: "
                          f"{', '.join(available_datasets(data_dir, dims)) or 'none'}")
    arr = np.load(path, allow_pickle=False).astype(np.float64)
    want = (4096,) if dims == 1 else (256, 256)
    if arr.shape != want or not np.isfinite(arr).all() or (arr < 0).any() or arr.sum() <= 0:
        raise DataMissing(f"data set {name!r} in {sub}/ is not a non-negative {want} histogram")
    return arr


def merge(shape: np.ndarray, domain: int) -> np.ndarray:
    """Merge adjacent cells down to ``domain`` cells per axis (it must divide the full size)."""
    full = shape.shape[0]
    if domain < 1 or full % domain:
        raise ValueError(f"domain must divide {full}, got {domain}")
    f = full // domain
    if shape.ndim == 1:
        return shape.reshape(domain, f).sum(axis=1)
    return shape.reshape(domain, f, domain, f).sum(axis=(1, 3))


def data_seed(base: int, *parts) -> np.random.SeedSequence:
    words = [int(base)] + [zlib.crc32(str(p).encode()) for p in parts]
    return np.random.SeedSequence(words)


def sample(shape: np.ndarray, scale: int, rng: np.random.Generator) -> np.ndarray:
    """``scale`` records drawn from the normalised shape (multinomial), int64 counts."""
    p = shape.ravel() / shape.sum()
    return rng.multinomial(int(scale), p).astype(np.int64).reshape(shape.shape)


# ---------------------------------------------------------------------------
# workloads and the metric


#: How random ranges are drawn: DPBench's (a length uniform in 1..k, then a start where it fits) or two
#: uniform endpoints (long ranges more often: the length's law is triangular).
RANGE_SAMPLERS = ("dpbench", "uniform-endpoints")


def random_ranges(k: int, dims: int, count: int, rng: np.random.Generator, how: str = "dpbench") -> np.ndarray:
    """``count`` random ranges: rows (lo, hi) in 1-D, (r1, r2, c1, c2) in 2-D, inclusive.

    ``how="dpbench"`` draws, per axis, a length uniform in 1..k and then a
    start uniform among the k - length + 1 positions where it fits (DPBench's
    ``RandomRange`` workload); ``how="uniform-endpoints"`` draws two uniform
    endpoints and sorts them.
    """
    if how not in RANGE_SAMPLERS:
        raise ValueError(f"ranges must be one of {', '.join(RANGE_SAMPLERS)}, got {how!r}")
    out = []
    for _ in range(dims):
        if how == "dpbench":
            length = rng.integers(1, k + 1, count)
            lo = rng.integers(0, k - length + 1)          # one draw per range, upper bound per range
            out += [lo, lo + length - 1]
        else:
            a = rng.integers(0, k, count)
            b = rng.integers(0, k, count)
            out += [np.minimum(a, b), np.maximum(a, b)]
    return np.column_stack(out)


def allranges_1d(err_cum: np.ndarray) -> tuple[float, float, int]:
    """Mean |.| and mean square of E[j] - E[i-1] over all 0 <= i <= j < k (E with E[-1] = 0).

    Closed form over the k + 1 positions P = (0, E): the sum of |P_j - P_i|
    over i < j is sum_r (2r - m + 1) P_(r) over the sorted values (each
    value is added once for every smaller one and subtracted once for every
    larger one), and the sum of squares is m sum P^2 - (sum P)^2; O(k log k)
    time, O(k) memory.
    """
    P = np.concatenate([[0.0], np.asarray(err_cum, dtype=np.float64)])
    m = P.size
    srt = np.sort(P)
    s1 = float(np.dot(2.0 * np.arange(m) - (m - 1), srt))
    c = P - P.mean()                                # centred: no cancellation at large scales
    s2 = float(m * np.dot(c, c))
    n = m * (m - 1) // 2
    return s1 / n, s2 / n, n


def range_sums(cum: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Sums over inclusive ranges (rows (lo, hi) in 1-D, (r1, r2, c1, c2) in 2-D) from the cumulative sums ``cum``.

    ``cum`` is ``np.cumsum(x)`` in 1-D and ``x.cumsum(0).cumsum(1)`` in 2-D; float64 out, one sum per row.
    """
    if cum.ndim == 1:
        C = np.concatenate([[0.0], cum])
        return C[ranges[:, 1] + 1] - C[ranges[:, 0]]
    C = np.zeros((cum.shape[0] + 1, cum.shape[1] + 1))
    C[1:, 1:] = cum
    r1, r2, c1, c2 = ranges.T
    return C[r2 + 1, c2 + 1] - C[r1, c2 + 1] - C[r2 + 1, c1] + C[r1, c1]


def _errors(d: np.ndarray) -> tuple:
    """(mean |d|, mean d^2, number of queries) of the query errors ``d``."""
    return float(np.abs(d).mean()), float((d ** 2).mean()), d.size


def workload_errors(est: np.ndarray, truth: np.ndarray, workloads, ranges: np.ndarray | None) -> dict:
    """{workload: (mean |error|, mean squared error, number of queries)} of ``est`` against ``truth``.

    The all-range workload is computed in 1-D up to :data:`ALLRANGES_LIMIT`
    values and skipped otherwise (k^4/4 rectangles in 2-D).
    """
    e = np.asarray(est, dtype=np.float64) - np.asarray(truth, dtype=np.float64)
    cum = np.cumsum(e) if e.ndim == 1 else e.cumsum(0).cumsum(1)
    out = {}
    for w in workloads:
        if w == "identity":
            out[w] = _errors(e)
        elif w == "prefix":
            out[w] = _errors(cum)
        elif w == "random":
            out[w] = _errors(range_sums(cum, ranges))
        elif w == "allranges":
            if e.ndim == 1 and e.size <= ALLRANGES_LIMIT:
                out[w] = allranges_1d(cum)
        else:
            raise ValueError(f"unknown {e.ndim}-D workload {w!r}")
    return out
