"""Shared timing helpers for the benchmarks: best-of-k wall time, ratios."""

import time


def best_time(fn, repeat: int = 3) -> float:
    """Smallest wall time of ``repeat`` calls of ``fn`` (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def interleaved_best(fns: dict, repeat: int = 3) -> dict:
    """Best wall time of each callable (seconds), the callables taking turns in every round, so that a change of
    the machine's load falls on every side alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def table(rows: list[dict], columns: list[str]) -> str:
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    for r in rows:
        lines.append("  ".join(str(r[c]).rjust(w) for c, w in zip(columns, widths)))
    return "\n".join(lines)
