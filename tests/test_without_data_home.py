"""``pytest --without-data-home``: a GPU machine without the shared datasets can run the GPU tests.

The option is opt-in: without it, a missing data home stops the collection with a typed
error that names the option, so CI (which has the datasets) can never lose the modules that
read them silently.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _collect(*options: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PERFML_DATA_HOME": str(tmp_path / "no-such-data-home")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *options,
         "tests/test_bsp.py", "tests/test_boards.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_missing_data_home_stops_the_collection_by_default(tmp_path):
    run = _collect(tmp_path=tmp_path)
    assert run.returncode != 0
    assert "DataHomeError" in run.stdout and "--without-data-home" in run.stdout


def test_without_data_home_skips_only_the_modules_that_need_it(tmp_path):
    run = _collect("--without-data-home", tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "DataHomeError" not in run.stdout
    collected = [line for line in run.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith("tests/test_boards.py::") for line in collected)
