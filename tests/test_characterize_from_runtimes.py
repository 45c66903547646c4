"""The calibrated tier: ``perfml characterize --from-runtimes`` (issue 11 §1, §5).

Synthetic rows have a known truth (time = floor + work / rate, the work from
:mod:`perfml.apps` or the dataset README's operator semantics); the real-data tests
recompute the statistic independently from ``runtimes.csv.gz`` of the data home, and the
committed files under perfml/data/characterizations are checked against
``manifest.csv`` and re-derived.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfml.boards import get_board, peak_bandwidth
from perfml.characterize import load_characterization
from perfml.characterize.calibrate import (
    L2_FACTOR,
    MIN_ROWS,
    TOP_FRACTION,
    calibrate_from_rows,
    calibrate_from_runtimes,
)
from perfml.errors import CalibrationDataError, PhysicalLimitError

from conftest import data_home_path, needs_data_home

DATA = data_home_path() or Path("/nonexistent-data-home")  # None only under --without-data-home
RUNTIMES = DATA / "runtimes.csv.gz"
DLOPS = DATA / "dlops_runtimes.csv.gz"
needs_data = needs_data_home()

#: the boards of both corpora (datasets README: gpuperfpredict-nca coverage, dlops counts)
NCA_BOARDS = ("GTX-680", "GTX-750", "GTX-970", "GTX-980", "GTX-Titan", "GTX-Titan-Black",
              "Quadro-K5200", "Tesla-K20", "Tesla-K40")
DLOPS_BOARDS = ("Tesla-P4", "Tesla-P100-PCIe", "Tesla-V100-PCIe-32GB", "Tesla-T4", "A100-PCIe-40GB")
FLOOR_MS = 0.003


def _apps_rows(board="GTX-980", bandwidth=1.5e11, flops=5e11, sizes=None, extra=()):
    """vectorAdd (12 N bytes) and shared-memory matMul (2 N^3 FLOP) rows with a known truth."""
    sizes = sizes if sizes is not None else [2**k for k in range(17, 29)]
    rows = [
        {"board": board, "app_id": "vectorAdd", "input_size": n, "time_ms_median": FLOOR_MS + 12 * n / bandwidth * 1e3}
        for n in sizes
    ]
    rows += [
        {"board": board, "app_id": "matMul_gpu_sharedmem", "input_size": n, "block_x": 16, "block_y": 16,
         "grid_x": n // 16, "grid_y": n // 16, "time_ms_median": FLOOR_MS + 2 * n**3 / flops * 1e3}
        for n in range(256, 8193, 256)
    ]
    return pd.DataFrame(rows + list(extra))


def _dlops_rows(board="Tesla-T4", bandwidth=2.4e11, flops=3e12):
    """Synthetic add and bmm calls with a known truth: a floor plus their roofline at ``bandwidth``
    and ``flops`` (a bmm streams its operands too: a thin one is memory-bound)."""
    rng = np.random.default_rng(0)
    rows = []
    for b, h in zip(rng.integers(1, 4096, 300), rng.integers(64, 16384, 300)):
        rows.append({"board": board, "op": "add", "B": b, "H": h, "time_ms": 0.025 + 12 * b * h / bandwidth * 1e3})
    for b, m, n, k in rng.integers(8, 1024, (300, 4)):
        moved = 4.0 * b * (m * k + k * n + m * n)
        rows.append({"board": board, "op": "bmm", "B": b, "M": m, "N": n, "K": k,
                     "time_ms": 0.025 + max(2.0 * b * m * n * k / flops, moved / bandwidth) * 1e3})
    rows.append({"board": board, "op": "softmax", "B": 4, "H": 8, "time_ms": 0.02})  # unknown work: ignored
    return pd.DataFrame(rows)


# -- what is inferred --------------------------------------------------------------------------------
@settings(max_examples=25)
@given(fraction=st.floats(min_value=0.1, max_value=1.45))
def test_recovers_bandwidth_and_flops_from_nine_app_rows(fraction):
    bandwidth = fraction * peak_bandwidth(get_board("GTX-980"))
    ch = calibrate_from_rows(_apps_rows(bandwidth=bandwidth), "GTX-980")
    dram = ch.best("dram_bandwidth", "B/s", tiers=("calibrated",))
    assert dram.value == pytest.approx(bandwidth, rel=0.02)  # the floor is < 2% of the top sizes
    assert bool(dram.warnings) == (dram.value > 1.05 * peak_bandwidth(get_board("GTX-980")))
    fp32 = ch.best("fp32_throughput", "FLOP/s", tiers=("calibrated",))
    assert fp32.value == pytest.approx(5e11, rel=0.02) and fp32.bound == "lower"
    assert fp32.provenance["kernel"] == "matMul_gpu_sharedmem"
    floor = ch.best("launch_overhead", "ms", tiers=("calibrated",))
    assert FLOOR_MS <= floor.value < 2 * FLOOR_MS + 12 * 2**20 / bandwidth * 1e3


def test_rows_used_are_named_in_the_provenance():
    ch = calibrate_from_rows(_apps_rows(), "GTX-980", command="perfml characterize ...")
    dram = ch.best("dram_bandwidth", "B/s", tiers=("calibrated",))
    l2 = get_board("GTX-980").l2_bytes
    sizes = [n for n in [2**k for k in range(17, 29)] if 12 * n >= L2_FACTOR * l2]
    top = [n for n in sizes if n >= np.quantile(sizes, 1 - TOP_FRACTION)]
    if len(top) < MIN_ROWS:  # few distinct sizes: the MIN_ROWS largest
        top = sorted(sizes)[-MIN_ROWS:]
    assert dram.provenance["n_rows"] == len(top) >= MIN_ROWS
    assert dram.provenance["rows"]["input_size_min"] == min(top)
    assert "median" in dram.provenance["statistic"] and dram.provenance["filters"]["board"] == "GTX-980"
    assert ch.provenance["command"] == "perfml characterize ..." and ch.provenance["date"]


def test_a_median_not_a_max():
    """One absurdly fast top-size row does not move the bandwidth (a max would take it)."""
    base = calibrate_from_rows(_apps_rows(), "GTX-980").value("dram_bandwidth", "B/s", tiers=("calibrated",))
    fast = {"board": "GTX-980", "app_id": "vectorAdd", "input_size": 2**28, "time_ms_median": 12 * 2**28 / 3e11 * 1e3}
    moved = calibrate_from_rows(_apps_rows(extra=[fast]), "GTX-980").value("dram_bandwidth", "B/s", tiers=("calibrated",))
    assert moved == pytest.approx(base, rel=0.01)


def test_bytes_come_from_the_app_description(monkeypatch):
    """Doubling vectorAdd's dram_bytes_total in perfml.apps doubles the calibrated bandwidth."""
    import perfml.apps as apps

    base = calibrate_from_rows(_apps_rows(bandwidth=5e10), "GTX-980").value("dram_bandwidth", "B/s")
    real = apps.get_app

    def doubled(app_id):
        app = real(app_id)
        if app_id != "vectorAdd":
            return app
        work = dict(app.work, dram_bytes_total=f"2*({app.work['dram_bytes_total']})")
        return apps.AppDescription(**{**app.__dict__, "work": work})

    monkeypatch.setattr(apps, "get_app", doubled)
    assert calibrate_from_rows(_apps_rows(bandwidth=5e10), "GTX-980").value("dram_bandwidth", "B/s") == \
        pytest.approx(2 * base)


