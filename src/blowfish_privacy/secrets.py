"""The documented import path of :mod:`blowfish_privacy.policy.secrets`.

``from blowfish_privacy.secrets import ...`` gives the public names of the policy
wing's module (its ``__all__``); the code lives in ``policy/secrets``.
"""

from .policy.secrets import *  # noqa: F401,F403
from .policy.secrets import __all__  # noqa: F401
from .policy.secrets import limits  # noqa: F401  (set limits there: they are read at call time)

