"""The GPU measurement scripts of experiments/ refuse what would mix or lose data (no GPU needed).

``measure_dlops_torch.py`` appends to its ``--out`` and resumes it: a file of another GPU or
of another format must be refused, not appended to. PyTorch is replaced by a stand-in that
has only what the script reads before it measures.
"""

from __future__ import annotations

import csv
import sys
import types

import pytest

from conftest import experiment_script


def _script(name: str):
    return experiment_script(name)


@pytest.fixture
def fake_torch(monkeypatch):
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.version = types.SimpleNamespace(cuda="0.0")
    torch.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace()),
                                           cudnn=types.SimpleNamespace(version=lambda: 0))
    torch.set_grad_enabled = lambda flag: None
    torch.cuda = types.SimpleNamespace(get_device_name=lambda: "Fake GPU (synthetic)")
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def _configs(tmp_path):
    path = tmp_path / "configs.csv"
    path.write_text("config_id,op,B,M,N,K,H\nc00000,add,8,,,,16\n")
    return path


def test_a_file_of_another_gpu_is_not_appended_to(fake_torch, tmp_path):
    script = _script("measure_dlops_torch")
    out = tmp_path / "ops.csv"
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=script.COLUMNS)
        writer.writeheader()
        writer.writerow({c: "" for c in script.COLUMNS} | {"board": "A100-PCIe-40GB", "device_name": "NVIDIA A100",
                                                           "config_id": "c00000", "time_ms": "0.1"})
    before = out.read_text()
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--configs", str(_configs(tmp_path)), "--out", str(out), "--board", "H100-SXM"])
    assert exit_info.value.code == 2
    assert out.read_text() == before


def test_a_file_of_another_format_is_not_appended_to(fake_torch, tmp_path):
    script = _script("measure_dlops_torch")
    out = tmp_path / "ops.csv"
    out.write_text("board,op,time_ms\nH100-SXM,add,0.1\n")
    with pytest.raises(SystemExit):
        script.main(["--configs", str(_configs(tmp_path)), "--out", str(out), "--board", "H100-SXM"])
    assert out.read_text() == "board,op,time_ms\nH100-SXM,add,0.1\n"


def test_the_configuration_file_is_never_overwritten(tmp_path):
    script = _script("dlops_measurement_configs")
    out = tmp_path / "configs.csv"
    out.write_text("keep me\n")
    with pytest.raises(SystemExit):
        script.main(["--out", str(out)])
    assert out.read_text() == "keep me\n"
