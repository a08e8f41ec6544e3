"""BlowfishKMeans: how X is read (floats on the grid, bools, missing values) and the refusals before any spend."""

import warnings

import numpy as np
import pytest

from blowfish_privacy import Domain, Ordinal, Policy, secrets
from blowfish_privacy.frames import TableError
from blowfish_privacy.sklearn import MAX_DERIVED_CELLS, BlowfishKMeans, PrivacyLeakWarning

# seeded fits compare two paths; the seeded and data-bounds warnings are tested in tests/test_sklearn.py
pytestmark = [pytest.mark.filterwarnings("ignore::blowfish_privacy.sklearn.SeededNotPrivateWarning"),
              pytest.mark.filterwarnings("ignore::blowfish_privacy.sklearn.PrivacyLeakWarning")]


def two_blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(10, 1, (500, 2)), rng.normal(40, 1, (500, 2))])


def near(centres, want):
    return np.abs(np.asarray(want, float)[:, None] - centres[None]).sum(axis=2).min(axis=1).max()


# -- floats inside the bounds: rounded to the grid, as without bounds -------------------------------------------
@pytest.mark.parametrize("invalid", [pytest.param("error", marks=pytest.mark.slow), "clamp",
                                     pytest.param("drop", marks=pytest.mark.slow)])
def test_floats_inside_the_bounds_are_rounded_not_invalid(invalid):
    X = two_blobs()
    kw = {"bounds": ([0, 0], [49, 49]), "n_clusters": 2, "epsilon": 10, "invalid": invalid, "random_state": 3}
    km = BlowfishKMeans(**kw).fit(X)
    assert near(km.cluster_centers_, [[10, 10], [40, 40]]) < 2, km.cluster_centers_
    # the same release as the integers of the grid: nothing clamped to low, no row dropped
    ref = BlowfishKMeans(**kw).fit(np.rint(X).astype(np.int64))
    np.testing.assert_array_equal(km.cluster_centers_, ref.cluster_centers_)
    assert np.array_equal(km.labels_, km.predict(X)) and (km.labels_ >= 0).all()


@pytest.mark.slow
def test_every_path_puts_floats_on_the_grid_the_same_way():
    X = two_blobs(1)
    X[:4] = [[10.5, 11.5], [9.5, 39.5], [40.49, 40.51], [12.0, 13.0]]  # halves round to even, as numpy.rint
    grid = np.rint(X).astype(np.int64)
    policy = Policy(Domain([Ordinal("x0", 0, 49), Ordinal("x1", 0, 49)]), secrets.DistanceThreshold(1))
    for kw in ({"bounds": ([0, 0], [49, 49])}, {"policy": policy}, {}):
        a = BlowfishKMeans(n_clusters=2, epsilon=10, random_state=5, **kw).fit(X)
        b = BlowfishKMeans(n_clusters=2, epsilon=10, random_state=5, **kw).fit(grid)
        np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
        assert a.policy_ == b.policy_
        # predict, transform, score and labels_ read the rows as given (post-processing of the centroids)
        assert np.array_equal(a.labels_, a.predict(X))
        d2 = ((X[:, None] - a.cluster_centers_[None]) ** 2).sum(axis=2)
        np.testing.assert_allclose(a.transform(X) ** 2, d2, rtol=1e-9, atol=1e-9)
        assert a.score(X) == pytest.approx(-d2.min(axis=1).sum(), rel=1e-9)
    doc = " ".join(BlowfishKMeans.__doc__.split())
    assert "rounded to the nearest integer" in doc and "granularity 1 in the units of ``bounds``" in doc


def test_only_values_outside_the_bounds_after_rounding_are_invalid():
    X = np.array([[0.4, 1.0], [9.4, 2.0], [9.6, 3.0], [-0.6, 4.0]])  # the last two round to 10 and -1: outside
    with pytest.raises(TableError, match=r"^X: attribute 'x0'") as err:
        BlowfishKMeans(bounds=([0, 0], [9, 9]), n_clusters=2).fit(X)
    assert "9.6" not in str(err.value) and "10" not in str(err.value).split("allowed")[0]
    km = BlowfishKMeans(bounds=([0, 0], [9, 9]), n_clusters=2, invalid="clamp").fit(X[:2])  # inside once rounded
    assert km.cluster_centers_.shape == (2, 2)


# -- bools, missing values, messages that name X ---------------------------------------------------------------
def test_bools_are_zero_and_one_on_every_path():
    X = np.array([[True], [False], [True], [True], [False]] * 20)
    for kw in ({"bounds": (0, 1)}, {}):
        a = BlowfishKMeans(n_clusters=2, random_state=1, **kw).fit(X)
        b = BlowfishKMeans(n_clusters=2, random_state=1, **kw).fit(X.astype(np.int64))
        np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
        assert np.array_equal(a.predict(X), b.predict(X.astype(np.int64)))


def test_errors_about_values_name_x_on_arrays_and_tables():
    pd = pytest.importorskip("pandas")
    bad = np.array([[1], [20]])
    for X in (bad, pd.DataFrame({"a": bad[:, 0]})):
        with pytest.raises(TableError) as err:
            BlowfishKMeans(bounds=(0, 9), n_clusters=2).fit(X)
        assert str(err.value).startswith("X: attribute ") and "table" not in str(err.value) and "20" not in \
            str(err.value)


