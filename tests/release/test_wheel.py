"""Build the wheel, install it into a fresh virtual environment, run `blowfish demo` outside the source tree."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# builds a wheel in a fresh virtual environment (~20 s or more): CI runs it with -m slow
pytestmark = pytest.mark.slow


@pytest.mark.skipif(not (ROOT / "pyproject.toml").exists() or not (ROOT / "csrc").is_dir(),
                    reason="needs the source tree (the tests run against an installed wheel)")
@pytest.mark.skipif(os.environ.get("CIBUILDWHEEL") == "1", reason="cibuildwheel already tests the wheel it built")
def test_wheel_installs_and_runs_the_demo(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    build = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(tmp_path / "dist"),
             f"-Cbuild-dir={tmp_path / 'build'}", "-q"]
    if all(importlib.util.find_spec(m) for m in ("scikit_build_core", "Cython", "cython_cmake")):
        build.append("--no-build-isolation")
    subprocess.run(build, check=True, env=env, timeout=900)
    wheel = next((tmp_path / "dist").glob("blowfish_privacy-*.whl"))

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / ("python.exe" if os.name == "nt" else "python")
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, env=env, timeout=900)

    run = tmp_path / "elsewhere"
    run.mkdir()
    p = subprocess.run([str(bindir / "blowfish"), "demo", "--quiet"], cwd=run, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "blowfish demo: UCI Adult" in p.stdout
    # the fresh environment has no matplotlib: the demo says so instead of failing
    assert "plots skipped: matplotlib is not installed" in p.stdout
    doc = json.loads((run / "blowfish-demo" / "capital-loss-cdf.json").read_text())
    assert doc["n"] == 48842 and doc["secure"] is True
    assert (run / "blowfish-demo" / "spec.toml").exists()
    # the installed package, not the source tree, ran
    where = subprocess.run([str(py), "-c", "import blowfish_privacy; print(blowfish_privacy.__file__)"],
                           cwd=run, env=env, capture_output=True, text=True, check=True).stdout
    assert str(venv) in where
