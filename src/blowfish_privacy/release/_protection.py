"""The dataset's protection policy and the rule that admits a release under it.

A spec's dataset is protected under one policy (``dataset.protect``: a
policy of the spec, ``"dp"`` for bounded differential privacy, or the one
policy its releases use).  A policy made of others protects the pairs every
member protects, each member speaking of some attributes.  A release is
admitted only when its own secret graph, lifted from its attributes to the
whole domain, contains one member's
(:func:`~blowfish_privacy.policy.secrets.uncovered_pair`): then the
releases compose under the dataset's policy (DESIGN sec 6).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

from ..errors import UnsupportedPolicyError
from ..policy.domain import Domain, Ordinal
from ..policy.secrets import DistanceThreshold, FullDomain, Partition, uncovered_pair
from ._spec_policies import COMBINED
from ._spec_tables import fail, str_list
from .kinds import KINDS
from .ledger import Protection

__all__ = ["PROTECT_DP", "protect_name", "raw_domain", "member_names", "protect_members", "protection",
           "release_graph", "member_witness", "admit"]

#: ``protect = "dp"``: the dataset is protected under bounded differential privacy (every pair of values).
PROTECT_DP = "dp"


def protect_name(given, releases, policy_defs, where: str) -> str:
    """``dataset.protect``, or the one policy every release (besides DP baselines) uses."""
    if given is not None:
        if given != PROTECT_DP and given not in policy_defs:
            raise fail(where, "dataset.protect", f"unknown policy {given!r}; allowed: {PROTECT_DP!r} (bounded "
                        f"differential privacy) or one of the policies {sorted(policy_defs)}")
        return given
    used = {}
    for rel in releases:
        if rel.policy_name and KINDS[rel.kind].privacy_model(rel.options) == "Blowfish":
            used.setdefault(repr(policy_defs[rel.policy_name]), rel.policy_name)
    if len(used) > 1:
        raise fail(where, "dataset.protect", f"missing, and the releases use several policies "
                    f"{sorted(used.values())}: name the one the dataset is protected under (every release's "
                    "policy must protect each of its pairs), e.g. a policy with secrets = \"intersection\" and "
                    f"of = {sorted(used.values())}, or {PROTECT_DP!r}")
    if used:
        return next(iter(used.values()))
    return PROTECT_DP

def raw_domain(domain: Domain) -> Domain:
    """The domain on raw values (bins of width 1): where the spec's policies speak."""
    return Domain([Ordinal(a.name, a.low, a.high) if isinstance(a, Ordinal) else a for a in domain.attributes])

def member_names(name: str, pols: dict, seen: tuple = ()) -> list:
    """The policies an intersection policy is made of, nested intersections flattened."""
    if pols[name].get("secrets") != COMBINED:
        return [name]
    out = []
    for m in pols[name]["of"]:
        out += [x for x in member_names(m, pols, seen + (name,)) if x not in out]
    return out

def protect_members(protect_name: str, pols: dict, policy_defs: dict, releases, raw_domain: Domain,
                     where: str) -> list:
    """The dataset's protection policy as ``[(policy name, raw secret graph, attributes it speaks of)]``.

    The dataset protects the pairs of full-domain values that every member
    protects, a member ``(G, A)`` protecting the pairs whose values on the
    attributes ``A`` are equal or an edge of ``G`` (a statistic of ``A``
    does not see the other attributes).  A member speaks of the attributes
    its policy table names (``attributes = [...]``), else of the attributes
    of the releases that use it, which must then agree.
    """
    if protect_name == PROTECT_DP:
        return [(PROTECT_DP, FullDomain(), tuple(raw_domain.names))]
    out = []
    for m in member_names(protect_name, pols):
        key = f"policies.{m}.attributes"
        if "attributes" in pols[m]:
            attrs = str_list(pols[m], "attributes", where, f"policies.{m}.")
            unknown = [a for a in attrs if a not in raw_domain.names]
            if not attrs or unknown or len(set(attrs)) != len(attrs):
                raise fail(where, key, f"must list distinct attributes of the domain {list(raw_domain.names)}, "
                            f"got {attrs}")
        else:
            used = {tuple(r.attributes) for r in releases
                    if r.policy_name == m and KINDS[r.kind].privacy_model(r.options) == "Blowfish"}
            if len(used) != 1:
                why = ("no release uses it" if not used else
                       f"its releases use it on different attributes {sorted(list(u) for u in used)}")
                raise fail(where, key, f"missing: policy {m!r} is part of the dataset's protection "
                            f"(dataset.protect = {protect_name!r}) and {why}; say which attributes it protects, "
                            f"e.g. attributes = {list(raw_domain.names)[:2]}")
            attrs = list(next(iter(used)))
        attrs = tuple(a for a in raw_domain.names if a in attrs)  # domain order
        graph = policy_defs[m]
        sub = Domain([raw_domain.attribute(a) for a in attrs])
        try:
            graph.validate(sub)
        except (TypeError, ValueError, UnsupportedPolicyError) as exc:
            raise fail(where, "dataset.protect", f"policy {m!r} does not fit attributes {list(attrs)}: {exc}") \
                from None
        out.append((m, graph, attrs))
    return out


