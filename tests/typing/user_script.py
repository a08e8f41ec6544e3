"""A user's script over every documented entry point, checked by ``mypy --strict`` (tests/test_typing.py).

It is also a program that runs (quickly: small domains, seeded only where the
documentation seeds).  Each result is bound to the type a user would expect,
and the key ones are pinned with ``assert_type`` so that an ``Any`` from the
library fails the check instead of passing silently.
"""

from __future__ import annotations

import pathlib
import tempfile
from fractions import Fraction
from typing import assert_type

import numpy as np
import numpy.typing as npt
import pandas as pd

import blowfish_privacy
from blowfish_privacy import (
    Accountant,
    Categorical,
    Domain,
    Generator,
    Ordinal,
    Policy,
    audit,
    baselines,
    constraints,
    histogram,
    mechanisms,
    secrets,
    transform,
    workloads,
)
from blowfish_privacy.constraints import CountQuery, Marginal, RangeCount
from blowfish_privacy.baselines.ahp import ahp_clusters
from blowfish_privacy.baselines.dawa_hilbert import greedy_bucket_shares, level_share_error
from blowfish_privacy.baselines.dpcube import kd_partition
from blowfish_privacy.baselines.greedyh import all_range_error, all_range_shares
from blowfish_privacy.baselines.grids_2d import agrid_first_cells, ugrid_cells
from blowfish_privacy.baselines.hybridtree import hybridtree_levels
from blowfish_privacy.baselines.mwem import dyadic_ranges
from blowfish_privacy.baselines.quadtree import quadtree_shares
from blowfish_privacy.datasets import adult_capital_loss, skin
from blowfish_privacy.explain import Explanation, explain
from blowfish_privacy.guarantee import GuaranteeTable, guarantee_comparison, guarantee_table
from blowfish_privacy.mechanisms import (
    CumulativeRelease,
    HistogramRelease,
    KMeansGridResult,
    KMeansResult,
    Plan,
    Release,
    kmeans_grid,
    kmeans_objective,
    lloyd,
    plan_optimized,
)
from blowfish_privacy.release import Ledger, LocalEngine, RunResult, Spec, load_spec, release, run_spec
from blowfish_privacy.sklearn import BlowfishKMeans

version: str = blowfish_privacy.__version__
rng = np.random.default_rng(0)

# -- domains --------------------------------------------------------------------------------
age: Domain = Domain.ordinal("age", 17, 90)
two_d = Domain([Ordinal("age", 17, 90), Ordinal("hours", 1, 99)])
mixed = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99, bin_width=20), Ordinal("income", 0, 9)])
shape: tuple[int, ...] = mixed.shape
size: int = age.size
ages = rng.integers(17, 91, size=2_000)
codes: npt.NDArray[np.int64] = age.encode(ages)
assert_type(age.encode(ages), npt.NDArray[np.int64])
df = pd.DataFrame({"age": ages, "hours": rng.integers(1, 100, 2_000)})
codes_df: npt.NDArray[np.int64] = two_d.encode(df)

# -- policies ---------------------------------------------------------------------------------
policy: Policy = Policy(age, secrets.DistanceThreshold(theta=5))
line = Policy(Domain.ordinal("x", 0, 63), secrets.Line())
dp = Policy(age, secrets.FullDomain())
box: Policy = Policy.from_bounds(([17, 1], [90, 99]), theta=5, names=["age", "hours"])
sens: int | float = policy.sensitivity("cumulative")
assert_type(policy.sensitivity("histogram"), int | float)
graphs: list[secrets.SecretGraph] = [
    secrets.FullDomain(),
    secrets.Attribute(),
    secrets.Partition([[0, 1], [2, 3]]),
    secrets.DistanceThreshold(2, metric="l2"),
    secrets.Line(),
    secrets.Custom([(0, 1), (1, 2)]),
    secrets.Intersection([secrets.DistanceThreshold(2), secrets.Partition([[0, 1, 2], [3]])]),
]
small = Domain.ordinal("v", 0, 3)
described: list[str] = [g.describe(small) for g in graphs]
counted = Policy(small, secrets.FullDomain(),
                 [CountQuery(lambda r: r["v"] >= 2, answer=10), RangeCount(0, 1, answer=5)])
