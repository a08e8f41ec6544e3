"""Strict types of the public API (issue 29).

``tests/typing/user_script.py`` uses every documented entry point as a user
would, binding each result to the type a user expects (and pinning the main
ones with ``assert_type``); ``mypy --strict`` must pass on it, type-checking
the package from this source tree (``src/``, with the ``.pyi`` stubs of the
compiled modules), not from an installed copy.  The second test holds that no
public function or method is annotated to return ``Any`` (or left without a
return annotation, which is the same for a caller).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
SCRIPT = ROOT / "tests" / "typing" / "user_script.py"

#: The modules whose ``__all__`` is the documented API.
PUBLIC_MODULES = (
    "blowfish_privacy",
    "blowfish_privacy.accountant",
    "blowfish_privacy.audit",
    "blowfish_privacy.baselines",
    "blowfish_privacy.constraints",
    "blowfish_privacy.errors",
    "blowfish_privacy.explain",
    "blowfish_privacy.frames",
    "blowfish_privacy.guarantee",
    "blowfish_privacy.mechanisms",
    "blowfish_privacy.noise",
    "blowfish_privacy.policy",
    "blowfish_privacy.release",
    "blowfish_privacy.secrets",
    "blowfish_privacy.sklearn",
    "blowfish_privacy.transform",
    "blowfish_privacy.workloads",
)


def _untyped_returns(fn: typing.Callable[..., object], where: str) -> list[str]:
    try:
        ann = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):  # a compiled callable: its .pyi stub is checked by mypy
        return []
    if ann is inspect.Signature.empty:
        return [f"{where}: no return annotation"]
    if ann is typing.Any or ann == "Any":
        return [f"{where}: returns Any"]
    return []


def _public_methods(cls: type) -> list[tuple[str, typing.Callable[..., object]]]:
    """The public methods and properties of ``cls`` and of its bases in this package."""
    out: dict[str, typing.Callable[..., object]] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("blowfish_privacy"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(value, property):
                value = value.fget
            elif isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            if inspect.isfunction(value):
                out[name] = value
    return sorted(out.items())


def _public_names(module: typing.Any) -> list[str]:
    """``__all__``, or the public names a module without one defines itself."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]


def test_no_public_function_returns_any():
    bad: list[str] = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in _public_names(module):
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            if inspect.isclass(obj):
                if obj.__module__.startswith("blowfish_privacy"):
                    for attr, fn in _public_methods(obj):
                        bad += _untyped_returns(fn, f"{module_name}.{name}.{attr}")
            elif inspect.isfunction(obj):
                bad += _untyped_returns(obj, f"{module_name}.{name}")
    assert not bad, "public functions without a precise return type:\n" + "\n".join(sorted(set(bad)))


@pytest.mark.slow
def test_user_script_passes_mypy_strict(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install '.[test]')")
    try:
        importlib.metadata.distribution("pandas-stubs")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pandas-stubs is not installed (pip install '.[test]'): the script's pandas calls need it")
    if not (SRC / "blowfish_privacy" / "py.typed").is_file():
        pytest.skip("no source tree beside the tests (src/blowfish_privacy/py.typed)")
    env = {**os.environ, "MYPYPATH": str(SRC)}  # the source tree before any installed copy
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
           "--cache-dir", str(tmp_path / "mypy-cache"), "--verbose", str(SCRIPT)]
    done = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"mypy --strict failed on {SCRIPT.name}:\n{done.stdout}"
    assert "Success: no issues found" in done.stdout
    # the package was read from src/, not from an installed copy
    package_init = str(SRC / "blowfish_privacy" / "__init__.py")
    assert package_init in done.stderr, f"mypy did not read the package from {SRC}"
