"""blowfish-privacy: statistics released under Blowfish privacy.

Blowfish privacy (He, Machanavajjhala and Ding, SIGMOD 2014) generalises
differential privacy with a *policy*: a secret graph saying which pairs of
values of one individual must stay indistinguishable, and the counts that
are already public.  Noise is exact integer noise from a secure sampler.
"""

from . import audit, baselines, constraints, errors, frames, mechanisms, secrets, transform
from .accountant import Accountant
from .policy import Categorical, Domain, Ordinal
from .frames import histogram
from .noise import Generator
from .policy import Policy

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "Categorical",
    "Domain",
    "Generator",
    "Ordinal",
    "Policy",
    "audit",
    "baselines",
    "constraints",
    "errors",
    "frames",
    "histogram",
    "mechanisms",
    "secrets",
    "transform",
]
