"""The README's Python examples run as written."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _blocks():
    if not README.exists():
        return []
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.skipif(not README.exists(), reason="README.md is not beside the tests (installed-only run)")
@pytest.mark.parametrize("index", range(len(_blocks())))
def test_readme_example_runs(index, capfd):
    exec(compile(_blocks()[index], f"README.md block {index}", "exec"), {})
    assert capfd.readouterr().out.strip()  # every example prints something
