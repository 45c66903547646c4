"""`perfml predict` answers only what the model can vouch for (issue 14, section 3).

Query rows are checked against CUDA's launch limits (CUDA C++ Programming Guide,
"Technical Specifications per Compute Capability": at most 1024 threads per block from
compute capability 2.0, 512 before; block_z <= 64; grid_x <= 2**31 - 1 from 3.0, grid_y and
grid_z <= 65535) and the board registry (``max_threads_per_block``); sizes must be positive
finite integers; a kernel must be trained on, described, or given by --reference
(dotProd, described but never trained on, is answered with basis "description":
tests/test_predict_any_kernel.py). Sizes outside the training
range are flagged in the ``extrapolated`` column. A bad row writes nothing.

Model: a small xgboost model on a subset of the gpuperfpredict-nca runtimes of
shared/datasets (apps vectorAdd and matMul_gpu), so ``dotProd`` is an app it never saw.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml.errors import PerfmlError, QueryValidationError
from perfml.evaluation.closed_form import describable_runtimes
from perfml.learned import RuntimeRegressor
from perfml.learned.persistence import load_model, save_model
from perfml.learned.queries import OUTPUT_COLUMNS, predict_queries

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20"]
APPS = ["matMul_gpu", "vectorAdd"]
FAST = {"n_estimators": 20, "max_depth": 3}


@pytest.fixture(scope="module")
def rows():
    rt = describable_runtimes(source="gpuperfpredict-nca", data_home=HOME)
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(APPS)]
    keep = rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 3 == 0
    return rt[keep].reset_index(drop=True)


@pytest.fixture(scope="module")
def model_dir(rows, tmp_path_factory):
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=1.0, data_home=HOME).fit(rows, rows.measured_ms)
    return save_model(model, tmp_path_factory.mktemp("q") / "model", training_rows=rows)


@pytest.fixture(scope="module")
def model(model_dir):
    return load_model(model_dir, data_home=HOME)


def _predict_cli(model_dir, tmp_path, frame: pd.DataFrame, capsys):
    from perfml.cli import main

    q, out = tmp_path / "q.csv", tmp_path / "p.csv"
    frame.to_csv(q, index=False)
    code = main(["predict", "--model", str(model_dir), "--queries", str(q), "--output", str(out)])
    return code, out, capsys.readouterr().err


GOOD = {"board": "GTX-980", "app_id": "vectorAdd", "input_size": 2**20}


@pytest.mark.parametrize(
    "column, value, extra",
    [
        ("input_size", 1.5, {}),
        ("input_size", 0, {}),
        ("input_size", -1024, {}),
        ("input_size", "nan", {}),
        ("input_size", "inf", {}),
        ("input_size", "-inf", {}),
        ("input_size", "lots", {}),
        ("input_size", "", {}),
        ("input_size", 1e300, {}),
        ("input_size", 1e15, {}),  # a grid of 3.9e12 blocks: beyond CUDA's grid_x limit
        ("input_size_2", "abc", {}),
        ("input_size_2", "inf", {}),
        ("input_size_2", "nan", {}),
        ("input_size_2", -1, {}),
        ("input_size_2", 2.5, {}),
        ("block_x", 0, {}),
        ("block_x", -32, {}),
        ("block_x", 100000, {}),
        ("block_x", 2.5, {}),
        ("block_x", "wide", {}),
        ("block_y", 2048, {}),
        ("block_z", 65, {}),
        ("block_x*block_y*block_z", 64, {"block_x": 64, "block_y": 32}),
        ("grid_x", 2**31, {}),
        ("grid_y", 65536, {}),
        ("grid_z", 70000, {}),
        ("app_id", "no_such_kernel", {}),
        ("board", "RTX-9090", {}),
    ],
)
def test_bad_query_rows_are_refused_naming_row_column_and_value(model_dir, tmp_path, capsys, column, value, extra):
    bad = {**GOOD, **extra}
    if column != "block_x*block_y*block_z":
        bad[column] = value
    frame = pd.DataFrame([GOOD, bad, GOOD])
    code, out, err = _predict_cli(model_dir, tmp_path, frame, capsys)
    assert code == 2 and not out.exists()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "row 2" in err and column in err
    if column != "block_x*block_y*block_z" and value != "":
        shown = str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e18 else str(value)
        assert shown in err or repr(value) in err


def test_a_block_over_the_boards_limit_is_refused(model_dir, tmp_path, capsys):
    """GTX 280 (compute capability 1.3): 512 threads per block (registry), so 32 x 32 is refused."""
    frame = pd.DataFrame([{"board": "GTX-280", "app_id": "matMul_gpu", "input_size": 1024, "block_x": 32, "block_y": 32}])
    code, out, err = _predict_cli(model_dir, tmp_path, frame, capsys)
    assert code == 2 and "512" in err and "GTX-280" in err and not out.exists()
    frame.loc[0, ["block_x", "block_y"]] = [16, 16]
    code, out, err = _predict_cli(model_dir, tmp_path, frame, capsys)
    assert code == 0, err


@pytest.mark.parametrize("name", OUTPUT_COLUMNS)
def test_input_columns_named_like_outputs_are_refused(model_dir, tmp_path, capsys, name):
    frame = pd.DataFrame([{**GOOD, name: 1.0}])
    code, out, err = _predict_cli(model_dir, tmp_path, frame, capsys)
    assert code == 2 and repr(name) in err and not out.exists()


def test_extrapolation_is_flagged_with_the_training_range(model_dir, rows, tmp_path, capsys):
    lo, hi = rows[rows.app_id == "vectorAdd"].input_size.agg(["min", "max"])
    inside = {**GOOD, "board": "Quadro-K5200"}  # every figure of perfml.learned.board_range within the training boards'
    # above the training range, yet within the board's memory (vectorAdd holds 12 bytes per
    # element: 2 x 2^28 elements fit the K5200's 8 GiB, 1.25 x 2^28 the GTX-980's 4 GiB)
    frame = pd.DataFrame([{**inside, "input_size": int(lo)}, {**inside, "input_size": int(hi) * 2},
                          {**inside, "input_size": int(lo) // 4}, {**inside, "app_id": "matMul_gpu", "input_size": 1024},
                          {**GOOD, "input_size": int(hi * 1.25)}])
    code, out, err = _predict_cli(model_dir, tmp_path, frame, capsys)
    assert code == 0, err
    result = pd.read_csv(out, keep_default_na=False)
    assert result.extrapolated.tolist() == [False, True, True, False, True]
    assert result.extrapolation[1] == f"input_size above the training range [{int(lo)}, {int(hi)}] of app vectorAdd"
    assert result.extrapolation[2].startswith("input_size below the training range")
    assert result.extrapolation[0] == result.extrapolation[3] == ""
    # the GTX-980 is beyond the three training boards (FP32 rate, SMs, L2): both reasons, one after the other
    assert result.extrapolation[4].startswith(result.extrapolation[1] + "; board GTX-980: FP32 rate")
    assert np.all(np.isfinite(result.predicted_ms)) and (result.predicted_ms > 0).all()


def test_a_launch_beyond_the_apps_training_launches_is_flagged(model_dir, rows, tmp_path, capsys):
    from perfml.learned.persistence import read_manifest

    runs = rows[rows.app_id == "vectorAdd"]
    threads = (runs.block_x * runs.block_y.fillna(1)).agg(["min", "max"])
    recorded = read_manifest(model_dir)["training"]["launch"]["vectorAdd"]
    assert recorded["threads_per_block"] == [float(threads["min"]), float(threads["max"])]
    n = int(runs.input_size.median())
    seen = runs.iloc[0]
    inside = {**GOOD, "board": "Quadro-K5200", "input_size": n}
    frame = pd.DataFrame([
        {**inside, "block_x": int(seen.block_x), "block_y": 1, "grid_x": int(seen.grid_x), "grid_y": 1},
        {**inside, "block_x": 32, "block_y": 1, "grid_x": 2**31 - 1, "grid_y": 65535},  # far beyond any training grid
        inside,  # no launch given: the description's
    ])
    code, out, err = _predict_cli(model_dir, tmp_path, frame, capsys)
    assert code == 0, err
    result = pd.read_csv(out, keep_default_na=False)
    assert result.extrapolated.tolist() == [False, True, False], result.extrapolation.tolist()
    lo, hi = recorded["blocks"]
    assert f"blocks above the training range [{int(lo)}, {int(hi)}] of app vectorAdd" in result.extrapolation[1]


def test_a_non_finite_prediction_is_an_error_naming_the_row(model, monkeypatch):
    frame = pd.DataFrame([GOOD, GOOD])
    monkeypatch.setattr(model, "predict_transfer", lambda q: np.array([1.0, math.inf]))
    with pytest.raises(QueryValidationError, match=r"row 2 .*inf"):
        predict_queries(model, frame, "q.csv")


def test_a_frame_with_a_repeated_index_label_is_answered_row_for_row(model):
    # two frames concatenated in Python repeat their labels; the launch check matched rows
    # by label and stopped with pandas' InvalidIndexError instead of answering
    first = pd.DataFrame([{**GOOD, "note": "a"}, {**GOOD, "input_size": 2**22, "note": "b"}])
    frame = pd.concat([first.iloc[:1], first.iloc[1:].set_axis([0])])
    assert not frame.index.is_unique
    out = predict_queries(model, frame, "q.csv")
    assert out.index.tolist() == [0, 0] and out["note"].tolist() == ["a", "b"]
    assert out["predicted_ms"].tolist() == predict_queries(model, first, "q.csv")["predicted_ms"].tolist()


# -- the whole class: random query frames --------------------------------------------------------
_SIZES = st.one_of(
    st.integers(min_value=2**10, max_value=2**26),
    st.sampled_from([1.5, 0, -1, "nan", "inf", "x", 1e300, 1e15, "", 2**40, 3.0]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)
_BLOCKS = st.one_of(st.sampled_from([None, 16, 32, 256, 1024, 0, -32, 100000, 1.5, "a", 2048]), st.integers(-5, 5000))
_GRIDS = st.one_of(st.sampled_from([None, 1, 64, 65535, 65536, 2**31 - 1, 2**31, -1, 0.5]), st.integers(0, 10**6))
_ROW = st.fixed_dictionaries({
    "board": st.sampled_from(["GTX-680", "H100-SXM", "Tesla K20c", "GTX-280", "RTX-9090", ""]),
    "app_id": st.sampled_from(["vectorAdd", "matMul_gpu", "dotProd", "nope"]),
    "input_size": _SIZES,
    "block_x": _BLOCKS,
    "block_y": _BLOCKS,
    "grid_y": _GRIDS,
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_ROW, min_size=1, max_size=6), st.sampled_from([(), ("block_x",), ("block_y", "grid_y"), ("block_x", "block_y", "grid_y")]))
def test_random_queries_give_a_complete_answer_or_a_typed_error(model_dir, tmp_path_factory, rows_, keep):
    from perfml.cli import main

    tmp = tmp_path_factory.mktemp("hq")
    frame = pd.DataFrame(rows_)[["board", "app_id", "input_size", *keep]]
    frame.to_csv(tmp / "q.csv", index=False)
    out = tmp / "p.csv"
    code = main(["predict", "--model", str(model_dir), "--queries", str(tmp / "q.csv"), "--output", str(out)])
    assert code in (0, 2)
    assert [p.name for p in tmp.iterdir() if p.name != "q.csv"] == (["p.csv"] if code == 0 else [])
    if code == 0:
        result = pd.read_csv(out)
        assert len(result) == len(frame)
        assert np.all(np.isfinite(result.predicted_ms)) and (result.predicted_ms > 0).all()
        assert result.extrapolated.dtype == bool


def test_library_errors_are_typed(model):
    """Directly through the library too: every refusal is a PerfmlError, never another type."""
    for bad in ({"input_size": 1.5}, {"block_x": 0}, {"app_id": "no_such_kernel"}):
        with pytest.raises(PerfmlError):
            predict_queries(model, pd.DataFrame([{**GOOD, **bad}]), "q.csv")


@pytest.mark.parametrize("size", [0, -5, 10**15, 10**20])
def test_predict_lambda_refuses_sizes_outside_cuda_limits(size):
    """`perfml predict-lambda --size`: 0, negative, or a size whose launch exceeds CUDA's grid limit."""
    from perfml.learned.lambda_unseen import predict_lambda

    with pytest.raises(QueryValidationError, match=r"--size .* for app vectorAdd on H100-SXM.*input_size"):
        predict_lambda("H100-SXM", ["vectorAdd"], [size], data_home=HOME)


