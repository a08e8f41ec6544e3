"""Public counts: calibrate to the constraints, then make the release consistent.

Part 1: a 3-attribute table whose (sex, age band) marginal is already public.
Part 2: the attack of 000 Sec 3.2 / 004 Ex 3.1.  With the k-1 sums
c(r_i) + c(r_{i+1}) public, an attacker combines k noisy counts into k
estimators of c(r_1) and averages them.  With DP noise (sensitivity 2) the
squared error falls like 1/k; calibrated to the true sensitivity under the
constraints (S = k for even k, derived in tests/mechanisms/test_constrained.py
and checked by brute force for small k) it does not.

Run after installing the package:  python examples/public_constraints.py
"""

import numpy as np

from blowfish_privacy import Categorical, Domain, Generator, Ordinal, Policy, mechanisms, secrets
from blowfish_privacy.constraints import CountQuery, Marginal

rng = np.random.default_rng(0)
generator = Generator(seed=7)  # seeded so the printout is reproducible; use Generator() for real releases

# -- Part 1 --------------------------------------------------------------------
domain = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99, bin_width=20), Ordinal("income", 0, 9)])
hist = rng.integers(0, 50, size=domain.shape)
public = Marginal(["sex", "age"], answers=hist.sum(axis=2))
policy = Policy(domain, secrets.FullDomain(), [public])
report = policy.sensitivity_report()
print(f"sensitivity {report.value} ({report.rule}; tight: {report.tight})")
r = mechanisms.constrained_histogram(hist, policy, epsilon=1.0, generator=generator)
raw = np.sqrt(np.mean((r.noisy - hist) ** 2))
fit = np.sqrt(np.mean((r.values - hist) ** 2))
print(f"RMSE per cell: noisy {raw:.1f}, consistent ({r.method}) {fit:.1f}")
print("public marginal reproduced:", np.allclose(r.values.sum(axis=2), hist.sum(axis=2)))

# -- Part 2 --------------------------------------------------------------------
print("\naveraging attack on public pair sums (epsilon = 1)")
for k in (8, 32, 128):
    d = Domain.ordinal("r", 1, k)
    h = rng.integers(5, 15, size=k)
    sums = h[:-1] + h[1:]
    queries = [CountQuery(np.isin(np.arange(k), [i, i + 1]), answer=int(a)) for i, a in enumerate(sums)]
    pol = Policy(d, secrets.FullDomain(), queries)  # overlapping: the library proves no bound itself
    sign = (-1.0) ** np.arange(k)
    offset = np.concatenate([[0.0], np.cumsum(sign[:-1] * sums)])
    line = []
    for label, sens in (("DP (S=2)", 2), (f"Blowfish (S={k})", k)):
        errs = []
        for _ in range(200):
            rel = mechanisms.constrained_histogram(h, pol, 1.0, generator, consistent=False, sensitivity=sens)
            errs.append((np.mean(offset + sign * rel.noisy) - h[0]) ** 2)
        line.append(f"{label}: attacker MSE {np.mean(errs):8.2f}")
    print(f"k = {k:3d}   " + "   ".join(line))