record = age.record_of(3)
d_g = policy.distance(0, 10)
print(policy.explain(epsilon=0.5))
print(policy.sensitivity_report())

# -- histograms from tables -------------------------------------------------------------------
hist: npt.NDArray[np.int64] = histogram(df, policy)
assert_type(histogram(df, age), npt.NDArray[np.int64])
hist_2d = histogram(df, two_d, invalid="clamp")

# -- plans and releases -----------------------------------------------------------------------
plan: Plan[CumulativeRelease] = mechanisms.plan_ordered_hierarchical(policy, epsilon=0.5)
eps_exact: Fraction = plan.epsilon_exact
assert_type(plan.parts[0].scale, Fraction | None)
eps: float = plan.epsilon
parts: list[tuple[str, int | Fraction | None, Fraction | None]] = [(p.name, p.sensitivity, p.scale) for p in plan.parts]
planned_error: dict[str, float] = plan.expected_error
measured = plan.measure(hist, Generator())
assert_type(measured, CumulativeRelease)
last: float = float(measured.cumulative[-1])
summary = measured.summary()
spent: float = summary["epsilon_spent"]

cdf: CumulativeRelease = mechanisms.ordered_hierarchical(hist, policy, epsilon=0.5, generator=Generator())
x: float = cdf.range_query(30, 39)
assert_type(cdf.range_query(30, 39), float)
xs: npt.NDArray[np.float64] = cdf.range_query(np.array([20, 30]), np.array([29, 39]))
median: int = cdf.quantile(0.5)
assert_type(cdf.quantile(0.5), int)
quartiles: npt.NDArray[np.int64] = cdf.quantile([0.25, 0.5, 0.75])
per_bin: npt.NDArray[np.float64] = cdf.histogram
cumulative: npt.NDArray[np.float64] = cdf.cumulative
range_mse: float = cdf.expected_range_error()
epsilon_spent: float = cdf.epsilon
guarantee_words: str = cdf.guarantee
released: npt.NDArray[np.float64] = cdf.released_values
ordered: CumulativeRelease = mechanisms.ordered(hist, policy, 0.5, Generator())
dp_cdfs: list[CumulativeRelease] = [
    mechanisms.hierarchical(hist, 0.5, Generator()),
    mechanisms.identity(hist, 0.5, Generator()),
]
assert_type(mechanisms.plan_ordered(policy, 0.5).measure(hist), CumulativeRelease)
assert_type(mechanisms.plan_histogram(policy, 0.5).measure(hist), mechanisms.LaplaceResult)
assert_type(mechanisms.plan_transformed_laplace(policy, 0.5).measure(hist), HistogramRelease)
described_plan: dict[str, object] = plan.describe()
domain_cl, loss_hist = adult_capital_loss()
assert_type(loss_hist, npt.NDArray[np.int64])
assert_type(skin(0.001)[1], npt.NDArray[np.int64])

# the generator's samplers: one draw is an int, a shape gives an array
one_draw: int = Generator(seed=1).discrete_laplace(2.0)
assert_type(Generator(seed=1).discrete_laplace(2.0), int)
draws: npt.NDArray[np.int64] = Generator(seed=1).discrete_laplace(Fraction(5, 2), size=(3, 4))
assert_type(Generator(seed=1).discrete_laplace(2.0, 10), npt.NDArray[np.int64])
noisy_counts: npt.NDArray[np.int64] = Generator().add_discrete_laplace(np.arange(5), 2)
die: int = Generator().integers(6)
coins: npt.NDArray[np.uint8] = Generator().bernoulli_exp(Fraction(1, 2), size=8)
scale_used: Fraction = Generator.effective_scale(0.3)

counts: npt.NDArray[np.int64] = np.cumsum(np.bincount(codes, minlength=age.size))
lap = mechanisms.laplace(counts, sensitivity=policy.sensitivity("cumulative"), epsilon=0.5, generator=Generator())
lap_values: npt.NDArray[np.int64] = lap.values
assert_type(lap.values, npt.NDArray[np.int64])
accountant = Accountant(1.0, policy=policy)
accountant.spend(lap)
remaining: float = accountant.remaining
remaining_exact: Fraction = accountant.remaining_exact

