"""experiments/matmul_dram_traffic.py on the real counts: the Hopper boards read a naive matMul's
inputs from DRAM once while its working set fits their L2, the corpus' boards many times."""

from __future__ import annotations

import pytest

from conftest import data_home_path, experiment_script, needs_data_home

traffic = experiment_script("matmul_dram_traffic")


@pytest.mark.parametrize("board", sorted(traffic.HOPPER))
def test_hopper_reads_a_working_set_under_its_l2_once(board):
    got = traffic.hopper_ratios(board, traffic.HOPPER[board])
    assert set(got["app_id"]) == set(traffic.KERNELS) and set(got["input_size"]) == set(traffic.SIZES)
    fits = got[got["input_size"] <= 2048]  # 48 MiB, under the 50 / 60 MiB L2
    assert fits["ratio"].between(0.6, 1.05).all(), fits
    assert (got[got["input_size"] == 4096]["ratio"] > 10).all()  # 192 MiB: re-read from DRAM


@needs_data_home()
def test_the_corpus_boards_reread_from_dram():
    got = traffic.corpus_ratios(data_home_path())
    assert got["board"].nunique() == 9
    assert (got[got["input_size"] >= 1024]["ratio"] > 10).all()
