"""The scripts under ``experiments/`` still name what the library has.

Most of them run for minutes over the data home or on a GPU, so no unit test runs them all;
a change to the library breaks one silently until someone re-records it (a stricter result
store broke ``measure_board_on_device.sh``, found on an H200 lease, 2026-11-28:
tests/test_device_scripts.py). This catches the commonest such break, a renamed or moved
name, by reading each script without running it: every ``from perfml... import name``
(at module level or inside a function) must import, and every script a shell script runs
must exist.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _perfml_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name or None) of each import of perfml in a script."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "perfml":
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names if alias.name.split(".")[0] == "perfml"]
    return found


def _missing(script: Path) -> list[str]:
    """The perfml imports of a script that fail, one line each."""
    missing = []
    for line, module, name in _perfml_imports(script):
        try:
            imported = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{script.name}:{line}: import {module}: {exc}")
            continue
        if name is not None and name != "*" and not hasattr(imported, name):
            try:  # a submodule imported by name: from perfml.measure import runner
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script.name}:{line}: {module} has no {name}")
    return missing


@pytest.mark.parametrize("script", sorted(EXPERIMENTS.glob("*.py")), ids=lambda p: p.name)
def test_every_perfml_name_a_script_imports_exists(script):
    missing = _missing(script)
    assert not missing, "\n".join(missing)


def test_a_renamed_function_inside_a_function_is_found(tmp_path):
    script = tmp_path / "old.py"
    script.write_text("import perfml.boards\nfrom perfml.measure import runner\n\n"
                      "def main():\n    from perfml.boards import get_board, no_such_function\n"
                      "    import perfml.no_such_module\n")
    missing = _missing(script)
    assert len(missing) == 2 and "old.py:5: perfml.boards has no no_such_function" in missing[0], missing
    assert "old.py:6: import perfml.no_such_module" in missing[1]


@pytest.mark.parametrize("script", sorted(EXPERIMENTS.glob("*.sh")), ids=lambda p: p.name)
def test_every_script_a_shell_script_runs_exists(script):
    named = set(re.findall(r"experiments/[\w.-]+\.(?:py|sh)", script.read_text()))
    assert not [n for n in sorted(named) if not (EXPERIMENTS.parent / n).exists()]