def test_none_is_a_missing_value():
    X = np.array([[1, 2], [None, 3], [4, 5]], dtype=object)
    with pytest.raises(ValueError, match=r"^X: attribute 'x0' has missing values \(None") as err:
        BlowfishKMeans(bounds=([0, 0], [9, 9]), n_clusters=2).fit(X)
    assert "NaN or infinity" not in str(err.value) and "invalid='drop'" in str(err.value)
    km = BlowfishKMeans(bounds=([0, 0], [9, 9]), n_clusters=2, invalid="drop", random_state=0).fit(X)
    assert km.labels_.tolist()[1] == -1 and (km.labels_[[0, 2]] >= 0).all()
    for method in ("predict", "transform", "score"):
        with pytest.raises(ValueError, match="has missing values") as err:
            getattr(km, method)(X)
        assert "NaN or infinity" not in str(err.value)


# -- refusals decided from public inputs: before X's values are read, before any spend --------------------------
NAN_X = np.array([[1.0, np.nan], [2.0, 3.0]])  # refused under invalid="error" once read: a public refusal comes first


def test_bounds_for_another_number_of_columns_of_a_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2], "b": [1, np.nan], "c": [1, 2]})
    with pytest.raises(ValueError, match=r"^bounds give 2 feature\(s\) but X has 3 columns .*n_features mismatch"):
        BlowfishKMeans(bounds=([0, 0], [9, 9]), n_clusters=2).fit(df)


def test_bounds_too_large_for_memory_name_bounds():
    with pytest.raises(ValueError, match=r"^bounds: the box of the bounds has 1,000,000,002,000,000,001 cells.*"
                                         r"allowed: bounds whose box fits") as err:
        BlowfishKMeans(bounds=([0, 0], [10**9, 10**9]), n_clusters=2).fit(NAN_X)
    assert "bin width" not in str(err.value) and "histogram()" not in str(err.value)
    huge = Policy(Domain([Ordinal("a", 0, 10**9), Ordinal("b", 0, 10**9)]), secrets.DistanceThreshold(1))
    with pytest.raises(ValueError, match=r"^policy: its domain has 1,000,000,002,000,000,001 cells"):
        BlowfishKMeans(policy=huge, n_clusters=2).fit(NAN_X)


@pytest.mark.parametrize("method", ["grid", "eugkm", "sulq"])
def test_more_clusters_than_cells_are_refused_on_every_method(method):
    with pytest.raises(ValueError, match=r"n_clusters must be at most the domain size 3 .*got 10"):
        BlowfishKMeans(bounds=(0, 2), n_clusters=10, method=method).fit(NAN_X[:, :1])
    policy = Policy(Domain.ordinal("v", 0, 2), secrets.Line())
    with pytest.raises(ValueError, match=r"n_clusters must be at most the domain size 3 \(the cells of the policy's"):
        BlowfishKMeans(policy=policy, n_clusters=4, method=method).fit(NAN_X[:, :1])


@pytest.mark.parametrize("kw,match", [
    ({"bounds": ([0, 0], [49, 49]), "theta": 0}, r"^theta must be >= 1 .*got theta=0, so no pair of values"),
    ({"bounds": ([0, 0], [49, 49]), "theta": 0.5}, r"^theta must be >= 1 .*got theta=0.5"),
    ({"theta": 0}, r"^theta must be >= 1"),  # bounds read from the data: refused before they are read
    ({"bounds": ([3, 7], [3, 7])}, r"^bounds: every feature's bounds hold a single value, so no pair"),
    ({"policy": Policy(Domain([Ordinal("x0", 0, 49), Ordinal("x1", 0, 49)]), secrets.DistanceThreshold(0))},
     r"^policy: its secret graph DistanceThreshold\(theta=0, metric='l1'\) joins no two values"),
])
def test_a_policy_that_protects_nothing_is_refused(kw, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # no data-bounds warning: X was never read
        with pytest.raises(ValueError, match=match) as err:
            BlowfishKMeans(n_clusters=1, **kw).fit(NAN_X)
    assert "exact" in str(err.value) and "no noise" in str(err.value)


@pytest.mark.slow
def test_a_protecting_policy_still_fits():
    km = BlowfishKMeans(bounds=([0, 0], [49, 49]), theta=1, n_clusters=2, epsilon=10).fit(two_blobs())
    assert km.privacy_["private"] and km.privacy_["epsilon_spent"] > 0


def test_the_span_of_bounds_read_from_the_data_is_not_quoted():
    with pytest.raises(ValueError, match=f"span more cells than the {MAX_DERIVED_CELLS:,} allowed") as err:
        BlowfishKMeans(n_clusters=2).fit([[0], [10**15]])
    msg = str(err.value)
    assert "bounds=" in msg and "1000000000000001" not in msg and "1,000,000,000,000,001" not in msg


# -- a Spark DataFrame is put on the grid in Spark ---------------------------------------------------------------
@pytest.mark.slow
def test_spark_float_and_bool_columns_are_rounded_in_spark(spark_session):
    pd = pytest.importorskip("pandas")
    X = two_blobs()[::5]
    local = pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "flag": X[:, 0] > 25})
    df = spark_session.createDataFrame(local)
    kw = {"bounds": ([0, 0, 0], [49, 49, 1]), "n_clusters": 2, "epsilon": 10, "random_state": 4}
    est = BlowfishKMeans(**kw).fit(df)
    ref = BlowfishKMeans(**kw).fit(local)
    np.testing.assert_array_equal(est.cluster_centers_, ref.cluster_centers_)
    assert near(est.cluster_centers_[:, :2], [[10, 10], [40, 40]]) < 3, est.cluster_centers_
