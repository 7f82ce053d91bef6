"""No import circles in the shipped code and the local runner (issue 22, "a house a reader can follow").

The graph is read from the source with ``ast``, not from what an interpreter happened to import: every
``import``/``from ... import`` of a module of ours is an edge, wherever it stands. An import inside a function
(made lazy for cold start) and one under ``if TYPE_CHECKING:`` are edges too: a circle hidden behind either is
still a circle a reader has to hold in mind, and the next top-level import turns it into an ImportError. A cycle is
cut by moving the part both sides share down a floor, into a module both import (see the ``Below both ...``
paragraphs of vaultcore/api/json_body.py, cards/pan_mask.py, postback/target.py, proxy/actions.py,
tokens/values.py; local/template.py and local/admin_client.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "shared" / "python"
# (folder the package is imported from, top-level package)
PACKAGES = ((LAYER, "vaultcore"), (ROOT, "functions"), (ROOT, "local"))


def modules() -> dict[str, Path]:
    """Dotted name -> source file, for every module of the packages (a package is its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for base, top in PACKAGES:
        for path in sorted((base / top).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: resolved against the importing module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    # ``from a import b`` imports the module a.b when there is one, else a name of a.
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (anywhere in its source)."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _imported_names(node, name, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                submodules = [n for n in names[:-1] if n in known]
                names = submodules if len(submodules) == len(names) - 1 else [*submodules, names[-1]]
            for target in names:
                while target and target not in known:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _describe(component: list[str], edges: dict[str, set[str]]) -> str:
    members = set(component)
    arrows = [f"{a} -> {b}" for a in component for b in sorted(edges[a] & members)]
    return "; ".join(arrows)


def test_there_is_no_import_cycle_in_vaultcore_functions_or_local():
    edges = graph()
    found = cycles(edges)
    assert not found, "import cycles (move the shared part down a floor):\n" + "\n".join(
        _describe(component, edges) for component in found)


def test_the_graph_sees_function_level_and_type_checking_imports():
    """The reader of the source is what counts: lazy and typing-only imports are edges (a known pair of each)."""
    edges = graph()
    assert "vaultcore.devices.parser" in edges["vaultcore.proxy.actions"]  # inside ActionRunner._decrypt
    assert "vaultcore.proxy.config" in edges["vaultcore.proxy.response_actions"]  # under TYPE_CHECKING


def test_a_cycle_is_found_in_a_made_up_graph():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
