"""Random bits and exact integer noise.

:class:`Generator` wraps the C core's ChaCha20 keystream (RFC 8439) and the
exact discrete Laplace sampler of Canonne, Kamath and Steinke (2020,
Algorithm 2).  Implementation hazards this avoids (002, "implementation
hazards"): floating-point noise (all noise is integer, sampled in integer
arithmetic), weak randomness (a cryptographic keystream keyed by the
operating system) and timing channels from the data (the noise vector is
drawn completely before the data are read).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import overload

import numpy as np
import numpy.typing as npt

from . import _rng
from ._validation import as_fraction, as_int, as_int64_array, as_size, check_epsilon
from ._typing import Real
from .errors import ParameterError

#: An output shape: one int or a tuple of ints.
_Size = int | tuple[int, ...]

#: Largest numerator or denominator of a sampler scale.
MAX_SCALE_PART: int = int(_rng.MAX_SCALE_PART)
#: Largest scale the sampler accepts.
MAX_SCALE: int = MAX_SCALE_PART

#: Batches of at least BATCH_PARALLEL_MIN samples are cut into chunks of
#: BATCH_CHUNK; chunk i is drawn from a child stream keyed by the i-th
#: 256-bit key (8 words) read from the parent stream, so the output does not
#: depend on the number of threads, and threads share nothing.  Package
#: code that regenerates such a batch chunk by chunk (DAWA's partition)
#: relies on this layout.
BATCH_CHUNK: int = 1 << 18
BATCH_PARALLEL_MIN: int = 1 << 20


def _default_threads() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)


def _farey_bracket(x: Fraction, max_den: int) -> tuple[Fraction, Fraction]:
    """Closest fractions below and above ``x`` with denominators <= max_den.

    Walks the continued fraction of ``x``; the last convergent and the
    largest admissible semiconvergent are Farey neighbours of order
    ``max_den`` on either side of ``x``, hence the best one-sided bounds.
    """
    if x.denominator <= max_den:
        return x, x
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = x.numerator, x.denominator
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_den:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_den - q0) // q1
    b1 = Fraction(p0 + k * p1, q0 + k * q1)
    b2 = Fraction(p1, q1)
    return (b1, b2) if b1 < b2 else (b2, b1)


def round_scale_up(scale: Real, name: str = "scale") -> Fraction:
    """The smallest rational t/s >= ``scale`` with 1 <= t, s <= MAX_SCALE_PART.

    Rounding the scale *up* means the noise is never smaller than asked, so
    the epsilon actually spent is never more than the epsilon asked.

    Parameters
    ----------
    scale : float, int or fractions.Fraction
        Positive and finite.

    Raises
    ------
    ValueError
        If ``scale`` is not positive and finite or exceeds ``MAX_SCALE``.
    """
    if on_grid(scale):  # a scale the sampler takes exactly (every plan's): nothing to check or round
        return scale
    return _round_up(as_fraction(scale, name), name)


def on_grid(scale: Real) -> bool:
    """Whether ``scale`` is a Fraction t/s with 1 <= t, s <= MAX_SCALE_PART: what the sampler takes as is.

    Every scale a :class:`Calibration` holds is one, so a plan's scales
    reach the sampler unchecked (the C layer keeps its own checks).
    """
    return (type(scale) is Fraction and 0 < scale.numerator <= MAX_SCALE_PART
            and scale.denominator <= MAX_SCALE_PART)


def _round_up(x: Fraction, name: str) -> Fraction:
    """:func:`round_scale_up` of a positive Fraction ``x``; refuses one above the sampler's largest scale."""
    if x > MAX_SCALE:
        raise ParameterError(
            name, f"{name} must be at most {MAX_SCALE} (the sampler's largest scale), got "
            f"{float(x) if x < 1e300 else 'more than 1e300'!r}"
        )
    if x <= 1:
        return _farey_bracket(x, MAX_SCALE_PART)[1]
    lo = _farey_bracket(1 / x, MAX_SCALE_PART)[0]
    return 1 / lo


