"""The policy wing: what is secret and what is public (000 Sec 2-5, 8).

``domain``
    :class:`Domain` and its attributes (:class:`Ordinal`, :class:`Categorical`).
``secrets``
    secret graphs, each answering for itself (edges, distances, containment,
    the capabilities mechanisms ask for).
``constraints``
    public count constraints and the policy graph (000 Sec 8).
``Policy``
    a domain, a secret graph and constraints, with its sensitivities.
``transform``
    tree embeddings of secret graphs and the transformation ``x_G`` (001 Sec 3).
``guarantee``
    the guarantee in numbers: ``e^(eps d_G(x, y))`` per pair beside DP (000 eq. 9).
"""

from . import constraints, domain, guarantee, secrets, transform
from ._policy import Policy, Sensitivity, SensitivityReport, require_policy
from .domain import Attribute, Categorical, Domain, Ordinal

__all__ = [
    "Attribute",
    "Categorical",
    "Domain",
    "Ordinal",
    "Policy",
    "Sensitivity",
    "SensitivityReport",
    "constraints",
    "domain",
    "guarantee",
    "require_policy",
    "secrets",
    "transform",
]
