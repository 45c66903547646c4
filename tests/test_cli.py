"""The command line: JSON contracts, typed errors with exit status 2, lazy heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perfml.cli import main


def test_fit_lambda_json_contract(capsys):
    assert main(["fit-lambda", "--source", "BSPGPU", "--board", "GTX-680", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"board", "app_id", "lambda", "n_sizes", "within_band"} <= set(rows[0])
    mmgc = [r for r in rows if r["app_id"] == "matMul_gpu"][0]
    # Seed 003 Table II: 24 for GTX-680 MMGC (with the BSPGPU script constants).
    assert mmgc["lambda"] == pytest.approx(24, rel=0.10)


def test_evaluate_json(capsys):
    assert main(["evaluate", "--model", "roofline", "--source", "BSPGPU", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["overall"][0]["n"] > 0 and {"per_board", "per_app"} <= set(out)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit-lambda", "--board", "GTX-6800"], "GTX-680"),
        (["fit-lambda", "--app", "matmul"], "did you mean"),
        (["fit-lambda", "--data-home", "/nonexistent/dir"], "does not exist"),
        (["evaluate", "--model", "gpt"], "choose one of"),
        (["fit-lambda", "--source", "nowhere"], "choose one of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_importing_the_cli_does_not_import_heavy_libraries():
    code = "import sys, perfml.cli; print(sorted(m for m in ('cupy', 'xgboost', 'mlflow', 'optuna') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
