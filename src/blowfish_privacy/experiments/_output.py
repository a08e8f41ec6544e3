"""Writing an experiment's rows: a CSV always, a PNG when matplotlib is there."""

from __future__ import annotations

import csv
import os
import warnings
from typing import Callable


def write_outputs(rows: list[dict], out_dir: str | None, stem: str, plot: Callable[[str], None]):
    """Write ``STEM.csv`` and, through ``plot(path)``, ``STEM.png`` into ``out_dir``.

    Returns ``(csv_path, png_path)``; both None when ``out_dir`` is None,
    ``png_path`` None (with a warning) when matplotlib is missing.
    """
    if out_dir is None:
        return None, None
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, f"{stem}.csv")
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    png_path = os.path.join(out_dir, f"{stem}.png")
    try:
        plot(png_path)
    except ImportError as exc:
        warnings.warn(f"{exc}; wrote the CSV only", stacklevel=3)
        png_path = None
    return csv_path, png_path
