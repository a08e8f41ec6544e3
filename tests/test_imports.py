"""The package's import structure, read from the source (no import needed).

The rules of the layering in ``docs/architecture.md`` ("Import rules"):

* the graph of module-level imports between the package's own modules has
  no cycle;
* no function body imports a module of the package, and function bodies
  import third-party modules only when they are optional dependencies (so a
  circle cannot be hidden behind an import that runs late);
* no private name crosses modules (``from m import _x`` unless ``_x`` is a
  module, or ``m._x`` on another module of the package);
* no ``isinstance`` / ``issubclass`` on a concrete secret-graph class
  outside ``policy/secrets`` (callers ask the graph's capabilities).

The graph is built from the AST of every ``.py`` file under
``src/blowfish_privacy``.  Relative imports are resolved against the
importing module.  Importing ``a.b.c`` also runs the ``__init__`` of every
package on the way (``a.b``) that is not already an ancestor of the importer
(those are being initialised anyway), so an edge goes to each of them;
``from a.b import c`` adds an edge to ``a.b.c`` when ``c`` is a module.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = "blowfish_privacy"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE

# Optional dependencies (extras in pyproject.toml) that may be imported where
# they are used, so that the package imports without them.
OPTIONAL = frozenset({"matplotlib", "scipy", "pyarrow", "dask", "distributed", "pandas", "tqdm", "sklearn", "polars",
                      "threadpoolctl", "pyspark"})

# Files still allowed function-local imports, each with the reason.  Keep
# this list empty; an entry is a debt to pay (test_allow_list_is_not_stale
# fails once a file no longer needs its entry).
ALLOWED_LOCAL_IMPORTS: dict[str, str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _resolve(node: ast.ImportFrom, importer: str, modules: dict[str, Path]) -> str:
    if node.level == 0:
        return node.module or ""
    package = importer if _is_package(importer, modules) else importer.rpartition(".")[0]
    parts = package.split(".")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.Import | ast.ImportFrom, importer: str, modules: dict[str, Path]) -> list[str]:
    """Every module of the package that executing ``node`` may run."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _resolve(node, importer, modules)
        names = [base] + [f"{base}.{alias.name}" for alias in node.names]
    found = []
    for name in names:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        # The packages on the way that the importer is not already inside.
        parts = name.split(".")
        for i in range(2, len(parts) + 1):
            step = ".".join(parts[:i])
            if step in modules and not (importer == step or importer.startswith(step + ".")):
                found.append(step)
    return found


