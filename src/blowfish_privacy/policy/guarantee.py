"""The guarantee in numbers: what a policy's gain in accuracy costs in privacy.

Under an ``(epsilon, G)``-Blowfish private mechanism (no constraints), an
observer's likelihood ratio between two values ``u, v`` of one individual
is at most ``e^(epsilon d_G(u, v))``, ``d_G`` the shortest-path distance in
the secret graph ``G`` (000 eq. 9); pairs in different components of ``G``
(``d_G = inf``, e.g. values in different blocks of a partition) are not
protected at all.  Under bounded differential privacy (the complete graph)
the factor is ``e^epsilon`` for every pair.  Every "a Blowfish policy beats
the best DP baseline by Nx" is bought with the difference between the two.

:func:`guarantee_table` gives, for a policy and an epsilon, one row per
distance of a list (1, 2, 5, 10, 50 by default) that occurs in ``G`` on the
policy's domain, a row "unbounded" when ``G`` has pairs in different
components, the largest finite distance (the diameter) where it is cheap to
know, and the DP factor beside them.  Each row names the pairs at that
distance in plain words (``values 5 apart`` on the line, ``|x - y| in
17..20`` for ``DistanceThreshold(4)`` at ``d = 5``, ``cells 5 steps apart
(L1)`` on the grid) and one example pair.  How the distances are found
without building a ``|T| x |T|`` object (closed forms for the monotone
graphs and partitions, breadth-first search on at most
:data:`SEARCH_LIMIT` values otherwise) is told in
:mod:`blowfish_privacy.policy.secrets.distance_profiles`.

The result renders as plain text (``str()``), Markdown
(:meth:`GuaranteeTable.markdown`) and one line for figure captions
(:meth:`GuaranteeTable.compact`).  :func:`guarantee_lines` and
:func:`guarantee_caption` do the same for several named policies at once;
:func:`guarantee_comparison` puts several policies side by side in one
table, with bounded DP's column beside them.

Examples
--------
>>> from blowfish_privacy import Domain, Policy, secrets
>>> p = Policy(Domain.ordinal("x", 0, 4095), secrets.Line())
>>> print(guarantee_table(p, 0.1, name="line").compact())
line, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148, largest d=4095 6.98e+177; DP: 1.11 for every pair
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_epsilon
from .secrets.distance_profiles import EXACT_LIMIT, SEARCH_LIMIT, profile, short_name
from .domain import Domain
from .secrets import SecretGraph

__all__ = [
    "DISTANCES",
    "EXACT_LIMIT",
    "SEARCH_LIMIT",
    "GuaranteeRow",
    "GuaranteeTable",
    "format_bound",
    "guarantee_caption",
    "guarantee_comparison",
    "guarantee_lines",
    "guarantee_table",
    "product_table",
]

#: The distances shown by default.
DISTANCES = (1, 2, 5, 10, 50)


# ---------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------
def format_bound(log_bound: float) -> str:
    """``e^log_bound`` with 3 significant figures (``"inf"`` for an infinite exponent).

    Exact to the printed digits even beyond the float range (the exponent
    is split into a power of ten and a mantissa).

    >>> format_bound(0.1), format_bound(5.0), format_bound(1000.0), format_bound(math.inf)
    ('1.11', '148', '1.97e+434', 'inf')
    """
    if math.isinf(log_bound):
        return "inf"
    if log_bound < 700:
        return f"{math.exp(log_bound):.3g}"
    lg = log_bound / math.log(10)
    if lg >= 1e15:  # the exponent's own digits would fill lines: give it 3 significant figures too
        return f"10^({lg:.3g})"
    exp10 = math.floor(lg)
    mant = round(10 ** (lg - exp10), 2)
    if mant >= 10:
        mant, exp10 = mant / 10, exp10 + 1
    return f"{mant:.2f}e+{exp10}"


def _bound(log_bound: float) -> float:
    return math.inf if log_bound > 709 else math.exp(log_bound)


def _dist_text(d: float) -> str:
    return "unbounded" if math.isinf(d) else str(int(d))


# ---------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class GuaranteeRow:
    """One distance of a guarantee table.

    Attributes
    ----------
    distance : int or float
        ``d_G`` (``math.inf`` for the row of pairs in different components).
    log_bound : float
        ``epsilon * d_G``: the largest log-ratio of an observer's odds.
    bound : float
        ``e^(epsilon d_G)`` (``inf`` when unbounded, and when finite but
        beyond the float range: use :attr:`log_bound` then).
    pairs : str
        The pairs at this distance, in plain words.
    example : tuple or None
        One pair of domain values ``(x, y)`` at this distance.
    """

    distance: int | float
    log_bound: float
    bound: float
    pairs: str
    example: tuple | None = None

    @property
    def bound_text(self) -> str:
        """The bound with 3 significant figures (``"inf"`` when unbounded)."""
        return format_bound(self.log_bound)


@dataclass(frozen=True)
class GuaranteeTable:
    """What an observer can learn about one individual under a policy, in numbers.

    Attributes
    ----------
    name : str
        A short name of the policy (``"line"``).
    graph : str
        The secret graph (its repr).
    domain_size : int
        ``|T|``.
    epsilon : float
    rows : tuple of GuaranteeRow
        One per requested distance that occurs (ascending), then the
        ``unbounded`` row when some pairs are in different components.
    diameter : int or None
        The largest finite ``d_G`` over all pairs (None when not known or
        the graph has no edge).
    diameter_exact : bool
        False when :attr:`diameter` is only the largest distance found by a
        search (the true diameter may be larger).
    largest : GuaranteeRow or None
        The row of the diameter (a pair at that distance), when known.
    unbounded : bool
        Some pairs of values are not protected at all (``d_G = inf``).
    notes : tuple of str
        How the distances were found where it matters, constraints, ...
    """

    name: str
    graph: str
    domain_size: int
    epsilon: float
    rows: tuple
    diameter: int | None
    diameter_exact: bool
    largest: GuaranteeRow | None
    unbounded: bool
    notes: tuple = ()

    @property
    def dp_bound(self) -> float:
        """``e^epsilon``: bounded differential privacy's factor, the same for every pair."""
        return math.exp(self.epsilon)

    def row(self, distance: float) -> GuaranteeRow:
        """The row of one distance (``math.inf`` for the unbounded row); KeyError if absent."""
        for r in self.rows:
            if r.distance == distance:
                return r
        raise KeyError(distance)

    @property
    def distances(self) -> tuple:
        """The distances of the rows (``inf`` last when unbounded)."""
        return tuple(r.distance for r in self.rows)

    @property
    def computed(self) -> bool:
        """False when no distance could be computed (a domain beyond the search's limits; see :attr:`notes`):
        the table then says nothing about which pairs are protected, nor whether some are unbounded."""
        return bool(self.rows) or self.largest is not None or self.diameter_exact

    def _all_rows(self) -> list[tuple[str, GuaranteeRow]]:
        out = [(_dist_text(r.distance), r) for r in self.rows if not math.isinf(r.distance)]
        if self.largest is not None and self.largest.distance not in self.distances:
            label = "largest" if self.diameter_exact else "largest found"
            out.append((f"{label}: {int(self.largest.distance)}", self.largest))
        out += [("unbounded", r) for r in self.rows if math.isinf(r.distance)]
        return out

    def _head(self) -> str:
        return (f"{self.name}: {self.graph} on {self.domain_size:,} values, epsilon {self.epsilon:g}: an observer's "
                "odds between two values of one individual move by at most e^(epsilon d_G) "
                "(equation 9 of the Blowfish paper)")

    def _dp_row(self) -> list[str]:
        return ["DP", format_bound(self.epsilon), "every pair of different values (complete graph)", ""]

    def _cells(self) -> list[list[str]]:
        cells = []
        for label, r in self._all_rows():
            ex = "" if r.example is None else f"{r.example[0]!r} and {r.example[1]!r}"
            cells.append([label, r.bound_text, r.pairs, ex])
        cells.append(self._dp_row())
        return cells

    def text(self) -> str:
        """Plain text for the console: a title line, a table, the notes."""
        head = ["d_G", "odds bound e^(eps d_G)", "pairs at this distance", "example pair"]
        cells = self._cells()
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
        lines = [self._head() + ":",
                 "  " + "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
                 "  " + "  ".join("-" * w for w in widths)]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    __str__ = text

    def markdown(self) -> str:
        """Markdown: a title line and a table (with DP's row), then the notes."""
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        lines = [f"*{esc(self._head())}:*", "",
                 "| d_G | odds bound e^(eps d_G) | pairs at this distance | example pair |",
                 "|---|---:|---|---|"]
        for c in self._cells():
            lines.append("| " + " | ".join(esc(x) for x in c) + " |")
        if self.notes:
            lines.append("")
            lines += [f"Note: {esc(n)}" for n in self.notes]
        return "\n".join(lines)

    def compact(self, *, dp: bool = True) -> str:
        """One line for a figure caption or legend, e.g.
        ``line, eps 0.1: d=1 1.11, d=2 1.22, d=5 1.65, d=10 2.72, d=50 148; DP: 1.11 for every pair``."""
        if self.diameter == 1 and self.diameter_exact and not self.unbounded:  # every pair is an edge
            return f"{self.name}, eps {self.epsilon:g}: {format_bound(self.epsilon)} for every pair (as DP)"
        parts = [f"d={int(r.distance)} {r.bound_text}" for r in self.rows if not math.isinf(r.distance)]
        if self.largest is not None and self.largest.distance not in self.distances:
            word = "largest" if self.diameter_exact else "largest found"
            parts.append(f"{word} d={int(self.largest.distance)} {self.largest.bound_text}")
        if not self.computed:
            text = (f"{self.name}, eps {self.epsilon:g}: distances not computed "
                    "(too large a domain; see the table's note)")
            return text + (f"; DP: {format_bound(self.epsilon)} for every pair" if dp else "")
        text = f"{self.name}, eps {self.epsilon:g}: " + (", ".join(parts) if parts else "no protected pair")
        if self.unbounded:
            text += f"; unbounded (inf) for {self.row(math.inf).pairs}"
        if dp:
            text += f"; DP: {format_bound(self.epsilon)} for every pair"
        return text



