"""``--profile`` on real Nsight Compute exports: perfml's application kernels profiled on an H100 and an H200.

``sweeps/results/<board>/ncu/`` holds what ``experiments/profile_app_kernels_on_device.sh``
wrote on an NVIDIA H100 80GB HBM3 and an NVIDIA H200 (2026-11-27, ncu 2025.3.1, clocks as
found, one device machine each): the 65
points of the shipped ``applications`` spec, each launched twice (validation and one timed
launch), with the Nsight Compute metrics perfml maps (:data:`perfml.learned.profile_import.COUNTERS`)
plus ``gpu__time_duration.sum``, exported as the details page and the raw page. These are
MEASUREMENTS, not synthetic rows. The checks below compare them with what the kernels do by
construction (their sources in ``perfml/kernels/cuda``), with the board's registry clock, and
with the uninstrumented result set of the same board (``sweeps/results/<board>``, timed with
CUDA events on another machine with the same GPU model).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board
from perfml.learned.profile_import import attach_profile, describe_profile, read_profile
from perfml.measure.runtime_rows import application_runtime_rows

from conftest import needs_data_home, shared_data_home

ROOT = Path(__file__).resolve().parents[1]
SECTOR = 32  # bytes
#: registry name -> the device name ncu prints
BOARDS = {"H100-SXM": "NVIDIA H100 80GB HBM3", "H200": "NVIDIA H200"}


@pytest.fixture(scope="module", params=sorted(BOARDS))
def board(request):
    return request.param


def _export(board: str, page: str = "details") -> Path:
    return ROOT / "sweeps" / "results" / board / "ncu" / f"apps_{page}.csv"


@pytest.fixture(scope="module")
def reference(board):
    """The board's application kernels as a --reference (time_ms from CUDA events, no profiler)."""
    rows = application_runtime_rows(ROOT / "sweeps" / "results" / board)
    return rows[rows["spec"] == "applications"].reset_index(drop=True)


@pytest.fixture(scope="module")
def attached(board, reference):
    return attach_profile(read_profile(_export(board)), reference)


def test_both_pages_of_the_export_give_the_same_counters(board):
    details, raw = read_profile(_export(board)), read_profile(_export(board, "raw"))
    assert details.attrs["format"] == "ncu-details" and raw.attrs["format"] == "ncu-raw"
    assert len(details) == len(raw) == 65
    counters = [c for c in details.columns if c.startswith(("e.", "m."))]
    key = ["kernel", "block_x", "block_y", "grid_x", "grid_y", "run"]
    a, b = details.sort_values(key).reset_index(drop=True), raw.sort_values(key).reset_index(drop=True)
    # the details page prints a ratio rounded for display (13.24), the raw page in full (13.235294)
    pd.testing.assert_frame_equal(a[key + counters], b[key + counters], check_exact=False, rtol=1e-3)
    assert (a[["e.inst_executed", "m.Global Load Transactions"]] == b[["e.inst_executed", "m.Global Load Transactions"]]).all().all()
    assert (details["n_launches"] == 2).all()  # validation + one timed launch per point
    assert set(details["device"]) == {BOARDS[board]}


def test_every_reference_run_gets_its_own_counters(attached, reference):
    assert attached.attrs["reference_rows"] == len(reference) == 65
    # subSeqMax launches 32 x 128 threads at every size: its three sizes are told apart by their work
    ssm = attached[attached["app_id"] == "subSeqMax"].sort_values("input_size")
    assert ssm["input_size"].tolist() == [131072, 1048576, 16777216]
    assert np.all(np.diff(ssm["e.inst_executed"]) > 0)
    assert len(attached.attrs["paired_by_work"]) == 3
    assert "paired with the reference's sizes" in describe_profile(attached)


def _by_app(attached, app):
    rows = attached[attached["app_id"] == app]
    assert len(rows), app
    return rows, rows["input_size"].to_numpy(float)


def test_flop_counts_are_what_the_kernels_compute(attached):
    flops = "m.Floating Point Operations(Single Precision)"
    rows, n = _by_app(attached, "vectorAdd")  # one FADD per element
    np.testing.assert_array_equal(rows[flops], n)
    for app in ("matMul_gpu", "matMul_gpu_uncoalesced", "matMul_gpu_sharedmem", "matMul_gpu_sharedmem_uncoalesced"):
        rows, n = _by_app(attached, app)  # N^3 FFMA, two operations each
        np.testing.assert_array_equal(rows[flops], 2 * n**3)
    for app in ("matrix_sum_normal", "matrix_sum_coalesced"):
        rows, n = _by_app(attached, app)  # one FADD per element of the N x N matrices
        np.testing.assert_array_equal(rows[flops], n**2)