@pytest.mark.parametrize("n", ["0", "100000000"])
def test_tune_trials_are_bounded(n, capsys):
    from perfml.cli import main

    assert main(["tune", "--n-trials", n, "--no-mlflow"]) == 2
    assert "n-trials" in capsys.readouterr().err


def test_a_directory_as_queries_is_a_typed_error(model_dir, tmp_path, capsys):
    from perfml.cli import main

    assert main(["predict", "--model", str(model_dir), "--queries", str(tmp_path), "--output", str(tmp_path / "p.csv")]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("text, match", [
    # one field more than the header in the first row: pandas took it as an index and dropped it
    ("board,app_id,input_size\nrow1,GTX-980,vectorAdd,4096\n", "more fields than the header"),
    # an unquoted comma in a note shifts the row's cells
    ("board,app_id,input_size,note\nGTX-980,vectorAdd,4096,fast, maybe\n", "more fields than the header"),
    ("board,app_id,input_size\nGTX-980,vectorAdd,4096\nGTX-980,vectorAdd,4096,x\n", "Expected 3 fields in line 3, saw 4"),
])
def test_a_row_with_more_fields_than_the_header_is_refused_not_shifted(tmp_path, text, match):
    from perfml.errors import DatasetSchemaError

    with pytest.raises(DatasetSchemaError, match=match):
        _read_text(tmp_path, text)


def test_a_short_row_reads_as_empty_cells(tmp_path):
    rows = _read_text(tmp_path, "board,app_id,input_size\nGTX-980,vectorAdd\n").to_dict("records")
    assert rows == [{"board": "GTX-980", "app_id": "vectorAdd", "input_size": ""}]


def _read_text(tmp_path, text: str) -> pd.DataFrame:
    """``text`` as a query file, read as perfml predict reads it."""
    from perfml.learned.queries import read_query_csv

    (tmp_path / "q.csv").write_text(text)
    return read_query_csv(tmp_path / "q.csv")