# ---------------------------------------------------------------------------
# the public functions
# ---------------------------------------------------------------------------
def _check_distances(distances: Any) -> tuple[int, ...]:
    if isinstance(distances, (str, bytes)) or not isinstance(distances, Sequence):
        raise TypeError(f"distances must be a sequence of integers >= 1, got {distances!r}")
    out = []
    for d in distances:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"distances must hold integers >= 1, got {d!r}")
        out.append(int(d))
    return tuple(sorted(set(out)))


def guarantee_table(policy: Any, epsilon: float, distances: Sequence[int] = DISTANCES, *,
                    name: str | None = None) -> GuaranteeTable:
    """The guarantee of ``policy`` at ``epsilon`` in numbers (see the module docstring).

    Parameters
    ----------
    policy : Policy
        Its domain and secret graph are used (any object with ``domain``
        and ``secrets``).
    epsilon : float
        Positive.
    distances : sequence of int, default (1, 2, 5, 10, 50)
        The distances ``d_G`` to show; those that do not occur in the graph
        on the policy's domain are left out.
    name : str, optional
        A short name for the policy (default: from the graph, e.g. "line").

    Returns
    -------
    GuaranteeTable

    Raises
    ------
    TypeError
        If ``policy`` has no domain and secret graph, or ``distances`` is
        not a sequence.
    ValueError
        If ``epsilon`` is not positive or a distance is not an integer >= 1.

    Examples
    --------
    >>> from blowfish_privacy import Domain, Policy, secrets
    >>> t = guarantee_table(Policy(Domain.ordinal("x", 0, 99), secrets.DistanceThreshold(4)), 0.1)
    >>> t.distances, t.diameter, t.row(5).pairs
    ((1, 2, 5, 10), 25, '|x - y| in 17..20')
    """
    eps = float(check_epsilon(epsilon))
    wanted = _check_distances(distances)
    domain, graph = getattr(policy, "domain", None), getattr(policy, "secrets", None)
    if not isinstance(domain, Domain) or not isinstance(graph, SecretGraph):
        raise TypeError(f"policy must be a Policy (a domain and a secret graph), got {policy!r}")
    prof = profile(graph, domain)
    rows = []
    for d in wanted:
        if d <= prof.max_found:
            rows.append(GuaranteeRow(d, eps * d, _bound(eps * d), prof.words(d), prof.example(d)))
    largest = None
    if prof.diameter:
        d = prof.diameter
        largest = GuaranteeRow(d, eps * d, _bound(eps * d), prof.words(d), prof.example(d))
    if prof.unbounded:
        rows.append(GuaranteeRow(math.inf, math.inf, math.inf, prof.unbounded_words, prof.unbounded_pair))
    notes = list(prof.notes)
    if getattr(policy, "constraints", ()):
        notes.append("the policy has public constraints: these are the secret graph's bounds "
                     "(equation 9 of the Blowfish paper); "
                     "constraints change the neighbours (Section 8 of the Blowfish paper)")
    if getattr(policy, "neighbours", "blowfish") != "blowfish":
        notes.append(f"neighbours={policy.neighbours!r} is another neighbour notion (the exact-cuboids draft): "
                     "the distances of the "
                     "secret graph do not describe it")
    return GuaranteeTable(
        name=name or short_name(graph, domain), graph=repr(graph), domain_size=domain.size, epsilon=eps,
        rows=tuple(rows), diameter=prof.diameter, diameter_exact=prof.exact, largest=largest,
        unbounded=prof.unbounded, notes=tuple(notes))


