"""Secret graphs by their names in release specs (``secrets = "NAME"``).

Each graph class that a spec may name carries its name
(:attr:`SecretGraph.spec_name`), the keys of its ``[policies.NAME]``
table (:attr:`SecretGraph.spec_parameters`) and a constructor from their
values (:meth:`SecretGraph.from_spec`); this module lists those classes
so that the spec reader needs no table of its own.  A new graph class is
named in specs by adding it to :data:`SPEC_GRAPHS`.
"""

from __future__ import annotations

from .attribute import Attribute, FullDomain
from .base import SecretGraph, SpecParameter
from .intersection import Intersection
from .partition import Partition
from .threshold import DistanceThreshold, Line

__all__ = ["SPEC_GRAPHS", "graph_class", "spec_names", "SpecParameter"]

#: Spec name -> graph class, for every graph a release spec may name.
SPEC_GRAPHS: dict[str, type[SecretGraph]] = {
    cls.spec_name: cls for cls in (FullDomain, Attribute, Partition, DistanceThreshold, Line, Intersection)
}


def graph_class(name: str) -> type[SecretGraph] | None:
    """The graph class a spec names ``secrets = name``, or None for an unknown name.

    Parameters
    ----------
    name : str

    Returns
    -------
    type or None
        A subclass of :class:`SecretGraph` with ``spec_name == name``.
    """
    return SPEC_GRAPHS.get(name)


def spec_names() -> list[str]:
    """The names a spec may give ``secrets``, sorted."""
    return sorted(SPEC_GRAPHS)
