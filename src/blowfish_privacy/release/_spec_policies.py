"""The ``[policies]`` of a release spec: secret graphs by name, on raw values and on bins.

A policy table names its secret graph (``secrets = "NAME"``, the graph
classes of :mod:`blowfish_privacy.policy.secrets.registry` with their own
keys) or combines other policies (``secrets = "intersection"``, ``of =
[...]``).  Thresholds and interval boundaries speak of raw values; a
release on binned attributes uses the graph the secret graph gives for its
bins (:meth:`~blowfish_privacy.policy.secrets.SecretGraph.on_bins`).
Parallel groups of releases are admitted only under a policy with no
secret edge between the groups.
"""

from __future__ import annotations

from ..policy.domain import Domain
from ..policy.secrets.registry import graph_class, spec_names
from ._spec_tables import check_keys, fail, str_list, type_name, typed
from .kinds import KINDS

__all__ = ["COMBINED", "read_policies", "secret_graph", "intersection_graph", "raw_value_graph",
           "check_parallel_groups"]

#: The ``secrets`` name of a policy made of other policies (``of = [...]``): their intersection.
COMBINED = "intersection"
#: Keys of a policy table besides its graph's own.
POLICY_KEYS = {"secrets", "constraints", "attributes"}


def read_policies(raw: dict, where: str, reserved: str) -> tuple[dict, dict]:
    """The ``[policies]`` tables and their secret graphs on raw values: ``(tables, {name: graph})``.

    ``reserved`` is a name no policy may take (it means bounded DP in
    ``dataset.protect``).
    """
    pols = typed(raw, "policies", dict, "a table of policies [policies.NAME]", where, "", required=False, default={})
    policy_defs = {}
    if reserved in pols:
        raise fail(where, f"policies.{reserved}", f"the name {reserved!r} is reserved (dataset.protect = "
                   f"{reserved!r} means bounded differential privacy); choose another name")
    names = spec_names()
    for pname, ptab in pols.items():
        pre = f"policies.{pname}."
        if not isinstance(ptab, dict):
            raise fail(where, f"policies.{pname}", f"must be a table, got {ptab!r} ({type_name(ptab)})")
        kind = typed(ptab, "secrets", str, f"one of {names}", where, pre)
        cls = graph_class(kind)
        if cls is None:
            raise fail(where, f"{pre}secrets", f"unknown secret graph {kind!r}; allowed: {names}")
        check_keys(ptab, {p.name for p in cls.spec_parameters} | POLICY_KEYS, where, pre)
        constraints = typed(ptab, "constraints", list, "an array", where, pre, required=False, default=[])
        if constraints:
            raise fail(where, f"{pre}constraints", "public constraints are not supported in this version; "
                       "allowed: [] (none)")
        if kind != COMBINED:
            policy_defs[pname] = secret_graph(kind, ptab, where, pre)
    for pname in pols:
        if pname not in policy_defs:
            policy_defs[pname] = intersection_graph(pname, pols, policy_defs, where, ())
    return pols, policy_defs


def secret_graph(kind: str, t: dict, where: str, pre: str):
    """The secret graph ``secrets = kind`` of the policy table ``t`` (keys checked by type, then by the graph)."""
    cls = graph_class(kind)
    values = {}
    for p in cls.spec_parameters:
        if p.items is str:
            value = str_list(t, p.name, where, pre, required=p.required)
        else:
            value = typed(t, p.name, p.types, p.what, where, pre, required=p.required, default=p.default)
        if value is not None or p.name in t:
            values[p.name] = value
    try:
        return cls.from_spec(**values)
    except (TypeError, ValueError) as exc:
        raise fail(where, pre.rstrip("."), str(exc)) from None


