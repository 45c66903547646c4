"""Tests of the Hong & Kim inputs built from the runtimes (perfml.closed_form.hongkim_inputs).

Where the expected numbers come from:

* Rows: the launch, ``registers_per_thread`` and ``static_smem_bytes`` are those that
  runtimes.csv.gz (source gpuperfpredict-nca, board GTX-680) records for the row named
  in each test; they are typed in here so the expected inputs do not depend on a load.
* Work per thread: perfml/kernels/cuda/<app>.toml [model.work] (matMul_gpu: flops = 2N, gld = 2N, gst = 1;
  vectorAdd: flops = ceil(N/threads), gld = 2 ceil(N/threads), gst = ceil(N/threads)),
  with one FFMA per 2 flops for matMul (seed 003, Section V-A: "each thread performs N
  single precision fused multiply-add").
* Occupancy: the CUDA occupancy rules for CC 3.0 (64 warps, 16 blocks, 65536 registers
  per SM, 256-register allocation unit, warp granularity 4).
* Hardware: the board registry (GTX-680: 8 SMs, 1058 MHz, 192.256 GB/s, 192 FP32 cores
  per SM) and the paper's GTX 280 latencies (450, 40, 4 cycles).
* Model arithmetic: the equations of seed 002, lines 232-306; every step is written out.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfml.closed_form.hongkim import FEATURE_COLUMNS, HongKimModel
from perfml.closed_form.hongkim_inputs import (
    hongkim_hardware_for,
    hongkim_inputs,
    predict_hongkim_for_runtimes,
    uncoalesced_transactions,
)

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)


def _row(app_id, n, bx, by, gx, gy, regs, smem, board="GTX-680"):
    return {"board": board, "app_id": app_id, "input_size": n, "block_x": bx, "block_y": by,
            "grid_x": gx, "grid_y": gy, "registers_per_thread": regs, "static_smem_bytes": smem}


# runtimes.csv.gz, gpuperfpredict-nca, GTX-680: matMul_gpu N=1024 16x16 (64x64 blocks,
# 17 registers, no shared memory) and vectorAdd N=2^20 (256 x 4096, 10 registers).
MATMUL_ROW = _row("matMul_gpu", 1024, 16, 16, 64, 64, 17, 0)
VECTORADD_ROW = _row("vectorAdd", 1048576, 256, 1, 4096, 1, 10, 0)


def test_matmul_row_by_hand():
    got = hongkim_inputs(pd.DataFrame([MATMUL_ROW]), data_home=HOME).iloc[0]
    assert got["comp_insts"] == 1024  # 2N flops = N FFMAs
    assert got["coal_mem_insts"] == 2049  # gld 2N + gst 1, variant global_coalesced
    assert got["uncoal_mem_insts"] == 0
    assert got["uncoal_per_mw"] == 16  # min(block_x = 16, 32); unused (no uncoalesced inst)
    assert got["threads_per_block"] == 256
    assert got["blocks"] == 4096
    # warps: 64 // 8 = 8; registers: 17*32 -> 768 per warp, 65536 // 768 = 85 -> 84 warps
    # (granularity 4) -> 10 blocks; blocks: 16 -> min = 8
    assert got["active_blocks_per_sm"] == 8
    assert got["synch_insts"] == 0
    assert got["note"] == ""


def test_vectoradd_row_by_hand():
    got = hongkim_inputs(pd.DataFrame([VECTORADD_ROW]), data_home=HOME).iloc[0]
    assert got["comp_insts"] == 1  # ceil(N / threads) = 1 FADD
    assert got["coal_mem_insts"] == 3  # 2 loads + 1 store
    assert got["uncoal_mem_insts"] == 0
    assert got["threads_per_block"] == 256 and got["blocks"] == 4096
    assert got["active_blocks_per_sm"] == 8  # 8 warps per block, 64 warps per SM


def test_shared_matmul_counts_shared_accesses_and_barriers():
    # matMul_gpu_sharedmem.toml [model.work]: gld = 2N/bx, sld = 2N, sst = 2N/bx; seed 003
    # Figure 4: two __syncthreads per tile phase, N/bx phases, of which the one after the
    # tile loads waits on global memory (SYNCH_PER_THREAD). Shared bytes 2*16*16*4.
    row = _row("matMul_gpu_sharedmem", 1024, 16, 16, 64, 64, 20, 2048)
    got = hongkim_inputs(pd.DataFrame([row]), data_home=HOME).iloc[0]
    assert got["coal_mem_insts"] == 2 * 1024 / 16 + 1
    assert got["comp_insts"] == 1024 + 2048 + 128  # FFMAs + shared loads + shared stores
    assert got["synch_insts"] == 1024 / 16


def test_vectoradd_prediction_by_hand():
    # N = 8 blocks x 8 warps = 64 warps; Mem_L = 450 (all coalesced), Departure_delay = 4;
    # MWP_Without_BW = min(450/4, 64) = 64; BW_per_warp = 1.058*128/450;
    # MWP_peak_BW = 192.256 / (BW_per_warp * 8) = 79.86 -> MWP = 64.
    # #Issue_cycles = 32/192; Comp_cycles = 4 insts * 32/192; Mem_cycles = 450*3 = 1350;
    # CWP = min((1350 + Comp) / Comp, 64) = 64 -> "not enough warps":
    # (Mem_cycles + Comp_cycles + Comp_cycles/3 * 63) * #Rep, #Rep = 4096 / (8*8) = 64.
    comp = 4 * 32 / 192
    cycles = (1350 + comp + comp / 3 * 63) * 64
    expected_ms = cycles / (1.058e9) * 1e3
    got = predict_hongkim_for_runtimes(pd.DataFrame([VECTORADD_ROW]), data_home=HOME)
    assert got[0] == pytest.approx(expected_ms, rel=1e-9)
    assert expected_ms == pytest.approx(0.08255, rel=1e-3)


def test_matmul_prediction_by_hand():
    # N = 64 warps, MWP = 64 as above; total 3073 insts, Comp_cycles = 3073/6,
    # Mem_cycles = 450 * 2049, CWP = 64 -> not enough warps, #Rep = 64.
    comp = 3073 / 6
    cycles = (450 * 2049 + comp + comp / 2049 * 63) * 64
    got = predict_hongkim_for_runtimes(pd.DataFrame([MATMUL_ROW]), data_home=HOME)
    assert got[0] == pytest.approx(cycles / 1.058e6, rel=1e-9)


def test_prediction_matches_the_model_on_the_inputs():
    rows = pd.DataFrame([MATMUL_ROW, VECTORADD_ROW])
    inputs = hongkim_inputs(rows, data_home=HOME)
    hw = hongkim_hardware_for("GTX-680")
    expected = HongKimModel(hardware=hw).fit(inputs).predict(inputs)
    np.testing.assert_allclose(predict_hongkim_for_runtimes(rows, data_home=HOME), expected, rtol=1e-12)


@pytest.mark.parametrize("coalesced, uncoalesced", [
    ("matrix_sum_coalesced", "matrix_sum_normal"),
    ("matMul_gpu", "matMul_gpu_uncoalesced"),
    ("matMul_gpu_sharedmem", "matMul_gpu_sharedmem_uncoalesced"),
])
def test_coalesced_uncoalesced_split_follows_the_variant(coalesced, uncoalesced):
    rows = pd.DataFrame([_row(coalesced, 1024, 16, 16, 64, 64, 17, 0),
                         _row(uncoalesced, 1024, 16, 16, 64, 64, 17, 0)])
    got = hongkim_inputs(rows, data_home=HOME)
    total = got["coal_mem_insts"] + got["uncoal_mem_insts"]
    assert total[0] == total[1] > 0  # same loads and stores, only the pattern differs
    assert got.loc[0, "uncoal_mem_insts"] == 0 and got.loc[0, "coal_mem_insts"] == total[0]
    assert got.loc[1, "coal_mem_insts"] == 0 and got.loc[1, "uncoal_mem_insts"] == total[1]
    pred = predict_hongkim_for_runtimes(rows, data_home=HOME)
    assert pred[1] > pred[0]  # uncoalesced is never faster in the model


@pytest.mark.parametrize("block, board, expected", [
    # Kepler, CC 3.x: profiles_nca.csv.gz m.Global Load Transactions Per Request of
    # matrix_sum_normal on GTX-680 and Tesla-K40 is 8 / 16 / 32 for these blocks.
    (8, "GTX-680", 8), (16, "GTX-680", 16), (32, "Tesla-K40", 32),
    # CC 1.3 (GTX-295) coalesces per half-warp: 16 distinct rows in each of 2 halves.
    (16, "GTX-295", 32),
])
def test_uncoalesced_transactions_per_warp(block, board, expected):
    row = _row("matrix_sum_normal", 1024, block, block, 1024 // block, 1024 // block,
               np.nan, np.nan, board=board)
    assert hongkim_inputs(pd.DataFrame([row]), data_home=HOME).loc[0, "uncoal_per_mw"] == expected
    assert uncoalesced_transactions(64) == 32  # fully uncoalesced 4-byte warp access


def test_missing_launch_falls_back_to_the_description():
    # BSPGPU matSum rows have no launch: the description's 16x16 blocks, ceil(N/16)^2.
    row = _row("matrix_sum_coalesced", 1000, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan)
    got = hongkim_inputs(pd.DataFrame([row]), data_home=HOME).iloc[0]
    assert got["threads_per_block"] == 256 and got["blocks"] == 63 * 63


def test_undescribable_rows_are_nan_with_a_reason():
    rows = pd.DataFrame([MATMUL_ROW, {**MATMUL_ROW, "app_id": "bitonic"},
                         {**MATMUL_ROW, "board": "no-such-board"}])
    got = hongkim_inputs(rows, data_home=HOME)
    assert got.loc[0, "note"] == ""
    assert "no kernel description" in got.loc[1, "note"]
    assert "no-such-board" in got.loc[2, "note"]
    assert got.loc[1:, list(FEATURE_COLUMNS)].isna().all().all()
    pred = predict_hongkim_for_runtimes(rows, data_home=HOME)
    assert np.isfinite(pred[0]) and np.isnan(pred[1:]).all()


def test_hardware_uses_paper_latencies_and_board_specs():
    hw = hongkim_hardware_for("GTX-680")
    assert (hw.mem_ld, hw.departure_del_uncoal, hw.departure_del_coal) == (450, 40, 4)
    assert (hw.n_sm, hw.freq_ghz, hw.mem_bandwidth_gbs) == (8, 1.058, 192.256)
    assert hw.issue_cycles == pytest.approx(32 / 192)
    # GT200 (CC 1.3, 8 SPs per SM) gives back the paper's 4 issue cycles; its bandwidth
    # comes from memory clock and bus width: 2 * 1000 MHz * 448 bit / 8 = 112 GB/s.
    gtx295 = hongkim_hardware_for("GTX-295")
    assert gtx295.issue_cycles == 4 and gtx295.mem_bandwidth_gbs == pytest.approx(112.0)
    assert hongkim_hardware_for("GTX-680", issue_cycles=4.0).issue_cycles == 4.0


# ------------------------------------------------------------------ profiles source


@pytest.fixture(scope="module")
def real_profiles():
    from perfml.datasets import load_profiles_nca

    return load_profiles_nca(data_home=HOME)


def _perturbed(profiles, boards, factor):
    out = profiles.copy()
    events = [c for c in out.columns if c.startswith("e.")]
    rows = out["board"].isin(boards)
    out.loc[rows, events] = out.loc[rows, events] * factor
    return out


def test_profiles_never_use_the_rows_own_board(real_profiles, monkeypatch):
    import perfml.datasets

    rows = pd.DataFrame([MATMUL_ROW, VECTORADD_ROW])
    monkeypatch.setattr(perfml.datasets, "load_profiles_nca", lambda data_home=None: real_profiles.copy())
    base = hongkim_inputs(rows, instruction_source="profiles", data_home=HOME)
    assert (base["note"] == "").all()

    own = _perturbed(real_profiles, ["GTX-680"], 7.0)
    monkeypatch.setattr(perfml.datasets, "load_profiles_nca", lambda data_home=None: own)
    pd.testing.assert_frame_equal(hongkim_inputs(rows, instruction_source="profiles", data_home=HOME), base)
    np.testing.assert_array_equal(
        predict_hongkim_for_runtimes(rows, instruction_source="profiles", data_home=HOME),
        _predict_with(real_profiles, rows, monkeypatch))

    # The check is not vacuous: perturbing every other board changes the counts.
    others = [b for b in real_profiles["board"].unique() if b != "GTX-680"]
    moved = _perturbed(real_profiles, others, 7.0)
    monkeypatch.setattr(perfml.datasets, "load_profiles_nca", lambda data_home=None: moved)
    changed = hongkim_inputs(rows, instruction_source="profiles", data_home=HOME)
    assert not np.allclose(changed["comp_insts"], base["comp_insts"])


def _predict_with(profiles, rows, monkeypatch):
    import perfml.datasets

    monkeypatch.setattr(perfml.datasets, "load_profiles_nca", lambda data_home=None: profiles.copy())
    return predict_hongkim_for_runtimes(rows, instruction_source="profiles", data_home=HOME)


def test_profiles_counts_are_the_median_of_the_other_boards(real_profiles, monkeypatch):
    import perfml.datasets

    monkeypatch.setattr(perfml.datasets, "load_profiles_nca", lambda data_home=None: real_profiles)
    got = hongkim_inputs(pd.DataFrame([MATMUL_ROW]), instruction_source="profiles", data_home=HOME).iloc[0]
    p = real_profiles
    p = p[(p["app_id"] == "matMul_gpu") & (p["input_size"] == 1024) & (p["block_x"] == 16)
          & (p["block_y"] == 16) & (p["board"] != "GTX-680")]
    threads = p["block_x"] * p["block_y"] * p["grid_x"] * p["grid_y"]
    mem = (p["e.gld_inst_32bit"] + p["e.gst_inst_32bit"]) / threads  # 4-byte accesses only
    per_board = pd.DataFrame({"board": p["board"], "mem": mem,
                              "comp": p["e.inst_executed"] * 32 / threads - mem})
    per_board = per_board.groupby("board").median()  # one value per board, then across
    assert len(per_board) >= 5
    assert got["coal_mem_insts"] == pytest.approx(per_board["mem"].median())
    assert got["comp_insts"] == pytest.approx(per_board["comp"].median())


def test_unknown_instruction_source_is_rejected():
    from perfml.errors import PerfmlError

    with pytest.raises(PerfmlError, match="instruction_source"):
        hongkim_inputs(pd.DataFrame([MATMUL_ROW]), instruction_source="ptx", data_home=HOME)


# ----------------------------------------------------------------------------- CLI


def test_cli_evaluate_hongkim_smoke(capsys):
    from perfml.cli import main

    status = main(["evaluate", "--model", "hongkim", "--source", "gpuperfpredict-nca", "--json"])
    assert status in (0, None)
    out = json.loads(capsys.readouterr().out)
    overall = out["overall"][0]
    assert overall["n"] > 10_000
    assert np.isfinite(overall["mape"]) and np.isfinite(overall["median_ape"])
    assert {r["app_id"] for r in out["per_app"]} >= {"matMul_gpu", "vectorAdd", "subSeqMax"}
