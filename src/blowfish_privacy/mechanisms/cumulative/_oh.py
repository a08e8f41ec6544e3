"""The ordered hierarchical (OH) engine: the forest of block trees, its plan and release.

Private, shared by :func:`.cumulative.ordered_hierarchical` and
:func:`.cumulative.hierarchical` (one block): the shape of the per-block
trees (:class:`Forest`), the budget split and calibrations from public
inputs (:func:`oh_plan`, 000 Sec 7.2, Thm 7.2, eq. 13-15 of He,
Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014, with the corrected
budget for H_1 of DEVELOPERS.md), and the measure step: noise on every
released node, consistency (Hay, Rastogi, Miklau, Suciu, VLDB 2010) and
isotonic regression onto cumulative counts.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ... import _isotonic, _streams, _tree
from ..._validation import check_epsilon
from ...noise import Generator, calibration, discrete_laplace_variance, round_scale_up
from ..plan import NoisePart, Plan, check_memory, int64_bytes
from .._trees import tree_height
from ._common import CumulativeRelease, as_histogram


def _tail_sum(L: int, w: int, n1: int) -> int:
    """Sum over t = 1 .. m of x_t (n1 - x_t), x_t = L - t w > 0 (m = ceil(L / w) - 1), in closed form."""
    m = max(-(-L // w) - 1, 0)
    s1 = m * L - w * (m * (m + 1) // 2)
    s2 = m * L * L - L * w * m * (m + 1) + w * w * (m * (m + 1) * (2 * m + 1) // 6)
    return n1 * s1 - s2


class Forest:
    """Shape of the per-block trees of the OH structure.

    Every block of ``block`` bins (the last may be shorter) gets a tree of
    height h = ceil(log_f block) whose root has c = ceil(block / f^(h-1))
    children and whose other nodes have f: at level L >= 1 a block has
    c f^(L-1) nodes of width w_L = f^(h-L) bins.  A root fan-out of c <= f
    keeps the padding below one subtree; the root is never released (it
    is s_i - s_{i-1}), so this changes no sensitivity.
    """

    def __init__(self, n_bins: int, block: int, f: int):
        self.n_bins, self.block, self.f = n_bins, block, f
        self.k = -(-n_bins // block)
        self.h = tree_height(block, f)
        self.c = -(-block // f ** (self.h - 1)) if self.h else 1
        self.last = n_bins - block * (self.k - 1)
        self.width = self.c * f ** (self.h - 1) if self.h else 1

    def per_block(self, level: int) -> int:
        return self.c * self.f ** (level - 1)

    def node_width(self, level: int) -> int:
        return self.f ** (self.h - level)

    def fanout(self, level: int) -> int:
        """Children per node at ``level`` (level 0 is the root)."""
        return self.c if level == 0 else self.f

    def real(self, level: int, length: int) -> int:
        """Nodes of a block of ``length`` bins at ``level`` that cover real bins."""
        return -(-length // self.node_width(level))

    def usage(self, level: int, length: int) -> np.ndarray:
        """How many prefix estimates of one block use each real node at ``level``.

        A node covering local bins [a, a+w), whose parent covers
        [p, p + f w), serves the prefix of length r iff a + w <= r < p + f w,
        for 1 <= r <= length - 1 (r = length is the S node's).
        """
        w, f = self.node_width(level), self.f
        j = np.arange(self.real(level, length), dtype=np.int64)
        a = j * w
        p = (j // f) * f * w
        return np.maximum(np.minimum(p + f * w - 1, length - 1) - (a + w) + 1, 0)

    def usage_sum(self, level: int) -> float:
        """Sum of A (N + 1 - A) over all real nodes at ``level``, in O(1) (exact integers).

        At level 1 the nodes of a block of L bins have A = L - (j + 1) w
        (positive ones only, j = 0, 1, ...).  Below, a group of f siblings
        whose parent lies inside the block has A = (f - 1 - s) w for sibling
        s, the same for every such group, and the last, partial group of a
        block starting at ``start`` has A = L - start - (s + 1) w: each is
        :func:`_tail_sum`.
        """
        n1 = self.n_bins + 1
        w, f = self.node_width(level), self.f

        def one_block(length: int) -> int:
            if level == 1:
                return _tail_sum(length, w, n1)
            span = f * w
            full = length // span
            return full * _tail_sum(span, w, n1) + _tail_sum(length - full * span, w, n1)

        tot = (self.k - 1) * one_block(self.block) if self.k > 1 else 0
        return float(tot + one_block(self.last))

    def gather(self, arr: np.ndarray, level: int) -> np.ndarray:
        """Values of the real nodes of a level array, block-major."""
        per = self.per_block(level)
        m = arr.reshape(self.k, per)
        full = m[: self.k - 1, : self.real(level, self.block)].reshape(-1)
        return np.concatenate([full, m[self.k - 1, : self.real(level, self.last)]])

    def real_fill(self, level: int, value: float) -> np.ndarray:
        """A float64 level array: ``value`` on real nodes, 0 on padding."""
        per = self.per_block(level)
        out = np.zeros((self.k, per), dtype=np.float64)
        out[: self.k - 1, : self.real(level, self.block)] = value
        out[self.k - 1, : self.real(level, self.last)] = value
        return out.reshape(-1)

    def scatter(self, values: np.ndarray, level: int, fill: float) -> np.ndarray:
        """Inverse of :meth:`gather` into a new float64 level array (padding = fill)."""
        per = self.per_block(level)
        out = np.full((self.k, per), fill, dtype=np.float64)
        r_full, r_last = self.real(level, self.block), self.real(level, self.last)
        cut = (self.k - 1) * r_full
        out[: self.k - 1, :r_full] = values[:cut].reshape(self.k - 1, r_full)
        out[self.k - 1, :r_last] = values[cut:]
        return out.reshape(-1)


def oh_plan(size, block, f, epsilon, split, keep_noisy, *, mechanism, theta, policy, guarantee, citation,
            model: str = "Blowfish", release_sensitivity: dict | None = None):
    """Structure, budget split, calibrations and error model of OH: public inputs only.

    ``model`` and ``release_sensitivity`` are the plan's (:class:`~..plan.Plan`).
    """
    eps = check_epsilon(epsilon)
    N = size
    fo = Forest(N, block, f)
    k, h = fo.k, fo.h
    # the memory first: the error model below works per level in O(min(f, block)) each
    count = sum((k - 1) * fo.real(L, block) + fo.real(L, fo.last) for L in range(1, h + 1))
    inner = 1 + sum(fo.per_block(L) for L in range(1, h))
    if keep_noisy:  # the level path: padded leaves, tree levels, variances, output
        words = 2 * fo.k * fo.width + 8 * N + 4 * k
    elif block <= OH_STREAM_MAX_BLOCK:  # noise drawn in the kernel: the output, inner nodes, per block, bitmap,
        # and per thread a block's scratch and a stream's noise
        words = N + 2 * k * inner + 8 * k + N // 64 + 1 + (3 + _stream_group(block)) * (inner + fo.width)
    else:  # the noise (its buffer becomes the output), inner nodes, per-block values, the bitmap
        words = (k - 1) + count + 2 * k * inner + 7 * k + N // 64 + 1
    memory = check_memory(int64_bytes(words), size=N, parameter="size" if policy is None else "policy",
                          mechanism=mechanism)
    # usage counts for the optimal split and the error model: S node s_b
    # (b = 1..k-1) serves the positions of block b+1 (k - 2 full blocks and
    # the last), summed in closed form (exact integers)
    sum_s = float((k - 2) * block * (N + 1 - block) + fo.last * (N + 1 - fo.last)) if k > 1 else 0.0
    h_sums = [fo.usage_sum(L) for L in range(1, h + 1)]
    sum_h = float(sum(h_sums))

    has_s, has_h = k > 1, h > 0
    if has_s and has_h:
        if isinstance(split, str):
            if split != "optimal":
                raise ValueError(f"split must be 'optimal' or a fraction in (0, 1), got {split!r}")
            # 000 eq. 15 with the exact constants of this structure:
            # E = C1/eps_S^2 + C2/eps_H^2 in the continuous-Laplace model.
            c1 = 2.0 * sum_s
            c2 = 2.0 * (2 * h) ** 2 * sum_h
            frac = Fraction(c1 ** (1 / 3) / (c1 ** (1 / 3) + c2 ** (1 / 3))).limit_denominator(10**6)
            frac = min(max(frac, Fraction(1, 10**6)), 1 - Fraction(1, 10**6))
        else:
            if isinstance(split, bool) or not isinstance(split, (int, float, Fraction)):
                raise TypeError(f"split must be 'optimal' or a fraction in (0, 1), got {split!r}")
            frac = Fraction(split)
            if not 0 < frac < 1:
                raise ValueError(f"split must be 'optimal' or a fraction in (0, 1), got {split!r}")
        eps_s, eps_h = eps * frac, eps * (1 - frac)
    elif has_s:
        eps_s, eps_h = eps, Fraction(0)
    elif has_h:
        eps_s, eps_h = Fraction(0), eps
    else:  # a single bin: everything is public (n)
        eps_s = eps_h = Fraction(0)

    parts = []
    var_s = var_h = 0.0
    if has_s:
        cal = calibration(1, eps_s)
        var_s = discrete_laplace_variance(cal.scale)
        parts.append(NoisePart("S", 1, True, "one record moved by at most theta bins crosses at most one block "
                               "boundary: one S node changes by 1 "
                               "(Theorem 7.2 of the Blowfish paper)", cal.epsilon_exact, cal.scale, k - 1))
    if has_h:
        cal = calibration(2 * h, eps_h)
        var_h = discrete_laplace_variance(cal.scale)
        how = ("h nodes in each of at most two blocks change by 1 (Theorem 7.2 of the Blowfish paper; "
               "every tree gets eps_H, correcting the paper's split for the first "
               "block)") if policy is not None else \
            "bounded DP: one changed record changes two nodes on each of the h levels below the public root"
        parts.append(NoisePart("H", 2 * h, True, how, cal.epsilon_exact, cal.scale, count))
    error = (var_s * sum_s + var_h * sum_h) / (N * (N + 1) / 2)
    return Plan(
        mechanism=mechanism, policy=policy, guarantee=guarantee, citation=citation,
        epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": error},
        memory_bytes=memory, runtime="O(|T|): noise, tree sums, two-pass least squares, isotonic regression",
        options={"fanout": f, "split": str(split), "keep_noisy": keep_noisy,
                 "theta": theta, "block": block, "height": h, "blocks": k},
        model=model, release_sensitivity=release_sensitivity, check=hist_check(N), run=oh_run,
    )


#: Blocks up to this width draw their noise inside the OH kernel, stream by
#: stream (:mod:`.._streams`); a wider block's pass runs on one thread, so
#: its noise is drawn ahead on all the generator's threads instead.
OH_STREAM_MAX_BLOCK = 1 << 18


def _stream_group(block: int) -> int:
    """Blocks per noise stream of the OH kernel: public (the block width only)."""
    return max(1, _streams.STREAM_CELLS // block)


def stream_key(gen) -> np.ndarray:
    """A fresh 256-bit key for a kernel's noise streams: 8 words of the
    generator, which so advances once per release (a secure generator gives
    a secret key, a seeded one a reproducible key)."""
    return np.ascontiguousarray(gen.random_raw(8), dtype=np.uint32)


def ts(scale) -> tuple[int, int]:
    """The sampler's rational scale t/s as the pair (t, s)."""
    frac = round_scale_up(scale)
    return frac.numerator, frac.denominator


def _wls_variance(scale) -> float:
    """A node's variance as a least-squares weight: the discrete Laplace
    variance, raised to :data:`_tree.OH_MIN_VARIANCE` when smaller but
    positive (a scale below about 1/460, noise that is zero but with
    probability 1e-200; smaller weights would overflow float64)."""
    var = discrete_laplace_variance(scale)
    return max(var, _tree.OH_MIN_VARIANCE) if var > 0 else 0.0


def hist_check(size: int):
    def check(hist):
        return as_histogram(hist, size)

    return check


def oh_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    """OH measurement: one call of the fused C kernels.

    Blocks of at most :data:`OH_STREAM_MAX_BLOCK` bins
    (``_streams.oh_cumulative_streams``): the blocks are cut into streams of
    :func:`_stream_group` blocks; stream g draws from its own ChaCha20
    generator (stream g of a key taken from ``gen``, which advances once per
    release) the S nodes of its blocks, then block by block every real node,
    each block's noise just before the kernel reads the block's counts.  So
    the noise never sits in memory as a vector, the blocks' passes (noise,
    tree sums, least squares, cumulative counts) split over the generator's
    threads, and the draws do not depend on the number of threads.
    Wider blocks (``_tree.oh_cumulative``): all noise is drawn first on the
    generator's threads (S nodes, then every real tree node, level 1 first
    and block-major: the order of :func:`oh_run_levels`) and its buffer
    becomes the output.  Then isotonic regression in place (chunk stacks on
    the same threads).  The estimates before isotonic regression are
    bit-identical to :func:`oh_run_levels` fed with the same noise, which
    keeps the pre-inference estimates when ``keep_noisy`` is set (and
    handles single-bin trees); after it they agree up to the rounding of
    pooled sums beyond one chunk (2^20 bins).
    """
    o = plan.options
    block, f = o["block"], o["fanout"]
    N = hist.size
    fo = Forest(N, block, f)
    part = {p.name: p for p in plan.parts}
    if o["keep_noisy"] or getattr(gen, "needs_values", False) or (fo.h == 0 and "S" not in part):
        # the auditor's generators see each noisy value with its true value:
        # the level path draws the same noise through add_discrete_laplace
        return oh_run_levels(plan, hist, gen)
    k, h = fo.k, fo.h
    if h == 0:
        # single-bin trees (theta = 1): the roots are unobserved, so the
        # estimate is the isotonic regression of the noisy S nodes, the
        # ordered mechanism's kernel with the S nodes' scale
        key = stream_key(gen)
        try:
            cum, n = _streams.ordered_cumulative_streams(hist, key, *ts(part["S"].scale),
                                                         threads=getattr(gen, "threads", 1))
        finally:
            key.fill(0)
        return release(plan, cum, n, gen, None, params={"theta": o["theta"], "block": block, "fanout": f,
                                                         "height": h, "blocks": k, "root_fanout": fo.c})
    params = {"theta": o["theta"], "block": block, "fanout": f, "height": h, "blocks": k, "root_fanout": fo.c}
    var_s = _wls_variance(part["S"].scale) if "S" in part else 0.0
    var_h = _wls_variance(part["H"].scale)
    if block <= OH_STREAM_MAX_BLOCK:
        # each stream of blocks draws its noise in the kernel's threads just
        # before it reads the blocks' counts (no noise vector in memory)
        key = stream_key(gen)
        try:
            cum, n = _streams.oh_cumulative_streams(
                hist, block, f, h, fo.c, key, _stream_group(block), ts(part["S"].scale) if "S" in part else None,
                ts(part["H"].scale), var_s, var_h, threads=getattr(gen, "threads", 1))
        finally:
            key.fill(0)
        return release(plan, cum, n, gen, None, params=params)
    noise_s = gen.discrete_laplace(part["S"].scale, size=k - 1) if "S" in part else None
    noise_h = gen.discrete_laplace(part["H"].scale, size=part["H"].count)
    # the noise buffer becomes the output: each leaf's estimate is written
    # where its noise was (one N-value array fewer at 10^8 cells)
    cum, n = _tree.oh_cumulative(hist, block, f, h, fo.c, noise_s, noise_h, var_s, var_h,
                                 threads=getattr(gen, "threads", 1), overwrite_noise_h=True)
    del noise_h
    return release(plan, cum, n, gen, None, params=params)


def oh_run_levels(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    """OH measurement level by level with numpy glue (keep_noisy, h == 0)."""
    o = plan.options
    block, f, keep_noisy = o["block"], o["fanout"], o["keep_noisy"]
    N = hist.size
    n = int(hist.sum())
    fo = Forest(N, block, f)
    k, h = fo.k, fo.h
    part = {p.name: p for p in plan.parts}

    # exact aggregate: per-block trees over leaves padded to the tree width
    if fo.width == block and fo.last == block:
        padded = hist
    else:
        padded = np.zeros((k, fo.width), dtype=np.int64)
        padded[: k - 1, :block] = hist[: (k - 1) * block].reshape(k - 1, block)
        padded[k - 1, : fo.last] = hist[(k - 1) * block :]
        padded = padded.reshape(-1)
    levels = [None] + (_tree.tree_levels(padded, f, h - 1) if h else [])
    block_totals = _tree.level_sums(levels[1], fo.c) if h else hist
    s_true = _tree.prefix_sum(np.ascontiguousarray(block_totals))

    var_s = var_h = 0.0
    # All noise is drawn by the exact sampler on the true values.
    noisy_s = s_true.astype(np.float64)
    if "S" in part:
        noisy_s[:-1] = gen.add_discrete_laplace(s_true[:-1], part["S"].scale)
        var_s = _wls_variance(part["S"].scale)
    z = [None] * (h + 1)
    v = [None] * (h + 1)
    if "H" in part:
        var_h = _wls_variance(part["H"].scale)
        true_real = [fo.gather(levels[L], L) for L in range(1, h + 1)]
        sizes = [x.size for x in true_real]
        noisy_real = gen.add_discrete_laplace(np.concatenate(true_real), part["H"].scale)
        off = 0
        for L in range(1, h + 1):
            chunk = noisy_real[off : off + sizes[L - 1]].astype(np.float64)
            off += sizes[L - 1]
            z[L] = fo.scatter(chunk, L, 0.0)  # padding: known zeros
            v[L] = fo.real_fill(L, var_h)
    z[0] = np.zeros(k, dtype=np.float64)
    v[0] = np.full(k, np.inf)  # block totals are not released

    noisy_cum = pre_inference_cumulative(fo, z, noisy_s, n) if keep_noisy else None

    # weighted least squares over the whole OH tree, then isotonic regression
    for L in range(h - 1, -1, -1):
        _tree.wls_up_level(z[L + 1], v[L + 1], z[L], v[L], fo.fanout(L))
    ys = noisy_s.copy()
    ys[-1] = n
    vs = np.full(k, var_s)
    vs[-1] = 0.0  # s_k = n is public
    xs = np.empty(k, dtype=np.float64)
    _tree.wls_chain(ys, vs, z[0], v[0], xs)
    for L in range(h):
        _tree.wls_down_level(z[L], z[L + 1], v[L + 1], fo.fanout(L))
    # cumulative counts block by block: the final s_{b-1} plus prefix sums of
    # the block's leaves (the same numbers as one global cumsum, since the
    # estimates are consistent, in one pass without a copy of the leaves)
    within = np.cumsum(z[h].reshape(k, fo.width)[:, :block], axis=1)
    within[1:] += xs[:-1, None]
    cum = isotonic_cumulative(within.reshape(-1)[:N], n)
    return release(plan, cum, n, gen, noisy_cum,
                    params={"theta": o["theta"], "block": block, "fanout": f, "height": h, "blocks": k,
                            "root_fanout": fo.c})


def release(plan: Plan, cum, n, gen, noisy_cum, params) -> CumulativeRelease:
    return CumulativeRelease(cumulative=cum, n=n, secure=gen.is_secure, params=params, noisy_cumulative=noisy_cum,
                             domain=plan.policy.domain if plan.policy is not None else None, plan=plan)


def pre_inference_cumulative(fo: Forest, z, noisy_s, n) -> np.ndarray:
    """C(j) = s_{b-1} + the prefix decomposition of j inside block b."""
    k, h, f = fo.k, fo.h, fo.f
    r = np.arange(fo.width + 1, dtype=np.int64)  # prefix length within a block
    within = np.zeros((k, fo.width + 1), dtype=np.float64)
    for L in range(1, h + 1):
        w, per = fo.node_width(L), fo.per_block(L)
        group = fo.c if L == 1 else f
        g = z[L].reshape(k, per // group, group)
        # exclusive prefix sums inside each group of siblings
        ex = (np.cumsum(g, axis=2) - g).reshape(k, per)
        t = r // w  # nodes of this level fully inside the prefix
        within += np.where(t < per, ex[:, np.minimum(t, per - 1)], 0.0)
    starts = np.concatenate([[0.0], noisy_s[:-1]])
    full = (starts[: k - 1, None] + within[: k - 1, 1 : fo.block + 1]).reshape(-1)
    last = starts[k - 1] + within[k - 1, 1 : fo.last + 1]
    cum = np.concatenate([full, last])
    ends = np.cumsum(np.full(k, fo.block))[: k - 1] - 1
    cum[ends] = noisy_s[: k - 1]  # a whole block: the S node itself
    cum[-1] = n
    return cum


def isotonic_cumulative(cum: np.ndarray, n: int) -> np.ndarray:
    """Project onto non-decreasing sequences in [0, n] with the last equal to n."""
    if cum.size == 1:
        return np.array([float(n)])
    out = _isotonic.isotonic(np.ascontiguousarray(cum[:-1]), None, 0.0, float(n))
    return np.append(out, float(n))
