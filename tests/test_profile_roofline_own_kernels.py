"""experiments/profile_roofline_own_kernels.py: its three carries are what it says they are.

Truth: the query path's rule for a profiled own kernel (the carried time is the geometric mean
of the model's carry and the profiled roofline's, perfml.learned.queries), and profiles_nca's
counters (FLOPs, DRAM transactions of 32 bytes, warp instructions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import experiment_script, needs_data_home

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    return experiment_script("profile_roofline_own_kernels")


@needs_data_home()
def test_the_profiled_carry_is_the_geometric_mean_of_the_model_and_the_roofline(script):
    from perfml.learned.bundle import load_predictor

    from conftest import shared_data_home

    home = shared_data_home()
    runs = script.own_kernel_runs(home)
    runs = runs[runs["app_id"].isin(["my_vectorAdd", "my_matMul_gpu"])
                & (runs["input_size"].rank(method="dense") % 7 == 0)]
    carried = script.carry_from(load_predictor(ROOT / "models" / "default", data_home=home), runs, "GTX-980", home)
    assert len(carried) > 20 and carried["profiled"].all()
    np.testing.assert_allclose(carried["with_profile"], np.sqrt(carried["model"] * carried["roofline_alone"]), rtol=1e-9)
    assert not np.allclose(carried["with_profile"], carried["model"], rtol=1e-3)
    # the profile is the reference board's own counters: DRAM bytes are 32 x the transactions
    work = script.reference_work(home, "GTX-980")
    prof = home.table("profiles_nca")
    one = prof[(prof["board"] == "GTX-980") & (prof["app_id"] == "vectorAdd")].iloc[0]
    same = prof[(prof["board"] == "GTX-980") & (prof["app_id"] == "vectorAdd") & (prof["input_size"] == one["input_size"])
                & (prof["block_x"] == one["block_x"]) & (prof["block_y"] == one["block_y"])]
    row = work[(work["app_id"] == "my_vectorAdd") & (work["input_size"] == float(one["input_size"]))
               & (work["block_x"] == one["block_x"])].iloc[0]
    dram = 32.0 * (same["m.Device Memory Read Transactions"] + same["m.Device Memory Write Transactions"])
    assert row["profiled_dram_bytes"] == pytest.approx(dram.median())  # the median over the profiled rows of the run
