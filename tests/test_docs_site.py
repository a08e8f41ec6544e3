"""The documentation site (mkdocs.yml, docs/) builds strictly, and every Python example on it runs as written.

The examples run as tests/test_readme.py runs the README's: each ```python block of every page under docs/
is executed on its own, in a fresh namespace, and must print something.  Blocks are self-contained: data
come from the bundled data sets or are generated in the block (a comment names the real data, e.g. DPBench's),
and a block that writes files writes them into a temporary folder it makes itself; the working directory is a
fresh temporary folder besides, so a stray output file never lands in the checkout.
"""

import html
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"
README = ROOT / "README.md"
NEEDS_TREE = "needs the source tree (mkdocs.yml and docs/ beside tests/); this is an installed copy"
# a paper id with a place in it ("000 Thm 7.2", "001 Sec 3"): only the papers page decodes them
PAPER_ID = re.compile(r"\b00[0-4]\s+(Thm|Sec|Def|Lemma|Fig|eq\.|Cor|Alg)\b")


def _pages():
    return sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else []


def _examples():
    params = []
    for page in _pages():
        for i, block in enumerate(re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)):
            params.append(pytest.param(page, block, id=f"{page.relative_to(DOCS).as_posix()}-{i}"))
    return params


@pytest.mark.slow
@pytest.mark.skipif(not DOCS.is_dir(), reason=NEEDS_TREE)
@pytest.mark.parametrize("page,block", _examples())
def test_site_example_runs(page, block, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"{page.relative_to(ROOT).as_posix()} (python block)", "exec"), {})
    assert capfd.readouterr().out.strip()  # every example prints something


@pytest.mark.skipif(not DOCS.is_dir(), reason=NEEDS_TREE)
def test_every_page_with_code_has_its_examples_collected():
    # an indented or differently fenced block would silently escape test_site_example_runs
    for page in _pages():
        text = page.read_text()
        assert len(re.findall(r"```python", text)) == len(re.findall(r"^```python\n", text, re.M)), page


@pytest.mark.skipif(not DOCS.is_dir() or not README.exists(), reason=NEEDS_TREE)
def test_no_paper_ids_outside_the_papers_page():
    pages = [p for p in _pages() if p.name != "papers.md"] + [README]
    found = [(p.relative_to(ROOT).as_posix(), m.group(0)) for p in pages for m in PAPER_ID.finditer(p.read_text())]
    assert not found, f"name the paper and the theorem in words (ids only in docs/papers.md): {found[:10]}"


@pytest.mark.skipif(not README.exists(), reason=NEEDS_TREE)
def test_readme_is_short_and_its_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, missing


def _missing_builder():
    for module, extra in (("mkdocs", "mkdocs"), ("material", "mkdocs-material"), ("mkdocstrings", "mkdocstrings"),
                          ("mkdocstrings_handlers.python", "mkdocstrings[python]")):
        try:
            __import__(module)
        except ImportError:
            return extra
    return None


@pytest.mark.slow
def test_site_builds_strictly(tmp_path):
    if not CONFIG.exists() or not DOCS.is_dir() or not (ROOT / "src" / "blowfish_privacy").is_dir():
        pytest.skip("needs the source tree (mkdocs.yml, docs/ and src/ beside tests/); this is an installed copy")
    missing = _missing_builder()
    if missing:
        pytest.skip(f"needs {missing} (pip install '.[docs]', or the test extra)")
    figures = [m for p in _pages() for m in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", p.read_text())
               if not (p.parent / m).exists()]
    if figures:
        pytest.skip(f"the figures are not in this tree (an sdist leaves them out): {figures[:3]}")
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(CONFIG),
                        "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-6000:]
    assert (site / "index.html").exists()
    # the API reference is generated from the docstrings, not an empty page
    api = (site / "reference" / "api" / "policy" / "index.html").read_text()
    assert "blowfish_privacy.policy.Policy" in api and "sensitivity" in api
    mechanisms = (site / "reference" / "api" / "mechanisms" / "index.html").read_text()
    for name in ("laplace", "ordered_hierarchical", "kmeans", "pufferfish_sum", "plan_optimized"):
        assert f'id="blowfish_privacy.mechanisms.' in mechanisms and f'.{name}"' in mechanisms, name
    # the docstrings cite papers by id; the site names them in words (docs_hooks/paper_ids.py), but on the papers page
    ids = []
    for page in site.rglob("*.html"):
        if page.parent.name != "papers":
            text = html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))
            ids += [(page.relative_to(site).as_posix(), text[max(0, m.start() - 60):m.end() + 10])
                    for m in re.finditer(r"(?<![\d.,])\b00[0-4]\b(?![\d.,])", text)]
    assert not ids, ids[:5]
