"""`perfml report` on runs whose tables are not as perfml wrote them (a hostile-input pass, thirty-second session).

A finished run tagged as a perfml experiment whose ``summary.csv`` lacked ``mape`` or
``model``, or whose ``per_board.csv`` lacked ``model``, ended in an internal KeyError (exit
1); an empty ``family`` cell in a UFuncTypeError; two models of one family and tier (say
``x_characterized`` and ``x_calibrated``) collapsed to the first in the side-by-side
tables, the second's figures dropped without a word. The runs are built here with
MLflow's client (synthetic figures, in a SQLite store under ``tmp_path``).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from perfml.cli import main


def _store(tmp_path, monkeypatch, summary: str, per_board: str) -> None:
    """A SQLite store holding one finished experiment run with these two tables (CSV text)."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("odd", artifact_location=str(tmp_path / "artifacts"))
    run = client.create_run(experiment, tags={"perfml.kind": "experiment"})
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "summary.csv").write_text(summary)
    (tables / "per_board.csv").write_text(per_board)
    client.log_artifacts(run.info.run_id, str(tables))
    client.set_terminated(run.info.run_id, "FINISHED")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)


@pytest.mark.parametrize("summary, per_board, message", [
    ("model,family,tier,n\nm1,f1,spec,3\n", "board,model,mape\nA,m1,1\n", "'summary.csv' of run .* lacks column(s) mape"),
    ("tier,mape,within_band\nspec,1,0.5\n", "board,model,mape\nA,m1,1\n", "'summary.csv' of run .* lacks column(s) model"),
    # both tiers: the report reads per_board.csv for the tiers' per-board table only
    ("model,family,tier,mape,within_band\nm1,f1,spec,1,0.5\nm1_cal,f1,calibrated,1,0.5\n", "x\n1\n",
     "'per_board.csv' of run .* lacks column(s) board, model, mape"),
])
def test_a_run_table_without_the_columns_report_reads_is_one_typed_line(tmp_path, monkeypatch, capsys, summary,
                                                                         per_board, message):
    _store(tmp_path, monkeypatch, summary, per_board)
    assert main(["report", "--json"]) == 2
    err = capsys.readouterr().err  # MLflow's own log lines from building the store come first
    errors = [line for line in err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "internal error" not in err, err
    assert pd.Series(errors).str.contains(message.replace("(", r"\(").replace(")", r"\)")).all(), err


def test_an_empty_family_cell_is_the_models_own_family(tmp_path, monkeypatch, capsys):
    _store(tmp_path, monkeypatch, "model,family,tier,mape,within_band\nm1,,spec,1.5,0.5\nm1_cal,m1,calibrated,1.0,0.6\n",
           "board,model,mape\nA,m1,1.5\nA,m1_cal,1.0\n")
    assert main(["report", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tiers = pd.DataFrame(out["odd:tiers"])
    assert tiers.set_index("family").loc["m1", ["mape_spec", "mape_calibrated"]].tolist() == [1.5, 1.0]


def test_two_models_of_one_family_and_tier_both_keep_their_figures(tmp_path, monkeypatch, capsys):
    _store(tmp_path, monkeypatch,
           "model,family,tier,mape,within_band\nx,x,spec,5,0.5\nx_characterized,x,calibrated,1,0.9\n"
           "x_calibrated,x,calibrated,99,0.1\n",
           "board,model,mape\nA,x,5\nA,x_characterized,1\nA,x_calibrated,99\n")
    assert main(["report", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    calibrated = sorted(v for v in pd.DataFrame(out["odd:tiers"])["mape_calibrated"].dropna())
    assert calibrated == [1, 99]
    per_board = pd.DataFrame(out["odd:per_board_tiers"])
    assert {"x_characterized/calibrated", "x_calibrated/calibrated"} <= set(per_board.columns)
    assert sorted(per_board.filter(like="/calibrated").iloc[0].tolist()) == [1, 99]