def _top_level(node: ast.AST):
    """Import statements that run when the module is imported (not in a def)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        else:
            yield from _top_level(child)


def _in_functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    yield sub


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> ast.AST:
    """The module's syntax tree (parsed once per test run)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = _parse(path)
        for node in _top_level(tree):
            graph[name].update(t for t in _targets(node, name, modules) if t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def local_imports() -> dict[str, list[str]]:
    """Function-local imports that are not optional dependencies, per file."""
    modules = _modules()
    bad: dict[str, list[str]] = {}
    for name, path in modules.items():
        tree = _parse(path)
        for node in _in_functions(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = _resolve(node, name, modules)
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
            else:
                target = node.names[0].name
            if target.split(".")[0] in OPTIONAL:
                continue
            rel = path.relative_to(SRC).as_posix()
            bad.setdefault(rel, []).append(f"line {node.lineno}: {target}")
    return bad


def test_graph_sees_the_package():
    graph = import_graph()
    assert "blowfish_privacy.mechanisms.counts.laplace" in graph
    # The top-level package imports its subpackages: edges are found.
    assert "blowfish_privacy.mechanisms" in graph["blowfish_privacy"]
    assert "blowfish_privacy.noise" in graph["blowfish_privacy.mechanisms.counts.laplace"]


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles between modules of the package:\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_no_function_local_imports():
    bad = {f: lines for f, lines in local_imports().items() if f not in ALLOWED_LOCAL_IMPORTS}
    assert not bad, "function-local imports (only optional dependencies are allowed):\n" + "\n".join(
        f"{f}: {', '.join(lines)}" for f, lines in sorted(bad.items())
    )


def test_allow_list_is_not_stale():
    found = local_imports()
    stale = [p for p in sorted(ALLOWED_LOCAL_IMPORTS) if p not in found]
    assert not stale, f"no longer have function-local imports, remove them from the allow-list: {stale}"


# ---------------------------------------------------------------------------
# Private names stay in their module; secret graphs answer for themselves
# ---------------------------------------------------------------------------
SECRETS = f"{PACKAGE}.policy.secrets"
BINDINGS = frozenset(p.stem for p in SRC.glob("*.pyx"))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_aliases(tree: ast.AST, importer: str, modules: dict[str, Path]) -> dict[str, str]:
    """Names bound by the module's imports to modules of the package (``from a import m``,
    ``import a.b.m as x``; ``import a.b`` binds ``a``, the package itself)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGE)):
            base = _resolve(node, importer, modules)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in modules or alias.name in BINDINGS:
                    found[alias.asname or alias.name] = full
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else PACKAGE
    return found


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The dotted name an expression such as ``m.sub.attr`` stands for, with aliases expanded."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def _crossings(name: str, tree: ast.AST, modules: dict[str, Path]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGE)):
            base = _resolve(node, name, modules)
            for alias in node.names:
                if _is_private(alias.name) and f"{base}.{alias.name}" not in modules and alias.name not in BINDINGS:
                    found.append(f"{name}:{node.lineno} takes {base}.{alias.name}")
    aliases = _module_aliases(tree, name, modules)
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = _dotted(node.value, aliases)
            if owner is not None and owner in modules:
                target = f"{owner}.{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _is_private(node.args[1].value):
            owner = _dotted(node.args[0], aliases)
            if owner is not None and owner in modules:
                target = f"{owner}.{node.args[1].value}"
        if target and not target.startswith(name + "."):
            found.append(f"{name}:{node.lineno} reads {target}")
    return found


def private_crossings() -> list[str]:
    """Every place a module takes a private name of another module.

    ``from m import _x`` (unless ``_x`` is a module: the C bindings are
    modules named ``_X``), ``m._x`` or ``pkg.m._x`` where ``m`` names another
    module of the package, and ``getattr(m, "_x")``.  (Private *methods*
    called on objects are not seen: the type of an object is not in the
    syntax.)"""
    modules = _modules()
    found = []
    for name, path in modules.items():
        found += _crossings(name, _parse(path), modules)
    return found


def test_no_private_name_crosses_modules():
    assert private_crossings() == []


def _graph_classes() -> set[str]:
    """The concrete secret-graph classes, read from the secrets package."""
    names = set()
    for path in (SRC / "policy" / "secrets").glob("*.py"):
        for node in _parse(path).body:
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
    return names - {"SecretGraph"}


def _in_secrets(dotted: str) -> bool:
    return dotted in (SECRETS, f"{PACKAGE}.secrets") or dotted.startswith(SECRETS + ".")


def _class_checks(name: str, tree: ast.AST, modules: dict[str, Path], graphs: set[str]) -> list[str]:
    """Where a module asks for the class of a secret graph: ``isinstance`` /
    ``issubclass`` on one, ``type(x) is C`` / ``==``, ``x.__class__ is C``,
    ``case C():`` and comparisons of ``type(x).__name__`` with a class name.
    A class counts when it is imported from the secrets package or read as an
    attribute of it, whatever it is called locally."""
    local = {}  # local name -> class name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGE)):
            base = _resolve(node, name, modules)
            if _in_secrets(base):
                for alias in node.names:
                    if alias.name in graphs:
                        local[alias.asname or alias.name] = alias.name
    aliases = _module_aliases(tree, name, modules)

    def graph_class(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and node.id in local:
            return local[node.id]
        if isinstance(node, ast.Attribute) and node.attr in graphs:
            owner = _dotted(node.value, aliases)
            if owner is not None and _in_secrets(owner):
                return node.attr
        return None

    def is_class_of(node: ast.AST) -> bool:  # type(x) or x.__class__
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
                and len(node.args) == 1) or (isinstance(node, ast.Attribute) and node.attr == "__class__")

    found = []
    for node in ast.walk(tree):
        hits = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            hits = [graph_class(k) for k in kinds]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_class_of(x) for x in sides):
                for x in sides:
                    hits.append(graph_class(x))
                    if isinstance(x, (ast.Tuple, ast.List, ast.Set)):
                        hits += [graph_class(e) for e in x.elts]
            if any(isinstance(x, ast.Attribute) and x.attr == "__name__" and is_class_of(x.value) for x in sides):
                hits += [c.value for x in sides for c in ast.walk(x)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in graphs]
        elif isinstance(node, ast.MatchClass):
            hits = [graph_class(node.cls)]
        found += [f"{name}:{node.lineno} {h}" for h in hits if h]
    return found


def secret_graph_isinstance() -> list[str]:
    """Every place outside the secrets package that asks a secret graph for its class."""
    modules = _modules()
    graphs = _graph_classes()
    found = []
    for name, path in modules.items():
        if not _in_secrets(name):
            found += _class_checks(name, _parse(path), modules, graphs)
    return found


PLANTED = f"""
import {PACKAGE}.policy.secrets as S
import {PACKAGE}.noise
from {PACKAGE}.policy.secrets.threshold import Line as L
from {PACKAGE}.policy.secrets import Custom, base
from {PACKAGE}.noise import _secret
from {PACKAGE} import noise

def f(g, x):
    a = isinstance(g, S.Line)
    b = isinstance(g, (int, L))
    c = type(g) is Custom
    d = g.__class__ == S.Partition
    e = type(g).__name__ == "Intersection"
    match g:
        case S.FullDomain():
            pass
    h = base._helper(x)
    i = getattr(noise, "_grid")
    j = {PACKAGE}.noise._other
    k = isinstance(g, S.SecretGraph) or type(x) is int
"""


def test_finders_see_what_they_look_for():
    """Each form the two rules forbid, planted in a module outside secrets/, is flagged; the base class is not."""
    tree = ast.parse(PLANTED)
    modules = _modules()
    name = f"{PACKAGE}.mechanisms.planted"
    checks = sorted(h.split(" ")[1] for h in _class_checks(name, tree, modules, _graph_classes()))
    assert checks == sorted(["Line", "Line", "Custom", "Partition", "Intersection", "FullDomain"])
    crossings = " ".join(_crossings(name, tree, modules))
    for planted in ("noise._secret", "base._helper", "noise._grid", "noise._other"):
        assert planted in crossings, planted
    assert len(_crossings(name, tree, modules)) == 4
    # inside the secrets package the same code is the package's own business
    assert _in_secrets(f"{PACKAGE}.policy.secrets.threshold") and not _in_secrets(f"{PACKAGE}.policy.transform")


def test_no_isinstance_on_a_secret_graph_outside_secrets():
    assert secret_graph_isinstance() == []
