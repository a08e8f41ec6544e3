"""AHP (Zhang, Chen, Xu, Meng, Xie, SDM 2014): cluster cells of similar noisy counts, then average.

"Towards accurate histogram publication under differential privacy",
SIAM SDM 2014, Sec 4 (the AHP algorithm), as run by DPBench (Hay et al.,
SIGMOD 2016) with its parameters ``ratio = 0.85`` and ``eta = 0.35``:

1. Split epsilon: eps1 = ratio * epsilon for a first noisy histogram,
   eps2 = epsilon - eps1 for the cluster counts.
2. Noisy histogram: every cell count plus discrete Laplace noise of scale
   b1 = 2 / eps1.
3. Threshold: noisy counts at or below eta * ln(|T|) * b1 are set to 0 (DPBench
   writes the threshold eta ln|T| / eps1 with its unbounded-DP scale
   1/eps1; ours is the same multiple of our scale).
4. Sort the thresholded counts and cluster them greedily in sorted order
   (:func:`ahp_clusters`): the next value joins the current cluster when
   the estimated error of the merged cluster is at most that of keeping
   them apart, where "apart" is the current cluster's error plus the least
   error the next value can have in a cluster that starts with it (the
   paper's err*, a look-ahead over the cluster lengths; it was the
   next value's error as a singleton before, which merged too eagerly and
   cost accuracy at large n).  The estimated error of a cluster C is
   SSE(C) + Var(b2) / |C|: the squared deviation of its values from their
   mean (the bias of averaging) plus the noise variance that averaging
   one noisy count of scale b2 = 2/eps2 spreads over its |C| cells.
5. Cluster counts: the exact sum of every cluster plus discrete Laplace
   noise of scale b2, divided evenly over its cells.
6. (``total_n``, the default; not in the paper nor in DPBench's code.)
   The number of records n is public under bounded DP: the noisy cluster
   sums are moved by one common amount so that they add up to n, their
   least-squares estimate under that constraint (equal variances).  The
   step is unbiased and only lowers the error (of long ranges most).

Privacy guarantee
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public.  Step 2 is the Laplace histogram: one record moving from u to v
    changes two cells by one each, L1 sensitivity exactly 2, scale 2/eps1:
    eps1.  Steps 3-4 read only the noisy histogram (post-processing), step
    6 only the released sums and the public n.  Step 5 releases the counts of a partition of the domain (the clusters)
    chosen from step 2's output only: for any fixed partition a move
    changes at most two cluster counts by one each (sensitivity 2, exactly
    2 when u and v fall in different clusters), scale 2/eps2: eps2 for
    every value of step 2's output, so the two steps compose adaptively to
    eps1 + eps2 <= epsilon (000 Thm 5.1; exact discrete Laplace: Canonne,
    Kamath, Steinke 2020).  ``tests/mechanisms/test_ahp.py`` computes the
    exact joint privacy loss of both steps on tiny domains by enumerating
    step 2's outputs.
Runtime
    O(|T| log |T|) (the sort); memory O(|T|).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import check_epsilon
from ..noise import Generator, calibration, discrete_laplace_variance
from ..mechanisms._dp import DP, check_positive, dp_shape, release
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of
from ..mechanisms.histogram import check_ratio
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["ahp", "ahp_clusters", "lookahead_errors", "plan_ahp"]

_CITE = ("Zhang, Chen, Xu, Meng, Xie, 'Towards accurate histogram publication under differential privacy', "
         "SDM 2014 (AHP); parameters of Hay et al., SIGMOD 2016 (DPBench)")


def lookahead_errors(z: npt.NDArray[np.float64], variance: float) -> npt.NDArray[np.float64]:
    """err*(j) for every position j of the sorted values z (float64, shape (n,)), exactly.

    err*(j) = min over l >= j of (z_j - mean(z_j..z_l))^2 + variance / (l - j + 1)^2:
    the least estimated error of value j as a member of a cluster that
    starts at j (its bias plus its share of the cluster count's noise), the
    cost of "starting a new cluster at j" in AHP's greedy step (Zhang et
    al. SDM 2014 Sec 4.2).  z ascending makes the mean non-decreasing in l,
    so the bias term is too, and the scan stops at the first l whose bias
    increase is at least the largest decrease still possible of the noise
    term (down to variance / (n - j)^2): no later l can do better (the
    paper's early termination, exact).  A run of equal values is crossed
    in one step (zero bias, falling noise).  Chunked numpy scans; O(n) per
    position in the worst case, a few chunks in practice.
    """
    n = z.size
    P = np.concatenate(([0.0], np.cumsum(z)))
    # end of the run of values equal to z[j] (inclusive)
    change = np.flatnonzero(np.diff(z) != 0)
    run_end = np.empty(n, dtype=np.int64)
    ends = np.r_[change, n - 1]
    starts = np.r_[0, change + 1]
    run_end[:] = np.repeat(ends, ends - starts + 1)
    out = np.empty(n)
    for j in range(n):
        r = int(run_end[j])
        floor_var = variance / float(n - j) ** 2
        best = variance / float(r - j + 1) ** 2  # l = r: no bias
        last1, last2 = 0.0, best
        lo, width = r + 1, 32
        done = lo >= n
        while not done:
            hi = min(n, lo + width)
            ls = np.arange(lo, hi)
            length = (ls - j + 1).astype(np.float64)
            e1 = (z[j] - (P[ls + 1] - P[j]) / length) ** 2
            e2 = variance / (length * length)
            prev1 = np.r_[last1, e1[:-1]]
            prev2 = np.r_[last2, e2[:-1]]
            stop = np.flatnonzero(e1 - prev1 >= prev2 - floor_var)
            k = int(stop[0]) if stop.size else ls.size
            if k:
                best = min(best, float(np.min(e1[:k] + e2[:k])))
            if stop.size or hi >= n:
                done = True
            else:
                last1, last2 = float(e1[-1]), float(e2[-1])
                lo, width = hi, width * 2
        out[j] = best
    return out


def ahp_clusters(noisy: npt.ArrayLike, threshold: float, variance: float) -> npt.NDArray[np.int64]:
    """Steps 3-4: cluster labels (int64, shape (|T|,), 0..c-1) of the cells from their noisy counts.

    Counts at or below ``threshold`` become 0; cells are sorted by the
    result (stable, so ties keep the cell order) and clustered greedily in
    that order (Zhang et al. SDM 2014 Sec 4.2): with the current cluster C
    and the next value z_j, a cluster's estimated error being
    err(C) = SSE(C) + variance / |C| (the bias of averaging plus the
    noise of one count of that variance spread over |C| cells), z_j joins
    C when err(C + z_j) < err(C) + err*(j), err*(j) the least error of z_j
    in a cluster that starts with it (:func:`lookahead_errors`); otherwise
    a new cluster starts at j.  Labels follow the sorted order.
    Post-processing: reads only the noisy counts and public numbers.
    """
    z = np.asarray(noisy, dtype=np.float64).ravel()
    z = np.where(z <= threshold, 0.0, z)
    order = np.argsort(z, kind="stable")
    zs = z[order]
    star = lookahead_errors(zs, float(variance))
    labels = np.empty(z.size, dtype=np.int64)
    lab, cnt, s, ss = 0, 0, 0.0, 0.0
    last = 0.0
    for pos, i in enumerate(order.tolist()):
        v = float(zs[pos])
        if cnt:
            s2, ss2, c2 = s + v, ss + v * v, cnt + 1
            now = max(ss2 - s2 * s2 / c2, 0.0) + variance / c2
            if now < last + star[pos]:
                cnt, s, ss, last = c2, s2, ss2, now
                labels[i] = lab
                continue
            lab += 1
        cnt, s, ss, last = 1, v, v * v, variance
        labels[i] = lab
    return labels


def plan_ahp(
    shape: int | tuple[int, ...] | Policy, epsilon: Real, *, ratio: Real = 0.85, eta: float | Fraction = 0.35,
    total_n: bool = True,
) -> Plan[HistogramRelease]:
    """Plan AHP (Zhang et al. SDM 2014) with DPBench's defaults ratio 0.85, eta 0.35.

    Parameters
    ----------
    shape : int, tuple of ints or FullDomain Policy
        The histogram's shape (any dimension: AHP ignores the order of cells).
    epsilon : float or Fraction, > 0
    ratio : float in (0, 1)
        Share of epsilon for the first noisy histogram (DPBench: 0.85).
    eta : float > 0
        Threshold factor: noisy counts at or below eta ln(|T|) times the
        first scale become 0 (DPBench: 0.35).
    total_n : bool
        Move the noisy cluster sums by one common amount so that they add
        up to the public n (least squares, unbiased; module docstring step
        6).  False: the paper's release.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of the planned shape
        and releases a :class:`~.histogram.HistogramRelease` whose float64
        ``histogram`` (same shape) holds every cell's cluster average.

    Raises
    ------
    ValueError
        Bad ratio or eta, a policy whose secrets are not FullDomain.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public: the noisy histogram at eps1 = ratio * epsilon, then the counts
    of clusters chosen from it alone at eps2 = epsilon - eps1, composed
    adaptively (module docstring).

    Sensitivity
    -----------
    Histogram: 2, exact (a moved record changes two cells by one).  Cluster
    counts: 2, a bound for every partition (exact when the two values fall
    in different clusters).  Scales 2/eps1 and 2/eps2.

    Runtime
    -------
    O(|T| log |T|) (the sort); memory O(|T|).

    References
    ----------
    Zhang, Chen, Xu, Meng, Xie, "Towards accurate histogram publication
    under differential privacy", SIAM SDM 2014, Sec 4 (AHP); Hay,
    Machanavajjhala, Miklau, Chen, Zhang, "Principled evaluation of
    differentially private algorithms using DPBench", SIGMOD 2016
    (parameters).
    """
    shp, pol = dp_shape(shape)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    et = check_positive(eta, "eta")
    cells = math.prod(shp)
    memory = check_memory(int64_bytes(8 * cells), size=cells, parameter="shape" if len(shp) > 1 else "size",
                          mechanism="ahp")
    eps1, eps2 = eps * r, eps * (1 - r)
    cal1, cal2 = calibration(2, eps1), calibration(2, eps2)
    threshold = et * math.log(cells) * float(cal1.scale) if cells > 1 else 0.0
    var2 = discrete_laplace_variance(cal2.scale)
    parts = (
        NoisePart("histogram", Fraction(2), True,
                  "bounded DP: a moved record changes two cells by one each", cal1.epsilon_exact, cal1.scale, cells),
        NoisePart("clusters", Fraction(2), False,
                  "counts of a partition chosen from the noisy histogram only: a moved record changes at most two "
                  "cluster counts by one each (exactly 2 when its two values fall in different clusters)",
                  cal2.epsilon_exact, cal2.scale, None),
    )

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        flat = hist.ravel()
        noisy = gen.add_discrete_laplace(flat, cal1.scale)
        labels = ahp_clusters(noisy, threshold, var2)
        k = int(labels.max()) + 1
        sums = np.zeros(k, dtype=np.int64)
        np.add.at(sums, labels, flat)  # exact integer sums (a float64 bincount rounds above 2^53)
        sizes = np.bincount(labels, minlength=k)
        noisy_sums = gen.add_discrete_laplace(sums, cal2.scale).astype(np.float64)
        if total_n:  # least squares onto the public total: every cluster sum moves by the same amount (unbiased)
            noisy_sums += (float(sums.sum()) - float(noisy_sums.sum())) / k
        est = (noisy_sums / sizes)[labels].reshape(shp)
        return release(plan, est, gen, {"ratio": float(r), "eta": et, "threshold": threshold, "clusters": k})

    return Plan(
        mechanism="ahp", policy=pol,
        guarantee=DP + f"; noisy histogram at {eps1}, cluster counts at {eps2}",
        citation=_CITE, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"histogram_noise_variance": discrete_laplace_variance(cal1.scale),
                        "cluster_count_variance": var2, "note": "data dependent: no analytic error"},
        memory_bytes=memory, runtime="O(|T| log |T|)",
        options={"adaptive": True, "ratio": r, "eta": et, "threshold": threshold, "total_n": bool(total_n)},
        model="DP", check=check_hist(shp), run=run)


@guarantee_of(plan_ahp)
def ahp(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, ratio: Real = 0.85,
    eta: float | Fraction = 0.35, total_n: bool = True,
) -> HistogramRelease:
    """AHP on a histogram: ``plan_ahp(hist.shape, epsilon, ratio=ratio, eta=eta, total_n=total_n).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, any shape
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    ratio, eta, total_n
        As in :func:`plan_ahp`.

    Returns
    -------
    HistogramRelease
        float64 ``histogram`` of the shape of ``hist``.
    """
    h = np.asarray(hist)
    return plan_ahp(h.shape, epsilon, ratio=ratio, eta=eta, total_n=total_n).measure(h, generator)
