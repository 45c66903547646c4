"""The H100 measurements committed under sweeps/results (no GPU needed: they are replayed).

What these tests hold to: the result set is a real measurement (not synthetic) of the board
it names; its characterization is reproducible from it and physically plausible (achieved
rates at or under the specification, a DRAM latency well above the L2's); the superseded
run, whose DRAM chase fitted in the L2, gives no DRAM latency; and the operator table reads
as perfml query rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.characterize import characterize_results, load_characterization
from perfml.measure import ReplayBackend
from perfml.measure.store import ResultSet

ROOT = Path(__file__).resolve().parent.parent
H100 = ROOT / "sweeps" / "results" / "H100-SXM"
RUN2 = ROOT / "sweeps" / "results" / "archive" / "H100-SXM-run2"


@pytest.fixture(scope="module")
def h100():
    return characterize_results(H100, board="H100-SXM")


def _measured(ch, quantity: str, unit: str) -> float:
    (value,) = [v.value for v in ch.values if v.tier == "measured" and v.quantity == quantity and v.unit == unit]
    return value


def _spec(ch, quantity: str, unit: str) -> float:
    return next(v.value for v in ch.values if v.tier == "spec" and v.quantity == quantity and v.unit == unit)


def test_the_result_set_is_a_real_h100_measurement():
    rs = ResultSet.open(H100)
    assert not rs.synthetic
    assert rs.device.name == "NVIDIA H100 80GB HBM3" and rs.device.sms == 132
    frame = rs.read()
    assert len(frame) == 238 and frame["validated"].all()
    assert set(frame["backend"]) == {"cupy"} and not frame["synthetic"].any()
    assert (frame["time_median_s"] > 0).all()


def test_committed_characterization_is_what_the_results_give(h100):
    committed = load_characterization(H100 / "characterization.json", board="H100-SXM")
    ours = {(v.quantity, v.unit, v.tier): v.value for v in h100.values}
    theirs = {(v.quantity, v.unit, v.tier): v.value for v in committed.values}
    assert ours.keys() == theirs.keys()
    for key, value in ours.items():
        assert theirs[key] == pytest.approx(value, rel=1e-9), key


@pytest.mark.parametrize("quantity, unit", [
    ("dram_bandwidth", "B/s"),
    ("fp32_throughput", "instructions/cycle/SM"),
    ("fp64_throughput", "instructions/cycle/SM"),
    ("sfu_throughput", "instructions/cycle/SM"),
    ("shared_bandwidth", "B/cycle/SM"),
])
def test_achieved_rates_are_at_or_under_the_specification(h100, quantity, unit):
    """0.6-1.05x: the SFU at 1.98x (FMUL + MUFU counted as SFU work) was the bug this catches."""
    values = [v.value for v in h100.values if v.tier == "measured" and v.quantity == quantity and v.unit == unit]
    ratio = max(values) / _spec(h100, quantity, unit)
    assert 0.6 <= ratio <= 1.05, (quantity, ratio)


def test_latencies_order_by_memory_level(h100):
    """shared <= L1 < L2 < DRAM, DRAM well above the L2 (an L2-resident chase gave 1.03x)."""
    lat = {q: _measured(h100, q, "cycles") for q in ("shared_latency", "l1_latency", "l2_latency", "dram_latency")}
    assert lat["shared_latency"] <= lat["l1_latency"] < lat["l2_latency"] < lat["dram_latency"]
    assert lat["dram_latency"] > 1.5 * lat["l2_latency"]
    assert not h100.warnings


def test_a_dram_chase_held_by_the_l2_gives_no_dram_latency():
    run2 = characterize_results(RUN2, board="H100-SXM")
    assert not [v for v in run2.values if v.quantity == "dram_latency"]
    (warning,) = run2.warnings
    assert "latency_global.dram" in warning and "L2" in warning
    assert [v for v in run2.values if v.quantity == "l2_latency"]


def test_the_guard_needs_a_small_l2_to_keep_it():
    """The same rows on a board whose L2 the ring outgrows: the DRAM latency is kept."""
    from perfml.characterize.measured import measured_values
    from perfml.characterize.summary import summarize_results

    summary = summarize_results(ResultSet.open(RUN2).read())
    kept = measured_values(summary, "run2", l2_bytes=1.5 * 2**20)
    dropped = measured_values(summary, "run2", l2_bytes=50 * 2**20)
    assert [v for v in kept if v.quantity == "dram_latency"]
    assert not [v for v in dropped if v.quantity == "dram_latency"]


def test_replay_serves_the_recorded_h100_points():
    backend = ReplayBackend(H100)
    frame = ResultSet.open(H100).read().set_index("launch_key")
    launches = backend.launches()
    assert len(launches) == 238
    for launch in launches[:: 40]:
        m = backend.run(launch)
        assert m.median_s == pytest.approx(float(frame.loc[launch.key, "time_median_s"]))


def test_operator_table_is_measured_and_reads_as_queries(tmp_path):
    from perfml.learned.queries import read_query_csv

    ops = pd.read_csv(H100 / "dlops_torch.csv")
    assert len(ops) == 2955 and ops["config_id"].is_unique
    assert set(ops["source"]) == {"perfml-measured"} and set(ops["board"]) == {"H100-SXM"}
    assert (ops["time_ms"] > 0).all() and np.isfinite(ops["time_ms"]).all()
    assert (ops["time_ms"] <= ops["time_ms_median"] * 1.0001).all()  # mean of the 5 fastest <= median
    queries = tmp_path / "q.csv"
    ops.drop(columns=["time_ms", "time_ms_median"]).to_csv(queries, index=False)
    read = read_query_csv(queries)
    assert len(read) == len(ops)


def test_repeat_run_agrees_on_the_large_calls():
    """Two H100s of the same model: calls of >= 0.05 ms agree within a few percent (median)."""
    a = pd.read_csv(H100 / "dlops_torch.csv")
    b = pd.read_csv(RUN2 / "dlops_torch.csv")
    m = a.merge(b, on="config_id", suffixes=("", "_2"))
    large = m[m["time_ms"] >= 0.05]
    assert len(large) > 1000
    assert np.median(np.abs(large["time_ms"] / large["time_ms_2"] - 1)) < 0.05
    assert json.loads((RUN2 / "manifest.json").read_text())["device"]["uuid"] != \
        json.loads((H100 / "manifest.json").read_text())["device"]["uuid"]


def test_the_h100_sweep_enters_training_as_runtime_rows():
    """issue 11 §2: a board's sweep rows become training rows; the DRAM kernels' rate is the board's."""
    from perfml.boards import get_board, peak_bandwidth
    from perfml.measure.runtime_rows import sweep_runtime_rows

    rows = sweep_runtime_rows(H100)
    assert len(rows) == 238 and set(rows["board"]) == {"H100-SXM"} and set(rows["source"]) == {"sweep"}
    dram = rows[rows["app"] == "dram"]
    rate = dram["work_dram_bytes"] / (dram["time_ms_median"] * 1e-3)
    assert 0.6 <= rate.max() / peak_bandwidth(get_board("H100-SXM")) <= 1.05


def test_the_measured_characterization_carries_hong_kim_to_the_h100(data_home):
    """issue 11 §2 on real data: Hong & Kim with the H100's measured latency and bandwidth is far
    closer to the H100's measured application-kernel times than with the paper's GTX 280 values."""
    import importlib.util

    from perfml.characterize import board_characterization
    from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel

    spec = importlib.util.spec_from_file_location("h100_check", ROOT / "experiments" / "h100_measured_check.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    rows = check.application_rows(H100).assign(input_size_2=np.nan)
    y = rows["time_ms"].to_numpy(dtype=float)
    measured = load_characterization(H100 / "characterization.json", board="H100-SXM")
    chs = {"H100-SXM": board_characterization("H100-SXM", extra=(measured,))}
    paper = HongKimRuntimeModel(data_home=data_home).fit(rows, y).predict(rows)
    char = HongKimRuntimeModel(data_home=data_home, hardware="characterized", characterizations=chs).fit(rows, y).predict(rows)
    mape = lambda p: float(np.mean(np.abs(np.asarray(p, dtype=float) / y - 1)))  # noqa: E731
    assert mape(char) < 0.5 * mape(paper)
