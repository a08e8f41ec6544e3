"""Everything the library can plan or release, by name, for the checks that
must cover all of it.

:func:`plans` lists every public plan factory: each ``plan_*`` function
named in the ``__all__`` of :mod:`blowfish_privacy.mechanisms`,
:mod:`blowfish_privacy.baselines` or any module inside them (a plan a
module exports but its package does not, such as one used only by a release
kind, is still a plan); :func:`kinds` lists every release kind of a spec.
The auditor's cases, the neighbour-differential harness, the docstring
check and the fuzz targets are generated from these, so a new plan or kind
is audited and attacked as soon as it is public, without anyone adding it
to a list.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Callable

from . import baselines, mechanisms
from .release.kinds import KINDS, Kind

__all__ = ["kinds", "plan_families", "plans"]

_FAMILIES = (mechanisms, baselines)


def _exported_plans(module) -> dict[str, Callable]:
    return {name: getattr(module, name) for name in getattr(module, "__all__", ())
            if name.startswith("plan_") and inspect.isfunction(getattr(module, name, None))}


def _modules(package):
    yield package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        # discovery, not a dependency: every module of the family is already imported by its package
        yield importlib.import_module(info.name)


def _found() -> dict[str, tuple[Callable, str]]:
    """``{name: (function, family)}``; one function per name across both families."""
    found: dict[str, tuple[Callable, str]] = {}
    for package in _FAMILIES:
        family = package.__name__.rpartition(".")[2]
        for module in _modules(package):
            for name, fn in _exported_plans(module).items():
                if name in found and found[name][0] is not fn:
                    raise RuntimeError(f"two plan factories are named {name}: {found[name][0].__module__} and "
                                       f"{fn.__module__}; a plan's name must say which it is")
                found.setdefault(name, (fn, family))
    return found


def plans() -> dict[str, Callable]:
    """Every public plan factory, ``{name: function}``, sorted by name.

    A name belongs to one function across both families (two functions
    of one name raise ``RuntimeError``)."""
    return {name: fn for name, (fn, _) in sorted(_found().items())}


def plan_families() -> dict[str, str]:
    """``{plan name: "mechanisms" | "baselines"}``: the family each plan belongs to."""
    return {name: family for name, (_, family) in sorted(_found().items())}


def kinds() -> dict[str, Kind]:
    """Every release kind of a spec, ``{name: Kind}``."""
    return dict(KINDS)
