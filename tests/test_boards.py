"""Board registry, derived figures and the ``perfml boards`` CLI.

Golden values say where they come from: shared/datasets/boards.csv (columns named),
vendor whitepapers, or the CUDA occupancy calculator rules worked by hand.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from perfml.boards import (
    Board,
    get_board,
    list_boards,
    load_registry,
    max_resident_warps,
    occupancy,
    peak_bandwidth,
    peak_flops,
    resolve_board_name,
)
from perfml.boards._device import board_from_device, board_from_properties
from perfml.errors import (
    DatasetSchemaError,
    DeviceUnavailableError,
    MissingBoardParameterError,
    UnknownBoardError,
)

DATASET_BOARDS = [
    "GT-630", "GTX-295", "GTX-680", "GTX-750", "GTX-970", "GTX-980", "GTX-Titan",
    "GTX-Titan-Black", "Quadro-K5200", "Tesla-K20", "Tesla-K40",
]  # fmt: skip
SEED_BOARDS = [
    "GT-630", "GTX-570", "GTX-660", "GTX-680", "GTX-780", "GTX-980", "GTX-Titan", "Tesla-K20",
    "Tesla-K40", "Tesla-C1060", "GeForce-8800GT", "Quadro-FX5600", "GeForce-8800GTX", "GTX-280",
]  # fmt: skip
CURRENT_BOARDS = [
    "GTX-750", "GTX-750-Ti", "GTX-970", "GTX-Titan-Black", "GTX-Titan-X", "Quadro-K5200",
    "Tesla-P100-SXM2", "Tesla-P100-PCIe", "Tesla-V100-SXM2", "Tesla-T4", "A100-40GB",
    "A100-80GB", "L4", "H100-SXM", "H100-PCIe", "H200",
]  # fmt: skip

# shared/datasets/boards.csv, columns sm_count, cuda_cores, core_clock_mhz, memory_clock_mhz,
# memory_bus_width_bits, bandwidth_gbs, l2_cache_bytes, global_mem_bytes, registers_per_block,
# max_threads_per_sm (None = empty cell upstream).
BOARDS_CSV = {
    "GT-630": (2, 96, 1620, 667, 128, None, 131072, 2144010240, 32768, 1536),
    "GTX-295": (None, 240, 1242, 1000, 448, None, None, None, 16384, None),
    "GTX-680": (8, 1536, 1058, 3004, 256, 192.256, 524288, 2146762752, 65536, 2048),
    "GTX-750": (4, 512, 1110, 2505, 128, 80.16, 2097152, 1073020928, 65536, 2048),
    "GTX-970": (13, 1664, 1279, 3505, 256, 224.32, 1835008, 4294246400, 65536, 2048),
    "GTX-980": (16, 2048, 1216, 3505, 256, 224.32, 2097152, 4294246400, 65536, 2048),
    "GTX-Titan": (14, 2688, 876, 3004, 384, 288.384, 1572864, 6442254336, 65536, 2048),
    "GTX-Titan-Black": (15, 2880, 980, 3500, 384, 336, 1572864, 6442254336, 65536, 2048),
    "Quadro-K5200": (12, 2304, 771, 3004, 256, 192.256, 1048576, 8589213696, 65536, 2048),
    "Tesla-K20": (13, 2496, 706, 2600, 320, 208, 1310720, 5032706048, 65536, 2048),
    "Tesla-K40": (15, 2880, 745, 3004, 384, 288.384, 1572864, 12079136768, 65536, 2048),
}
_CSV_FIELDS = (
    "sms", "total_cores", "boost_clock_mhz", "memory_clock_mhz", "bus_width_bits",
    "memory_bandwidth_gbs", "l2_bytes", "global_mem_bytes", "registers_per_block",
    "max_threads_per_sm",
)  # fmt: skip


# --------------------------------------------------------------------------- registry
def test_registry_covers_every_required_board():
    names = {b.name for b in list_boards()}
    missing = set(DATASET_BOARDS + SEED_BOARDS + CURRENT_BOARDS) - names
    assert not missing


@pytest.mark.parametrize("name", DATASET_BOARDS)
def test_dataset_board_values_equal_boards_csv(name):
    board = get_board(name)
    for field_name, expected in zip(_CSV_FIELDS, BOARDS_CSV[name]):
        if expected is None:
            continue  # empty upstream; the registry may fill it from another source
        assert getattr(board, field_name) == pytest.approx(expected), (name, field_name)


def _boards_csv_rows():
    from conftest import shared_data_home  # skips only under --without-data-home

    with open(shared_data_home().path / "boards.csv", newline="") as fh:
        return list(csv.DictReader(fh))


# boards.csv column -> (Board field, conversion of the csv text)
_CSV_MAP = {
    "compute_capability": ("compute_capability", str),
    "sm_count": ("sms", int),
    "cores_per_sm": ("fp32_cores_per_sm", int),
    "core_clock_mhz": ("boost_clock_mhz", int),
    "memory_clock_mhz": ("memory_clock_mhz", int),
    "memory_bus_width_bits": ("bus_width_bits", int),
    "bandwidth_gbs": ("memory_bandwidth_gbs", float),
    "l2_cache_bytes": ("l2_bytes", int),
    "shared_mem_per_block_bytes": ("shared_mem_per_block_kb", lambda v: int(v) / 1024),
    "shared_mem_kb": ("shared_mem_per_sm_kb", int),
    "l1_cache_kb": ("l1_cache_kb_per_sm", int),
    "registers_per_block": ("registers_per_block", int),
    "max_threads_per_sm": ("max_threads_per_sm", int),
    "max_threads_per_block": ("max_threads_per_block", int),
    "warp_size": ("warp_size", int),
    "global_mem_bytes": ("global_mem_bytes", int),
}


def test_dataset_boards_match_the_boards_csv_file_values_and_sources():
    """Every non-empty cell of shared/datasets/boards.csv is in the registry with its source."""
    rows = _boards_csv_rows()
    assert {r["board"] for r in rows} == set(DATASET_BOARDS)
    for row in rows:
        board = get_board(row["board"])
        assert board.full_name.startswith(row["full_name"])
        for column, (field_name, convert) in _CSV_MAP.items():
            if not row[column]:
                continue
            assert getattr(board, field_name) == convert(row[column]), (board.name, column)
            assert board.value_source(field_name) == row[column + "_src"], (board.name, column)
        if row["cuda_cores"]:
            assert board.total_cores == int(row["cuda_cores"])


def test_upstream_conflicts_are_kept_as_alternatives():
    # boards.csv upstream_conflicts: GTX-680 core_clock_mhz 1058 (deviceQuery) vs 1006 (BSPGPU):
    # base vs boost clock (NVIDIA GTX 680 specifications: base 1006, boost 1058 MHz).
    gtx680 = get_board("GTX-680")
    assert (gtx680.base_clock_mhz, gtx680.boost_clock_mhz) == (1006, 1058)
    assert any(a.value == 1006 and "BSPGPU" in a.source for a in gtx680.alternatives["boost_clock_mhz"])
    # Tesla-K20 l2: 1310720 (deviceQuery) vs 1048576 (deviceInfo) vs 131072 (BSPGPU script)
    k20_l2 = {a.value for a in get_board("Tesla-K20").alternatives["l2_bytes"]}
    assert {1048576, 131072} <= k20_l2
    # GTX-970 / Titan Black: deviceInfo's 3072 cores and other clocks kept, deviceQuery used
    gtx970 = get_board("GTX-970")
    assert gtx970.total_cores == 1664
    assert [a.value for a in gtx970.alternatives["total_cores"]] == [3072]
    assert 1076 in {a.value for a in gtx970.alternatives["boost_clock_mhz"]}
    assert 1088 in {a.value for a in get_board("GTX-Titan-Black").alternatives["boost_clock_mhz"]}
    # Tesla-K40 global memory: 12079136768 (deviceQuery) vs 12 GB (deviceInfo)
    assert 12884901888 in {a.value for a in get_board("Tesla-K40").alternatives["global_mem_bytes"]}
    # every choice among conflicting sources says why
    for board in list_boards():
        for field_name, alts in board.alternatives.items():
            if any(a.value != getattr(board, field_name, None) for a in alts) and field_name in (
                "boost_clock_mhz",
                "l2_bytes",
            ):
                assert field_name in board.notes, (board.name, field_name)


def test_every_value_has_a_source():
    for board in list_boards():
        for field_name, value, _unit, source in board.spec_items():
            if value is not None:
                assert source, (board.name, field_name)


def test_per_compute_capability_facts_are_inherited_and_overridable():
    for board in list_boards():
        if board.compute_capability == "3.5":
            assert board.max_warps_per_sm == 64
            assert "Technical Specifications per Compute Capability" in board.value_source(
                "max_warps_per_sm"
            )
    # CUDA C Programming Guide throughput table footnote: 8 FP64/clock/SM on GeForce CC 3.5
    # except GTX TITAN; the CC default 64 stays as an alternative.
    gtx780 = get_board("GTX-780")
    assert gtx780.fp64_units_per_sm == 8
    assert 64 in {a.value for a in gtx780.alternatives["fp64_units_per_sm"]}
    assert get_board("GTX-Titan").fp64_units_per_sm == 64
    # deviceQuery max threads per SM agree with the per-CC table for every dataset board
    assert all(
        not any("per-compute-capability" in (a.note or "") for a in b.alternatives.get("max_threads_per_sm", ()))
        for b in list_boards()
    )


def test_cumapz_tesla_c1060_memory_channels():
    # CuMAPz (seeds/004) needs 8 channels x 64 bit and a 256-byte channel interleave for the
    # Tesla C1060 (Ruetsch & Micikevicius: 8 partitions of 256-byte width on 10-series GPUs).
    c1060 = get_board("Tesla C1060")
    assert c1060.memory_channels == 8
    assert c1060.memory_channel_width_bits == 64
    assert c1060.memory_channels * c1060.memory_channel_width_bits == c1060.bus_width_bits == 512
    assert c1060.channel_interleave_bytes == 256
    assert c1060.shared_banks == 16 and c1060.compute_capability == "1.3"


def test_unknown_values_stay_empty():
    # GTX-750's measured card is factory overclocked; upstream never states its base clock.
    assert get_board("GTX-750").base_clock_mhz is None
    assert get_board("GTX-750").value_source("base_clock_mhz") is None
    assert get_board("GTX-680").fp16_units_per_sm is None  # Kepler: no native FP16 arithmetic


def test_board_is_frozen():
    board = get_board("GTX-680")
    with pytest.raises(dataclasses.FrozenInstanceError):
        board.sms = 9  # type: ignore[misc]
    with pytest.raises(TypeError):
        board.sources["sms"] = "x"  # type: ignore[index]
    assert hash(board) == hash(get_board("gtx-680"))


def test_value_source_rejects_unknown_field():
    with pytest.raises(AttributeError, match="no specification field"):
        get_board("GTX-680").value_source("cores")


# --------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("Tesla K20c", "Tesla-K20"),
        ("tesla k40c", "Tesla-K40"),
        ("GeForce GTX TITAN", "GTX-Titan"),
        ("Titan", "GTX-Titan"),
        ("TitanBlack", "GTX-Titan-Black"),
        ("Quadro", "Quadro-K5200"),
        ("NVIDIA GeForce GTX 680", "GTX-680"),
        ("gtx680", "GTX-680"),
        ("GTX 750 Ti", "GTX-750-Ti"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("Tesla P100-PCIE-16GB", "Tesla-P100-PCIe"),
        ("8800 GTX", "GeForce-8800GTX"),
    ],
)
def test_alias_resolves_case_insensitively(alias, canonical):
    assert resolve_board_name(alias) == canonical
    assert get_board(alias.upper()).name == canonical


def test_unknown_board_lists_close_names():
    with pytest.raises(UnknownBoardError) as info:
        get_board("GTX-690")
    message = str(info.value)
    assert "GTX-690" in message and "GTX-680" in message
    assert isinstance(info.value, KeyError)


# --------------------------------------------------------------------------- derived figures
@pytest.mark.parametrize(
    ("name", "gflops"),
    [
        # boards.csv theoretical_gflops_sp (gpuperfpredict deviceInfo.csv) = cores x clock x 2
        ("GTX-680", 3250.176),
        ("GTX-980", 4980.736),
        ("GTX-Titan", 4709.376),
        ("Quadro-K5200", 3552.768),
        ("Tesla-K20", 3524.352),
        ("Tesla-K40", 4291.2),
    ],
)
def test_peak_fp32_matches_boards_csv(name, gflops):
    assert peak_flops(get_board(name)) / 1e9 == pytest.approx(gflops, rel=1e-12)


def test_peak_flops_other_precisions_and_clocks():
    gtx680 = get_board("GTX-680")
    # 1536 cores x 1006 MHz (base, BSP paper Table I) x 2 = 3090.432 GFLOP/s
    assert peak_flops(gtx680, clock="base") / 1e9 == pytest.approx(3090.432)
    # boards.csv theoretical_gflops_sp of GTX-970 (3580.928) used deviceInfo's 1076 MHz;
    # the registry uses deviceQuery's 1279 MHz: 1664 x 1279 x 2
    assert peak_flops(get_board("GTX-970")) / 1e9 == pytest.approx(1664 * 1279 * 2 / 1e3)
    # NVIDIA Tesla K20/K40 board specifications: 1.17 / 1.43 TFLOPS double precision
    assert peak_flops(get_board("Tesla-K20"), "fp64") / 1e12 == pytest.approx(1.17, abs=0.01)
    assert peak_flops(get_board("Tesla-K40"), "fp64") / 1e12 == pytest.approx(1.43, abs=0.01)
    # Whitepapers: P100 FP16 21.2 TFLOPS, V100 FP32 15.7, A100 FP16 (non-tensor) 78,
    # H100 SXM5 FP64 33.5 (H100 datasheet: 34)
    assert peak_flops(get_board("Tesla-P100-SXM2"), "fp16") / 1e12 == pytest.approx(21.2, abs=0.05)
    assert peak_flops(get_board("Tesla-V100-SXM2")) / 1e12 == pytest.approx(15.7, abs=0.05)
    assert peak_flops(get_board("A100-40GB"), "fp16") / 1e12 == pytest.approx(78.0, abs=0.1)
    assert peak_flops(get_board("H100-SXM"), "fp64") / 1e12 == pytest.approx(33.5, abs=0.1)


def test_peak_flops_missing_input_names_board_and_field():
    with pytest.raises(MissingBoardParameterError, match=r"'GTX-680'.*'fp16_units_per_sm'"):
        peak_flops(get_board("GTX-680"), "fp16")
    with pytest.raises(MissingBoardParameterError, match=r"'GTX-750'.*'base_clock_mhz'.*boards.toml"):
        peak_flops(get_board("GTX-750"), clock="base")
    with pytest.raises(ValueError):
        peak_flops(get_board("GTX-680"), "fp8")  # type: ignore[arg-type]


def test_peak_bandwidth():
    # boards.csv bandwidth_gbs 192.256 = 2 x 3004 MHz x 256 bit / 8 (deviceQuery clock)
    gtx680 = get_board("GTX-680")
    assert peak_bandwidth(gtx680) == pytest.approx(192.256e9)
    derived = dataclasses.replace(gtx680, memory_bandwidth_gbs=None)
    assert peak_bandwidth(derived) == pytest.approx(192.256e9)
    # GT-630: no stated bandwidth upstream; 2 x 667 x 128 / 8 = 21.344 GB/s
    # (BSP paper Table I: 21.3 GB/s)
    assert peak_bandwidth(get_board("GT-630")) / 1e9 == pytest.approx(21.344)
    with pytest.raises(MissingBoardParameterError, match="'X'"):
        peak_bandwidth(Board(name="X", full_name="X"))


def test_max_resident_warps():
    # 64 warps per SM (CC 3.x) x 8 SMs; 13 SMs for the K20
    assert max_resident_warps(get_board("GTX-680")) == 512
    assert max_resident_warps(get_board("Tesla-K20")) == 832
    with pytest.raises(MissingBoardParameterError):
        max_resident_warps(Board(name="X", full_name="X", sms=4))


# Hand-worked with the CUDA Occupancy Calculator rules (sheet "GPU Data" allocation units):
@pytest.mark.parametrize(
    ("board", "threads", "regs", "smem", "blocks", "warps", "occ", "limiter"),
    [
        # CC 3.5: 8 warps/block; 64/8 = 8 blocks; 32 regs -> 1024/warp -> 64 warps fit
        ("Tesla-K20", 256, 32, 0, 8, 64, 1.0, "warps"),
        # 64 regs -> 2048/warp -> 32 warps fit -> 4 blocks
        ("Tesla-K20", 256, 64, 0, 4, 32, 0.5, "registers"),
        # 37 regs -> ceil(1184, 256) = 1280/warp -> floor(51.2)=51 -> granularity 4 -> 48 warps
        ("Tesla-K20", 128, 37, 0, 12, 48, 0.75, "registers"),
        # 1-warp blocks: 16 resident blocks max (CC 3.x)
        ("Tesla-K20", 32, 0, 0, 16, 16, 0.25, "blocks"),
        # CC 3.0: 12 KiB shared per block -> 48 KiB / 12 KiB = 4 blocks of 4 warps
        ("GTX-680", 128, 0, 12288, 4, 16, 0.25, "shared_memory"),
        # CC 1.3, block granularity: 8 warps x 32 x 17 = 4352 -> 4608 regs/block -> 3 blocks
        ("GTX-280", 256, 17, 0, 3, 24, 0.75, "registers"),
        ("GTX-280", 256, 16, 0, 4, 32, 1.0, "warps"),
        # CC 8.0: 48 KiB + 1 KiB reserved = 50176 B/block; 164 KiB / 50176 = 3 blocks
        ("A100-40GB", 256, 0, 49152, 3, 24, 0.375, "shared_memory"),
        # CC 7.5: 32 warps per SM -> one 1024-thread block fills the SM
        ("Tesla-T4", 1024, 0, 0, 1, 32, 1.0, "warps"),
        # CC 2.1 (GT-630): 48 warps/SM, 6 warps/block -> 8 blocks by warps and by block limit
        ("GT-630", 192, 20, 0, 8, 48, 1.0, "warps"),
    ],
)
def test_occupancy_hand_computed(board, threads, regs, smem, blocks, warps, occ, limiter):
    result = occupancy(get_board(board), threads, regs, smem)
    assert result.active_blocks_per_sm == blocks
    assert result.active_warps_per_sm == warps
    assert math.isclose(result.occupancy, occ)
    assert result.limited_by == limiter


def test_occupancy_rejects_impossible_launches():
    k20 = get_board("Tesla-K20")
    with pytest.raises(ValueError, match="threads per block"):
        occupancy(k20, 2048)
    with pytest.raises(ValueError, match="registers per thread"):
        occupancy(get_board("GTX-680"), 128, registers_per_thread=64)  # CC 3.0 max is 63
    with pytest.raises(ValueError, match="shared bytes"):
        occupancy(k20, 128, shared_bytes_per_block=64 * 1024)


# --------------------------------------------------------------------------- registry file checks
def _write(tmp_path, body):
    path = tmp_path / "boards.toml"
    path.write_text(textwrap.dedent(body))
    return path


def test_custom_registry_file_and_validation(tmp_path):
    ok = _write(
        tmp_path,
        """
        schema_version = 1
        [sources]
        ref = "Reference text"
        [cc."3.0"]
        source = "@ref"
        max_warps_per_sm = 64
        [[board]]
        name = "Mine"
        full_name = "My board"
        source = "my notes"
        compute_capability = "3.0"
        sms = { value = 2, source = "@ref" }
        """,
    )
    registry = load_registry(ok)
    mine = get_board("mine", registry=registry)
    assert mine.max_warps_per_sm == 64 and mine.value_source("sms") == "Reference text"

    bad_version = _write(tmp_path, 'schema_version = 99\n')
    with pytest.raises(DatasetSchemaError, match="schema_version"):
        load_registry(bad_version)
    bad_field = _write(tmp_path, 'schema_version = 1\n[[board]]\nname = "A"\nfull_name = "A"\nsource = "s"\ncores = 3\n')
    with pytest.raises(DatasetSchemaError, match="unknown field 'cores'"):
        load_registry(bad_field)
    bad_ref = _write(tmp_path, 'schema_version = 1\n[[board]]\nname = "A"\nfull_name = "A"\nsource = "@nope"\nsms = 3\n')
    with pytest.raises(DatasetSchemaError, match="@nope"):
        load_registry(bad_ref)
    clash = _write(
        tmp_path,
        'schema_version = 1\n[[board]]\nname = "A"\nfull_name = "A"\naliases = ["x"]\n'
        '[[board]]\nname = "B"\nfull_name = "B"\naliases = ["X"]\n',
    )
    with pytest.raises(DatasetSchemaError, match="already belongs to 'A'"):
        load_registry(clash)


# --------------------------------------------------------------------------- device
def test_board_from_device_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(DeviceUnavailableError, match=r"perfml\[gpu\]"):
        board_from_device()


def test_board_from_device_properties():
    known = {"name": b"NVIDIA H100 80GB HBM3", "major": 9, "minor": 0}
    assert board_from_properties(known).name == "H100-SXM"
    unknown = {
        "name": b"NVIDIA Future GPU",
        "major": 9,
        "minor": 0,
        "multiProcessorCount": 100,
        "clockRate": 1500000,  # kHz
        "memoryClockRate": 2000000,
        "memoryBusWidth": 4096,
        "l2CacheSize": 1 << 20,
        "warpSize": 32,
        "maxThreadsPerMultiProcessor": 2048,
        "totalGlobalMem": 1 << 34,
    }
    board = board_from_properties(unknown)
    assert (board.name, board.sms, board.boost_clock_mhz, board.memory_clock_mhz) == (
        "NVIDIA Future GPU",
        100,
        1500,
        2000,
    )
    assert board.fp32_cores_per_sm == 128  # inherited from the CC 9.0 table
    assert "CuPy" in board.value_source("sms")
    assert peak_bandwidth(board) == pytest.approx(2 * 2000e6 * 4096 / 8)


@pytest.mark.gpu
def test_board_from_device_on_a_gpu():
    pytest.importorskip("cupy")
    try:
        board = board_from_device(0)
    except DeviceUnavailableError:
        pytest.skip("no CUDA device")
    assert board.sms and board.sms > 0


# --------------------------------------------------------------------------- CLI
def test_cli_list_and_show():
    from perfml.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["boards", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    for name in ("GTX-680", "Tesla-K20", "H200", "Tesla-C1060"):
        assert name in listed.output

    shown = runner.invoke(app, ["boards", "show", "Tesla K20c", "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["name"] == "Tesla-K20"
    boost = data["fields"]["boost_clock_mhz"]
    assert boost["value"] == 706 and boost["unit"] == "MHz" and boost["source"].startswith("deviceQuery")
    assert {a["value"] for a in data["fields"]["l2_bytes"]["alternatives"]} >= {1048576, 131072}

    table = runner.invoke(app, ["boards", "show", "gtx-680"], env={"COLUMNS": "200"})
    assert table.exit_code == 0
    assert "1058" in table.output and "1006" in table.output


def test_cli_unknown_board_exits_2(capsys):
    from perfml.cli import main

    assert main(["boards", "show", "GTX-690"]) == 2
    err = capsys.readouterr().err
    assert "unknown board 'GTX-690'" in err and "GTX-680" in err


def test_l2_resident_roofline_is_one_formula():
    """max(flops / peak, max(bytes - L2, 0) / bandwidth), in ms, broadcasting; NaN work leaves the other term."""
    import numpy as np

    from perfml.boards import l2_resident_roofline_ms

    got = l2_resident_roofline_ms([2e9, 0.0, np.nan], [1e9, 3e9, 3e9], peak_flops_per_s=1e12,
                                  peak_bytes_per_s=1e12, l2_bytes=1e9)
    assert got.tolist() == pytest.approx([2.0, 2.0, 2.0])
    assert l2_resident_roofline_ms(0.0, 5e8, peak_flops_per_s=1.0, peak_bytes_per_s=1e9, l2_bytes=1e9) == 0.0
    assert l2_resident_roofline_ms(0.0, 5e8, peak_flops_per_s=1.0, peak_bytes_per_s=1e9) == pytest.approx(500.0)