def discrete_laplace_variance(scale: Fraction) -> float:
    """Variance of the discrete Laplace with P(z) proportional to exp(-|z|/scale).

    2 p / (1 - p)^2 with p = exp(-1/scale); slightly below the continuous
    Laplace's 2 scale^2.
    """
    if scale == 0:
        return 0.0
    p = math.exp(-1.0 / float(scale))
    return 2.0 * p / (-math.expm1(-1.0 / float(scale))) ** 2


@dataclass(frozen=True)
class Calibration:
    """Noise scale for a sensitivity and an epsilon, with the exact spend.

    ``scale`` is ``sensitivity / epsilon`` rounded *up* to a ratio of
    integers below 2**32; ``epsilon_exact = sensitivity / scale`` is then
    never more than the epsilon asked.
    """

    sensitivity: Fraction
    epsilon_requested: Fraction
    scale: Fraction
    epsilon_exact: Fraction

    @property
    def epsilon(self) -> float:
        return float(self.epsilon_exact)


def calibrate(sensitivity: Real, epsilon: Real) -> Calibration:
    """Scale of discrete Laplace noise for ``sensitivity`` and ``epsilon``.

    A sensitivity of 0 needs no noise: the scale and the spend are 0.

    Parameters
    ----------
    sensitivity : int, float or Fraction, >= 0
    epsilon : float or Fraction, > 0

    Returns
    -------
    Calibration
        The scale ``sensitivity / epsilon`` rounded up to a rational the
        sampler takes exactly, and the epsilon actually spent
        (``sensitivity / scale`` <= ``epsilon``).  Nothing is released.

    Privacy
    -------
    None by itself: the noise of this scale added to a query of L1
    sensitivity at most ``sensitivity`` under a policy P gives
    (epsilon_exact, P)-Blowfish privacy (000 Thm 5.1).

    Sensitivity
    -----------
    Given by the caller; every mechanism passes its proven value.

    Runtime
    -------
    O(1) (exact rational arithmetic).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.* SIGMOD 2014 (paper 000), Thm 5.1.
    .. [2] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Algorithm 2 (the exact discrete Laplace sampler) (the scale as a rational s/r).
    """
    return calibration(as_fraction(sensitivity, "sensitivity", allow_zero=True), check_epsilon(epsilon))


def calibration(sensitivity: Real, epsilon: Fraction) -> Calibration:
    """:func:`calibrate` for a plan that has checked its epsilon (:func:`check_epsilon`) and proven its sensitivity.

    Nothing is validated again: ``epsilon`` is a positive Fraction at most
    the largest float, ``sensitivity`` a non-negative int or Fraction (a
    proven value, never the caller's input).  A scale above the sampler's
    largest is still refused (ParameterError naming ``sensitivity /
    epsilon``): that is the plan's limit, not a check of its inputs.
    """
    sens = Fraction(sensitivity)
    if sens == 0:
        return Calibration(sens, epsilon, Fraction(0), Fraction(0))
    scale = _round_up(sens / epsilon, "sensitivity / epsilon")
    return Calibration(sens, epsilon, scale, sens / scale)