def intersection_graph(pname: str, pols: dict, done: dict, where: str, stack: tuple):
    """The graph of ``secrets = "intersection"`` policy ``pname``: the pairs every policy of ``of`` protects."""
    pre = f"policies.{pname}."
    if pname in stack:
        raise fail(where, f"{pre}of", f"policies {list(stack)} name each other in a circle")
    if pname in done:
        return done[pname]
    members = str_list(pols[pname], "of", where, pre)
    if len(members) < 2:
        raise fail(where, f"{pre}of", f"must name at least two policies of [policies], got {members}")
    graphs = []
    for m in members:
        if m not in pols:
            raise fail(where, f"{pre}of", f"unknown policy {m!r}; defined: {sorted(pols)}")
        graphs.append(done[m] if m in done else intersection_graph(m, pols, done, where, stack + (pname,)))
    done[pname] = graph_class(COMBINED).from_spec(of=sorted(graphs, key=repr))
    return done[pname]


def raw_value_graph(graph, sub: Domain, where: str, key: str):
    """The secret graph on the release's bins that protects the spec's *raw* values, and how it was adapted.

    A spec's thresholds and interval boundaries speak of raw values, while
    a binned attribute's domain values are its bins (represented by their
    lower edges): the graph says which graph on the bins protects every
    pair of raw values it protects
    (:meth:`~blowfish_privacy.policy.secrets.SecretGraph.on_bins`).
    Returns ``(graph, note)``.
    """
    try:
        return graph.on_bins(sub)
    except ValueError as exc:
        raise fail(where, key, str(exc)) from None


def check_parallel_groups(releases, where: str) -> None:
    """Parallel composition (000 Thm 4.2) only for provably disjoint groups with no secret edge between them.

    The releases of a group must select their rows with ``where`` on the
    same attributes, with pairwise different values (so no individual is
    in two of them), include those attributes in their own attributes, and
    use a policy that partitions by them (so no secret edge joins two
    groups: an individual's change affects one release only).
    """
    groups: dict[str, list] = {}
    for r in releases:
        if r.parallel is not None:
            groups.setdefault(r.parallel, []).append(r)
    for name, members in groups.items():
        first = members[0]
        if len(members) < 2:
            raise fail(where, f"{first.key}.parallel", f"parallel group {name!r} has one release; a group needs "
                        "at least two releases on disjoint rows")
        keys = tuple(k for k, _ in first.where)
        for r in members:
            model = KINDS[r.kind].privacy_model(r.options)
            if model != "Blowfish":
                raise fail(where, f"{r.key}.parallel", f"release kind {r.kind!r} with these options is a "
                            f"{model} release: under its guarantee one person can move "
                            "between the groups, so parallel composition does not hold; remove parallel")
            if not r.where:
                raise fail(where, f"{r.key}.where", f"a release of parallel group {name!r} must select its rows "
                            "with where = { ATTRIBUTE = VALUE }")
            if tuple(k for k, _ in r.where) != keys:
                raise fail(where, f"{r.key}.where", f"the releases of parallel group {name!r} must select rows on "
                            f"the same attributes {list(keys)}, got {[k for k, _ in r.where]}")
            g = r.policy.secrets
            cliques = g.agreement_cliques(r.domain)
            fixed = {r.domain.position(k) for k in keys}
            # every clique keeps the selecting attributes: no edge changes them, so none joins two groups
            if cliques is None or not all(fixed <= set(c) for c in cliques):
                raise fail(where, f"{r.key}.policy", f"parallel group {name!r} needs a policy with no secret edge "
                            f"between its groups, i.e. secrets = \"partition\" with by including {list(keys)}; "
                            f"policy {r.policy_name!r} is {g!r}")
        seen = {}
        for r in members:
            codes = tuple(int(r.domain.attribute(k).codes_of([v])[0]) for k, v in r.where)
            if codes in seen:
                raise fail(where, f"{r.key}.where", f"selects the same rows as release {seen[codes]!r} of parallel "
                            f"group {name!r}; the groups must be disjoint")
            seen[codes] = r.name
