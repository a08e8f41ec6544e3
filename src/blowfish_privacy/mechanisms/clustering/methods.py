"""The k-means entry point: :func:`kmeans` runs one of the three mechanisms by name (:data:`METHODS`).

``method="grid"`` (the default) and ``"eugkm"`` are the one-shot grid
mechanism of :mod:`.kmeans_grid` (hat weights or cell counts, then Lloyd on
the release); ``"sulq"`` is the SuLQ rounds of :mod:`.kmeans`
(:func:`~.kmeans.plan_kmeans`, then measure).  The privacy, sensitivity and
runtime notes of each mechanism are in its module.
"""

from __future__ import annotations

from typing import Any, Literal, overload

import numpy.typing as npt

from ...noise import Generator
from ...policy._policy import Policy
from ..._typing import Real
from ._results import KMeansResult
from .kmeans import plan_kmeans
from .kmeans_grid import KMeansGridResult, kmeans_grid

__all__ = ["METHODS", "kmeans"]


#: The k-means mechanisms by name, the default first: one noisy grid release
#: then Lloyd (hat weights, whose sensitivity falls with a distance
#: threshold), EUGkM's DP grid of cell counts, and SuLQ rounds (000 Sec 6).
METHODS = ("grid", "eugkm", "sulq")


@overload
def kmeans(
    points: Any,
    policy: Policy,
    epsilon: Real,
    generator: Generator | None = None,
    *,
    method: Literal["sulq"],
    k: int = 4,
    iterations: int | None = None,
    init: str | npt.ArrayLike | None = None,
    size_fraction: float | None = None,
    cell: int | None = None,
    n: int | None = None,
    restarts: int | None = None,
    threshold: float | None = None,
) -> KMeansResult: ...
@overload
def kmeans(
    points: Any,
    policy: Policy,
    epsilon: Real,
    generator: Generator | None = None,
    *,
    method: Literal["grid", "eugkm"] = "grid",
    k: int = 4,
    iterations: int | None = None,
    init: str | npt.ArrayLike | None = None,
    size_fraction: float | None = None,
    cell: int | None = None,
    n: int | None = None,
    restarts: int | None = None,
    threshold: float | None = None,
) -> KMeansGridResult: ...
@overload
def kmeans(
    points: Any,
    policy: Policy,
    epsilon: Real,
    generator: Generator | None = None,
    *,
    method: str = "grid",
    k: int = 4,
    iterations: int | None = None,
    init: str | npt.ArrayLike | None = None,
    size_fraction: float | None = None,
    cell: int | None = None,
    n: int | None = None,
    restarts: int | None = None,
    threshold: float | None = None,
) -> KMeansResult | KMeansGridResult: ...


