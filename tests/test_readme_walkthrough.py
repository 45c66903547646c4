"""The README's "measured on my GPU, predict on another" walk-through runs as printed.

Truth: README.md (its ``reference.csv`` and ``queries.csv`` blocks and its table of
``predictions.csv``), produced with ``models/default``; the reference times are rows of
shared/datasets/runtimes.csv.gz and dlops_runtimes.csv.gz, checked here against the data.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest

from conftest import needs_data_home

ROOT = Path(__file__).resolve().parents[1]


def _csv_block(text: str, first_line: str) -> str:
    match = re.search(r"```csv\n(" + re.escape(first_line) + r"\n.*?)```", text, re.S)
    assert match, f"README has no csv block starting with {first_line!r}"
    return match.group(1)


@pytest.fixture(scope="module")
def readme():
    return (ROOT / "README.md").read_text()


@needs_data_home()
def test_the_walkthrough_runs_as_printed(readme, tmp_path, capsys):
    from perfml.cli import main

    ref = _csv_block(readme, "board,app_id,input_size,block_x,block_y,grid_x,grid_y,op,B,M,N,K,H,time_ms,note")
    queries = _csv_block(readme, "board,app_id,input_size,grid_x,op,B,M,N,K,H,note")
    (tmp_path / "reference.csv").write_text(ref)
    (tmp_path / "queries.csv").write_text(queries)
    out = tmp_path / "predictions.csv"
    code = main(["predict", "--model", str(ROOT / "models" / "default"), "--queries", str(tmp_path / "queries.csv"),
                 "--reference", str(tmp_path / "reference.csv"), "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(out)
    bases = ("reference", "training-boards", "measured")  # the table's rows, by their basis cell
    rows = [line for line in readme.splitlines()
            if line.startswith("| ") and len(cells := line.strip("|").split("|")) > 6 and cells[6].strip() in bases]
    assert len(rows) == len(got)
    for line, (_, row) in zip(rows, got.iterrows()):
        cells = [c.strip() for c in line.strip("|").split("|")]
        board, predicted, lower, upper, basis = cells[0], float(cells[3]), float(cells[4]), float(cells[5]), cells[6]
        assert board == row["board"] and basis == row["basis"]
        assert cells[8] == str(bool(row["extrapolated"]))  # the H100 and L4 rows: boards beyond the training boards'
        for printed, value in ((predicted, row["predicted_ms"]), (lower, row["lower_ms"]), (upper, row["upper_ms"])):
            assert value == pytest.approx(printed, rel=1e-3)


def test_the_reference_times_are_rows_of_the_data_home(readme, data_home):
    from perfml.datasets import load_dlops_runtimes
    from perfml.learned.training import training_runtimes

    ref = pd.read_csv(io.StringIO(_csv_block(readme, "board,app_id,input_size,block_x,block_y,grid_x,grid_y,op,B,M,N,K,H,time_ms,note")))
    rt = training_runtimes(data_home)
    lud = rt[(rt.app_id == "lud_perimeter") & (rt.board == "GTX-680") & (rt.input_size == 8192) & (rt.grid_x == 256)]
    assert lud["measured_ms"].tolist() == [pytest.approx(ref["time_ms"].iloc[0], abs=5e-7)]
    ops = load_dlops_runtimes(data_home)
    ops = ops[ops.board == "Tesla-T4"]
    bmm = ops[(ops.op == "bmm") & (ops.B == 24) & (ops.M == 2048) & (ops.N == 64) & (ops.K == 2048)]
    softmax = ops[(ops.op == "softmax") & (ops.B == 8192) & (ops.H == 768)]
    assert bmm["time_ms"].tolist() == [pytest.approx(ref["time_ms"].iloc[1], abs=5e-7)]
    assert softmax["time_ms"].tolist() == [pytest.approx(ref["time_ms"].iloc[2], abs=5e-7)]


def _console_steps(text: str) -> list[tuple[str, str | None]]:
    """(command, the ``error:`` line printed under it, or None) of every ```console block."""
    steps = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ "):
                following = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("$ ") else None
                steps.append((line[2:], following))
    return steps


@needs_data_home()
def test_the_refusals_of_docs_predict_walkthrough_print_as_documented(readme, tmp_path, capsys, monkeypatch):
    """Every command of docs/predict_walkthrough.md, run in a folder holding the README's
    queries.csv and reference.csv: the shell steps as written, each `python -m perfml ...`
    in-process; each prints the error line the document shows, exits 2 and writes nothing."""
    import shlex
    import subprocess

    from perfml.cli import main

    (tmp_path / "reference.csv").write_text(_csv_block(readme, "board,app_id,input_size,block_x,block_y,grid_x,grid_y,op,B,M,N,K,H,time_ms,note"))
    (tmp_path / "queries.csv").write_text(_csv_block(readme, "board,app_id,input_size,grid_x,op,B,M,N,K,H,note"))
    monkeypatch.chdir(tmp_path)
    steps = _console_steps((ROOT / "docs" / "predict_walkthrough.md").read_text())
    checked = 0
    for command, printed in steps:
        if not command.startswith("python -m perfml "):
            subprocess.run(["bash", "-c", command], check=True, cwd=tmp_path)
            continue
        argv = [str(ROOT / "models" / "default") if a == "models/default" else a
                for a in shlex.split(command)[len("python -m perfml ".split()):]]
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert code == 2 and err == printed, f"{command}\n  documented: {printed}\n  printed:    {err}"
        assert not (tmp_path / "p.csv").exists()
        checked += 1
    assert checked >= 7
