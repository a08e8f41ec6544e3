"""scikit-learn style estimators: :class:`BlowfishKMeans`.

scikit-learn is optional: when it is importable the estimator inherits
``sklearn.base.BaseEstimator`` and ``ClusterMixin`` (so ``clone``,
pipelines, ``GridSearchCV`` parameters and the HTML repr work); otherwise a
minimal base gives ``get_params``, ``set_params`` and ``fit_predict`` with
the same behaviour.

Privacy in an estimator
    ``fit`` is a release: the centroids it learns (``cluster_centers_``)
    are (epsilon, policy)-Blowfish private, the rest of the fitted state is
    post-processing of them (``predict`` on new data) or *not private*:
    ``labels_`` are computed from the training rows themselves (for your
    own use; do not publish them).  Noise is secure unless
    ``random_state`` is an int, which makes every run reproducible and so
    **not private** (a warning is issued and ``privacy_["seeded"]`` says so):
    use it for tests only.

What scikit-learn's estimator checks can and cannot show
    :func:`sklearn.utils.estimator_checks.check_estimator` (run in
    ``tests/test_sklearn.py`` with ``invalid="clamp"``, on domains of 1, 2,
    3, 4, 5 and 10 attributes) passes every check on some domain except
    the two in :data:`EXPECTED_FAILED_CHECKS`, each with its reason.  Why
    others are not universal: the number of features is fixed by the
    policy's domain (:data:`FEATURE_COUNT_CHECKS` feed 1 to 10 features),
    inputs must be values of the domain (the checks' random floats are
    not), and the output is random by design (scikit-learn skips its
    determinism checks for the ``non_deterministic`` tag set here).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping

import numpy as np

from . import frames
from ._spark_frames import is_spark_frame
from .mechanisms import choose_cell, plan_kmeans, plan_kmeans_grid
from .noise import Generator
from .policy._policy import Policy

__all__ = ["BlowfishKMeans", "SeededNotPrivateWarning", "EXPECTED_FAILED_CHECKS", "FEATURE_COUNT_CHECKS", "HAVE_SKLEARN"]

try:  # optional
    from sklearn.base import BaseEstimator as _BaseEstimator
    from sklearn.base import ClusterMixin as _ClusterMixin
    from sklearn.exceptions import NotFittedError
    HAVE_SKLEARN = True
except ImportError:  # a minimal, compatible base
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """The estimator is used before ``fit`` (as scikit-learn's NotFittedError)."""

    class _BaseEstimator:
        """``get_params``/``set_params`` from the ``__init__`` signature, as scikit-learn's BaseEstimator."""

        @classmethod
        def _get_param_names(cls) -> list[str]:
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep: bool = True) -> dict:
            out = {}
            for name in self._get_param_names():
                value = getattr(self, name)
                if deep and hasattr(value, "get_params") and not isinstance(value, type):
                    out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
                out[name] = value
            return out

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for estimator {type(self).__name__}; "
                                     f"valid parameters are {valid}")
                setattr(self, key, value)
            return self

        def __repr__(self) -> str:
            sig = inspect.signature(type(self).__init__)
            shown = [f"{k}={getattr(self, k)!r}" for k, p in sig.parameters.items()
                     if k != "self" and getattr(self, k) is not p.default]
            return f"{type(self).__name__}({', '.join(shown)})"

    class _ClusterMixin:
        _estimator_type = "clusterer"

        def fit_predict(self, X, y=None, **kwargs):
            self.fit(X, y, **kwargs)
            return self.labels_


class SeededNotPrivateWarning(UserWarning):
    """An estimator was fitted with a seeded (reproducible) generator: the result is NOT private."""


#: scikit-learn checks that fail for a private estimator on every domain, and why.
EXPECTED_FAILED_CHECKS = {
    "check_clustering": (
        "asks for labels close to the true clusters of make_blobs data (adjusted Rand index > 0.4): those data are "
        "non-integer floats, not values of any ordinal domain, so they are refused (invalid='error') or dropped "
        "(invalid='clamp'/'drop'), and the private centroids of the rest are noise"),
    "check_estimators_nan_inf": (
        "with invalid='clamp' or 'drop' (needed to run the checks on their float data) a NaN or infinite cell is a "
        "value outside the domain and its row is dropped, as dataset.invalid does in a release spec; with the "
        "default invalid='error' fit and predict refuse NaN and infinity with a ValueError saying so"),
}

