"""The spec examples of docs/spec.md and of the tutorial's first spec (docs/tutorial/first-spec.md) are valid and run."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from blowfish_privacy.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _toml_blocks(path: Path) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", path.read_text(), re.S)


def _people_csv(path: Path, sex_column: str) -> None:
    rng = np.random.default_rng(4)
    n = 3000
    with open(path, "w") as fh:
        fh.write(f"age,{sex_column},capital_loss\n")
        for a, s, c in zip(rng.integers(0, 100, n), rng.choice(["f", "m"], n), rng.integers(0, 4357, n)):
            fh.write(f"{a},{s},{c}\n")


@pytest.mark.parametrize("doc,sex_column", [("docs/spec.md", "gender"), ("docs/tutorial/first-spec.md", "sex")])
def test_documented_spec_runs(tmp_path, doc, sex_column, capsys):
    if not (ROOT / doc).exists():
        pytest.skip("needs the source tree")
    blocks = [b for b in _toml_blocks(ROOT / doc) if "[dataset]" in b]
    assert len(blocks) == 1
    (tmp_path / "spec.toml").write_text(blocks[0])
    _people_csv(tmp_path / "people.csv", sex_column)
    code = main(["release", str(tmp_path / "spec.toml"), "--ledger", str(tmp_path / "l.db"), "--new-ledger",
                 "--out", str(tmp_path / "out"), "--no-plots", "--quiet"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["releases"]) == blocks[0].count("[[release]]")
