"""The base classes of :mod:`blowfish_privacy.sklearn`: scikit-learn's when it is importable, else minimal ones.

scikit-learn is optional.  With it, estimators inherit
``sklearn.base.BaseEstimator``, ``ClusterMixin``, ``TransformerMixin`` and
``ClassNamePrefixFeaturesOutMixin`` (so ``clone``, pipelines,
``set_output``, ``GridSearchCV`` parameters and the HTML repr work);
without it, :class:`BaseEstimator` here gives ``get_params``,
``set_params`` and a repr from the ``__init__`` signature,
:class:`ClusterMixin` ``fit_predict``, :class:`TransformerMixin`
``fit_transform`` and :class:`ClassNamePrefixFeaturesOutMixin`
``get_feature_names_out``, with the same behaviour.
"""

from __future__ import annotations

import inspect

__all__ = ["BaseEstimator", "ClassNamePrefixFeaturesOutMixin", "ClusterMixin", "NotFittedError", "TransformerMixin",
           "HAVE_SKLEARN"]

try:  # optional
    from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin
    from sklearn.exceptions import NotFittedError
    HAVE_SKLEARN = True
except ImportError:  # a minimal, compatible base
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """The estimator is used before ``fit`` (as scikit-learn's NotFittedError)."""

    class BaseEstimator:
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

    class ClusterMixin:
        """``fit_predict`` as scikit-learn's ClusterMixin."""

        _estimator_type = "clusterer"

        def fit_predict(self, X, y=None, **kwargs):
            self.fit(X, y, **kwargs)
            return self.labels_

    class TransformerMixin:
        """``fit_transform`` as scikit-learn's TransformerMixin."""

        def fit_transform(self, X, y=None, **kwargs):
            return self.fit(X, y, **kwargs).transform(X)

    class ClassNamePrefixFeaturesOutMixin:
        """``get_feature_names_out``: the lower-case class name and the output's index, as scikit-learn's."""

        def get_feature_names_out(self, input_features=None):
            prefix = type(self).__name__.lower()
            return [f"{prefix}{i}" for i in range(self._n_features_out)]
