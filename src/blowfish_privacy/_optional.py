"""Optional dependencies: a clear refusal, before any work, where one is missing.

The core needs numpy only; the strategy search and bounds and the sampled
audit use scipy (the ``scipy`` extra).  Their public entry points call
:func:`require_scipy` first, so a plain install refuses them in one line
naming the extra instead of failing midway with ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.util

from .errors import MissingDependencyError

__all__ = ["installed", "require_scipy"]


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (found on the path; not imported here)."""
    return importlib.util.find_spec(module) is not None


def require_scipy(feature: str) -> None:
    """Raise :class:`~blowfish_privacy.errors.MissingDependencyError` naming ``feature`` when scipy is absent."""
    if not installed("scipy"):
        raise MissingDependencyError(f"{feature} needs scipy, which is not installed: "
                                     "pip install 'blowfish-privacy[scipy]'")
