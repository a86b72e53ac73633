"""The harness's layout: no import circle among the package's modules, ``measure`` never
imports ``report``, and every module stays under the size the layout promises (one concept
per module) unless it says why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ctrie", "baselines", "experiments")
#: Lines above which a module must say why it is one module (a line ``# size: <reason>``).
MAX_LINES = 500
#: Modules still to be split, by the issue that splits them (empty when none is pending).
PENDING: dict[str, str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    nodes: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            todo.extend(node.orelse)
            continue
        nodes.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return nodes


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports at run time, at any depth of its code (lazy
    imports count; those under ``if TYPE_CHECKING:`` do not)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(m, p, known) for m, p in mods.items()}


def _cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``g`` (a package importing its own submodules does not count:
    ``pkg/__init__`` re-exporting ``pkg.mod`` is how a package is made)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(g[m]):
            if n.startswith(m + "."):
                continue
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_circle() -> None:
    assert _cycle(graph()) is None, " -> ".join(_cycle(graph()) or [])


def test_the_circle_finder_finds_one() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycle(g) == ["a", "b", "c", "a"]


def test_measure_never_imports_report() -> None:
    bad = {m: sorted(i for i in deps if i.startswith("experiments.report"))
           for m, deps in graph().items() if m.startswith("experiments.measure")}
    assert not {m: d for m, d in bad.items() if d}


@pytest.mark.parametrize("name", sorted(_modules()))
def test_module_size(name: str) -> None:
    text = _modules()[name].read_text()
    lines = text.count("\n")
    if lines > MAX_LINES and name not in PENDING:
        assert "# size: " in text, (f"{name} has {lines} lines (> {MAX_LINES}); split it, or "
                                    "say why it is one module in a '# size: ' comment")