#: Checks that feed a fixed number of features (1, 2, 3, 4, 5 or 10): the
#: features are the attributes of the policy's domain, so each of these fails
#: on domains with another number of attributes and passes on the right one
#: (``tests/test_sklearn.py`` runs the checks on domains of 1, 2, 3, 4, 5 and
#: 10 attributes and requires every check outside EXPECTED_FAILED_CHECKS to
#: pass on at least one).  Checks scikit-learn skips itself: the
#: determinism checks (``non_deterministic`` tag: the output is random) and
#: array-API input.
FEATURE_COUNT_CHECKS = (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object", "check_estimators_dtypes",
    "check_estimators_fit_returns_self", "check_estimators_overwrite_params", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample", "check_fit2d_predict1d",
    "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_non_transformer_estimators_n_iter",
    "check_positive_only_tag_during_fit", "check_readonly_memmap_input", "check_clustering",
    "check_estimators_nan_inf",
)


def _check_fitted(est) -> None:
    if not hasattr(est, "cluster_centers_"):
        raise NotFittedError(f"This {type(est).__name__} instance is not fitted yet; call 'fit' first")


def _privacy_record(plan, result, policy, specific: dict) -> dict:
    """``privacy_``: the epsilon spent and asked, the method's own fields, guarantee, citation, seeded or private."""
    seeded = not result.secure
    return {
        "epsilon_spent": float(result.epsilon_exact),
        "epsilon_spent_exact": str(result.epsilon_exact),
        "epsilon_requested": float(plan.epsilon_requested),
        **specific,
        "guarantee": plan.guarantee,
        "citation": plan.citation,
        "policy": repr(policy),
        "seeded": seeded,
        "private": not seeded,
        "note": ("seeded: NOT private (random_state was an int; anyone with the seed can remove the noise)"
                 if seeded else "private: cluster_centers_ are (epsilon, policy)-Blowfish private; labels_ "
                 "are computed from the training rows and are not"),
    }


