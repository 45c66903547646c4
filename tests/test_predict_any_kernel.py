"""`perfml predict` for any kernel of runtimes.csv.gz, with intervals, a basis and a roofline floor (issue 10, sections 2 and 4).

Model: a small xgboost model on a subset of shared/datasets/runtimes.csv.gz: the described
apps vectorAdd and matMul_gpu (source gpuperfpredict-nca) and the undescribed Rodinia
kernels lud_perimeter and calculate_temp (source gpuperfpredict-rodinia), on four boards,
with its interval calibration from leave-one-board-out out-of-fold predictions
(:func:`perfml.learned.training.fit_default`). ``dotProd`` is described but never trained on;
``my_kernel`` is nobody's kernel.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfml.errors import (
    QueryValidationError,
    ModelFormatError,
    ReferenceValidationError,
    UnsupportedQueryError,
)
from perfml.learned.intervals import LEVELS, conformal_quantile, held_out_board_coverage
from perfml.learned.persistence import load_model, save_model
from perfml.learned.queries import call_floor_ms, check_reference, predict_queries, read_reference, roofline_bound_ms
from perfml.learned.training import fit_default, training_runtimes

from conftest import shared_data_home, vectoradd_at_a_measured_and_an_unmeasured_block

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20", "Tesla-K40"]
APPS = ["matMul_gpu", "vectorAdd", "lud_perimeter", "calculate_temp"]
FAST = {"n_estimators": 20, "max_depth": 3}


@pytest.fixture(scope="module")
def rows():
    rt = training_runtimes(data_home=HOME)
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(APPS)]
    keep = rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 4 == 0
    return rt[keep].reset_index(drop=True)


@pytest.fixture(scope="module")
def trained(rows, tmp_path_factory, monkeypatch_module):
    from perfml.learned import regressors

    # fewer trees: the test is about the query path, not the model's accuracy
    monkeypatch_module.setitem(regressors._DEFAULTS, "xgboost", {**regressors._DEFAULTS["xgboost"], **FAST})
    model, calibration, oof = fit_default(rows, data_home=HOME)
    path = save_model(model, tmp_path_factory.mktemp("any") / "model", training_rows=rows, extra={"intervals": calibration})
    return path, oof


@pytest.fixture(scope="module")
def model_dir(trained):
    return trained[0]


@pytest.fixture(scope="module")
def model(model_dir):
    return load_model(model_dir, data_home=HOME)


def _cli(model_dir, tmp_path, queries: pd.DataFrame, capsys, *extra, reference: pd.DataFrame | None = None):
    from perfml.cli import main

    q, out = tmp_path / "q.csv", tmp_path / "p.csv"
    queries.to_csv(q, index=False)
    args = ["predict", "--model", str(model_dir), "--queries", str(q), "--output", str(out), *extra]
    if reference is not None:
        reference.to_csv(tmp_path / "ref.csv", index=False)
        args += ["--reference", str(tmp_path / "ref.csv")]
    code = main(args)
    return code, out, capsys.readouterr().err


def _rodinia_row(rows, app="lud_perimeter"):
    return rows[rows.app_id == app].iloc[0]


def test_rodinia_and_described_rows_are_answered_with_extra_columns_kept_in_order(model_dir, rows, tmp_path, capsys):
    r = _rodinia_row(rows)
    queries = pd.DataFrame([
        {"note": "first", "board": "GTX-980", "app_id": "lud_perimeter", "input_size": int(r.input_size),
         "block_x": int(r.block_x), "block_y": int(r.block_y), "grid_x": int(r.grid_x), "grid_y": int(r.grid_y), "zz": "x y"},
        {"note": "second", "board": "GTX-980", "app_id": "vectorAdd", "input_size": 2**20, "zz": "7.50"},
        {"note": "third", "board": "GTX-980", "app_id": "dotProd", "input_size": 2**20, "zz": ""},
    ])
    code, out, err = _cli(model_dir, tmp_path, queries, capsys)
    assert code == 0, err
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(got.columns[: len(queries.columns)]) == list(queries.columns)
    assert got["note"].tolist() == ["first", "second", "third"] and got["zz"].tolist() == ["x y", "7.50", ""]
    assert got["basis"].tolist() == ["training-boards", "training-boards", "description"]
    pred = got["predicted_ms"].astype(float)
    assert (pred > 0).all() and np.isfinite(pred).all()
    assert (got["lower_ms"].astype(float) < pred).all() and (pred < got["upper_ms"].astype(float)).all()


def test_a_column_with_a_blank_header_reaches_the_output_with_its_blank_header(model_dir, tmp_path, capsys):
    # a query file saved with its index (pandas, a spreadsheet) has a first column without a
    # name; it is a column perfml does not use, so it is carried as written, not as "Unnamed: 0"
    from perfml.cli import main

    q, out = tmp_path / "q.csv", tmp_path / "p.csv"
    q.write_text(",board,app_id,input_size\n7,GTX-980,vectorAdd,1048576\n")
    assert main(["predict", "--model", str(model_dir), "--queries", str(q), "--output", str(out)]) == 0, \
        capsys.readouterr().err
    header = out.read_text().splitlines()[0].split(",")
    assert header[:4] == ["", "board", "app_id", "input_size"]
    assert out.read_text().splitlines()[1].startswith("7,GTX-980,vectorAdd,1048576,")


def test_a_header_with_spaces_after_its_commas_names_the_same_columns(model_dir, tmp_path, capsys):
    # "board, app_id, input_size" was refused with "no app_id or op column", though the cells'
    # surrounding spaces are dropped everywhere
    from perfml.cli import main

    q, out = tmp_path / "q.csv", tmp_path / "p.csv"
    q.write_text("board, app_id , input_size\nGTX-980,vectorAdd,1048576\n")
    ref = tmp_path / "r.csv"
    ref.write_text("board , app_id, input_size, block_x, grid_x, time_ms\nGTX-680, my_kernel, 4096, 256, 16, 0.25\n")
    assert main(["predict", "--model", str(model_dir), "--queries", str(q), "--output", str(out)]) == 0, \
        capsys.readouterr().err
    assert out.read_text().splitlines()[0].startswith("board,app_id,input_size,predicted_ms")
    q.write_text("board, app_id, input_size\nGTX-680,my_kernel,4096\n")
    assert main(["predict", "--model", str(model_dir), "--queries", str(q), "--reference", str(ref),
                 "--output", str(out), "--overwrite"]) == 0, capsys.readouterr().err
    assert float(pd.read_csv(out)["predicted_ms"].iloc[0]) == pytest.approx(0.25, rel=1e-12)


def test_an_undescribed_row_without_launch_takes_the_training_runs_launch(model, rows):
    r = _rodinia_row(rows, "calculate_temp")
    base = {"board": "GTX-980", "app_id": "calculate_temp", "input_size": str(int(r.input_size)),
            "input_size_2": str(int(r.input_size_2))}
    with_launch = {**base, **{c: str(int(r[c])) for c in ("block_x", "block_y", "grid_x", "grid_y")}}
    given_launch = predict_queries(model, pd.DataFrame([with_launch]), "q.csv")["predicted_ms"].iloc[0]
    no_launch = predict_queries(model, pd.DataFrame([base]), "q.csv")["predicted_ms"].iloc[0]
    assert no_launch == pytest.approx(given_launch, rel=1e-12)


def _several_launch_run(rows):
    """A (size, launches) of lud_perimeter the training rows hold at several launches (Rodinia
    launches it once per grid size as the factorization proceeds)."""
    lud = rows[rows.app_id == "lud_perimeter"]
    size = lud.groupby("input_size").grid_x.nunique().idxmax()
    launches = lud[lud.input_size == size][["block_x", "block_y", "grid_x", "grid_y"]].drop_duplicates()
    assert len(launches) > 2
    return int(size), launches


@pytest.mark.parametrize("given", [{}, {"block_x": "32"}])
def test_a_row_without_the_launch_that_tells_the_training_runs_launches_apart_is_refused(model, rows, given):
    """lud_perimeter ran at many grids per size (up to 511, the slowest up to 12x the fastest on
    one board: experiments/results/launches_per_run.txt); a query without its grid was answered
    at whichever launch came first in the training runs."""
    size, launches = _several_launch_run(rows)
    assert (launches.block_x == 32).all()  # block_x alone chooses nothing
    frame = pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": "1024"},
                          {"board": "GTX-980", "app_id": "lud_perimeter", "input_size": str(size), **given}])
    said = "only block_x = 32" if given else "no launch"
    with pytest.raises(QueryValidationError, match=rf"q.csv: row 2 \(line 3\): the query gives {said} for kernel "
                       rf"lud_perimeter at input_size {size}, and the training boards measured that run at "
                       rf"{len(launches)} launches \(block_x = 32, .* more\); add block_x, block_y, grid_x, grid_y"):
        predict_queries(model, frame, "q.csv")


def test_a_row_whose_given_cells_choose_one_training_launch_takes_it(model, rows):
    size, launches = _several_launch_run(rows)
    launch = launches.iloc[len(launches) // 2]
    base = {"board": "GTX-980", "app_id": "lud_perimeter", "input_size": str(size)}
    full = {**base, **{c: str(int(launch[c])) for c in ("block_x", "block_y", "grid_x", "grid_y")}}
    grid_only = {**base, "grid_x": str(int(launch.grid_x))}
    got = predict_queries(model, pd.DataFrame([full, grid_only]), "q.csv")["predicted_ms"]
    assert got.iloc[1] == pytest.approx(got.iloc[0], rel=1e-12)


def test_the_cli_refuses_a_row_without_the_launch_of_a_several_launch_run(model_dir, rows, tmp_path, capsys):
    size, _ = _several_launch_run(rows)
    queries = pd.DataFrame([{"board": "Tesla-K40", "app_id": "lud_perimeter", "input_size": size}])
    code, out, err = _cli(model_dir, tmp_path, queries, capsys)
    assert code == 2 and not out.exists()
    assert "row 1" in err and "launches" in err and "add block_x" in err and "Traceback" not in err


def test_an_undescribed_row_of_an_unmeasured_size_without_launch_names_the_fix(model):
    frame = pd.DataFrame([{"board": "GTX-980", "app_id": "calculate_temp", "input_size": "7", "input_size_2": "256"}])
    with pytest.raises(Exception, match=r"row 1 .*column block_x.*add block_x"):
        predict_queries(model, frame, "q.csv")


def test_an_unknown_kernel_without_reference_is_refused_and_nothing_written(model_dir, tmp_path, capsys):
    queries = pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": 1024},
                            {"board": "GTX-980", "app_id": "my_kernel", "input_size": 1024, }])
    code, out, err = _cli(model_dir, tmp_path, queries, capsys)
    assert code == 2 and not out.exists()
    assert "row 2" in err and "my_kernel" in err and "--reference" in err and "Traceback" not in err
    with pytest.raises(UnsupportedQueryError):
        predict_queries(load_model(model_dir, data_home=HOME), queries.astype(str), "q.csv")


def _my_reference(board="GTX-680", time_ms=0.25, **launch):
    return pd.DataFrame([{"board": board, "app_id": "my_kernel", "input_size": 4096, "time_ms": time_ms,
                          "block_x": 256, "block_y": 1, "grid_x": 16, "grid_y": 1, **launch}])


def test_a_reference_predicts_the_users_kernel_on_other_boards(model, tmp_path):
    ref_path = tmp_path / "ref.csv"
    _my_reference().to_csv(ref_path, index=False)
    ref = read_reference(ref_path)
    queries = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": "4096"} for b in ("GTX-680", "GTX-980", "Tesla-K40")])
    out = predict_queries(model, queries, "q.csv", reference=ref)
    assert (out["basis"] == "reference").all()
    assert out["predicted_ms"].iloc[0] == pytest.approx(0.25, rel=1e-12)  # the measured board: the measurement
    # other boards: the measurement times the model's ratio between the two boards (launch from the reference)
    moved = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": 4096.0, "block_x": 256.0, "block_y": 1.0,
                           "grid_x": 16.0, "grid_y": 1.0} for b in ("GTX-980", "GTX-680")])
    m = model.predict_transfer(moved)  # my_kernel is known only from the reference: a ratio
    assert out["predicted_ms"].iloc[1] == pytest.approx(0.25 * m[0] / m[1], rel=1e-9)
    # the measured size is no extrapolation; the GTX-980 is beyond the training boards' figures (FP32 rate,
    # SMs, L2), and the model's ratio that carries the reference there is as much an extrapolation
    assert out["extrapolated"].tolist() == [False, True, False]
    assert out["extrapolation"].iloc[1].startswith("board GTX-980: FP32 rate")


def test_a_reference_on_the_query_board_is_the_prediction_whatever_other_boards_measured(model):
    # the user measured my_kernel on two boards, 4x apart: each of those boards is answered with
    # its own measurement (the geometric mean of both, carried, gave 0.5x and 2x of it, out of
    # the row's interval); a third board takes both, carried
    ref = pd.concat([_my_reference("GTX-980", 0.1), _my_reference("GTX-680", 1.0)], ignore_index=True)
    queries = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": "4096"}
                            for b in ("GTX-980", "GTX-680", "Tesla-K40")])
    out = predict_queries(model, queries, "q.csv", reference=ref)
    assert out["predicted_ms"].iloc[0] == pytest.approx(0.1, rel=1e-12)
    assert out["predicted_ms"].iloc[1] == pytest.approx(1.0, rel=1e-12)
    assert (out["lower_ms"].iloc[:2] <= [0.1, 1.0]).all() and (out["upper_ms"].iloc[:2] >= [0.1, 1.0]).all()
    alone = [predict_queries(model, queries.iloc[[2]], "q.csv", reference=r)["predicted_ms"].iloc[0]
             for r in (ref.iloc[[0]], ref.iloc[[1]])]
    assert out["predicted_ms"].iloc[2] == pytest.approx(float(np.sqrt(alone[0] * alone[1])), rel=1e-9)


def test_references_that_disagree_widen_the_interval_to_hold_each_of_them(model):
    # two repeats of one run 10x apart: the geometric mean, with the calibrated width of one
    # reference, covered neither 0.1 nor 1.0 ms; now the interval holds the interval of each
    ref = pd.concat([_my_reference("GTX-980", 0.1), _my_reference("GTX-980", 1.0)], ignore_index=True)
    queries = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": "4096"} for b in ("GTX-980", "Tesla-K40")])
    out = predict_queries(model, queries, "q.csv", reference=ref)
    alone = [predict_queries(model, queries, "q.csv", reference=ref.iloc[[k]]) for k in (0, 1)]
    assert out["predicted_ms"].tolist() == pytest.approx(np.sqrt(alone[0]["predicted_ms"] * alone[1]["predicted_ms"]).tolist())
    assert out["lower_ms"].tolist() == pytest.approx(alone[0]["lower_ms"].tolist(), rel=1e-9)
    assert out["upper_ms"].tolist() == pytest.approx(alone[1]["upper_ms"].tolist(), rel=1e-9)
    assert (out["lower_ms"] <= [0.1, alone[0]["predicted_ms"].iloc[1]]).all()
    # one reference, or references that agree: the calibrated width, unchanged
    same = predict_queries(model, queries, "q.csv", reference=pd.concat([ref.iloc[[0]]] * 2, ignore_index=True))
    pd.testing.assert_frame_equal(same, alone[0])


def test_the_interval_of_a_kernel_of_unknown_work_spans_its_compute_and_bandwidth_ratios(model):
    # a kernel known only from --reference may be compute- or memory-bound: its interval (calibrated
    # on kernels whose boundness the training boards showed) held 48-56 % of the disguised kernels'
    # measurements at a nominal 90 %; it now spans the reference carried by either ratio
    from perfml.boards import get_board, peak_bandwidth, peak_flops

    ref = _my_reference("GTX-680", 0.25)
    # the L4: 9.8x the GTX-680's FP32 rate, 1.6x its bandwidth
    queries = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": "4096"} for b in ("GTX-680", "L4")])
    out = predict_queries(model, queries, "q.csv", reference=ref)
    src, dst = get_board("GTX-680"), get_board("L4")
    by_bandwidth = 0.25 * peak_bandwidth(src) / peak_bandwidth(dst)
    by_compute = 0.25 * peak_flops(src) / peak_flops(dst)
    low, high = out["lower_ms"].iloc[1], out["upper_ms"].iloc[1]
    # down to the fastest call the model knows (call_floor_ms): no call is predicted faster
    floor = call_floor_ms(model.metadata_["training"], ref, queries["board"])[1]
    assert low <= max(min(by_bandwidth, by_compute), floor) and high >= max(by_bandwidth, by_compute)
    assert low <= out["predicted_ms"].iloc[1] < high and floor <= out["predicted_ms"].iloc[1]
    # on its own board the reference is the measurement, and its interval the calibrated one
    own = predict_queries(model, queries.iloc[[0]], "q.csv", reference=ref)
    assert out["lower_ms"].iloc[0] == own["lower_ms"].iloc[0] and out["upper_ms"].iloc[0] == own["upper_ms"].iloc[0]
    assert out["lower_ms"].iloc[0] < 0.25 < out["upper_ms"].iloc[0]


def test_a_reference_of_several_launches_answers_each_query_from_its_own_launch(model):
    """A user measured one kernel and size at two block sizes on the board they have: each query
    is answered from the measurement of its own launch (not refused, not averaged over launches);
    a launch the reference never ran is still refused, naming both rows."""
    ref = pd.concat([_my_reference(time_ms=0.25), _my_reference(time_ms=0.75, block_x=64, grid_x=64)],
                    ignore_index=True)
    queries = pd.DataFrame([{"board": "GTX-680", "app_id": "my_kernel", "input_size": "4096", "block_x": bx,
                             "block_y": "1", "grid_x": gx, "grid_y": "1"} for bx, gx in (("64", "64"), ("256", "16"))])
    out = predict_queries(model, queries, "q.csv", reference=ref)
    assert (out["basis"] == "reference").all()
    assert out["predicted_ms"].tolist() == pytest.approx([0.75, 0.25], rel=1e-12)
    other = queries.iloc[[0]].assign(block_x="128", grid_x="32")
    with pytest.raises(ReferenceValidationError, match=r"row 1 \(line 2\), column block_x.*2 row\(s\) of this run on that board.*q.csv: row 1"):
        predict_queries(model, other, "q.csv", reference=ref)


def test_a_query_without_launch_of_a_run_the_reference_measured_at_several_launches_is_refused(model):
    """Which of the user's launches a query without one means cannot be guessed: the first
    reference row's was taken, so the prediction changed with the order of the reference file.
    Either order is now refused, naming the query row, the launches and the fix."""
    ref = pd.concat([_my_reference(time_ms=0.25), _my_reference(time_ms=0.75, block_x=64, grid_x=64)],
                    ignore_index=True)
    query = pd.DataFrame([{"board": "GTX-980", "app_id": "my_kernel", "input_size": "4096"}])
    for order in (ref, ref.iloc[::-1].reset_index(drop=True)):
        with pytest.raises(ReferenceValidationError,
                           match=r"q.csv: row 1 \(line 2\): the query gives no launch.*2 launches.*block_x = 64.*"
                                 r"add block_x, block_y, grid_x, grid_y to the query row"):
            predict_queries(model, query, "q.csv", reference=order)
    # one launch measured on two boards is no ambiguity
    two_boards = pd.concat([_my_reference(), _my_reference("GTX-970", 0.3)], ignore_index=True)
    assert predict_queries(model, query, "q.csv", reference=two_boards)["basis"].iloc[0] == "reference"


def test_a_reference_without_any_launch_assumes_the_nominal_one_and_says_so(model):
    """Issue 10 §2: the launch is optional; an unknown kernel's reference without one still answers."""
    from perfml.learned.queries import NOMINAL_BLOCK

    ref = _my_reference().drop(columns=["block_x", "block_y", "grid_x", "grid_y"])
    queries = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": "4096"} for b in ("GTX-680", "Tesla-K40")])
    out = predict_queries(model, queries, "q.csv", reference=ref)
    assert (out["basis"] == "reference").all()
    assert out["predicted_ms"].iloc[0] == pytest.approx(0.25, rel=1e-12)
    nominal = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": 4096.0, "block_x": float(NOMINAL_BLOCK),
                             "block_y": 1.0, "grid_x": 4096.0 / NOMINAL_BLOCK, "grid_y": 1.0}
                            for b in ("Tesla-K40", "GTX-680")])
    m = model.predict_transfer(nominal)
    assert out["predicted_ms"].iloc[1] == pytest.approx(0.25 * m[0] / m[1], rel=1e-9)
    assert out["extrapolated"].all()  # flagged: the launch was assumed
    assert all("launch assumed" in r and "block_x" in r for r in out["extrapolation"])
    assert "block_x" not in out.columns  # the query is written back as given