def protection(name: str, members: list, raw_domain: Domain, columns: dict) -> Protection:
    """The protection policy as the ledger keeps it (a key that names it, and a label)."""
    # the graphs and the attributes they speak of, not the domain's ranges: a later spec may narrow or widen
    # a range (out-of-range values are clamped or dropped) under the same protection
    # ... and the column each attribute is read from: an attribute mapped to another column is other data
    attrs = [{"name": a.name, "type": "ordinal" if isinstance(a, Ordinal) else "categorical",
              "column": columns[a.name]} for a in raw_domain.attributes]
    parts = sorted(({"graph": repr(g), "attributes": list(a)} for _, g, a in members), key=json.dumps)
    key = json.dumps({"members": parts, "domain": attrs}, sort_keys=True)
    if name == PROTECT_DP:
        label = "dp (bounded differential privacy: every pair of values)"
    else:
        label = f"{name} (" + " and ".join(f"{m}: {g!r} on {list(a)}" for m, g, a in members) + ")"
    return Protection(key, f"{label}, domain {list(raw_domain.names)}")


def release_graph(rel):
    """The secret graph on raw values of the release's attributes whose pairs the release protects."""
    model = KINDS[rel.kind].privacy_model(rel.options)
    if model == "DP":  # a DP baseline protects every pair of values of its attributes
        return FullDomain()
    if model == "Blowfish":
        return rel.raw_secrets
    # Pufferfish sums (003 Sec 7.1): the noise is calibrated to any change of one value by less than 4k
    # (plan_pufferfish_sum), so every pair of integers closer than 4k is protected (absolute error k);
    # with relative error r and values >= low > 0, |x - y| <= low * r keeps max/min <= 1 + r, well
    # inside the factor (1 + r)^4 the noise covers
    attr = rel.domain.attributes[0]
    if "absolute_error" in rel.options:
        theta = math.ceil(4 * Fraction(repr(rel.options["absolute_error"]))) - 1
    else:
        theta = math.floor(Fraction(attr.low) * Fraction(repr(rel.options["relative_error"])))
    return DistanceThreshold(max(0, theta))


def member_witness(member, rel_graph, rel_attrs: tuple, raw_domain: Domain):
    """A pair of full-domain values the member protects and the release does not, None when it protects
    all of them; raises UnsupportedPolicyError when that cannot be decided."""
    _, graph, attrs = member
    rsub = Domain([raw_domain.attribute(a) for a in rel_attrs])
    if set(rel_attrs) <= set(attrs):
        msub = Domain([raw_domain.attribute(a) for a in attrs])
        pair = uncovered_pair(graph, msub, rel_graph, rsub)
        return None if pair is None else extend_pair(pair, attrs, raw_domain)
    # the member lets the attributes outside it change freely: the release must protect every pair of its
    # values that agree on the attributes it shares with the member
    shared = [a for a in rel_attrs if a in attrs]
    free = Partition.by_attributes(shared) if shared else FullDomain()
    pair = uncovered_pair(free, rsub, rel_graph, rsub)
    if pair is not None:
        return extend_pair(pair, rel_attrs, raw_domain)
    if uncovered_pair(FullDomain(), rsub, rel_graph, rsub) is None:
        return None  # the release protects every pair of its values
    raise UnsupportedPolicyError(f"the release's attributes {list(rel_attrs)} reach beyond the attributes "
                                 f"{list(attrs)} its policy is compared with")


def extend_pair(pair, attrs: tuple, raw_domain: Domain):
    """Values on ``attrs`` extended to the whole domain (the same first value elsewhere in both)."""
    x, y = (tuple(v) if isinstance(v, (tuple, list)) else (v,) for v in pair)
    fill = {a.name: (a.low if isinstance(a, Ordinal) else a.labels[0]) for a in raw_domain.attributes}
    fx = {**fill, **dict(zip(attrs, x))}
    fy = {**fill, **dict(zip(attrs, y))}
    return tuple(fx[n] for n in raw_domain.names), tuple(fy[n] for n in raw_domain.names)


def admit(rel, protect_name: str, members: list, raw_domain: Domain, where: str) -> None:
    """Refuse a release whose policy leaves a pair of the dataset's protection policy unprotected.

    The dataset's pairs are those every member protects, so the release is
    admitted when its policy protects every pair of one member.
    """
    graph = release_graph(rel)
    mine = f"policy {rel.policy_name!r}" if rel.policy_name else f"release kind {rel.kind!r}"
    witness, problems = None, []
    for member in members:
        try:
            pair = member_witness(member, graph, tuple(rel.attributes), raw_domain)
        except UnsupportedPolicyError as exc:
            problems.append(f"{member[0]!r}: {exc}")
            continue
        if pair is None:
            return
        witness = witness or pair
    if witness is not None and len(members) == 1:
        x, y = witness
        raise fail(where, f"{rel.key}.policy", f"{mine} does not protect every pair the dataset is protected "
                    f"under (dataset.protect = {protect_name!r}): the values {pair_text(raw_domain, x)} and "
                    f"{pair_text(raw_domain, y)} are a protected pair that this release would expose; use a "
                    "policy whose secret graph contains the dataset's (the same or a stronger one)")
    detail = "; ".join(problems) if problems else (
        f"e.g. {pair_text(raw_domain, witness[0])} and {pair_text(raw_domain, witness[1])} are protected by "
        f"{members[0][0]!r} but not by the release")
    raise fail(where, f"{rel.key}.policy", f"cannot show that {mine} protects every pair the dataset is "
                f"protected under (dataset.protect = {protect_name!r}): no member of it is contained in the "
                f"release's secret graph ({detail}); use a policy whose secret graph contains the dataset's")


def pair_text(domain: Domain, value) -> str:
    """``(name = value, ...)`` of one value of ``domain``, for messages."""
    value = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return "(" + ", ".join(f"{n} = {v!r}" for n, v in zip(domain.names, value)) + ")"
