"""The Python API takes what a pandas / scikit-learn user hands it, as the CLI does.

Found by a hostile-input pass on the API (sixteenth session): ``predict_any`` renumbered the
rows when one sub-model answered them all (``df["pred"] = out["predicted_ms"]`` then put
NaN or another row's prediction on every row); ``RuntimeRegressor`` gave another number
for a board named by an alias ('Tesla K40c' vs 'Tesla-K40'), used a launch of 0, -16 or
16.5 threads silently, and crashed on a duplicated index, on an empty frame or (with the
hgb learner) on a feature no training row has; a numpy array gave an AttributeError.
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


APPS = pd.DataFrame({"board": ["GTX-980", "Tesla-K40", "H100-SXM"], "app_id": ["vectorAdd", "matMul_gpu", "dotProd"],
                     "input_size": [16_777_216, 4096, 16_777_216]})
OPS = pd.DataFrame({"board": ["A100-PCIe-40GB", "Tesla-T4"], "op": ["add", "softmax"], "B": [1, 1], "H": [1024, 2048]})


@pytest.mark.parametrize("index", [[10, 5, 7], ["a", "b", "c"], [1, 1, 2],
                                   pd.MultiIndex.from_tuples([(1, "x"), (2, "y"), (3, "z")])])
def test_predict_any_keeps_the_callers_index_and_row_order(bundle, index):
    from perfml.learned.bundle import predict_any

    plain = predict_any(bundle, APPS, "q")
    out = predict_any(bundle, APPS.set_axis(index), "q")
    assert out.index.equals(pd.Index(index) if not isinstance(index, pd.MultiIndex) else index)
    np.testing.assert_array_equal(out["predicted_ms"].to_numpy(), plain["predicted_ms"].to_numpy())
    # what a pandas user does next: the column lands on its own rows
    frame = APPS.set_axis(index).assign(pred=out["predicted_ms"])
    np.testing.assert_array_equal(frame["pred"].to_numpy(), plain["predicted_ms"].to_numpy())


def test_predict_any_keeps_the_index_of_operator_rows_and_of_mixed_rows(bundle):
    from perfml.learned.bundle import predict_any

    ops = OPS.set_axis(["r1", "r2"])
    assert predict_any(bundle, ops, "ops").index.tolist() == ["r1", "r2"]
    mixed = pd.concat([APPS.set_axis([10, 5, 7]), ops])
    assert predict_any(bundle, mixed, "mixed").index.tolist() == [10, 5, 7, "r1", "r2"]


@pytest.mark.parametrize("queries", [APPS.to_numpy(), APPS.to_dict("list"), None])
def test_predict_any_refuses_what_is_not_a_frame_with_a_typed_error(bundle, queries):
    from perfml.learned.bundle import predict_any

    with pytest.raises(QueryValidationError, match="expected a pandas DataFrame of query rows"):
        predict_any(bundle, queries, "q")


def test_a_numpy_boolean_size_is_shown_as_the_user_wrote_it(bundle):
    from perfml.learned.bundle import predict_any

    q = pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": [True]})
    with pytest.raises(QueryValidationError, match=r"column input_size: expected a finite integer, found True;"):
        predict_any(bundle, q, "q")


@pytest.mark.parametrize("name", ["tesla-k40", " Tesla-K40", "Tesla K40c"])
def test_a_board_named_by_an_alias_gets_the_boards_prediction(bundle, name):
    model = bundle.models["described"]
    row = {"app_id": ["matMul_gpu"], "input_size": [4096]}
    assert model.predict(pd.DataFrame({"board": [name], **row})) == model.predict(pd.DataFrame({"board": ["Tesla-K40"], **row}))


@pytest.mark.parametrize("block_x", [0, -16, 4096, 16.5, "abc", np.inf])
def test_a_launch_no_gpu_runs_is_refused_by_the_estimator(bundle, block_x):
    model = bundle.models["described"]
    row = pd.DataFrame({"board": ["Tesla-K40"], "app_id": ["matMul_gpu"], "input_size": [4096], "block_x": [block_x]})
    # the row is named by its board, app and size too: a row number of a filtered frame means nothing to the user
    with pytest.raises(DatasetSchemaError, match=r"row 1 \(board Tesla-K40, app_id matMul_gpu, input_size 4096\) "
                                                 r"has block_x = .*expected a whole number in \[1, 1,024\]"):
        model.predict(row)


def test_a_frame_changed_in_place_after_a_prediction_is_checked_again(bundle):
    """A call checks its frame once and hands it on (perfml.closed_form._inputs.one_check_per_frame):
    the memory of that check ends with the call, so the same object, changed in place, is
    refused by the next call."""
    from perfml.learned.bundle import predict_any

    model = bundle.models["described"]
    row = pd.DataFrame({"board": ["Tesla-K40"], "app_id": ["matMul_gpu"], "input_size": [4096.0], "block_x": [16.0]})
    assert np.isfinite(model.predict(row)).all() and np.isfinite(model.predict_transfer(row)).all()
    row.loc[0, "block_x"] = -16.0
    for predict in (model.predict, model.predict_transfer, model.measured_ms):
        with pytest.raises(DatasetSchemaError, match="has block_x = -16"):
            predict(row)
    query = APPS.head(1).copy()
    predict_any(bundle, query, "q")
    query.loc[query.index[0], "input_size"] = -1
    with pytest.raises(QueryValidationError, match="input_size"):
        predict_any(bundle, query, "q")


def test_inside_one_call_a_checked_frame_is_not_checked_again(monkeypatch):
    """The memory of :func:`check_frame` holds inside :func:`one_check_per_frame` only, for the
    object it returned and as many required columns; outside, every call checks."""
    from perfml.closed_form import _inputs

    calls = []
    checked = _inputs._checked_frame
    monkeypatch.setattr(_inputs, "_checked_frame", lambda X, required, who: calls.append(who) or checked(X, required, who))
    frame = pd.DataFrame({"board": ["Tesla-K40"], "app_id": ["matMul_gpu"], "input_size": [4096]})
    for _ in range(2):
        _inputs.check_frame(frame, ("board",), "outside")
    assert calls == ["outside", "outside"]
    calls.clear()
    with _inputs.one_check_per_frame():
        same = _inputs.check_frame(frame, ("board", "app_id"), "first")
        _inputs.check_frame(same, ("board",), "fewer columns")
        _inputs.check_frame(same, ("board", "app_id", "input_size"), "more columns")
        _inputs.check_frame(frame.copy(), ("board",), "another object")
        with _inputs.one_check_per_frame():  # an inner call shares the outer call's memory
            _inputs.check_frame(same, ("board",), "inner")
    assert calls == ["first", "more columns", "another object"]
    calls.clear()
    _inputs.check_frame(same, ("board",), "after")
    assert calls == ["after"]


def test_an_empty_launch_cell_is_the_kernels_default_launch(bundle):
    model = bundle.models["described"]
    row = {"board": ["Tesla-K40"], "app_id": ["matMul_gpu"], "input_size": [4096]}
    assert model.predict(pd.DataFrame({**row, "block_x": [np.nan]})) == model.predict(pd.DataFrame(row))


def test_a_duplicated_index_predicts_as_a_fresh_one(bundle):
    model = bundle.models["described"]
    X = APPS.iloc[:2]
    np.testing.assert_array_equal(model.predict(X.set_axis([1, 1])), model.predict(X))


def _rows(n_boards: int, per_board: int) -> pd.DataFrame:
    from perfml.datasets import load_runtimes

    rt = load_runtimes(data_home=shared_data_home())
    rt = rt[rt.app_id.isin(["vectorAdd", "matMul_gpu"])]
    boards = sorted(rt.board.unique())[:n_boards]
    return rt[rt.board.isin(boards)].groupby("board").head(per_board).reset_index(drop=True)


@pytest.mark.parametrize("learner", ["hgb", "xgboost"])
@pytest.mark.parametrize("n_boards, per_board", [(1, 20), (2, 1)])
def test_few_training_rows_fit_with_either_learner(learner, n_boards, per_board):
    """hgb (scikit-learn) could not bin a feature missing in every training row."""
    from perfml.learned.regressors import RuntimeRegressor

    X = _rows(n_boards, per_board)
    model = RuntimeRegressor(learner=learner, target="log", analytical=False, profiles=False,
                             data_home=shared_data_home()).fit(X, X["time_ms_median"])
    assert np.all(np.isfinite(model.predict(X))) and np.all(model.predict(X) > 0)


def test_fitting_no_rows_is_a_typed_error():
    from perfml.learned.regressors import RuntimeRegressor

    X = _rows(1, 1).iloc[:0]
    with pytest.raises(DatasetSchemaError, match="no training rows"):
        RuntimeRegressor(learner="hgb", target="log", analytical=False, profiles=False,
                         data_home=shared_data_home()).fit(X, X["time_ms_median"])


def test_the_empty_column_step_changes_nothing_else():
    from perfml.learned.regressors import EmptyColumnsAsZero

    X = np.array([[1.0, np.nan, np.nan], [2.0, np.nan, 3.0]])
    step = EmptyColumnsAsZero().fit(X)
    np.testing.assert_array_equal(step.transform(X), [[1.0, 0.0, np.nan], [2.0, 0.0, 3.0]])
    np.testing.assert_array_equal(step.transform([[5.0, 7.0, np.nan]]), [[5.0, 0.0, np.nan]])
    assert np.isnan(X[0, 1])  # the caller's array untouched


# --- found by the nineteenth session's API pass ----------------------------------------------

@pytest.mark.parametrize("app_id", ["nosuchapp", "vectoradd "])
def test_the_estimator_refuses_a_kernel_it_knows_nothing_of(bundle, app_id):
    """A kernel neither trained on nor described came out at 2e-8 ms from RuntimeRegressor.predict;
    its transfer value stays available (a ratio between boards), as the query path uses it."""
    from perfml.errors import UnknownAppError

    model = bundle.models["described"]
    row = pd.DataFrame({"board": ["Tesla-K40"], "app_id": [app_id], "input_size": [4096],
                        "block_x": [256], "block_y": [1], "grid_x": [16], "grid_y": [1]})
    with pytest.raises(UnknownAppError, match=rf"row 1 has app_id '{app_id}', a kernel the model was not trained on"):
        model.predict(row)
    assert np.isfinite(model.predict_transfer(row)).all()
    # a described kernel the model did not train on is still answered (from its description)
    assert model.predict(row.assign(app_id="vectorAdd"))[0] > 0


@pytest.mark.parametrize("column, value, message", [
    ("board", None, r"row 2 has board = (None|nan); every row names its board as text"),
    ("board", "  ", r"row 2 has board = '  '"),
    ("app_id", np.nan, r"row 2 has app_id = nan; every row names its kernel \(app_id\) as text"),
    ("input_size", True, r"input_size must be a positive whole number \(at most 2\*\*53\) in every row; row 2 has True"),
])
def test_closed_form_and_learned_estimators_refuse_an_empty_key_cell(bundle, column, value, message):
    """A row with no board or kernel fell out of the closed-form models' (board, app) groups: NaN
    predicted, and the row left out of the fit without a word; True was taken as size 1."""
    from perfml.closed_form.bsp import BSPModel
    from perfml.closed_form.roofline import RooflineModel

    X = APPS.iloc[:2].copy().astype({column: object})
    X.loc[1, column] = value
    y = np.array([1.0, 2.0])
    for model in (BSPModel(data_home=shared_data_home()), RooflineModel()):
        with pytest.raises(DatasetSchemaError, match=message):
            model.fit(X, y)
    with pytest.raises(DatasetSchemaError, match=message):
        bundle.models["described"].predict(X)


def test_board_helpers_take_a_board_name_and_refuse_what_no_launch_is():
    """occupancy('GTX-680', 256) raised AttributeError; 256.5 threads gave 9 warps per block and
    NaN registers an occupancy of 1.0."""
    from perfml.boards import get_board, occupancy, peak_bandwidth, peak_flops, wave_size
    from perfml.errors import InvalidValueError, UnknownBoardError

    board = get_board("GTX-680")
    assert occupancy("GTX-680", 256) == occupancy(board, 256)
    assert peak_flops("gtx-680") == peak_flops(board) and peak_bandwidth("GTX-680") == peak_bandwidth(board)
    assert wave_size("GTX-680", np.int64(256)) == wave_size(board, 256)
    for args in [(board, 256.5), (board, 256, float("nan")), (board, True), (board, 256, 0, -1), (board, "256")]:
        with pytest.raises(InvalidValueError, match="must be a whole number"):
            occupancy(*args)
    with pytest.raises(InvalidValueError, match="expected a Board"):
        peak_bandwidth(None)
    with pytest.raises(UnknownBoardError, match="closest names: GTX-680"):
        wave_size("GTX-6800", 256)


def test_an_operator_call_at_the_roofline_is_flagged_as_clamped(bundle):
    """The operator model stops its predictions at the roofline itself, so `pred < bound` never
    held: a GEMM written at exactly 100 % of the datasheet FP32 peak was not flagged."""
    from perfml.learned.bundle import predict_any
    from perfml.learned.operator_queries import _bounds, check_operator_queries

    q = pd.DataFrame({"board": ["Tesla-P100-PCIe", "Tesla-T4"], "op": ["bmm", "bmm"], "B": [8, 1], "M": [2048, 64],
                      "N": [2048, 64], "K": [2048, 64]})
    out = predict_any(bundle, q, "q")
    bound = _bounds(check_operator_queries(q, "q"))
    assert out["predicted_ms"].iloc[0] == pytest.approx(bound[0], rel=1e-9) and out["clamped_to_bound"].iloc[0]
    assert out["predicted_ms"].iloc[1] > 1.5 * bound[1] and not out["clamped_to_bound"].iloc[1]


def test_the_shipped_model_never_predicts_an_application_call_below_its_fastest_training_call(bundle):
    """models/default records the fastest training call of each application sub-model; a query below
    the training sizes (vectorAdd of 1,000 elements: 0.0005 ms before) is held at it and flagged."""
    from perfml.learned.bundle import predict_any
    from perfml.learned.training import training_runtimes

    rt = training_runtimes(data_home=shared_data_home())
    described = rt["app_id"].isin(bundle.models["described"].metadata_["training"]["apps"])
    assert bundle.models["described"].metadata_["training"]["min_time_ms"] == float(rt.loc[described, "measured_ms"].min())
    q = pd.DataFrame({"board": ["GTX-980", "H100-SXM", "GTX-980"], "app_id": ["vectorAdd", "vectorAdd", "vectorAdd"],
                      "input_size": [1000, 4096, 2**24]})
    out = predict_any(bundle, q, "q")
    fastest = bundle.models["described"].metadata_["training"]["min_time_ms"]
    assert (out["predicted_ms"] >= fastest).all() and (out["lower_ms"] >= fastest).all()
    assert out["clamped_to_bound"].tolist() == [True, True, False]


@pytest.mark.parametrize("params, message", [
    ({"learner": "hgb", "learner_params": {"max_iter": -1}}, r"learner_params: The 'max_iter' parameter"),
    ({"learner": "hgb", "learner_params": {"nope": 1}}, r"learner_params \['nope'\] are not all parameters of the hgb"),
    ({"random_state": "x"}, r"random_state must be an int, a numpy RandomState or None, got 'x'"),
    ({"random_state": True}, r"random_state must be"),
    ({"n_jobs": 0}, r"n_jobs must be a nonzero int"),
    ({"n_jobs": "2"}, r"n_jobs must be a nonzero int"),
])
def test_runtime_regressor_parameters_are_refused_before_any_work(params, message):
    """A bad learner parameter failed deep inside fit with scikit-learn's InvalidParameterError or a
    TypeError; n_jobs=0 and n_jobs='2' were taken."""
    from perfml.errors import EstimatorParameterError
    from perfml.learned.regressors import RuntimeRegressor

    X = _rows(2, 3)
    with pytest.raises(EstimatorParameterError, match=message):
        RuntimeRegressor(data_home=shared_data_home(), **params).fit(X, X["time_ms_median"])


def test_data_home_and_estimator_inputs_of_the_wrong_kind_are_typed_errors():
    """Text as y gave numpy's ValueError; DataHome(None) a TypeError; an unknown table name a bare
    KeyError; BSPModel(unseen='error') a bare PerfmlError with numpy reprs in it; boards=[1] was
    told to pass boards=['bmm'] and boards=[] kept no row without a word."""
    from perfml.closed_form.bsp import BSPModel
    from perfml.datasets import DataHome, load_dlops_runtimes, load_runtimes, load_table
    from perfml.errors import DataHomeError, PerfmlError, UnsupportedQueryError

    home = shared_data_home()
    with pytest.raises(DatasetSchemaError, match="y must be measured times in ms"):
        BSPModel(data_home=home).fit(APPS.iloc[:2], np.array(["abc", "x"]))
    for bad in (None, 3):
        with pytest.raises(DataHomeError, match="DataHome takes the data home's folder as a path"):
            DataHome(bad)
    with pytest.raises(KeyError) as caught:
        load_table("nope", home)
    assert isinstance(caught.value, PerfmlError) and "known: runtimes" in str(caught.value)
    rt = load_runtimes(home, source="BSPGPU")
    model = BSPModel(data_home=home, group_by=("board", "app_id"), unseen="error").fit(rt, rt["time_ms_median"])
    query = rt.iloc[:2].assign(board=["GTX-680", "H100-SXM"])
    with pytest.raises(UnsupportedQueryError, match=r"row 2 \(board H100-SXM, app_id \w+\) has no lambda"):
        model.predict(query)
    with pytest.raises(DatasetSchemaError, match=r"pass e.g. boards=\['Tesla-T4'\]"):
        load_dlops_runtimes(home, boards=[1])
    with pytest.raises(DatasetSchemaError, match=r"boards=\[\] selects nothing"):
        load_dlops_runtimes(home, boards=[])