def test_global_memory_counters_are_what_the_kernels_move(attached):
    loads, stores = "m.Global Load Transactions", "m.Global Store Transactions"
    rows, n = _by_app(attached, "vectorAdd")  # reads A and B, writes C (4-byte floats)
    np.testing.assert_array_equal(rows[loads], 2 * 4 * n / SECTOR)
    np.testing.assert_array_equal(rows[stores], 4 * n / SECTOR)
    rows, n = _by_app(attached, "subSeqMax")  # reads the N integers once, coalesced
    np.testing.assert_array_equal(rows[loads], 4 * n / SECTOR)
    # ncu flushes the caches before each replayed pass: the streaming kernels read every input
    # byte from DRAM once (a few sectors more: the kernel's parameters and code)
    for app, arrays in (("vectorAdd", 2), ("matrix_sum_coalesced", 2), ("dotProd", 2)):
        rows, n = _by_app(attached, app)
        elements = n**2 if app.startswith("matrix") else n
        compulsory = arrays * 4 * elements / SECTOR
        ratio = rows["m.Device Memory Read Transactions"].to_numpy() / compulsory
        assert np.all((ratio >= 1.0) & (ratio < 1.05)), (app, ratio)


def test_uncoalesced_variants_need_more_sectors_per_request_than_their_twins(attached):
    per_request = "m.Global Load Transactions Per Request"
    for coalesced, uncoalesced in (("matMul_gpu", "matMul_gpu_uncoalesced"),
                                   ("matMul_gpu_sharedmem", "matMul_gpu_sharedmem_uncoalesced"),
                                   ("matrix_sum_coalesced", "matrix_sum_normal")):
        good, _ = _by_app(attached, coalesced)
        bad, _ = _by_app(attached, uncoalesced)
        assert bad[per_request].min() > good[per_request].max(), (coalesced, uncoalesced)
        assert bad["m.Global Memory Load Efficiency"].max() < good["m.Global Memory Load Efficiency"].min()


def _metric_per_launch(board: str, metric: str) -> pd.DataFrame:
    """One metric per launch (``launch``, ``kernel``, ``block``, ``grid``, ``value``, ``unit``), read
    from the details page with the csv module: perfml's reader does not use the metrics these
    tests check it against."""
    rows = []
    with _export(board).open(newline="") as fh:
        for rec in csv.DictReader(fh):
            if rec["Metric Name"] == metric:
                rows.append({"launch": rec["ID"], "kernel": rec["Kernel Name"], "block": rec["Block Size"],
                             "grid": rec["Grid Size"], "value": float(rec["Metric Value"].replace(",", "")),
                             "unit": rec["Metric Unit"]})
    return pd.DataFrame(rows)


def _durations_ms(board: str) -> pd.DataFrame:
    """``gpu__time_duration.sum`` per launch in ms (``ms`` column)."""
    scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}
    times = _metric_per_launch(board, "gpu__time_duration.sum")
    assert times["unit"].isin(list(scale)).all(), set(times["unit"])
    return times.assign(ms=times["value"] * times["unit"].map(scale))


def test_elapsed_cycles_sm_is_the_sum_over_the_sms_of_the_sm_clock(board):
    """The mapping e.elapsed_cycles_sm = sm__cycles_elapsed.sum (nvprof's sum over the SMs) on a
    real export: over every SM and the kernel's duration, the cycles give the SM clock, which for
    launches of 1 ms and more is the board's boost clock (1980 MHz; clocks were left as found)."""
    spec = get_board(board)
    cycles = _metric_per_launch(board, "sm__cycles_elapsed.sum").set_index("launch")["value"]
    times = _durations_ms(board)
    long = times[times["ms"] >= 1.0]
    assert len(long) >= 20
    mhz = cycles.loc[long["launch"]].to_numpy() / spec.sms / (long["ms"].to_numpy() * 1e-3) / 1e6
    assert np.all(np.abs(mhz / spec.boost_clock_mhz - 1) < 0.01), mhz


