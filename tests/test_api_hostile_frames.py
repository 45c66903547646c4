"""Frames a pandas user really builds, given to every estimator of the Python API.

Found by a hostile-input pass on the API (thirty-second session): a repeated or MultiIndex
column name gave AttributeError / KeyError / ValueError from pandas (or "unknown board
'board'"); a nullable ``boolean`` size, launch or operator dimension was read as 1; text in
``input_size_2`` raised numpy's error and -1 was ignored; a fractional size was used as
given; ``grid_z`` and ``block_z`` were ignored by the application models (100 in grid_z left
the prediction as it was); an operator row's dimension its op does not take moved the
prediction of ``OperatorRegressor.predict``; ``roofline_bound_ms`` of a Series raised
AttributeError; 20,000 query rows were checked one Python loop iteration at a time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import needs_data_home, shared_data_home
from perfml.errors import DatasetSchemaError, QueryValidationError

pytestmark = needs_data_home()
MODEL = Path(__file__).resolve().parents[1] / "models" / "default"


@pytest.fixture(scope="module")
def bundle():
    from perfml.learned.bundle import load_predictor

    return load_predictor(MODEL, data_home=shared_data_home())


def _app(**columns) -> pd.DataFrame:
    return pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": [1_000_000], **columns})


def _op(**columns) -> pd.DataFrame:
    return pd.DataFrame({"board": ["A100-40GB"], "op": ["add"], "B": [8], "H": [4096], **columns})


def _estimators(bundle):
    """Every estimator of application rows, as a function of X."""
    from perfml.closed_form.bsp import BSPModel
    from perfml.closed_form.roofline import RooflineModel, roofline_bound_ms

    model = bundle.models["described"]
    return {"RuntimeRegressor.predict": model.predict, "predict_transfer": model.predict_transfer,
            "measured_ms": model.measured_ms, "BSPModel.model_terms": BSPModel(data_home=shared_data_home()).model_terms,
            "RooflineModel.roofline_terms": RooflineModel().roofline_terms, "roofline_bound_ms": roofline_bound_ms}


@pytest.mark.parametrize("frame, message", [
    (pd.concat([_app(), _app()[["input_size"]]], axis=1), r"column\(s\) input_size more than once"),
    (pd.concat([_app(), _app()[["board"]]], axis=1), r"column\(s\) board more than once"),
    (_app().set_axis(pd.MultiIndex.from_tuples([("board", ""), ("app_id", ""), ("input_size", "")]), axis=1),
     "MultiIndex columns"),
], ids=["size twice", "board twice", "MultiIndex"])
def test_repeated_or_multiindex_column_names_are_refused_by_every_entry_point(bundle, frame, message):
    from perfml.learned.bundle import predict_any

    for name, predict in _estimators(bundle).items():
        if name == "roofline_bound_ms" and "MultiIndex" in message:
            continue  # it reads board, app_id and input_size by name alone: answered as the flat frame
        with pytest.raises(DatasetSchemaError, match=message):
            predict(frame)
    with pytest.raises(QueryValidationError, match=message):
        predict_any(bundle, frame, "q")
    ops = pd.concat([_op(), _op()[["B"]]], axis=1)
    with pytest.raises(DatasetSchemaError, match=r"column\(s\) B more than once"):
        bundle.models["dlops"].predict(ops)
    with pytest.raises(QueryValidationError, match=r"column\(s\) B more than once"):
        predict_any(bundle, ops, "q")


@pytest.mark.parametrize("column", ["input_size", "block_x"])
def test_a_nullable_boolean_size_or_launch_is_no_number(bundle, column):
    frame = _app(**{column: pd.array([True], dtype="boolean")})
    for name, predict in _estimators(bundle).items():
        if name == "roofline_bound_ms" and column == "block_x":
            continue  # the bound reads no launch
        with pytest.raises(DatasetSchemaError, match=f"{column}.*True"):
            predict(frame)


@pytest.mark.parametrize("column, value, message", [
    ("input_size", 1048576.5, r"input_size must be a positive whole number \(at most 2\*\*53\) in every row; row 1 has 1048576.5"),
    ("input_size", 1e20, r"input_size must be a positive whole number \(at most 2\*\*53\) in every row; row 1 has 1e\+20"),
    ("input_size_2", "abc", r"input_size_2 must be a whole number >= 0 \(at most 2\*\*53\) in every row that gives it; "
                            r"row 1 has 'abc'"),
    ("input_size_2", -1, r"input_size_2 must be a whole number >= 0"),
    # compared as a float, 2**53 + 1 was 2**53, within the limit, and used as 2**53 (thirty-third session)
    ("input_size", 2**53 + 1, r"at most 2\*\*53\) in every row; row 1 has 9007199254740993"),
    ("input_size", "9007199254740993", r"at most 2\*\*53\) in every row; row 1 has '9007199254740993'"),
    ("input_size_2", 2**53 + 1, r"input_size_2 must be a whole number >= 0 \(at most 2\*\*53\)"),
])
def test_sizes_are_whole_numbers_for_every_estimator(bundle, column, value, message):
    """1e20 was refused by the BSP model as 'grid_x = 3.9e+17', a column the user never gave."""
    for name, predict in _estimators(bundle).items():
        if name == "roofline_bound_ms" and column == "input_size_2":
            continue  # the bound reads no second size
        with pytest.raises(DatasetSchemaError, match=message):
            predict(_app(**{column: [value]}))
    # an empty second size and 0 (the data home's "none") are answered as before
    model = bundle.models["described"]
    assert model.predict(_app(input_size_2=[np.nan])) == model.predict(_app()) == model.predict(_app(input_size_2=[0]))


@pytest.mark.parametrize("columns, message", [
    ({"M": [5]}, r"row 1, column M: op add takes B, H, not M \(found 5\)"),
    ({"K": [7]}, r"row 1, column K: op add takes B, H, not K"),
    ({"B": pd.array([True], dtype="boolean")}, r"row 1, column B: True is no dimension"),
])
def test_the_operator_estimator_refuses_dimensions_its_op_does_not_read(bundle, columns, message):
    """OperatorRegressor.predict took M of an add into its dimension features: 0.031 ms became 0.032."""
    with pytest.raises(DatasetSchemaError, match=message):
        bundle.models["dlops"].predict(_op(**columns))
    assert np.isfinite(bundle.models["dlops"].predict(_op(K=[np.nan]))).all()  # an empty cell is no dimension


@pytest.mark.parametrize("value", [0, -5, 2.5, 2048])
def test_the_operator_estimator_refuses_a_launch_cuda_does_not_run(bundle, value):
    """The operator rows' launch columns are carried, not read: OperatorRegressor.predict answered
    block_x = 0 (perfml predict refused it). Now refused, as the application estimators refuse it."""
    with pytest.raises(DatasetSchemaError, match=rf"OperatorRegressor: row 1 \(board A100-40GB\) has block_x = "
                                                 rf"{value}; expected a whole number in \[1, 1,024\]"):
        bundle.models["dlops"].predict(_op(block_x=[value]))
    assert np.isfinite(bundle.models["dlops"].predict(_op(block_x=[256]))).all()


def test_measured_ms_refuses_an_unknown_board_as_predict_does(bundle):
    """A misspelt board gave NaN ("no measurement"), where predict refused it by name."""
    from perfml.errors import UnknownBoardError

    model = bundle.models["described"]
    for answer in (model.predict, model.measured_ms):
        with pytest.raises(UnknownBoardError, match="unknown board 'GTX-9800'"):
            answer(_app(board=["GTX-9800"]))
    assert np.isnan(model.measured_ms(_app(board=["H100-SXM"]))).all()  # a known board without the run: no measurement


def test_the_operator_estimator_numbers_rows_from_one(bundle):
    frame = pd.concat([_op(), _op().assign(board=None)], ignore_index=True)
    with pytest.raises(DatasetSchemaError, match=r"row 2: column 'board' is empty"):
        bundle.models["dlops"].predict(frame)


@pytest.mark.parametrize("value", [_app().iloc[0], {"board": "GTX-980", "app_id": "vectorAdd", "input_size": 1}])
def test_the_roofline_bound_refuses_what_is_not_a_frame(value):
    from perfml.closed_form.roofline import roofline_bound_ms

    with pytest.raises(DatasetSchemaError, match="takes a pandas DataFrame"):
        roofline_bound_ms(value)


@pytest.mark.parametrize("column, fold", [("grid_z", "grid_y"), ("block_z", "block_y")])
def test_a_third_launch_dimension_is_refused_where_the_model_answers(bundle, column, fold):
    """Every training run is two-dimensional and the models read x and y only: grid_z = 100 left
    vectorAdd's prediction as it was, grid_y = 100 scaled it more than fiftyfold (checked here)."""
    from perfml.learned.bundle import predict_any

    with pytest.raises(QueryValidationError, match=rf"column {column}: perfml's models know two-dimensional launches "
                                                   rf"only .*give the same launch with {fold} x {column} in {fold}"):
        predict_any(bundle, _app(block_x=[256], grid_x=[3907], **{column: [4]}), "q")
    one = predict_any(bundle, _app(block_x=[256], grid_x=[3907], **{column: [1]}), "q")
    plain = predict_any(bundle, _app(block_x=[256], grid_x=[3907]), "q")
    assert one["predicted_ms"].iloc[0] == plain["predicted_ms"].iloc[0]
    folded = predict_any(bundle, _app(block_x=[256], grid_x=[3907], grid_y=[100]), "q")  # the fix the message names
    assert folded["predicted_ms"].iloc[0] > 50 * plain["predicted_ms"].iloc[0]