def product_table(parts: Sequence[tuple[Any, Sequence[str]]], domain: Domain, epsilon: float,
                  distances: Sequence[int] = DISTANCES, *, name: str = "combined") -> GuaranteeTable:
    """The guarantee of policies on disjoint attribute sets, protected together.

    A graph on attributes ``A`` protects a record pair when its values on
    ``A`` are equal or an edge (a statistic of ``A`` does not see the other
    attributes); the pairs that every such graph protects form, for
    pairwise disjoint ``A_i``, a graph in which one step moves every
    ``A_i`` along an edge of its graph or not at all (and the other
    attributes anywhere), so ``d(x, y) = max_i d_i(x_{A_i}, y_{A_i})`` for
    ``x != y`` (at least 1): each part's path padded with stays reaches the
    largest length, and no path is shorter than any part's.  So the
    distances that occur are ``1 .. max_i diameter_i`` and a pair is
    unprotected when it is in some part.

    Parameters
    ----------
    parts : sequence of (Policy, attribute names)
        Each policy on the sub-domain of its (disjoint) attributes.
    domain : Domain
        The whole record's domain (examples are given as whole records).
    epsilon, distances
        As for :func:`guarantee_table`.
    name : str

    Raises
    ------
    ValueError
        If the attribute sets overlap or name attributes not in ``domain``.
    """
    eps = float(check_epsilon(epsilon))
    wanted = _check_distances(distances)
    seen: set = set()
    for _, attrs in parts:
        for a in attrs:
            if a not in domain.names:
                raise ValueError(f"parts: attribute {a!r} is not in the domain {list(domain.names)}")
            if a in seen:
                raise ValueError(f"parts: the attribute sets must be disjoint, got {a!r} twice")
            seen.add(a)
    tables = [(guarantee_table(p, eps, wanted), tuple(attrs)) for p, attrs in parts]
    base = [_record_values(domain, 0)]

    def whole(attrs, rec):
        vals = dict(zip(domain.names, base[0]))
        sub = rec if isinstance(rec, tuple) else (rec,)
        vals.update(zip(attrs, sub))
        out = tuple(vals[n] for n in domain.names)
        return out[0] if len(out) == 1 else out

    def lift(row: GuaranteeRow, attrs) -> GuaranteeRow:
        ex = None if row.example is None else (whole(attrs, row.example[0]), whole(attrs, row.example[1]))
        return GuaranteeRow(row.distance, row.log_bound, row.bound, f"{row.pairs} ({', '.join(attrs)})", ex)

    rows = []
    for d in wanted:
        for t, attrs in tables:
            if d in t.distances:
                rows.append(lift(t.row(d), attrs))
                break
    big = [(t, a) for t, a in tables if t.largest is not None]
    largest = None
    exact = all(t.diameter_exact for t, _ in tables)
    if big:
        t, attrs = max(big, key=lambda x: x[0].largest.distance)
        largest = lift(t.largest, attrs)
    free = [n for n in domain.names if n not in seen]
    if free and not rows and domain.size >= 2:
        rows.append(GuaranteeRow(1, eps, _bound(eps), f"values differing only in {', '.join(free)}", None))
    unb = [(t, a) for t, a in tables if t.unbounded]
    if unb:
        t, attrs = unb[0]
        rows.append(lift(t.row(math.inf), attrs))
    notes = [f"{t.name} on {', '.join(a)}: {n}" for t, a in tables for n in t.notes]
    notes.append("the pairs every part protects: d_G = the largest of the parts' distances"
                 + (f"; {', '.join(free)} may differ freely" if free else ""))
    graph = " and ".join(f"{t.graph} on {', '.join(a)}" for t, a in tables)
    return GuaranteeTable(name=name, graph=graph, domain_size=domain.size, epsilon=eps, rows=tuple(rows),
                          diameter=largest.distance if largest else None, diameter_exact=exact, largest=largest,
                          unbounded=bool(unb), notes=tuple(notes))