def test_dlops_rows_add_and_bmm():
    ch = calibrate_from_rows(_dlops_rows(), "Tesla-T4")
    assert ch.value("dram_bandwidth", "B/s", tiers=("calibrated",)) == pytest.approx(2.4e11, rel=0.05)
    fp32 = ch.best("fp32_throughput", "FLOP/s", tiers=("calibrated",))
    assert fp32.value == pytest.approx(3e12, rel=0.05) and fp32.bound == "estimate"
    assert 0.025 <= ch.value("launch_overhead", "ms", tiers=("calibrated",)) < 0.035  # floor + a little work


def test_an_unregistered_board_is_calibrated_with_a_warning():
    # a board name no registry has (synthetic rows); Tesla-P4 was such a board until the
    # NeuSight boards were registered
    ch = calibrate_from_rows(_dlops_rows(board="Synthetic-Board-X"), "Synthetic-Board-X")
    assert ch.board == "Synthetic-Board-X" and not ch.values_for("dram_bandwidth", tier="spec")
    assert any("not in the registry" in w for w in ch.warnings)


def test_a_missing_quantity_is_an_explicit_warning():
    rows = _apps_rows()
    ch = calibrate_from_rows(rows[rows["app_id"] == "vectorAdd"], "GTX-980")
    assert ch.values_for("fp32_throughput", tier="calibrated") == ()
    assert any(w.startswith("fp32_throughput not calibrated") for w in ch.warnings)