class Generator:
    """Source of randomness for every mechanism.

    Parameters
    ----------
    seed : int or None
        ``None`` (the default) gives a *secure* generator: a ChaCha20
        keystream keyed from the operating system's entropy and re-keyed in
        a forked child.  An integer in [0, 2**256) gives a reproducible
        stream for tests and benchmarks; releases made with it record that
        they are not secure.
    threads : int or None
        Threads for large batches (>= 2**20 samples); default: the CPUs this
        process may use.  The output is the same for any number of threads.

    Examples
    --------
    >>> from blowfish_privacy import Generator
    >>> g = Generator(seed=7)
    >>> g.discrete_laplace(2.5, size=3).dtype
    dtype('int64')
    """

    def __init__(self, seed: int | None = None, *, threads: int | None = None) -> None:
        self._threads = _default_threads() if threads is None else as_int(threads, "threads", minimum=1)
        if seed is None:
            self._seed = None
            self._stream = _rng.ChaChaStream(None)
        else:
            seed = as_int(seed, "seed", minimum=0)
            if seed >= 2**256:
                raise ValueError(f"seed must be an integer in [0, 2**256), got {seed}")
            self._seed = seed
            self._stream = _rng.ChaChaStream(seed.to_bytes(32, "little"))

    @property
    def is_secure(self) -> bool:
        """True when keyed from the operating system (``seed=None``)."""
        return self._seed is None

    @property
    def seed(self) -> int | None:
        return self._seed

    @property
    def threads(self) -> int:
        """Threads used for large batches (the output does not depend on it)."""
        return self._threads

    def __repr__(self) -> str:
        kind = "secure" if self.is_secure else f"seeded, seed={self._seed}"
        return f"Generator({kind})"

    def __reduce__(self):
        raise TypeError("a Generator cannot be pickled: the copy would repeat its output")

    @staticmethod
    def effective_scale(scale: Real) -> Fraction:
        """The rational scale actually used for ``scale`` (rounded up)."""
        return round_scale_up(scale)

    @overload
    def discrete_laplace(self, scale: Real, size: None = None) -> int: ...
    @overload
    def discrete_laplace(self, scale: Real, size: _Size) -> npt.NDArray[np.int64]: ...
    @overload
    def discrete_laplace(self, scale: Real, size: _Size | None = None) -> int | npt.NDArray[np.int64]: ...

    def discrete_laplace(self, scale: Real, size: _Size | None = None) -> int | npt.NDArray[np.int64]:
        """Exact discrete Laplace noise: P(Z = z) proportional to exp(-|z|/scale).

        Parameters
        ----------
        scale : float, int or fractions.Fraction
            Positive and finite, at most ``MAX_SCALE``.  A scale that is not a
            ratio of integers below 2**32 is rounded *up* to the nearest one
            (see :meth:`effective_scale`).
        size : int, tuple of int or None
            Output shape; ``None`` returns one Python int.

        Returns
        -------
        numpy.ndarray of int64 with shape ``size``, or int.
        """
        frac = round_scale_up(scale)
        shape = as_size(size)
        n = math.prod(shape)
        out = self._noise(frac, n)
        if size is None:
            return int(out[0]) if n else 0
        return out.reshape(shape)

    def add_discrete_laplace(self, values: npt.ArrayLike, scale: Real) -> npt.NDArray[np.int64]:
        """``values`` plus independent discrete Laplace noise, as a new array.

        The whole noise vector is drawn before ``values`` is read, so the
        sampler's running time carries no information about the data.

        Parameters
        ----------
        values : array_like of int
            Any shape; integer dtype (floats are refused: put real values on
            an integer grid first).
        scale : float, int or fractions.Fraction
            As for :meth:`discrete_laplace`.

        Returns
        -------
        numpy.ndarray of int64, same shape as ``values``.

        Raises
        ------
        OverflowError
            If a noisy value does not fit int64 (nothing is returned).
        """
        arr = as_int64_array(values, "values")
        frac = round_scale_up(scale)
        flat = arr.reshape(-1)
        if flat.size < BATCH_PARALLEL_MIN:
            out = self._stream.add_discrete_laplace(flat, frac.numerator, frac.denominator)
        else:
            out = self._noise(frac, flat.size)  # all noise first, then the data
            _rng.add_int64_checked(flat, out)
        return out.reshape(arr.shape)

    def _noise(self, frac: Fraction, n: int) -> np.ndarray:
        """n draws of scale ``frac``; chunked over threads for large n."""
        t, s = frac.numerator, frac.denominator
        if n < BATCH_PARALLEL_MIN:
            return self._stream.discrete_laplace(t, s, n)
        nchunks = -(-n // BATCH_CHUNK)
        keys = self._stream.random_raw(8 * nchunks).reshape(nchunks, 8)
        out = np.empty(n, dtype=np.int64)

        def work(i: int) -> None:
            child = _rng.ChaChaStream(keys[i].tobytes())
            child.fill_discrete_laplace(t, s, out[i * BATCH_CHUNK : (i + 1) * BATCH_CHUNK])

        if self._threads == 1:
            for i in range(nchunks):
                work(i)
        else:
            with ThreadPoolExecutor(max_workers=min(self._threads, nchunks)) as pool:
                list(pool.map(work, range(nchunks)))
        keys.fill(0)
        return out

    @overload
    def random_raw(self, size: None = None) -> int: ...
    @overload
    def random_raw(self, size: _Size) -> npt.NDArray[np.uint32]: ...
    @overload
    def random_raw(self, size: _Size | None = None) -> int | npt.NDArray[np.uint32]: ...

    def random_raw(self, size: _Size | None = None) -> int | npt.NDArray[np.uint32]:
        """Raw keystream words (uint32), e.g. to compare two streams."""
        shape = as_size(size)
        out = self._stream.random_raw(math.prod(shape))
        return int(out[0]) if size is None else out.reshape(shape)

    @overload
    def integers(self, high: int, size: None = None) -> int: ...
    @overload
    def integers(self, high: int, size: _Size) -> npt.NDArray[np.int64]: ...
    @overload
    def integers(self, high: int, size: _Size | None = None) -> int | npt.NDArray[np.int64]: ...

    def integers(self, high: int, size: _Size | None = None) -> int | npt.NDArray[np.int64]:
        """Exactly uniform integers on [0, high) as int64 (``high`` <= 2**63)."""
        high = as_int(high, "high", minimum=1)
        if high > 2**63:
            raise ValueError(f"high must be at most 2**63, got {high}")
        shape = as_size(size)
        out = self._stream.uniform(high, math.prod(shape)).astype(np.int64)
        return int(out[0]) if size is None else out.reshape(shape)

    @overload
    def bernoulli_exp(self, gamma: Real, size: None = None) -> int: ...
    @overload
    def bernoulli_exp(self, gamma: Real, size: _Size) -> npt.NDArray[np.uint8]: ...
    @overload
    def bernoulli_exp(self, gamma: Real, size: _Size | None = None) -> int | npt.NDArray[np.uint8]: ...

    def bernoulli_exp(self, gamma: Real, size: _Size | None = None) -> int | npt.NDArray[np.uint8]:
        """Exact Bernoulli(exp(-gamma)) draws for rational gamma >= 0 (uint8).

        CKS 2020 Algorithm 1; exposed for tests and for mechanisms that need
        exact coin flips.
        """
        g = as_fraction(gamma, "gamma", allow_zero=True)
        if g.numerator >= 2**64 or g.denominator >= 2**64:
            raise ValueError(f"gamma must be a ratio of integers below 2**64, got {g}")
        shape = as_size(size)
        out = self._stream.bernoulli_exp(g.numerator, g.denominator, math.prod(shape))
        return int(out[0]) if size is None else out.reshape(shape)


def as_generator(generator: Generator | None, name: str = "generator") -> Generator:
    """``generator`` itself, or a new secure Generator when it is None."""
    if generator is None:
        return Generator()
    if not isinstance(generator, Generator):
        raise TypeError(
            f"{name} must be a blowfish_privacy.Generator or None, got {type(generator).__name__}"
        )
    return generator


__all__ = [
    "BATCH_CHUNK",
    "BATCH_PARALLEL_MIN",
    "Calibration",
    "calibration",
    "on_grid",
    "Generator",
    "MAX_SCALE",
    "as_generator",
    "calibrate",
    "discrete_laplace_variance",
    "round_scale_up",
]
