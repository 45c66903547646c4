"""`perfml predict --characterization FILE` / `--calibration FILE` (issue 11 §3 and §5).

Model: a small xgboost model with the ``char_*`` features on three boards of the
gpuperfpredict-nca runtimes of shared/datasets (apps vectorAdd and matMul_gpu); the
target GTX-750 is not among them. Its calibration rows are its own vectorAdd runs of
that file; nothing else of GTX-750 enters. The queries are vectorAdd runs too (a memory-bound
kernel, where the achieved bandwidth shows); the mechanism, not an accuracy claim.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.characterize import calibrate_from_rows
from perfml.cli import main
from perfml.evaluation.closed_form import describable_runtimes
from perfml.learned import RuntimeRegressor
from perfml.learned.persistence import save_model
from conftest import shared_data_home

HOME = shared_data_home()  # tests are entry points: the data home is passed down

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20"]
TARGET = "GTX-750"
APPS = ["matMul_gpu", "vectorAdd"]
FAST = {"n_estimators": 20, "max_depth": 3}


@pytest.fixture(scope="module")
def runtimes():
    rt = describable_runtimes(HOME, source="gpuperfpredict-nca")
    return rt[rt.app_id.isin(APPS)].reset_index(drop=True)


@pytest.fixture(scope="module")
def model_dir(runtimes, tmp_path_factory):
    rows = runtimes[runtimes.board.isin(BOARDS)]
    keep = rows.groupby(["board", "app_id"]).input_size.rank(method="dense") % 3 == 0
    rows = rows[keep].reset_index(drop=True)
    reg = RuntimeRegressor(data_home=HOME, learner_params=FAST, shrinkage=0.5, characterization=True,
                           closed_form_peaks="characterized", profiles=False)
    reg.fit(rows, rows.measured_ms)
    return save_model(reg, tmp_path_factory.mktemp("m") / "model", training_rows=rows)


@pytest.fixture(scope="module")
def files(runtimes, tmp_path_factory):
    folder = tmp_path_factory.mktemp("target")
    target = runtimes[runtimes.board == TARGET]
    queries = target[target.app_id == "vectorAdd"][["board", "app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]].head(5)
    queries.to_csv(folder / "queries.csv", index=False)
    calibration = target[target.app_id == "vectorAdd"].rename(columns={"measured_ms": "time_ms"})
    calibration.to_csv(folder / "calibration.csv", index=False)
    # a board whose vectorAdd runs take 1.25x as long: 0.8x the achieved bandwidth
    calibration.assign(time_ms=1.25 * calibration.time_ms).to_csv(folder / "slower.csv", index=False)
    calibrate_from_rows(calibration, TARGET).save(folder / "target.json")
    calibrate_from_rows(runtimes[(runtimes.board == "GTX-980") & (runtimes.app_id == "vectorAdd")], "GTX-980").save(folder / "other.json")
    return folder


def _predict(model_dir, files, tmp_path, *extra):
    out = tmp_path / "out.csv"
    status = main(["predict", "--model", str(model_dir), "--queries", str(files / "queries.csv"), "--output", str(out), *extra])
    return status, out


def test_a_characterization_or_a_calibration_of_the_target_moves_the_prediction(model_dir, files, tmp_path):
    status, out = _predict(model_dir, files, tmp_path, "--calibration", str(files / "slower.csv"))
    assert status == 0
    slower = pd.read_csv(out)["predicted_ms"].to_numpy()
    out.unlink()
    status, out = _predict(model_dir, files, tmp_path, "--characterization", str(files / "target.json"))
    assert status == 0
    characterized = pd.read_csv(out)["predicted_ms"].to_numpy()
    out.unlink()
    status, out = _predict(model_dir, files, tmp_path, "--calibration", str(files / "calibration.csv"))
    assert status == 0
    calibrated = pd.read_csv(out)["predicted_ms"].to_numpy()
    # the same rows give the same characterization, so the same predictions
    np.testing.assert_allclose(characterized, calibrated)
    assert np.all(np.isfinite(characterized)) and not np.allclose(characterized, slower)


def test_a_characterization_of_another_board_is_refused_and_nothing_written(model_dir, files, tmp_path, capsys):
    status, out = _predict(model_dir, files, tmp_path, "--characterization", str(files / "other.json"))
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert "GTX-980" in err and TARGET in err and len(err.strip().splitlines()) == 1


def test_a_calibration_without_rows_of_the_target_is_refused(model_dir, files, tmp_path, capsys, runtimes):
    other = runtimes[(runtimes.board == "GTX-980") & (runtimes.app_id == "vectorAdd")].rename(columns={"measured_ms": "time_ms"})
    other.to_csv(tmp_path / "other.csv", index=False)
    status, out = _predict(model_dir, files, tmp_path, "--calibration", str(tmp_path / "other.csv"))
    assert status == 2 and not out.exists()
    assert TARGET in capsys.readouterr().err


def test_both_options_at_once_are_refused(model_dir, files, tmp_path, capsys):
    status, out = _predict(model_dir, files, tmp_path, "--characterization", str(files / "target.json"),
                           "--calibration", str(files / "calibration.csv"))
    assert status == 2 and not out.exists() and "not both" in capsys.readouterr().err


def test_a_model_without_characterization_features_says_the_file_changes_nothing(runtimes, files, tmp_path, capsys):
    rows = runtimes[runtimes.board.isin(BOARDS)].reset_index(drop=True)
    reg = RuntimeRegressor(data_home=HOME, learner_params=FAST, shrinkage=0.5, profiles=False).fit(rows, rows.measured_ms)
    plain = save_model(reg, tmp_path / "plain", training_rows=rows)
    status, out = _predict(plain, files, tmp_path, "--characterization", str(files / "target.json"))
    assert status == 0 and out.exists()
    assert "changes none of its predictions" in capsys.readouterr().err


# -- operator rows: the calibration reaches the operator sub-model too ------------------------------

def test_a_calibration_of_add_calls_moves_an_operator_models_memory_bound_predictions(tmp_path, capsys):
    """Operator model with the char_* group (committed characterizations of four NeuSight
    boards); target Tesla-T4 calibrated from its own ``add`` calls (dlops_runtimes.csv.gz) and
    from the same calls made 1.5x slower (synthetic variant, labelled so in this test)."""
    from perfml.datasets import load_dlops_runtimes
    from perfml.learned.bundle import save_bundle
    from perfml.learned.operators import OperatorRegressor

    rt = load_dlops_runtimes(HOME).sample(frac=1.0, random_state=0)
    rows = rt[(rt.board != "Tesla-T4") & (rt.groupby(["board", "op", "split"]).cumcount() < 30)].reset_index(drop=True)
    model = OperatorRegressor(n_jobs=1, characterization=True, learner_params=FAST).fit(rows, rows.time_ms)
    path = save_bundle({"dlops": (model, rows, {})}, tmp_path / "ops")
    target = rt[rt.board == "Tesla-T4"]
    target[target.op.isin(["relu", "softmax"])][["board", "op", "B", "H"]].head(20).to_csv(tmp_path / "q.csv", index=False)
    adds = target[target.op == "add"][["board", "op", "B", "H", "time_ms"]]
    adds.to_csv(tmp_path / "adds.csv", index=False)
    adds.assign(time_ms=1.5 * adds.time_ms).to_csv(tmp_path / "slower_adds.csv", index=False)  # synthetic
    predictions = {}
    for name in ("adds", "slower_adds"):
        out = tmp_path / f"{name}_out.csv"
        status = main(["predict", "--model", str(path), "--queries", str(tmp_path / "q.csv"), "--output", str(out),
                       "--calibration", str(tmp_path / f"{name}.csv")])
        assert status == 0
        predictions[name] = pd.read_csv(out)["predicted_ms"].to_numpy()
    assert "changes none of its predictions" not in capsys.readouterr().err
    assert np.all(predictions["slower_adds"] >= predictions["adds"])  # slower streaming: never faster
    assert np.mean(predictions["slower_adds"] / predictions["adds"]) > 1.2  # the calibration is used


def test_a_sweep_characterization_without_a_floor_keeps_operator_calls_above_the_training_floor(tmp_path, capsys):
    """The committed model, the H100's microbenchmark characterization without its calibrated tier
    (no streaming curve, no launch overhead: sweeps/results/H100-SXM's microbenchmarks only): a
    64 x 64 ``mul`` took 0.014 ms measured there (dlops_torch.csv), and was put at the 0.0005 ms
    floor of every prediction. It is now charged the training boards' median launch overhead,
    and the output says so."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = json.loads((root / "sweeps" / "results" / "H100-SXM" / "characterization.json").read_text())
    doc.pop("stream_curve")
    doc["values"] = [v for v in doc["values"] if v["tier"] != "calibrated"]
    microbenchmarks_only = tmp_path / "h100.json"
    microbenchmarks_only.write_text(json.dumps(doc))
    queries = tmp_path / "q.csv"
    pd.DataFrame({"board": ["H100-SXM"] * 2, "op": ["mul", "relu"], "B": [64, 128], "H": [64, 256]}).to_csv(queries, index=False)
    out = tmp_path / "p.csv"
    status = main(["predict", "--model", str(root / "models" / "default"), "--queries", str(queries), "--output",
                   str(out), "--characterization", str(microbenchmarks_only), "--data-home", str(HOME.path)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "gives no launch overhead either, so operator calls are charged the training boards' median" in err
    pred = pd.read_csv(out)["predicted_ms"].to_numpy()
    assert np.all(pred > 0.01), pred


def test_a_synthetic_file_or_a_curve_of_another_kernel_is_told(tmp_path, capsys):
    """The committed model's operator sub-model learned its curves from add calls: a curve of another
    kernel, or a file marked synthetic, predicts without a word otherwise."""
    import json
    from pathlib import Path

    from perfml.characterize import board_characterization

    root = Path(__file__).resolve().parents[1]
    queries = tmp_path / "q.csv"
    pd.DataFrame({"board": ["Tesla-T4", "Tesla-T4"], "op": ["mul", "bmm"], "B": [64, 8], "H": [4096, None],
                  "M": [None, 64], "N": [None, 64], "K": [None, 64]}).to_csv(queries, index=False)
    doc = board_characterization("Tesla-T4").to_dict()
    doc["synthetic"] = True
    doc["stream_curve"]["kernel"] = "vectorAdd"
    path = tmp_path / "t4.json"
    path.write_text(json.dumps(doc))
    status = main(["predict", "--model", str(root / "models" / "default"), "--queries", str(queries), "--output",
                   str(tmp_path / "p.csv"), "--characterization", str(path), "--data-home", str(HOME.path)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "is marked synthetic" in err
    assert "its streaming curve was measured with vectorAdd, the training boards' with add" in err


def test_one_board_in_two_spellings_is_one_target(tmp_path, capsys):
    """--calibration refused queries naming the GTX-980 as 'GeForce GTX 980' and 'gtx980' as two boards
    (--characterization accepted them)."""
    from pathlib import Path

    from perfml.datasets import load_runtimes

    root = Path(__file__).resolve().parents[1]
    rt = load_runtimes(HOME)
    adds = rt[(rt["board"] == "GTX-980") & (rt["app_id"] == "vectorAdd")][["board", "app_id", "input_size", "time_ms_median"]]
    adds.rename(columns={"time_ms_median": "time_ms"}).to_csv(tmp_path / "cal.csv", index=False)
    pd.DataFrame({"board": ["GeForce GTX 980", "gtx980"], "app_id": ["vectorAdd", "matMul_gpu"],
                  "input_size": [1048576, 2048]}).to_csv(tmp_path / "q.csv", index=False)
    status = main(["predict", "--model", str(root / "models" / "default"), "--queries", str(tmp_path / "q.csv"),
                   "--output", str(tmp_path / "p.csv"), "--calibration", str(tmp_path / "cal.csv"),
                   "--data-home", str(HOME.path)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert (pd.read_csv(tmp_path / "p.csv")["tier"] == "calibrated").all()


def _predict_with(tmp_path, queries, doc, name):
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / f"{name}_p.csv"
    status = main(["predict", "--model", str(root / "models" / "default"), "--queries", str(queries), "--output",
                   str(out), "--characterization", str(path), "--data-home", str(HOME.path)])
    return status, pd.read_csv(out)["predicted_ms"].to_numpy() if status == 0 else None


def test_a_value_no_training_board_had_is_not_used_and_named(tmp_path, capsys):
    """The calibrated sub-models learned from boards characterized by add / vectorAdd runs only
    (achieved DRAM bandwidth, launch floor, streaming curve). A file that also gives an FP32
    rate (here a synthetic 0.1x the datasheet, as a naive matMul reaches) or a DRAM bandwidth
    of another tier moved the GEMMs on a scale the model never saw (the H100's sweep
    characterization put them at about 5x); such values are now left out, by name. The
    board: the H100 (no training board), its committed file cut to what training had."""
    import copy
    import json
    from pathlib import Path

    from perfml.boards import get_board, peak_bandwidth, peak_flops

    root = Path(__file__).resolve().parents[1]
    queries = tmp_path / "q.csv"
    pd.DataFrame({"board": ["H100-SXM"] * 3, "op": ["bmm", "linear", "mul"], "B": [8, 512, 64], "H": [None, None, 4096],
                  "M": [512, 1024, None], "N": [512, 1024, None], "K": [512, 1024, None]}).to_csv(queries, index=False)
    doc = json.loads((root / "sweeps" / "results" / "H100-SXM" / "characterization.json").read_text())
    doc["values"] = [v for v in doc["values"] if v["tier"] == "spec" or
                     (v["tier"] == "calibrated" and v["quantity"] in ("dram_bandwidth", "launch_overhead"))]
    base_status, base = _predict_with(tmp_path, queries, doc, "as_trained")
    assert base_status == 0
    assert "not used" not in capsys.readouterr().err
    extra = copy.deepcopy(doc)
    template = next(v for v in doc["values"] if v["tier"] == "calibrated" and v["quantity"] == "dram_bandwidth")
    h100 = get_board("H100-SXM")
    slow_fp32 = {**template, "quantity": "fp32_throughput", "unit": "FLOP/s", "value": 0.1 * peak_flops(h100, "fp32"),
                 "bound": "lower", "source": "synthetic: a naive matMul's rate"}
    other_tier = {**template, "tier": "measured", "value": 0.5 * peak_bandwidth(h100), "source": "synthetic sweep"}
    extra["values"] += [slow_fp32, other_tier]
    extra["synthetic"] = True
    status, got = _predict_with(tmp_path, queries, extra, "with_extra")
    err = capsys.readouterr().err
    assert status == 0, err
    np.testing.assert_allclose(got, base, rtol=1e-12)
    assert "gives dram_bandwidth (measured), fp32_throughput (calibrated), which no training board" in err
    assert "not used" in err


def test_the_h100_sweep_characterization_keeps_its_gemms_near_their_times(tmp_path, capsys):
    """Real data: sweeps/results/H100-SXM/characterization.json (microbenchmarks, and the calibrated
    tier of its calibration runs) on the H100's measured bmm / linear calls of 1 ms or more
    (dlops_torch.csv): predicted within 2x of their times. When the file also carried the naive
    matMuls' calibrated FP32 rate and predict used it, they came out at 4-8x (commit 273601d,
    experiments/results/measured_board_check_H100-SXM.txt)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    calls = pd.read_csv(root / "sweeps" / "results" / "H100-SXM" / "dlops_torch.csv")
    gemms = calls[calls["op"].isin(["bmm", "linear"]) & (calls["time_ms_median"] >= 1.0)].head(40)
    assert len(gemms) >= 20
    queries = tmp_path / "q.csv"
    gemms[["board", "op", "B", "M", "N", "K"]].to_csv(queries, index=False)
    doc = json.loads((root / "sweeps" / "results" / "H100-SXM" / "characterization.json").read_text())
    status, got = _predict_with(tmp_path, queries, doc, "h100")
    assert status == 0, capsys.readouterr().err
    ratio = got / gemms["time_ms_median"].to_numpy()
    assert np.all((ratio > 0.5) & (ratio < 2.0)), np.round(ratio, 2)


def test_a_calibration_of_small_calls_only_charges_larger_ones_no_launch_per_byte(tmp_path, capsys):
    """Real data: the H100's add calls under 2 MB (sweeps/results/H100-SXM/dlops_torch.csv), all
    at the launch floor, as the calibration; its element-wise calls of 100 MB or more as the
    queries. The curve charged them its largest call's bytes per second, the launch included:
    a 1.2 GB mul at 14 ms against 0.40 ms measured, these calls at 29-35x their times. Now
    the further bytes go at the board's DRAM bandwidth (the datasheet's: no call calibrates it)."""
    from pathlib import Path

    from perfml.operators import operator_work

    root = Path(__file__).resolve().parents[1]
    calls = pd.read_csv(root / "sweeps" / "results" / "H100-SXM" / "dlops_torch.csv")
    calls = calls[calls["op"].isin(["add", "mul", "relu", "gelu"])].reset_index(drop=True)
    moved = operator_work(calls)["bytes"].to_numpy()
    small = calls[(calls["op"] == "add").to_numpy() & (moved < 2e6)]
    assert len(small) >= 10
    small[["board", "op", "B", "H", "time_ms"]].to_csv(tmp_path / "adds.csv", index=False)
    big = calls[calls["op"].isin(["mul", "relu", "gelu"]).to_numpy() & (moved >= 1e8)].head(40)
    assert len(big) >= 10
    big[["board", "op", "B", "H"]].to_csv(tmp_path / "q.csv", index=False)
    out = tmp_path / "p.csv"
    status = main(["predict", "--model", str(root / "models" / "default"), "--queries", str(tmp_path / "q.csv"),
                   "--output", str(out), "--calibration", str(tmp_path / "adds.csv"), "--data-home", str(HOME.path)])
    assert status == 0, capsys.readouterr().err
    ratio = pd.read_csv(out)["predicted_ms"].to_numpy() / big["time_ms"].to_numpy()
    assert np.all((ratio > 0.5) & (ratio < 3.0)), np.round(ratio, 2)
    assert "charged its time plus the further bytes at the board's DRAM bandwidth" in capsys.readouterr().err


def test_a_launch_floor_timed_otherwise_than_the_training_boards_is_told(tmp_path, capsys):
    """The H100 sweep's launch floor comes from CUDA events around each launch; the nine apps'
    calibrated sub-model learned from nvprof kernel durations (no launch latency). The
    warning says so; the same file with the training boards' timing says nothing of it."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    queries = tmp_path / "q.csv"
    pd.DataFrame({"board": ["H100-SXM"] * 2, "app_id": ["dotProd", "matrix_sum_coalesced"],
                  "input_size": [131072, 1024]}).to_csv(queries, index=False)
    doc = json.loads((root / "sweeps" / "results" / "H100-SXM" / "characterization.json").read_text())
    status, _ = _predict_with(tmp_path, queries, doc, "events")
    err = capsys.readouterr().err
    assert status == 0, err
    assert "its launch floor was timed as 'CUDA events around each launch" in err and "'nvprof kernel duration" in err
    assert "time the calibration as they were: `perfml sweep run calibration --timing kernel-duration" in err
    for value in doc["values"]:
        if value["quantity"] == "launch_overhead" and value["tier"] == "calibrated":
            value["provenance"]["timing"] = "nvprof kernel duration (excludes host launch latency)"
    status, _ = _predict_with(tmp_path, queries, doc, "nvprof")
    err = capsys.readouterr().err
    assert status == 0, err
    assert "launch floor was timed" not in err
    # a sweep timed by kernel durations (CUPTI, as nvprof reads them) is the training boards' timing
    from perfml.characterize.calibrate import CUPTI_DURATION_TIMING

    for value in doc["values"]:
        if value["quantity"] == "launch_overhead" and value["tier"] == "calibrated":
            value["provenance"]["timing"] = CUPTI_DURATION_TIMING
    status, _ = _predict_with(tmp_path, queries, doc, "cupti")
    err = capsys.readouterr().err
    assert status == 0, err
    assert "launch floor was timed" not in err


def _h100_timing_run(tmp_path, timing):
    """The H100 run timed both ways (sweeps/results/archive/H100-SXM-kernel-duration[-events]): its
    calibration spec's rows as a --calibration file, and the applications spec's runs of less than
    the nine apps' fastest training call as queries with their times."""
    from pathlib import Path

    from perfml.measure.runtime_rows import application_runtime_rows

    root = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "archive"
    folder = root / ("H100-SXM-kernel-duration" + ("-events" if timing == "cuda-events" else ""))
    rows = application_runtime_rows(folder, board="H100-SXM")
    calibration = tmp_path / f"cal_{timing}.csv"
    rows[rows["spec"] == "calibration"].drop(columns=["spec", "point_id"]).to_csv(calibration, index=False)
    small = rows[(rows["spec"] == "applications") & (rows["app_id"] != "vectorAdd")].reset_index(drop=True)
    return calibration, small


def _predict_h100(tmp_path, small, name, extra):
    queries, out = tmp_path / f"q_{name}.csv", tmp_path / f"p_{name}.csv"
    small.drop(columns=["time_ms", "spec", "point_id", "source"]).to_csv(queries, index=False)
    from pathlib import Path

    model = Path(__file__).resolve().parents[1] / "models" / "default"
    assert main(["predict", "--model", str(model), "--queries", str(queries), "--output", str(out),
                 "--data-home", str(HOME.path), *extra]) == 0
    return pd.read_csv(out)


def test_a_calibration_timed_by_kernel_durations_lowers_the_call_floor_on_its_board(tmp_path, capsys):
    """Real data: the H100's smallest application kernels take 1.2-3.1 us by their durations, under
    the nine apps' fastest training call (models/default: 0.003308 ms), so spec-only none is
    predicted under that floor. Calibrated from the same machine's vectorAdd runs timed by kernel
    durations (launch floor 0.0011 ms), they may come out faster, never under that launch floor, and
    no timing warning is given; the events-timed run's floor (0.0102 ms) lowers nothing and is named."""
    import json
    from pathlib import Path

    manifest = Path(__file__).resolve().parents[1] / "models" / "default" / "described-calibrated" / "perfml-model.json"
    training_floor = json.loads(manifest.read_text())["training"]["min_time_ms"]
    calibration, runs = _h100_timing_run(tmp_path, "kernel-duration")
    small = runs[runs["time_ms"] < training_floor].reset_index(drop=True)
    assert len(small) >= 5
    spec_only = _predict_h100(tmp_path, small, "spec", [])["predicted_ms"].to_numpy()
    assert np.all(spec_only >= training_floor)
    capsys.readouterr()
    got = _predict_h100(tmp_path, small, "durations", ["--calibration", str(calibration)])
    err = capsys.readouterr().err
    assert "launch floor was timed" not in err, err
    floor = calibrate_from_rows(pd.read_csv(calibration), "H100-SXM").best("launch_overhead", "ms").value
    assert floor < training_floor / 2
    assert np.all(got["predicted_ms"] >= floor * (1 - 1e-9)) and np.all(got["lower_ms"] >= floor * (1 - 1e-9))
    assert np.any(got["predicted_ms"] < training_floor)
    # closer to the measured durations than the training floor was
    y = small["time_ms"].to_numpy()
    assert np.mean(np.abs(got["predicted_ms"] / y - 1)) < np.mean(np.abs(spec_only / y - 1))
    events_calibration, _ = _h100_timing_run(tmp_path, "cuda-events")
    got = _predict_h100(tmp_path, small, "events", ["--calibration", str(events_calibration)])
    assert "its launch floor was timed as 'CUDA events around each launch" in capsys.readouterr().err
    assert np.all(got["predicted_ms"] >= training_floor)


# -- a characterization file is checked on its values, not on its own warnings (thirty-third session)
# A helper probe: the warnings a calibration wrote into the file were all a --characterization
# said; deleted, the file of add calls timed x10 was silent, as was a file edited by hand (its
# curve's times x30 and its dram_bandwidth /30) or a T4 file relabelled the V100 (board and device).

SHIPPED = __import__("pathlib").Path(__file__).resolve().parents[1] / "models" / "default"


@pytest.fixture(scope="module")
def a100_adds(tmp_path_factory):
    from perfml.datasets import load_dlops_runtimes

    folder = tmp_path_factory.mktemp("a100")
    rt = load_dlops_runtimes(HOME)
    for board in ("A100-PCIe-40GB", "Tesla-T4"):
        rows = rt[rt.board == board]
        adds = rows[rows.op == "add"][["board", "op", "B", "H", "time_ms"]]
        adds.to_csv(folder / f"adds_{board}.csv", index=False)
        adds.assign(time_ms=10 * adds.time_ms).to_csv(folder / f"adds_x10_{board}.csv", index=False)
        rows[rows.op == "mul"].head(5)[["board", "op", "B", "H"]].to_csv(folder / f"q_{board}.csv", index=False)
    return folder


def _characterized(folder, name, board):
    import json

    out = folder / f"{name}.json"
    if not out.exists():
        assert main(["characterize", "--from-runtimes", str(folder / f"{name}.csv"), "--board", board,
                     "--out", str(out)]) == 0
    return json.loads(out.read_text())


def _predict_with_file(folder, tmp_path, capsys, data, queries):
    import json

    n = len(list(tmp_path.glob("edited*.json")))  # a file and an output per call
    path = tmp_path / f"edited{n}.json"
    path.write_text(json.dumps(data))
    capsys.readouterr()
    status = main(["predict", "--model", str(SHIPPED), "--queries", str(folder / queries), "--characterization",
                   str(path), "--output", str(tmp_path / f"p{n}.csv"), "--data-home", str(HOME.path)])
    return status, capsys.readouterr().err


def test_a_characterizations_deleted_warning_is_given_again_from_its_values(a100_adds, tmp_path, capsys):
    data = _characterized(a100_adds, "adds_x10_A100-PCIe-40GB", "A100-PCIe-40GB")
    assert any("dram_bandwidth: add reached 0.0" in w for w in data["warnings"])
    data["warnings"] = []
    status, err = _predict_with_file(a100_adds, tmp_path, capsys, data, "q_A100-PCIe-40GB.csv")
    assert status == 0, err
    assert "warning: dram_bandwidth: add reached 0.0" in err and err.count("add reached") == 1, err
    assert "its streaming curve's DRAM-bound calls move" in err, err


def test_a_hand_edited_slow_curve_and_bandwidth_are_told(a100_adds, tmp_path, capsys):
    data = _characterized(a100_adds, "adds_A100-PCIe-40GB", "A100-PCIe-40GB")
    status, err = _predict_with_file(a100_adds, tmp_path, capsys, data, "q_A100-PCIe-40GB.csv")
    assert status == 0 and "reached" not in err and "DRAM-bound calls move" not in err, err  # the file as made
    data["stream_curve"]["seconds"] = [30 * t for t in data["stream_curve"]["seconds"]]
    for value in data["values"]:
        if value["quantity"] == "dram_bandwidth" and value["tier"] == "calibrated":
            value["value"] /= 30
    status, err = _predict_with_file(a100_adds, tmp_path, capsys, data, "q_A100-PCIe-40GB.csv")
    assert status == 0, err
    assert "dram_bandwidth: add reached 0.0" in err and "its streaming curve's DRAM-bound calls move" in err, err


@pytest.mark.parametrize("as_board", ["Tesla-V100-PCIe-32GB", "A100-PCIe-40GB"])
def test_a_characterization_relabelled_to_another_board_is_told_by_its_spec_values(a100_adds, tmp_path, capsys,
                                                                                   as_board):
    import pandas as pd

    data = _characterized(a100_adds, "adds_Tesla-T4", "Tesla-T4")
    data["board"] = as_board
    data["device"]["name"] = as_board
    queries = f"q_{as_board}.csv"
    if not (a100_adds / queries).exists():
        pd.DataFrame({"board": [as_board], "op": ["mul"], "B": [8], "H": [4096]}).to_csv(a100_adds / queries, index=False)
    status, err = _predict_with_file(a100_adds, tmp_path, capsys, data, queries)
    assert status == 0, err
    assert f"its spec values are not the registry's for {as_board} (dram_bandwidth 3.2e+11 B/s there" in err, err


def test_no_committed_characterization_earns_a_consistency_warning():
    from pathlib import Path

    from perfml.characterize.load import load_characterization
    from perfml.learned.target_characterization import file_consistency_warnings

    root = Path(__file__).resolve().parents[1]
    files = [p for p in sorted(root.glob("**/*.json")) if ".venv" not in p.parts and "mlruns" not in p.parts
             and '"perfml-board-characterization"' in p.read_text(errors="ignore")]
    assert len(files) >= 30
    for path in files:
        ch = load_characterization(path)
        assert [w for w in file_consistency_warnings(ch, path.name) if w not in ch.warnings] == [], path


def test_calibration_rows_of_kernels_the_calibration_does_not_read_are_named(a100_adds, tmp_path, capsys):
    """The calibrated operator tier reads add calls only: a file's bmm or mul rows changed no
    prediction, without a word, though --help says "any kernel of known work"."""
    import pandas as pd

    from perfml.datasets import load_dlops_runtimes

    rt = load_dlops_runtimes(HOME)
    board = rt[rt.board == "A100-PCIe-40GB"]
    adds = pd.read_csv(a100_adds / "adds_A100-PCIe-40GB.csv")
    mixed = pd.concat([adds, board[board.op == "bmm"].head(7)[["board", "op", "B", "M", "N", "K", "time_ms"]]])
    for name, frame, told in (("adds_only", adds, None), ("with_bmm", mixed, "bmm (7)")):
        path = tmp_path / f"{name}.csv"
        frame.to_csv(path, index=False)
        capsys.readouterr()
        status = main(["predict", "--model", str(SHIPPED), "--queries", str(a100_adds / "q_A100-PCIe-40GB.csv"),
                       "--calibration", str(path), "--output", str(tmp_path / f"{name}_p.csv"),
                       "--data-home", str(HOME.path)])
        err = capsys.readouterr().err
        assert status == 0, err
        if told is None:
            assert "the calibration does not read" not in err, err
        else:
            assert (f"of its rows of A100-PCIe-40GB are of kernels the calibration does not read ({told}) and change "
                    "no prediction" in err and "calibrated from add runs only" in err), err