# -- bad input (issue 11 §5) -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rows, board, match",
    [
        (_apps_rows(board="GTX-970"), "GTX-980", "no row of board 'GTX-980'"),
        (_apps_rows().head(2), "GTX-980", "at least 3"),
        (pd.DataFrame({"board": ["GTX-980"] * 9, "app_id": ["bitonic"] * 9, "input_size": range(1, 10),
                       "time_ms_mean": [1.0] * 9}), "GTX-980", "unknown work"),
        (_apps_rows().drop(columns=["time_ms_median"]), "GTX-980", "time column"),
        (_apps_rows().drop(columns=["app_id"]), "GTX-980", "app_id column"),
        # every bad row is named, not dropped (a dropped row made "n rows" disagree with the file)
        (_apps_rows(sizes=[2**17, 2**18]).iloc[:2].assign(time_ms_median=[-1.0, np.nan]), "GTX-980",
         r"row 1 \(line 2\), column time_ms_median: expected a measured time in ms.*found '-1.0' \(2 such rows\)"),
        (_apps_rows().astype({"time_ms_median": object}).assign(time_ms_median=lambda f: ["abc", *f.time_ms_median[1:]]),
         "GTX-980", r"row 1 \(line 2\), column time_ms_median: .*found 'abc'"),
        (_apps_rows().assign(time_ms_median=lambda f: [*f.time_ms_median[:-1], 1.7e308]), "GTX-980",
         r"column time_ms_median: expected a measured time in ms, finite, between 0.0005 .* and 1e\+09, found .1.7e\+308."),
        (_apps_rows().astype({"input_size": object}).assign(input_size=lambda f: [*f.input_size[:-1], "many"]),
         "GTX-980", r"column input_size: expected a positive whole number, found 'many'"),
        (pd.DataFrame({"board": ["Tesla-T4"] * 3, "op": ["add"] * 3, "B": [-8, 16, 32], "H": [8, 8, 8],
                       "time_ms": [0.01, 0.02, 0.03]}), "Tesla-T4", r"row 1 \(line 2\), column B: .*found '-8'"),
        (pd.DataFrame({"board": ["Tesla-T4"] * 3, "op": ["add"] * 3, "B": [8, 16, 32], "H": [8, 8.5, 8],
                       "time_ms": [0.01, 0.02, 0.03]}), "Tesla-T4", r"row 2 \(line 3\), column H: .*found '8.5'"),
    ],
    ids=["other-board", "too-few", "unknown-work", "no-time", "no-kernel", "no-valid-time", "time-not-a-number", "time-beyond-any-call",
         "size-not-a-number", "negative-dimension", "fractional-dimension"],
)
def test_bad_calibration_rows_are_typed_errors(rows, board, match):
    with pytest.raises(CalibrationDataError, match=match):
        calibrate_from_rows(rows, board)


def test_above_one_and_a_half_times_spec_is_refused():
    spec = peak_bandwidth(get_board("GTX-980"))
    with pytest.raises(PhysicalLimitError, match="not physical"):
        calibrate_from_rows(_apps_rows(bandwidth=1.6 * spec), "GTX-980")


def test_a_row_faster_than_its_work_allows_is_refused_even_when_the_median_is_physical():
    rows = _apps_rows()
    fast = rows.index[rows["app_id"] == "vectorAdd"][-1]  # the largest vectorAdd, 1000x faster (a unit slip)
    rows.loc[fast, "time_ms_median"] /= 1000
    with pytest.raises(PhysicalLimitError, match=rf"row {fast + 1} \(line {fast + 2}\), column time_ms_median: .* "
                                                 r"faster than board GTX-980 can do this work"):
        calibrate_from_rows(rows, "GTX-980")


