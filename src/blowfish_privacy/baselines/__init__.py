"""DP baselines: the differentially private algorithms the Blowfish
mechanisms are compared with, at the strength of their published versions
(DPBench: Hay et al., SIGMOD 2016).  Each protects every pair of values
(bounded DP, the full-domain secret graph) and says so in its plan; none of
them uses a policy.  The experiments of ``blowfish dpbench`` run them.

Modules: ``hb`` (uniform, HB), ``mwem``, ``mwem_2d``, ``ahp``, ``greedyh``,
``grids_2d`` (UGrid, AGrid, quadtree, HB-2D), ``dpcube``, ``hybridtree`` and
DAWA on a Hilbert order (``mechanisms.grids.hilbert``).
"""

from .ahp import ahp, plan_ahp
from .dawa_hilbert import dawa_hilbert, plan_dawa_hilbert
from .dpcube import dpcube, plan_dpcube
from .greedyh import greedyh, plan_greedyh
from .grids_2d import agrid, hb2d, hb2d_branching, plan_agrid, plan_hb2d, plan_quadtree, plan_ugrid, quadtree, ugrid
from .hb import hb, hb_branching, plan_hb, plan_uniform, uniform
from .hybridtree import hybridtree, plan_hybridtree
from .mwem import mwem, plan_mwem
from .mwem_2d import mwem_2d, plan_mwem_2d

__all__ = [
    "agrid", "ahp", "dawa_hilbert", "dpcube", "greedyh", "hb", "hb2d", "hb2d_branching", "hb_branching",
    "hybridtree", "mwem", "mwem_2d", "plan_agrid", "plan_ahp", "plan_dawa_hilbert", "plan_dpcube",
    "plan_greedyh", "plan_hb", "plan_hb2d", "plan_hybridtree", "plan_mwem", "plan_mwem_2d", "plan_quadtree",
    "plan_ugrid", "plan_uniform", "quadtree", "ugrid", "uniform",
]
