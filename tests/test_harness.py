"""The one harness: every protocol is a splitter, every predictor goes through cross_val_predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GroupKFold, cross_val_predict

from perfml.errors import ExperimentSpecError, PerfmlError
from perfml.evaluation import PROTOCOLS, cross_val_predictions, get_protocol
from perfml.evaluation.closed_form import describable_runtimes, predict_closed_form

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20"]
APPS = ["vectorAdd", "matMul_gpu"]


@pytest.fixture(scope="module")
def rows(data_home):
    rt = describable_runtimes(data_home, source="gpuperfpredict-nca")
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(APPS)]
    keep = rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 4 == 0
    return rt[keep].reset_index(drop=True)


def test_one_registry_names_every_protocol():
    assert set(PROTOCOLS) == {"leave-one-board-out", "leave-one-app-out", "size-extrapolation", "grouped-kfold",
                              "size-cv", "reference-board", "in-sample", "leave-one-architecture-out",
                              "newest-board", "newest-architecture", "leave-one-board-and-block-size-out",
                              "leave-one-board-and-kernel-block-size-out"}
    import perfml.evaluation.closed_form as ecf
    import perfml.learned.protocols as lp

    assert ecf.PROTOCOLS is PROTOCOLS and lp.PROTOCOLS is PROTOCOLS


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_protocol_is_a_splitter_with_disjoint_or_declared_folds(rows, protocol):
    splitter = get_protocol(protocol)
    folds = list(splitter.split(rows, rows.measured_ms))
    assert len(folds) == splitter.get_n_splits(rows)
    for train, test in folds:
        assert len(train) and len(test)
        if protocol in ("leave-one-board-out", "leave-one-app-out", "grouped-kfold", "size-cv",
                        "leave-one-architecture-out", "newest-architecture"):
            groups = splitter.groups_of(rows)
            assert set(groups[train]).isdisjoint(groups[test])
    if protocol == "reference-board":
        (train, test), = folds
        assert set(rows.board.iloc[train]) == {"GTX-680"} and len(test) == len(rows)
    if protocol == "in-sample":
        (train, test), = folds
        assert np.array_equal(train, test) and len(test) == len(rows)


def test_unknown_protocol_is_a_typed_error(rows):
    with pytest.raises(ExperimentSpecError, match="unknown protocol"):
        get_protocol("leave-one-out-of-nowhere")
    with pytest.raises(PerfmlError, match="unknown protocol"):
        predict_closed_form("bsp", rows, protocol="nope", data_home=HOME)


def test_size_cv_through_the_harness_equals_sklearn_cross_val_predict(rows, data_home):
    """The harness reproduces what ``perfml evaluate --protocol size-cv`` computed with scikit-learn directly."""
    from perfml.closed_form.bsp import BSPModel

    y = rows.measured_ms.to_numpy()
    sizes = rows.input_size.to_numpy()
    expected = cross_val_predict(BSPModel(data_home=data_home), rows, y, groups=sizes,
                                 cv=GroupKFold(n_splits=min(5, len(np.unique(sizes)))))
    got = cross_val_predictions(BSPModel(data_home=data_home), rows, y, "size-cv")
    assert np.array_equal(got.predicted_ms.to_numpy(), expected)


def test_reference_board_fits_only_the_reference_board(rows, data_home):
    from perfml.closed_form.bsp import BSPModel

    y = rows.measured_ms.to_numpy()
    ref = rows.board == "GTX-680"
    expected = BSPModel(group_by=("app_id",), data_home=data_home).fit(rows[ref], y[ref]).predict(rows)
    got = predict_closed_form("bsp", rows, protocol="reference-board", data_home=data_home)
    assert np.array_equal(got, expected)
    # Changing another board's times cannot change anything (the test can fail: in-sample would).
    y2 = np.where(rows.board == "GTX-970", y * 2, y)
    again = cross_val_predictions(BSPModel(group_by=("app_id",), data_home=data_home), rows, y2, "reference-board")
    assert np.array_equal(again.predicted_ms.to_numpy(), expected)


@pytest.mark.parametrize("model", ["bsp", "roofline", "hongkim"])
def test_every_closed_form_model_goes_through_the_harness(rows, data_home, model):
    pred = predict_closed_form(model, rows, protocol="in-sample", data_home=data_home)
    assert pred.shape == (len(rows),)
    assert np.isfinite(pred).any() and np.all(pred[np.isfinite(pred)] > 0)


def test_hongkim_runtime_model_lives_in_closed_form_and_matches_the_adapter(rows, data_home):
    from perfml.closed_form.hongkim_inputs import predict_hongkim_for_runtimes
    from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
    from perfml.experiments import runner

    assert runner.HongKimRuntimeModel is HongKimRuntimeModel
    got = HongKimRuntimeModel(data_home=data_home).fit(rows, rows.measured_ms).predict(rows)
    np.testing.assert_array_equal(got, predict_hongkim_for_runtimes(rows, data_home=data_home))


def test_size_extrapolation_predicts_only_the_larger_sizes(rows, data_home):
    from perfml.closed_form.roofline import RooflineModel

    pred = cross_val_predictions(RooflineModel(), rows, rows.measured_ms, "size-extrapolation")
    assert 0 < len(pred) < len(rows)
    for app, part in rows.groupby("app_id"):
        tested = pred[pred.app_id == app].input_size
        assert tested.min() > part.loc[~part.index.isin(pred.index), "input_size"].max()


def test_a_splitter_object_is_accepted_as_protocol(rows):
    from perfml.closed_form.roofline import RooflineModel
    from perfml.evaluation import LeaveOneBoardOut

    by_name = cross_val_predictions(RooflineModel(), rows, rows.measured_ms, "leave-one-board-out")
    by_object = cross_val_predictions(RooflineModel(), rows, rows.measured_ms, LeaveOneBoardOut())
    pd.testing.assert_frame_equal(by_name, by_object)
    assert sorted(by_name.fold.unique()) == list(range(len(BOARDS)))


# -- data passed in ---------------------------------------------------------------------------
def test_a_data_home_reads_each_table_once_across_fits(rows, data_home, monkeypatch):
    import perfml.datasets._home as home_module
    from perfml.closed_form.bsp import BSPModel
    from perfml.datasets import DataHome

    reads = []
    real = home_module.read_table
    monkeypatch.setattr(home_module, "read_table", lambda name, home: reads.append(name) or real(name, home))
    home = DataHome(data_home.path)
    for _ in range(3):
        cross_val_predictions(BSPModel(data_home=home), rows, rows.measured_ms, "size-cv")
    assert reads == ["bsp_inputs"]


def test_clone_shares_the_data_home_instead_of_copying_its_tables(data_home):
    from sklearn.base import clone

    from perfml.closed_form.bsp import BSPModel

    assert clone(BSPModel(data_home=data_home)).data_home is data_home


def test_a_given_data_home_ignores_the_environment(rows, data_home, monkeypatch, tmp_path):
    from perfml.datasets import as_data_home, find_data_home
    from perfml.errors import DataHomeError

    monkeypatch.setenv("PERFML_DATA_HOME", str(tmp_path / "nowhere"))
    assert as_data_home(data_home) is data_home
    pred = predict_closed_form("bsp", rows, protocol="in-sample", data_home=data_home)
    assert np.isfinite(pred).all()
    with pytest.raises(DataHomeError, match="PERFML_DATA_HOME"):
        find_data_home()  # the entry point's resolver is the one that reads the variable


def test_a_path_is_still_accepted_and_wrapped(rows, data_home):
    from perfml.closed_form.bsp import BSPModel

    by_path = BSPModel(data_home=str(data_home.path)).fit(rows, rows.measured_ms).predict(rows)
    by_home = BSPModel(data_home=data_home).fit(rows, rows.measured_ms).predict(rows)
    np.testing.assert_array_equal(by_path, by_home)


def test_closed_form_models_side_by_side_are_scored_on_the_protocols_rows():
    """`evaluate --model roofline --protocol newest-board` scored every row (n = 11656) while BSP scored the
    newest boards' (2558), and BSP counted the rows the protocol does not hold out as unpredicted."""
    from perfml.evaluation.closed_form import evaluate_closed_form

    from conftest import shared_data_home

    home = shared_data_home()
    scores = {m: evaluate_closed_form(m, data_home=home, protocol="newest-board") for m in ("bsp", "roofline")}
    rows = {m: set(map(tuple, r["predictions"][["board", "app_id", "input_size"]].drop_duplicates().to_numpy()))
            for m, r in scores.items()}
    assert rows["bsp"] == rows["roofline"]
    assert set(scores["roofline"]["predictions"]["board"]) == set(scores["bsp"]["predictions"]["board"])
    assert scores["bsp"]["overall"]["n_unpredicted"].item() == 0
    everything = evaluate_closed_form("roofline", data_home=home, protocol="in-sample")
    assert len(scores["roofline"]["predictions"]) < len(everything["predictions"])
