"""Docstring sections a functional form shares with its plan.

``ordered(hist, policy, epsilon, generator)`` is
``plan_ordered(policy, epsilon).measure(hist, generator)``: the guarantee,
the sensitivity, the runtime and the references are the plan's.  Written
once, on the plan, they are copied into the function's docstring when the
module is imported, so ``help(ordered)`` shows them without a second copy
in the source (DEVELOPERS.md, "Docstrings of public functions").
"""

from __future__ import annotations

import inspect
import re
from typing import Callable, TypeVar

__all__ = ["SHARED_SECTIONS", "sections", "guarantee_of", "not_a_release"]

#: The sections a functional form takes from its plan, in this order.
SHARED_SECTIONS = ("Privacy", "Sensitivity", "Runtime", "References")

_F = TypeVar("_F", bound=Callable)
_RULE = re.compile(r"-{3,}")


def sections(doc: str) -> dict[str, str]:
    """``{heading: text}`` of the numpydoc sections of a cleaned docstring."""
    lines = doc.splitlines()
    heads = [i for i in range(len(lines) - 1)
             if lines[i].strip() and _RULE.fullmatch(lines[i + 1].strip())]
    out = {}
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        out[lines[i].strip()] = "\n".join(lines[i + 2:end]).strip("\n")
    return out


#: The entries every functional form shares, added to its Parameters where it does not state them.
_COMMON_PARAMETERS = {
    "epsilon": "epsilon : float or Fraction, > 0\n    The privacy budget, as the plan's.",
    "generator": "generator : Generator, optional\n    The noise source; a new secure one when omitted.",
}


def _with_common_parameters(doc: str) -> str:
    """``doc`` with the ``epsilon`` and ``generator`` entries added to its Parameters (before ``**options``)."""
    m = re.search(r"^Parameters\n-{3,}\n", doc, re.M)
    if not m:
        return doc
    nxt = re.search(r"^\S[^\n]*\n-{3,}\n", doc[m.end():], re.M)
    end = m.end() + (nxt.start() if nxt else len(doc) - m.end())
    body = doc[m.end():end].rstrip("\n")
    add = [text for name, text in _COMMON_PARAMETERS.items() if not re.search(rf"^{name}\b", body, re.M)]
    if not add:
        return doc
    opts = re.search(r"^\*\*options\b", body, re.M)
    cut = opts.start() if opts else len(body)
    head = body[:cut].rstrip("\n")
    body = (head + "\n" if head else "") + "\n".join(add) + ("\n" + body[cut:] if opts else "")
    return doc[:m.end()] + body + "\n\n" + doc[end:].lstrip("\n")


def guarantee_of(plan_function: Callable) -> Callable[[_F], _F]:
    """Decorator: append ``plan_function``'s shared sections to the docstring.

    They go before an ``Examples`` section (numpydoc keeps it last); a
    section the function states itself is kept and not copied.
    """
    shared = sections(inspect.cleandoc(plan_function.__doc__ or ""))
    missing = [s for s in SHARED_SECTIONS if s not in shared]
    if missing:
        raise ValueError(f"{plan_function.__name__} has no {', '.join(missing)} section to share")

    def decorate(fn: _F) -> _F:
        doc = _with_common_parameters(inspect.cleandoc(fn.__doc__ or ""))
        own = sections(doc)
        block = "\n\n".join(f"{s}\n{'-' * len(s)}\n{shared[s]}" for s in SHARED_SECTIONS if s not in own)
        m = re.search(r"^Examples\n-{3,}", doc, re.M)
        if m:
            doc = doc[:m.start()] + block + "\n\n" + doc[m.start():]
        else:
            doc = doc.rstrip() + "\n\n" + block
        fn.__doc__ = doc + "\n"
        return fn

    return decorate


def not_a_release(runtime: str, *references: str) -> Callable[[_F], _F]:
    """Decorator for a public helper of public inputs only (a branching factor, a grid size, a layout).

    Appends the shared sections that say so: nothing is released or
    measured, so there is no guarantee to state and no sensitivity, then
    the helper's ``runtime`` and its ``references`` (one entry each).
    """
    refs = "\n".join(f".. [{i}] {r}" for i, r in enumerate(references, 1)) or "None."
    shared = {
        "Privacy": "None: not a release.  It reads public inputs only (sizes, the public n, epsilon), so what "
                   "it returns reveals nothing about the data.",
        "Sensitivity": "None: no data are read.",
        "Runtime": runtime,
        "References": refs,
    }

    def decorate(fn: _F) -> _F:
        doc = inspect.cleandoc(fn.__doc__ or "").rstrip()
        fn.__doc__ = doc + "\n\n" + "\n\n".join(f"{s}\n{'-' * len(s)}\n{shared[s]}" for s in SHARED_SECTIONS) + "\n"
        return fn

    return decorate
