"""The import path of :mod:`blowfish_privacy.policy.transform`.

``from blowfish_privacy.transform import ...`` gives the public names of the policy
wing's module (its ``__all__``); the code lives in ``policy/transform``.
"""

from .policy.transform import *  # noqa: F401,F403
from .policy.transform import __all__  # noqa: F401
