"""Closed-form models with the board characterization (issue 11 §2 and §5).

Every use of a characterization is opt-in (``peaks``, ``latencies``, ``hardware``); the
defaults are the models as they were. The characterizations built here are synthetic
(``synthetic=True``, sources say so): the committed calibrated files hold no latency,
so BSP's mechanism is tested on a synthetic one. Direction tests (issue 11 §2): a
changed characterization moves a prediction the physically expected way, over random
characterizations (hypothesis).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfml.boards import get_board, peak_bandwidth, peak_flops
from perfml.characterize import Characterization, CharacterizedValue, board_characterization, spec_values
from perfml.closed_form.bsp import BSPModel
from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
from perfml.closed_form.roofline import RooflineModel
from perfml.errors import CharacterizationBoardError, EstimatorParameterError, PhysicalLimitError
from conftest import shared_data_home

HOME = shared_data_home()  # tests are entry points: the data home is passed down

BOARD = "GTX-980"
SYNTHETIC = "synthetic test value (not a measurement)"


def synthetic(board: str = BOARD, **achieved: tuple[float, str]) -> Characterization:
    """Spec tier of ``board`` plus ``measured`` estimates given as quantity=(value, unit)."""
    values = list(spec_values(get_board(board)))
    values += [CharacterizedValue(q, v, unit, "measured", SYNTHETIC) for q, (v, unit) in achieved.items()]
    return Characterization(board=board, source=SYNTHETIC, synthetic=True, values=tuple(values))


def rows(app_id: str, sizes, board: str = BOARD) -> pd.DataFrame:
    return pd.DataFrame({"board": board, "app_id": app_id, "input_size": np.asarray(sizes, dtype=float)})


VECTOR = rows("vectorAdd", [2**20, 2**22, 2**24])
MATMUL = rows("matMul_gpu_sharedmem", [1024, 2048])


def predict(est, X):
    return est.fit(X, np.ones(len(X))).predict(X)


# -- defaults unchanged, opt-in used ----------------------------------------------------------
def test_roofline_characterized_peaks_take_the_achieved_bandwidth_and_say_which_tier():
    """GTX-750's committed calibrated file has an achieved DRAM bandwidth (estimate), a
    matMul FP32 rate that is only a lower bound and a vectorAdd streaming curve: without the
    curve the bandwidth is used, with it the curve; the FP32 peak stays spec."""
    from dataclasses import replace

    X = rows("vectorAdd", [2**24], board="GTX-750")
    spec = RooflineModel().fit(X, [1.0]).roofline_terms(X)
    committed = board_characterization("GTX-750")
    # without its streaming curve: the achieved bandwidth
    no_curve = {"GTX-750": replace(committed, stream_curve=None)}
    char = RooflineModel(peaks="characterized", characterizations=no_curve).fit(X, [1.0]).roofline_terms(X)
    achieved = committed.value("dram_bandwidth", "B/s", tiers=("calibrated",), bounds=("estimate",))
    assert achieved is not None and achieved < peak_bandwidth(get_board("GTX-750"))
    assert (spec["bandwidth_tier"] == "spec").all()
    assert (char["bandwidth_tier"] == "calibrated").all() and (char["compute_tier"] == "spec").all()
    np.testing.assert_allclose(char["memory_ms"] / spec["memory_ms"], peak_bandwidth(get_board("GTX-750")) / achieved)
    np.testing.assert_allclose(char["compute_ms"], spec["compute_ms"])
    # with it (the committed file has one): the curve's time for the same bytes
    curved = RooflineModel(peaks="characterized", characterizations=board_characterization).fit(X, [1.0]).roofline_terms(X)
    assert (curved["bandwidth_tier"] == "calibrated stream curve").all()
    np.testing.assert_allclose(curved["memory_ms"], 1e3 * committed.stream_curve.time_s(curved["bytes"].to_numpy()))


def test_roofline_without_achieved_values_equals_the_spec_roofline():
    ch = synthetic()
    a = predict(RooflineModel(), MATMUL)
    b = predict(RooflineModel(peaks="characterized", characterizations={BOARD: ch}), MATMUL)
    np.testing.assert_allclose(a, b)


def test_bsp_falls_back_to_the_paper_latencies_without_characterized_latencies():
    """The committed calibrated files hold no latency: BSP keeps seed 003's g values."""
    X = rows("vectorAdd", [2**20, 2**22], board="GTX-750")
    model = BSPModel(data_home=HOME, constants_sources=(), latencies="characterized", characterizations=board_characterization)
    assert set(model.latency_tiers("GTX-750").values()) == {"paper"}
    a = BSPModel(data_home=HOME, constants_sources=()).model_terms(X)["t1_ms"]
    b = model.model_terms(X)["t1_ms"]
    np.testing.assert_allclose(a, b)