def test_far_below_the_specification_is_an_explicit_warning():
    """Every rate 100x too low (0.006x the datasheet): slower is possible, so kept, but said."""
    spec = peak_bandwidth(get_board("GTX-980"))
    ch = calibrate_from_rows(_apps_rows(bandwidth=0.6 * spec / 100, flops=5e11 / 100), "GTX-980")
    for quantity in ("dram_bandwidth", "fp32_throughput"):
        value = ch.best(quantity, "B/s" if quantity == "dram_bandwidth" else "FLOP/s", tiers=("calibrated",))
        assert any("far below any working board's" in w and "time unit" in w for w in value.warnings), value.warnings
    # a real board's figures are nowhere near: no such warning at 0.6x
    ch = calibrate_from_rows(_apps_rows(bandwidth=0.6 * spec), "GTX-980")
    assert not any("far below" in w for v in ch.values for w in v.warnings)


def test_a_thousandth_of_the_specification_is_refused_as_a_unit_slip():
    """Times in microseconds (or seconds) read as ms: every rate 1000x too low. Kept with a warning,
    it carried every prediction made with the calibration a thousandfold (vectorAdd 1166 ms, not 1.17)."""
    from perfml.errors import PhysicalLimitError

    spec = peak_bandwidth(get_board("GTX-980"))
    with pytest.raises(PhysicalLimitError, match=r"(below 0.001x|slower than any board streams).*time unit"):
        calibrate_from_rows(_apps_rows(bandwidth=0.6 * spec / 1000, flops=5e11), "GTX-980")


def test_cli_writes_only_on_success(tmp_path, monkeypatch):
    from perfml.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    rows = tmp_path / "rows.csv"
    _apps_rows().to_csv(rows, index=False)
    out = tmp_path / "c.json"
    assert main(["characterize", "--from-runtimes", str(rows), "--board", "GTX-970", "--out", str(out)]) == 2
    assert not out.exists()  # nothing half-written
    assert main(["characterize", "--from-runtimes", str(rows), "--out", str(out)]) == 2  # no --board
    assert main(["characterize", "--from-runtimes", str(rows), "--board", "GTX-980", "--out", str(out)]) == 0
    ch = load_characterization(out, board="GTX-980")
    assert ch.provenance["sha256"] and ch.provenance["command"].startswith("perfml characterize --from-runtimes")
    assert main(["characterize", "--from-runtimes", str(rows), "--board", "GTX-980", "--out", str(out)]) == 2
    assert main(["characterize", "--from-runtimes", str(tmp_path / "none.csv"), "--board", "GTX-980"]) == 2



def test_a_bad_calibration_row_is_named_by_the_line_it_is_on(tmp_path, capsys, monkeypatch):
    """Blank lines (skipped by the reader) before a bad row: the message said line r + 2, two lines above it."""
    from perfml.cli import main

    monkeypatch.setenv("COLUMNS", "250")
    rows = _apps_rows()
    rows.loc[rows.index[2], "time_ms_median"] = -1.0
    lines = rows.to_csv(index=False).splitlines()
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([lines[0], lines[1], "", "", *lines[2:]]) + "\n")  # row 3 on line 6
    assert main(["characterize", "--from-runtimes", str(path), "--board", "GTX-980"]) == 2
    assert "rows.csv, row 3 (line 6), column time_ms_median" in " ".join(capsys.readouterr().err.split())

# -- real data: the data home and the committed characterizations ------------------------------------------
@needs_data
def test_gtx980_bandwidth_equals_an_independent_recomputation():
    rt = pd.read_csv(RUNTIMES, low_memory=False)
    va = rt[(rt.board == "GTX-980") & (rt.app_id == "vectorAdd") & (rt.source == "gpuperfpredict-nca")]
    va = va[12 * va.input_size >= L2_FACTOR * get_board("GTX-980").l2_bytes]
    top = va[12 * va.input_size >= (12 * va.input_size).quantile(1 - TOP_FRACTION)]
    expected = float(np.median(12 * top.input_size / (top.time_ms_median * 1e-3)))
    ch = calibrate_from_runtimes(RUNTIMES, "GTX-980", source="gpuperfpredict-nca")
    assert ch.value("dram_bandwidth", "B/s", tiers=("calibrated",)) == pytest.approx(expected, rel=1e-12)


def _committed() -> dict[str, Path]:
    folder = Path(str(resources.files("perfml").joinpath("data", "characterizations")))
    return {p.stem: p for p in sorted(folder.glob("*.json"))}


def test_every_board_of_both_corpora_has_a_committed_characterization():
    assert set(_committed()) == set(NCA_BOARDS) | set(DLOPS_BOARDS)


