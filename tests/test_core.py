"""The C core through its bindings: ChaCha20 against RFC 8439, the lane-parallel
kernel against the one-block reference, and the uniform integer draw."""

import numpy as np
import pytest
from scipy import stats

from blowfish_privacy import _rng

# RFC 8439 section 2.3.2 and appendix A.1 (block tests 1-3):
# (key, counter, nonce, keystream block)
RFC8439_BLOCKS = [
    (
        bytes(range(32)),
        1,
        bytes.fromhex("000000090000004a00000000"),
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e",
    ),
    (
        bytes(32),
        0,
        bytes(12),
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586",
    ),
    (
        bytes(32),
        1,
        bytes(12),
        "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
        "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f",
    ),
    (
        bytes(31) + b"\x01",
        1,
        bytes(12),
        "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
        "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0",
    ),
]


@pytest.mark.parametrize("key,counter,nonce,expected", RFC8439_BLOCKS)
def test_chacha20_block_rfc8439(key, counter, nonce, expected):
    assert _rng.chacha20_block(key, counter, nonce).hex() == expected


@pytest.mark.parametrize("counter", [0, 1, 2**32 - 3, 2**40 + 5])
def test_blocks8_matches_single_block(counter):
    key = bytes(range(100, 132))
    nonce8 = bytes.fromhex("0123456789abcdef")
    got = _rng.chacha20_blocks8(key, counter, nonce8)
    want = b"".join(
        _rng.chacha20_block(
            key, (counter + i) & 0xFFFFFFFF, ((counter + i) >> 32).to_bytes(4, "little") + nonce8
        )
        for i in range(8)
    )
    assert got == want


def test_stream_is_deterministic_for_a_seed_and_differs_across_seeds():
    a = _rng.ChaChaStream(bytes(32)).random_raw(5000)
    b = _rng.ChaChaStream(bytes(32)).random_raw(5000)
    c = _rng.ChaChaStream(bytes(31) + b"\x01").random_raw(5000)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_stream_words_look_uniform():
    # Byte frequencies of 4 MB of keystream; alpha 1e-6.
    words = _rng.ChaChaStream(bytes(32)).random_raw(1 << 20)
    counts = np.bincount(words.view(np.uint8), minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-6


@pytest.mark.parametrize("bound", [1, 2, 7, 1000, 2**32 - 1, 2**32 + 1, 3 * 2**61])
def test_uniform_is_uniform(bound):
    x = _rng.ChaChaStream(bytes(range(32))).uniform(bound, 200_000)
    assert int(x.max()) < bound
    k = min(bound, 64)
    if k == 1:
        assert not x.any()
        return
    # k bins [bound*j//k, bound*(j+1)//k), chi-square with alpha 1e-6
    edges = np.array([(bound * j) // k for j in range(k + 1)], dtype=np.uint64)
    counts = np.bincount(np.searchsorted(edges[1:-1], x, side="right"), minlength=k)
    probs = np.diff(edges.astype(object)).astype(np.float64) / bound
    assert stats.chisquare(counts, probs * x.size).pvalue > 1e-6


def test_scale_bounds_are_checked():
    s = _rng.ChaChaStream(bytes(32))
    with pytest.raises(ValueError):
        s.discrete_laplace(0, 1, 3)
    with pytest.raises(ValueError):
        s.discrete_laplace(1, 2**32, 3)
    with pytest.raises(OverflowError):
        s.discrete_laplace(-1, 1, 3)


def test_pickling_a_stream_is_refused():
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(_rng.ChaChaStream(None))
