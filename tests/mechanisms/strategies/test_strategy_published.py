"""The error formula and the SVD bound against HDMM's published 1-D figures.

The HDMM authors' experiment table ``experiments/journal/oned.csv`` in the
public repository dpcomp-org/hdmm (McKenna, Miklau, Hay, Machanavajjhala,
PVLDB 11(10) 2018, the 1-D comparison) lists the root mean squared error per
query of strategies under L2 column-norm sensitivity (``||W A^+||_F^2 *
max_j ||A e_j||_2^2 / q``, epsilon-free) and the SVD bound ``(sum
sigma(W))^2 / N / q``.  Our :func:`strategy_error` and :func:`dp_lower_bound`
must reproduce them (the figures are copied here as numbers, with their
source).
"""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_privacy.mechanisms import dp_lower_bound, hierarchical_strategy, strategy_error
from blowfish_privacy.workloads import AllRanges, Prefix

# (domain, workload) -> (Identity, H2, SVDB) root-MSE, from oned.csv
PUBLISHED = {
    (128, "all-range"): (6.582805886043833, 3.4252515061976374, 2.5734725086329013),
    (128, "prefix"): (8.031189202104505, 2.8099401583796952, 2.2544140344498174),
    (256, "all-range"): (9.273618495495704, 3.835363996450649, 2.8763585581409346),
    (256, "prefix"): (11.335784048754634, 3.1022372719717644, 2.4714459649021547),
    (512, "all-range"): (13.089435944047908, 4.244976951040033, 3.1832074764205527),
    (1024, "all-range"): (18.49324200890693, 4.654169977877171, 3.4923407505042805),
}


@pytest.mark.parametrize("n,workload", [pytest.param(*k, marks=pytest.mark.slow) if k[0] >= 512 else k
                                        for k in sorted(PUBLISHED)])  # 512 and 1024: 2-5 s each
def test_identity_binary_hierarchy_and_svd_bound_match_hdmm_table(n, workload):
    W = AllRanges(n) if workload == "all-range" else Prefix(n)
    q = W.n_queries
    identity, h2, svdb = PUBLISHED[(n, workload)]
    assert np.sqrt(strategy_error(np.eye(n), W) / q) == pytest.approx(identity, rel=1e-9)
    H = hierarchical_strategy(n, 2)
    levels = float((H * H).sum(axis=0).max())  # squared L2 column norm: the number of levels
    assert np.sqrt(strategy_error(H, W) * levels / q) == pytest.approx(h2, rel=1e-9)
    assert np.sqrt(dp_lower_bound(W)["per_unit"] / q) == pytest.approx(svdb, rel=1e-6)