def test_the_nominal_launch_needs_a_reference_of_that_size(model):
    ref = _my_reference().drop(columns=["block_x", "block_y", "grid_x", "grid_y"])
    queries = pd.DataFrame([{"board": "Tesla-K40", "app_id": "my_kernel", "input_size": "8192"}])
    with pytest.raises((UnsupportedQueryError, QueryValidationError), match="my_kernel"):
        predict_queries(model, queries, "q.csv", reference=ref)


def test_a_reference_of_a_trained_kernel_takes_precedence(model, rows):
    r = rows[(rows.app_id == "vectorAdd") & (rows.board == "GTX-680")].iloc[0]
    ref = pd.DataFrame([{"board": "GTX-680", "app_id": "vectorAdd", "input_size": float(r.input_size), "time_ms": 123.0}])
    q = pd.DataFrame([{"board": "GTX-680", "app_id": "vectorAdd", "input_size": str(int(r.input_size))},
                      {"board": "GTX-680", "app_id": "vectorAdd", "input_size": str(int(r.input_size) * 2)}])
    out = predict_queries(model, q, "q.csv", reference=ref)
    assert out["basis"].tolist() == ["reference", "training-boards"]
    assert out["predicted_ms"].iloc[0] == pytest.approx(123.0)


@pytest.mark.parametrize(
    "change, column",
    [
        ({"board": "RTX-9090"}, "board"),
        ({"time_ms": ""}, "time_ms"),
        ({"time_ms": 0}, "time_ms"),
        ({"time_ms": -1.5}, "time_ms"),
        ({"time_ms": "fast"}, "time_ms"),
        ({"time_ms": "inf"}, "time_ms"),
        ({"time_ms": 1.7e308}, "time_ms"),  # beyond MAX_MEASURED_MS: it overflowed the reference ratio
        ({"time_ms": 1e-12}, "time_ms"),  # below MIN_MEASURED_MS: a kernel of unknown work has no roofline check
        ({"time_ms": 5e-324}, "time_ms"),
        ({"input_size_2": "inf"}, "input_size_2"),
        ({"input_size": 2.5}, "input_size"),
        ({"block_x": "wide"}, "block_x"),
        ({"block_x": 128}, "block_x"),  # disagrees with the query's launch
    ],
)
def test_bad_reference_rows_are_refused_naming_file_row_column(model_dir, tmp_path, capsys, change, column):
    second = _my_reference(board="Tesla-K20").astype(object)
    for k, v in change.items():
        second.loc[0, k] = v
    ref = pd.concat([_my_reference().astype(object), second], ignore_index=True)
    queries = pd.DataFrame([{"board": "GTX-980", "app_id": "my_kernel", "input_size": 4096, "block_x": 256,
                             "block_y": 1, "grid_x": 16, "grid_y": 1}])
    code, out, err = _cli(model_dir, tmp_path, queries, capsys, reference=ref)
    assert code == 2 and not out.exists(), err
    assert "ref.csv" in err and "row 2" in err and f"column {column}" in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_a_reference_without_time_ms_is_refused(tmp_path):
    path = tmp_path / "ref.csv"
    _my_reference().drop(columns="time_ms").to_csv(path, index=False)
    with pytest.raises(ReferenceValidationError, match="time_ms"):
        read_reference(path)


