"""Microbenchmark kernels of a recorded sweep as training rows of the learned model (issue 11 §2).

Every sweep here is SYNTHETIC (tests/conftest.py SyntheticBackend: made-up timings, the set
created with synthetic=True); no real sweep has been recorded (sweeps/results/ is empty:
no GPU was lent to any session so far).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SYNTHETIC_DEVICE, SYNTHETIC_SPEC, SyntheticBackend, needs_data_home

from perfml.errors import UnknownBoardError
from perfml.measure import DeviceInfo
from perfml.measure.runner import run_sweeps
from perfml.measure.runtime_rows import sweep_runtime_rows
from perfml.measure.spec import parse_spec

# A synthetic device carrying the name of a registry board, so its rows land on that board.
GTX980_SYNTHETIC = DeviceInfo(**{**SYNTHETIC_DEVICE.to_dict(), "name": "GeForce GTX 980", "compute_capability": "5.2",
                                 "sms": 16})


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, synthetic_catalog):
    out = tmp_path_factory.mktemp("sweeps") / "GTX-980-synthetic"
    rs, _ = run_sweeps([parse_spec(SYNTHETIC_SPEC)], SyntheticBackend(GTX980_SYNTHETIC), out, catalog=synthetic_catalog)
    return rs


def test_a_sweep_becomes_runtime_rows_of_its_board(sweep):
    raw = sweep.read()
    rows = sweep_runtime_rows(sweep.path)
    assert len(rows) == len(raw) > 0
    assert set(rows.board) == {"GTX-980"}  # the device name resolved in the registry
    assert set(rows.source) == {"sweep-synthetic"} and rows.synthetic.all()  # labeled synthetic, in the data
    assert set(rows.app_id) == set(raw.kernel)
    np.testing.assert_allclose(rows.measured_ms, raw.time_mean_s * 1e3)
    np.testing.assert_allclose(rows.input_size, raw.threads)
    # the work comes from the sidecar: syn_dram moves ITERS*16 bytes per thread (tests/conftest.py)
    dram = rows.app_id.str.startswith("syn_dram").to_numpy()
    np.testing.assert_allclose(rows.work_dram_bytes[dram], raw.bytes[dram])
    assert (rows.work_dram_bytes[dram] > 0).all()


def test_an_unknown_device_needs_a_board(tmp_path, synthetic_catalog):
    rs, _ = run_sweeps([parse_spec(SYNTHETIC_SPEC)], SyntheticBackend(), tmp_path / "unknown", catalog=synthetic_catalog)
    with pytest.raises(UnknownBoardError):
        sweep_runtime_rows(rs.path)
    assert set(sweep_runtime_rows(rs.path, board="GTX-970").board) == {"GTX-970"}


def test_sweep_rows_enter_training_like_any_kernel_with_their_sidecar_work(sweep, data_home):
    from perfml.evaluation.closed_form import describable_runtimes
    from perfml.learned.features import FeatureBuilder
    from perfml.learned.regressors import RuntimeRegressor

    sweep_rows = sweep_runtime_rows(sweep.path)
    rt = describable_runtimes(data_home, source="gpuperfpredict-nca")
    rt = rt[rt.board.isin(["GTX-980", "GTX-680", "Tesla-K40"]) & rt.app_id.isin(["vectorAdd", "matMul_gpu"])]
    rt = rt.groupby(["board", "app_id"]).head(20)
    rows = pd.concat([rt, sweep_rows], ignore_index=True)
    y = rows.measured_ms.to_numpy(dtype=float)
    model = RuntimeRegressor(learner="xgboost", learner_params={"n_estimators": 10}, profiles=False, shrinkage=0.5,
                             data_home=data_home).fit(rows, y)
    assert set(sweep_rows.app_id) <= set(model.features_.apps_)  # trained on them, like any kernel
    pred = model.predict(sweep_rows)
    assert np.isfinite(pred).all() and (pred > 0).all()
    # the memory roofline of a sweep row is its sidecar's DRAM bytes over the board's bandwidth
    F = FeatureBuilder(profiles=False, data_home=data_home).fit(rows, y).transform(sweep_rows)
    from perfml.boards import get_board, peak_bandwidth

    dram = (sweep_rows.work_dram_bytes > 0).to_numpy()
    expected = np.log(sweep_rows.work_dram_bytes[dram] / peak_bandwidth(get_board("GTX-980")))
    np.testing.assert_allclose(F.roof_log_memory[dram], expected)
    # without the work column the same rows fall back to threads / bandwidth (the test can fail)
    G = FeatureBuilder(profiles=False, data_home=data_home).fit(rows, y).transform(sweep_rows.drop(columns=["work_dram_bytes"]))
    assert not np.allclose(G.roof_log_memory[dram], expected)


def test_training_refuses_a_synthetic_sweep_unless_asked(sweep, data_home):
    from perfml.errors import SyntheticSweepError
    from perfml.learned.training import with_sweep_rows

    rt = pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": [1.0], "measured_ms": [1.0]})
    with pytest.raises(SyntheticSweepError, match="synthetic"):
        with_sweep_rows(rt, [sweep.path])
    both = with_sweep_rows(rt, [sweep.path], allow_synthetic=True)
    assert len(both) == 1 + len(sweep.read()) and both.app_id.iloc[0] == "vectorAdd"


@needs_data_home()
def test_perfml_train_with_a_synthetic_sweep_exits_2_and_writes_nothing(sweep, tmp_path, capsys):
    from perfml.cli import main

    out = tmp_path / "model"
    assert main(["train", "--out", str(out), "--source", "BSPGPU", "--sweep", str(sweep.path)]) == 2
    assert "synthetic" in capsys.readouterr().err and not out.exists()