def kmeans(
    points: Any,
    policy: Policy,
    epsilon: Real,
    generator: Generator | None = None,
    *,
    method: str = "grid",
    k: int = 4,
    iterations: int | None = None,
    init: str | npt.ArrayLike | None = None,
    size_fraction: float | None = None,
    cell: int | None = None,
    n: int | None = None,
    restarts: int | None = None,
    threshold: float | None = None,
) -> KMeansResult | KMeansGridResult:
    """k-means under a Blowfish policy: the grid mechanism by default, EUGkM or SuLQ by name.

    ``method="grid"`` (the default, as in the ``kmeans`` release kind and
    :class:`blowfish_privacy.sklearn.BlowfishKMeans`) is
    ``kmeans_grid(points, policy, epsilon, generator, interpolation="linear",
    ...)``: the points' hat (cloud-in-cell) grid weights are released once
    and weighted Lloyd runs on the release.  ``method="eugkm"`` is the same
    with ``interpolation="nearest"`` (cell counts, the DP baseline of Su et
    al. 2016).  ``method="sulq"`` is ``plan_kmeans(policy, epsilon, k=k,
    iterations=iterations, init=init, size_fraction=size_fraction)
    .measure(points, generator)``: ``iterations`` rounds of noisy cluster
    sizes and sums (000 Sec 6, with the cross-cluster correction of
    Corrections to the papers (docs/explanation/corrections.md)).

    Utility
        Grid: noise per node of ``2 theta / cell`` points' worth against
        DP's 2 (distance threshold theta, L1, unit bins, ``theta <= cell``).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Records of the policy's domain as grid values (bin lower edges), any
        n >= 0.  Other values are mapped to the cell containing them,
        clamped into the domain's box (NaN to the lowest value): no error
        depends on the values.
    policy : Policy
        Policy without constraints on a domain of ordinal attributes.
    epsilon : float or Fraction, > 0
        Total budget; the spend (``result.epsilon_exact``) is never more.
    generator : Generator, optional
        Noise (and SuLQ's random initialisation); a new secure one when
        omitted.
    method : {"grid", "eugkm", "sulq"}, default "grid"
        The mechanism (see above).
    k : int, default 4
        Clusters, ``1 <= k <= 64``.
    iterations : int, optional
        Grid methods: Lloyd iterations per restart on the release
        (post-processing, free; default 30).  SuLQ: rounds, each spending
        ``epsilon / iterations`` (default 10).
    init : "random" or array_like, shape (k, d); SuLQ only
        Data-independent initial centroids (default ``"random"``: k distinct
        cells of the domain drawn from ``generator``).
    size_fraction : float; SuLQ only
        Share of each round's budget for the sizes, in (0, 1) (default 0.5).
    cell, n, restarts, threshold; grid methods only
        As :func:`plan_kmeans_grid` (``n`` defaults to ``len(points)``, the
        public record count under bounded neighbours, when ``cell`` is
        omitted).

    Returns
    -------
    KMeansGridResult or KMeansResult
        Grid methods: :class:`KMeansGridResult` (``centroids``, the noisy
        node weights, the cell and the ``plan``).  SuLQ:
        :class:`KMeansResult` (``centroids``, ``history`` per round:
        centroids, references, sensitivities and whether they are exact,
        epsilons, scales and the noisy releases; the exact epsilon spent
        and the ``plan``).

    Raises
    ------
    ValueError
        An unknown ``method``, or an option of another method (``init``,
        ``size_fraction`` with a grid method; ``cell``, ``n``,
        ``restarts``, ``threshold`` with ``"sulq"``); and every refusal of
        the method's plan.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy (000 Def 4.2) for P = ``policy`` (no
    constraints), whichever the method.  Grid methods: one release of an
    integer linear query of the histogram (node weights or cell counts)
    with discrete Laplace noise calibrated to its policy-specific
    sensitivity (000 Thm 5.1); Lloyd on the release is post-processing.
    SuLQ: each round's noisy sizes and sums calibrated to their
    sensitivity given that round's public centroids, composed sequentially
    (000 Thm 4.1).  See :func:`plan_kmeans_grid` and :func:`plan_kmeans`.

    Sensitivity
    -----------
    Grid: :func:`grid_sensitivity` of the node weights (``2 s**(d-1)
    min(s, max step)`` under a distance threshold, exact by an edge scan on
    small domains; cell counts: 2 when an edge joins two cells).  SuLQ:
    :func:`kmeans_sensitivity` per round (sizes 2 if an edge crosses two
    clusters; sums the largest change over the edges, across clusters
    ``||x - r_i||_1 + ||y - r_j||_1``, see Corrections to the papers (docs/explanation/corrections.md)).

    Runtime
    -------
    Grid: O(n 2**d) node weights from the points, O(M) noise for M nodes,
    Lloyd on the release.  SuLQ: per round O(n k d) assignment in C and one
    sensitivity scan of the domain.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 5.1, Sec 6 (SuLQ k-means, Lemma 6.1 corrected: see
        Corrections to the papers (docs/explanation/corrections.md)).
    .. [2] Su, Cao, Li, Bertino, Jin. *Differentially Private k-Means Clustering.* CODASPY 2016 (EUGkM).
    .. [3] Blum, Dwork, McSherry, Nissim. *Practical Privacy: The SuLQ Framework.* PODS 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, Generator, Policy, secrets
    >>> from blowfish_privacy.policy.domain import Ordinal
    >>> dom = Domain([Ordinal("x", 0, 15), Ordinal("y", 0, 15)])
    >>> pts = np.random.default_rng(0).integers(0, 16, size=(500, 2))
    >>> pol = Policy(dom, secrets.DistanceThreshold(2))
    >>> r = kmeans(pts, pol, 1.0, Generator(seed=1), k=3)                       # the grid mechanism
    >>> s = kmeans(pts, pol, 1.0, Generator(seed=1), method="sulq", k=3)        # SuLQ rounds
    >>> r.centroids.shape, s.centroids.shape, r.epsilon <= 1.0, s.epsilon <= 1.0
    ((3, 2), (3, 2), True, True)
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    grid_only = {"cell": cell, "n": n, "restarts": restarts, "threshold": threshold}
    if method == "sulq":
        given = [name for name, value in grid_only.items() if value is not None]
        if given:
            raise ValueError(f"{given[0]} applies only to methods 'grid' and 'eugkm', got method='sulq'")
        plan = plan_kmeans(policy, epsilon, k=k, iterations=10 if iterations is None else iterations,
                           init="random" if init is None else init,
                           size_fraction=0.5 if size_fraction is None else size_fraction)
        return plan.measure(points, generator)
    for name, value in (("init", init), ("size_fraction", size_fraction)):
        if value is not None:
            raise ValueError(f"{name} applies only to method='sulq', got method={method!r} (the default method "
                             "is the grid mechanism; pass method='sulq' for SuLQ rounds)")
    options = {name: value for name, value in grid_only.items() if value is not None}
    if iterations is not None:
        options["iterations"] = iterations
    return kmeans_grid(points, policy, epsilon, generator, k=k,
                       interpolation="linear" if method == "grid" else "nearest", **options)