def _record_values(domain: Domain, index: int) -> tuple:
    rec = domain.record_of(index)
    return rec if domain.ndim > 1 else (rec,)


def _named_policies(policies: Any) -> list:
    """The (name, policy) pairs of a mapping; a TypeError naming ``policies`` for anything else."""
    if not isinstance(policies, Mapping):
        raise TypeError(f"policies must be a mapping of name -> Policy, got {type(policies).__name__}")
    return list(policies.items())


def guarantee_lines(policies: Mapping[str, Any], epsilon: float, distances: Sequence[int] = DISTANCES, *,
                    markdown: bool = False) -> str:
    """The guarantee tables of several named policies, as one text (or Markdown) block.

    Parameters
    ----------
    policies : mapping of name -> Policy
        E.g. ``{"line": Policy(dom, Line()), "distance threshold 4": ...}``.
    epsilon : float
    distances : sequence of int
    markdown : bool
        Markdown tables (for ``.md`` files) instead of console text.

    Returns
    -------
    str
        One table per policy, each with DP's row (``e^epsilon`` for every
        pair), separated by blank lines.
    """
    tables = [guarantee_table(p, epsilon, distances, name=n) for n, p in _named_policies(policies)]
    return "\n\n".join(t.markdown() if markdown else t.text() for t in tables)