def test_intervals_widen_with_level_and_double_when_extrapolated(model, rows):
    top = rows[rows.app_id == "vectorAdd"].input_size.max()
    # Quadro-K5200: every figure of perfml.learned.board_range within the four training boards'
    # twice the largest training size: extrapolated, and its buffers (12 bytes per element) fit the K5200's 8 GiB
    q = pd.DataFrame([{"board": "Quadro-K5200", "app_id": "vectorAdd", "input_size": str(int(top // 2))},
                      {"board": "Quadro-K5200", "app_id": "vectorAdd", "input_size": str(int(top * 2))}])
    wide = predict_queries(model, q, "q.csv", level=0.95)
    narrow = predict_queries(model, q, "q.csv", level=0.60)
    half = np.log(wide["upper_ms"] / wide["predicted_ms"])
    assert (np.log(narrow["upper_ms"] / narrow["predicted_ms"]) < half).all()
    assert wide["extrapolated"].tolist() == [False, True]
    q95 = model.metadata_["intervals"]["groups"]["described"]["log_halfwidth"][LEVELS.index(0.95)]
    assert half.iloc[0] == pytest.approx(q95) and half.iloc[1] == pytest.approx(2 * q95)


@pytest.mark.parametrize("level", ["0.955", "1.0", "0.2", "ninety"])
def test_a_level_the_model_does_not_store_is_refused(model_dir, tmp_path, capsys, level):
    queries = pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": 1024}])
    code, out, err = _cli(model_dir, tmp_path, queries, capsys, "--level", level)
    assert code == 2 and not out.exists() and "--level" in err


def test_the_calibration_is_in_the_hashed_manifest(model_dir, tmp_path):
    import shutil

    copy = tmp_path / "m"
    shutil.copytree(model_dir, copy)
    meta = json.loads((copy / "perfml-model.json").read_text())
    assert meta["intervals"]["groups"]["undescribed"]["n"] > 0
    meta["intervals"]["groups"]["all"]["log_halfwidth"][40] = 0.0
    (copy / "perfml-model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="manifest was changed"):
        load_model(copy, data_home=HOME)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 400), level=st.sampled_from(LEVELS), seed=st.integers(0, 2**16))
def test_conformal_quantile_is_the_ceil_n_plus_one_order_statistic(n, level, seed):
    """Lei et al. (JASA 2018), Algorithm 2: the ceil((n+1)(1-alpha))-th smallest score, +inf beyond n."""
    s = np.random.default_rng(seed).exponential(size=n)
    k = math.ceil((n + 1) * level - 1e-9)
    q = conformal_quantile(s, level)
    if k > n:
        assert q == math.inf
    else:
        assert q == np.sort(s)[k - 1]
        assert np.mean(s <= q) >= level - 1.0 / (n + 1) + 1e-12 or k == n


def test_held_out_board_coverage_uses_only_the_other_boards():
    """Three boards predicted within 10%, a fourth off by 2x: its rows are not covered."""
    rng = np.random.default_rng(0)
    boards = np.repeat(["a", "b", "c", "d"], 200)
    measured = rng.uniform(1, 10, size=800)
    pred = measured * np.exp(rng.uniform(-0.1, 0.1, size=800))
    pred[boards == "d"] = measured[boards == "d"] * 2.0
    cov = held_out_board_coverage(pred, measured, boards, 0.9)
    assert cov["per_board"]["d"] == 0.0
    assert all(cov["per_board"][b] > 0.8 for b in "abc")


def test_out_of_fold_coverage_of_the_fixture_model_is_reported(rows, trained):
    """The figure is printed by `perfml train`; here it must be a real number from held-out boards."""
    oof = trained[1]
    assert np.isfinite(oof).all()
    cov = held_out_board_coverage(oof, rows["measured_ms"], rows["board"], 0.9)
    assert set(cov["per_board"]) == set(BOARDS) and 0.0 < cov["coverage"] <= 1.0


class _TooFast:
    """A model that predicts 1 ns for everything: the roofline floor must catch it."""

    def __init__(self, real):
        self.real, self.metadata_, self.features_, self.registry = real, real.metadata_, real.features_, None

    def predict(self, X):
        return np.full(len(X), 1e-6)

    predict_transfer = predict


def test_a_prediction_below_the_roofline_bound_is_clamped_and_flagged(model):
    q = pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": str(2**24)},
                      {"board": "Tesla-K40", "app_id": "matMul_gpu", "input_size": "2048"}])
    out = predict_queries(_TooFast(model), q, "q.csv")
    bound = roofline_bound_ms(pd.DataFrame({"board": ["GTX-980", "Tesla-K40"], "app_id": ["vectorAdd", "matMul_gpu"],
                                            "input_size": [2.0**24, 2048.0]}))
    assert out["clamped_to_bound"].all()
    assert out["predicted_ms"].to_numpy() == pytest.approx(bound)
    assert (out["lower_ms"] >= out["predicted_ms"] - 1e-15).all()
    # the interval is the written prediction's: it keeps its width (it shrank to [bound, bound])
    assert (out["upper_ms"] > 1.05 * out["predicted_ms"]).all()