@pytest.mark.parametrize("board", NCA_BOARDS + DLOPS_BOARDS)
def test_committed_characterization(board):
    path = _committed()[board]
    ch = load_characterization(path, board=board)
    data_file = "runtimes.csv.gz" if board in NCA_BOARDS else "dlops_runtimes.csv.gz"
    assert ch.provenance["data_file"] == data_file
    assert ch.provenance["command"].startswith("perfml characterize --from-runtimes")
    assert f"--board {board}" in ch.provenance["command"] and ch.provenance["date"]
    manifest = pd.read_csv(DATA / "manifest.csv") if (DATA / "manifest.csv").exists() else None
    if manifest is not None:
        assert ch.provenance["sha256"] == manifest.set_index("file").loc[data_file, "sha256"]
    for quantity, unit in (("dram_bandwidth", "B/s"), ("fp32_throughput", "FLOP/s"), ("launch_overhead", "ms")):
        v = ch.best(quantity, unit, tiers=("calibrated",))
        assert v is not None and v.provenance["n_rows"] >= MIN_ROWS and v.provenance["statistic"]
        assert v.provenance["file"] == data_file
    spec = ch.best("dram_bandwidth", "B/s", tiers=("spec",))
    if spec is not None:  # registered board: calibrated below the datasheet (DRAM-sized rows only)
        assert ch.value("dram_bandwidth", "B/s", tiers=("calibrated",)) < spec.value
    text = path.read_text()
    assert "upstream_row" not in text and len(json.loads(text)["values"]) < 40  # no dataset rows copied


@needs_data
@pytest.mark.parametrize("board", ["GTX-750", "Tesla-P4"])
def test_committed_values_are_what_the_command_gives(board):
    committed = load_characterization(_committed()[board])
    data_file = DATA / committed.provenance["data_file"]
    again = calibrate_from_runtimes(data_file, board, source=committed.provenance["filters"].get("source"))
    for v in committed.values:
        assert again.value(v.quantity, v.unit, tiers=(v.tier,)) == pytest.approx(v.value, rel=1e-12)
    # the streaming curve too (perfml.characterize.stream_curve), knot for knot: the byte
    # counts exactly, the times to rounding (the isotonic fit's pooled means may differ in the
    # last bit between numpy / scikit-learn releases, as seen on the Tesla-P4's curve)
    curve, again_curve = committed.stream_curve, again.stream_curve
    assert curve is not None and again_curve is not None
    assert curve.bytes == again_curve.bytes
    assert curve.seconds == pytest.approx(again_curve.seconds, rel=1e-12)
    assert (curve.kernel, curve.tier, curve.source, curve.statistic) == (
        again_curve.kernel, again_curve.tier, again_curve.source, again_curve.statistic)


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00garbage\x00\x01", b"board,op\nGTX-980,add\n"],
                         ids=["empty", "binary", "no-time"])
def test_unreadable_calibration_files_are_typed_errors(tmp_path, content):
    path = tmp_path / "rows.csv"
    path.write_bytes(content)
    with pytest.raises(CalibrationDataError):
        calibrate_from_runtimes(path, "GTX-980")


def test_a_launch_beyond_cudas_limits_is_refused():
    # a block of 4096 threads never ran; it moved the calibrated launch overhead
    rows = _apps_rows().assign(block_x=[*([256] * (len(_apps_rows()) - 1)), 4096])
    with pytest.raises(CalibrationDataError, match=r"column block_x: expected a positive whole number at most 1024 "
                                                   r"\(CUDA's launch limit\), found '4096'"):
        calibrate_from_rows(rows, "GTX-980")


def test_repeats_far_apart_are_told():
    from perfml.characterize.calibrate import repeat_spread_warning

    rows = _apps_rows()
    assert repeat_spread_warning(pd.concat([rows, rows.assign(time_ms_median=rows.time_ms_median * 1.5)]),
                                 "GTX-980", "cal.csv") is None  # repeats within 2x: run-to-run spread
    pasted = pd.concat([rows, rows.assign(time_ms_median=rows.time_ms_median * 2.5)])  # the file's rows again, x100
    line = repeat_spread_warning(pasted, "GTX-980", "cal.csv")
    assert line.startswith(f"cal.csv: {len(rows)} run(s) of GTX-980 measured more than once are more than 2x apart")
    # another board's repeats are not this board's
    assert repeat_spread_warning(pd.concat([pasted.assign(board="GTX-680"), rows]), "GTX-980", "cal.csv") is None


