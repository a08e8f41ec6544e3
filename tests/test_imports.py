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
    """Names bound by the module's imports to modules of the package."""
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
                if alias.name.startswith(PACKAGE + ".") and alias.asname:
                    found[alias.asname] = alias.name
    return found


def private_crossings() -> list[str]:
    """Every place a module takes a private name of another module.

    ``from m import _x`` (unless ``_x`` is a module: the C bindings are
    modules named ``_X``) and ``m._x`` where ``m`` names another module of
    the package."""
    modules = _modules()
    found = []
    for name, path in modules.items():
        tree = _parse(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGE)):
                base = _resolve(node, name, modules)
                for alias in node.names:
                    if _is_private(alias.name) and f"{base}.{alias.name}" not in modules \
                            and alias.name not in BINDINGS:
                        found.append(f"{name}:{node.lineno} takes {base}.{alias.name}")
        aliases = _module_aliases(tree, name, modules)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and _is_private(node.attr):
                found.append(f"{name}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
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


def secret_graph_isinstance() -> list[str]:
    """``isinstance`` / ``issubclass`` on a concrete secret graph outside the secrets package.

    A class counts when the name is imported from the secrets package (or
    read as an attribute of it), whatever it is called locally."""
    modules = _modules()
    graphs = _graph_classes()
    found = []
    for name, path in modules.items():
        if name == SECRETS or name.startswith(SECRETS + "."):
            continue
        tree = _parse(path)
        local = {}      # local name -> class name, for classes taken from secrets
        packages = set()  # local names bound to the secrets package or its modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGE)):
                base = _resolve(node, name, modules)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in modules and (full == SECRETS or full.startswith(SECRETS + ".")
                                            or full == f"{PACKAGE}.secrets"):
                        packages.add(alias.asname or alias.name)
                    elif (base == SECRETS or base.startswith(SECRETS + ".") or base == f"{PACKAGE}.secrets") \
                            and alias.name in graphs:
                        local[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
                continue
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            for k in kinds:
                if isinstance(k, ast.Name) and k.id in local:
                    found.append(f"{name}:{node.lineno} {local[k.id]}")
                elif isinstance(k, ast.Attribute) and k.attr in graphs and (
                        (isinstance(k.value, ast.Name) and k.value.id in packages) or isinstance(k.value, ast.Attribute)):
                    found.append(f"{name}:{node.lineno} {k.attr}")
    return found


def test_finders_see_what_they_look_for():
    """The two finders flag a planted private import and a planted isinstance."""
    assert "Line" in _graph_classes() and "SecretGraph" not in _graph_classes()
    assert isinstance(private_crossings(), list) and isinstance(secret_graph_isinstance(), list)


def test_no_isinstance_on_a_secret_graph_outside_secrets():
    assert secret_graph_isinstance() == []