def test_a_prediction_faster_than_the_dram_streams_its_working_set_is_flagged(model):
    """Raised to the roofline bound (an L2 of its bytes from cache), an 805 MB strided sum on the
    L4 still came out at 102 % of the datasheet bandwidth, unflagged (queries.beyond_dram_flags)."""
    q = pd.DataFrame([{"board": "L4", "app_id": "matrix_sum_normal", "input_size": "8192"},
                      {"board": "L4", "app_id": "matrix_sum_normal", "input_size": "1024"}])
    out = predict_queries(_TooFast(model), q, "q.csv")
    assert out["clamped_to_bound"].all() and out["extrapolated"].all()
    notes = [[n for n in r.split("; ") if "peak DRAM bandwidth" in n] for r in out["extrapolation"]]
    assert len(notes[0]) == 1 and notes[0][0].startswith("predicted at 107% of board L4's peak DRAM bandwidth")
    assert notes[1] == []  # 4 MB: the L2 may hold it


def test_a_reference_accepted_below_its_boards_roofline_answers_its_own_row_unraised(model):
    """A reference within MAX_OVER_SPEC of its board's roofline bound is accepted, and on its own
    board it is the answer: raised to the bound, it was a time the command had accepted, rewritten."""
    run = {"app_id": "vectorAdd", "input_size": 2**24}
    bound = roofline_bound_ms(pd.DataFrame([{"board": b, "app_id": "vectorAdd", "input_size": 2.0**24}
                                            for b in ("GTX-980", "Tesla-K40")]))
    ref = check_reference(pd.DataFrame([{"board": "GTX-980", **run, "time_ms": bound[0] / 1.4}]).astype(str), "ref.csv")
    q = pd.DataFrame([{"board": b, "app_id": "vectorAdd", "input_size": str(2**24)} for b in ("GTX-980", "Tesla-K40")])
    out = predict_queries(model, q, "q.csv", reference=ref)
    assert out["basis"].tolist() == ["reference", "reference"]
    assert out["predicted_ms"].iloc[0] == pytest.approx(bound[0] / 1.4, rel=1e-12)
    assert not out["clamped_to_bound"].iloc[0] and out["lower_ms"].iloc[0] < out["predicted_ms"].iloc[0]
    # carried to another board, the answer still respects that board's bound
    assert out["predicted_ms"].iloc[1] >= bound[1] * (1 - 1e-12) and out["lower_ms"].iloc[1] >= bound[1] * (1 - 1e-12)