def test_bsp_takes_a_characterized_dram_latency():
    """Synthetic characterization with g_GM = 2x the paper's 500 cycles: Comm_GM doubles (seed 003 eq. 5, no cache hits)."""
    ch = synthetic(dram_latency=(1000.0, "cycles"))
    base = BSPModel(data_home=HOME, constants_sources=()).model_terms(VECTOR)
    model = BSPModel(data_home=HOME, constants_sources=(), latencies="characterized", characterizations={BOARD: ch})
    assert model.latency_tiers(BOARD)["lat_global"] == "measured"
    terms = model.model_terms(VECTOR)
    np.testing.assert_allclose(terms["comm_gm"], 2 * base["comm_gm"])
    np.testing.assert_allclose(terms["comp"], base["comp"])


def test_bsp_latency_tiers_say_paper_when_the_paper_latencies_are_used():
    """With the default ``latencies="paper"`` a characterization is not read: the tiers said "measured" (probe 37)."""
    ch = synthetic(dram_latency=(1000.0, "cycles"))
    model = BSPModel(data_home=HOME, constants_sources=(), characterizations={BOARD: ch})
    assert set(model.latency_tiers(BOARD).values()) == {"paper"}
    np.testing.assert_allclose(model.model_terms(VECTOR)["comm_gm"],
                               BSPModel(data_home=HOME, constants_sources=()).model_terms(VECTOR)["comm_gm"])


def test_hongkim_characterized_hardware_changes_the_prediction_only_when_asked():
    X = rows("vectorAdd", [2**22, 2**24], board="GTX-750")
    paper = predict(HongKimRuntimeModel(), X)
    again = predict(HongKimRuntimeModel(hardware="paper", characterizations={"GTX-750": synthetic("GTX-750")}), X)
    char = predict(HongKimRuntimeModel(hardware="characterized", characterizations=board_characterization), X)
    np.testing.assert_allclose(paper, again)
    assert np.all(np.isfinite(char)) and not np.allclose(paper, char)


# -- direction tests (issue 11 §2) -----------------------------------------------------------
_SPEC_BW = peak_bandwidth(get_board(BOARD))
_SPEC_FP32 = peak_flops(get_board(BOARD), "fp32", clock="boost")
fractions = st.floats(min_value=0.2, max_value=1.45)


@given(a=fractions, b=fractions)
def test_roofline_more_bandwidth_never_slows_a_memory_bound_kernel(a, b):
    low, high = sorted((a, b))
    slow = predict(RooflineModel(peaks="characterized", characterizations={BOARD: synthetic(dram_bandwidth=(low * _SPEC_BW, "B/s"))}), VECTOR)
    fast = predict(RooflineModel(peaks="characterized", characterizations={BOARD: synthetic(dram_bandwidth=(high * _SPEC_BW, "B/s"))}), VECTOR)
    assert np.all(fast <= slow * (1 + 1e-12))


