"""The documented import path of :mod:`blowfish_privacy.policy.secrets`.

``from blowfish_privacy.secrets import ...`` gives the public names of the policy
wing's module (its ``__all__``); the code lives in ``policy/secrets``.
"""

import sys

from .policy.secrets import *  # noqa: F401,F403
from .policy.secrets import __all__  # noqa: F401
from .policy.secrets import limits

# ``blowfish_privacy.secrets.limits`` is the limits module itself, under both
# import forms (``import blowfish_privacy.secrets.limits`` too): a limit set
# there is read by every graph at call time.
sys.modules[__name__ + ".limits"] = limits

