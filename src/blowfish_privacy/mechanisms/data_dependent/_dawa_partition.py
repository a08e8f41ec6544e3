"""The engine of DAWA's private partition (step 1 of :mod:`.dawa`).

Drives the C kernel of csrc/dawa.h (``_dawa.DawaStream``): the dynamic
program over the end points in chunks, every length's scores computed by a
sliding window whose state is the window's count per distinct value (at
most ``_dawa.FEW`` of them) or else its set of ranks (a 64-ary bit tree of
about |T|/4 bytes per length, whatever the values), the noise of each
interval regenerated from the generator's child streams when its chunk is
scored.  Also the O(n^2) references the tests and benchmarks compare with.

The names here are package-internal: :mod:`.dawa` is the public module.
Li, Hay, Miklau, Wang, "A Data- and Workload-Aware Algorithm for Range
Queries Under Differential Privacy", PVLDB 2014, Sec 3.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np

from ... import _dawa
from ..._validation import as_fraction
from ...noise import BATCH_CHUNK, BATCH_PARALLEL_MIN, Generator
from ..histogram import check_histogram
from ..plan import int64_bytes

__all__ = [
    "WIDTH",
    "buckets_from_starts",
    "check_partition_input",
    "exact_partition",
    "memory_bytes",
    "partition_cost",
    "partition_run",
    "partition_streamed",
    "partition_with_noise",
    "ranks",
    "run_stream",
    "stream_inputs",
]

#: End points per chunk of the streamed dynamic program (rows of scores: levels x WIDTH doubles).
WIDTH = 1 << 16

#: Lengths up to this scan their window (no bit tree): BF_DAWA_DIRECT in csrc/dawa.h.
_DIRECT = _dawa.DIRECT


def buckets_from_starts(starts: np.ndarray, n: int) -> np.ndarray:
    """Bucket index (int64, shape (n,)) of every value, from the increasing bucket starts."""
    marks = np.zeros(n, dtype=np.int64)
    marks[starts[1:]] = 1
    return np.cumsum(marks, out=marks)


def ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank, sorted_vals) of int64 counts x, shape (n,) each.

    ``sorted_vals`` is x in ascending order (int64) and ``rank`` (int32) a
    permutation of 0..n-1 with ``sorted_vals[rank] == x`` (ties by index).
    The reference kernel ``_dawa.dawa_partition`` takes ``rank`` as int64.
    A stable LSD radix sort in C (csrc/dawa.h): O(n) a pass, one pass per 11
    bits of the largest count.
    """
    return _dawa.dawa_ranks(x)


#: Counts below this are tallied directly (np.bincount) to find few distinct values.
_TALLY_MAX = 1 << 20


def stream_inputs(x: np.ndarray) -> tuple:
    """(rank, sorted_vals, g, u): how ``_dawa.DawaStream`` describes counts x.

    With at most ``_dawa.FEW`` distinct values, ``u`` (int64, increasing)
    holds them and ``g`` (int32, shape (n,)) the index of each count in
    ``u`` (rank and sorted_vals None: each length counts per value);
    otherwise ``rank`` and ``sorted_vals`` as :func:`ranks` gives them
    (g and u None: each length keeps its window's set of ranks).  Small
    counts are tallied (O(n + max)), others sorted.
    """
    top = int(x.max())
    if top < _TALLY_MAX:
        u = np.flatnonzero(np.bincount(x))
        if u.size <= _dawa.FEW:
            lookup = np.zeros(top + 1, dtype=np.int32)
            lookup[u] = np.arange(u.size, dtype=np.int32)
            return None, None, lookup[x], u.astype(np.int64)
    rank, sorted_vals = ranks(x)
    change = sorted_vals[1:] != sorted_vals[:-1]
    if 1 + int(np.count_nonzero(change)) > _dawa.FEW:
        return rank, sorted_vals, None, None
    new = np.flatnonzero(change) + 1
    u = np.ascontiguousarray(np.r_[sorted_vals[:1], sorted_vals[new]])
    del sorted_vals, change
    group = np.zeros(x.size, dtype=np.int32)
    group[new] = 1
    np.cumsum(group, out=group)
    return None, None, group[rank], u


