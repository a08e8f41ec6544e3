"""Quick start: a cumulative histogram under a distance-threshold policy.

Run after installing the package:  python examples/quickstart.py
"""

import numpy as np

from blowfish_privacy import Accountant, Domain, Generator, Policy, mechanisms, secrets

# Synthetic ages (no download needed): 10,000 people aged 17..90.
rng = np.random.default_rng(0)
ages = np.clip(rng.normal(40, 13, size=10_000).round(), 17, 90).astype(int)

domain = Domain.ordinal("age", 17, 90)
# Secret: an individual's age must not be pinned down to within 5 years.
policy = Policy(domain, secrets.DistanceThreshold(theta=5))
dp_policy = Policy(domain, secrets.FullDomain())  # plain (bounded) DP

hist = np.bincount(domain.encode(ages), minlength=domain.size)
cdf = np.cumsum(hist)

accountant = Accountant(1.0, policy=policy)
generator = Generator()  # secure: keyed from the operating system

for name, pol in [("Blowfish, theta=5", policy), ("differential privacy", dp_policy)]:
    sens = pol.sensitivity("cumulative")
    release = mechanisms.laplace(cdf, sensitivity=sens, epsilon=0.5, generator=generator)
    accountant.spend(release, label=name)
    rmse = float(np.sqrt(np.mean((release.values - cdf) ** 2)))
    print(f"{name:22s} sensitivity {sens:3d}  scale {float(release.scale):6.1f}  "
          f"RMSE of the CDF {rmse:8.1f}  epsilon spent {release.epsilon}")

print(f"budget left: {accountant.remaining}")