def guarantee_caption(policies: Mapping[str, Any], epsilon: float, distances: Sequence[int] = DISTANCES) -> str:
    """One compact line per named policy, then DP's line: for a figure caption or text box.

    >>> from blowfish_privacy import Domain, Policy, secrets
    >>> dom = Domain.ordinal("x", 0, 9)
    >>> print(guarantee_caption({"line": Policy(dom, secrets.Line())}, 1.0))
    line, eps 1: d=1 2.72, d=2 7.39, d=5 148, largest d=9 8.1e+03
    DP, eps 1: 2.72 for every pair
    """
    eps = float(check_epsilon(epsilon))
    lines = [guarantee_table(p, eps, distances, name=n).compact(dp=False) for n, p in _named_policies(policies)]
    lines.append(f"DP, eps {eps:g}: {format_bound(eps)} for every pair")
    return "\n".join(lines)


def guarantee_comparison(policies: Mapping[str, Any], epsilon: float, distances: Sequence[int] = DISTANCES, *,
                         markdown: bool = True) -> str:
    """Several policies side by side: one row per distance, bounded DP's column first.

    Each cell is the bound ``e^(epsilon d)`` and, in brackets, the pairs at
    that distance under that policy ("-" where the distance does not
    occur); then a row with each policy's largest finite distance and one
    with its unprotected pairs.  Under DP every pair has ``e^epsilon``.

    Parameters
    ----------
    policies : mapping of name -> Policy
    epsilon : float
    distances : sequence of int
    markdown : bool
        A Markdown table (default) or aligned console text.

    Returns
    -------
    str

    Examples
    --------
    >>> from blowfish_privacy import Domain, Policy, secrets
    >>> dom = Domain.ordinal("x", 0, 99)
    >>> print(guarantee_comparison({"line": Policy(dom, secrets.Line())}, 0.1, (1, 5)))
    | d_G | bounded DP | line |
    |---|---|---|
    | 1 | 1.11 (every pair) | 1.11 (values 1 apart) |
    | 5 | 1.11 (every pair) | 1.65 (values 5 apart) |
    | largest | 1.11 (d = 1) | 1.99e+04 (d = 99: values 99 apart) |
    | unbounded | none | none |
    """
    eps = float(check_epsilon(epsilon))
    tables = [guarantee_table(p, eps, distances, name=n) for n, p in _named_policies(policies)]
    dp = format_bound(eps)
    ds = sorted({r.distance for t in tables for r in t.rows if not math.isinf(r.distance)})
    head = ["d_G", "bounded DP"] + [t.name for t in tables]
    body = []
    for d in ds:
        cells = [str(d), f"{dp} (every pair)"]
        for t in tables:
            r = next((r for r in t.rows if r.distance == d), None)
            cells.append("-" if r is None else f"{r.bound_text} ({r.pairs})")
        body.append(cells)
    cells = ["largest", f"{dp} (d = 1)"]
    for t in tables:
        if t.largest is None:
            cells.append("-")
        else:
            found = "" if t.diameter_exact else " found"
            cells.append(f"{t.largest.bound_text} (d = {int(t.largest.distance)}{found}: {t.largest.pairs})")
    body.append(cells)
    cells = ["unbounded", "none"]
    for t in tables:
        cells.append(f"inf ({t.row(math.inf).pairs})" if t.unbounded else "none" if t.computed else "not computed")
    body.append(cells)
    if markdown:
        esc = lambda x: x.replace("|", "\\|")  # noqa: E731
        lines = ["| " + " | ".join(esc(h) for h in head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in body]
    else:
        widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head] + body]
        lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"{t.name}: {n}" for t in tables for n in t.notes]
    return "\n".join(lines + [("Note: " if markdown else "note: ") + n for n in notes])
