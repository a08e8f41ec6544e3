"""No paper ids in what a user reads: the papers are named in words ("Theorem 5.1 of the Blowfish paper").

Docstrings and comments cite the papers by id ("000 Thm 5.1", decoded on docs/papers.md); messages,
console lines, JSON fields, ``--help`` and ledger rows must not.  Two checks: every string literal of
the package that is not a docstring (so every message, label and description it can print), and the
text of real runs of the command (``--help`` of every command, ``plan --json``, ``explain``, released
JSON, ``ledger``) for every registered kind.
"""

import ast
import contextlib
import importlib.util
import io
import json
import os
import re
from pathlib import Path

import pytest

import blowfish_privacy
from blowfish_privacy._citations import PAPER_ID, PAPERS, in_words
from blowfish_privacy.cli import main

HERE = Path(__file__).parent
PACKAGE = Path(blowfish_privacy.__file__).parent
_spec = importlib.util.spec_from_file_location("_neighbour_cases", HERE / "release" / "test_neighbours.py")
NB = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(NB)


def _literals(tree: ast.AST):
    """The string literals of a module that are not docstrings, with their line numbers."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docs.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts joined, each field as {}
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, text


#: Names a reader of a message cannot look up: files outside the installed package, private abbreviations.
UNREADABLE = re.compile(r"DESIGN\.md|DEVELOPERS\.md|\bCKS\b")


def test_no_string_of_the_package_names_a_paper_by_id_or_a_file_a_user_lacks():
    ids, unreadable = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(PACKAGE)}:{line}: {text[:80]!r}"
            if PAPER_ID.search(text):
                ids.append(where)
            if UNREADABLE.search(text):
                unreadable.append(where)
    assert not ids, "paper ids:\n" + "\n".join(ids)
    assert not unreadable, "files or abbreviations a user lacks:\n" + "\n".join(unreadable)


def test_the_check_finds_the_id_forms_and_spares_numbers():
    for text in ("000 Thm 5.1", "(000 eq. 9)", "001 Fig 4/5", "001 (Anuarbek) Sec 3", "(004)", "paper 003",
                 "003's ratio", "004 Lemma 4.2(ii)", "see 002 Fig 2"):
        assert PAPER_ID.search(text), text
        assert not PAPER_ID.search(in_words(text)), (text, in_words(text))
    for text in ("1,000 rows", "epsilon 0.001 (small)", "10.000 Sec", "bin 003", "2000 Thm"):
        assert not PAPER_ID.search(text), text
    assert set(PAPERS) == {"000", "001", "002", "003", "004"}


def _run(args, cwd: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as stop:  # --help
                code = stop.code
    finally:
        os.chdir(old)
    return code, out.getvalue() + err.getvalue()


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def _ids_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if PAPER_ID.search(line)]


@pytest.mark.parametrize("command", [[], ["demo"], ["release"], ["plan"], ["explain"], ["ledger"], ["bench"],
                                     ["bench", "range-queries"], ["bench", "kmeans"], ["bench", "histograms"],
                                     ["bench", "dpbench"]])
def test_help_names_no_paper_by_id(command, tmp_path):
    code, text = _run([*command, "--help"], tmp_path)
    assert code == 0 and "usage" in text
    assert not _ids_in(text), _ids_in(text)


def _release_texts(kind: str, policy: str, tmp: Path) -> list[str]:
    """Every text a user reads of one release of ``kind``: plan, explain, the released files, the ledger."""
    tmp.mkdir()
    (tmp / "spec.toml").write_text(NB._spec(kind, policy, "plain"))
    with open(tmp / "data.csv", "w") as fh:
        fh.write("age,sex,hours\n" + "".join(f"{a},{s},{h}\n" for a, s, h in NB._rows(False, False)))
    texts = []
    for args in (["plan", "spec.toml", "--json"], ["plan", "spec.toml"], ["explain", "spec.toml"],
                 ["release", "spec.toml", "--ledger", "l.sqlite", "--new-ledger", "--out", "out", "--quiet",
                  "--no-plots"],
                 ["ledger", "--ledger", "l.sqlite"], ["ledger", "--ledger", "l.sqlite", "--json"]):
        code, text = _run(args, tmp)
        texts.append(text)
    for f in sorted((tmp / "out").glob("*")) if (tmp / "out").exists() else []:
        if f.suffix == ".json":
            texts.extend(_strings(json.loads(f.read_text())))
        elif f.suffix in (".csv", ".md", ".txt"):
            texts.append(f.read_text())
    return texts


FAST_KINDS = [("cdf_oh", "distance"), ("histogram", "partition"), ("kmeans_sulq", "distance"), ("pufferfish_sum", "full")]
ALL_KINDS = [(k, p) for k in NB.KINDS for p in (NB.POLICIES if NB.KINDS[k][2] else ["full"])]


@pytest.mark.parametrize("kind,policy", FAST_KINDS)
def test_a_release_names_no_paper_by_id(kind, policy, tmp_path):
    texts = _release_texts(kind, policy, tmp_path / "run")
    found = [line for t in texts for line in _ids_in(t)]
    assert not found, found
    assert any("Blowfish paper" in t or "Pufferfish paper" in t for t in texts)  # the papers are still named


@pytest.mark.slow
@pytest.mark.parametrize("kind,policy", [c for c in ALL_KINDS if c not in FAST_KINDS])
def test_every_release_names_no_paper_by_id(kind, policy, tmp_path):
    texts = _release_texts(kind, policy, tmp_path / "run")
    found = [line for t in texts for line in _ids_in(t)]
    assert not found, found
