"""Wave scaling (Habitat, Yu et al., USENIX ATC 2021, Sec. 4.1) as a closed-form baseline.

Where the truth comes from:

* the wave size of a board is SMs x resident blocks per SM by the occupancy calculator rules
  (NVIDIA CUDA Occupancy Calculator; the limits are the registry's per-compute-capability
  figures, CUDA C Programming Guide table "Technical Specifications per Compute Capability");
* the measured runs of Rodinia's ``lud_perimeter`` (32-thread blocks) in the data home's
  ``runtimes.csv.gz`` (source gpuperfpredict-rodinia): on each Kepler board the call time is
  flat while the grid fills at most one wave and about doubles past it, at the block count
  the wave size gives (GTX-680 128, Tesla-K20 208, Tesla-K40 240).

Also checked: more SMs never slow a launch down under this model, a launch that fills less
than one wave does not speed up with more SMs, ``wave_scaling=False`` builds exactly the
features of before, and bad parameter values are refused.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board, occupancy, wave_size
from perfml.errors import EstimatorParameterError
from perfml.learned.features.closed_form import ClosedFormFeatures, closed_form_logs, wave_logs
from perfml.learned.regressors import RuntimeRegressor


@pytest.mark.parametrize("board", ["GTX-680", "Tesla-K20", "Tesla-K40", "GTX-980", "GTX-750", "A100-PCIe-40GB"])
@pytest.mark.parametrize("threads", [32, 128, 256, 1024])
def test_wave_size_is_sms_times_resident_blocks(board, threads):
    b = get_board(board)
    assert wave_size(b, threads) == b.sms * occupancy(b, threads).active_blocks_per_sm


def _lud_perimeter(data_home):
    from perfml.datasets import load_runtimes

    rt = load_runtimes(data_home, source="gpuperfpredict-rodinia")
    rt = rt[(rt["app_id"] == "lud_perimeter") & (rt["gpu_config"].fillna("default") == "default")]
    assert len(rt), "the data home has no lud_perimeter runs"
    return rt


@pytest.mark.parametrize("board", ["GTX-680", "Tesla-K20", "Tesla-K40"])
def test_the_measured_time_steps_where_the_wave_size_says(data_home, board):
    rt = _lud_perimeter(data_home)
    rt = rt[rt["board"] == board]
    assert set(rt["block_x"] * rt["block_y"].fillna(1)) == {32}
    size = wave_size(get_board(board), 32)
    one = rt[(rt["grid_x"] > size // 4) & (rt["grid_x"] <= size)]["time_ms_mean"].median()
    two = rt[(rt["grid_x"] > size) & (rt["grid_x"] <= 2 * size)]["time_ms_mean"].median()
    tiny = rt[rt["grid_x"] <= size // 4]["time_ms_mean"].median()
    # flat inside the first wave (within 10 %), about twice that in the second one
    assert one / tiny == pytest.approx(1.0, abs=0.1)
    assert 1.6 < two / one < 2.4
    # and the closed-form wave time says the same: equal in the first wave, double past it
    rows = pd.DataFrame({"board": board, "block_x": [32.0] * 3, "block_y": 1.0,
                         "grid_x": [1.0, float(size), float(size + 1)], "grid_y": 1.0})
    logs = wave_logs(rows)
    assert logs[0] == pytest.approx(logs[1])
    assert logs[2] - logs[1] == pytest.approx(np.log(2.0))


def test_on_maxwell_the_time_grows_inside_one_wave(data_home):
    """Where wave scaling fails: the GTX-980's one wave holds 512 one-warp blocks (32 per SMM),
    yet its lud_perimeter time grows about fourfold across it (median 18 us at <= 32 blocks, 73 us at
    385-512), unlike the flat Kepler waves above; the wave model assumes resident blocks cost nothing."""
    rt = _lud_perimeter(data_home)
    rt = rt[rt["board"] == "GTX-980"]
    assert wave_size(get_board("GTX-980"), 32) == 512 and rt["grid_x"].max() <= 512
    few = rt[rt["grid_x"] <= 32]["time_ms_mean"].median()
    full = rt[rt["grid_x"] > 384]["time_ms_mean"].median()
    assert few == pytest.approx(0.018, abs=0.002) and full == pytest.approx(0.073, abs=0.003)


def test_more_sms_never_slow_a_launch_and_a_partial_wave_does_not_speed_up():
    small, big = "GTX-680", "Tesla-K40"  # both Kepler (16 blocks per SM), 8 vs 15 SMs
    clocks = {b: get_board(b).boost_clock_mhz for b in (small, big)}
    grids = np.array([1, 8, 64, 128, 129, 240, 241, 1000, 10_000], dtype=float)
    rows = pd.DataFrame({"board": [small] * len(grids) + [big] * len(grids), "block_x": 32.0, "block_y": 1.0,
                         "grid_x": np.concatenate([grids, grids]), "grid_y": 1.0})
    logs = wave_logs(rows)
    per_cycle_small = logs[: len(grids)] + np.log(clocks[small] * 1e6)
    per_cycle_big = logs[len(grids):] + np.log(clocks[big] * 1e6)
    assert np.all(per_cycle_big <= per_cycle_small + 1e-12)  # never more waves on more SMs
    one_wave = grids <= wave_size(get_board(small), 32)
    np.testing.assert_allclose(per_cycle_big[one_wave], per_cycle_small[one_wave])


def test_a_launch_that_cannot_be_placed_has_no_wave_time(tmp_path):
    from perfml.boards import load_registry

    # a registry of one synthetic board (not a real one) whose residency limits are unknown
    path = tmp_path / "boards.toml"
    path.write_text('schema_version = 1\n[sources]\nref = "synthetic test board"\n'
                    '[[board]]\nname = "NoLimits"\nfull_name = "synthetic board"\nsource = "@ref"\n'
                    'sms = { value = 4, source = "@ref" }\nboost_clock_mhz = { value = 1000, source = "@ref" }\n')
    registry = load_registry(path)
    from perfml.errors import MissingBoardParameterError

    with pytest.raises(MissingBoardParameterError, match="warp_size"):  # the board is there, its limits are not
        wave_size(get_board("NoLimits", registry=registry), 32)
    assert np.isnan(wave_logs(pd.DataFrame({"board": ["NoLimits"], "block_x": [32.0], "block_y": 1.0,
                                            "grid_x": [4.0], "grid_y": 1.0}), registry=registry)).all()
    # unknown launch; more threads than a block may have
    rows = pd.DataFrame({"board": ["GTX-680", "GTX-680"], "block_x": [np.nan, 4096.0],
                         "block_y": 1.0, "grid_x": [4.0, 4.0], "grid_y": 1.0})
    assert np.isnan(wave_logs(rows)).all()


def _rows():
    boards = ["GTX-680", "Tesla-K20", "Tesla-K40", "GTX-Titan"]
    grids = [16.0, 64.0, 128.0, 256.0, 512.0]
    frame = pd.DataFrame([(b, g) for b in boards for g in grids], columns=["board", "grid_x"])
    frame = frame.assign(app_id="kernel_without_description", input_size=frame["grid_x"] * 32,
                         block_x=32.0, block_y=1.0, grid_y=1.0)
    launch = frame[["block_x", "block_y", "grid_x", "grid_y"]]
    return frame, launch


def test_without_wave_scaling_the_features_are_those_of_before():
    X, launch = _rows()
    logs = closed_form_logs(X)
    y = np.exp(wave_logs(X)) * 1e3  # a kernel that follows the wave model exactly (synthetic)
    off = ClosedFormFeatures().fit(X, y, launch=launch, logs=logs)
    on = ClosedFormFeatures(waves=True).fit(X, y, launch=launch, logs=logs)
    f_off = off.transform(X, launch=launch, logs=logs)
    f_on = on.transform(X, launch=launch, logs=logs)
    assert "xfer_log_t_waves" not in f_off and "xfer_log_t_waves" in f_on
    assert set(off.baseline_choice_.values()) <= {"bsp", "roof_memory", "roof_compute"}
    # a model fitted before the baseline existed (no waves column in its tables) still transforms
    old = ClosedFormFeatures().fit(X, y, launch=launch, logs=logs)
    old.offsets_ = old.offsets_.drop(columns="waves")
    old.transfer_ = old.transfer_.drop(columns="waves")
    old._lookup_cache = {}
    pd.testing.assert_frame_equal(old.transform(X, launch=launch, logs=logs), f_off)
    # with it, a kernel that scales by waves is carried between boards exactly
    assert on.baseline_choice_["kernel_without_description"] == "waves"
    np.testing.assert_allclose(np.exp(f_on["xfer_log_t"]), y, rtol=1e-9)


@pytest.mark.parametrize("value", ["yes", 1.5, None])
def test_bad_wave_scaling_is_refused(value):
    X, _ = _rows()
    with pytest.raises(EstimatorParameterError, match="wave_scaling"):
        RuntimeRegressor(wave_scaling=value, analytical=False, profiles=False, target="log").fit(X, np.ones(len(X)))


def test_auto_keeps_wave_scaling_only_where_it_carries_between_training_boards(data_home):
    X, _ = _rows()
    follows_waves = np.exp(wave_logs(X)) * 1e3  # synthetic: time set by the waves only
    follows_cores = X["grid_x"].to_numpy() * 32 / np.array([get_board(b).sms * get_board(b).boost_clock_mhz
                                                           for b in X["board"]])
    for y, expected in ((follows_waves, True), (follows_cores, False)):
        model = RuntimeRegressor(wave_scaling="auto", shrinkage=0.0, profiles=False, data_home=data_home,
                                 learner_params={"n_estimators": 5})
        assert model.fit(X, y).wave_scaling_ is expected
