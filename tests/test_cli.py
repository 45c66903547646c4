"""The command line: JSON contracts, typed errors with exit status 2, lazy heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perfml.cli import main

from conftest import needs_data_home


@needs_data_home()
def test_fit_lambda_json_contract(capsys):
    assert main(["fit-lambda", "--source", "BSPGPU", "--board", "GTX-680", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"board", "app_id", "lambda", "n_sizes", "within_band"} <= set(rows[0])
    mmgc = [r for r in rows if r["app_id"] == "matMul_gpu"][0]
    # Seed 003 Table II: 24 for GTX-680 MMGC (with the BSPGPU script constants).
    assert mmgc["lambda"] == pytest.approx(24, rel=0.10)


@needs_data_home()
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
@needs_data_home()
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_importing_the_cli_does_not_import_heavy_libraries():
    code = "import sys, perfml.cli; print(sorted(m for m in ('cupy', 'xgboost', 'mlflow', 'optuna') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# --- strict JSON (issue 14 section 3): no NaN / Infinity, whatever the numbers -------------


def _strict_loads(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity, as every non-Python parser does."""

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "neg": -float("inf"), "nested": [1.0, float("nan"), {"x": float("inf")}]}


class _WithDict:
    """Stands in for a result object: its ``to_dict`` carries non-finite numbers."""

    def __init__(self, **extra):
        self.extra = extra

    def to_dict(self):
        return {**_NONFINITE, **self.extra}


def _inject(monkeypatch, target: str):
    import numpy as np
    import pandas as pd

    import perfml.boards
    import perfml.characterize
    import perfml.cumapz
    import perfml.cumapz.seed004
    import perfml.diagnosis
    import perfml.diagnosis.twins

    frame = pd.DataFrame({"pair": ["a"], "ratio": [np.inf], "measured_speedup": [np.nan]})
    patches = {
        "boards": [(perfml.boards, "get_board", lambda name: _WithDict())],
        "cumapz": [(perfml.cumapz, "analyze", lambda *a, **k: _WithDict()),
                   (perfml.cumapz, "resolve_description", lambda name: type("D", (), {"title": "t"})())],
        "seed004": [(perfml.cumapz.seed004, "validate_seed004", lambda *a, **k: dict(_NONFINITE))],
        "transpose": [(perfml.cumapz.seed004, "transpose_sequence", lambda *a, **k: dict(_NONFINITE))],
        "diagnose": [(perfml.diagnosis, "diagnose", lambda *a, **k: _WithDict())],
        "twins": [(perfml.diagnosis.twins, "twin_check", lambda *a, **k: (frame, frame)),
                  (perfml.diagnosis.twins, "twin_summary", lambda table: dict(_NONFINITE))],
        "characterize": [(perfml.characterize, "reference_characterization",
                          lambda board: type("C", (), {"to_dict": lambda self: dict(_NONFINITE),
                                                       "to_json": lambda self: json.dumps(dict(_NONFINITE))})())],
    }
    for module, name, value in patches[target]:
        monkeypatch.setattr(module, name, value)


@pytest.mark.parametrize(
    "target, argv",
    [
        ("boards", ["boards", "show", "GTX-680", "--json"]),
        ("cumapz", ["cumapz", "anything", "--json"]),
        ("seed004", ["cumapz", "validate-seed004", "--json"]),
        ("transpose", ["cumapz", "transpose-sequence", "--json"]),
        ("diagnose", ["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--json"]),
        ("twins", ["diagnose", "twins", "--json"]),
        ("characterize", ["characterize", "--reference", "GTX-980", "--json"]),
    ],
)
@needs_data_home()
def test_json_output_is_strict_json_with_null_for_non_finite(monkeypatch, capsys, target, argv):
    _inject(monkeypatch, target)
    assert main(argv) == 0
    doc = _strict_loads(capsys.readouterr().out)
    flat = json.dumps(doc)
    assert "NaN" not in flat and "Infinity" not in flat
    if isinstance(doc, dict) and "nan" in doc:
        assert doc["nan"] is None and doc["inf"] is None and doc["neg"] is None
        assert doc["nested"] == [1.0, None, {"x": None}]


def test_print_json_maps_every_non_finite_kind_to_null(capsys):
    import numpy as np
    import pandas as pd

    from perfml.cli._output import print_json

    print_json({"np": np.float32("nan"), "arr": np.array([1.0, np.inf]), "frame": pd.DataFrame({"x": [-np.inf, 2.0]}),
                "na": pd.NA, "tuple": (float("nan"),), "int": np.int64(3)})
    doc = _strict_loads(capsys.readouterr().out)
    assert doc == {"np": None, "arr": [1.0, None], "frame": [{"x": None}, {"x": 2.0}], "na": None, "tuple": [None], "int": 3}


def test_cli_modules_print_json_only_through_the_strict_printer():
    """Every command prints JSON through perfml.cli._output.

    """
    from pathlib import Path

    import perfml.cli

    offenders = []
    for module in Path(perfml.cli.__file__).parent.glob("*.py"):
        if module.name == "_output.py":
            continue
        if "json.dumps(" in module.read_text():
            offenders.append(module.name)
    assert offenders == []
