"""The value types of the experiments' command-line options (argparse ``type=`` functions).

Every numeric option of ``blowfish bench NAME`` is checked here, as it is
parsed, so a bad value stops the command before anything runs, with
argparse's one error line naming the option, the value and what is
allowed (``argument --epsilons: must be a finite number > 0, got '-1'``)
and exit status 2.  The checks are the domain of each option: a privacy
budget is a finite number above 0, a count (repetitions, queries,
iterations, threads, thresholds) a whole number of at least 1, a seed a
whole number of at least 0.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["budget", "comma_list", "whole", "whole_or"]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def budget(text: str) -> float:
    """A privacy budget epsilon: a finite number > 0 ("0.1", "1e-3")."""
    value = _number(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (a privacy budget), got {text!r}")
    return value


def whole(minimum: int = 1, maximum: int | None = None, *, what: str = "") -> Callable[[str], int]:
    """A ``type=`` for whole numbers in ``[minimum, maximum]`` ("20", "1e3"); ``what`` says what the number
    counts, for the message."""
    allowed = f"a whole number >= {minimum}" if maximum is None else f"a whole number in {minimum}..{maximum:g}"
    if what:
        allowed += f" ({what})"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            number = _number(text)
            value = int(number) if math.isfinite(number) and number.is_integer() else None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in messages it writes itself
    return parse


def whole_or(word: str, minimum: int = 1, *, what: str = "") -> Callable[[str], int | str]:
    """A ``type=`` for a whole number >= ``minimum`` or the word ``word`` (kept as the string)."""
    number = whole(minimum, what=what)

    def parse(text: str) -> int | str:
        if text == word:
            return word
        try:
            return number(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"must be a whole number >= {minimum}{f' ({what})' if what else ''} or {word!r}, got {text!r}"
            ) from None

    parse.__name__ = f"whole number or {word}"
    return parse


def comma_list(item: Callable[[str], object]) -> Callable[[str], list]:
    """A ``type=`` for comma-separated values, each read by ``item`` ("0.01,0.1,1"); at least one."""

    def parse(text: str) -> list:
        parts = [x.strip() for x in text.split(",")]
        if not any(parts):
            raise argparse.ArgumentTypeError(f"expected one or more comma-separated values, got {text!r}")
        if not all(parts):  # "1,,2" or "1e3,": a value was left out, not meant to be dropped
            raise argparse.ArgumentTypeError(f"expected comma-separated values with none empty, got {text!r}")
        out = []
        for part in parts:
            try:
                out.append(item(part))
            except argparse.ArgumentTypeError as exc:
                if len(parts) == 1:
                    raise
                raise argparse.ArgumentTypeError(f"each value {exc} in {text!r}") from None
        return out

    parse.__name__ = "comma-separated list"
    return parse
