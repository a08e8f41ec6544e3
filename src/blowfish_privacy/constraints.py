"""The documented import path of :mod:`blowfish_privacy.policy.constraints`.

``from blowfish_privacy.constraints import ...`` gives the public names of the policy
wing's module (its ``__all__``); the code lives in ``policy/constraints``.
"""

from .policy.constraints import *  # noqa: F401,F403
from .policy.constraints import __all__  # noqa: F401

