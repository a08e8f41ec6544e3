"""A dependency-free progress bar for long runs (writes to stderr)."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts steps and redraws one line on a terminal, at most ~10 times a second.

    >>> with Progress(3, "demo", enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.advance()
    """

    def __init__(self, total: int, label: str = "", *, enabled: bool | None = None, stream=None):
        self.total = max(int(total), 1)
        self.label = label
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._start = time.monotonic()
        self._last = 0.0

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(self.done / self.total, 1.0)
        width = 30
        filled = int(frac * width)
        elapsed = now - self._start
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {self.done}/{self.total} {elapsed:5.1f}s elapsed, ~{eta:5.1f}s left"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()


class _Tqdm:
    """:class:`Progress`'s interface on a tqdm bar."""

    def __init__(self, total: int, label: str) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=label, leave=False)

    def __enter__(self) -> "_Tqdm":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def advance(self, steps: int = 1) -> None:
        self._bar.update(steps)

    def close(self) -> None:
        self._bar.close()


def progress_bar(total: int, label: str = "", *, enabled: bool | None = None):
    """A tqdm bar when tqdm is installed and the bar is shown, else :class:`Progress`."""
    show = sys.stderr.isatty() if enabled is None else enabled
    if show:
        try:
            return _Tqdm(total, label)
        except ImportError:
            pass
    return Progress(total, label, enabled=show)
