"""Cumulative histograms and range queries (000 Sec 7).

Four mechanisms share one result type, :class:`CumulativeRelease`:

``ordered``
    The ordered mechanism (000 Sec 7.1): every cumulative count
    s_j = #{t <= x_j} gets discrete Laplace noise of scale theta/epsilon,
    where theta = S(cumulative, P) is the policy's cumulative sensitivity
    (1 for the line graph, the threshold in bins for G^{d,theta}); the total
    n is public (known cardinality, 000 Sec 2); then isotonic regression
    clipped to [0, n].
``ordered_hierarchical``
    The ordered hierarchical (OH) mechanism (000 Sec 7.2): S nodes (the
    cumulative count at the end of every block of theta bins) and, per
    block, a fan-out-f tree H_i of height h = ceil(log_f theta).  Then
    weighted least-squares consistency over the whole OH structure (one
    tree: s_i has children s_{i-1} and the root of H_i) and isotonic
    regression.
``hierarchical``
    The DP baseline (Hay et al., VLDB 2010): one fan-out-f tree over the
    domain with consistency; OH with a single block.
``identity``
    Laplace noise on every cell (the plainest DP baseline), projected onto
    the non-negative histograms with the public total n.

Privacy guarantee and the OH budget
    OH releases s_1..s_{k-1} (s_k = n is public) with noise 1/eps_S and the
    tree nodes *below* each block's root with noise 2h/eps_H.  A neighbour
    pair (one value moved by at most theta bins) crosses at most one block
    boundary, so it changes at most one S node and at most h tree nodes in
    each of at most two blocks, each by 1: the privacy loss is at most
    eps_S + eps_H = epsilon.  This is Thm 7.2's argument; the paper also
    gives H_1 the budget eps_S + eps_H (noise 2h/(eps_S + eps_H)), which
    fails for a pair crossing the first block boundary (it changes s_1, h
    nodes of H_1 and h of H_2: loss eps/(2h) + eps/2 + eps_H/2, above eps
    whenever eps_H > eps (h-1)/h), so here every tree gets eps_H.  The
    exact privacy loss of every neighbour pair is checked by brute force in
    the tests.  With theta >= |T| - 1 there is one block: the hierarchical
    mechanism with a public root; with theta = 1 the trees are single bins
    and OH is the ordered mechanism.
Runtime
    O(|T|) for noise, tree, consistency (two passes) and isotonic
    regression; the hot loops are C.
Utility
    ``expected_range_error()`` gives the exact mean squared error of a
    uniformly random range query for the noisy release *before* inference
    (000 eq. 13-15 give its asymptotic form); inference is a projection and
    only lowers error in its norm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core
from .._validation import as_int, as_int64_array, check_epsilon
from ..noise import Generator, as_generator, discrete_laplace_variance
from .laplace import calibrate
from .plan import NoisePart, Plan, Release, int64_bytes

__all__ = [
    "CumulativeRelease",
    "hierarchical",
    "identity",
    "ordered",
    "ordered_hierarchical",
    "plan_hierarchical",
    "plan_identity",
    "plan_ordered",
    "plan_ordered_hierarchical",
]


# ---------------------------------------------------------------------------
# input checks


def _as_histogram(hist) -> np.ndarray:
    arr = np.asarray(hist)
    if arr.ndim != 1:
        raise ValueError(f"hist must be a 1-D array of counts, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("hist must have at least one bin, got an empty array")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"hist must hold integer counts, got dtype {arr.dtype}")
    arr = as_int64_array(arr, "hist")  # aligned, native-endian; uint64 > int64 max refused
    if arr.min() < 0:
        raise ValueError(f"hist must hold non-negative counts, got {int(arr.min())} at index {int(arr.argmin())}")
    try:
        _core.sum_int64(arr)  # the total n and every cumulative count must fit int64
    except OverflowError:
        raise OverflowError(
            f"hist: the total count does not fit a signed 64-bit integer (at most {2**63 - 1} allowed)"
        ) from None
    return arr


def _cumulative_theta(policy):
    """Cumulative sensitivity (in bins) of a 1-D ordinal policy, and its domain."""
    from ..policy import Policy

    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a blowfish_privacy.Policy, got {type(policy).__name__}")
    domain = policy.domain
    if domain.ndim != 1:
        raise ValueError(
            f"cumulative mechanisms need a 1-D ordinal domain, got {domain.ndim} attributes {domain.names}"
        )
    theta = policy.sensitivity("cumulative")
    return int(theta), domain


def _check_fanout(fanout) -> int:
    f = as_int(fanout, "fanout")
    if f < 2:
        raise ValueError(f"fanout must be an integer >= 2, got {f}")
    return f


def _tree_height(block: int, f: int) -> int:
    h, cap = 0, 1
    while cap < block:
        cap *= f
        h += 1
    return h


# ---------------------------------------------------------------------------
# result


@dataclass(frozen=True)
class CumulativeRelease(Release):
    """A released cumulative histogram and everything needed to use it.

    Attributes
    ----------
    cumulative : numpy.ndarray of float64, shape (|T|,)
        s_j = estimated number of records with value <= x_j, after
        inference: non-decreasing, within [0, n], and s_|T| = n.
    n : int
        The public number of records.
    mechanism : str
    epsilon : float
        Epsilon actually spent (never more than asked).
    epsilon_exact : fractions.Fraction
    epsilon_parts : dict
        How the budget was split (e.g. ``{"S": ..., "H": ...}``), exact.
    scales : dict
        Discrete Laplace scale of each node class.
    sensitivity : dict
        Sensitivity each node class was calibrated to.
    secure : bool
        False when a seeded generator was used (not for real releases).
    params : dict
        theta (in bins), block length, fan-out, tree height.
    noisy_cumulative : numpy.ndarray or None
        The pre-inference cumulative estimates, when ``keep_noisy=True``.
    """

    cumulative: np.ndarray
    n: int
    mechanism: str
    epsilon: float
    epsilon_exact: Fraction
    epsilon_parts: dict
    scales: dict
    sensitivity: dict
    secure: bool
    params: dict
    noisy_cumulative: np.ndarray | None = None
    domain: object = None
    _expected_range_error: float = field(default=math.nan, repr=False)
    plan: Any = field(default=None, repr=False, compare=False)

    _values_field = "cumulative"

    def _common(self) -> dict:
        out = super()._common()
        out["expected_error"] = {"range_query_mse_before_inference": self._expected_range_error}
        return out

    @property
    def histogram(self) -> np.ndarray:
        """Per-bin counts: differences of the cumulative counts (never negative)."""
        return np.diff(self.cumulative, prepend=0.0)

    def _bins(self, values, name: str) -> np.ndarray:
        arr = np.asarray(values)
        if self.domain is None:
            if arr.dtype.kind not in "iu":
                raise TypeError(f"{name} must be integer bin indices, got dtype {arr.dtype}")
            idx = arr.astype(np.int64)
            bad = (idx < 0) | (idx >= self.cumulative.size)
            if bad.any():
                raise ValueError(
                    f"{name} must be bin indices in [0, {self.cumulative.size - 1}], "
                    f"got {int(idx[bad].flat[0])}"
                )
            return idx
        return self.domain.encode(arr.reshape(-1)).reshape(arr.shape)

    def range_query(self, lo, hi, *, inferred: bool = True):
        """Answer q[x_lo, x_hi] = s_hi - s_{lo-1} (inclusive bounds, 000 Def 7.2).

        Parameters
        ----------
        lo, hi : scalar or array_like
            Domain values (bin indices when the release has no domain);
            broadcast against each other; lo <= hi.
        inferred : bool
            Use the post-inference cumulative counts (default) or the noisy
            pre-inference ones (needs ``keep_noisy=True``).

        Returns
        -------
        float or numpy.ndarray of float64
        """
        c = self.cumulative if inferred else self.noisy_cumulative
        if c is None:
            raise ValueError("inferred=False needs a release made with keep_noisy=True")
        i = self._bins(lo, "lo")
        j = self._bins(hi, "hi")
        i, j = np.broadcast_arrays(i, j)
        if (i > j).any():
            raise ValueError("lo must be <= hi for every range")
        before = np.where(i > 0, c[np.maximum(i - 1, 0)], 0.0)
        out = c[j] - before
        return float(out) if out.ndim == 0 else out

    def quantile(self, p):
        """Smallest value x with estimated CDF(x) >= p, for p in [0, 1]."""
        q = np.asarray(p, dtype=np.float64)
        if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
            raise ValueError(f"p must lie in [0, 1], got {p!r}")
        idx = np.searchsorted(self.cumulative, q * self.n, side="left")
        idx = np.minimum(idx, self.cumulative.size - 1)
        if self.domain is not None:
            vals = self.domain.values(idx.reshape(-1))[0].reshape(idx.shape)
        else:
            vals = idx
        return vals.item() if vals.ndim == 0 else vals

    def expected_range_error(self) -> float:
        """Exact mean squared error of a uniformly random range query.

        Averaged over all |T|(|T|+1)/2 ranges, for the noisy release
        *before* inference (000 eq. 13-15 give the asymptotic form of this
        quantity for OH; eq. 12 bounds it by 4/eps^2 per range for the
        ordered mechanism on the line).  Uses the exact discrete Laplace
        variance 2p/(1-p)^2, p = exp(-1/scale).
        """
        return self._expected_range_error


def _range_error(nodes_var_a: list[tuple[float, np.ndarray]], n_bins: int) -> float:
    """Mean over all ranges of Var(C(j) - C(i)), 0 <= i < j <= n_bins.

    C(j) = sum of the noisy nodes a pre-inference estimator uses; a node
    used by A of the n_bins + 1 cumulative positions contributes
    var * A * (n_bins + 1 - A) to the sum over all pairs.
    """
    total = 0.0
    for var, a in nodes_var_a:
        a = a.astype(np.float64)
        total += var * float(np.sum(a * (n_bins + 1 - a)))
    return total / (n_bins * (n_bins + 1) / 2)


# ---------------------------------------------------------------------------
# ordered hierarchical core (shared by ordered_hierarchical and hierarchical)


class _Forest:
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
        self.h = _tree_height(block, f)
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
        """Sum of A (N + 1 - A) over all real nodes at ``level``, in O(f).

        Below level 1, a group of f siblings whose parent lies inside the
        block has A = (f - 1 - s) w for sibling s, the same for every such
        group; only the last, partial group is computed node by node.
        """
        n1 = self.n_bins + 1.0

        def one_block(length: int) -> float:
            w, f = self.node_width(level), self.f
            if level == 1:
                a = self.usage(1, length).astype(np.float64)
                return float(np.sum(a * (n1 - a)))
            span = f * w
            full = length // span
            a_full = (f - 1 - np.arange(f, dtype=np.float64)) * w
            tot = full * float(np.sum(a_full * (n1 - a_full)))
            start = full * span
            if start < length:
                a = start + np.arange(f, dtype=np.int64) * w
                a = a[a < length]
                rest = np.maximum(length - a - w, 0).astype(np.float64)
                tot += float(np.sum(rest * (n1 - rest)))
            return tot

        tot = (self.k - 1) * one_block(self.block) if self.k > 1 else 0.0
        return tot + one_block(self.last)

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


def _oh_plan(size, block, f, epsilon, split, keep_noisy, *, mechanism, theta, policy, guarantee, citation):
    """Structure, budget split, calibrations and error model of OH: public inputs only."""
    eps = check_epsilon(epsilon)
    N = size
    fo = _Forest(N, block, f)
    k, h = fo.k, fo.h
    lens = np.full(k, block, dtype=np.int64)
    lens[-1] = fo.last

    # usage counts for the optimal split and the error model
    s_usage = lens[1:]  # S node s_b (b = 1..k-1) serves the positions of block b+1
    n1 = N + 1.0
    sum_s = float(np.sum(s_usage * (n1 - s_usage)))
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
        cal = calibrate(1, eps_s)
        var_s = discrete_laplace_variance(cal.scale)
        parts.append(NoisePart("S", 1, True, "one record moved by at most theta bins crosses at most one block "
                               "boundary: one S node changes by 1 (000 Thm 7.2)", cal.epsilon_exact, cal.scale, k - 1))
    if has_h:
        cal = calibrate(2 * h, eps_h)
        var_h = discrete_laplace_variance(cal.scale)
        count = sum((k - 1) * fo.real(L, block) + fo.real(L, fo.last) for L in range(1, h + 1))
        how = ("h nodes in each of at most two blocks change by 1 (000 Thm 7.2; every tree gets eps_H, "
               "DEVELOPERS.md)") if policy is not None else \
            "bounded DP: one changed record changes two nodes on each of the h levels below the public root"
        parts.append(NoisePart("H", 2 * h, True, how, cal.epsilon_exact, cal.scale, count))
    error = (var_s * sum_s + var_h * sum_h) / (N * (N + 1) / 2)
    words = 2 * fo.k * fo.width + 8 * N + 4 * k  # padded leaves, tree levels, variances, output
    return Plan(
        mechanism=mechanism, policy=policy, guarantee=guarantee, citation=citation,
        epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": error},
        memory_bytes=int64_bytes(words), runtime="O(|T|): noise, tree sums, two-pass least squares, isotonic regression",
        options={"fanout": f, "split": str(split), "keep_noisy": keep_noisy,
                 "theta": theta, "block": block, "height": h, "blocks": k},
        check=_hist_check(N), run=_oh_run,
    )


def _hist_check(size: int):
    def check(hist):
        arr = _as_histogram(hist)
        if arr.size != size:
            raise ValueError(f"hist has {arr.size} bins but the policy's domain has {size} values")
        return arr

    return check


def _oh_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    """OH measurement: one fused C pass (``_core.oh_estimate``) over the blocks.

    All noise is drawn first (S nodes, then every real tree node, level 1
    first and block-major: the order of :func:`_oh_run_levels`), then the
    kernel computes tree sums, least squares and the cumulative counts with
    O(block + k) scratch, then isotonic regression in place.  Bit-identical
    to :func:`_oh_run_levels`, which keeps the pre-inference estimates when
    ``keep_noisy`` is set (and handles single-bin trees).
    """
    o = plan.options
    block, f = o["block"], o["fanout"]
    N = hist.size
    fo = _Forest(N, block, f)
    if o["keep_noisy"] or fo.h == 0 or getattr(gen, "needs_values", False):
        # the auditor's generators see each noisy value with its true value:
        # the level path draws the same noise through add_discrete_laplace
        return _oh_run_levels(plan, hist, gen)
    k, h = fo.k, fo.h
    n = int(hist.sum())
    part = {p.name: p for p in plan.parts}
    noise_s = gen.discrete_laplace(part["S"].scale, size=k - 1) if "S" in part else None
    var_s = discrete_laplace_variance(part["S"].scale) if "S" in part else 0.0
    noise_h = gen.discrete_laplace(part["H"].scale, size=part["H"].count)
    var_h = discrete_laplace_variance(part["H"].scale)
    cum = _core.oh_estimate(hist, block, f, h, fo.c, noise_s, noise_h, var_s, var_h)
    del noise_h
    if N > 1:
        _core.isotonic_inplace(cum[:-1], 0.0, float(n))
    cum[-1] = float(n)
    return _release(plan, cum, n, gen, None,
                    params={"theta": o["theta"], "block": block, "fanout": f, "height": h, "blocks": k,
                            "root_fanout": fo.c})


def _oh_run_levels(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    """OH measurement level by level with numpy glue (keep_noisy, h == 0)."""
    o = plan.options
    block, f, keep_noisy = o["block"], o["fanout"], o["keep_noisy"]
    N = hist.size
    n = int(hist.sum())
    fo = _Forest(N, block, f)
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
    levels = [None] + (_core.tree_levels(padded, f, h - 1) if h else [])
    block_totals = _core.level_sums(levels[1], fo.c) if h else hist
    s_true = _core.prefix_sum(np.ascontiguousarray(block_totals))

    var_s = var_h = 0.0
    # All noise is drawn by the exact sampler on the true values.
    noisy_s = s_true.astype(np.float64)
    if "S" in part:
        noisy_s[:-1] = gen.add_discrete_laplace(s_true[:-1], part["S"].scale)
        var_s = discrete_laplace_variance(part["S"].scale)
    z = [None] * (h + 1)
    v = [None] * (h + 1)
    if "H" in part:
        var_h = discrete_laplace_variance(part["H"].scale)
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

    noisy_cum = _pre_inference_cumulative(fo, z, noisy_s, n) if keep_noisy else None

    # weighted least squares over the whole OH tree, then isotonic regression
    for L in range(h - 1, -1, -1):
        _core.wls_up_level(z[L + 1], v[L + 1], z[L], v[L], fo.fanout(L))
    ys = noisy_s.copy()
    ys[-1] = n
    vs = np.full(k, var_s)
    vs[-1] = 0.0  # s_k = n is public
    xs = np.empty(k, dtype=np.float64)
    _core.wls_chain(ys, vs, z[0], v[0], xs)
    for L in range(h):
        _core.wls_down_level(z[L], z[L + 1], v[L + 1], fo.fanout(L))
    # cumulative counts block by block: the final s_{b-1} plus prefix sums of
    # the block's leaves (the same numbers as one global cumsum, since the
    # estimates are consistent, in one pass without a copy of the leaves)
    within = np.cumsum(z[h].reshape(k, fo.width)[:, :block], axis=1)
    within[1:] += xs[:-1, None]
    cum = _isotonic_cumulative(within.reshape(-1)[:N], n)
    return _release(plan, cum, n, gen, noisy_cum,
                    params={"theta": o["theta"], "block": block, "fanout": f, "height": h, "blocks": k,
                            "root_fanout": fo.c})


def _release(plan: Plan, cum, n, gen, noisy_cum, params) -> CumulativeRelease:
    spent = plan.epsilon_exact
    return CumulativeRelease(
        cumulative=cum,
        n=n,
        mechanism=plan.mechanism,
        epsilon=float(spent),
        epsilon_exact=spent,
        epsilon_parts={p.name: p.epsilon for p in plan.parts},
        scales={p.name: p.scale for p in plan.parts},
        sensitivity={p.name: p.sensitivity for p in plan.parts},
        secure=gen.is_secure,
        params=params,
        noisy_cumulative=noisy_cum,
        domain=plan.policy.domain if plan.policy is not None else None,
        _expected_range_error=plan.expected_error["range_query_mse_before_inference"],
        plan=plan,
    )


def _pre_inference_cumulative(fo: _Forest, z, noisy_s, n) -> np.ndarray:
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


def _isotonic_cumulative(cum: np.ndarray, n: int) -> np.ndarray:
    """Project onto non-decreasing sequences in [0, n] with the last equal to n."""
    if cum.size == 1:
        return np.array([float(n)])
    out = _core.isotonic(np.ascontiguousarray(cum[:-1]), None, 0.0, float(n))
    return np.append(out, float(n))


# ---------------------------------------------------------------------------
# public mechanisms


_CITE_ORDERED = "He, Machanavajjhala, Ding, SIGMOD 2014 (000 Sec 7.1, Thm 7.1); sampler: CKS 2020 Alg. 2"
_CITE_OH = "He, Machanavajjhala, Ding, SIGMOD 2014 (000 Sec 7.2, Thm 7.2, eq. 13-15); inference: Hay et al. VLDB 2010"
_CITE_H = "Hay, Rastogi, Miklau, Suciu, VLDB 2010 (hierarchical with consistency)"


def _policy_guarantee(policy) -> str:
    return f"(epsilon, P)-Blowfish privacy for P = {policy!r}; the number of records n is public (bounded neighbours)"


def _dp_guarantee() -> str:
    return ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy; the number of "
            "records n is public")


def _size(size, name: str = "size") -> int:
    N = as_int(size, name)
    if N < 1:
        raise ValueError(f"{name} must be the number of bins, an integer >= 1, got {N}")
    return N


def plan_ordered(policy, epsilon, *, keep_noisy: bool = False) -> Plan:
    """Plan the ordered mechanism (000 Sec 7.1): public inputs only.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy: each cumulative count s_1..s_{|T|-1}
        gets discrete Laplace noise of scale theta/epsilon, theta the
        policy's cumulative sensitivity (000 Thm 5.1, Thm 7.1); s_|T| = n
        is public.
    """
    theta, domain = _cumulative_theta(policy)
    eps = check_epsilon(epsilon)
    N = domain.size
    parts = ()
    var = 0.0
    if N > 1 and theta > 0:
        cal = calibrate(theta, eps)
        var = discrete_laplace_variance(cal.scale)
        parts = (NoisePart("S", theta, True, f"cumulative sensitivity of {policy.secrets!r}: the largest bin "
                           "distance of a secret edge (000 Sec 7.1)", cal.epsilon_exact, cal.scale, N - 1),)
    error = _range_error([(var, np.ones(N - 1, dtype=np.int64))], N) if var else 0.0
    return Plan(
        mechanism="ordered", policy=policy, guarantee=_policy_guarantee(policy), citation=_CITE_ORDERED,
        epsilon_requested=eps, parts=parts, aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": error}, memory_bytes=int64_bytes(5 * N),
        runtime="O(|T|)", options={"keep_noisy": bool(keep_noisy), "theta": theta},
        check=_hist_check(N), run=_ordered_run,
    )


def _ordered_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    n = int(hist.sum())
    true_cum = np.cumsum(hist)
    noisy = true_cum.astype(np.float64)
    if plan.parts:
        noisy[:-1] = gen.add_discrete_laplace(true_cum[:-1], plan.parts[0].scale)
    cum = _isotonic_cumulative(noisy, n)
    return _release(plan, cum, n, gen, noisy if plan.options["keep_noisy"] else None,
                    params={"theta": plan.options["theta"]})


def ordered(hist, policy, epsilon, generator: Generator | None = None, *, keep_noisy: bool = False) -> CumulativeRelease:
    """The ordered mechanism (000 Sec 7.1) for a 1-D ordinal policy.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy: each cumulative count s_1..s_{|T|-1}
        gets discrete Laplace noise of scale theta/epsilon with theta the
        policy's cumulative sensitivity (1 for ``Line()``, the threshold in
        bins for ``DistanceThreshold``; 000 Thm 5.1).  s_|T| = n is public.
    Utility
        Error per range query at most 4 theta^2/eps^2 before inference (000
        eq. 12 for theta = 1); isotonic regression clipped to [0, n] after.

    This is ``plan_ordered(policy, epsilon, keep_noisy=...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact counts per value of the policy's 1-D ordinal domain.
    policy : Policy
    epsilon : float
    generator : Generator, optional (a new secure one by default)
    keep_noisy : bool
        Keep the pre-inference cumulative counts in ``noisy_cumulative``.
    """
    hist = _as_histogram(hist)
    return plan_ordered(policy, epsilon, keep_noisy=keep_noisy).measure(hist, generator)


def plan_ordered_hierarchical(policy, epsilon, *, fanout: int = 16, split="optimal", keep_noisy: bool = False) -> Plan:
    """Plan the ordered hierarchical mechanism (000 Sec 7.2): public inputs only.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy for any 1-D ordinal policy, theta
        its cumulative sensitivity in bins (module docstring: the argument
        and the correction to the paper's budget for H_1).
    """
    theta, domain = _cumulative_theta(policy)
    f = _check_fanout(fanout)
    N = domain.size
    if theta == 0:  # no secret pair moves a cumulative count: nothing to hide
        from dataclasses import replace as _replace

        return _replace(plan_ordered(policy, epsilon, keep_noisy=keep_noisy), mechanism="ordered_hierarchical")
    block = N if theta >= N - 1 else theta
    return _oh_plan(N, block, f, epsilon, split, bool(keep_noisy), mechanism="ordered_hierarchical", theta=theta,
                    policy=policy, guarantee=_policy_guarantee(policy), citation=_CITE_OH)


def ordered_hierarchical(
    hist,
    policy,
    epsilon,
    generator: Generator | None = None,
    *,
    fanout: int = 16,
    split="optimal",
    keep_noisy: bool = False,
) -> CumulativeRelease:
    """The ordered hierarchical mechanism (000 Sec 7.2) with exact inference.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy for any 1-D ordinal policy, with
        theta its cumulative sensitivity in bins (the module docstring gives
        the argument and the correction to the paper's budget for H_1).
    Runtime
        O(|T|).
    Utility
        ``expected_range_error()``: exact pre-inference MSE of a random
        range query; the optimal split minimises it (000 eq. 15 with the
        exact constants of this structure).

    This is ``plan_ordered_hierarchical(policy, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    policy : Policy
        1-D ordinal domain; ``Line()``, ``DistanceThreshold(theta)`` or any
        other secret graph (theta is then its cumulative sensitivity).
    epsilon : float
    generator : Generator, optional
    fanout : int >= 2
        Fan-out f of the per-block trees.
    split : "optimal" or float in (0, 1)
        Fraction of epsilon for the S nodes.
    keep_noisy : bool
        Keep the pre-inference cumulative counts.
    """
    hist = _as_histogram(hist)
    plan = plan_ordered_hierarchical(policy, epsilon, fanout=fanout, split=split, keep_noisy=keep_noisy)
    return plan.measure(hist, generator)


def plan_hierarchical(size, epsilon, *, fanout: int = 16, keep_noisy: bool = False) -> Plan:
    """Plan the hierarchical mechanism (Hay et al. 2010), a DP baseline, for ``size`` bins.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy, i.e. bounded differential
        privacy with n public: the h levels below the public root each get
        noise of scale 2h/epsilon (one changed record changes two nodes per
        level).
    """
    N = _size(size)
    f = _check_fanout(fanout)
    return _oh_plan(N, N, f, epsilon, "optimal", bool(keep_noisy), mechanism="hierarchical", theta=N,
                    policy=None, guarantee=_dp_guarantee(), citation=_CITE_H)


def hierarchical(
    hist, epsilon, generator: Generator | None = None, *, fanout: int = 16, keep_noisy: bool = False
) -> CumulativeRelease:
    """The hierarchical mechanism (Hay et al. 2010) with consistency: a DP baseline.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy, i.e. bounded differential
        privacy with n public: the h levels below the public root each get
        noise of scale 2h/epsilon (one changed record changes two nodes per
        level).
    Runtime
        O(|T|).

    This is ``plan_hierarchical(hist.size, epsilon, ...).measure(hist, generator)``.
    """
    hist = _as_histogram(hist)
    return plan_hierarchical(hist.size, epsilon, fanout=fanout, keep_noisy=keep_noisy).measure(hist, generator)


def _project_simplex(y: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection onto {x >= 0, sum x = total} (sort-based, O(n log n))."""
    if total == 0:
        return np.zeros_like(y)
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - total
    idx = np.arange(1, y.size + 1)
    cond = u - css / idx > 0
    hits = np.nonzero(cond)[0]
    rho = int(hits[-1]) if hits.size else 0  # empty only by rounding when total << max(y)
    tau = css[rho] / (rho + 1)
    return np.maximum(y - tau, 0.0)


def plan_identity(size, epsilon, *, keep_noisy: bool = False) -> Plan:
    """Plan Laplace noise on every cell (the plainest DP baseline) for ``size`` bins.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy (bounded DP): the histogram
        has sensitivity 2, noise scale 2/epsilon per cell.
    """
    N = _size(size)
    eps = check_epsilon(epsilon)
    cal = calibrate(2, eps)
    var = discrete_laplace_variance(cal.scale)
    usage = N - np.arange(N, dtype=np.int64)  # cell i is used by C(i..N)
    part = NoisePart("cells", 2, True, "bounded DP: one changed record changes two cells by 1", cal.epsilon_exact,
                     cal.scale, N)
    return Plan(
        mechanism="identity", policy=None, guarantee=_dp_guarantee(), citation="Dwork et al. 2006 (Laplace mechanism)",
        epsilon_requested=eps, parts=(part,), aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": _range_error([(var, usage)], N)},
        memory_bytes=int64_bytes(7 * N), runtime="O(|T| log |T|) (projection by sorting)",
        options={"keep_noisy": bool(keep_noisy)}, check=_hist_check(N), run=_identity_run,
    )


def _identity_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    n = int(hist.sum())
    noisy = gen.add_discrete_laplace(hist, plan.parts[0].scale).astype(np.float64)
    proj = _project_simplex(noisy, float(n))
    cum = np.cumsum(proj)
    cum[-1] = n
    cum = np.minimum(np.maximum.accumulate(cum), n)
    return _release(plan, cum, n, gen, np.cumsum(noisy) if plan.options["keep_noisy"] else None, params={})


def identity(
    hist, epsilon, generator: Generator | None = None, *, keep_noisy: bool = False
) -> CumulativeRelease:
    """Laplace noise on every cell: the plainest DP baseline.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy (bounded DP): the histogram
        has sensitivity 2, noise scale 2/epsilon per cell.
    Inference
        Projection onto the non-negative histograms summing to the public n
        (a convex set holding the truth, so the L2 error never grows).

    This is ``plan_identity(hist.size, epsilon).measure(hist, generator)``.
    """
    hist = _as_histogram(hist)
    return plan_identity(hist.size, epsilon, keep_noisy=keep_noisy).measure(hist, generator)
