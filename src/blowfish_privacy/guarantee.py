"""The documented import path of :mod:`blowfish_privacy.policy.guarantee`.

``from blowfish_privacy.guarantee import ...`` gives the public names of the policy
wing's module (its ``__all__``); the code lives in ``policy/guarantee``.
"""

from .policy.guarantee import *  # noqa: F401,F403
from .policy.guarantee import __all__  # noqa: F401

