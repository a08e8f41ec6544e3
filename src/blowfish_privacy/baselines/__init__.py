"""DP baselines: the differentially private algorithms the Blowfish mechanisms are compared with.

They are run at the strength of their published versions, under the
protocol of DPBench (Hay et al. SIGMOD 2016); ``blowfish dpbench`` and
:mod:`blowfish_privacy.experiments` run them beside the Blowfish
mechanisms of :mod:`blowfish_privacy.mechanisms`.  None of them uses a
policy's secret graph.

Guarantee
    Every baseline is bounded epsilon-differential privacy: two datasets
    are neighbours when one record changes its value, so the number of
    records n is public.  In Blowfish terms that is (epsilon,
    FullDomain)-Blowfish privacy, the full-domain (complete) secret graph
    (He, Machanavajjhala, Ding SIGMOD 2014, Sec 4.2).  Every plan says so in
    ``plan.guarantee`` and names its paper in ``plan.citation``; a plan's
    first argument is the public size or shape, or a FullDomain
    :class:`~blowfish_privacy.Policy` on an ordinal domain (so that
    :func:`blowfish_privacy.audit.exact` can check it on tiny domains).

Each baseline is a ``plan_<name>(shape, epsilon, **options)`` that returns a
:class:`~blowfish_privacy.mechanisms.plan.Plan` (``plan.measure(hist,
generator)`` releases), and a functional form ``<name>(hist, epsilon,
generator, **options)`` that plans and measures in one call.

1-D histograms
    ``uniform`` (:mod:`.hb`)
        n / |T| in every cell, free under bounded DP, or with a noisy
        total (DPBench's Uniform; Hay et al. SIGMOD 2016).  Any shape.
    ``hb`` (:mod:`.hb`)
        The hierarchical method with the branching factor of
        ``hb_branching`` (Qardaji, Yang, Li PVLDB 2013).
    ``mwem`` (:mod:`.mwem`)
        Multiplicative weights over a range workload, selections by
        report-noisy-max with discrete Laplace noise (Hardt, Ligett,
        McSherry NeurIPS 2012).
    ``ahp`` (:mod:`.ahp`)
        Noisy histogram, thresholding, greedy clustering of similar counts,
        cluster averages (Zhang, Chen, Xu, Meng, Xie SDM 2014).
    ``greedyh`` (:mod:`.greedyh`)
        A binary hierarchy whose budget per node (or per level) is chosen
        greedily for a range workload: DAWA's second step on its own (Li,
        Hay, Miklau, Wang PVLDB 2014, Sec 4).
2-D histograms
    ``hb2d`` (:mod:`.grids_2d`)
        HB in 2-D: the tensor product of two b-ary trees, b from
        ``hb2d_branching`` (Qardaji, Yang, Li PVLDB 2013).
    ``ugrid``, ``agrid`` (:mod:`.grids_2d`)
        A uniform grid sized from n, and the adaptive two-level grid
        (Qardaji, Yang, Li ICDE 2013).
    ``quadtree`` (:mod:`.quadtree`)
        The quadtree down to single cells with the geometric budget and
        weighted least squares (Cormode, Procopiuc, Srivastava, Shen, Yu
        ICDE 2012).
    ``hybridtree`` (:mod:`.hybridtree`)
        kd levels at private medians, then quadtree levels (Cormode et al.
        ICDE 2012, Sec 6).
    ``dpcube`` (:mod:`.dpcube`)
        A noisy cell histogram, a kd-tree partition fitted to it, noisy
        partition counts combined with the cells (Xiao, Xiong, Fan,
        Goryczka, Li TDP 2014).
    ``mwem_2d`` (:mod:`.mwem_2d`)
        MWEM over rectangle workloads (Hardt, Ligett, McSherry NeurIPS 2012).
    ``dawa_hilbert`` (:mod:`.dawa_hilbert`)
        DAWA on the Hilbert-curve order of a k x k grid, with its
        workload step for rectangles (Li, Hay, Miklau, Wang PVLDB 2014; the
        Hilbert order as in Hay et al. SIGMOD 2016).

The Blowfish mechanisms that beat them under a weaker secret graph (a
line, a distance threshold, a grid) are in :mod:`blowfish_privacy.mechanisms`;
:mod:`blowfish_privacy.guarantee` puts the two guarantees side by side in
numbers.

Example
-------
>>> import numpy as np
>>> from blowfish_privacy import Generator, baselines
>>> hist = np.array([5, 0, 3, 8, 1, 0, 2, 4])
>>> plan = baselines.plan_hb(hist.size, 1.0)
>>> plan.guarantee.startswith("(epsilon, FullDomain)-Blowfish")
True
>>> release = plan.measure(hist, Generator(seed=7))
>>> release.histogram.shape, release.epsilon
((8,), 1.0)
"""

from .ahp import ahp, plan_ahp
from .dawa_hilbert import dawa_hilbert, plan_dawa_hilbert
from .dpcube import dpcube, plan_dpcube
from .greedyh import greedyh, plan_greedyh
from .grids_2d import agrid, hb2d, hb2d_branching, plan_agrid, plan_hb2d, plan_ugrid, ugrid
from .hb import hb, hb_branching, plan_hb, plan_uniform, uniform
from .hybridtree import hybridtree, plan_hybridtree
from .mwem import mwem, plan_mwem
from .mwem_2d import mwem_2d, plan_mwem_2d
from .quadtree import plan_quadtree, quadtree

__all__ = [
    "agrid", "ahp", "dawa_hilbert", "dpcube", "greedyh", "hb", "hb2d", "hb2d_branching", "hb_branching",
    "hybridtree", "mwem", "mwem_2d", "plan_agrid", "plan_ahp", "plan_dawa_hilbert", "plan_dpcube",
    "plan_greedyh", "plan_hb", "plan_hb2d", "plan_hybridtree", "plan_mwem", "plan_mwem_2d", "plan_quadtree",
    "plan_ugrid", "plan_uniform", "quadtree", "ugrid", "uniform",
]
