"""A query of a run its own board ran in the training rows is answered with that measurement
(issue 10 §2: what perfml knows of a kernel comes from, second, "measurements of the same
kernel on the training boards").

The features of a training board's row leave that board out, so that a training row sees
what a row of an unseen board sees; the model alone therefore missed its own boards'
measurements (``experiments/measured_runs.py``). Model: a small xgboost fit on the nine
applications' and two Rodinia kernels' runs of shared/datasets/runtimes.csv.gz on four
boards, a quarter of the sizes, with some runs measured twice (the second time 1.21x the
first, synthetic: the median of the two in log is 1.1x the first).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.learned.queries import measured_on_board, predict_queries
from perfml.learned.training import fit_default, training_runtimes

from conftest import needs_data_home, shared_data_home

pytestmark = needs_data_home()

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20", "Tesla-K40"]
APPS = ["matMul_gpu", "vectorAdd", "lud_perimeter", "calculate_temp"]
QUERY = ["board", "app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]
REPEAT = 1.21


@pytest.fixture(scope="module")
def rows():
    rt = training_runtimes(data_home=shared_data_home())
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(APPS)]
    rt = rt[rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 4 == 0].reset_index(drop=True)
    again = rt.iloc[::7].assign(measured_ms=lambda d: d.measured_ms * REPEAT)  # synthetic repeats
    return pd.concat([rt, again], ignore_index=True)


@pytest.fixture(scope="module")
def model_dir(rows, monkeypatch_module, tmp_path_factory):
    """The fit, saved (so every test also reads the record back from the saved tables)."""
    from perfml.learned import regressors
    from perfml.learned.persistence import save_model

    monkeypatch_module.setitem(regressors._DEFAULTS, "xgboost",
                               {**regressors._DEFAULTS["xgboost"], "n_estimators": 20, "max_depth": 3})
    model, calibration, _ = fit_default(rows, data_home=shared_data_home())
    return save_model(model, tmp_path_factory.mktemp("measured") / "model", training_rows=rows,
                      extra={"intervals": calibration})


@pytest.fixture(scope="module")
def model(model_dir):
    from perfml.learned.persistence import load_model

    return load_model(model_dir, data_home=shared_data_home())


def _queries(frame: pd.DataFrame) -> pd.DataFrame:
    """Query rows (text cells, as read from a CSV) of the runs of ``frame``."""
    q = frame[QUERY].astype(object).where(frame[QUERY].notna(), "")
    return q.map(lambda v: f"{v:.0f}" if isinstance(v, float) else str(v)).reset_index(drop=True)


def _own_times(rows: pd.DataFrame, runs: pd.DataFrame) -> np.ndarray:
    """The median in log of each run's training times on its board."""
    key = ["board", "app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]
    med = rows.groupby(key).measured_ms.apply(lambda t: float(np.exp(np.median(np.log(t)))))
    return np.array([med.loc[tuple(r)] for r in runs[key].itertuples(index=False)])


def test_a_training_run_on_its_own_board_is_answered_with_its_measurement(model, rows):
    runs = rows.drop_duplicates(["board", "app_id", "input_size", "grid_x"]).sample(60, random_state=0)
    out = predict_queries(model, _queries(runs), "q.csv")
    assert (out["basis"] == "measured").all()
    assert out["predicted_ms"].to_numpy() == pytest.approx(_own_times(rows, runs), rel=1e-12)
    # the interval is the calibrated one around the measurement, never flagged
    assert (out["lower_ms"] < out["predicted_ms"]).all() and (out["predicted_ms"] < out["upper_ms"]).all()
    assert not out["extrapolated"].any(), out["extrapolation"].iloc[0]


def test_repeats_of_a_run_give_their_median_in_log(model, rows):
    key = ["board", "app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]
    twice = rows.groupby(key).measured_ms.transform("size") == 2
    repeated = rows[twice].drop_duplicates(key, keep="first").head(10)  # the first time of each
    assert len(repeated) == 10
    out = predict_queries(model, _queries(repeated), "q.csv")
    assert out["predicted_ms"].to_numpy() == pytest.approx(repeated["measured_ms"].to_numpy() * np.sqrt(REPEAT),
                                                           rel=1e-12)


def test_a_run_its_board_did_not_measure_is_the_models(model, rows):
    # the training sizes left out (rank % 4 != 0) and a board out of training
    rt = training_runtimes(data_home=shared_data_home())
    rt = rt[rt.app_id.isin(["vectorAdd", "matMul_gpu"])]
    other = rt[rt.board.isin(BOARDS) & ~rt.input_size.isin(rows.input_size)].head(5)
    unseen = rt[rt.board == "GTX-980"].head(5)
    q = _queries(pd.concat([other, unseen]))
    out = predict_queries(model, q, "q.csv")
    assert (out["basis"] == "training-boards").all()
    assert out["predicted_ms"].to_numpy() == pytest.approx(model.predict_transfer(
        q.replace("", np.nan).astype({c: float for c in QUERY[2:]})), rel=1e-12)


def test_a_reference_comes_before_the_training_measurement(model, rows):
    """The user's kernel of a trained name may not be the data home's: their reference wins."""
    from perfml.learned.queries import check_reference

    run = rows[(rows.app_id == "vectorAdd") & (rows.board == "GTX-680")].iloc[0]
    q = _queries(pd.DataFrame([run]).assign(board="Tesla-K40"))
    ref = check_reference(pd.DataFrame([{**{c: run[c] for c in QUERY if pd.notna(run[c])}, "time_ms": 3 * run.measured_ms}]),
                          "ref.csv")
    out = predict_queries(model, q, "q.csv", reference=ref)
    assert out["basis"].iloc[0] == "reference"


def test_not_on_the_target_board_of_the_calibrated_tier(model, rows):
    class Target:
        board = "GTX-680"

    class Characterizations:
        target = Target()

    q = rows[rows.board.isin(["GTX-680", "Tesla-K40"])].drop_duplicates(["board"])[QUERY].reset_index(drop=True)
    assert np.isfinite(measured_on_board(model, q)).all()
    model.characterizations, saved = Characterizations(), getattr(model, "characterizations", None)
    try:
        times = measured_on_board(model, q)
    finally:
        model.characterizations = saved
    assert np.isnan(times[(q["board"] == "GTX-680").to_numpy()]).all()
    assert np.isfinite(times[(q["board"] == "Tesla-K40").to_numpy()]).all()


def test_a_model_saved_before_the_record_answers_as_before(model_dir, rows):
    from perfml.learned.persistence import load_model

    old = load_model(model_dir, data_home=shared_data_home())  # its own copy: the others keep the record
    old.features_.transfer_ = old.features_.transfer_.drop(columns=["measured_log_ms"])
    out = predict_queries(old, _queries(rows.drop_duplicates(["board", "app_id"]).head(8)), "q.csv")
    assert (out["basis"] == "training-boards").all()


def test_the_cli_writes_the_measurement_and_its_basis(model_dir, rows, tmp_path, capsys):
    from perfml.cli import main

    path = model_dir
    runs = rows.drop_duplicates(["board", "app_id"]).head(6)
    _queries(runs).to_csv(tmp_path / "q.csv", index=False)
    code = main(["predict", "--model", str(path), "--queries", str(tmp_path / "q.csv"), "--output", str(tmp_path / "p.csv")])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(tmp_path / "p.csv")
    assert (got["basis"] == "measured").all()
    assert got["predicted_ms"].to_numpy() == pytest.approx(_own_times(rows, runs), rel=1e-9)


def test_the_model_is_not_run_for_the_rows_a_measurement_answers(model, rows, monkeypatch):
    real = type(model).predict_transfer
    asked = []
    monkeypatch.setattr(model, "predict_transfer", lambda X: (asked.append(list(X["board"])), real(model, X))[1])
    runs = rows[rows.app_id == "vectorAdd"].drop_duplicates(["board"]).head(3)
    unseen = runs.iloc[[0]].assign(board="GTX-980")
    out = predict_queries(model, _queries(pd.concat([runs, unseen])), "q.csv")
    assert out["basis"].tolist() == ["measured"] * 3 + ["training-boards"]
    assert asked == [["GTX-980"]]


# -- operator calls ---------------------------------------------------------------------------
OP_DIMS = ["B", "M", "N", "K", "H"]


@pytest.fixture(scope="module")
def op_rows():
    from perfml.learned.training import operator_training_rows

    rows = operator_training_rows(shared_data_home(), max_rows=3000, random_state=0)
    rows = rows[rows.op != "conv"].reset_index(drop=True)
    again = rows.iloc[::9].assign(measured_ms=lambda d: d.measured_ms * REPEAT)  # synthetic repeats
    return pd.concat([rows, again], ignore_index=True)


@pytest.fixture(scope="module")
def op_model_dir(op_rows, tmp_path_factory):
    from perfml.learned.operator_persistence import write_operator_model_files
    from perfml.learned.operators import OperatorRegressor
    from perfml.learned.training import fit_corpus

    model, calibration, _ = fit_corpus("dlops", op_rows, estimator=OperatorRegressor(
        learner_params={"n_estimators": 20, "max_depth": 3}, n_jobs=1))
    path = tmp_path_factory.mktemp("measured_ops") / "model"
    path.mkdir()
    write_operator_model_files(model, path, training_rows=op_rows, extra={"intervals": calibration})
    return path


def _op_queries(frame: pd.DataFrame) -> pd.DataFrame:
    q = frame[["board", "op", *OP_DIMS]].astype(object).where(frame[["board", "op", *OP_DIMS]].notna(), "")
    return q.map(lambda v: f"{v:.0f}" if isinstance(v, float) else str(v)).reset_index(drop=True)


def test_an_operator_call_its_board_ran_is_answered_with_its_measurement(op_model_dir, op_rows, monkeypatch):
    from perfml.learned.operator_persistence import load_operator_model
    from perfml.learned.operator_queries import predict_operator_queries

    model = load_operator_model(op_model_dir)
    key = ["board", "op", *OP_DIMS]
    count = op_rows.fillna({c: -1 for c in OP_DIMS}).groupby(key).measured_ms.transform("size")
    once = op_rows[count == 1].head(12)
    twice = op_rows[count == 2].drop_duplicates(key, keep="first").head(6)  # the first time of each
    other = once.head(3).assign(board="GTX-980")  # a board out of training: the model
    real = type(model).predict
    asked = []
    monkeypatch.setattr(model, "predict", lambda X: (asked.append(len(X)), real(model, X))[1])
    out = predict_operator_queries(model, _op_queries(pd.concat([once, twice, other])), "q.csv")
    assert out["basis"].tolist() == ["measured"] * 18 + ["training-boards"] * 3
    assert asked == [3]  # the model ran for the three rows of the other board only
    expected = np.concatenate([once.measured_ms.to_numpy(), twice.measured_ms.to_numpy() * np.sqrt(REPEAT)])
    assert out["predicted_ms"].iloc[:18].to_numpy() == pytest.approx(expected, rel=1e-12)


def test_an_operator_model_saved_before_the_record_answers_with_the_model(op_model_dir, op_rows, tmp_path):
    import json
    import shutil

    from perfml.learned.operator_persistence import load_operator_model
    from perfml.learned.operator_queries import predict_operator_queries
    from perfml.learned.persistence import write_manifest

    old = tmp_path / "old"
    shutil.copytree(op_model_dir, old)
    (old / "features" / "measured.parquet").unlink()
    meta = json.loads((old / "perfml-model.json").read_text())
    write_manifest(old, {k: v for k, v in meta.items() if k not in ("files", "manifest_sha256")})
    out = predict_operator_queries(load_operator_model(old), _op_queries(op_rows.head(5)), "q.csv")
    assert (out["basis"] == "training-boards").all()
