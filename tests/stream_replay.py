"""Python replays of the noise that the kernels draw inside (_streams).

Each function re-derives, from the release key, the noise of one kernel
with plain seeded streams (``ChaChaStream(stream_seed(key, g))``) in the
order that kernel documents, and returns it in the layout of the two-step
kernels (the noise vectors the mechanisms drew before).
:class:`ReplayGenerator` hands such vectors to a mechanism's value-by-value
path, so that its estimates can be compared bit for bit with the fused
path's.
"""

from __future__ import annotations

import numpy as np

from blowfish_privacy import Generator, _rng, _streams
from blowfish_privacy.mechanisms.cumulative._oh import Forest
from blowfish_privacy.noise import round_scale_up


def _ts(scale):
    frac = round_scale_up(scale)
    return frac.numerator, frac.denominator


def stream(key, g):
    return _rng.ChaChaStream(_streams.stream_seed(key, g))


def key_of(seed: int) -> bytes:
    """The key a release takes first from ``Generator(seed)``."""
    return Generator(seed).random_raw(8).astype("<u4").tobytes()


def oh_noise(key, N, block, f, group, scale_s, scale_h):
    """(noise_s, noise_h) of the OH kernel in the layout of _tree.oh_cumulative."""
    fo = Forest(N, block, f)
    k, h = fo.k, fo.h
    noise_s = np.zeros(max(k - 1, 0), np.int64)
    levels = {L: [None] * k for L in range(1, h + 1)}
    for g in range(-(-k // group)):
        st = stream(key, g)
        b0, b1 = g * group, min(k, (g + 1) * group)
        s1 = min(b1, k - 1)
        if s1 > b0:
            noise_s[b0:s1] = st.discrete_laplace(*_ts(scale_s), s1 - b0)
        sizes = [fo.real(L, block if b < k - 1 else fo.last) for b in range(b0, b1) for L in range(1, h + 1)]
        drawn = np.split(st.discrete_laplace(*_ts(scale_h), sum(sizes)), np.cumsum(sizes)[:-1])
        for i, b in enumerate(range(b0, b1)):
            for L in range(1, h + 1):
                levels[L][b] = drawn[i * h + L - 1]
    noise_h = np.concatenate([np.concatenate(levels[L]) for L in range(1, h + 1)])
    return noise_s, noise_h


def chunked_noise(key, counts, scale):
    """Chunk g's ``counts[g]`` values from stream g, concatenated (ordered, line, non-root)."""
    parts = [stream(key, g).discrete_laplace(*_ts(scale), int(c)) for g, c in enumerate(counts)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def ordered_noise(key, n_bins, scale, chunk=_streams.STREAM_CELLS):
    m = n_bins - 1
    return chunked_noise(key, [min(chunk, m - i) for i in range(0, m, chunk)], scale)


def line_noise(key, n, scale, chunk=_streams.STREAM_CELLS):
    return chunked_noise(key, [min(chunk, n - 1 - v) for v in range(0, n, chunk)], scale)


def nonroot_noise(key, parent, scale, chunk=_streams.STREAM_CELLS):
    counts = [int(np.count_nonzero(parent[v:v + chunk] >= 0)) for v in range(0, parent.size, chunk)]
    return chunked_noise(key, counts, scale)


class ReplayGenerator(Generator):
    """``add_discrete_laplace`` adds the given noise vectors, one per call, in order."""

    def __init__(self, noises):
        super().__init__(seed=0, threads=1)
        self._noises = list(noises)

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, dtype=np.int64)
        noise = self._noises.pop(0)
        assert noise.size == arr.size, (noise.size, arr.size)
        return arr + noise.reshape(arr.shape)
