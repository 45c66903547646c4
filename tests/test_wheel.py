"""issue 9: perfml works from a built wheel, outside the checkout.

The wheel is built from a copy of the tracked sources (so no stale ``build/`` folder of
the checkout leaks into it), installed with ``pip install --target`` into a temporary
directory, and used from a temporary working directory through ``PYTHONPATH``: the
kernels, sidecars and sweep specs must come from the installed package
(``importlib.resources``), not from the repository layout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_HOME = Path(os.environ.get("PERFML_DATA_HOME") or ROOT.parent / "shared" / "datasets")

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 600):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(site directory, environment) of perfml installed from its wheel."""
    try:
        import wheel  # noqa: F401  # setuptools needs it for bdist_wheel
    except ImportError:
        pytest.skip("the `wheel` package is needed to build a wheel offline (pip install wheel)")
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    ignore = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                    ".hypothesis", ".pytest_cache", "results", "mlruns", "*.db")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode == 0 and tracked.stdout.strip():
        for rel in tracked.stdout.splitlines():
            path = ROOT / rel
            if path.is_file() and not path.is_symlink():
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, src / rel)
    else:  # not a git checkout (an sdist): copy the tree
        shutil.copytree(ROOT, src, ignore=ignore, symlinks=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PERFML_KERNELS_DIR", "PERFML_DATA_HOME")}
    dist = base / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(dist), str(src)], cwd=base, env=env)
    (whl,) = dist.glob("perfml-*.whl")
    site = base / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
          str(whl)], cwd=base, env=env)
    env["PYTHONPATH"] = str(site)
    return site, env


def test_wheel_ships_the_kernels_and_sweeps(installed, tmp_path):
    site, env = installed
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    proc = _run([sys.executable, "-c", "import perfml; print(perfml.__file__)"], cwd, env)
    assert Path(proc.stdout.strip()).is_relative_to(site)  # not the checkout

    rows = json.loads(_run([sys.executable, "-m", "perfml", "kernels", "list", "--json"],
                           cwd, env).stdout)
    shipped = {p.stem for p in (ROOT / "perfml" / "kernels" / "cuda").glob("*.toml")}
    assert {r["family"] for r in rows} == shipped
    assert {r["kind"] for r in rows} == {"static", "dynamic", "latency", "application"}

    plan = json.loads(_run([sys.executable, "-m", "perfml", "sweep", "plan", "--sms", "4",
                            "--json"], cwd, env).stdout)
    shipped_specs = list((ROOT / "perfml" / "data" / "sweeps").glob("*.toml"))
    assert len(plan["specs"]) == len(shipped_specs) > 0


def test_wheel_predicts_outside_the_checkout(installed, tmp_path):
    if not (DATA_HOME / "boards.csv").is_file():
        pytest.skip(f"no data home at {DATA_HOME}")
    _site, env = installed
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    queries = pd.DataFrame({"board": ["H100-SXM", "Tesla K20c", "GTX-980"],
                            "app_id": ["vectorAdd", "matMul_gpu", "matMul_gpu"],
                            "input_size": [2**24, 1024, 512]})
    queries.to_csv(cwd / "q.csv", index=False)
    _run([sys.executable, "-m", "perfml", "predict", "--model", str(ROOT / "models" / "default"),
          "--queries", "q.csv", "--output", "p.csv", "--data-home", str(DATA_HOME)], cwd, env)
    out = pd.read_csv(cwd / "p.csv")
    assert len(out) == len(queries)
    assert list(out[["board", "app_id", "input_size"]].itertuples(index=False)) == list(
        queries.itertuples(index=False))
    assert (out["predicted_ms"] > 0).all()