line_hist = np.bincount(rng.zipf(1.5, 2_000) % 64, minlength=64)
g = Generator()
releases: list[HistogramRelease] = [
    mechanisms.transformed_laplace(line_hist, line, 0.1, g),
    mechanisms.dawa_transformed(line_hist, line, 0.1, g),
    mechanisms.matching_transformed(line_hist, line, 0.1, g),
    mechanisms.dawa(line_hist, 0.1, g),
    mechanisms.privelet(line_hist, 0.1, g),
]
buckets = releases[1].params["n_buckets"]
noisy: npt.NDArray[np.int64] | npt.NDArray[np.float64] = releases[0].histogram
tree = transform.spanning_tree(line)
xg: npt.NDArray[np.int64] = transform.transform(line_hist, tree)
back: npt.NDArray[np.int64] = transform.inverse(xg, tree)

# -- DP baselines ---------------------------------------------------------------------------------
hist_1d = rng.integers(0, 20, size=16)
hist_2d_small = rng.integers(0, 20, size=(8, 8))
one_d: list[HistogramRelease] = [
    baselines.uniform(hist_1d, 1.0, Generator(), noisy_total=True),
    baselines.greedyh(hist_1d, 1.0, Generator(), workload=np.array([[0, 3], [4, 15]]), weights="level"),
    baselines.ahp(hist_1d, Fraction(1, 2), Generator(), ratio=0.85, eta=0.35),
    baselines.mwem(hist_1d, 1.0, Generator(), rounds=2, passes=3),
]
assert_type(baselines.hb(hist_1d, 1.0, Generator(), keep_noisy=True), CumulativeRelease)
assert_type(baselines.greedyh(hist_1d, 1.0), HistogramRelease)
assert_type(baselines.ahp(hist_1d, 1.0), HistogramRelease)
two_d_releases: list[HistogramRelease] = [
    baselines.hb2d(hist_2d_small, 1.0, Generator()),
    baselines.ugrid(hist_2d_small, 1.0, Generator(), cells=4),
    baselines.agrid(hist_2d_small, 1.0, Generator(), alpha=Fraction(1, 2), cells1=2, cells2=2),
    baselines.quadtree(hist_2d_small, 1.0, Generator(), budget="uniform"),
    baselines.hybridtree(hist_2d_small, 1.0, Generator(), kd_levels=1, height=3),
    baselines.dpcube(hist_2d_small, 1.0, Generator(), cell_side=2),
    baselines.mwem_2d(hist_2d_small, 1.0, Generator(), rounds=2, rectangles=np.array([[0, 3, 0, 3]])),
    baselines.dawa_hilbert(hist_2d_small, 1.0, Generator(), ratio=0.5, integer="round"),
    baselines.uniform(hist_2d_small, 1.0),
]
assert_type(baselines.quadtree(hist_2d_small, 1.0), HistogramRelease)
assert_type(baselines.dawa_hilbert(hist_2d_small, 1.0, workload=np.array([[0, 3, 0, 3]])), HistogramRelease)
hb_plan: Plan[CumulativeRelease] = baselines.plan_hb(hist_1d.size, 1.0)
assert_type(baselines.plan_hb(16, 1.0).measure(hist_1d, Generator()), CumulativeRelease)
assert_type(baselines.plan_greedyh(16, 1.0), Plan[HistogramRelease])
assert_type(baselines.plan_uniform((8, 8), 1.0), Plan[HistogramRelease])
assert_type(baselines.plan_quadtree(hist_2d_small.shape, 1.0).measure(hist_2d_small), HistogramRelease)
dp_grid = Policy(Domain([Ordinal("row", 0, 7), Ordinal("col", 0, 7)]), secrets.FullDomain())
assert_type(baselines.plan_agrid(dp_grid, 1.0, c=10.0), Plan[HistogramRelease])
plans_2d: list[Plan[HistogramRelease]] = [
    baselines.plan_ugrid((8, 8), 1.0), baselines.plan_hb2d((8, 8), 1.0), baselines.plan_dpcube((8, 8), 1.0),
    baselines.plan_hybridtree((8, 8), 1.0), baselines.plan_mwem_2d((8, 8), 1.0),
    baselines.plan_dawa_hilbert((8, 8), 1.0), baselines.plan_ahp((8, 8), 1.0), baselines.plan_mwem(16, 1.0),
]
branching: int = baselines.hb_branching(16) + baselines.hb2d_branching(8)
assert_type(baselines.hb_branching(16), int)
# helpers of the baselines' modules (public inputs only)
assert_type(dyadic_ranges(16), npt.NDArray[np.int64])
assert_type(quadtree_shares(3, "geometric"), list[Fraction])
assert_type(all_range_shares(16, 1.0), list[Fraction])
range_error: float = all_range_error(all_range_shares(16, 1.0), 16, 1.0)
assert_type(ahp_clusters(np.array([3.0, 0.5, 8.0]), 1.0, 2.0), npt.NDArray[np.int64])
assert_type(kd_partition(np.ones((4, 4)), np.arange(5), np.arange(5), 0.0), npt.NDArray[np.int64])
bucket_shares: list[Fraction] = greedy_bucket_shares(np.array([0, 2, 4, 7]), 1.0, 3)
share_error: float = level_share_error([0.0, 0.5, 1.0], np.array([0, 2, 4, 7]), 1.0)
grid_sides: list[int] = [ugrid_cells(1_000, 1.0), agrid_first_cells(1_000, 1.0), hybridtree_levels((8, 8), 2)]

