"""Kernels that draw their own noise (_streams): a Python replay of the
derived streams with the plain seeded sampler, fed to the two-step kernels,
gives bit-identical results; the results do not depend on the threads."""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_privacy import Generator, _rng, _streams, _transform, _tree
from blowfish_privacy.mechanisms.cumulative._oh import Forest
from blowfish_privacy.policy.transform import inverse, transform, tree_from_parent

KEY = bytes(range(32))
THREADS = (1, 2, 3, 7)


def _stream(g):
    return _rng.ChaChaStream(_streams.stream_seed(KEY, g))


def test_stream_seed_is_the_c_derivation():
    # the C kernel's stream g is a seeded stream: its draws equal the seed's
    # (checked through a one-chunk ordered release with zero counts)
    hist = np.zeros(50, np.int64)
    cum, n = _streams.ordered_cumulative_streams(hist, KEY, 3, 1, chunk=64)
    noise = _stream(0).discrete_laplace(3, 1, 49)
    want, _ = _tree.ordered_cumulative(hist, noise)
    np.testing.assert_array_equal(cum, want)
    # streams differ from each other and from the key's own stream
    a = _stream(0).random_raw(16)
    b = _stream(1).random_raw(16)
    c = _rng.ChaChaStream(KEY).random_raw(16)
    assert len({a.tobytes(), b.tobytes(), c.tobytes()}) == 3
    with pytest.raises(ValueError):
        _streams.stream_seed(KEY, 2**63)
    with pytest.raises(ValueError):
        _streams.stream_seed(KEY[:31], 0)


