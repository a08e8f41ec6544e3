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

__all__ = ["SHARED_SECTIONS", "sections", "guarantee_of"]

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
        doc = inspect.cleandoc(fn.__doc__ or "")
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
