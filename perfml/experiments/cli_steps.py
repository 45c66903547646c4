"""Run ``perfml`` commands as a user would, from the experiment scripts that go end to end.

The scripts under ``experiments/`` that check the command line itself (a model trained
without a board, then ``perfml predict`` on that board) run each step as a subprocess of
the same interpreter and echo it, so that their recorded output shows the exact commands.
A script that scores as another does loads that one (:func:`load_script`) rather than
copying its functions.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

__all__ = ["load_script", "run_perfml"]


def load_script(path: str | Path) -> ModuleType:
    """An experiment script (a file under ``experiments/``, not a package module), loaded as a module for its functions."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_perfml(args: list[str], *, last_lines: int | None = None) -> None:
    """Run ``python -m perfml ARGS``, print the command, its output and exit status and time.

    ``last_lines``: print only that many of the last output lines (all when None).

    Raises
    ------
    SystemExit
        With the command's exit status when it fails (the script stops there).
    """
    command = [sys.executable, "-m", "perfml", *args]
    print("$ perfml " + " ".join(shlex.quote(a) for a in args), flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    lines = (done.stdout + done.stderr).splitlines()
    for line in lines if last_lines is None else lines[-last_lines:]:
        print(f"  {line}")
    print(f"  (exit {done.returncode}, {time.perf_counter() - t0:.1f} s)", flush=True)
    if done.returncode != 0:
        raise SystemExit(done.returncode)