def check_partition_input(hist) -> np.ndarray:
    """The histogram as int64 counts whose products with |T| stay exact in the kernel."""
    hist = check_histogram(hist)
    if int(hist.max()) * hist.size >= 2**62:
        raise ValueError(
            f"hist is too large for the exact integer comparisons of the partition kernel: "
            f"max count times |T| = {hist.size} must stay below 2**62"
        )
    return hist


def run_stream(stream, threads: int) -> np.ndarray:
    """Drive a ``_dawa.DawaStream``: every chunk's levels (split over threads), then its DP."""
    n, nlev = stream.n, stream.n_levels
    threads = max(1, min(threads, nlev))
    groups = [list(range(1 + i, nlev + 1, threads)) for i in range(threads)]
    groups = [grp for grp in groups if grp]
    pool = ThreadPoolExecutor(max_workers=len(groups)) if len(groups) > 1 else None
    try:
        for e0 in range(1, n + 1, stream.width):
            e1 = min(e0 + stream.width, n + 1)
            if pool is None:
                for grp in groups:
                    stream.levels(e0, e1, grp)
            else:
                list(pool.map(lambda grp: stream.levels(e0, e1, grp), groups))
            stream.dp(e0, e1)
    finally:
        if pool is not None:
            pool.shutdown()
    return stream.starts()


def partition_with_noise(hist, noise, penalty: float, *, threads: int = 1, single_noise=None) -> np.ndarray:
    """Bucket starts of the least-score dyadic partition given the noise of every interval.

    ``noise`` has ``_dawa.dawa_n_intervals(len(hist))`` finite entries
    (lengths 2, 4, ... in order, by start); ``single_noise`` (|T| finite
    entries) is the noise of the one-value buckets, whose deviation is 0
    (None: they cost the penalty alone, as with zero noise).  With zero noise this is the
    exact minimum-cost partition into dyadic-length intervals.  ``hist``
    must be non-negative integer counts (checked: the kernel's integer
    arithmetic assumes it), ``penalty`` finite and >= 0.  The dynamic
    program runs in chunks of end points (``_dawa.DawaStream``); the result
    is that of ``_dawa.dawa_partition`` on the same inputs.

    Returns
    -------
    numpy.ndarray of int64
        First index of every bucket, increasing, starting at 0.
    """
    hist = check_partition_input(hist)
    pen = float(as_fraction(penalty, "penalty", allow_zero=True))
    expected = _dawa.dawa_n_intervals(hist.size)
    noise = np.asarray(noise)
    if noise.shape != (expected,):
        raise ValueError(f"noise must have one entry per candidate interval ({expected}), got shape {noise.shape}")
    if noise.dtype.kind not in "iuf":
        raise TypeError(f"noise must hold real numbers, got dtype {noise.dtype}")
    scores = np.ascontiguousarray(noise, dtype=np.float64)  # DawaStream checks it is finite
    if single_noise is not None:
        single_noise = np.asarray(single_noise)
        if single_noise.shape != hist.shape:
            raise ValueError(f"single_noise must have one entry per value ({hist.size}), got shape "
                             f"{single_noise.shape}")
        if single_noise.dtype.kind not in "iuf":
            raise TypeError(f"single_noise must hold real numbers, got dtype {single_noise.dtype}")
        single_noise = np.ascontiguousarray(single_noise, dtype=np.float64)
    rank, sorted_vals, g, u = stream_inputs(hist)
    stream = _dawa.DawaStream(hist, rank, sorted_vals, pen, scores, None, width=WIDTH, g=g, u=u,
                              single_noise=single_noise)
    return run_stream(stream, threads)


