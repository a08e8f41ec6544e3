"""scikit-learn style estimators: :class:`BlowfishKMeans`.

scikit-learn is optional (:mod:`._estimator_base`): when it is importable
the estimator inherits ``sklearn.base.BaseEstimator`` and ``ClusterMixin``
(so ``clone``, pipelines, ``GridSearchCV`` parameters and the HTML repr
work); otherwise a minimal base gives ``get_params``, ``set_params`` and
``fit_predict`` with the same behaviour.

Privacy in an estimator
    ``fit`` is a release: the centroids it learns (``cluster_centers_``)
    are (epsilon, policy)-Blowfish private when the policy is public (given
    as ``policy`` or as public ``bounds``); ``predict``, ``transform`` and
    ``score`` on data in hand are post-processing of them.  The rest of the
    fitted state is *not private*: ``labels_`` are computed from the
    training rows themselves (for your own use; do not publish them).
    Two ways to lose privacy are allowed, each with a warning and
    ``privacy_["private"] = False``: an int ``random_state`` (the noise is
    reproducible; :class:`SeededNotPrivateWarning`) and fitting with
    neither ``policy`` nor ``bounds`` (the bounds are then read from the
    data; :class:`PrivacyLeakWarning`).

scikit-learn's estimator checks
    ``BlowfishKMeans()`` with its defaults (bounds from the data, with the
    warning above) passes every check of
    :func:`sklearn.utils.estimator_checks.check_estimator` that scikit-learn
    runs on it (:data:`EXPECTED_FAILED_CHECKS` is empty;
    ``tests/test_sklearn.py``); scikit-learn skips its determinism checks
    for the ``non_deterministic`` tag set here: the output is random by
    design.  With a ``policy`` the features are the attributes of its
    domain, so the checks that feed another number of features
    (:data:`FEATURE_COUNT_CHECKS`) fail on it by design, and one more on
    every domain (:data:`POLICY_EXPECTED_FAILED_CHECKS`, with its reason).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from . import frames
from ._estimator_base import (HAVE_SKLEARN, BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                              NotFittedError, TransformerMixin)
from ._estimator_input import (array_columns, feature_names, names_mismatch, on_grid, refuse_non_finite,
                               refuse_sparse, spark_on_grid, table_array)
from ._estimator_policy import bounds_policy, check_public_policy, check_theta, derived_bounds
from ._spark_frames import is_spark_frame
from ._validation import as_int
from .errors import TableError
from .mechanisms import choose_cell, plan_kmeans, plan_kmeans_grid
from .mechanisms.clustering.methods import METHODS
from .noise import Generator
from .policy._policy import Policy

__all__ = ["BlowfishKMeans", "PrivacyLeakWarning", "SeededNotPrivateWarning", "EXPECTED_FAILED_CHECKS",
           "POLICY_EXPECTED_FAILED_CHECKS", "FEATURE_COUNT_CHECKS", "HAVE_SKLEARN", "NotFittedError",
           "MAX_DERIVED_CELLS"]

#: Most cells of a domain whose bounds are read from the data (``bounds`` and
#: ``policy`` both None); wider data need public ``bounds`` (with bins).
MAX_DERIVED_CELLS = 2**22
#: Clusters of one fit at most (the C kernel's limit).
MAX_CLUSTERS = 64


class SeededNotPrivateWarning(UserWarning):
    """An estimator was fitted with a seeded (reproducible) generator: the result is NOT private."""


class PrivacyLeakWarning(UserWarning):
    """An estimator read its bounds from the data (no ``policy``, no ``bounds``): the result is NOT private."""


#: scikit-learn checks that ``BlowfishKMeans()`` (its defaults) fails, and
#: why: none.  Its ``check_clustering`` passes because scikit-learn seeds
#: the estimator (``random_state=0``), which makes it reproducible and so
#: not private; with secure noise 50 points are few for epsilon 1.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}

#: Checks that fail for an estimator with a fixed ``policy`` on every domain
#: (run with ``invalid="clamp"``: some checks' data, once rounded to the
#: grid, fall outside the domain), and why.
POLICY_EXPECTED_FAILED_CHECKS = {
    "check_estimators_nan_inf": (
        "with invalid='clamp' or 'drop' a NaN or infinite cell is a value outside the domain and its row is "
        "dropped, as dataset.invalid does in a release spec; with the default invalid='error' fit and predict "
        "refuse NaN and infinity with a ValueError saying so"),
}

#: Checks that feed a fixed number of features (1, 2, 3, 4, 5 or 10): with a
#: ``policy`` the features are the attributes of its domain, so each of these
#: fails on domains with another number of attributes and passes on the
#: right one (``tests/test_sklearn.py`` runs them on domains of 1, 2, 3, 4,
#: 5 and 10 attributes).  ``BlowfishKMeans()`` (bounds from the data) passes
#: them all.
FEATURE_COUNT_CHECKS = (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object", "check_estimators_dtypes",
    "check_estimators_fit_returns_self", "check_estimators_overwrite_params", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample", "check_fit2d_predict1d",
    "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_non_transformer_estimators_n_iter",
    "check_positive_only_tag_during_fit", "check_readonly_memmap_input", "check_clustering",
    "check_estimators_nan_inf", "check_transformer_data_not_an_array", "check_transformer_general",
    "check_transformer_n_iter", "check_transformer_preserve_dtypes",
)


def _check_fitted(est) -> None:
    if not hasattr(est, "cluster_centers_"):
        raise NotFittedError(f"This {type(est).__name__} instance is not fitted yet; call 'fit' first")


def _privacy_record(plan, result, policy, specific: dict, derived: bool) -> dict:
    """``privacy_``: the epsilon spent and asked, the method's own fields, guarantee, citation, private or why not."""
    seeded = not result.secure
    reasons = []
    if derived:
        reasons.append("the bounds were read from the data (no policy, no bounds were given)")
    if seeded:
        reasons.append("random_state was an int: anyone with the seed can remove the noise")
    return {
        "epsilon_spent": float(result.epsilon_exact),
        "epsilon_spent_exact": str(result.epsilon_exact),
        "epsilon_requested": float(plan.epsilon_requested),
        **specific,
        "guarantee": plan.guarantee,
        "citation": plan.citation,
        "policy": repr(policy),
        "bounds_from_data": derived,
        "seeded": seeded,
        "private": not reasons,
        "note": ("NOT private: " + "; ".join(reasons) if reasons else "private: cluster_centers_ are "
                 "(epsilon, policy)-Blowfish private; labels_ are computed from the training rows and are not"),
    }


class BlowfishKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, BaseEstimator):
    """k-means under a Blowfish policy, as a scikit-learn estimator.

    With ``method="grid"`` (the default, as ``mechanisms.kmeans`` and the
    ``kmeans`` release kind) ``fit`` releases the points once as a noisy
    grid (``mechanisms.plan_kmeans_grid``: each point spread over the
    corners of its cell, whose sensitivity under a distance threshold theta
    is ``2 s^(d-1) min(theta, s)`` instead of DP's ``2 s^d``) and runs
    weighted Lloyd on it as post-processing; ``method="eugkm"`` is the DP
    grid baseline (cell counts, Su et al. 2016).  With ``method="sulq"``
    ``fit`` runs ``mechanisms.plan_kmeans(policy, epsilon, k=n_clusters,
    iterations=max_iter, init=init, size_fraction=size_fraction)`` and
    measures it on the rows of ``X``: every one of the ``max_iter`` rounds
    releases noisy cluster sizes and noisy cluster sums, calibrated to
    their exact policy-specific sensitivity given that round's public
    centroids (with the cross-cluster correction of Corrections to the papers); the
    rounds compose sequentially, so the spend is at most ``epsilon``.

    The policy, one of three ways
        ``policy``: any policy without constraints on ordinal attributes
        (the features are its attributes, in order; tables by name).
        ``bounds=(lower, upper)`` (diffprivlib's ``KMeans(bounds=...)``):
        integers per feature, which must be public (chosen without looking
        at the data); the policy is ``Policy.from_bounds(bounds,
        theta=theta, metric=metric)``, ordinal attributes ``x0 .. x{d-1}``
        (a DataFrame's column names when they are strings) and secrets
        ``DistanceThreshold(theta, metric)``.  Neither (``BlowfishKMeans()``):
        the bounds are **read from the data** (``floor(min)`` and
        ``ceil(max)`` of each feature, values rounded to the nearest
        integer), which reveals the extremes of the training rows: the
        result is then **not private**, a :class:`PrivacyLeakWarning` says
        so at every fit and ``privacy_["private"]`` is False.  This default
        exists so that the estimator runs anywhere scikit-learn runs one
        (its checks, quick experiments on floats); for a release, pass
        ``bounds`` or ``policy``.

    Values on the grid
        The domain's values are integers: a grid of granularity 1 in the
        units of ``bounds`` (or of the policy's ordinal attributes).  On
        every path ``fit`` puts ``X`` on that grid the same way: a float is
        rounded to the nearest integer (``numpy.rint``, halves to even) and
        a bool counts as 0 or 1.  Only values outside the domain *after
        rounding*, NaN, infinity and missing values (None) are invalid (see
        ``invalid``); rescale ``X`` first when one unit is too coarse.
        ``predict``, ``transform``, ``score`` and ``labels_`` use the rows
        as given (unrounded): distances to the centroids, post-processing.

    Parameters
    ----------
    policy : Policy or None, default None
        A policy without public constraints on a domain of ordinal
        attributes; its attributes are the features, in order.  Not
        together with ``bounds``.
    epsilon : float, default 1.0
        The whole budget of one ``fit``.
    n_clusters : int, default 8
        ``1 <= n_clusters <= 64`` and at most the domain's number of cells
        (a public policy or ``bounds``; refused at ``fit`` before anything
        is read or spent).
    max_iter : int, default 10
        ``"sulq"``: rounds (all of them run: stopping early would depend on
        the data).  Grid methods: Lloyd rounds on the noisy grid
        (post-processing, free).
    init : "random" or array of shape (n_clusters, n_features)
        ``"sulq"`` only.  ``"random"`` draws distinct cells of the domain
        with the noise generator (never from the data).
    size_fraction : float, default 0.5
        ``"sulq"`` only: share of each round's budget for the cluster sizes.
    random_state : None or int, default None
        None: secure noise (a private release).  An int: a seeded,
        reproducible generator, **not private**; a
        :class:`SeededNotPrivateWarning` is issued.
    invalid : {"error", "clamp", "drop"}, default "error"
        Values outside the policy's domain once rounded to the grid, as
        ``dataset.invalid`` in a release spec: refused before anything is
        measured (the message never quotes a value), clamped into ``[low,
        high]``, or their rows dropped.  NaN, infinity and None are refused
        under ``"error"``; under ``"clamp"`` or ``"drop"`` their rows are
        dropped.
    method : {"grid", "eugkm", "sulq"}, default "grid"
        The mechanism (see above).
    cell : int or None, default None
        Grid methods: the cell side in bins; None chooses it from the number
        of rows (public under bounded neighbours) and epsilon.
    bounds : (lower, upper) or None, default None
        Public integer bounds per feature (scalars for one feature); see
        "The policy, one of three ways".
    theta : number, default 1
        With ``bounds`` (or neither): the distance threshold of the secrets,
        in the units of the bounds: two grid values within distance theta
        (under ``metric``) of each other are the pairs an adversary must not
        tell apart.  At least 1: grid values differ by at least 1, so a
        smaller theta protects no pair and is refused (the centroids would
        be exact).  A ``policy`` whose secret graph has no edge is refused
        likewise.
    metric : {"l1", "l2", "linf"}, default "l1"
        With ``bounds`` (or neither): the metric of the distance threshold.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The private centroids (inside the domain's box).
    policy_ : Policy
        The policy of the fit (``policy``, from ``bounds`` or from the data).
    labels_ : ndarray of shape (n_samples,)
        ``predict(X)`` of the training rows: derived from the data, NOT
        private (for your own use).  Not set when ``X`` is a Spark
        DataFrame: one label per row would bring the table to the driver
        (``predict`` does that when asked).
    n_iter_ : int
        Rounds run (``max_iter``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The features' names, when ``X`` was a DataFrame.
    privacy_ : dict
        ``epsilon_spent`` (float) and ``epsilon_spent_exact`` (str, a
        fraction), ``epsilon_requested``, ``sensitivities``, ``guarantee``,
        ``policy``, ``bounds_from_data``, ``seeded``, ``private`` (False
        when seeded or when the bounds came from the data) and a ``note``.

    Notes
    -----
    There is no ``inertia_``: scikit-learn's is the k-means objective of
    the *training rows* (the sum of their squared distances to the
    centroids), a statistic of the data that no noise protects; publishing
    it would spend privacy the release did not account for.  Call
    ``score(X)`` on data you hold to compute it yourself (minus the
    objective, scikit-learn's sign), knowing that on the training rows it
    is not private.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy.sklearn import BlowfishKMeans
    >>> X = np.random.default_rng(0).integers(0, 16, size=(500, 2))
    >>> km = BlowfishKMeans(bounds=([0, 0], [15, 15]), theta=2, epsilon=1.0, n_clusters=3).fit(X)
    >>> km.cluster_centers_.shape, km.privacy_["epsilon_spent"] <= 1.0, km.privacy_["private"]
    ((3, 2), True, True)
    >>> km.transform(X[:4]).shape, km.score(X) <= 0
    ((4, 3), True)
    """

    # The fitted attributes (set by ``fit``; declared here for type checkers only, no class attribute is made).
    cluster_centers_: npt.NDArray[np.float64]
    initial_centers_: npt.NDArray[np.float64]
    labels_: npt.NDArray[np.int64]
    policy_: Policy
    privacy_: dict[str, Any]
    n_iter_: int
    n_features_in_: int
    feature_names_in_: npt.NDArray[np.object_]

    def __init__(self, policy: Policy | None = None, epsilon: float = 1.0, n_clusters: int = 8, max_iter: int = 10,
                 init: str | npt.ArrayLike = "random", size_fraction: float = 0.5, random_state: int | None = None,
                 invalid: str = "error", method: str = "grid", cell: int | None = None,
                 bounds: tuple[float | Sequence[float] | npt.NDArray[Any], float | Sequence[float] | npt.NDArray[Any]]
                 | None = None, theta: float = 1, metric: str = "l1") -> None:
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
        self.bounds = bounds
        self.theta = theta
        self.metric = metric

    # -- scikit-learn tags ------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.allow_nan = False
        return tags

    def _more_tags(self) -> dict:  # scikit-learn < 1.6
        return {"non_deterministic": True, "allow_nan": False}

    # -- parameters --------------------------------------------------------------
    def _check_params(self) -> None:
        """Every parameter that can be checked before reading X, named as the estimator names it."""
        if not isinstance(self.method, str) or self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        k = as_int(self.n_clusters, "n_clusters", minimum=1)
        if k > MAX_CLUSTERS:
            raise ValueError(f"n_clusters must be at most {MAX_CLUSTERS}, got {k}")
        as_int(self.max_iter, "max_iter", minimum=1)
        if self.policy is not None and not isinstance(self.policy, Policy):
            raise TypeError(f"policy must be a blowfish_privacy.Policy (a domain of ordinal attributes and a secret "
                            f"graph) or None, got {self.policy!r}")
        if self.policy is not None and self.bounds is not None:
            raise ValueError("policy and bounds: give one of them (bounds build a policy), not both")
        if self.method == "sulq" and self.cell is not None:
            raise ValueError(f"cell applies only to methods 'grid' and 'eugkm', got cell={self.cell!r} with "
                             "method='sulq'")
        sulq_only = [name for name, value, default in (("init", self.init, "random"),
                                                       ("size_fraction", self.size_fraction, 0.5))
                     if not (isinstance(value, type(default)) and value == default)]
        if self.method != "sulq" and sulq_only:
            raise ValueError(f"{sulq_only[0]} applies only to method='sulq', got method={self.method!r}")

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

    # -- reading X -----------------------------------------------------------------
    def _columns(self, X, names, *, fitting: bool) -> tuple[dict, int]:
        """``({attribute name: 1-D column}, n)`` of X, by name for tables and by position for arrays."""
        refuse_sparse(X)
        tabular = frames.is_table(X) or isinstance(X, Mapping)
        given = feature_names(X) if tabular else None
        if tabular and given is None:  # no string column names: the columns by position, as scikit-learn does
            X, tabular = table_array(X), False
        if not tabular:
            if not fitting and hasattr(self, "feature_names_in_"):
                warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was fitted with "
                              "feature names", UserWarning, stacklevel=3)
            if fitting and hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return array_columns(X, names, type(self).__name__, fitting=fitting,
                                 missing_ok=fitting and self.invalid != "error")
        if not fitting and not hasattr(self, "feature_names_in_"):
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without feature names",
                          UserWarning, stacklevel=3)
            return array_columns(table_array(X), names, type(self).__name__)
        if not fitting and self.policy is None and given != list(self.feature_names_in_):
            # bounds (or none): the features are X's columns at fit, so they must come back as they were
            raise ValueError(names_mismatch(list(self.feature_names_in_), given))
        cols = frames.table_columns(X, names, param="X")  # a policy's attributes by name, other columns ignored
        if fitting:
            self.feature_names_in_ = np.array(names, dtype=object)
        n = len(cols[names[0]])
        if n < 1:
            raise ValueError(f"Found array with 0 sample(s) (shape=(0, {len(names)})) while a minimum of 1 is "
                             "required")
        return cols, n

    def _public_policy(self, X) -> Policy | None:
        """The policy given or built from public ``bounds`` (None: bounds read from the data), X's values unread."""
        if self.policy is not None:
            return self.policy
        if self.bounds is None:
            return None
        return bounds_policy(self.bounds, self.theta, self.metric, feature_names(X))

    def _derived_policy(self, X) -> tuple[Policy, dict]:
        """Bounds read from the data (NOT private): floor(min) .. ceil(max) of each feature, values rounded."""
        if is_spark_frame(X):
            raise ValueError("X: a Spark DataFrame needs policy or bounds (reading bounds from the rows is not "
                             "private and is not done in Spark)")
        check_theta(self.theta, self.metric)
        table_names = feature_names(X)
        if table_names is None:  # an array, or a table without string column names: by position
            X = table_array(X) if frames.is_table(X) or isinstance(X, Mapping) else np.asarray(X)
            names = [f"x{a}" for a in range(X.shape[1] if X.ndim == 2 else 1)]
        else:
            names = table_names
        cols, _ = self._columns(X, names, fitting=True)
        refuse_non_finite(cols, self.invalid)
        lower, upper = derived_bounds(cols, MAX_DERIVED_CELLS)
        warnings.warn(f"{type(self).__name__}: neither policy nor bounds was given, so the bounds were read from the "
                      "data (their minimum and maximum): the result is NOT private. Pass public bounds=(lower, "
                      "upper) or a policy for a private release", PrivacyLeakWarning, stacklevel=3)
        policy = Policy.from_bounds((lower, upper), theta=self.theta, metric=self.metric, names=names)
        if self.method == "sulq" and isinstance(self.init, str) and self.n_clusters > policy.domain.size:
            # the domain is read from the data: its size is not quoted
            raise ValueError(f"n_clusters={self.n_clusters} is more than the cells of the bounds read from the data "
                             "(init='random' draws distinct cells); pass public bounds=(lower, upper) or fewer "
                             "n_clusters")
        return policy, cols

    # -- fit / predict ---------------------------------------------------------------
    def fit(self, X: Any, y: object = None) -> Self:
        """Learn private centroids from the rows of ``X`` (one column per feature).

        ``X`` is an array of shape (n_samples, n_features) or a pandas or
        Polars DataFrame, a pyarrow Table or a Spark DataFrame with a column
        per attribute (by name).  A Spark DataFrame is counted in Spark
        (:func:`blowfish_privacy.histogram`): only the histogram of the
        domain reaches the driver, and ``labels_`` is not set.  ``y`` is
        ignored.  Values are put on the domain's integer grid (floats
        rounded to the nearest integer, bools as 0/1; an ordinal value in a
        bin stands for its bin) and must then lie in the domain unless
        ``invalid`` says otherwise.  Every refusal that depends only on the
        parameters, the bounds or the policy and X's shape comes before
        X's values are read; none comes after the spend.  Returns ``self``.
        """
        self._check_params()
        refuse_sparse(X)
        policy = self._public_policy(X)
        derived = policy is None
        if policy is not None:  # every public refusal before X's values are read
            check_public_policy(policy, "policy" if self.policy is not None else "bounds",
                                n_clusters=int(self.n_clusters), method=self.method, init=self.init,
                                theta=self.theta, metric=self.metric)
            cols = None if is_spark_frame(X) else self._columns(X, list(policy.domain.names), fitting=True)[0]
        else:
            policy, cols = self._derived_policy(X)
        domain = policy.domain
        hist = self._histogram(X, cols, domain)
        if self.method != "sulq":
            plan, result = self._fit_grid(hist, policy)
            specific = {"method": self.method, "cell": int(result.cell),
                        "sensitivities": [{"release": "grid weights", "sensitivity": int(result.sensitivity),
                                           "scale": float(result.scale), "how": plan.parts[0].how}]}
            self.n_iter_ = int(self.max_iter)
        else:
            plan = plan_kmeans(policy, self.epsilon, k=self.n_clusters, iterations=self.max_iter, init=self.init,
                               size_fraction=self.size_fraction)  # validates the rest; nothing measured yet
            cells = np.flatnonzero(hist)
            values = np.stack([np.asarray(v, dtype=np.int64) for v in domain.values(cells)], axis=1) if cells.size \
                else np.zeros((0, domain.ndim), dtype=np.int64)
            points = np.repeat(values, hist[cells], axis=0)  # the same multiset of cells, in index order
            result = plan.measure(points, self._generator())
            self.initial_centers_ = np.asarray(result.initial_centroids, dtype=np.float64)
            self.n_iter_ = len(result.history)
            specific = {"method": "sulq", "sensitivities": [
                {"round": i, "size": int(h.sensitivity.size), "sum": int(h.sensitivity.sum),
                 "size_exact": bool(h.sensitivity.size_exact), "sum_exact": bool(h.sensitivity.sum_exact),
                 "method": h.sensitivity.method, "epsilon_sizes": float(h.epsilon_sizes),
                 "epsilon_sums": float(h.epsilon_sums), "scale_sizes": float(h.scale_sizes),
                 "scale_sums": float(h.scale_sums)}
                for i, h in enumerate(result.history, 1)
            ]}
        self.cluster_centers_ = np.asarray(result.centroids, dtype=np.float64)
        self.policy_ = policy
        self.n_features_in_ = domain.ndim
        self.privacy_ = _privacy_record(plan, result, policy, specific, derived)
        self._set_labels(cols)
        return self

    def _fit_grid(self, hist, policy):
        """The grid mechanisms (:func:`blowfish_privacy.mechanisms.kmeans_grid`): one noisy grid release, then weighted Lloyd.

        The grid side is ``cell`` or chosen from the number of rows, which
        is public under bounded neighbours (the policy's fixed n).
        """
        interp = "linear" if self.method == "grid" else "nearest"
        cell = self.cell if self.cell is not None else choose_cell(policy, self.epsilon, max(int(hist.sum()), 1),
                                                                   interp)
        plan = plan_kmeans_grid(policy, self.epsilon, k=self.n_clusters, cell=cell, interpolation=interp,
                                iterations=self.max_iter)
        return plan, plan.measure(hist, self._generator())

    def _histogram(self, X, cols: dict | None, domain) -> np.ndarray:
        """The histogram of the training rows over the domain's grid (floats rounded); Spark counted in Spark.

        Errors about the values name ``X`` (the parameter), as every other
        message of the estimator.
        """
        try:
            if cols is None:
                hist = frames.histogram(spark_on_grid(X, domain.names), domain, invalid=self.invalid)
                self.feature_names_in_ = np.array(domain.names, dtype=object)
                return hist
            refuse_non_finite(cols, self.invalid)
            return frames.histogram({name: on_grid(col) for name, col in cols.items()}, domain,
                                    invalid=self.invalid)
        except TableError as exc:
            msg = str(exc)
            raise TableError("X: " + msg.removeprefix("table: ") if msg.startswith("table: ") else msg) from None

    def _set_labels(self, cols: dict | None) -> None:
        """``labels_`` of the training columns (rows with NaN/inf, dropped under clamp/drop: -1); none for Spark."""
        if cols is None:
            if hasattr(self, "labels_"):
                del self.labels_
            return
        self.labels_ = self._nearest(self._points(cols), missing=-1)

    def _points(self, cols: dict) -> np.ndarray:
        return np.stack([np.asarray(c, dtype=np.float64) for c in cols.values()], axis=1)

    def _sq_distances(self, pts: np.ndarray) -> np.ndarray:
        """Squared Euclidean distances (n, n_clusters) of finite rows to the centroids, never negative."""
        c = self.cluster_centers_
        d2 = (pts * pts).sum(axis=1)[:, None] - 2.0 * pts @ c.T + (c * c).sum(axis=1)[None, :]
        return np.maximum(d2, 0.0)

    def _nearest(self, pts: np.ndarray, *, missing: int | None = None) -> np.ndarray:
        """Index of the nearest centroid of every row; rows with NaN/inf raise, or get ``missing``."""
        finite = np.isfinite(pts).all(axis=1)
        if missing is None and not finite.all():
            raise ValueError("X holds NaN or infinity (values not shown); nearest centroids need finite values")
        labels = np.full(pts.shape[0], -1 if missing is None else missing, dtype=np.int64)
        labels[finite] = np.argmin(self._sq_distances(pts[finite]), axis=1)
        return labels

    def _new_points(self, X) -> np.ndarray:
        """The rows of X (validated as in ``predict``), finite, as float64 of shape (n, n_features)."""
        _check_fitted(self)
        cols, _ = self._columns(X, list(self.policy_.domain.names), fitting=False)
        pts = self._points(cols)
        if not np.isfinite(pts).all():
            raise ValueError("X holds NaN or infinity (values not shown); distances need finite values")
        return pts

    def predict(self, X: Any) -> npt.NDArray[np.int64]:
        """The nearest private centroid (Euclidean) of every row of ``X``: post-processing, no budget spent."""
        return self._nearest(self._new_points(X))

    def transform(self, X: Any) -> npt.NDArray[np.float64]:
        """Euclidean distances of every row of ``X`` to every private centroid, shape (n_samples, n_clusters).

        As scikit-learn's ``KMeans.transform``; post-processing of the
        centroids on data in hand (no budget spent).
        """
        return np.sqrt(self._sq_distances(self._new_points(X)))

    def fit_transform(self, X: Any, y: object = None) -> npt.NDArray[np.float64]:
        """``fit(X).transform(X)``; the distances of the training rows are NOT private (derived from the rows)."""
        return self.fit(X, y).transform(X)

    @property
    def _n_features_out(self) -> int:
        """Outputs of ``transform`` (one distance per centroid), for ``get_feature_names_out``."""
        return self.cluster_centers_.shape[0]

    def score(self, X: Any, y: object = None) -> float:
        """Minus the sum of squared distances of the rows of ``X`` to their nearest private centroid.

        scikit-learn's sign (higher is better), computed from the rows of
        ``X`` you hold: post-processing, no budget spent, and not private
        itself (on the training rows it is the objective that
        ``inertia_`` would be; see the class Notes).  ``y`` is ignored.
        """
        return -float(self._sq_distances(self._new_points(X)).min(axis=1).sum())

    def fit_predict(self, X: Any, y: object = None) -> npt.NDArray[np.int64]:
        """``fit(X).labels_``: the training rows' clusters (NOT private: derived from the rows).

        For a Spark DataFrame the columns are collected to the driver after
        the fit, and rows with NaN or infinity (dropped under clamp or drop)
        get -1, as in ``labels_``: nothing after the spend fails on the data.
        """
        if is_spark_frame(X):
            self.fit(X, y)
            cols, _ = self._columns(X, list(self.policy_.domain.names), fitting=False)
            return self._nearest(self._points(cols), missing=-1)
        return self.fit(X, y).labels_
