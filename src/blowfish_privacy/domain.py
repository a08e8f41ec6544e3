"""The documented import path of :mod:`blowfish_privacy.policy.domain`.

``from blowfish_privacy.domain import ...`` gives the public names of the policy
wing's module (its ``__all__``); the code lives in ``policy/domain``.
"""

from .policy.domain import *  # noqa: F401,F403
from .policy.domain import __all__  # noqa: F401

