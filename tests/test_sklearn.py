"""blowfish_privacy.sklearn.BlowfishKMeans: estimator conventions, privacy record, DataFrames, scikit-learn's checks."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from blowfish_privacy import Domain, Ordinal, Policy, secrets
from blowfish_privacy.frames import TableError
from blowfish_privacy.sklearn import (EXPECTED_FAILED_CHECKS, FEATURE_COUNT_CHECKS, POLICY_EXPECTED_FAILED_CHECKS,
                                      BlowfishKMeans, NotFittedError, PrivacyLeakWarning, SeededNotPrivateWarning)

DOMAIN = Domain([Ordinal("x", 0, 63), Ordinal("y", 0, 63)])
POLICY = Policy(DOMAIN, secrets.DistanceThreshold(2))
CENTRES = np.array([[10, 10], [50, 15], [30, 52]])


def blobs(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 3, n)
    pts = np.clip(np.rint(CENTRES[lab] + rng.normal(0, 3, (n, 2))), 0, 63).astype(np.int64)
    return pts, lab


def _table(lib, pts):
    data = {"y": pts[:, 1], "note": np.zeros(len(pts)), "x": pts[:, 0]}  # by name, not by position
    mod = pytest.importorskip(lib)
    return mod.table(data) if lib == "pyarrow" else mod.DataFrame(data)


# seeded fits are tests: their warning is checked once, in test_seeded_runs_warn_say_not_private_and_repeat
pytestmark = pytest.mark.filterwarnings("ignore::blowfish_privacy.sklearn.SeededNotPrivateWarning")


def _seeded(**kw):
    return BlowfishKMeans(policy=POLICY, **kw)


@pytest.mark.parametrize("lib", ["numpy", "pandas", "polars", "pyarrow"])
def test_end_to_end_on_tables(lib):
    pts, _ = blobs()
    X = pts if lib == "numpy" else _table(lib, pts)
    km = BlowfishKMeans(policy=POLICY, epsilon=5.0, n_clusters=3, max_iter=5, init=CENTRES + 3, method="sulq")
    labels = km.fit_predict(X)
    assert km.cluster_centers_.shape == (3, 2) and km.n_iter_ == 5 and km.n_features_in_ == 2
    # good centroids: every true centre has a private centroid nearby (sum noise scale ~ 2*S/eps per round)
    d = np.abs(CENTRES[:, None, :] - km.cluster_centers_[None]).sum(axis=2).min(axis=1)
    assert d.max() < 8, km.cluster_centers_
    assert np.array_equal(labels, km.predict(X)) and set(labels.tolist()) <= {0, 1, 2}
    p = km.privacy_
    assert p["private"] and not p["seeded"] and p["epsilon_spent"] <= 5.0
    assert len(p["sensitivities"]) == 5 and all(s["sum"] > 0 and s["size"] in (0, 2) for s in p["sensitivities"])
    assert "Blowfish" in p["guarantee"]
    if lib != "numpy":
        assert list(km.feature_names_in_) == ["x", "y"]


@pytest.mark.slow
@pytest.mark.parametrize("lib", ["numpy", "pandas"])
def test_grid_method_is_the_default(lib):
    if lib == "pandas":
        pytest.importorskip("pandas", reason="needs pandas")
    pts, _ = blobs()
    X = pts if lib == "numpy" else _table(lib, pts)
    km = BlowfishKMeans(policy=POLICY, epsilon=1.0, n_clusters=3)
    labels = km.fit_predict(X)
    assert km.cluster_centers_.shape == (3, 2) and set(labels.tolist()) <= {0, 1, 2}
    d = np.abs(CENTRES[:, None, :] - km.cluster_centers_[None]).sum(axis=2).min(axis=1)
    assert d.max() < 8, km.cluster_centers_
    p = km.privacy_
    assert p["method"] == "grid" and p["cell"] >= 1 and len(p["sensitivities"]) == 1
    assert p["private"] and p["epsilon_spent"] <= 1.0 and "Blowfish" in p["guarantee"]


@pytest.mark.slow
def test_seeded_runs_warn_say_not_private_and_repeat():
    pts, _ = blobs(500)
    with pytest.warns(SeededNotPrivateWarning, match="NOT private"):
        a = BlowfishKMeans(policy=POLICY, n_clusters=3, random_state=4).fit(pts)
    assert a.privacy_["seeded"] and not a.privacy_["private"] and "NOT private" in a.privacy_["note"]
    b = _seeded(n_clusters=3, random_state=4).fit(pts)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    with pytest.raises(TypeError, match="random_state must be None"):
        BlowfishKMeans(policy=POLICY, random_state=np.random.RandomState(0)).fit(pts)


@pytest.mark.slow
def test_values_outside_the_domain():
    pts, _ = blobs(200)
    bad = pts.copy()
    bad[0] = [777, 5]
    with pytest.raises(TableError) as exc:
        BlowfishKMeans(policy=POLICY, n_clusters=3).fit(bad)
    assert "777" not in str(exc.value) and "'x'" in str(exc.value)
    nan = pts.astype(float)
    nan[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        BlowfishKMeans(policy=POLICY, n_clusters=3).fit(nan)
    km = _seeded(n_clusters=3, invalid="drop", random_state=0).fit(nan)
    assert km.labels_[1] == -1 and km.labels_.shape == (200,)
    assert _seeded(n_clusters=3, invalid="clamp", random_state=0).fit(bad).cluster_centers_.max() <= 63


@pytest.mark.slow
def test_parameters_are_checked_at_fit():
    pts, _ = blobs(100)
    with pytest.raises(TypeError, match="policy must be"):
        BlowfishKMeans(policy=DOMAIN).fit(pts)
    with pytest.raises(ValueError, match="policy and bounds: give one of them"):
        BlowfishKMeans(policy=POLICY, bounds=([0, 0], [63, 63])).fit(pts)
    with pytest.raises(ValueError, match="epsilon"):
        BlowfishKMeans(policy=POLICY, epsilon=-1).fit(pts)
    with pytest.raises(ValueError, match="expecting 2 features"):
        BlowfishKMeans(policy=POLICY).fit(pts[:, :1])
    km = _seeded(n_clusters=2, random_state=1).fit(pts)
    with pytest.raises(ValueError, match="expecting 2 features"):
        km.predict(np.zeros((3, 3)))


def test_sklearn_conventions():
    sk = pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    km = BlowfishKMeans(policy=POLICY, epsilon=2.0, n_clusters=3)
    params = km.get_params()
    assert params["n_clusters"] == 3 and params["policy"] is POLICY and params["random_state"] is None
    assert km.set_params(max_iter=4) is km and km.max_iter == 4
    c = clone(km)
    assert c.get_params()["max_iter"] == 4 and not hasattr(c, "cluster_centers_")
    with pytest.raises(NotFittedError):
        km.predict(np.zeros((1, 2)))
    assert sk.base.is_clusterer(km)


@pytest.mark.slow
def test_without_scikit_learn():
    """The minimal base: get_params/set_params/fit_predict/repr with scikit-learn unimportable."""
    code = (
        "import sys; sys.modules['sklearn'] = None\n"
        "import numpy as np, warnings\n"
        "from blowfish_privacy import Domain, Ordinal, Policy, secrets\n"
        "import blowfish_privacy.sklearn as m\n"
        "assert not m.HAVE_SKLEARN\n"
        "p = Policy(Domain([Ordinal('x', 0, 15)]), secrets.Line())\n"
        "km = m.BlowfishKMeans(policy=p, n_clusters=2)\n"
        "assert km.get_params()['n_clusters'] == 2 and km.set_params(epsilon=2.0).epsilon == 2.0\n"
        "try:\n    km.set_params(bogus=1)\nexcept ValueError: pass\nelse: raise SystemExit('no error')\n"
        "try:\n    km.predict(np.zeros((1, 1)))\nexcept m.NotFittedError: pass\n"
        "lab = km.fit_predict(np.arange(16).reshape(-1, 1))\n"
        "assert lab.shape == (16,) and 'epsilon=2.0' in repr(km)\n"
        "X = np.arange(16).reshape(-1, 1)\n"
        "assert km.transform(X).shape == (16, 2) and km.score(X) <= 0 and km.fit_transform(X).shape == (16, 2)\n"
        "assert km.get_feature_names_out() == ['blowfishkmeans0', 'blowfishkmeans1']\n"
        "with warnings.catch_warnings(record=True) as rec:\n"
        "    warnings.simplefilter('always')\n"
        "    d = m.BlowfishKMeans(n_clusters=2).fit(X * 0.5)\n"
        "assert any(r.category is m.PrivacyLeakWarning for r in rec) and not d.privacy_['private']\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "ok", out.stderr  # (an editable rebuild may print first)


def _failing_checks(n_features):
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator

    half = 5 if n_features < 6 else 1
    policy = Policy(Domain([Ordinal(f"a{i}", -half, half) for i in range(n_features)]), secrets.DistanceThreshold(2))
    est = BlowfishKMeans(policy=policy, epsilon=2.0, n_clusters=3, max_iter=3, invalid="clamp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_estimator(est, on_fail=None)
    return {r["check_name"] for r in report if r["status"] == "failed"}


@pytest.mark.slow
def test_estimator_checks_fail_only_on_feature_counts():
    """On a 3-attribute domain every failing check is one that feeds another number of features (or expected)."""
    failed = _failing_checks(3)
    assert failed <= set(FEATURE_COUNT_CHECKS) | set(POLICY_EXPECTED_FAILED_CHECKS), failed


@pytest.mark.slow
def test_estimator_checks_pass_on_some_domain():
    """Every check outside POLICY_EXPECTED_FAILED_CHECKS passes on a domain with the number of features it feeds."""
    always = None
    for d in (1, 2, 3, 4, 5, 10):
        failed = _failing_checks(d)
        always = failed if always is None else always & failed
    assert always == set(POLICY_EXPECTED_FAILED_CHECKS), always  # every documented failure is real


# -- transform and score: post-processing on data in hand --------------------------
@pytest.fixture(scope="module")
def fitted():
    return _seeded(n_clusters=3, random_state=2).fit(blobs(600)[0])


@pytest.mark.slow
def test_transform_is_the_euclidean_distance_to_every_centroid(fitted):
    km = fitted
    X = blobs(50, seed=1)[0]
    D = km.transform(X)
    want = np.sqrt(((X[:, None, :].astype(float) - km.cluster_centers_[None]) ** 2).sum(axis=2))
    assert D.shape == (50, 3) and D.dtype == np.float64
    np.testing.assert_allclose(D, want, rtol=1e-12, atol=1e-9)
    assert np.array_equal(D.argmin(axis=1), km.predict(X))
    np.testing.assert_allclose(km.transform(km.cluster_centers_).diagonal(), 0.0, atol=1e-6)


def test_score_is_minus_the_squared_distances_to_the_nearest_centroid(fitted):
    km = fitted
    X = blobs(50, seed=1)[0].astype(float)
    want = -((X[:, None, :] - km.cluster_centers_[None]) ** 2).sum(axis=2).min(axis=1).sum()
    assert km.score(X) == pytest.approx(want, rel=1e-12) and km.score(X, y=np.zeros(50)) == km.score(X)
    assert km.score(X) < 0 and km.score(km.cluster_centers_) == pytest.approx(0.0, abs=1e-6)
    assert not hasattr(km, "inertia_") and "no ``inertia_``" in BlowfishKMeans.__doc__


@pytest.mark.parametrize("method", ["transform", "score", "predict"])
def test_transform_and_score_validate_x_like_predict(method, fitted):
    with pytest.raises(NotFittedError):
        getattr(BlowfishKMeans(policy=POLICY), method)(np.zeros((2, 2)))
    km = fitted
    with pytest.raises(ValueError, match="expecting 2 features"):
        getattr(km, method)(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN or infinity"):
        getattr(km, method)(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="Expected 2D array"):
        getattr(km, method)(np.zeros(2))


@pytest.mark.slow
def test_sklearn_kmeans_agrees_on_transform_and_score(fitted):
    cluster = pytest.importorskip("sklearn.cluster")
    km = fitted
    X = blobs(80, seed=3)[0].astype(float)
    sk = cluster.KMeans(n_clusters=3, init=km.cluster_centers_, n_init=1, max_iter=1).fit(km.cluster_centers_)
    np.testing.assert_allclose(sk.cluster_centers_, km.cluster_centers_)  # each centroid its own cluster
    np.testing.assert_allclose(km.transform(X), sk.transform(X), rtol=1e-9)
    assert km.score(X) == pytest.approx(sk.score(X), rel=1e-9)


# -- the policy: given, from bounds, or read from the data (not private) -----------------
@pytest.mark.slow
def test_bounds_build_the_policy_and_stay_private():
    pts, _ = blobs(800)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        km = BlowfishKMeans(bounds=([0, 0], [63, 63]), theta=2, epsilon=2.0, n_clusters=3).fit(pts)
    assert km.policy_ == Policy.from_bounds(([0, 0], [63, 63]), theta=2) == POLICY.__class__(
        Domain([Ordinal("x0", 0, 63), Ordinal("x1", 0, 63)]), secrets.DistanceThreshold(2))
    assert km.privacy_["private"] and not km.privacy_["bounds_from_data"]
    d = np.abs(CENTRES[:, None, :] - km.cluster_centers_[None]).sum(axis=2).min(axis=1)
    assert d.max() < 10, km.cluster_centers_
    km = BlowfishKMeans(bounds=(0, 9), theta=1, metric="linf", n_clusters=2).fit(np.arange(10).reshape(-1, 1))
    assert km.policy_.secrets == secrets.DistanceThreshold(1, "linf") and km.policy_.domain.shape == (10,)
    with pytest.raises(TableError):  # values outside public bounds are refused (invalid="error"), never quoted
        BlowfishKMeans(bounds=([0, 0], [40, 40]), n_clusters=3).fit(pts)
    with pytest.raises(ValueError, match="expecting 3 features"):
        BlowfishKMeans(bounds=([0, 0, 0], [63, 63, 63])).fit(pts)


@pytest.mark.slow
def test_bounds_name_the_features_by_a_dataframes_columns():
    pd = pytest.importorskip("pandas")
    pts, _ = blobs(300)
    df = pd.DataFrame({"b": pts[:, 1], "a": pts[:, 0]})
    km = BlowfishKMeans(bounds=([0, 0], [63, 63]), n_clusters=3, random_state=1).fit(df)
    assert list(km.feature_names_in_) == ["b", "a"] and km.policy_.domain.names == ("b", "a")
    assert np.array_equal(km.predict(df), km.labels_)
    with pytest.raises(ValueError, match="same order as they were in fit"):
        km.predict(df[["a", "b"]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        km.predict(pts[:, ::-1])


def test_no_policy_no_bounds_reads_the_data_and_says_not_private():
    rng = np.random.default_rng(5)
    X = rng.normal(0, 1.2, (400, 2)) + np.repeat([[-4.0, 0.0], [4.0, 3.0]], 200, axis=0)
    with pytest.warns(PrivacyLeakWarning, match="NOT private"):
        km = BlowfishKMeans(n_clusters=2).fit(X)
    p = km.privacy_
    assert p["bounds_from_data"] and not p["private"] and not p["seeded"] and "read from the data" in p["note"]
    lo, hi = np.floor(np.rint(X).min(axis=0)), np.ceil(np.rint(X).max(axis=0))
    dom = km.policy_.domain
    assert [a.low for a in dom.attributes] == lo.tolist() and [a.high for a in dom.attributes] == hi.tolist()
    assert km.policy_.secrets == secrets.DistanceThreshold(1)
    near = np.abs(np.array([[-4.0, 0.0], [4.0, 3.0]])[:, None] - km.cluster_centers_[None]).sum(axis=2).min(axis=1)
    assert near.max() < 3, km.cluster_centers_
    with pytest.raises(ValueError, match="NaN or infinity"):  # refused before any bound is read
        BlowfishKMeans().fit(np.array([[0.0, 1.0], [np.inf, 2.0]]))
    with warnings.catch_warnings(record=True) as rec, pytest.raises(ValueError, match="span more cells than the "
                                                                         "4,194,304 allowed") as err:
        warnings.simplefilter("always")
        BlowfishKMeans().fit(np.array([[0, 0, 0], [999, 999, 999]]))
    assert not rec  # refused before fitting: nothing to warn about
    assert "1000000000" not in str(err.value) and "bounds=" in str(err.value)  # the span is the data's: not quoted


@pytest.mark.parametrize("kw,exc,match", [
    ({"n_clusters": 0}, ValueError, "n_clusters must be an integer >= 1, got 0"),
    ({"n_clusters": 65}, ValueError, "n_clusters must be at most 64, got 65"),
    ({"n_clusters": 2.5}, TypeError, "n_clusters must be an integer"),
    ({"n_clusters": 20, "method": "sulq", "bounds": (0, 9)}, ValueError,
     r"n_clusters must be at most the domain size 10 \(the cells of the box of bounds.*got 20"),
    ({"n_clusters": 11}, ValueError, r"n_clusters must be at most the domain size 10 \(the cells of the policy's "
                                     "domain.*got 11"),
    ({"max_iter": 0}, ValueError, "max_iter must be an integer >= 1"),
    ({"method": "kmeans++"}, ValueError, r"method must be one of \['grid', 'eugkm', 'sulq'\]"),
    ({"method": "sulq", "n_clusters": 3, "init": np.zeros((2, 1))}, ValueError,
     r"init must be 'random' or an array of shape \(n_clusters, n_features\) = \(3, 1\), got shape \(2, 1\)"),
    ({"init": np.zeros((8, 1))}, ValueError, "init applies only to method='sulq', got method='grid'"),
    ({"method": "eugkm", "size_fraction": 0.3}, ValueError, "size_fraction applies only to method='sulq'"),
    ({"method": "sulq", "cell": 2}, ValueError, "cell applies only to methods 'grid' and 'eugkm'"),
])
def test_errors_name_the_estimators_parameters(kw, exc, match):
    kw = {"policy": Policy(Domain.ordinal("v", 0, 9), secrets.Line()), **kw}
    if "bounds" in kw:
        kw.pop("policy")
    with pytest.raises(exc, match=match) as err:
        BlowfishKMeans(**kw).fit(np.arange(10).reshape(-1, 1))
    assert "k must" not in str(err.value)


@pytest.mark.slow
def test_default_estimator_passes_sklearns_checks():
    """BlowfishKMeans() with no argument: every check scikit-learn runs passes; it skips only its determinism
    checks (non_deterministic tag) and array-API input (an environment switch)."""
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_estimator(BlowfishKMeans(), on_fail=None, expected_failed_checks=EXPECTED_FAILED_CHECKS)
    status = {}
    for r in report:
        status.setdefault(r["status"], []).append(r["check_name"])
    assert set(status) <= {"passed", "skipped"}, {k: v for k, v in status.items() if k not in ("passed", "skipped")}
    assert len(status["passed"]) >= 40 and "check_clustering" in status["passed"]
    assert all("non deterministic" in str(r["exception"]) or "array_api" in str(r["exception"]).lower()
               for r in report if r["status"] == "skipped")


def test_policy_from_bounds():
    p = Policy.from_bounds(([0, -3], [9, 3]), theta=2, metric="l2", names=["a", "b"])
    assert p.domain == Domain([Ordinal("a", 0, 9), Ordinal("b", -3, 3)]) and p.secrets == secrets.DistanceThreshold(2, "l2")
    assert Policy.from_bounds((np.array([0.0]), np.array([4.0]))).domain == Domain([Ordinal("x0", 0, 4)])
    for bounds, exc, match in [
        ((0,), TypeError, "bounds must be a pair"), ("ab", TypeError, "bounds must be a pair"),
        (([0, 0], [1]), ValueError, "one value per feature each, got 2 and 1"),
        (([0.5], [3]), ValueError, "lower must hold integers"), (([3], [1]), ValueError, "lower must be <= upper"),
        ((["a"], [1]), TypeError, "lower must be an integer or a 1-D sequence"),
    ]:
        with pytest.raises(exc, match=match):
            Policy.from_bounds(bounds)
    with pytest.raises(ValueError, match="names must be 2 attribute names"):
        Policy.from_bounds(([0, 0], [1, 1]), names=["a"])
    with pytest.raises((TypeError, ValueError), match="theta"):
        Policy.from_bounds((0, 9), theta=-1)


@pytest.mark.slow
def test_spark_frames_with_bounds_and_without(spark_session):
    pd = pytest.importorskip("pandas")
    pts, _ = blobs(400)
    local = pd.DataFrame({"x": pts[:, 0], "y": pts[:, 1]})
    df = spark_session.createDataFrame(local)
    est = BlowfishKMeans(bounds=([0, 0], [63, 63]), n_clusters=3, random_state=3).fit(df)
    ref = BlowfishKMeans(bounds=([0, 0], [63, 63]), n_clusters=3, random_state=3).fit(local)
    np.testing.assert_array_equal(est.cluster_centers_, ref.cluster_centers_)
    assert list(est.feature_names_in_) == ["x", "y"] and est.privacy_["private"] is False  # seeded
    assert not est.privacy_["bounds_from_data"] and not hasattr(est, "labels_")
    with pytest.raises(ValueError, match="a Spark DataFrame needs policy or bounds"):
        BlowfishKMeans().fit(df)