@settings(max_examples=20, deadline=None)
@given(board=st.sampled_from(["GTX-980", "Tesla-K40", "GTX-750", "Tesla-V100-PCIe-32GB"]),
       app=st.sampled_from(["vectorAdd", "matMul_gpu", "dotProd"]), log2=st.integers(8, 12))
def test_no_prediction_beats_the_roofline_bound(model, board, app, log2):
    size = 2 ** (log2 + (10 if app != "matMul_gpu" else 0))
    q = pd.DataFrame([{"board": board, "app_id": app, "input_size": str(size)}])
    out = predict_queries(model, q, "q.csv")
    bound = roofline_bound_ms(pd.DataFrame({"board": [board], "app_id": [app], "input_size": [float(size)]}))
    assert out["predicted_ms"].iloc[0] >= bound[0] * (1 - 1e-12)


def test_training_rows_are_every_kernel_of_runtimes_by_default():
    """runtimes.csv.gz holds the nine apps (gpuperfpredict-nca, BSPGPU) and the Rodinia kernels; --source narrows."""
    from perfml.datasets import load_runtimes

    every = training_runtimes(data_home=HOME)
    raw = load_runtimes(data_home=HOME)
    assert set(every["source"]) == set(raw["source"])
    assert {"lud_perimeter", "calculate_temp", "vectorAdd"} <= set(every["app_id"])
    assert (every["gpu_config"].fillna("default") == "default").all()
    only = training_runtimes(source="gpuperfpredict-rodinia", data_home=HOME)
    assert set(only["source"]) == {"gpuperfpredict-rodinia"} and len(only) < len(every)


