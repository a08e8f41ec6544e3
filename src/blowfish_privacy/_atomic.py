"""Files written whole or not at all: through a temporary file in the same folder, then renamed.

A reader (or a crash) never sees a truncated release file, and a symlink
planted at the name is replaced, never followed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write"]


def atomic_write(path: Path, write: Callable[[Any], object], *, binary: bool = False) -> None:
    """Write through a temporary file in the same folder, then rename: never a truncated file.

    ``write(fh)`` gets a UTF-8 text stream, or a binary one with ``binary=True``."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        # a new file (never through a link planted in the folder), then renamed over the name: a symlink at
        # ``path`` is replaced, not followed
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        with (open(fd, "wb") if binary else open(fd, "w", encoding="utf-8", newline="")) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
