"""Discriminative secret graphs (000 Sec 3.1, DESIGN sec 2).

A secret graph ``G = (T, E)`` lists the pairs of domain values ``(x, y)``
that an adversary must not tell apart for any one individual: for every
edge, every individual ``i``, the secrets ``t_i = x`` and ``t_i = y`` form a
discriminative pair.  Blowfish privacy without constraints then bounds the
log-ratio of output probabilities for two values of one individual by
``epsilon * d_G(x, y)`` (000 eq. 9), ``d_G`` the shortest-path length.

Graphs here:

``FullDomain()``
    The complete graph (000 eq. 4): bounded differential privacy.
``Attribute(c=1)``
    Values differing in at most ``c`` attributes (000 eq. 5 for ``c = 1``).
``Partition(blocks)``
    A clique on each block of a partition of the domain (000 eq. 6); also
    :meth:`Partition.by_attributes` and :meth:`Partition.intervals`.
``DistanceThreshold(theta, metric)``
    Values at distance ``0 < d(x, y) <= theta`` (000 eq. 7), ``d`` the L1,
    L2 or Linf metric on the (bin) values of ordinal attributes.
``Line()``
    ``DistanceThreshold(1, "l1")`` on a 1-D ordinal domain of unit bins.
``Custom(edges)``
    An explicit undirected edge list.
``Intersection(graphs)``
    The pairs that are an edge of every member graph.

:func:`uncovered_pair` decides whether a graph on some of the attributes,
lifted to the whole domain, contains another graph (an edge it misses, or
None).

Each graph answers questions on *records* without a domain
(:meth:`SecretGraph.is_edge`, :meth:`SecretGraph.distance`) and, bound to a
:class:`~blowfish_privacy.policy.domain.Domain`, vectorised questions on flat
indices (:meth:`SecretGraph.edge_mask`, :meth:`SecretGraph.distance_index`,
...).  Nothing builds a ``|T| x |T|`` object; explicit edge lists exist only
for small domains (:meth:`SecretGraph.iter_edges`).

Graphs describe themselves in plain words on a domain
(:meth:`SecretGraph.describe`), which :func:`blowfish_privacy.explain.explain`
prints.

Modules, one per idea (the public names are importable from this package):

``base``
    :class:`SecretGraph` and the record helpers.
``attribute``
    :class:`FullDomain`, :class:`Attribute`.
``partition``
    :class:`Partition`.
``threshold``
    :class:`DistanceThreshold`, :class:`Line`.
``lattice``
    exact lattice arithmetic of threshold graphs: metric tests, reach
    tables, shortest-path lengths, largest weighted change of one edge.
``custom``
    :class:`Custom`.
``intersection``
    :class:`Intersection`.
``canonical``
    the forms graphs take for containment and intersections (monotone
    conditions on the differences, 1-D bands, cliques, edge lists).
``containment``
    :func:`uncovered_pair`.
``mono_cover``
    containment when the covering graph is monotone on several attributes.
``records``
    records without a domain made into arrays.
``registry``
    graph classes by their names in release specs (:func:`graph_class`).
``limits``
    work limits (set them there: they are read at call time).

Capabilities (:meth:`SecretGraph.is_complete`,
:meth:`SecretGraph.line_threshold`, :meth:`SecretGraph.threshold_steps`,
:meth:`SecretGraph.agreement_cliques`, :meth:`SecretGraph.block_ids`,
:meth:`SecretGraph.tree_embedding`, :meth:`SecretGraph.crosses_selection`,
:meth:`SecretGraph.lists_edges`, :meth:`SecretGraph.on_bins`, ...)
answer the questions callers would otherwise ask by the class of a graph;
each returns None (or False) where a graph has no fast answer.
"""

from . import limits, registry
from .attribute import Attribute, FullDomain
from .base import SecretGraph, SpecParameter
from .containment import uncovered_pair
from .custom import Custom
from .intersection import Intersection
from .limits import DP_CELL_LIMIT, EDGE_LIMIT, ENUM_LIMIT, KNAPSACK_LIMIT, PAIR_LIMIT, SIGN_LIMIT
from .lattice import ThresholdSteps
from .partition import Partition
from .registry import graph_class
from .threshold import DistanceThreshold, Line

__all__ = [
    "SecretGraph",
    "FullDomain",
    "Attribute",
    "Partition",
    "DistanceThreshold",
    "Line",
    "Custom",
    "Intersection",
    "uncovered_pair",
    "graph_class",
    "SpecParameter",
    "ThresholdSteps",
    "DP_CELL_LIMIT",
    "ENUM_LIMIT",
    "KNAPSACK_LIMIT",
    "EDGE_LIMIT",
    "SIGN_LIMIT",
    "PAIR_LIMIT",
]