def test_perfml_characterize_from_runtimes_prints_the_repeat_warning(tmp_path, capsys):
    from perfml.cli import main

    rows = _apps_rows()
    pd.concat([rows, rows.assign(time_ms_median=rows.time_ms_median * 2.5)]).to_csv(tmp_path / "cal.csv", index=False)
    assert main(["characterize", "--from-runtimes", str(tmp_path / "cal.csv"), "--board", "GTX-980"]) == 0
    assert "warning: " in capsys.readouterr().err


def test_the_repeat_warning_is_kept_in_the_written_file_and_the_json(tmp_path, capsys):
    """The warning reached the terminal only: neither ``--out`` nor ``--json`` held it (probe 37)."""
    import json

    from perfml.characterize import load_characterization
    from perfml.cli import main

    rows = _apps_rows()
    pd.concat([rows, rows.assign(time_ms_median=rows.time_ms_median * 2.5)]).to_csv(tmp_path / "cal.csv", index=False)
    args = ["characterize", "--from-runtimes", str(tmp_path / "cal.csv"), "--board", "GTX-980"]
    assert main([*args, "--json", "--out", str(tmp_path / "ch.json")]) == 0
    told = "measured more than once are more than 2x apart"
    assert sum(told in w for w in json.loads(capsys.readouterr().out)["warnings"]) == 1
    assert sum(told in w for w in load_characterization(tmp_path / "ch.json").warnings) == 1
    assert main(args) == 0
    assert "".join(capsys.readouterr().err.split()).count("".join(told.split())) == 1  # once, not twice


# -- rows that are not what a calibration needs (fuzzing, session 18) ---------------------------------
def test_only_large_calls_give_neither_a_launch_overhead_nor_a_curve():
    """The three largest add calls of a T4 gave a 'launch overhead' of 1.38 ms and a curve held flat
    below them: every small call was predicted at a large call's time."""
    rows = _dlops_rows()
    rows = rows[rows["op"] == "add"].assign(_b=lambda f: f.B * f.H).nlargest(3, "_b").drop(columns="_b")
    ch = calibrate_from_rows(rows, "Tesla-T4")
    assert ch.value("launch_overhead", "ms") is None and ch.stream_curve is None
    assert any("not launch-bound" in w and "launch_overhead not calibrated" in w for w in ch.warnings)
    assert any("stream_curve not built" in w and "not launch-bound" in w for w in ch.warnings)
    # the whole sweep keeps both
    full = calibrate_from_rows(_dlops_rows(), "Tesla-T4")
    assert full.value("launch_overhead", "ms") is not None and full.stream_curve is not None


@pytest.mark.parametrize("where", ["smallest", "largest"])
def test_a_few_rows_in_another_time_unit_are_refused(where):
    """Five vectorAdd rows in microseconds among rows in ms: the medians hid them, and the curve and
    the launch overhead took them (vectorAdd of 1M floats predicted at 3.7 ms, not 0.073)."""
    from perfml.errors import PhysicalLimitError

    rows = _apps_rows()
    pick = rows[rows["app_id"] == "vectorAdd"].sort_values("input_size").index
    pick = pick[:5] if where == "smallest" else pick[-5:]
    rows.loc[pick, "time_ms_median"] *= 1000
    with pytest.raises(PhysicalLimitError, match=r"row \d+ \(line \d+\), column time_ms_median: .*time unit"):
        calibrate_from_rows(rows, "GTX-980")


def test_a_calibration_ten_times_too_slow_is_told():
    spec = peak_bandwidth(get_board("GTX-980"))
    ch = calibrate_from_rows(_apps_rows(bandwidth=0.06 * spec), "GTX-980")
    assert any("reached 0.06x the specified bandwidth" in w and "time unit" in w for w in ch.warnings)
    assert not any("specified bandwidth" in w for w in calibrate_from_rows(_apps_rows(bandwidth=0.6 * spec),
                                                                              "GTX-980").warnings)


