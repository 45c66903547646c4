"""The streaming-time curve of a board (issue 11 §1, §2): measured time per byte count.

Where the truth comes from:

* curves built here by hand are synthetic (labelled so) with knots chosen so that the
  expected interpolation is exact arithmetic;
* the real-data tests recompute the curve independently from the data home's
  ``dlops_runtimes.csv.gz``: the element-wise ``add`` rows of a board, bytes = 3 tensors of
  B*H float32 (datasets README, NeuSight section, operator semantics), median time (ms)
  per distinct byte count, made non-decreasing by a weighted pool-adjacent-violators fit
  written out in this file.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board
from perfml.characterize import Characterization, StreamCurve, calibrate_from_rows, spec_values
from perfml.characterize.load import load_characterization
from perfml.datasets import load_dlops_runtimes
from perfml.errors import InvalidValueError, PerfmlError, ResultSchemaError
from perfml.learned.operators import OperatorRegressor

from conftest import shared_data_home

HOME = shared_data_home()
SYNTHETIC = "synthetic test curve (not a measurement)"


def _curve(**kwargs) -> StreamCurve:
    """Synthetic: 10 us up to 1 kB (floor), then 1e-9 s per byte beyond 1 MB."""
    defaults = dict(kernel="add", bytes=(1e3, 1e6, 1e9), seconds=(1e-5, 1e-3, 1.0), source=SYNTHETIC)
    return StreamCurve(**{**defaults, **kwargs})


def test_interpolation_is_a_power_law_between_knots_a_floor_below_and_bandwidth_above():
    curve = _curve()
    assert curve.time_s([1e3, 1e6, 1e9]) == pytest.approx([1e-5, 1e-3, 1.0])
    # between 1e3 and 1e6 bytes: log-log linear, t = 1e-5 (b / 1e3)^(2/3)
    assert curve.time_s(1e4)[()] == pytest.approx(1e-5 * 10 ** (2 / 3))
    assert curve.time_s([1.0, 100.0]) == pytest.approx([1e-5, 1e-5])  # the floor
    assert curve.time_s(4e9)[()] == pytest.approx(4.0)  # the largest call's bandwidth, 1e9 B/s
    assert np.isnan(curve.time_s([0.0, -1.0, np.nan])).all()


def test_above_a_largest_call_that_does_not_reach_dram_the_further_bytes_go_at_the_boards_bandwidth():
    """A curve of small calls only, at the launch floor, charged larger calls its bytes per
    second: a 1.2 GB mul on an H100 took 14 ms (86 GB/s), 35x its measured time."""
    floor = _curve(bytes=(1e3, 1e4, 1e5), seconds=(1e-5, 1.05e-5, 1.1e-5))  # synthetic: all at the floor
    # without the board's figures, as before: the largest call's rate (1e5 B / 11 us)
    assert floor.time_s(1e9)[()] == pytest.approx(1.1e-5 * 1e4)
    # with them: the largest call's time, then the bandwidth (its rate above the floor is noise)
    assert floor.time_s(1e9, l2_bytes=1e6, bandwidth=1e12)[()] == pytest.approx(1.1e-5 + (1e9 - 1e5) / 1e12)
    assert floor.time_s(1e5, l2_bytes=1e6, bandwidth=1e12)[()] == pytest.approx(1.1e-5)  # continuous at the knot
    # a largest call well above the floor: its rate above the floor, at most the bandwidth
    rising = _curve(bytes=(1e3, 1e6, 2e6), seconds=(1e-5, 1e-4, 2.1e-4))
    rate = 2e6 / (2.1e-4 - 1e-5)
    assert rising.time_s(1e9, l2_bytes=1e6, bandwidth=1e12)[()] == pytest.approx(2.1e-4 + (1e9 - 2e6) / rate)
    assert rising.time_s(1e9, l2_bytes=1e6, bandwidth=1e9)[()] == pytest.approx(2.1e-4 + (1e9 - 2e6) / 1e9)
    # a largest call of L2_FACTOR x the L2 or more is DRAM-bound: time in proportion, figures given or not
    curve = _curve()
    assert curve.time_s(4e9, l2_bytes=1e6, bandwidth=1e12)[()] == pytest.approx(4.0)
    for c in (floor, rising):
        b = np.logspace(0, 12, 500)
        assert np.all(np.diff(c.time_s(b, l2_bytes=1e6, bandwidth=1e12)) >= 0)


def test_more_bytes_never_take_less_time_on_a_monotone_curve():
    curve = _curve()
    b = np.logspace(0, 12, 500)
    assert np.all(np.diff(curve.time_s(b)) >= 0)


def test_from_samples_takes_the_median_per_byte_count():
    curve = StreamCurve.from_samples([10, 10, 10, 20, 30, 30], [1, 2, 9, 4, 5, 7], kernel="add", source=SYNTHETIC)
    assert curve.bytes == (10.0, 20.0, 30.0)
    assert curve.seconds == pytest.approx((2.0, 4.0, 6.0))


def _pool_adjacent_violators(values, weights) -> np.ndarray:
    """Weighted non-decreasing least-squares fit, written out (independent of scikit-learn)."""
    blocks: list[list[float]] = []  # [weighted mean, weight, count]
    for v, w in zip(values, weights):
        blocks.append([float(v), float(w), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, w2, n2), (m1, w1, n1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.concatenate([[m] * n for m, _, n in blocks])


def test_from_samples_pools_a_knot_that_is_faster_than_a_smaller_call():
    # synthetic samples (not measurements): the 20-byte call ran faster than the 10-byte one
    curve = StreamCurve.from_samples([10, 10, 10, 20, 30, 40], [4, 4, 4, 1, 5, 6], kernel="add", source=SYNTHETIC)
    assert curve.bytes == (10.0, 20.0, 30.0, 40.0)
    pooled = float(np.exp((3 * np.log(4.0) + np.log(1.0)) / 4))  # weighted geometric mean, weights 3 and 1
    assert curve.seconds == pytest.approx((pooled, pooled, 5.0, 6.0))
    assert np.all(np.diff(curve.time_s(np.linspace(1, 100, 400))) >= 0)


def test_a_pooled_knot_does_not_depend_on_the_last_bit_of_its_samples():
    """A pooled knot is a weighted mean, whose last bit depends on the numpy build's summation
    order (the committed curves of models/default moved by 1 ulp between installs, and the
    calibrated operator model's trees with them). It is kept to 12 significant digits, so a
    change of a sample far below any measurement's precision (1e-14 relative: the pooled
    mean then moves by a few ulps, as with another summation order) leaves the curve as it
    was; untouched knots keep their median."""
    b = [10, 10, 10, 20, 30, 40]
    t = [4e-5, 4e-5, 4e-5, 1.3e-5, 5e-5, 6e-5]  # synthetic samples: the 20-byte call ran faster
    curve = StreamCurve.from_samples(b, t, kernel="add", source=SYNTHETIC)
    nudged = list(t)
    nudged[3] = t[3] * (1 + 1e-14)
    again = StreamCurve.from_samples(b, nudged, kernel="add", source=SYNTHETIC)
    assert curve.seconds[0] != pytest.approx(4e-5, rel=1e-3)  # the first two knots were pooled
    assert again.seconds == curve.seconds
    assert float(f"{curve.seconds[0]:.12g}") == curve.seconds[0]
    assert curve.seconds[2:] == (5e-5, 6e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(bytes=(1e3, 1e6), seconds=(1e-5, 1e-3)), "at least 3"),
        (dict(bytes=(1e3, 1e6, 1e9), seconds=(1e-5, 1e-3)), "one time per byte count"),
        (dict(bytes=(1e3, 1e3, 1e9)), "strictly increasing"),
        (dict(seconds=(1e-5, -1e-3, 1.0)), "finite and positive"),
        (dict(seconds=(1e-5, float("nan"), 1.0)), "finite and positive"),
        (dict(tier="spec"), "tier"),
    ],
)
def test_bad_curves_are_typed_errors(kwargs, match):
    with pytest.raises(InvalidValueError, match=match):
        _curve(**kwargs)
    assert issubclass(InvalidValueError, PerfmlError)


def _characterization(curve: StreamCurve | None) -> Characterization:
    board = get_board("Tesla-T4")
    return Characterization(board=board.name, source=SYNTHETIC, synthetic=True, values=spec_values(board),
                            stream_curve=curve)


def test_a_characterization_file_keeps_its_curve_and_a_file_without_one_has_none(tmp_path):
    with_curve = _characterization(_curve())
    path = with_curve.save(tmp_path / "t4.json")
    assert load_characterization(path).stream_curve == with_curve.stream_curve
    without = _characterization(None)
    assert "stream_curve" not in without.to_dict()  # files without a curve are written as before
    assert load_characterization(without.save(tmp_path / "plain.json")).stream_curve is None


@pytest.mark.parametrize("bad", [[1, 2, 3], {"kernel": "add", "bytes": "1,2,3", "seconds": [1, 2, 3]},
                                 {"kernel": "add", "bytes": [1, 2, True], "seconds": [1, 2, 3]},
                                 {"kernel": "add", "bytes": [3, 2, 1], "seconds": [1, 2, 3]}])
def test_a_malformed_curve_in_a_file_is_a_typed_error(tmp_path, bad):
    data = _characterization(None).to_dict()
    data["stream_curve"] = bad
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises((ResultSchemaError, InvalidValueError)):
        load_characterization(path)


def test_a_characterization_refuses_a_curve_of_the_wrong_type():
    with pytest.raises(InvalidValueError, match="StreamCurve"):
        _characterization({"kernel": "add"})  # type: ignore[arg-type]


# -- real data --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def add_rows() -> pd.DataFrame:
    rt = load_dlops_runtimes(HOME)
    return rt[rt["op"] == "add"].reset_index(drop=True)


@pytest.mark.parametrize("board", ["Tesla-T4", "A100-PCIe-40GB"])
def test_the_calibrated_curve_equals_an_independent_recomputation(add_rows, board):
    curve = calibrate_from_rows(add_rows, board).stream_curve
    part = add_rows[add_rows["board"] == board]
    nbytes = 3.0 * part["B"].astype(float) * part["H"].astype(float) * 4.0  # 3 FP32 tensors of B x H
    groups = part.assign(nbytes=nbytes).groupby("nbytes")["time_ms"]
    medians, counts = groups.median(), groups.size()
    expected = np.exp(_pool_adjacent_violators(np.log(medians.to_numpy()), counts.to_numpy()))
    assert curve.kernel == "add" and curve.tier == "calibrated"
    assert np.array(curve.bytes) == pytest.approx(medians.index.to_numpy())
    assert np.array(curve.seconds) * 1e3 == pytest.approx(expected)
    assert np.all(np.diff(curve.seconds) >= 0)
    # the real medians do break monotonicity somewhere (otherwise this test could not tell the fit from none)
    assert np.any(np.diff(medians.to_numpy()) < 0)


def test_the_curve_meets_the_calibrated_bandwidth_at_the_largest_sizes(add_rows):
    ch = calibrate_from_rows(add_rows, "Tesla-T4")
    bandwidth = ch.value("dram_bandwidth", "B/s", tiers=("calibrated",))
    curve = ch.stream_curve
    largest = np.array(curve.bytes[-20:])
    achieved = largest / curve.time_s(largest)
    assert np.median(achieved) == pytest.approx(bandwidth, rel=0.1)


def test_too_few_sizes_give_no_curve_and_say_so():
    # synthetic rows (not measurements): add calls at two sizes only, three repetitions each
    rows = pd.DataFrame({"board": "Tesla-T4", "op": "add", "B": [1024] * 3 + [4096] * 3, "H": 1024,
                         "time_ms": [0.05, 0.06, 0.05, 0.2, 0.21, 0.2]})
    ch = calibrate_from_rows(rows, "Tesla-T4")
    assert ch.stream_curve is None
    assert any("stream_curve not built: 2 distinct size(s)" in w for w in ch.warnings)


# -- the operator model uses it: direction (issue 11 §2) ---------------------------------------------

@pytest.mark.slow
def test_a_slower_curve_never_speeds_a_call_up_and_the_curve_is_used():
    rt = load_dlops_runtimes(HOME).sample(frac=1.0, random_state=0)
    rows = rt[rt.groupby(["board", "op", "split"]).cumcount() < 40].reset_index(drop=True)
    target = "Tesla-T4"
    train = rows[rows["board"] != target].reset_index(drop=True)
    test = rows[(rows["board"] == target) & rows["op"].isin(["add", "relu", "softmax", "ln", "bmm"])]
    adds = rt[rt["op"] == "add"]
    given = {b: calibrate_from_rows(adds, b) for b in sorted(set(rows["board"]))}
    est = OperatorRegressor(n_jobs=1, characterization=True, characterizations=given,
                            learner_params={"n_estimators": 40, "max_depth": 4})
    est.fit(train, train["time_ms"])
    measured = given[target]
    preds = []
    for factor in (0.9, 1.0, 2.0):  # the target's streaming times scaled (synthetic variants of the measured curve)
        curve = measured.stream_curve
        slower = StreamCurve(kernel=curve.kernel, bytes=curve.bytes, seconds=tuple(factor * s for s in curve.seconds),
                             source=SYNTHETIC)
        from dataclasses import replace

        est.set_params(characterizations={**given, target: replace(measured, stream_curve=slower)})
        preds.append(est.predict(test))
    preds = np.array(preds)
    assert np.all(np.diff(preds, axis=0) >= -1e-12 * preds[:-1])  # slower streaming: never faster
    memory = test["op"].isin(["add", "relu", "softmax", "ln"]).to_numpy()
    assert np.all(preds[2, memory] > preds[0, memory])  # memory-bound calls follow the curve


def test_the_characterized_roofline_takes_its_memory_time_from_the_curve():
    from perfml.closed_form.roofline import RooflineModel

    board = get_board("GTX-980")
    curve = _curve()
    given = {board.name: Characterization(board=board.name, source=SYNTHETIC, synthetic=True,
                                          values=spec_values(board), stream_curve=curve)}
    rows = pd.DataFrame({"board": board.name, "app_id": "vectorAdd", "input_size": [1 << 10, 1 << 16, 1 << 24],
                         "block_x": 256.0, "block_y": 1.0, "grid_x": [4.0, 256.0, 65536.0], "grid_y": 1.0})
    with_curve = RooflineModel(traffic="requested", peaks="characterized", characterizations=given).roofline_terms(rows)
    assert with_curve["memory_ms"].to_numpy() == pytest.approx(1e3 * curve.time_s(with_curve["bytes"].to_numpy()))
    assert set(with_curve["bandwidth_tier"]) == {"calibrated stream curve"}
    assert with_curve["roofline_ms"].to_numpy() == pytest.approx(
        np.maximum(with_curve["compute_ms"], with_curve["memory_ms"]).to_numpy())
    # without a curve: bytes over the bandwidth, as before
    plain = {board.name: Characterization(board=board.name, source=SYNTHETIC, synthetic=True, values=spec_values(board))}
    spec = RooflineModel(traffic="requested", peaks="characterized", characterizations=plain).roofline_terms(rows)
    assert spec["memory_ms"].to_numpy() == pytest.approx(1e3 * spec["bytes"].to_numpy() / (board.memory_bandwidth_gbs * 1e9))


def test_the_assembled_board_characterization_carries_the_committed_curve_and_prefers_a_measured_one():
    from dataclasses import replace

    from perfml.characterize import board_characterization, packaged_characterization

    committed = packaged_characterization("Tesla-T4").stream_curve
    assert committed is not None and board_characterization("Tesla-T4").stream_curve == committed
    measured = replace(_curve(), tier="measured")
    extra = _characterization(measured)
    assert board_characterization("Tesla-T4", extra=(extra,)).stream_curve == measured
    # a calibrated extra comes before the committed (also calibrated) one: it is the caller's newer data
    calibrated = _curve(seconds=(2e-5, 2e-3, 2.0))
    assert board_characterization("Tesla-T4", extra=(_characterization(calibrated),)).stream_curve == calibrated


def test_a_curve_faster_than_the_dram_at_dram_sized_working_sets_is_refused():
    from perfml.errors import PhysicalLimitError

    board = get_board("Tesla-T4")
    spec = board.memory_bandwidth_gbs * 1e9
    big = 4 * board.l2_bytes
    # synthetic: 2x the DRAM peak at 4x and 40x the L2: not physical
    fast = StreamCurve(kernel="add", bytes=(1e3, big, 10 * big), seconds=(1e-5, big / (2 * spec), 10 * big / (2 * spec)),
                       source=SYNTHETIC)
    with pytest.raises(PhysicalLimitError, match="stream curve"):
        _characterization(fast)
    # the same rate on an L2-resident working set is allowed (the L2 is faster than the DRAM)
    small = board.l2_bytes / 2
    l2_fast = StreamCurve(kernel="add", bytes=(1e3, small, 10 * big), seconds=(1e-5, small / (2 * spec), 10 * big / spec),
                          source=SYNTHETIC)
    assert _characterization(l2_fast).stream_curve == l2_fast


def test_every_committed_curve_reaches_dram_so_its_larger_calls_go_in_proportion():
    """The calibrated tier was trained and scored with these curves extrapolated in proportion
    to the bytes; the rule for a curve that does not reach DRAM (StreamCurve.time_s) must leave
    them so, or every calibrated figure recorded before it moves."""
    from pathlib import Path

    from perfml.characterize.limits import L2_FACTOR

    root = Path(__file__).resolve().parents[1]
    files = [p for p in sorted(root.glob("**/*.json")) if ".venv" not in p.parts and "mlruns" not in p.parts
             and '"perfml-board-characterization"' in p.read_text(errors="ignore")]
    curves = [(p, load_characterization(p)) for p in files]
    curves = [(p, ch) for p, ch in curves if ch.stream_curve is not None]
    assert len(curves) >= 30
    for path, ch in curves:
        l2 = float(get_board(ch.board).l2_bytes or 0.0)
        assert ch.stream_curve.bytes[-1] >= L2_FACTOR * l2, path
        b = np.array([2.0, 10.0]) * ch.stream_curve.bytes[-1]
        assert ch.stream_curve.time_s(b, l2_bytes=l2, bandwidth=1e15) == pytest.approx(ch.stream_curve.time_s(b)), path
