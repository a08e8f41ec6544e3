import textwrap

import pytest
from release_specs import BASE, people


@pytest.fixture
def workdir(tmp_path):
    """A folder with people.csv and spec.toml (BASE)."""
    age, sex = people()
    with open(tmp_path / "people.csv", "w") as fh:
        fh.write("age,sex,income\n")
        for a, s in zip(age, sex):
            fh.write(f"{a},{s},{a * 10}\n")
    (tmp_path / "spec.toml").write_text(textwrap.dedent(BASE))
    return tmp_path
