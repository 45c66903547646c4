"""Nothing below the CLI reads environment variables or searches for the data home (issue 9).

The command line (``perfml/cli/*``) is the entry point: it reads ``--data-home``,
``$PERFML_DATA_HOME``, ``$PERFML_QUIET``, ``$CUDA_HOME`` and friends once and passes
what it found down as arguments. This test walks the syntax tree of every other module
of the package and fails on:

* a read of the environment: ``os.environ[...]``, ``os.environ.get(...)``,
  ``os.getenv(...)``, ``environ.get(...)``, ``"X" in os.environ`` or any other use of
  ``os.environ`` / ``os.getenv``;
* a call of :func:`perfml.datasets.find_data_home` (the entry point's resolver, which
  reads ``$PERFML_DATA_HOME`` and searches the folders around the checkout) outside
  ``perfml/cli`` and ``perfml/datasets/_home.py``, where it is defined.

Two uses are allowed, each by module, function and call name, and nothing else is:

* :func:`perfml._mlflow.configure_http` calls ``os.environ.setdefault`` to give *MLflow's
  own HTTP client* bounded timeouts (MLflow reads only its environment variables for
  them, and a user's value wins). That is a write of a default for a third-party
  library, not a read by perfml.
* :func:`perfml.datasets.find_data_home` reads ``$PERFML_DATA_HOME``: it *is* the entry
  point's resolver (its documented search order), kept beside :class:`DataHome` so
  scripts and tests share it; the second check below pins that only ``perfml/cli``
  calls it inside the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import needs_data_home

PACKAGE = Path(__file__).resolve().parents[1] / "perfml"

#: (module path relative to perfml/, enclosing function, attribute called on os.environ)
ALLOWED = {("_mlflow.py", "configure_http", "setdefault"), ("datasets/_home.py", "find_data_home", "get")}

FIND_DATA_HOME_HOME = {"datasets/_home.py"}


def _library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "cli")


def _is_os_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ`` (from ``from os import environ``)."""
    if isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os":
        return True
    return isinstance(node, ast.Name) and node.id == "environ"


def _is_getenv(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in ("getenv", "getenvb") and isinstance(node.value, ast.Name) and node.value.id == "os":
        return True
    return isinstance(node, ast.Name) and node.id in ("getenv", "getenvb")


class _Finder(ast.NodeVisitor):
    def __init__(self, rel: str):
        self.rel = rel
        self.function: list[str] = []
        self.found: list[str] = []

    def _visit_function(self, node):
        self.function.append(node.name)
        self.generic_visit(node)
        self.function.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _visit_function

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_os_environ(node.value):  # os.environ.<attr>
            where = (self.rel, self.function[-1] if self.function else "<module>", node.attr)
            if where not in ALLOWED:
                self.found.append(f"{self.rel}:{node.lineno}: os.environ.{node.attr}")
            return  # the inner os.environ is this use, reported once
        if _is_os_environ(node) or _is_getenv(node):
            self.found.append(f"{self.rel}:{node.lineno}: {ast.unparse(node)}")
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if _is_os_environ(node) or _is_getenv(node):
            self.found.append(f"{self.rel}:{node.lineno}: {node.id}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "os" and any(a.name in ("environ", "getenv", "getenvb", "environb") for a in node.names):
            self.found.append(f"{self.rel}:{node.lineno}: from os import {', '.join(a.name for a in node.names)}")

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name == "find_data_home" and self.rel not in FIND_DATA_HOME_HOME:
            self.found.append(f"{self.rel}:{node.lineno}: find_data_home() below the CLI")
        self.generic_visit(node)


def _violations(path: Path) -> list[str]:
    rel = path.relative_to(PACKAGE).as_posix()
    finder = _Finder(rel)
    finder.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return finder.found


def test_the_walk_sees_the_package():
    modules = _library_modules()
    assert len(modules) > 50 and not any(p.relative_to(PACKAGE).parts[0] == "cli" for p in modules)


@pytest.mark.parametrize("source, expected", [
    ("import os\nx = os.environ.get('A')", "os.environ.get"),
    ("import os\nx = os.environ['A']", "os.environ"),
    ("import os\nx = 'A' in os.environ", "os.environ"),
    ("import os\nx = os.getenv('A')", "os.getenv"),
    ("from os import environ\nx = environ.get('A')", "from os import environ"),
    ("import os\ndef configure_http():\n    os.environ.setdefault('A', '1')", "os.environ.setdefault"),
    ("from perfml.datasets import find_data_home\nfind_data_home()", "find_data_home() below the CLI"),
])
def test_the_checker_catches_each_kind_of_read(source, expected):
    # The checker must be able to fail: each forbidden pattern, in a module that is not allowed, is found.
    finder = _Finder("somewhere/module.py")
    finder.visit(ast.parse(source))
    assert any(expected in f for f in finder.found), finder.found


def test_no_module_below_the_cli_reads_the_environment_or_searches_for_the_data_home():
    found = [v for path in _library_modules() for v in _violations(path)]
    assert not found, (
        "library code reads the environment or calls find_data_home; resolve it in perfml/cli and pass it down:\n"
        + "\n".join(found)
    )


def test_the_one_allowed_call_is_still_there():
    # If perfml._mlflow stops configuring MLflow's client this way, drop ALLOWED instead of keeping a dead exception.
    finder = _Finder("_mlflow.py")
    finder.visit(ast.parse((PACKAGE / "_mlflow.py").read_text(encoding="utf-8")))
    assert not finder.found
    assert "os.environ.setdefault" in (PACKAGE / "_mlflow.py").read_text(encoding="utf-8")


def test_the_cuda_toolkit_directory_is_a_parameter_resolved_by_the_cli(tmp_path, monkeypatch):
    import os
    import shutil

    from perfml.cli.kernels import resolve_cuda_home
    from perfml.kernels import compile as comp

    tool = tmp_path / "bin" / "perfml-fake-nvcc"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    # The library ignores $CUDA_HOME: only the cuda_home argument (and /usr/local/cuda*) is searched.
    assert comp._find_tool("perfml-fake-nvcc") is None
    assert comp._find_tool("perfml-fake-nvcc", cuda_home=tmp_path) == str(tool)
    # The CLI reads the variable and passes it down.
    assert resolve_cuda_home() == str(tmp_path)
    monkeypatch.delenv("CUDA_HOME")
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "other"))
    assert resolve_cuda_home() == str(tmp_path / "other")
    monkeypatch.delenv("CUDA_PATH")
    assert resolve_cuda_home() is None and os.environ.get("CUDA_HOME") is None