# -- public constraints -----------------------------------------------------------------------
mixed_hist = rng.integers(0, 50, size=mixed.shape)
public = Policy(mixed, secrets.FullDomain(), [Marginal(["sex", "age"], answers=mixed_hist.sum(axis=2))])
constrained = mechanisms.constrained_histogram(mixed_hist, public, epsilon=1.0, generator=Generator())
constrained_values: npt.NDArray[np.float64] = constrained.values
constraint: constraints.Constraint = public.constraints[0]

# -- workloads and optimised strategies ---------------------------------------------------------
grid_domain = Domain([Ordinal("row", 0, 7), Ordinal("col", 0, 7)])
W: workloads.Workload = workloads.RandomRectangles((8, 8), 20, np.random.default_rng(0))
prefix: workloads.Workload = workloads.Prefix(16)
several: list[workloads.Workload] = [
    workloads.Identity(16),
    workloads.Total(16),
    workloads.AllRanges(16),
    workloads.Ranges(16, [(0, 3), (4, 15)]),
    workloads.RandomRanges(16, 10, np.random.default_rng(1)),
    workloads.Rectangles((8, 8), [(0, 3, 0, 3)]),
    workloads.Kronecker(workloads.Prefix(8), workloads.Identity(8)),
    workloads.Marginals((8, 8), [[0], [1]]),
    workloads.Stack(workloads.Total(16), workloads.Prefix(16)),
    workloads.Explicit(np.eye(4)),
]
gram: npt.NDArray[np.float64] = prefix.gram()
rows: int = prefix.size
answers: npt.NDArray[np.float64] = prefix.answer(np.arange(16))
opt: Plan[HistogramRelease] = plan_optimized(W, Policy(grid_domain, secrets.DistanceThreshold(1)), 1.0, restarts=1,
                                    bound=False)
chosen = opt.options["chosen"]
opt_release: Release = opt.measure(rng.integers(0, 5, size=(8, 8)), Generator())
assert_type(opt.measure(rng.integers(0, 5, size=(8, 8))), HistogramRelease)

# -- Pufferfish sums ----------------------------------------------------------------------------
incomes = rng.exponential(50_000, size=1_000)
total = mechanisms.pufferfish_sum(incomes, absolute_error=1_000, epsilon=1.0, bounds=(0, 2_000_000),
                                  generator=Generator())
total_value: float = total.value
assert_type(total.value, float)

# -- k-means --------------------------------------------------------------------------------------
pts = two_d.encode(df[["age", "hours"]].to_numpy())
km_policy = Policy(two_d, secrets.DistanceThreshold(8))
sulq: KMeansResult = mechanisms.kmeans(df[["age", "hours"]].to_numpy(), km_policy, 1.0, Generator(), method="sulq",
                                       k=3, iterations=2)
