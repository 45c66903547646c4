"""The boards of the NeuSight operator corpus in the registry: names, sources, conflicts, peaks.

Truth: shared/datasets/README.md, NeuSight section ("Board names": board -> driver name;
"dlops_device_configs": the known errors of the device configs) and the tables
dlops_runtimes.csv.gz and dlops_device_configs.csv of the data home.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from perfml.boards import get_board, peak_bandwidth, peak_flops, resolve_board_name
from perfml.datasets import load_dlops_device_configs, load_dlops_runtimes

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

# README, NeuSight section, table "Board names": board -> device_name (driver name).
README_BOARD_NAMES = {
    "Tesla-P4": "Tesla P4",
    "Tesla-P100-PCIe": "Tesla P100-PCIE-16GB",
    "Tesla-V100-PCIe-32GB": "Tesla V100-PCIE-32GB",
    "Tesla-T4": "Tesla T4",
    "A100-PCIe-40GB": "NVIDIA A100-PCIE-40GB",
    "A100-40GB": "NVIDIA A100-SXM4-40GB",
    "A100-PCIe-80GB": "NVIDIA A100 80GB PCIe",
    "L4": "NVIDIA L4",
    "H100-SXM": "NVIDIA H100 80GB HBM3",
}
NEW_BOARDS = ["Tesla-P4", "Tesla-V100-PCIe-32GB", "A100-PCIe-40GB", "A100-PCIe-80GB"]


def _corpus_board_names() -> list[tuple[str, str]]:
    """Every (board, device_name) pair of dlops_runtimes and dlops_device_configs."""
    pairs = set()
    for frame in (load_dlops_runtimes(data_home=HOME), load_dlops_device_configs(data_home=HOME)):
        pairs |= set(zip(frame["board"], frame["device_name"]))
    return sorted(pairs)


CORPUS_PAIRS = _corpus_board_names()
CORPUS_BOARDS = sorted({board for board, _ in CORPUS_PAIRS})


def test_corpus_names_are_those_of_the_readme():
    assert dict(CORPUS_PAIRS) == README_BOARD_NAMES


@pytest.mark.parametrize("board, device_name", CORPUS_PAIRS)
def test_every_corpus_board_resolves_by_name_and_driver_name(board, device_name):
    assert resolve_board_name(board) == board
    assert resolve_board_name(device_name) == board
    assert get_board(device_name).device_name == device_name


@pytest.mark.parametrize("board", CORPUS_BOARDS)
def test_every_value_and_alternative_has_a_source(board):
    b = get_board(board)
    for field_name, value, _unit, source in b.spec_items():
        if value is not None:
            assert source, (board, field_name)
    for field_name, alternatives in b.alternatives.items():
        for alt in alternatives:
            assert alt.source, (board, field_name)
            if alt.value != getattr(b, field_name, None):
                # a conflict says why the stored value won, on the value or on the alternative
                assert alt.note or field_name in b.notes, (board, field_name)


@pytest.mark.parametrize("board", CORPUS_BOARDS)
def test_derived_peaks_are_finite_and_positive(board):
    b = get_board(board)
    for value in (peak_flops(b), peak_bandwidth(b)):
        assert math.isfinite(value) and value > 0


def _config_rows():
    configs = load_dlops_device_configs(physical_only=True, data_home=HOME)
    return [row for _, row in configs.iterrows()]


@pytest.mark.parametrize("row", _config_rows(), ids=lambda r: r["board"])
def test_every_device_config_value_is_the_value_used_or_a_sourced_alternative(row):
    """Conflicts are kept: a NeuSight config value the registry does not use is an alternative
    whose source names that board's config JSON."""
    b = get_board(row["board"])
    config_file = row["config_file"].rsplit("/", 1)[-1]
    expected = {
        "sms": int(row["num_sm"]),
        "fp32_cores_per_sm": int(row["core_per_sm"]),
        "boost_clock_mhz": int(row["freq_mhz"]),
        "memory_bandwidth_gbs": float(row["mem_bw_gbs"]),
        "l2_bytes": int(row["l2_cache_mb"] * 2**20),
        "global_mem_bytes": int(row["dev_mem_gb"] * 2**30),
    }
    for field_name, value in expected.items():
        if getattr(b, field_name) == value:
            continue
        alternatives = b.alternatives.get(field_name, ())
        matching = [a for a in alternatives if a.value == value]
        assert matching, (row["board"], field_name, value, getattr(b, field_name))
        assert any(config_file in a.source for a in matching), (row["board"], field_name)