@needs_data_home()
def test_the_tracking_recovery_wait_is_a_parameter_the_cli_reads_from_the_environment(monkeypatch, capsys):
    import pandas as pd

    import perfml.experiments.runner as runner
    from perfml.cli import main
    from perfml.experiments.tracking import RECOVERY_WAIT_S, failed_runs_marked

    assert failed_runs_marked("e").recovery_wait_s == RECOVERY_WAIT_S
    assert failed_runs_marked("e", recovery_wait_s=2.5).recovery_wait_s == 2.5
    seen = []

    def fake_run_experiment(spec, *, recovery_wait_s=None, **kwargs):
        seen.append(recovery_wait_s)
        summary = pd.DataFrame({"model": ["m"], "mape": [1.0]})
        per_board = pd.DataFrame({"board": ["b"], "model": ["m"], "mape": [1.0]})
        return runner.ExperimentResult(spec.name, summary, per_board, per_board.rename(columns={"board": "app_id"}), summary)

    monkeypatch.setattr(runner, "run_experiment", fake_run_experiment)
    toml = str(PACKAGE.parent / "experiments" / "unseen_boards.toml")
    monkeypatch.setenv("PERFML_TRACKING_RECOVERY_S", "7")
    assert main(["--quiet", "experiment", "run", toml, "--no-track", "--json"]) == 0
    monkeypatch.delenv("PERFML_TRACKING_RECOVERY_S")
    assert main(["--quiet", "experiment", "run", toml, "--no-track", "--json"]) == 0
    assert seen == [7.0, None]
    capsys.readouterr()
    monkeypatch.setenv("PERFML_TRACKING_RECOVERY_S", "soon")
    assert main(["--quiet", "experiment", "run", toml, "--no-track"]) == 2
    assert "PERFML_TRACKING_RECOVERY_S" in capsys.readouterr().err and seen == [7.0, None]


@pytest.mark.parametrize("make, owner", [
    (lambda: __import__("perfml.closed_form.bsp", fromlist=["BSPModel"]).BSPModel(), "BSPModel.fit"),
    (lambda: __import__("perfml.learned.regressors", fromlist=["RuntimeRegressor"]).RuntimeRegressor(), "RuntimeRegressor.fit"),
    (lambda: __import__("perfml.closed_form.hongkim_runtime", fromlist=["HongKimRuntimeModel"]).HongKimRuntimeModel(
        instruction_source="profiles"), "HongKimRuntimeModel.fit"),
])
def test_an_estimator_without_a_data_home_raises_at_fit_even_with_the_variable_set(make, owner, monkeypatch, data_home):
    import pandas as pd
    from sklearn.base import clone

    from perfml.errors import DataHomeError

    monkeypatch.setenv("PERFML_DATA_HOME", str(data_home.path))  # set, yet never read below the CLI
    est = make()
    assert est.get_params()["data_home"] is None and clone(est).get_params()["data_home"] is None  # stored as given
    X = pd.DataFrame({"board": ["GTX-680"], "app_id": ["vectorAdd"], "input_size": [1024]})
    with pytest.raises(DataHomeError, match=rf"{owner}.*pass data_home=perfml\.datasets\.DataHome\(PATH\)"):
        est.fit(X, [1.0])