class BlowfishKMeans(_ClusterMixin, _BaseEstimator):
    """k-means under a Blowfish policy, as a scikit-learn estimator.

    With ``method="grid"`` (the default) ``fit`` releases the points once
    as a noisy grid (``mechanisms.plan_kmeans_grid``: each point spread over
    the corners of its cell, whose sensitivity under a distance threshold
    theta is ``2 s^(d-1) min(theta, s)`` instead of DP's ``2 s^d``) and runs
    weighted Lloyd on it as post-processing; ``method="eugkm"`` is the DP
    grid baseline (cell counts, Su et al. 2016).  With ``method="sulq"``
    ``fit`` runs ``mechanisms.plan_kmeans(policy, epsilon, k=n_clusters,
    iterations=max_iter, init=init, size_fraction=size_fraction)`` and
    measures it on the rows of ``X``: every one of the ``max_iter`` rounds
    releases noisy cluster sizes and noisy cluster sums, calibrated to
    their exact policy-specific sensitivity given that round's public
    centroids (with the cross-cluster correction of DESIGN.md sec 5); the
    rounds compose sequentially, so the spend is at most ``epsilon``.

    Parameters
    ----------
    policy : Policy
        A policy without public constraints on a domain of ordinal
        attributes; its attributes are the features, in order.
    epsilon : float, default 1.0
        The whole budget of one ``fit`` (``epsilon / max_iter`` per round).
    n_clusters : int, default 8
        ``1 <= n_clusters <= 64``.
    max_iter : int, default 10
        Rounds; all of them run (stopping early would depend on the data).
    init : "random" or array of shape (n_clusters, n_features)
        ``"random"`` draws distinct cells of the domain with the noise
        generator (never from the data).
    size_fraction : float, default 0.5
        Share of each round's budget for the cluster sizes.
    random_state : None or int, default None
        None: secure noise (a private release).  An int: a seeded,
        reproducible generator, **not private**; a
        :class:`SeededNotPrivateWarning` is issued.
    method : {"grid", "eugkm", "sulq"}, default "grid"
        The mechanism (see above); ``init`` and ``size_fraction`` apply to
        ``"sulq"`` only, ``max_iter`` is the number of Lloyd rounds on the
        noisy grid for the grid methods (post-processing: free).
    cell : int or None, default None
        Grid methods: the cell side in bins; None chooses it from the number
        of rows (public under bounded neighbours) and epsilon.
    invalid : {"error", "clamp", "drop"}, default "error"
        Values outside the policy's domain, as ``dataset.invalid`` in a
        release spec: refused before anything is measured (the message
        never quotes a value), clamped into ``[low, high]`` (cells that are
        not integers dropped), or their rows dropped.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The private centroids (inside the domain's box).
    labels_ : ndarray of shape (n_samples,)
        ``predict(X)`` of the training rows: derived from the data, NOT
        private (for your own use).  Not set when ``X`` is a Spark
        DataFrame: one label per row would bring the table to the driver
        (``predict`` does that when asked).
    n_iter_ : int
        Rounds run (``max_iter``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The domain's attribute names, when ``X`` was a DataFrame.
    privacy_ : dict
        ``epsilon_spent`` (float) and ``epsilon_spent_exact`` (str, a
        fraction), ``epsilon_requested``, ``sensitivities`` (per round:
        size and sum sensitivity, whether exact, how computed),
        ``guarantee``, ``policy``, ``seeded`` and ``private`` (False when
        seeded) and a ``note``.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, Ordinal, Policy, secrets
    >>> from blowfish_privacy.sklearn import BlowfishKMeans
    >>> policy = Policy(Domain([Ordinal("x", 0, 15), Ordinal("y", 0, 15)]), secrets.DistanceThreshold(2))
    >>> X = np.random.default_rng(0).integers(0, 16, size=(500, 2))
    >>> km = BlowfishKMeans(policy=policy, epsilon=1.0, n_clusters=3).fit(X)
    >>> km.cluster_centers_.shape, km.privacy_["epsilon_spent"] <= 1.0
    ((3, 2), True)
    """

    def __init__(self, policy=None, epsilon=1.0, n_clusters=8, max_iter=10, init="random", size_fraction=0.5,
                 random_state=None, invalid="error", method="grid", cell=None):
        self.method = method
        self.cell = cell
        self.policy = policy
        self.epsilon = epsilon
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.init = init
        self.size_fraction = size_fraction
        self.random_state = random_state
        self.invalid = invalid

    # -- scikit-learn tags ------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.allow_nan = False
        return tags

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"non_deterministic": True, "allow_nan": False}

    # -- helpers -------------------------------------------------------------------
    def _policy(self) -> Policy:
        if not isinstance(self.policy, Policy):
            raise TypeError(f"policy must be a blowfish_privacy.Policy (a domain of ordinal attributes and a secret "
                            f"graph), got {self.policy!r}")
        return self.policy

    def _generator(self) -> Generator:
        rs = self.random_state
        if rs is None:
            return Generator()
        if isinstance(rs, (bool, np.bool_)) or not isinstance(rs, (int, np.integer)):
            raise TypeError(f"random_state must be None (secure noise, private) or an int (seeded, NOT private), "
                            f"got {rs!r} of type {type(rs).__name__}")
        warnings.warn(f"{type(self).__name__}(random_state={int(rs)}): the noise is seeded and reproducible, so the "
                      "result is NOT private (anyone with the seed can remove the noise); use random_state=None "
                      "for a release", SeededNotPrivateWarning, stacklevel=3)
        return Generator(seed=int(rs))

    def _columns(self, X, *, fitting: bool) -> tuple[dict, int]:
        """``({attribute name: 1-D column}, n)`` of X, by name for tables and by position for arrays."""
        domain = self._policy().domain
        names = domain.names
        if type(X).__module__.startswith("scipy.sparse"):  # before Mapping: a dok_matrix is a dict
            raise TypeError("X: sparse input is not supported: dense data is required (rows of values of the "
                            "policy's domain); use X.toarray()")
        if frames.is_table(X) or isinstance(X, Mapping):
            cols = frames.table_columns(X, names, param="X")
            if fitting:
                self.feature_names_in_ = np.array(names, dtype=object)
            elif not hasattr(self, "feature_names_in_"):
                warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without feature names",
                              UserWarning, stacklevel=3)
        else:
            arr = np.asarray(X)
            if arr.dtype.kind == "c":
                raise ValueError("X: Complex data not supported; X must hold values of the policy's domain")
            if arr.dtype.kind not in "biufO":
                raise ValueError(f"X must be a numeric array of values of the policy's domain, got dtype {arr.dtype}")
            if arr.ndim == 2 and arr.shape[1] == 0:
                # scikit-learn's own wording (its checks match it); X is the caller's array in hand
                raise ValueError(f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required "
                                 f"(the policy's domain has {domain.ndim})")
            if arr.ndim != 2:
                raise ValueError(f"Expected 2D array, got {arr.ndim}D array instead: X must have shape (n_samples, "
                                 f"{domain.ndim}) (one column per attribute of the policy's domain). Reshape your "
                                 "data with X.reshape(-1, 1) if it has a single feature")
            if arr.shape[1] != domain.ndim:
                raise ValueError(f"X has {arr.shape[1]} features, but {type(self).__name__} is expecting "
                                 f"{domain.ndim} features as input (the attributes {list(names)} of the policy's "
                                 "domain)")
            if fitting and hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            cols = {name: arr[:, a] for a, name in enumerate(names)}
        n = len(cols[names[0]])
        if n < 1:
            raise ValueError(f"Found array with 0 sample(s) (shape=(0, {domain.ndim})) while a minimum of 1 is "
                             "required")
        return cols, n

    # -- fit / predict ---------------------------------------------------------------
    def fit(self, X, y=None):
        """Learn private centroids from the rows of ``X`` (one column per attribute of the domain).

        ``X`` is an array of shape (n_samples, n_features) or a pandas or
        Polars DataFrame, a pyarrow Table or a Spark DataFrame with a column
        per attribute (by name).  A Spark DataFrame is counted in Spark
        (:func:`blowfish_privacy.histogram`): only the histogram of the
        domain reaches the driver, and ``labels_`` is not set.  ``y`` is
        ignored.  Values must be values of the domain
        (integers of the grid; an ordinal value in a bin stands for its bin)
        unless ``invalid`` says otherwise.  Returns ``self``.
        """
        if self.method not in ("grid", "eugkm", "sulq"):
            raise ValueError(f"method must be 'grid', 'eugkm' or 'sulq', got {self.method!r}")
        policy = self._policy()
        domain = policy.domain
        if self.method != "sulq":
            return self._fit_grid(X, policy)
        plan = plan_kmeans(policy, self.epsilon, k=self.n_clusters, iterations=self.max_iter, init=self.init,
                           size_fraction=self.size_fraction)  # validates every parameter; nothing measured yet
        cols, hist = self._fit_histogram(X, domain)
        cells = np.flatnonzero(hist)
        values = np.stack([np.asarray(v, dtype=np.int64) for v in domain.values(cells)], axis=1) if cells.size \
            else np.zeros((0, domain.ndim), dtype=np.int64)
        points = np.repeat(values, hist[cells], axis=0)  # the same multiset of cells, in index order
        gen = self._generator()
        result = plan.measure(points, gen)
        self.cluster_centers_ = np.asarray(result.centroids, dtype=np.float64)
        self.initial_centers_ = np.asarray(result.initial_centroids, dtype=np.float64)
        self.n_iter_ = len(result.history)
        self.n_features_in_ = domain.ndim
        self.privacy_ = _privacy_record(plan, result, policy, {
            "sensitivities": [
                {"round": i, "size": int(h.sensitivity.size), "sum": int(h.sensitivity.sum),
                 "size_exact": bool(h.sensitivity.size_exact), "sum_exact": bool(h.sensitivity.sum_exact),
                 "method": h.sensitivity.method, "epsilon_sizes": float(h.epsilon_sizes),
                 "epsilon_sums": float(h.epsilon_sums), "scale_sizes": float(h.scale_sizes),
                 "scale_sums": float(h.scale_sums)}
                for i, h in enumerate(result.history, 1)
            ],
        })
        self._set_labels(cols)
        return self

    def _fit_grid(self, X, policy):
        """The grid mechanisms (:func:`blowfish_privacy.mechanisms.kmeans_grid`): one noisy grid release, then weighted Lloyd.

        The grid side is ``cell`` or chosen from the number of rows, which
        is public under bounded neighbours (the policy's fixed n).
        """
        interp = "linear" if self.method == "grid" else "nearest"
        cols, hist = self._fit_histogram(X, policy.domain)
        cell = self.cell if self.cell is not None else choose_cell(policy, self.epsilon, max(int(hist.sum()), 1),
                                                                   interp)
        plan = plan_kmeans_grid(policy, self.epsilon, k=self.n_clusters, cell=cell, interpolation=interp,
                                iterations=max(int(self.max_iter), 1))
        result = plan.measure(hist, self._generator())
        self.cluster_centers_ = np.asarray(result.centroids, dtype=np.float64)
        self.n_iter_ = int(self.max_iter)
        self.n_features_in_ = policy.domain.ndim
        self.privacy_ = _privacy_record(plan, result, policy, {
            "method": self.method,
            "cell": int(result.cell),
            "sensitivities": [{"release": "grid weights", "sensitivity": int(result.sensitivity),
                               "scale": float(result.scale), "how": plan.parts[0].how}],
        })
        self._set_labels(cols)
        return self

    def _fit_histogram(self, X, domain) -> tuple[dict | None, np.ndarray]:
        """``(columns or None, histogram of the domain)`` of the training rows; a Spark DataFrame counted in Spark."""
        if is_spark_frame(X):
            hist = frames.histogram(X, domain, invalid=self.invalid)
            self.feature_names_in_ = np.array(domain.names, dtype=object)
            return None, hist
        cols, _ = self._columns(X, fitting=True)
        self._check_finite(cols)
        return cols, frames.histogram(cols, domain, invalid=self.invalid)

    def _set_labels(self, cols: dict | None) -> None:
        """``labels_`` of the training columns (rows with NaN/inf, dropped under clamp/drop: -1); none for Spark."""
        if cols is None:
            if hasattr(self, "labels_"):
                del self.labels_
            return
        self.labels_ = self._nearest(cols, missing=-1)

    def _check_finite(self, cols: dict) -> None:
        """Under invalid="error", NaN or infinity is refused (never quoted)."""
        if self.invalid != "error":
            return
        for name, col in cols.items():
            if col.dtype.kind == "f" and not np.isfinite(col).all():
                raise ValueError(f"X: attribute {name!r} holds NaN or infinity, which are not values of the "
                                 "domain (values not shown); pass invalid='drop' to drop such rows")

    def _nearest(self, cols: dict, *, missing: int | None = None) -> np.ndarray:
        """Index of the nearest centroid of every row; rows with NaN/inf raise, or get ``missing``."""
        pts = np.stack([np.asarray(c, dtype=np.float64) for c in cols.values()], axis=1)
        finite = np.isfinite(pts).all(axis=1)
        if missing is None and not finite.all():
            raise ValueError("X holds NaN or infinity (values not shown); nearest centroids need finite values")
        c = self.cluster_centers_
        labels = np.full(pts.shape[0], -1 if missing is None else missing, dtype=np.int64)
        p = pts[finite]
        d2 = (p * p).sum(axis=1)[:, None] - 2.0 * p @ c.T + (c * c).sum(axis=1)[None, :]
        labels[finite] = np.argmin(d2, axis=1)
        return labels

    def predict(self, X) -> np.ndarray:
        """The nearest private centroid (Euclidean) of every row of ``X``: post-processing, no budget spent."""
        _check_fitted(self)
        cols, _ = self._columns(X, fitting=False)
        return self._nearest(cols)

    def fit_predict(self, X, y=None) -> np.ndarray:
        """``fit(X).labels_``: the training rows' clusters (NOT private: derived from the rows).

        For a Spark DataFrame, ``fit(X).predict(X)``: the labels are collected to the driver.
        """
        if is_spark_frame(X):
            return self.fit(X, y).predict(X)
        return self.fit(X, y).labels_