def test_a_kernel_known_only_from_the_reference_at_another_size_is_refused(model, tmp_path):
    path = tmp_path / "ref.csv"
    _my_reference().to_csv(path, index=False)
    q = pd.DataFrame([{"board": "GTX-980", "app_id": "my_kernel", "input_size": "4096"},
                      {"board": "GTX-980", "app_id": "my_kernel", "input_size": "8192", "block_x": "256", "grid_x": "32"}])
    with pytest.raises(UnsupportedQueryError, match=r"row 2 .*input_size 8192.*add a reference measurement"):
        predict_queries(model, q, "q.csv", reference=read_reference(path))


def test_no_measured_runtime_of_the_data_beats_the_roofline_bound():
    """Every described-app runtime of shared/datasets/runtimes.csv.gz is at or above the bound the clamp uses.

    (With the full compulsory traffic at peak bandwidth, 19 cache-resident runs were faster
    than the "bound"; the L2 capacity is subtracted from the DRAM traffic for that reason.)
    """
    from perfml.apps import list_apps

    rt = training_runtimes(data_home=HOME)
    rt = rt[rt.app_id.isin(list_apps())].reset_index(drop=True)
    bound = roofline_bound_ms(rt)
    assert np.isfinite(bound).all() and (bound > 0).any()
    assert (rt["measured_ms"].to_numpy() >= bound).all()