def test_ncu_durations_agree_with_the_result_sets_cuda_event_times(board, reference):
    """Two tools on two H100 machines: kernels of 1 ms or more agree within 3 % (ncu prints three
    significant digits: "1.22" ms). Shorter kernels differ either way: ncu's duration leaves out
    the launch that CUDA events around it include, and ncu flushes the caches before each pass
    while the timed repetitions of a small input find it in the L2 (50 / 60 MB)."""
    times = _durations_ms(board)
    ref = reference.assign(block=[f"({int(x)}, {int(y)}, {int(z)})" for x, y, z in
                                  reference[["block_x", "block_y", "block_z"]].to_numpy()],
                           grid=[f"({int(x)}, {int(y)}, {int(z)})" for x, y, z in
                                 reference[["grid_x", "grid_y", "grid_z"]].to_numpy()])
    # one size per launch only (subSeqMax launches every size alike: its runs are paired elsewhere)
    unique = ref.groupby(["app_id", "block", "grid"])["input_size"].transform("nunique") == 1
    merged = ref[unique].merge(times.groupby(["kernel", "block", "grid"], as_index=False)["ms"].median(),
                               left_on=["app_id", "block", "grid"], right_on=["kernel", "block", "grid"])
    assert len(merged) == unique.sum()
    ratio = merged["ms"] / merged["time_ms"]
    long = merged["time_ms"] >= 1.0
    assert long.sum() >= 10
    assert np.all(np.abs(ratio[long] - 1) < 0.03), merged[long]


@needs_data_home()
def test_a_profile_moves_the_reference_row_and_the_target_row_alike():
    """``perfml predict --reference (H100) --profile (its ncu export)`` for the H200: the counters
    describe the kernel on both rows of the model's board ratio. Kept under the profiled board's
    name, the reference row saw none of them, and the ratio took the difference between Hopper
    counters and the training boards' as a difference between the boards (10.47 -> 10.98 % MAPE)."""
    from perfml.learned.bundle import load_predictor, predict_any
    from perfml.learned.profile_import import use_reference_profile
    from perfml.learned.queries import check_reference

    def rows(board):
        frame = application_runtime_rows(ROOT / "sweeps" / "results" / board)
        return frame[frame["spec"] == "applications"].drop(columns=["source", "spec", "point_id"]).reset_index(drop=True)

    reference, target = rows("H100-SXM"), rows("H200")
    queries = target.drop(columns=["time_ms"])
    ref = check_reference(reference, "reference")
    plain = load_predictor(ROOT / "models" / "default", data_home=shared_data_home())
    profiled = load_predictor(ROOT / "models" / "default", data_home=shared_data_home())
    attached = attach_profile(read_profile(_export("H100-SXM")), ref)
    assert [use_reference_profile(m, attached) for m in profiled.amaris_models].count(None) >= 1
    a = predict_any(plain, queries, "queries", reference=(ref, None), reference_where="reference")
    b = predict_any(profiled, queries, "queries", reference=(ref, None), reference_where="reference")
    assert (a["basis"] == "reference").all()
    np.testing.assert_allclose(b["predicted_ms"], a["predicted_ms"], rtol=1e-3)


