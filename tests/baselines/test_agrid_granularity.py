"""AGrid's granularities as published (Qardaji, Yang, Li, ICDE 2013), at the unbounded-equivalent epsilon / 2."""

import math

import numpy as np

from blowfish_privacy import audit
from blowfish_privacy.baselines import grids_2d as B2
def test_first_level_from_n_at_half_epsilon():
    n, eps = 10 ** 7, 0.1
    hist = np.zeros((128, 128), np.int64)
    hist[0, 0] = n
    r = B2.plan_agrid((128, 128), eps).measure(hist, audit.RecordingGenerator())  # no noise
    m1 = max(10, math.ceil(math.sqrt(n * (eps / 2) / 10) / 4))
    assert r.params["cells1"] == m1 == 56
    # level 2 from the (here exact) level-1 counts: m2 = ceil(sqrt(N' (1 - alpha) (eps / 2) / (c / 2)))
    m2 = r.params["cells2"]
    assert m2[0] == min(128, math.ceil(math.sqrt(n * 0.5 * (eps / 2) / 5)))
    assert (m2[1:] == 0).all()  # empty cells: not cut (clipped to one sub-cell)
    assert r.histogram.sum() == n
