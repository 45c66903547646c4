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


#: packages perfml's extras install that a bare GPU machine has not (the device image of
#: /work/.library/device/KINDS.md has CuPy, NumPy, pandas, pyarrow, scikit-learn, pytest,
#: hypothesis, typer, but none of these)
NOT_ON_A_GPU_MACHINE = ("xgboost", "mlflow", "optuna", "sqlalchemy", "alembic", "psycopg", "dask", "distributed")


def test_the_gpu_tests_collect_without_the_training_and_tracking_packages(tmp_path):
    """`pytest -m gpu --without-data-home` (experiments/measure_board_on_device.sh) runs on a machine
    without xgboost, MLflow or Optuna: no test module may need them to be collected. A module that
    built its parametrization by importing xgboost stopped the whole GPU run on an H100 (2026-11-27)."""
    plugin = tmp_path / "block_optional_packages.py"
    plugin.write_text("import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in NOT_ON_A_GPU_MACHINE))
    env = {**os.environ, "PERFML_DATA_HOME": str(tmp_path / "no-such-data-home"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "block_optional_packages",
         "-m", "gpu", "--without-data-home", "tests"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert "tests collected" in summary and "error" not in summary, summary
