"""The operators' launch floor in the operator model's base time (perfml.learned.operator_model._floor).

Truth: the measured rows of dlops_runtimes.csv.gz (NeuSight, shared/datasets README,
"Measurement": CUDA events around one call, so the smallest calls take 0.024-0.06 ms). The
LaunchFloor unit tests use synthetic rows, labelled so, whose floors are known by
construction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.datasets import load_dlops_runtimes
from perfml.errors import ModelFormatError
from perfml.learned.operator_model._floor import MIN_CALLS, WORK_FREE_MS, LaunchFloor
from perfml.learned.operators import OperatorRegressor
from perfml.operators import roofline_lower_bound_ms

from conftest import shared_data_home

HOME = shared_data_home()
FAST = {"n_estimators": 40, "max_depth": 4}
#: calls smaller than any of the corpus (its smallest add has 37 elements, its smallest bmm 7 x 1 x 2)
TINY = pd.DataFrame([
    {"op": "add", "B": 8, "H": 10},
    {"op": "softmax", "B": 2, "H": 16},
    {"op": "ln", "B": 2, "H": 64},
    {"op": "bmm", "B": 1, "M": 4, "N": 4, "K": 4},
])


def _synthetic_rows(floors: dict, n: int = MIN_CALLS) -> pd.DataFrame:
    """Synthetic rows (not measurements): ``n`` work-free calls per (op, board) at the given floor, plus one large call."""
    rows = []
    for (op, board), floor in floors.items():
        rows += [{"op": op, "board": board, "t": floor * (1 + 0.01 * i), "bound": WORK_FREE_MS / 10} for i in range(n)]
        rows.append({"op": op, "board": board, "t": 5.0, "bound": 4.0})  # not work-free: ignored
    return pd.DataFrame(rows)


def test_the_floor_is_the_median_over_boards_of_the_median_work_free_call():
    rows = _synthetic_rows({("add", "A"): 0.02, ("add", "B"): 0.03, ("add", "C"): 0.05,
                            ("ln", "A"): 0.04, ("ln", "B"): 0.06})
    floor = LaunchFloor().fit(rows["op"], rows["board"], rows["t"], rows["bound"])
    median_step = 1 + 0.01 * (MIN_CALLS - 1) / 2  # the median of a board's synthetic calls
    assert floor.floors_ms_["add"] == pytest.approx(0.03 * median_step)
    assert floor.floors_ms_["ln"] == pytest.approx(0.05 * median_step)  # median of two boards
    assert floor.fallback_ms_ == pytest.approx(floor.floors_ms_["add"])  # the smallest floor
    got = floor.floor_ms(pd.Series(["ln", "conv", "add"]))
    np.testing.assert_allclose(got, [floor.floors_ms_["ln"], floor.fallback_ms_, floor.floors_ms_["add"]])


def test_too_few_calls_or_boards_give_no_floor_of_their_own():
    rows = pd.concat([
        _synthetic_rows({("add", "A"): 0.02, ("add", "B"): 0.03}),
        _synthetic_rows({("conv", "A"): 0.2, ("conv", "B"): 0.3}, n=MIN_CALLS - 1),  # too few calls per board
        _synthetic_rows({("gelu", "A"): 0.04}),  # one board only
    ])
    floor = LaunchFloor().fit(rows["op"], rows["board"], rows["t"], rows["bound"])
    assert set(floor.floors_ms_) == {"add"}
    empty = LaunchFloor().fit(rows["op"][:0], rows["board"][:0], rows["t"][:0], rows["bound"][:0])
    assert empty.floors_ms_ == {} and empty.fallback_ms_ is None
    np.testing.assert_array_equal(empty.floor_ms(pd.Series(["add"])), [0.0])  # no floor: the bound alone


def test_the_file_form_round_trips_and_refuses_what_is_malformed():
    rows = _synthetic_rows({("add", "A"): 0.02, ("add", "B"): 0.03})
    floor = LaunchFloor().fit(rows["op"], rows["board"], rows["t"], rows["bound"])
    again = LaunchFloor.from_dict(floor.to_dict(), "model.json")
    assert again.floors_ms_ == floor.floors_ms_ and again.fallback_ms_ == floor.fallback_ms_
    for bad in (None, [], {"floors_ms": {"add": -1.0}, "fallback_ms": 0.02}, {"floors_ms": {"add": float("nan")}},
                {"floors_ms": {"add": 0.02}}, {"floors_ms": {"add": 0.02}, "fallback_ms": True},
                {"floors_ms": {"": 0.02}, "fallback_ms": 0.02}):
        with pytest.raises(ModelFormatError, match="launch_floor"):
            LaunchFloor.from_dict(bad, "model.json")


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    """At most 60 rows per (board, op, split), fixed seed; the T4 held out."""
    rt = load_dlops_runtimes(HOME).sample(frac=1.0, random_state=1)
    return rt[rt.groupby(["board", "op", "split"]).cumcount() < 60].reset_index(drop=True)


@pytest.mark.parametrize("board", ["Tesla-T4", "A100-PCIe-40GB"])
def test_a_call_smaller_than_any_trained_on_is_predicted_at_the_floor_not_at_its_bound(rows, board):
    train = rows[rows["board"] != board]
    model = OperatorRegressor(n_jobs=1, learner_params=FAST).fit(train, train["time_ms"])
    queries = TINY.assign(board=board)
    pred = model.predict(queries)
    # what the held-out board measured for its smallest call of each op (CUDA events: the floor)
    smallest = rows[rows["board"] == board].groupby("op")["time_ms"].min()
    floor = queries["op"].map(smallest).to_numpy()
    assert np.all(pred > 0.6 * floor) and np.all(pred < 2.0 * floor), pd.DataFrame({"pred": pred, "floor": floor})
    # where the floor enters: the bound alone is 10^2-10^4 times smaller
    assert np.all(roofline_lower_bound_ms(queries).to_numpy() < 0.01 * floor)


def test_without_the_floor_the_same_calls_fall_far_below_it(rows):
    """The control: the model of before (residual over the bound alone) predicts these calls
    far faster than any call the board measured; the test above could fail."""
    board = "A100-PCIe-40GB"
    train = rows[rows["board"] != board]
    model = OperatorRegressor(n_jobs=1, learner_params=FAST, launch_floor=False).fit(train, train["time_ms"])
    pred = model.predict(TINY.assign(board=board))
    smallest = rows[rows["board"] == board].groupby("op")["time_ms"].min()
    assert np.any(pred < 0.5 * TINY["op"].map(smallest).to_numpy())


def test_the_floor_is_learned_from_the_training_rows_and_saved_with_the_model(rows, tmp_path):
    from perfml.learned.operator_persistence import load_operator_model, write_operator_model_files

    train = rows[rows["board"] != "Tesla-T4"]
    model = OperatorRegressor(n_jobs=1, learner_params=FAST).fit(train, train["time_ms"])
    assert "fit_log_bound_over_floor" in model.feature_names_
    # the add floor is within the training boards' smallest add calls
    adds = train[train["op"] == "add"].groupby("board")["time_ms"].min()
    assert adds.min() * 0.9 <= model.floor_.floors_ms_["add"] <= adds.max() * 1.5
    directory = tmp_path / "model"
    directory.mkdir()
    write_operator_model_files(model, directory)
    loaded = load_operator_model(directory, data_home=HOME)
    assert loaded.floor_.floors_ms_ == model.floor_.floors_ms_
    test = rows[rows["board"] == "Tesla-T4"]
    np.testing.assert_allclose(loaded.predict(test), model.predict(test), rtol=1e-6)
    # switched off: no floor, no feature, and the fit of before
    off = OperatorRegressor(n_jobs=1, learner_params=FAST, launch_floor=False).fit(train, train["time_ms"])
    assert off.floor_ is None and "fit_log_bound_over_floor" not in off.feature_names_


# -- the host's floor: a note on the spec-only rows that are mostly the floor ------------------
def _note_model():
    """A model whose only part the note reads: its floors (synthetic, not measurements)."""
    class Model:
        floor_ = LaunchFloor()

    Model.floor_.floors_ms_ = {"add": 0.025, "softmax": 0.03}
    Model.floor_.fallback_ms_ = 0.025
    return Model()


def test_the_host_floor_note_counts_the_spec_only_rows_near_the_floor():
    from perfml.learned.operator_queries import host_floor_note

    result = pd.DataFrame([
        {"op": "add", "predicted_ms": 0.03, "basis": "training-boards", "tier": "spec"},   # near: counted
        {"op": "softmax", "predicted_ms": 0.059, "basis": "description", "tier": "spec"},  # under 2 x 0.03
        {"op": "add", "predicted_ms": 0.2, "basis": "training-boards", "tier": "spec"},    # far above the floor
        {"op": "add", "predicted_ms": 0.03, "basis": "reference", "tier": "spec"},         # the user's own time
        {"op": "add", "predicted_ms": 0.03, "basis": "measured", "tier": "spec"},
        {"op": "add", "predicted_ms": 0.03, "basis": "training-boards", "tier": "calibrated"},
        {"op": None, "predicted_ms": 0.01, "basis": "training-boards", "tier": "spec"},    # an application row
    ])
    note = host_floor_note(_note_model(), result)
    assert note.startswith("2 operator row(s) are predicted within 2x of their launch floor (0.025-0.030 ms")
    assert "--calibration" in note
    assert host_floor_note(_note_model(), result.iloc[2:]) is None
    assert host_floor_note(object(), result) is None  # a model without a floor


def test_predict_says_when_spec_only_operator_rows_are_the_floor(tmp_path, capsys):
    from perfml.cli import main

    queries = tmp_path / "q.csv"
    queries.write_text("board,op,B,H\nTesla-T4,add,8,10\nH100-SXM,add,4096,65536\n")
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    args = ["predict", "--model", str(model), "--queries", str(queries), "--data-home", str(HOME.path)]
    assert main([*args, "--output", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 operator row(s) are predicted within 2x of their launch floor" in err, err
    queries.write_text("board,op,B,H\nH100-SXM,add,4096,65536\n")
    assert main([*args, "--output", str(tmp_path / "p2.csv")]) == 0
    assert "launch floor" not in capsys.readouterr().err



def test_the_api_returns_the_floor_note_beside_the_answers():
    """predict_any (the Python API) carries what `perfml predict` prints: result.attrs["warnings"]."""
    from perfml.learned.bundle import load_predictor, predict_any

    bundle = load_predictor(Path(__file__).resolve().parents[1] / "models" / "default", data_home=HOME)
    small = predict_any(bundle, pd.DataFrame({"board": ["Tesla-T4"], "op": ["add"], "B": ["8"], "H": ["10"]}), "q")
    (warning,) = small.attrs["warnings"]
    assert warning.startswith("1 operator row(s) are predicted within 2x of their launch floor")
    large = predict_any(bundle, pd.DataFrame({"board": ["H100-SXM"], "op": ["add"], "B": ["4096"], "H": ["65536"]}), "q")
    assert large.attrs["warnings"] == []
