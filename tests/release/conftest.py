import pytest
from release_specs import BASE, people, write_csv


@pytest.fixture
def workdir(tmp_path):
    """A folder with people.csv (age, sex, income = 10 age) and spec.toml (BASE)."""
    age, sex = people()
    write_csv(tmp_path / "people.csv", {"age": age, "sex": sex, "income": age * 10}, lineterminator="\n")
    (tmp_path / "spec.toml").write_text(BASE)
    return tmp_path
