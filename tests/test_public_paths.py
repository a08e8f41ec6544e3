"""The documented import paths of the policy wing's modules
(``blowfish_privacy.domain``, ``.secrets``, ``.constraints``, ``.guarantee``,
``.transform``) give the very objects of ``blowfish_privacy.policy``, and
nothing that module does not list as public."""

import importlib

import pytest

import blowfish_privacy

PATHS = ["domain", "secrets", "constraints", "guarantee", "transform"]


@pytest.mark.parametrize("name", PATHS)
def test_path_gives_the_policy_modules_public_names(name):
    path = importlib.import_module(f"blowfish_privacy.{name}")
    real = importlib.import_module(f"blowfish_privacy.policy.{name}")
    assert path.__all__ == real.__all__ and path.__all__
    for public in real.__all__:
        assert getattr(path, public) is getattr(real, public), public
    extra = {n for n in vars(path) if not n.startswith("_")} - set(real.__all__) - {"sys", "limits"}
    assert not extra, f"blowfish_privacy.{name} passes on names its module does not list: {sorted(extra)}"
    assert getattr(blowfish_privacy, name) is path


def test_limits_is_one_module_under_every_import_form(monkeypatch):
    import blowfish_privacy.secrets.limits as by_path
    from blowfish_privacy.policy.secrets import limits
    from blowfish_privacy.secrets.limits import ENUM_LIMIT

    assert by_path is limits is blowfish_privacy.secrets.limits
    assert ENUM_LIMIT == limits.ENUM_LIMIT
    monkeypatch.setattr(by_path, "ENUM_LIMIT", 7)
    assert limits.ENUM_LIMIT == 7  # a limit set under the documented path is the one every graph reads
