"""The ``experiments/*_on_device.sh`` scripts, run on the CPU with the GPU's programs stubbed.

A GPU machine is lent to only some sessions; these tests check what the scripts hand to the
library before any GPU is involved, so a script that cannot work is found here, not on a
device lease (experiments/measure_board_on_device.sh made ``logs/`` in its result folder first,
and the result store refused that folder for every spec: H200, 2026-11-28).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: stands in for the GPU machine's python3: the sweep stage creates the result set through the
#: real store (synthetic device) where the script sends it; every other stage does nothing
PYTHON3_SHIM = textwrap.dedent(f"""\
    #!/usr/bin/env bash
    for a in "$@"; do
        case "$a" in *characterize_this_gpu.py) sweep=1 ;; esac
    done
    [ -z "${{sweep:-}}" ] && exit 0
    while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
    exec {sys.executable} -c '
    import sys
    from pathlib import Path
    from perfml.measure.backend import DeviceInfo
    from perfml.measure.store import ResultSet
    ResultSet.create(Path(sys.argv[1]), DeviceInfo(name="stub", compute_capability="9.0", sms=1), synthetic=True)
    print("result set created")
    ' "$out"
""")


def _stub_bin(tmp_path: Path) -> Path:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in {"python3": PYTHON3_SHIM, "nvidia-smi": "#!/usr/bin/env bash\necho stub nvidia-smi\n"}.items():
        path = stubs / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return stubs


def _measure_board(tmp_path: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "experiments/measure_board_on_device.sh", "H200", str(out), str(tmp_path / "configs.csv")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_measure_board_hands_the_sweep_stage_a_folder_the_result_store_takes(tmp_path):
    out = tmp_path / "H200"
    run = _measure_board(tmp_path, out)
    assert run.returncode == 0, run.stderr
    sweeps_log = (out / "logs" / "sweeps.log").read_text()
    assert "result set created" in sweeps_log, sweeps_log
    assert (out / "manifest.json").exists()
    assert {"env.txt", "sweeps.log", "ops.log", "gpu_tests.log"} <= {p.name for p in (out / "logs").iterdir()}


def test_measure_board_rerun_keeps_the_earlier_logs(tmp_path):
    out = tmp_path / "H200"
    for run in ("first", "second"):
        (tmp_path / run).mkdir()
    _measure_board(tmp_path / "first", out)
    first_env = (out / "logs" / "env.txt").read_text()
    _measure_board(tmp_path / "second", out)
    names = {p.name for p in (out / "logs").iterdir()}
    assert "env.txt" in names and "env.txt.~1~" in names, names
    assert (out / "logs" / "env.txt.~1~").read_text() == first_env