@needs_data_home()
def test_an_own_kernels_profile_carries_its_streaming_runs_part_way_by_the_bandwidth_ratio():
    """The same runs as a user's own kernels (``my_<app>``: the model knows nothing of them), the
    H200 predicted from the H100's times with the H100's export: the model's ratio between the two
    boards (both beyond every training board) is within 1 % of 1 for every run, and the profiled
    roofline says ``matrix_sum_coalesced`` streams (its DRAM bytes over the bandwidth are its longest
    roof), so it is carried by sqrt(model ratio x 3.35 / 4.8 TB/s), about 0.835 (measured H200 /
    H100: 0.84); the interval holds both carries. A compute-bound run (matMul_gpu) has a roofline
    ratio of 1 (the same FP32 rate) and stays near the model's."""
    from perfml.boards import peak_bandwidth
    from perfml.learned.bundle import load_predictor, predict_any
    from perfml.learned.profile_import import with_profiled_work
    from perfml.learned.queries import check_reference

    def rows(board):
        frame = application_runtime_rows(ROOT / "sweeps" / "results" / board)
        frame = frame[frame["spec"] == "applications"].drop(columns=["source", "spec", "point_id"]).reset_index(drop=True)
        return frame.assign(app_id="my_" + frame["app_id"])

    reference, target = rows("H100-SXM"), rows("H200")
    raw = reference.assign(kernel_name=reference["app_id"].str[3:])
    ref = check_reference(reference, "reference")
    attached = attach_profile(read_profile(_export("H100-SXM")), ref, reference_raw=raw)
    model = load_predictor(ROOT / "models" / "default", data_home=shared_data_home())
    queries = target.drop(columns=["time_ms"])
    plain = predict_any(model, queries, "queries", reference=(ref, None), reference_where="reference")
    got = predict_any(model, queries, "queries", reference=(with_profiled_work(ref, attached), None),
                      reference_where="reference")
    keys = ["app_id", "input_size", "block_x", "grid_x"]
    ref_ms = target[keys].merge(reference[keys + ["time_ms"]], on=keys, how="left")["time_ms"].to_numpy()
    streaming = (target["app_id"] == "my_matrix_sum_coalesced").to_numpy()
    compute = (target["app_id"] == "my_matMul_gpu").to_numpy()
    assert streaming.sum() >= 4 and compute.sum() >= 4
    assert (plain["basis"] == "reference").all() and (got["basis"] == "reference+profile").all()
    model_ratio = plain["predicted_ms"].to_numpy() / ref_ms
    np.testing.assert_allclose(model_ratio, 1.0, rtol=0.01)
    bandwidth = peak_bandwidth(get_board("H100-SXM")) / peak_bandwidth(get_board("H200"))
    ratio = got["predicted_ms"].to_numpy() / ref_ms
    np.testing.assert_allclose(ratio[streaming], np.sqrt(model_ratio * bandwidth)[streaming], rtol=1e-6)
    # the same FP32 rate and clock on both boards: the roofline ratio of a compute-bound run is 1
    np.testing.assert_allclose(ratio[compute], np.sqrt(model_ratio)[compute], rtol=1e-6)
    carried = got["predicted_ms"].to_numpy()[streaming]
    assert (got["lower_ms"].to_numpy()[streaming] <= bandwidth * ref_ms[streaming]).all()
    assert (got["upper_ms"].to_numpy()[streaming] >= ref_ms[streaming]).all()
    assert (carried < ref_ms[streaming]).all()


# -- DRAM bytes for DRAM sectors: an H200 export of both (thirty-fifth session) ---------------
H200_BOTH = ROOT / "sweeps" / "results" / "archive" / "H200-run3" / "ncu"
_SECTOR_METRICS = ("dram__sectors_read.sum", "dram__sectors_write.sum")


def _without_sector_metrics(export: Path, out: Path) -> Path:
    """The export as one that asked ncu for dram__bytes_* only (its sector metrics taken out)."""
    with export.open(newline="") as src:
        rows = list(csv.reader(src))
    if "Metric Name" in rows[0]:  # details page: one line per metric
        name = rows[0].index("Metric Name")
        rows = [rows[0], *[r for r in rows[1:] if r[name] not in _SECTOR_METRICS]]
    else:  # raw page: one column per metric
        keep = [i for i, c in enumerate(rows[0]) if c not in _SECTOR_METRICS]
        rows = [[r[i] for i in keep] for r in rows]
    with out.open("w", newline="") as dst:
        csv.writer(dst, quoting=csv.QUOTE_ALL).writerows(rows)
    return out


@pytest.mark.parametrize("page", ["details", "raw"])
def test_dram_bytes_give_the_sectors_of_the_same_launches(tmp_path, page):
    """The calibration spec's 18 vectorAdd points profiled with dram__bytes_* and
    dram__sectors_* on an H200 (profile_app_kernels_on_device.sh, SPEC=calibration): read
    from the bytes alone, every launch's DRAM counters are its sector counts (within the
    export's auto-scaled rounding, 11.01 Kbyte for 344 sectors)."""
    export = H200_BOTH / f"calibration_{page}.csv"
    both = read_profile(export)
    bytes_only = read_profile(_without_sector_metrics(export, tmp_path / export.name))
    assert len(both) == len(bytes_only) == 18 and set(both["device"]) == {"NVIDIA H200"}
    for column in ("m.Device Memory Read Transactions", "m.Device Memory Write Transactions"):
        assert both[column].notna().all() and bytes_only[column].notna().all()
        np.testing.assert_allclose(bytes_only[column], both[column], rtol=0.011, atol=1, err_msg=column)
    assert (both["m.Device Memory Read Transactions"] * SECTOR).max() > 1e9  # DRAM-sized calls among them