def test_repeats_of_one_run_far_apart_are_told_not_averaged_silently(model_dir, tmp_path, capsys):
    ref = pd.concat([_my_reference(time_ms=0.1), _my_reference(time_ms=10.0),  # 100x apart: a unit slip?
                     _my_reference(board="Tesla-K20", time_ms=0.20), _my_reference(board="Tesla-K20", time_ms=0.22)],
                    ignore_index=True)
    queries = pd.DataFrame([{"board": "GTX-980", "app_id": "my_kernel", "input_size": 4096}])
    code, out, err = _cli(model_dir, tmp_path, queries, capsys, reference=ref)
    assert code == 0 and out.exists()
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err  # the K20's repeats agree within 2x
    assert "rows 1, 2" in warnings[0] and "GTX-680" in warnings[0] and "100x apart" in warnings[0]


def test_operator_repeats_far_apart_are_told(tmp_path):
    from perfml.learned.bundle import read_reference_any, reference_repeat_warnings

    path = tmp_path / "ref.csv"
    path.write_text("board,op,B,H,time_ms\nTesla-T4,add,64,1024,0.03\nTesla-T4,add,64,1024,0.3\n"
                    "Tesla-T4,add,64,2048,0.05\n")
    lines = reference_repeat_warnings(read_reference_any(path), "--reference ref.csv")
    assert len(lines) == 1 and "rows 1, 2" in lines[0] and "10x apart" in lines[0]


@pytest.mark.parametrize("text, told", [
    # merged by the lookup, grouped apart on their raw cells (thirty-third session): no warning
    ("board,app_id,input_size,block_x,grid_x,block_y,grid_y,time_ms\nGTX-680,my_k,4096,256,16,1,1,0.1\n"
     "GTX-680,my_k,4096,256,16,,,10\n", "rows 1, 2 measure the same run on GTX-680 at 0.1 to 10 ms (100x apart)"),
    ("board,app_id,input_size,input_size_2,time_ms\nGTX-680,my_k,4096,0,0.1\nGTX-680,my_k,4096,,10\n", "rows 1, 2"),
    ("board,op,B,H,dtype,time_ms\nTesla-T4,add,8,4096,float32,0.026\nTesla-T4,add,8,4096,,2.6\n", "rows 1, 2"),
    ("board,app_id,input_size,note,time_ms\nGTX-680,my_k,4096,first,0.1\nGTX-680,my_k,4096,second,10\n", "rows 1, 2"),
    # two launches of one run, or two boards, or two sizes: not repeats (the lookup keeps them apart)
    ("board,app_id,input_size,block_x,grid_x,time_ms\nGTX-680,my_k,4096,256,16,0.1\nGTX-680,my_k,4096,1024,4,10\n", None),
    ("board,app_id,input_size,time_ms\nGTX-680,my_k,4096,0.1\nTesla-K40,my_k,4096,10\n", None),
    ("board,op,B,H,time_ms\nTesla-T4,add,8,4096,0.026\nTesla-T4,add,8,8192,2.6\n", None),
])
def test_reference_repeats_are_the_rows_the_lookup_merges(tmp_path, text, told):
    from perfml.learned.bundle import read_reference_any, reference_repeat_warnings

    path = tmp_path / "ref.csv"
    path.write_text(text)
    lines = reference_repeat_warnings(read_reference_any(path), "--reference ref.csv")
    assert (lines == []) if told is None else (len(lines) == 1 and told in lines[0]), lines


def test_a_query_below_the_training_sizes_is_not_faster_than_the_fastest_training_call(model, rows):
    """Below the training sizes the model extrapolates the work's scaling to nothing: vectorAdd of
    1,000 elements came out at 0.0005 ms, below any call measured on any board."""
    fastest = float(rows["measured_ms"].min())
    assert model.metadata_["training"]["min_time_ms"] == fastest
    q = pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": "1000"},
                      {"board": "Tesla-K40", "app_id": "vectorAdd", "input_size": str(2**24)}])
    raw = model.predict(q.astype({"input_size": float}))
    assert raw[0] < fastest < raw[1]  # the case: the model alone goes below the fastest call
    out = predict_queries(model, q, "q.csv")
    assert out["predicted_ms"].iloc[0] == pytest.approx(fastest) and out["clamped_to_bound"].iloc[0]
    assert out["extrapolated"].iloc[0] and out["lower_ms"].iloc[0] >= fastest
    assert out["predicted_ms"].iloc[1] == pytest.approx(raw[1]) and not out["clamped_to_bound"].iloc[1]


def test_the_call_floor_is_the_fastest_call_the_model_or_the_reference_knows(model, rows):
    from perfml.characterize.limits import MIN_MEASURED_MS

    training = model.metadata_["training"]
    fastest = float(rows["measured_ms"].min())
    assert call_floor_ms(training) == fastest
    boards = pd.Series(["GTX-680", "GT-630", "gtx 680"])
    # the user's own faster call lowers the floor of its board (an alias too), not of another board
    assert call_floor_ms(training, _my_reference(time_ms=fastest / 3), boards).tolist() == [fastest / 3, fastest,
                                                                                           fastest / 3]
    assert call_floor_ms(training, _my_reference(time_ms=10 * fastest), boards).tolist() == [fastest] * 3
    assert call_floor_ms(None) == call_floor_ms({}) == call_floor_ms({"min_time_ms": 1e-9}) == MIN_MEASURED_MS
    with pytest.raises(ValueError, match="pass boards"):
        call_floor_ms(training, _my_reference(time_ms=fastest / 3))


