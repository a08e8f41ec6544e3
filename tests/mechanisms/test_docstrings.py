"""Every public function of the mechanisms, the DP baselines and the top-level
package, and every registered plan (:func:`blowfish_privacy.registry.plans`),
states its guarantee in its own docstring.

The convention (DEVELOPERS.md, "Docstrings of public functions"): numpydoc
sections ``Returns`` (what is released), ``Privacy`` (which guarantee,
under which policy, with which epsilon), ``Sensitivity`` (the value
calibrated with and how it is obtained), ``Runtime`` and ``References``
(the paper named, with its section; a three-digit id alone is not enough).
"""

from __future__ import annotations

import inspect
import re

import pytest

import blowfish_privacy
from blowfish_privacy import baselines, mechanisms, registry

REQUIRED = ("Returns", "Privacy", "Sensitivity", "Runtime", "References")

# A reference names its paper (authors, title or venue), not only an id
# ("000 Sec 5") with locators.
_LOCATORS = re.compile(r"\b(Sec|Section|Thm|Theorem|Lemma|Def|Definition|Fig|Figure|Algorithm|Alg|Cor|Corollary|"
                       r"Example|Eq|Appendix|Table)\b\.?")
_NAME = re.compile(r"[A-Z][a-z]{2,}")


def _public_functions():
    seen = {}
    for module in (mechanisms, baselines, blowfish_privacy):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                seen.setdefault(f"{module.__name__}.{name}", obj)
    families = registry.plan_families()
    for name, plan in registry.plans().items():  # a plan registered from elsewhere is checked too
        seen.setdefault(f"blowfish_privacy.{families[name]}.{name}", plan)
    return sorted(seen.items())


def sections(doc: str) -> dict[str, str]:
    """numpydoc sections: a heading line underlined with dashes, to the next heading."""
    lines = doc.splitlines()
    found: dict[str, str] = {}
    heads = [i for i in range(len(lines) - 1)
             if lines[i].strip() and re.fullmatch(r"-{3,}", lines[i + 1].strip())
             and len(lines[i + 1].strip()) >= len(lines[i].strip())]
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        found[lines[i].strip()] = "\n".join(lines[i + 2:end]).strip()
    return found


def problems(doc: str | None) -> list[str]:
    """What a public function's docstring lacks, in words."""
    secs = sections(inspect.cleandoc(doc or ""))
    out = [f"no '{s}' section" for s in REQUIRED if not secs.get(s)]
    ref = secs.get("References", "")
    if ref and not _NAME.search(_LOCATORS.sub("", ref)):
        out.append("'References' does not name a paper (authors, title or venue), only ids and sections")
    return out


def test_section_reader():
    doc = """One line.

    Returns
    -------
    int

    Privacy
    -------
    None.

    References
    ----------
    000 Sec 5, Thm 5.1.
    """
    assert set(sections(inspect.cleandoc(doc))) == {"Returns", "Privacy", "References"}
    assert problems(doc) == ["no 'Sensitivity' section", "no 'Runtime' section",
                             "'References' does not name a paper (authors, title or venue), only ids and sections"]
    good = doc.replace("000 Sec 5, Thm 5.1.", "He, Machanavajjhala, Ding, SIGMOD 2014, Sec 5.") + """
    Sensitivity
    -----------
    2.

    Runtime
    -------
    O(n).
    """
    assert problems(good) == []


def test_the_walk_sees_mechanisms_and_every_registered_plan():
    names = {n.rsplit(".", 1)[1] for n, _ in _public_functions()}
    assert {"laplace", "plan_laplace", "kmeans", "plan_kmeans", "transformed_laplace", "privelet", "mwem"} <= names
    assert set(registry.plans()) <= names


def test_public_functions_state_their_guarantee():
    missing = {name: problems(fn.__doc__) for name, fn in _public_functions()}
    missing = {name: p for name, p in missing.items() if p}
    assert not missing, "public functions whose docstrings lack sections (DEVELOPERS.md, 'Docstrings'):\n" + "\n".join(
        f"  {name} ({inspect.getsourcefile(dict(_public_functions())[name]).rsplit('blowfish_privacy/', 1)[-1]}): "
        + "; ".join(p) for name, p in sorted(missing.items())
    )


@pytest.mark.parametrize("name", ["laplace", "transformed_laplace", "privelet", "constrained_histogram", "kmeans"])
def test_help_shows_the_guarantee(name):
    """The functions the issue names: help() shows the policy and epsilon."""
    doc = getattr(mechanisms, name).__doc__
    privacy = sections(inspect.cleandoc(doc))["Privacy"]
    assert "epsilon" in privacy and ("Blowfish" in privacy or "differential privacy" in privacy)
