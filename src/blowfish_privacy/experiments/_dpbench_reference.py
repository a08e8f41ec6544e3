"""Our DP baselines against the DPBench reference implementations (``--check-reference``).

Part of :mod:`.dpbench`.  The reference file (``reference_scaled_l1.csv``,
kept outside the package; the command takes its path) holds the scaled
average L1 error of each DPBench reference algorithm per data set, scale and
epsilon, measured with DPBench's protocol: 4096 cells in 1-D, 128 x 128 in 2-D
(:data:`REFERENCE_DOMAIN` says why not 256 x 256), 2000 random ranges drawn as DPBench does
(a length uniform in 1..k, then a start where it fits) and bounded-DP
epsilon (the reference run at epsilon / 2 under its add/remove neighbours).

The check runs our algorithm of the same name under the same protocol on the
same data sets and reports, per algorithm and scale, ours / reference as the
geometric mean over data sets of the per-data-set ratios (each side the mean
over its runs).  A ratio above the tolerance (1.15) fails: our baseline is
weaker than the published one, which would inflate every Blowfish gain.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._output import text_table

#: Reference algorithm name -> ours, per dimension.
REFERENCE_NAMES = {
    1: {"identity": "identity", "uniform": "uniform", "h": "h", "hb": "hb", "privelet": "privelet",
        "dawa": "dawa", "greedyh": "greedyh", "mwem": "mwem", "ahp": "ahp"},
    2: {"identity": "identity", "ugrid": "ugrid", "agrid": "agrid", "hb2d": "hb2d_qyl",
        "quadtree": "quadtree", "dawa": "dawa_hilbert", "privelet": "privelet", "mwem": "mwem",
        "dpcube": "dpcube"},
}
#: The domain per axis the check runs on.  1-D: the full 4096 cells.  2-D: 128 x 128 (the 256 x 256
#: shapes merged 2 x 2).  The file's 2-D identity errors calibrate this: identity is plain Laplace, whose
#: error on DPBench's random rectangles is data-independent and computable (about 2.6 scaled at 10^3 on
#: 256 x 256 at bounded epsilon 0.1, 1.3 on 128 x 128); the file's 2-D identity rows (geometric mean
#: about 1.2 at 10^3, 1.2e-2 at 10^5, 1.3e-4 at 10^7) match 128 x 128 and are half of what any Laplace
#: identity gives on 256 x 256.  Checking at 128 x 128 is the stricter choice (256 x 256 would make
#: every ratio about half).
REFERENCE_DOMAIN = {1: 4096, 2: 128}
TOLERANCE = 1.15
REFERENCE_FIELDS = ["dims", "dataset", "scale", "epsilon", "algorithm", "reference_scaled_l1", "runs"]


@dataclass(frozen=True)
class ReferenceRow:
    dims: int
    dataset: str
    scale: int
    epsilon: float
    algorithm: str
    scaled_l1: float
    runs: int


def read_reference(path) -> list[ReferenceRow]:
    """The rows of a reference file; a clear error naming the column or line that is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"reference file not found: {path.name} (pass the path of reference_scaled_l1.csv)")
    try:
        return _read_rows(path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path.name}: not a UTF-8 CSV file of reference rows ({type(exc).__name__})") from None


def _read_rows(path: Path) -> list[ReferenceRow]:
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        rd = csv.DictReader(fh)
        missing = [f for f in REFERENCE_FIELDS if f not in (rd.fieldnames or [])]
        if missing:
            raise ValueError(f"{path.name}: missing column(s) {', '.join(missing)}; expected {', '.join(REFERENCE_FIELDS)}")
        for i, r in enumerate(rd, start=2):
            try:
                row = ReferenceRow(int(r["dims"]), r["dataset"].strip(), int(float(r["scale"])), float(r["epsilon"]),
                                   r["algorithm"].strip(), float(r["reference_scaled_l1"]), int(r["runs"]))
            except (TypeError, ValueError):
                raise ValueError(f"{path.name} line {i}: not a reference row (dims, scale, epsilon, "
                                 f"reference_scaled_l1 and runs must be numbers)") from None
            if row.dims not in (1, 2) or not (row.scaled_l1 > 0 and math.isfinite(row.scaled_l1)) or row.scale < 1:
                raise ValueError(f"{path.name} line {i}: dims must be 1 or 2, scale >= 1 and the error positive")
            if not (row.epsilon > 0 and math.isfinite(row.epsilon)) or row.runs < 1:
                raise ValueError(f"{path.name} line {i}: epsilon must be a finite number > 0 and runs >= 1")
            out.append(row)
    return out


def geometric_mean(values) -> float:
    v = np.asarray(list(values), dtype=np.float64)
    return float(np.exp(np.mean(np.log(v)))) if v.size else float("nan")


def compare(reference: list[ReferenceRow], ours: dict, tolerance: float = TOLERANCE) -> list[dict]:
    """Per (dims, algorithm, scale, epsilon): ours / reference, geometric mean over the data sets both have.

    ``ours`` maps (dims, dataset, scale, epsilon, reference algorithm name) to our mean scaled L1 error.
    """
    groups: dict = {}
    for r in reference:
        key = (r.dims, r.dataset, r.scale, r.epsilon, r.algorithm)
        if key in ours:
            groups.setdefault((r.dims, r.algorithm, r.scale, r.epsilon), []).append((r, ours[key]))
    rows = []
    for (dims, alg, scale, eps), pairs in sorted(groups.items()):
        ratios = [o / r.scaled_l1 for r, o in pairs]
        ratio = geometric_mean(ratios)
        rows.append({"dims": dims, "algorithm": alg, "ours": REFERENCE_NAMES[dims].get(alg, alg), "scale": scale,
                     "epsilon": eps, "datasets": len(pairs),
                     "ours_scaled_l1": geometric_mean(o for _, o in pairs),
                     "reference_scaled_l1": geometric_mean(r.scaled_l1 for r, _ in pairs),
                     "ratio": ratio, "worst_dataset_ratio": max(ratios), "pass": ratio <= tolerance})
    return rows


def reference_table(rows: list[dict], tolerance: float = TOLERANCE) -> str:
    """One line per algorithm, one column per (dims, scale): ours / reference and a flag beyond the tolerance."""
    settings = sorted({(r["scale"], r["epsilon"]) for r in rows})
    head = ["dims", "algorithm (reference -> ours)"] + [f"n={s:.0e} eps={e:g}" for s, e in settings]
    lines = [head]
    by = {(r["dims"], r["algorithm"], r["scale"], r["epsilon"]): r for r in rows}
    for dims, alg in sorted({(r["dims"], r["algorithm"]) for r in rows}):
        ours = REFERENCE_NAMES[dims].get(alg, alg)
        cells = []
        for s, e in settings:
            r = by.get((dims, alg, s, e))
            cells.append("-" if r is None else f"{r['ratio']:.2f}{'' if r['pass'] else ' FAIL'}")
        lines.append([f"{dims}-D", alg if ours == alg else f"{alg} -> {ours}"] + cells)
    return text_table(f"DPBench reference check: ours / reference scaled L1 error, geometric mean over data sets "
                      f"(above {tolerance:g} fails: our baseline is weaker than the published one)", lines)
