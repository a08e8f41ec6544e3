"""Shared spec text and data for the release tests."""


import numpy as np

BASE = """
[dataset]
id = "people"
path = "people.csv"
total_epsilon = 1.0

[domain.age]
type = "ordinal"
low = 0
high = 99

[domain.sex]
type = "categorical"
labels = ["f", "m"]

[policies.near]
secrets = "distance_threshold"
theta = 5

[policies.by_sex]
secrets = "partition"
by = ["sex"]

[[release]]
name = "age-cdf"
kind = "cdf"
attributes = ["age"]
policy = "near"
epsilon = 0.25
ranges = [[10, 20]]
quantiles = [0.5]

[[release]]
name = "age-sex"
kind = "histogram"
attributes = ["sex", "age"]
policy = "by_sex"
epsilon = 0.25
"""

#: Appended to a spec: a seeded test run (NOT private; needs --seeded-test).
SEEDED = "\n[run]\nseed = 7\n"


def people(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 100, n), rng.choice(["f", "m"], n)