@given(a=fractions, b=fractions, bw=fractions)
def test_roofline_more_fp32_throughput_never_slows_any_kernel(a, b, bw):
    low, high = sorted((a, b))
    X = pd.concat([MATMUL, VECTOR], ignore_index=True)

    def at(fp32):
        ch = synthetic(fp32_throughput=(fp32 * _SPEC_FP32, "FLOP/s"), dram_bandwidth=(bw * _SPEC_BW, "B/s"))
        return predict(RooflineModel(peaks="characterized", characterizations={BOARD: ch}), X)

    assert np.all(at(high) <= at(low) * (1 + 1e-12))


@given(a=fractions, b=fractions)
def test_hongkim_more_bandwidth_never_slows_a_memory_bound_kernel(a, b):
    low, high = sorted((a, b))

    def at(f):
        ch = synthetic(dram_bandwidth=(f * _SPEC_BW, "B/s"))
        return predict(HongKimRuntimeModel(hardware="characterized", characterizations={BOARD: ch}), VECTOR)

    slow, fast = at(low), at(high)
    assert np.all(np.isfinite(slow)) and np.all(fast <= slow * (1 + 1e-9))


@given(a=st.floats(min_value=100.0, max_value=2000.0), b=st.floats(min_value=100.0, max_value=2000.0))
def test_hongkim_longer_dram_latency_never_speeds_a_kernel_up(a, b):
    short, long = sorted((a, b))
    X = pd.concat([VECTOR, MATMUL], ignore_index=True)

    def at(latency):
        ch = synthetic(dram_latency=(latency, "cycles"))
        return predict(HongKimRuntimeModel(hardware="characterized", characterizations={BOARD: ch}), X)

    assert np.all(at(long) >= at(short) * (1 - 1e-9))


# -- bad input (issue 11 §5) ------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda ch: RooflineModel(peaks="characterized", characterizations=ch),
        lambda ch: BSPModel(data_home=HOME, constants_sources=(), latencies="characterized", characterizations=ch),
        lambda ch: HongKimRuntimeModel(hardware="characterized", characterizations=ch),
    ],
    ids=["roofline", "bsp", "hongkim"],
)
@pytest.mark.parametrize("how", ["mapping", "callable"])
def test_a_characterization_of_another_board_is_refused(make, how):
    other = synthetic("GTX-750")
    given_ = {BOARD: other} if how == "mapping" else (lambda board: other)
    with pytest.raises(CharacterizationBoardError, match="GTX-750"):
        predict(make(given_), VECTOR)


@pytest.mark.parametrize(
    "est",
    [
        RooflineModel(peaks="achieved"),
        RooflineModel(peaks="characterized", characterizations=42),
        BSPModel(data_home=HOME, latencies="measured"),
        BSPModel(data_home=HOME, latencies="characterized", characterizations={BOARD: "not a characterization"}),
        HongKimRuntimeModel(hardware="gtx280"),
        HongKimRuntimeModel(hardware="characterized", characterizations=["GTX-980"]),
        # asked to use characterizations, given none: nothing is read behind the caller's back
        RooflineModel(peaks="characterized"),
        BSPModel(data_home=HOME, latencies="characterized"),
        HongKimRuntimeModel(hardware="characterized"),
    ],
)
def test_bad_characterization_parameters_are_refused_in_fit(est):
    with pytest.raises(EstimatorParameterError):
        est.fit(VECTOR, np.ones(len(VECTOR)))


def test_a_board_missing_from_the_mapping_gets_the_spec_tier():
    X = rows("vectorAdd", [2**24], board="GTX-750")
    terms = RooflineModel(peaks="characterized", characterizations={BOARD: synthetic()}).fit(X, [1.0]).roofline_terms(X)
    assert (terms["bandwidth_tier"] == "spec").all()
    np.testing.assert_allclose(terms["memory_ms"], RooflineModel().fit(X, [1.0]).roofline_terms(X)["memory_ms"])


def test_an_achieved_value_beyond_physical_limits_never_reaches_a_model():
    """Achieved DRAM bandwidth 2x the datasheet: refused when the characterization is built (limits.py, 1.5x)."""
    with pytest.raises(PhysicalLimitError):
        synthetic(dram_bandwidth=(2.0 * _SPEC_BW, "B/s"))