def test_a_fast_reference_call_lowers_the_floor_of_its_own_board_only(model, rows):
    """One 1.1 us H100 row of a reference lowered every row of every board to 1.1 us: the
    GTX-980's small vectorAdd, a run the reference does not measure, fell from the training floor."""
    fastest = float(rows["measured_ms"].min())
    small = {"app_id": "vectorAdd", "input_size": "1000"}
    q = pd.DataFrame([{"board": "GTX-980", **small}, {"board": "H100-SXM", **small}])
    alone = predict_queries(model, q, "q.csv")
    assert alone["predicted_ms"].tolist() == pytest.approx([fastest] * 2)  # the case: both rows at the floor
    ref = pd.DataFrame([{"board": "H100-SXM", "app_id": "vectorAdd", "input_size": 4096, "time_ms": fastest / 3}])
    out = predict_queries(model, q, "q.csv", reference=ref)
    assert out["predicted_ms"].iloc[0] == pytest.approx(fastest)  # another board: the training floor holds
    assert out["predicted_ms"].iloc[1] < fastest  # the reference's board: a call that fast ran there
    assert out["basis"].tolist() == ["training-boards"] * 2


def test_a_reference_is_carried_by_model_times_no_faster_than_the_call_floor(model):
    """An H100 vectorAdd of 131,072 elements carried to the GTX-980 came out 34x its measured
    time: the model's H100 time (0.0006 ms) was below any call, and the ratio of the two model
    times was the ratio of two works that the launch hides. Model times in the ratio are floored."""
    run = {"app_id": "vectorAdd", "input_size": 131072, "block_x": 256, "block_y": 1, "grid_x": 512, "grid_y": 1}
    ref = pd.DataFrame([{"board": "H100-SXM", **run, "time_ms": 0.017}])  # an illustrative measurement, not data
    out = predict_queries(model, pd.DataFrame([{"board": "GTX-980", **run}]), "q.csv", reference=ref)
    # each board's floor: the reference's call lowers the H100's only
    f_q, f_r = call_floor_ms(model.metadata_["training"], ref, pd.Series(["GTX-980", "H100-SXM"]))
    m_q, m_r = model.predict(pd.DataFrame([{"board": "GTX-980", **run}, {"board": "H100-SXM", **run}]))
    assert m_r < f_r  # the case: the model's H100 time is below the floor
    assert out["basis"].iloc[0] == "reference"
    assert out["predicted_ms"].iloc[0] == pytest.approx(0.017 * max(m_q, f_q) / max(m_r, f_r), rel=1e-9)


def test_a_block_shape_no_training_board_measured_is_flagged_and_its_interval_widened(model, rows):
    """A trained kernel at a launch measured on no training board was answered from its nearest
    launch, unflagged, with the interval of a measured one; held out of every training board, a
    block size tripled the nine apps' error on unseen boards (experiments/results/unseen_launches.txt)."""
    q = vectoradd_at_a_measured_and_an_unmeasured_block(rows)
    out = predict_queries(model, q, "q.csv")
    assert out["extrapolated"].tolist() == [False, True]
    assert out["extrapolation"].iloc[0] == ""
    assert out["extrapolation"].iloc[1].startswith("block 128x1 of app vectorAdd was measured on no training board "
                                                   "(measured: ")
    # fit_default calibrates no launch: the reason says the interval is the convention's
    assert out["extrapolation"].iloc[1].endswith("; its interval is twice the log half-width of a measured launch, a "
                                                 "convention: this model has no interval calibrated on held-out "
                                                 "launches (none of its kernels was measured at two block sizes, or "
                                                 "it was trained before perfml calibrated them)")
    # the interval of the flagged row: twice the log half-width (the extrapolation rule)
    half = np.log(out["upper_ms"] / out["predicted_ms"]).to_numpy()
    assert half[1] == pytest.approx(2 * half[0], rel=1e-9)
    # a run of the training rows is never flagged for its launch
    from perfml.learned.queries import unmeasured_launches

    assert not any(unmeasured_launches(rows.astype({"block_y": float}), model.features_.transfer_))


def test_at_a_block_shape_no_training_board_measured_the_residual_is_not_added(model, rows):
    """The learned residual, fitted on measured launches, added error at unmeasured ones (unseen
    boards: 32.63 % for the transfer baseline, 48.85 % with the residual; experiments/results/
    unseen_launches.txt): such a row gets the transfer baseline alone, a measured launch both."""
    import copy

    r = rows[(rows.app_id == "vectorAdd") & (rows.block_x == 256)].iloc[0]
    n = float(r.input_size)
    q = pd.DataFrame([{"board": "GTX-970", "app_id": "vectorAdd", "input_size": n, "block_x": bx, "block_y": 1.0,
                       "grid_x": n / bx, "grid_y": 1.0} for bx in (256.0, 128.0)])
    half, none = copy.deepcopy(model), copy.deepcopy(model)
    half.shrinkage_, none.shrinkage_ = 0.5, 0.0
    with_residual, baseline = half.predict_transfer(q), none.predict_transfer(q)
    assert with_residual[1] == pytest.approx(baseline[1], rel=1e-12)  # unmeasured: the baseline alone
    assert with_residual[0] != pytest.approx(baseline[0], rel=1e-6)  # measured: the residual is added


def test_a_model_without_training_runs_flags_no_launch(rows):
    """unmeasured_launches of a model that records no runs (None, or an empty table) flags nothing."""
    from perfml.learned.launches import unmeasured_launch_mask
    from perfml.learned.queries import unmeasured_launches

    q = rows.head(3)
    assert unmeasured_launches(q, None) == ["", "", ""] and not unmeasured_launch_mask(q, None).any()
    assert unmeasured_launches(q, q.iloc[:0]) == ["", "", ""]