@pytest.mark.parametrize("row", _config_rows(), ids=lambda r: r["board"])
def test_known_config_errors_are_not_the_values_used(row):
    # README "dlops_device_configs": P4 40 SMs x 64 (really 20 x 128), L4 60 SMs (really 58):
    # the registry SM count equals the profiler-derived one wherever the README gives it.
    b = get_board(row["board"])
    if not pd.isna(row["sms_observed_by_profiler"]):
        assert b.sms == row["sms_observed_by_profiler"]
    # the FP32 peak agrees with NeuSight's SingleFLOPs within 5% (P100: 9.34 vs 9.52 TFLOPS;
    # L4: 30.3 vs 31.3, the 60-SM error); a wrong core layout would be off by far more.
    assert peak_flops(b) / 1e9 == pytest.approx(row["single_flops_gflops"], rel=0.05)


def test_known_errors_are_kept_with_their_reason():
    p4 = get_board("Tesla-P4")
    assert (p4.sms, p4.fp32_cores_per_sm, p4.total_cores) == (20, 128, 2560)
    assert [a.value for a in p4.alternatives["sms"]] == [40]
    assert "known wrong" in p4.alternatives["sms"][0].note
    assert 3430.0 in {a.value for a in get_board("H100-SXM").alternatives["memory_bandwidth_gbs"]}
    assert get_board("H100-SXM").memory_bandwidth_gbs == 3350.0
    assert 1380 in {a.value for a in get_board("Tesla-P100-PCIe").alternatives["boost_clock_mhz"]}
    assert get_board("Tesla-P100-PCIe").boost_clock_mhz == 1303


def test_pcie_boards_are_not_the_sxm_boards():
    # README "Board names": NeuSight's A100s are PCIe boards (lower TDP; 80 GB: lower bandwidth).
    assert get_board("NVIDIA A100 80GB PCIe").memory_bandwidth_gbs == 1935.0
    assert get_board("A100-80GB").memory_bandwidth_gbs == 2039.0
    assert get_board("A100-PCIe-40GB").tdp_w == 250 and get_board("A100-40GB").tdp_w == 400
    assert get_board("Tesla V100").name == "Tesla-V100-SXM2"
    assert get_board("Tesla V100-PCIE-32GB").name == "Tesla-V100-PCIe-32GB"


@pytest.mark.parametrize("board", ["Tesla-V100-PCIe-32GB", "A100-PCIe-40GB", "A100-PCIe-80GB"])
def test_per_compute_capability_facts_are_inherited(board):
    b = get_board(board)
    assert b.fp32_cores_per_sm == 64 and b.warp_size == 32
    assert "Throughput of Native Arithmetic Instructions" in b.value_source("fp32_cores_per_sm")


def test_cli_lists_and_shows_the_new_boards():
    from perfml.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["boards", "list"], env={"COLUMNS": "250"})
    assert listed.exit_code == 0
    for board in NEW_BOARDS:
        assert board in listed.output
    shown = runner.invoke(app, ["boards", "show", "Tesla P4", "--json"])
    assert shown.exit_code == 0
    data = json.loads(shown.output)
    assert data["name"] == "Tesla-P4"
    assert "Tesla_P4.json" in data["fields"]["l2_bytes"]["source"]