def test_a_partly_given_launch_is_flagged_by_the_launch_it_runs(bundle):
    """grid_y = 5 alone was flagged as '5 blocks below the training range': the kernel runs its
    default grid_x times 5; grid_z = 1 alone read as one block."""
    from perfml.learned.bundle import predict_any

    for columns in ({"grid_y": [5]}, {"grid_z": [1]}, {"block_z": [1]}):
        out = predict_any(bundle, _app(**columns), "q")
        assert "blocks below" not in out["extrapolation"].iloc[0] and "threads per block below" not in \
            out["extrapolation"].iloc[0], (columns, out["extrapolation"].iloc[0])
    # a launch given in full and beyond the training range is still flagged
    out = predict_any(bundle, _app(block_x=[32], block_y=[1], grid_x=[31250], grid_y=[1]), "q")
    assert "32 threads per block below the training range" in out["extrapolation"].iloc[0]


def test_many_query_rows_are_checked_per_board_not_per_row(bundle, monkeypatch):
    """The launch check looked each row's board up (20,000 rows: 3 s of 5 s); it looks each board
    up once. Counted, not timed: the registry's lookups per call stay under the number of rows."""
    from perfml.boards import _registry
    from perfml.learned.bundle import predict_any

    calls = []
    resolve = _registry.Registry.resolve
    monkeypatch.setattr(_registry.Registry, "resolve", lambda self, name: calls.append(name) or resolve(self, name))
    rows = pd.concat([_app(), _app(board=["Tesla-K40"])] * 500, ignore_index=True)
    out = predict_any(bundle, rows, "q")
    assert len(out) == 1000 and np.isfinite(out["predicted_ms"]).all()
    assert len(calls) < 200, len(calls)


def test_a_float32_level_is_the_level_it_rounds_to():
    """np.float32(0.9) is 0.899999976: it was refused as no level at all."""
    from perfml.errors import IntervalLevelError
    from perfml.learned.intervals import check_level

    assert check_level(np.float32(0.9)) == 0.90 and check_level(np.float32(0.95)) == 0.95
    for bad in (True, 0.905, np.float32(0.905)):
        with pytest.raises(IntervalLevelError):
            check_level(bad)


@pytest.mark.parametrize("rename", [{"board": "Board"}, {"app_id": " app_id"}, {"input_size": "INPUT_SIZE"}])
def test_a_column_name_in_another_case_or_with_spaces_is_named_in_the_message(bundle, rename):
    from perfml.learned.bundle import predict_any

    frame = _app().rename(columns=rename)
    (old, new), = rename.items()
    shown = rf"\(found {new!r} for {old}: column names are exact, case and spaces included\)"
    with pytest.raises(DatasetSchemaError, match=shown):
        predict_any(bundle, frame, "q")
    with pytest.raises(DatasetSchemaError, match=shown):
        bundle.models["described"].predict(frame)