centroids: npt.NDArray[np.float64] = sulq.centroids
assert_type(sulq.centroids, npt.NDArray[np.float64])
default_km = mechanisms.kmeans(df[["age", "hours"]].to_numpy(), km_policy, 1.0, Generator(), k=3)
assert_type(default_km, KMeansGridResult)
grid_km: KMeansGridResult = kmeans_grid(df[["age", "hours"]].to_numpy(), km_policy, 0.5, Generator(), k=3)
objective: float = kmeans_objective(df[["age", "hours"]].to_numpy(), grid_km.centroids)
baseline: npt.NDArray[np.float64] = lloyd(df[["age", "hours"]].to_numpy(), two_d, sulq.initial_centroids)
skin_domain, skin_points = skin(0.001)

est = BlowfishKMeans(policy=km_policy, epsilon=1.0, n_clusters=3)
fitted: BlowfishKMeans = est.fit(df)
labels: npt.NDArray[np.int64] = fitted.predict(df)
distances: npt.NDArray[np.float64] = fitted.transform(df)
score: float = fitted.score(df)
assert_type(est.fit(df), BlowfishKMeans)
assert_type(fitted.predict(df), npt.NDArray[np.int64])
assert_type(fitted.transform(df), npt.NDArray[np.float64])
assert_type(fitted.score(df), float)
assert_type(fitted.cluster_centers_, npt.NDArray[np.float64])
centers: npt.NDArray[np.float64] = fitted.cluster_centers_
privacy_spent = fitted.privacy_["epsilon_spent"]
by_bounds = BlowfishKMeans(bounds=([17, 1], [90, 99]), theta=4, n_clusters=2, epsilon=1.0).fit(
    df[["age", "hours"]].to_numpy())
fit_labels: npt.NDArray[np.int64] = BlowfishKMeans(policy=km_policy, n_clusters=2).fit_predict(df)

# -- explain, guarantee, audit --------------------------------------------------------------------
explanation: Explanation = explain(policy, epsilon=0.5)
assert_type(policy.explain(0.5), Explanation)
text: str = str(explanation)
table: GuaranteeTable = guarantee_table(policy, 0.5)
tiny = Policy(Domain.ordinal("x", 0, 5), secrets.DistanceThreshold(2))
report: audit.AuditReport = audit.exact(mechanisms.ordered_hierarchical, tiny, epsilon=1.0, n=3, fanout=2)
passed: bool = report.ok
assert_type(report.max_log_ratio, float)
sampled = audit.sampled(lambda data, gen: gen.discrete_laplace(1.0) + data, 0, 1, epsilon=1.0, runs=200)
sampled_ok: bool = sampled.ok
pairs = audit.neighbour_pairs(tiny, 2)
comparison: str = guarantee_comparison({"near": policy, "dp": dp}, 0.5)

# -- the release product --------------------------------------------------------------------------
SPEC = """
[dataset]
id = "survey"
total_epsilon = 1.0
[domain.age]
type = "ordinal"
low = 17
high = 90
[policies.near]
secrets = "distance_threshold"
theta = 5
[[release]]
name = "age-cdf"
kind = "cdf"
attributes = ["age"]
policy = "near"
epsilon = 0.5
"""
with tempfile.TemporaryDirectory() as tmp:
    result = release(SPEC, df, ledger=pathlib.Path(tmp, "ledger.sqlite"), new_ledger=True,
                                out_dir=pathlib.Path(tmp, "out"), plots=False)
    assert_type(result, RunResult)
    first_spent = result.releases[0]["epsilon_spent"]
    files: list[pathlib.Path] = result.files
    csv = pathlib.Path(tmp, "survey.csv")
    df.to_csv(csv, index=False)
    spec_path = pathlib.Path(tmp, "survey.toml")
    spec_path.write_text(SPEC.replace('id = "survey"', f'id = "survey"\npath = "{csv}"'))
    spec: Spec = load_spec(spec_path)
    ledger = Ledger(pathlib.Path(tmp, "ledger2.sqlite"))
    run: RunResult = run_spec(spec, engine=LocalEngine(), ledger=ledger, out_dir=pathlib.Path(tmp, "out2"),
                              plots=False)
    left: Fraction | None = ledger.remaining("survey")
    ledger_text: str = ledger.text()
    ledger_runs = ledger.runs()
    ledger_summary = ledger.summary()
