"""Hostile characterization files (issue 14 §3, §5; issue 11 §5): typed errors, never silent use.

A characterization JSON is user input (``--characterization FILE``). Whatever it holds,
loading it either gives a valid characterization or raises a :class:`PerfmlError`; values
that would silently change a diagnosis (NaN, non-positive or >1 relative performance,
another board's file) are refused.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfml.characterize import Characterization, load_characterization
from perfml.characterize.functions import CharacterizationFunction
from perfml.characterize.reference import reference_characterization
from perfml.errors import InvalidValueError, PerfmlError, ResultSchemaError


@pytest.fixture
def good(tmp_path):
    doc = reference_characterization("GTX-980").to_dict()
    path = tmp_path / "good.json"
    path.write_text(json.dumps(doc))
    return doc, path


def _write(tmp_path, doc, name="c.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_a_valid_file_round_trips(good):
    doc, path = good
    char = load_characterization(path, board="GTX-980")
    assert char.to_dict()["functions"] == doc["functions"]


@pytest.mark.parametrize("bad_y", [math.nan, -5.0, -1e-3, 1.5, math.inf])
def test_relative_performance_out_of_range_is_refused(tmp_path, good, bad_y):
    doc, _ = good
    fn = doc["functions"]["dram_thr"]
    fn["y"] = [bad_y] * len(fn["x"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))  # json writes NaN / Infinity literals, as a careless tool would
    with pytest.raises(InvalidValueError, match="relative performances"):
        load_characterization(path)


def test_another_boards_characterization_is_refused(tmp_path, good):
    doc, _ = good
    doc["board"] = "H100-SXM"
    with pytest.raises(InvalidValueError, match="characterizes board 'H100-SXM'"):
        load_characterization(_write(tmp_path, doc), board="GTX-980")


def test_board_aliases_match(tmp_path, good):
    doc, _ = good
    doc["board"] = "GTX 980"  # an alias of GTX-980 in the registry
    assert load_characterization(_write(tmp_path, doc), board="GTX-980").board == "GTX 980"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("functions"),
        lambda d: d.__setitem__("functions", []),
        lambda d: d.__setitem__("summary", {}),
        lambda d: d["functions"].__setitem__("shmem", "flat"),
        lambda d: d["functions"]["shmem"].pop("y"),
        lambda d: d["functions"]["shmem"].__setitem__("x", "abc"),
        lambda d: d.__setitem__("version", 99),
        lambda d: d.pop("values"),
    ],
    ids=["no-functions", "functions-list", "summary-dict", "function-str", "no-y", "x-str", "version", "no-values"],
)
def test_malformed_structure_is_a_schema_error(tmp_path, good, mutate):
    doc, _ = good
    mutate(doc)
    with pytest.raises(ResultSchemaError):
        load_characterization(_write(tmp_path, doc))


def test_not_an_object(tmp_path):
    with pytest.raises(ResultSchemaError, match="JSON object"):
        load_characterization(_write(tmp_path, [1, 2]))


def test_binary_garbage(tmp_path):
    path = tmp_path / "garbage.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ResultSchemaError):
        load_characterization(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(
    functions=st.dictionaries(
        st.sampled_from(["divergence", "shmem", "dram_thr", "arith_thr", "other"]),
        st.fixed_dictionaries(
            {"name": st.text(max_size=8), "x": json_values, "y": json_values},
            optional={"n_samples": json_values, "metadata": json_values},
        )
        | json_values,
        max_size=4,
    ),
    summary=json_values,
    device=json_values,
    board=json_values,
)
def test_any_document_loads_or_raises_a_typed_error(functions, summary, device, board):
    doc = {"format": "perfml-characterization", "version": 1, "functions": functions,
           "summary": summary, "device": device, "board": board}
    try:
        char = Characterization.from_dict(doc)
    except PerfmlError:
        return
    for fn in char.functions.values():  # whatever loaded is usable and in range
        assert all(0 <= v <= 1 + 1e-9 for v in fn.y)
        assert 0 <= fn(0.5) <= 1 + 1e-9


def test_function_rejects_nan_directly():
    with pytest.raises(InvalidValueError):
        CharacterizationFunction("shmem", x=(0.0, 1.0), y=(math.nan, 1.0))


def test_no_committed_rate_is_near_the_far_below_spec_warning():
    """perfml.characterize.limits warns below WARN_UNDER_SPEC (0.01) x the specification, as a
    unit slip; its docstring says why that is safe: every achieved rate of the committed
    characterizations is at least 0.05 x its specification (the GTX-Titan's FP32 rate from a
    hand-written matMul is the lowest), DRAM bandwidths 0.60-0.90 x."""
    from pathlib import Path

    import perfml
    from perfml.characterize import board_characterization
    from perfml.characterize.limits import WARN_UNDER_SPEC

    ratios = {}
    for path in sorted(Path(perfml.__file__).parent.joinpath("data", "characterizations").glob("*.json")):
        ch = board_characterization(path.stem)
        specs = {(v.quantity, v.dimension): v for v in ch.values if v.tier == "spec"}
        for v in ch.values:
            spec = specs.get((v.quantity, v.dimension))
            if v.tier != "spec" and spec is not None:
                ratios[(path.stem, v.quantity, v.tier)] = v.value / spec.to_unit(v.unit)
                assert not any("far below any working board's" in w for w in v.warnings), (path.stem, v)
    assert len(ratios) > 20
    lowest = min(ratios, key=ratios.get)
    assert lowest[:2] == ("GTX-Titan", "fp32_throughput") and 0.05 <= ratios[lowest] < 0.06
    assert ratios[lowest] > 5 * WARN_UNDER_SPEC
    dram = [r for k, r in ratios.items() if k[1] == "dram_bandwidth"]
    assert 0.59 <= min(dram) and max(dram) <= 0.91


# -- values the file's own spec tier would let through (fuzzing, session 18) --------------------------
def _t4_calibrated():
    from perfml.characterize import board_characterization

    return board_characterization("Tesla-T4").to_dict()


def test_the_limits_hold_against_the_registry_when_the_file_drops_its_spec_values(tmp_path):
    doc = _t4_calibrated()
    doc["values"] = [v for v in doc["values"] if v["tier"] != "spec"]
    for v in doc["values"]:
        if v["quantity"] == "dram_bandwidth" and v["unit"] == "B/s":
            v["value"] *= 50
    with pytest.raises(PerfmlError, match=r"dram_bandwidth \(calibrated\).*x the specification.*registry Tesla-T4"):
        load_characterization(_write(tmp_path, doc))


@pytest.mark.parametrize("scale, message", [(1e3, "below 0.001x no working board streams"),
                                            (0.1, r"x the DRAM specification .*; more than 1.5x is not physical"),
                                            (1e300, "expected a measured time")])
def test_a_streaming_curve_in_another_unit_is_refused(tmp_path, scale, message):
    doc = _t4_calibrated()
    doc["stream_curve"]["seconds"] = [s * scale for s in doc["stream_curve"]["seconds"]]
    with pytest.raises(PerfmlError, match=message):
        load_characterization(_write(tmp_path, doc))


def test_the_first_bad_knot_of_a_streaming_curve_is_the_one_named(tmp_path):
    doc = _t4_calibrated()
    curve = doc["stream_curve"]
    last, before = len(curve["seconds"]) - 1, len(curve["seconds"]) - 2
    curve["seconds"][before] = curve["seconds"][last] = 1e300
    named = re.escape(f"{curve['bytes'][before]:.4g} bytes in 1e+300 s; expected a measured time")
    assert f"{curve['bytes'][before]:.4g}" != f"{curve['bytes'][last]:.4g}"
    with pytest.raises(PerfmlError, match=named):
        load_characterization(_write(tmp_path, doc))


@pytest.mark.parametrize("value, unit", [(5.0, "ms"), (1e-12, "ms"), (0.5, "s")])
def test_a_launch_overhead_no_launch_takes_is_refused(tmp_path, value, unit):
    doc = _t4_calibrated()
    for v in doc["values"]:
        if v["quantity"] == "launch_overhead":
            v["value"], v["unit"] = value, unit
    with pytest.raises(PerfmlError, match="launch_overhead"):
        load_characterization(_write(tmp_path, doc))


def test_synthetic_must_be_true_or_false(tmp_path):
    doc = _t4_calibrated()
    doc["synthetic"] = "false"  # bool("false") is True
    with pytest.raises(PerfmlError, match="'synthetic' must be true or false"):
        load_characterization(_write(tmp_path, doc))


def test_a_key_given_twice_is_refused(tmp_path):
    path = tmp_path / "c.json"
    text = json.dumps(_t4_calibrated())
    path.write_text(text.replace('"board": "Tesla-T4"', '"board": "GTX-970", "board": "Tesla-T4"', 1))
    with pytest.raises(PerfmlError, match="key 'board' is given twice"):
        load_characterization(path)


@pytest.mark.parametrize("version", [True, 1.0])
def test_a_version_that_is_no_whole_number_is_refused(tmp_path, version):
    doc = _t4_calibrated()
    doc["version"] = version  # True == 1 and 1.0 == 1 in Python
    with pytest.raises(PerfmlError, match="unknown characterization version"):
        load_characterization(_write(tmp_path, doc))


def test_no_committed_streaming_curve_gets_a_rate_warning():
    """The curve-rate warnings (perfml.learned.target_characterization._curve_rate_warnings)
    stay silent on every committed characterization with a curve, the packaged boards' and
    models/default's training boards'."""
    from pathlib import Path

    import perfml
    from perfml.learned.target_characterization import _curve_rate_warnings

    root = Path(perfml.__file__).parent
    paths = sorted(root.joinpath("data", "characterizations").glob("*.json"))
    paths += sorted(root.parent.joinpath("models", "default").glob("*/characterizations/*.json"))
    checked = 0
    for path in paths:
        ch = load_characterization(path)
        if ch.stream_curve is not None:
            assert _curve_rate_warnings(ch, path.name) == [], path
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("scale, expected", [(100, ["x the board's specified", "its own calibrated dram_bandwidth"]),
                                             (3, ["its own calibrated dram_bandwidth"]),
                                             (1, [])])
def test_a_streaming_curve_slower_than_its_own_bandwidth_is_warned_about(tmp_path, scale, expected):
    """A T4 file whose curve was 100x too slow predicted a bmm 100x slower, with no warning
    (only a rate under 0.001x the specification was refused)."""
    from perfml.learned.target_characterization import _curve_rate_warnings

    doc = _t4_calibrated()
    doc["stream_curve"]["seconds"] = [s * scale for s in doc["stream_curve"]["seconds"]]
    warnings = _curve_rate_warnings(load_characterization(_write(tmp_path, doc)), "t4.json")
    assert len(warnings) == len(expected)
    for warning, phrase in zip(warnings, expected):
        assert warning.startswith("t4.json: ") and phrase in warning


# -- a result-set folder and the summary entries (probe of the thirty-seventh session) ---------------

_REPO = Path(__file__).resolve().parents[1]
_H100_SET = _REPO / "sweeps" / "results" / "H100-SXM"


def test_a_result_set_folder_of_another_board_is_refused_as_its_file_is():
    """``--characterization DIR`` of the H100 set applied to a GTX-980 query was used without a word."""
    from perfml.errors import CharacterizationBoardError

    with pytest.raises(CharacterizationBoardError, match="applied to 'GTX-980'"):
        load_characterization(_H100_SET, board="GTX-980")
    assert load_characterization(_H100_SET, board="H100-SXM").summary  # its own board: used


def _h100_doc():
    return json.loads((_H100_SET / "characterization.json").read_text())


@pytest.mark.parametrize("entry, field, value, expected", [
    ("dram", "achieved_per_cycle_per_sm", math.nan, "a finite number > 0"),
    ("dram", "achieved_per_s", -1.0, "a finite number > 0"),
    ("dram", "achieved_per_s", "fast", "a finite number > 0"),
    ("fp32_simple", "fraction_of_spec", 7812.0, "at most 1.5"),
    ("latency_global.dram", "latency_cycles", -100.0, "a finite number > 0"),
    ("latency_shared", "latency_cycles", 0.01, "at least one cycle"),
    ("sfu", "n_points", -3, "a whole number >= 0"),
    ("sfu", "avg_power_w", math.inf, "a finite number >= 0"),
])
def test_a_summary_figure_outside_physical_limits_is_refused_naming_entry_and_field(tmp_path, entry, field, value,
                                                                                  expected):
    doc = _h100_doc()
    item = next(e for e in doc["summary"] if e["name"] == entry)
    item[field] = value
    path = _write(tmp_path, doc)  # json writes NaN / Infinity literals, as a careless tool would
    with pytest.raises(InvalidValueError) as info:
        load_characterization(path, board="H100-SXM")
    message = str(info.value)
    assert str(path) in message and f"entry {entry!r}" in message and field in message and expected in message


def test_the_committed_characterizations_pass_the_summary_checks():
    entries = [len(load_characterization(path).summary) for path in sorted(_REPO.glob("sweeps/results/**/characterization.json"))]
    assert len(entries) >= 5 and sum(entries) >= 60  # a calibration-only set has no summary; the others do


def test_a_summary_entry_is_checked_when_made_so_every_file_written_reads_back():
    from perfml.characterize.summary import ClassSummary

    with pytest.raises(InvalidValueError, match="entry 'dram': achieved_per_s = inf"):
        ClassSummary(name="dram", kind="memory", unit="B/cycle/SM", achieved_per_s=math.inf)
    entry = ClassSummary(name="dram", kind="memory", unit="B/cycle/SM", achieved_per_s=3.0e12, n_points=4)
    assert ClassSummary.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry
