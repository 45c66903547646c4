"""Board characterization as data (issue 11 §1, §5): tiered values, sources, physical limits.

Truth comes from: the board registry (``spec``: perfml/data/boards.toml through
:func:`perfml.boards.peak_bandwidth` / :func:`~perfml.boards.peak_flops`), and the seed 001
text (``published``: ../shared/seeds/001_37d900892b579193.txt, Tables 3-6, parsed here
line by line).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfml.boards import get_board, peak_bandwidth, peak_flops
from perfml.characterize import (
    MAX_OVER_SPEC,
    QUANTITIES,
    WARN_OVER_SPEC,
    BoardCharacterization,
    Characterization,
    CharacterizedValue,
    load_characterization,
    reference_characterization,
    same_board,
    spec_values,
)
from perfml.characterize.reference import REFERENCE_FILES
from perfml.errors import (
    CharacterizationBoardError,
    InvalidValueError,
    PerfmlError,
    PhysicalLimitError,
    ResultSchemaError,
)

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
SEED001 = SEEDS / "001_37d900892b579193.txt"
needs_seed = pytest.mark.skipif(not SEED001.exists(), reason="seed papers not next to the repository")


def _calibrated(quantity="dram_bandwidth", value=1e11, unit="B/s", **kw):
    return CharacterizedValue(quantity, value, unit, "calibrated", source="test rows", **kw)


# -- one value ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(quantity="warp_speed"), InvalidValueError),
        (dict(unit="furlongs"), InvalidValueError),
        (dict(unit="cycles"), InvalidValueError),  # a latency unit for a bandwidth
        (dict(tier="guessed"), InvalidValueError),
        (dict(bound="maybe"), InvalidValueError),
        (dict(value=math.nan), InvalidValueError),
        (dict(value=math.inf), InvalidValueError),
        (dict(value=0.0), PhysicalLimitError),
        (dict(value=-3.0), PhysicalLimitError),
        (dict(source=""), InvalidValueError),
        (dict(tier="published"), InvalidValueError),  # a published value without its citation
    ],
    ids=["quantity", "unit", "wrong-dimension", "tier", "bound", "nan", "inf", "zero", "negative",
         "no-source", "uncited-published"],
)
def test_a_bad_value_is_a_typed_error(kwargs, error):
    args = dict(quantity="dram_bandwidth", value=1e11, unit="B/s", tier="calibrated", source="rows")
    args.update(kwargs)
    with pytest.raises(error):
        CharacterizedValue(**args)


def test_negative_latency_is_refused():
    with pytest.raises(PhysicalLimitError, match="latency must be positive"):
        CharacterizedValue("dram_latency", -400.0, "cycles", "measured", source="chase")


def test_units_convert_within_a_dimension_only():
    v = CharacterizedValue("global_memory_throughput", 165, "GB/s", "calibrated", source="x")
    assert v.to_unit("B/s") == pytest.approx(165e9)
    with pytest.raises(InvalidValueError, match="cannot convert"):
        v.to_unit("transactions/cycle/SM")
    overhead = CharacterizedValue("launch_overhead", 2.5, "us", "calibrated", source="x")
    assert overhead.to_unit("ms") == pytest.approx(2.5e-3)


# -- the spec tier cites the registry -------------------------------------------------------------
@pytest.mark.parametrize("name", ["GTX-980", "GTX-680", "Tesla-K40", "Tesla-T4", "A100-40GB"])
def test_spec_values_follow_the_registry_and_cite_its_fields(name):
    board = get_board(name)
    spec = {(v.quantity, v.unit): v for v in spec_values(board)}
    assert spec["dram_bandwidth", "B/s"].value == peak_bandwidth(board)
    assert spec["fp32_throughput", "FLOP/s"].value == peak_flops(board, "fp32")
    assert spec["fp32_throughput", "instructions/cycle/SM"].value == board.fp32_cores_per_sm
    for v in spec.values():
        assert v.tier == "spec" and v.bound == "upper"
        assert v.source.startswith(f"registry {board.name}:")
        assert v.provenance["fields"]


# -- physical limits --------------------------------------------------------------------------------
@given(ratio=st.floats(min_value=0.01, max_value=3.0))
def test_achieved_against_spec(ratio):
    board = get_board("GTX-980")
    achieved = _calibrated(value=ratio * peak_bandwidth(board))
    if ratio > MAX_OVER_SPEC:
        with pytest.raises(PhysicalLimitError, match="not physical"):
            Characterization(board="GTX-980", values=spec_values(board) + (achieved,))
        return
    ch = Characterization(board="GTX-980", values=spec_values(board) + (achieved,))
    kept = ch.values_for("dram_bandwidth", tier="calibrated")[0]
    assert bool(kept.warnings) == (ratio > WARN_OVER_SPEC)


CEILING, FLOOR = "beyond any GPU's", "shorter than any memory level answers"


@pytest.mark.parametrize("quantity, value, unit, refused", [
    ("launch_overhead", 1e300, "ms", CEILING),  # was accepted: no spec to compare with
    ("launch_overhead", 2.0, "s", CEILING),
    ("launch_overhead", 0.025, "ms", None),
    ("dram_latency", 2e5, "cycles", CEILING),
    ("dram_latency", 657.0, "cycles", None),
    ("l2_latency", 5.0, "ms", CEILING),
    ("shared_latency", 0.01, "cycles", FLOOR),  # was used: the BSP lambda of matMul_gpu fitted 1,000x low (probe 37)
    ("dram_latency", 0.5, "cycles", FLOOR),
    ("dram_latency", 1e-12, "s", FLOOR),
    ("shared_latency", 23.0, "cycles", None),
    ("dram_latency", 4e-7, "s", None),
])
def test_latencies_and_launch_overhead_have_a_ceiling_and_latencies_a_floor(quantity, value, unit, refused):
    v = CharacterizedValue(quantity, value, unit, "calibrated", source="synthetic test value")
    if refused:
        with pytest.raises(PhysicalLimitError, match=refused):
            Characterization(board="GTX-980", values=(v,))
    else:
        assert Characterization(board="GTX-980", values=(v,)).values_for(quantity)[0].value == value


@pytest.mark.parametrize("quantity, value, unit", [
    ("fp32_throughput", 1e15, "instructions/s"),  # 30x an H100's 132 SMs x 128 lanes x 1.98 GHz
    ("fp16_throughput", 1e15, "instructions/s"),
    ("shared_bandwidth", 1e15, "B/s"),  # 32 banks x 4 B per cycle per SM: 33 TB/s on an H100
])
def test_an_achieved_rate_is_held_to_the_spec_in_the_other_time_base(quantity, value, unit):
    """The registry states the FP32 pipe per cycle per SM and DRAM per second: a value given in the
    other time base met no specification and was used as it was (probe 37)."""
    v = CharacterizedValue(quantity, value, unit, "measured", source="synthetic test value")
    with pytest.raises(PhysicalLimitError, match="not physical"):
        Characterization(board="H100-SXM", values=(v,))


def test_the_rate_equivalents_restate_the_registry_figures():
    from perfml.characterize.spec import rate_equivalents, spec_values

    board = get_board("H100-SXM")
    specs = spec_values(board)
    derived = {(v.quantity, v.unit): v.value for v in rate_equivalents(board, specs)}
    scale = board.sms * board.boost_clock_mhz * 1e6
    assert derived[("fp32_throughput", "instructions/s")] == pytest.approx(board.fp32_cores_per_sm * scale)
    assert derived[("shared_bandwidth", "B/s")] == pytest.approx(board.shared_banks * 4 * scale)
    assert ("sfu_throughput", "instructions/s") not in derived  # the registry states it already
    assert not any(q == "dram_bandwidth" for q, _ in derived)  # DRAM runs on its own clock: no bound per SM cycle
    held = Characterization(board="H100-SXM", values=(CharacterizedValue(
        "fp32_throughput", 0.9 * board.fp32_cores_per_sm * scale, "instructions/s", "measured", source="t"),))
    assert not held.values[0].warnings  # within the specification: kept without a note


def test_a_published_value_above_the_papers_spec_is_refused():
    with pytest.raises(PhysicalLimitError):
        Characterization(values=(CharacterizedValue(
            "fp32_throughput", 200.0, "instructions/cycle/SM", "published", source="t",
            provenance={"paper": "p", "seed_file": "f", "table": "Table 3", "line": 168, "paper_spec": 128.0},
        ),))


def test_a_file_breaking_the_limits_is_refused_at_load(tmp_path):
    board = get_board("GTX-980")
    doc = Characterization(board="GTX-980", values=spec_values(board) + (_calibrated(value=1e11),)).to_dict()
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    assert load_characterization(path, board="GTX-980").value("dram_bandwidth", "B/s") == 1e11
    for bad, error in ((2 * peak_bandwidth(board), PhysicalLimitError), (-1.0, PhysicalLimitError),
                       ("fast", ResultSchemaError), (math.nan, InvalidValueError)):
        doc["values"][-1]["value"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(error):
            load_characterization(path)


# -- files and tiers ----------------------------------------------------------------------------------
def test_round_trip_with_values_and_provenance(tmp_path):
    board = get_board("GTX-980")
    ch = BoardCharacterization(
        board="GTX-980",
        values=spec_values(board) + (_calibrated(provenance={"file": "x.csv", "n_rows": 12}),),
        warnings=("no matMul rows",),
        provenance={"command": "perfml characterize --from-runtimes x.csv --board GTX-980"},
    )
    back = load_characterization(ch.save(tmp_path / "c.json"), board="GTX 980")
    assert back == ch
    data = json.loads((tmp_path / "c.json").read_text())
    assert (data["format"], data["version"]) == ("perfml-board-characterization", 1)


def test_the_legacy_format_still_loads(tmp_path):
    doc = reference_characterization("GTX-980").to_dict()
    legacy = {k: doc[k] for k in ("board", "source", "synthetic", "device", "functions", "summary")}
    legacy.update(format="perfml-characterization", version=1)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(legacy))
    old = load_characterization(path, board="GTX-980")
    assert old.values == () and old.summary_for("fp32_simple").achieved_per_cycle_per_sm == 116.3


def test_best_prefers_what_was_observed_on_the_board():
    board = get_board("GTX-980")
    ch = Characterization(board="GTX-980", values=spec_values(board) + (_calibrated(value=1.7e11),))
    assert ch.best("dram_bandwidth", "GB/s").tier == "calibrated"
    assert ch.value("dram_bandwidth", "GB/s") == pytest.approx(170)
    assert ch.best("dram_bandwidth", "B/s", tiers=("spec",)).tier == "spec"
    assert ch.best("dram_latency", "cycles") is None
    assert ch.best("dram_bandwidth", "transactions/cycle/SM") is None  # no clock is assumed


def test_another_boards_file_is_a_typed_error(tmp_path):
    path = Characterization(board="Tesla-P4", values=(_calibrated(),)).save(tmp_path / "p4.json")
    with pytest.raises(CharacterizationBoardError, match="characterizes board 'Tesla-P4'"):
        load_characterization(path, board="Tesla-T4")
    assert load_characterization(path, board="tesla p4").board == "Tesla-P4"  # not registered: normalized
    assert same_board("GTX 980", "GeForce GTX 980") and not same_board("GTX-980", "GTX-970")


@given(doc=st.dictionaries(
    st.sampled_from(["quantity", "value", "unit", "tier", "source", "bound", "provenance", "warnings"]),
    st.none() | st.floats() | st.text(max_size=12) | st.sampled_from(sorted(QUANTITIES))
    | st.sampled_from(["B/s", "cycles", "calibrated", "published", "spec"]) | st.lists(st.text(max_size=3)),
))
def test_any_value_document_loads_or_raises_a_typed_error(doc):
    try:
        value = CharacterizedValue.from_dict(doc)
    except PerfmlError:
        return
    assert math.isfinite(value.value) and value.value > 0 and value.source


# -- the published tier: seed 001 Tables 3-6 ---------------------------------------------------------
@pytest.mark.parametrize("board", sorted(REFERENCE_FILES))
def test_every_published_value_names_its_source(board):
    ch = reference_characterization(board)
    published = [v for v in ch.values if v.tier == "published"]
    assert published, f"{board} has no published value"
    for v in published:
        for key in ("paper", "seed_file", "table", "line"):
            assert v.provenance.get(key), f"{v.quantity}: no {key}"
        assert v.provenance["table"] in v.source and str(v.provenance["line"]) in v.source
        if SEED001.exists():
            assert (SEEDS / v.provenance["seed_file"]).exists()


def _cells(lines: list[str], lineno: int) -> list[str]:
    return lines[lineno - 1].split("\t")


def _number(cell: str) -> float | None:
    first = cell.split()[0]
    return None if first == "n.a." else float(first.replace(",", ""))


@needs_seed
@pytest.mark.parametrize("board", sorted(REFERENCE_FILES))
def test_published_values_equal_the_seed_text(board):
    """Every published value is the number at its cited line and column of the seed text."""
    lines = SEED001.read_text().splitlines()
    header3 = _cells(lines, 165)[1:]  # Table 3 column kinds, same order as the data file
    ch = reference_characterization(board)
    t3 = [v for v in ch.values if v.provenance.get("table") == "Table 3"]
    if t3:
        assert len(t3) == len(header3) == 10
        assert [v.value for v in t3] == [_number(c) for c in _cells(lines, 168)[1:]]
        specs = [_number(c) for c in _cells(lines, 167)[1:]]
        assert [v.provenance.get("paper_spec") for v in t3] == specs
    t4 = [v for v in ch.values if v.provenance.get("table") == "Table 4"]
    if t4:
        assert [v.value for v in t4] == [_number(c) for c in _cells(lines, 180)[1:]]
        assert [c.lower() for c in _cells(lines, 178)[1:]] == [v.provenance["column"].lower() for v in t4]
    for v in ch.values_for("global_memory_throughput", tier="published"):
        text = lines[v.provenance["line"] - 1]
        label = board.replace("-", "")  # the seed writes GTX660 / GTX980
        assert f"gmem_throughput={v.value:g}GB/s ({label})" in text


@needs_seed
@pytest.mark.parametrize("board, first_column", [("GTX-660", 4), ("GTX-980", 8)])
def test_case_study_tables_equal_the_seed_text(board, first_column):
    """Tables 5 and 6: exec. time, avg. and peak power, energy of every row, per board."""
    from perfml.characterize.reference import reference_table

    lines = SEED001.read_text().splitlines()
    data = reference_table(board)
    assert board.replace("-", "") in lines[data["table5"]["header_lines"][0] - 1]
    for table in ("table5", "table6"):
        rows = data[table]["rows"]
        assert len(rows) == 4
        assert "TABLE " + table[-1] in lines[data[table]["caption_line"] - 1]
        for row in rows:
            cells = _cells(lines, row["line"])
            got = [float(c) for c in cells[first_column:first_column + 4]]
            assert got == [row["exec_time_ms"], row["avg_power_w"], row["peak_power_w"], row["energy_j"]]
            assert cells[1].strip() == row["version"]


# -- one object per board: every tier perfml has ----------------------------------------------------------
def test_board_characterization_assembles_every_tier():
    from perfml.characterize import board_characterization

    ch = board_characterization("GeForce GTX 980")
    assert ch.board == "GTX-980"
    assert {v.tier for v in ch.values} == {"spec", "published", "calibrated"}
    assert ch.best("dram_bandwidth", "B/s").tier == "calibrated"
    assert ch.best("dram_bandwidth", "transactions/cycle/SM").tier == "published"
    assert ch.best("fp32_throughput", "FLOP/s", tiers=("spec",)).value == peak_flops(get_board("GTX-980"))
    assert ch.summary_for("fp32_simple").achieved_per_cycle_per_sm == 116.3  # seed 001 Table 3
    assert len(ch.values_for("dram_bandwidth", tier="spec")) == 1  # the registry's spec once


def test_board_characterization_of_a_neusight_board_has_spec_and_calibrated_tiers():
    # The NeuSight boards (Tesla-P4 here) are in the registry, so their committed
    # calibrated file is checked against the spec and carries both tiers.
    from perfml.characterize import board_characterization

    ch = board_characterization("Tesla-P4")
    assert {"spec", "calibrated"} <= {v.tier for v in ch.values}
    assert not any("not in the registry" in w for w in ch.warnings)
    spec = ch.values_for("dram_bandwidth", tier="spec")[0].value
    calibrated = ch.values_for("dram_bandwidth", tier="calibrated")[0].value
    assert 0 < calibrated <= spec


def test_board_characterization_refuses_another_boards_parts(tmp_path, monkeypatch):
    from perfml.characterize import board, board_characterization
    from perfml.characterize.functions import CharacterizationFunction

    other = Characterization(board="GTX-970", values=(_calibrated(value=1e11),))
    with pytest.raises(CharacterizationBoardError):
        board_characterization("GTX-980", extra=(other,))
    shmem = CharacterizationFunction("shmem", x=(0.0, 1.0), y=(0.5, 1.0), n_samples=4, source="sweep")
    mine = Characterization(board="GTX 980", functions={"shmem": shmem}, source="sweep")
    assert board_characterization("GTX-980", extra=(mine,)).f_shmem(0.0) == 0.5
    # a committed file under the wrong name is refused, not applied
    (tmp_path / "GTX-980.json").write_text(other.to_json())
    monkeypatch.setattr(board, "_folder", lambda: tmp_path)
    with pytest.raises(CharacterizationBoardError, match="characterizes board 'GTX-970'"):
        board_characterization("GTX-980")
