"""Everything the library can plan or release, by name, for the checks that
must cover all of it.

:func:`plans` lists every public plan factory (``plan_*`` in
:mod:`blowfish_privacy.mechanisms` and :mod:`blowfish_privacy.baselines`);
:func:`kinds` lists every release kind of a spec.  The auditor's cases, the
neighbour-differential harness, the docstring check and the fuzz targets are
generated from these, so a new plan or kind is audited and attacked as soon
as it is public, without anyone adding it to a list.
"""

from __future__ import annotations

from typing import Callable

from . import baselines, mechanisms
from .release.kinds import KINDS, Kind

__all__ = ["kinds", "plan_families", "plans"]


def plans() -> dict[str, Callable]:
    """Every public plan factory, ``{name: function}``, sorted by name.

    Names are unique across the two packages (a test checks it)."""
    found: dict[str, Callable] = {}
    for package in (mechanisms, baselines):
        for name in package.__all__:
            if name.startswith("plan_"):
                found[name] = getattr(package, name)
    return dict(sorted(found.items()))


def plan_families() -> dict[str, str]:
    """``{plan name: "mechanisms" | "baselines"}``: where each plan is public."""
    return {name: package.__name__.rpartition(".")[2] for package in (mechanisms, baselines)
            for name in package.__all__ if name.startswith("plan_")}


def kinds() -> dict[str, Kind]:
    """Every release kind of a spec, ``{name: Kind}``."""
    return dict(KINDS)
