"""The import graph of perfml is layered: every import runs downward, no cycles.

Issue 9 ("one house"): no import runs from a lower layer back up, and no two modules
import each other, directly or through others. Function-level (lazy) imports count too:
they are still dependencies, only deferred.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "perfml"

#: Packages of perfml from the bottom up. A package may import only from its own
#: subpackages and from packages of a strictly lower layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("_safe_output",),  # writes files for every other module, _files included
    ("<root>", "_expr", "_files", "_progress", "_mlflow", "_secrets", "_csv_header", "_grouping"),
    ("boards", "datasets", "kernels"),
    ("apps", "operators"),
    ("closed_form",),
    ("measure",),
    ("characterize",),
    ("diagnosis", "cumapz"),
    ("evaluation",),
    ("learned",),
    ("experiments", "reproduce", "lab"),
    ("testing",),
    ("cli",),
    ("__main__",),
)
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE_ROOT.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _imports(path: Path, mods: dict[str, Path]) -> set[str]:
    """perfml modules imported anywhere in ``path`` (``from a import b`` counts a.b if a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [n if n in mods else node.module for n in names]
        else:
            continue
        found.update(n for n in names if n in mods)
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


MODULES = _modules()
GRAPH = {m: _imports(p, MODULES) - {m} for m, p in MODULES.items()}


def test_every_package_has_a_layer():
    missing = sorted({_package(m) for m in MODULES} - set(LAYER_OF))
    assert not missing, f"add these packages to LAYERS: {missing}"


def test_imports_run_downward():
    upward = []
    for module, targets in GRAPH.items():
        for target in targets:
            src, dst = _package(module), _package(target)
            if src != dst and LAYER_OF[dst] >= LAYER_OF[src]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that do not run downward:\n" + "\n".join(sorted(upward))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _is_reexport(module: str, target: str) -> bool:
    """A package ``__init__`` importing its own submodules (to re-export them) is not a cycle edge."""
    return target.startswith(module + ".") and MODULES[module].name == "__init__.py"


def test_no_import_cycles_between_modules():
    # Submodules must import their siblings directly, not through the package __init__:
    # so an edge from a submodule to its own package's __init__ is a cycle in waiting.
    graph = {m: {t for t in ts if not _is_reexport(m, t)} for m, ts in GRAPH.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "perfml.__main__"))
def test_module_imports_cleanly(module):
    import importlib

    importlib.import_module(module)