def partition_streamed(hist: np.ndarray, scale: Fraction, penalty: float, gen: Generator) -> np.ndarray:
    """The partition with the noise of :meth:`Generator.discrete_laplace` drawn as each chunk needs it.

    For ``N = dawa_n_intervals(|T|) >= noise.BATCH_PARALLEL_MIN`` the
    generator draws a batch from child streams keyed by 8 words each, read
    in order from its own stream (``noise.BATCH_CHUNK`` values per child);
    the keys are read here, before the data, and each level regenerates its
    child chunks as it reaches them, so the noise (and the partition) are
    those of ``partition_with_noise(hist, gen.discrete_laplace(scale, N), penalty,
    single_noise=gen.discrete_laplace(scale, |T|))``.
    """
    N = _dawa.dawa_n_intervals(hist.size)
    frac = gen.effective_scale(scale)
    nchunks = -(-N // BATCH_CHUNK)
    keys = gen.random_raw(8 * nchunks)  # the words Generator.discrete_laplace(scale, N) reads first
    single = gen.discrete_laplace(scale, size=hist.size).astype(np.float64)  # one-value buckets, before the data
    try:
        hist = check_partition_input(hist)
        rank, sorted_vals, g, u = stream_inputs(hist)
        stream = _dawa.DawaStream(hist, rank, sorted_vals, penalty, None, keys, frac.numerator,
                                  frac.denominator, BATCH_CHUNK, WIDTH, g=g, u=u, single_noise=single)
        del rank, sorted_vals, g, u, single
        return run_stream(stream, gen.threads)
    finally:
        keys.fill(0)


def partition_run(hist: np.ndarray, scale: Fraction, penalty: float, gen: Generator) -> np.ndarray:
    """Bucket starts of the private partition: noise of ``scale`` on every interval's cost.

    Every candidate bucket carries its own noise, the one-value buckets
    included: their deviation is 0 whatever the data, but the noisy-min
    argument moves the noise of the output's bucket that holds the changed
    value, so that bucket must have noise to move (without it the loss grows
    with |T|).

    Below ``noise.BATCH_PARALLEL_MIN`` intervals the whole noise vector is
    drawn first, before the data; above, the same noise chunk by chunk.
    """
    N = _dawa.dawa_n_intervals(hist.size)
    if N < BATCH_PARALLEL_MIN:
        noise = gen.discrete_laplace(scale, size=N)  # before the data
        single = gen.discrete_laplace(scale, size=hist.size)
        return partition_with_noise(hist, noise, penalty, single_noise=single)
    return partition_streamed(hist, scale, penalty, gen)


def _level_words(n: int, length: int) -> int:
    """int64 words of one length's bit tree (as bf_dawa_level_words)."""
    if length <= _DIRECT:
        return 0
    words, size, j = 0, n, 0
    while True:
        w = -(-size // 64)
        words += w * (2 if j == 0 else 3)
        if size <= 64:
            return words
        size, j = w, j + 1


def memory_bytes(N: int) -> int:
    """Upper estimate of the partition and release memory for |T| = N, whatever the counts."""
    levels = max(N.bit_length() - 1, 0)
    trees = sum(_level_words(N, 1 << k) for k in range(1, levels + 1))
    rows = levels * WIDTH
    n_int = _dawa.dawa_n_intervals(N)
    noise = levels * BATCH_CHUNK if n_int >= BATCH_PARALLEL_MIN else 2 * n_int
    # ranks and sorted values with the sort's scratch, the DP (best, back),
    # the starts, buckets and the released float64 histogram; the stream's
    # copies of its inputs and the one-value buckets' noise and scores
    return int64_bytes(10 * N + trees + rows + noise)


def partition_cost(hist, starts, penalty: float) -> float:
    """Noise-free cost sum over buckets of (dev(B) + penalty) (O(n), a reference)."""
    x = np.asarray(hist, dtype=np.float64)
    bounds = list(np.asarray(starts).tolist()) + [x.size]
    total = 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = x[a:b]
        total += float(np.abs(seg - seg.mean()).sum()) + penalty
    return total


def exact_partition(hist, penalty: float) -> tuple[float, np.ndarray]:
    """O(n^2) dynamic-programming reference: least cost over dyadic-length partitions.

    Costs every candidate interval directly (numpy), for tests and
    benchmarks on small inputs.  Returns (cost, starts).
    """
    x = np.asarray(hist, dtype=np.float64)
    n = x.size
    best = np.full(n + 1, np.inf)
    back = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    for e in range(1, n + 1):
        L = 1
        while L <= e:
            seg = x[e - L : e]
            c = best[e - L] + float(np.abs(seg - seg.mean()).sum()) + penalty
            if c <= best[e]:
                best[e], back[e] = c, e - L
            L *= 2
    starts = []
    e = n
    while e > 0:
        starts.append(int(back[e]))
        e = int(back[e])
    return float(best[n]), np.array(starts[::-1], dtype=np.int64)