def test_a_calibration_file_without_the_board_is_named(tmp_path, capsys):
    from perfml.cli import main

    _apps_rows(board="GTX-970").to_csv(tmp_path / "cal970.csv", index=False)
    assert main(["characterize", "--from-runtimes", str(tmp_path / "cal970.csv"), "--board", "GTX-980"]) == 2
    assert f"no row of board 'GTX-980' in {tmp_path / 'cal970.csv'} (boards present: GTX-970)" in capsys.readouterr().err


@pytest.mark.parametrize("source, timing", [
    (None, "not recorded in the rows"),
    ("gpuperfpredict-nca", "nvprof kernel duration (excludes host launch latency)"),
    ("sweep", "CUDA events around each launch"),
    ("sweep-kernel-duration", "CUPTI kernel duration (perfml sweep run --timing kernel-duration"),
    ("my-lab", "not recorded in the rows"),
])
def test_the_launch_floor_says_how_its_rows_were_timed(source, timing):
    """A launch floor means another thing timed by nvprof (kernel only) than between CUDA
    events (with the launch): every application row was labelled nvprof, a perfml sweep's
    CUDA-event times and a user's file of unknown timing included. Synthetic rows."""
    rows = _apps_rows(sizes=[2**k for k in range(10, 29)])
    if source is not None:
        rows["source"] = source
    ch = calibrate_from_rows(rows, "GTX-980")
    assert timing in ch.best("launch_overhead", "ms").provenance["timing"]


def test_a_calibration_files_header_is_read_as_the_query_files_are(tmp_path):
    """Spaces around a header name are dropped (as in query and reference files: " time_ms " was
    not found); a semicolon-separated export is named with the header it has and its separator
    (perfml._csv_header.check_header, as for query and reference files); too few rows name the file."""
    rows = _apps_rows()
    rows.to_csv(tmp_path / "ok.csv", index=False)
    text = (tmp_path / "ok.csv").read_text().splitlines()
    text[0] = ", ".join(f" {c} " for c in text[0].split(","))
    (tmp_path / "spaced.csv").write_text("\n".join(text) + "\n")
    spaced = calibrate_from_runtimes(tmp_path / "spaced.csv", "GTX-980")
    plain = calibrate_from_runtimes(tmp_path / "ok.csv", "GTX-980")
    assert [(v.quantity, v.value) for v in spaced.values] == [(v.quantity, v.value) for v in plain.values]
    (tmp_path / "semi.csv").write_text((tmp_path / "ok.csv").read_text().replace(",", ";"))
    with pytest.raises(CalibrationDataError, match=r"semi.csv: the header reads as one column, 'board;"
                                                   r".*separated by semicolons, and perfml reads comma-separated"):
        calibrate_from_runtimes(tmp_path / "semi.csv", "GTX-980")
    rows.rename(columns={"board": "gpu"}).to_csv(tmp_path / "gpu.csv", index=False)
    with pytest.raises(CalibrationDataError, match=r"gpu.csv: no board column in its header \(found 'gpu'"):
        calibrate_from_runtimes(tmp_path / "gpu.csv", "GTX-980")
    rows.head(2).to_csv(tmp_path / "few.csv", index=False)
    with pytest.raises(CalibrationDataError, match=r"^few.csv: 2 row\(s\) of known work for 'GTX-980'"):
        calibrate_from_runtimes(tmp_path / "few.csv", "GTX-980")


def test_a_calibration_file_of_a_header_alone_says_so(tmp_path, capsys):
    # it was told "no row of board 'GTX-980' in cal.csv (boards present: )"
    from perfml.cli import main

    (tmp_path / "cal.csv").write_text("board,app_id,input_size,time_ms\n")
    assert main(["characterize", "--from-runtimes", str(tmp_path / "cal.csv"), "--board", "GTX-980"]) == 2
    err = capsys.readouterr().err
    assert "cal.csv: no rows under the header; add the runs measured on GTX-980" in err and "Traceback" not in err


def test_a_source_no_row_has_is_refused_listing_the_rows_sources():
    """``--source BSPGPU`` for GTX-980 said only that no row had it (probe 37); ``fit-lambda`` lists them."""
    rows = _apps_rows()
    rows = rows.assign(source=np.where(np.arange(len(rows)) % 2 == 0, "gpuperfpredict-nca", "own-runs"))
    with pytest.raises(CalibrationDataError, match="with source 'BSPGPU'; its rows' sources: gpuperfpredict-nca, own-runs$"):
        calibrate_from_rows(rows, "GTX-980", source="BSPGPU")