def _oh_replay(N, block, f, group, ts, th):
    fo = Forest(N, block, f)
    k, h = fo.k, fo.h
    noise_s = np.zeros(max(k - 1, 0), np.int64)
    levels = {L: [None] * k for L in range(1, h + 1)}
    for g in range(-(-k // group)):
        st = _stream(g)
        b0, b1 = g * group, min(k, (g + 1) * group)
        s1 = min(b1, k - 1)
        if s1 > b0:
            noise_s[b0:s1] = st.discrete_laplace(*ts, s1 - b0)
        sizes = [fo.real(L, block if b < k - 1 else fo.last) for b in range(b0, b1) for L in range(1, h + 1)]
        drawn = np.split(st.discrete_laplace(*th, sum(sizes)), np.cumsum(sizes)[:-1])
        for i, b in enumerate(range(b0, b1)):
            for L in range(1, h + 1):
                levels[L][b] = drawn[i * h + L - 1]
    noise_h = np.concatenate([np.concatenate(levels[L]) for L in range(1, h + 1)])
    return fo, noise_s, noise_h


@pytest.mark.parametrize("N,block,f,group", [(1000, 7, 2, 5), (999, 100, 16, 3), (4096, 16, 16, 1),
                                             (300, 300, 4, 1), (1001, 50, 3, 40)])
def test_oh_streams_equal_the_replayed_two_step_path(N, block, f, group):
    rng = np.random.default_rng(N + block)
    hist = rng.poisson(2.0, N).astype(np.int64)
    ts, th = (7, 2), (13, 3)
    fo, noise_s, noise_h = _oh_replay(N, block, f, group, ts, th)
    want, n = _tree.oh_cumulative(hist, block, f, fo.h, fo.c, noise_s if fo.k > 1 else None, noise_h, 3.0, 9.0)
    for threads in THREADS:
        got, n2 = _streams.oh_cumulative_streams(hist, block, f, fo.h, fo.c, KEY, group,
                                                 ts if fo.k > 1 else None, th, 3.0, 9.0, threads=threads)
        assert n2 == n
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("N,chunk", [(1, 4), (2, 4), (100, 7), (129, 64), (1000, 1000)])
def test_ordered_streams_equal_the_replayed_two_step_path(N, chunk):
    hist = np.random.default_rng(N).poisson(3.0, N).astype(np.int64)
    m = N - 1
    noise = np.concatenate([_stream(g).discrete_laplace(5, 2, min(chunk, m - g * chunk))
                            for g in range(-(-m // chunk))] or [np.zeros(0, np.int64)])
    want, n = _tree.ordered_cumulative(hist, noise)
    for threads in THREADS:
        got, n2 = _streams.ordered_cumulative_streams(hist, KEY, 5, 2, threads=threads, chunk=chunk)
        assert n2 == n
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("N,chunk", [(1, 4), (2, 1), (100, 7), (129, 64), (1000, 1000)])
def test_line_streams_equal_the_replayed_two_step_path(N, chunk):
    x = np.random.default_rng(N).poisson(3.0, N).astype(np.int64)
    noise = np.concatenate([_stream(g).discrete_laplace(9, 4, min(chunk, N - 1 - g * chunk))
                            for g in range(-(-N // chunk))] or [np.zeros(0, np.int64)])
    want = _transform.line_noisy_counts(x, noise)
    for threads in THREADS:
        got = _streams.line_noisy_counts_streams(x, KEY, 9, 4, threads=threads, chunk=chunk)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("N,chunk", [(1, 4), (50, 7), (300, 64)])
def test_nonroot_streams_equal_the_replayed_two_step_path(N, chunk):
    rng = np.random.default_rng(N)
    parent = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, N)], np.int64)
    perm = rng.permutation(N)  # the root anywhere
    inv = np.empty(N, np.int64)
    inv[perm] = np.arange(N)
    parent = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1).astype(np.int64)
    emb = tree_from_parent(parent)
    x = rng.poisson(3.0, N).astype(np.int64)
    noise = []
    for g in range(-(-N // chunk)):
        cnt = int(np.count_nonzero(parent[g * chunk:(g + 1) * chunk] >= 0))
        noise.append(_stream(g).discrete_laplace(4, 1, cnt))
    noise = np.concatenate(noise)
    want = transform(x, emb)
    _transform.add_nonroot(want, parent, noise)
    for threads in THREADS:
        got = transform(x, emb)
        _streams.add_nonroot_streams(got, parent, KEY, 4, 1, threads=threads, chunk=chunk)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(inverse(got, emb), inverse(want, emb))


def test_stream_seed_is_the_rfc_block_with_the_stream_nonce():
    # the RFC 8439 layout: word 12 the counter (0), words 13-15 the nonce
    # (0, g mod 2^32, g // 2^32 + 2^31)
    for g in (0, 1, 2**32 + 5, 2**63 - 1):
        nonce = np.array([0, g & 0xFFFFFFFF, (g >> 32) | 0x80000000], dtype="<u4").tobytes()
        assert _streams.stream_seed(KEY, g) == _rng.chacha20_block(KEY, 0, nonce)[:32]
    words = np.frombuffer(KEY, dtype="<u4").astype(np.uint32)
    assert _streams.stream_seed(words, 9) == _streams.stream_seed(KEY, 9)


def test_a_release_advances_the_generator_once():
    # the kernels take one 8-word key from the generator per release, so a
    # secure generator's streams are secret and a seeded one reproducible
    from blowfish_privacy import Domain, Policy, mechanisms, secrets

    hist = np.random.default_rng(0).poisson(2.0, 5000).astype(np.int64)
    pol = Policy(Domain.ordinal("x", 0, 4999), secrets.DistanceThreshold(50))
    for run in (lambda g: mechanisms.ordered_hierarchical(hist, pol, 1.0, g),
                lambda g: mechanisms.ordered(hist, pol, 1.0, g),
                lambda g: mechanisms.transformed_laplace(hist, pol, 1.0, g)):
        gen, ref = Generator(3), Generator(3)
        run(gen)
        ref.random_raw(8)
        assert gen.random_raw(4).tolist() == ref.random_raw(4).tolist()
    a = mechanisms.ordered_hierarchical(hist, pol, 1.0, Generator(3)).cumulative
    b = mechanisms.ordered_hierarchical(hist, pol, 1.0, Generator(3)).cumulative
    np.testing.assert_array_equal(a, b)
    c = mechanisms.ordered_hierarchical(hist, pol, 1.0, Generator()).cumulative
    d = mechanisms.ordered_hierarchical(hist, pol, 1.0, Generator()).cumulative
    assert not np.array_equal(c, d)


@pytest.mark.parametrize("group", [64, 65, 10**9, 2**62, 2**63 - 1])
def test_more_blocks_per_stream_than_blocks_is_one_stream(group):
    # a hostile group must neither wrap the scratch size nor change the draws: every group >= k is one stream
    h = np.ones(1024, np.int64)
    ref, n = _streams.oh_cumulative_streams(h, 16, 2, 5, 1, KEY, 64, (3, 1), (3, 1), 1.0, 1.0)
    got, n2 = _streams.oh_cumulative_streams(h, 16, 2, 5, 1, KEY, group, (3, 1), (3, 1), 1.0, 1.0)
    assert n == n2 == 1024 and np.array_equal(ref, got)


def test_a_stream_too_large_to_hold_is_refused_before_any_allocation():
    # 2^23 one-bin blocks under trees of width 2^40: the scratch of one stream of every block would be 2^64 words
    with pytest.raises(MemoryError, match="group"):
        _streams.oh_cumulative_streams(np.ones(2**23, np.int64), 1, 2, 41, 1, KEY, 2**23, (3, 1), (3, 1), 1.0, 1.0)


def test_bindings_check_their_inputs():
    h = np.ones(10, np.int64)
    with pytest.raises(ValueError, match="key"):
        _streams.ordered_cumulative_streams(h, KEY[:5], 1, 1)
    with pytest.raises(ValueError, match="scale"):
        _streams.ordered_cumulative_streams(h, KEY, 0, 1)
    with pytest.raises(ValueError, match="non-negative"):
        _streams.ordered_cumulative_streams(-h, KEY, 1, 1)
    with pytest.raises(ValueError, match="threads"):
        _streams.line_noisy_counts_streams(h, KEY, 1, 1, threads=0)
    with pytest.raises(ValueError, match="group"):
        _streams.oh_cumulative_streams(h, 5, 2, 3, 2, KEY, 0, (1, 1), (1, 1), 1.0, 1.0)
    with pytest.raises(ValueError, match="scale_s"):
        _streams.oh_cumulative_streams(h, 5, 2, 3, 2, KEY, 1, None, (1, 1), 1.0, 1.0)
    with pytest.raises(ValueError, match="parent"):
        _streams.add_nonroot_streams(h.copy(), np.zeros(3, np.int64), KEY, 1, 1)
    # counts next to the int64 limit and noise of scale 2^32 - 1: the keys
    # whose noise pushes a sum past the limit raise, the others return
    near = np.array([2**62, 2**62 - 1, 0], np.int64)
    for fn, what in ((lambda key: _streams.ordered_cumulative_streams(near, key, 2**32 - 1, 1), "cumulative"),
                     (lambda key: _streams.line_noisy_counts_streams(near, key, 2**32 - 1, 1), "noisy count")):
        raised = 0
        for i in range(20):
            try:
                fn(bytes([i]) * 32)
            except OverflowError as exc:
                assert what in str(exc)
                raised += 1
        assert 0 < raised < 20
