"""Boards of the user's own: a boards file beside the shipped registry (``perfml --boards FILE``,
``$PERFML_BOARDS``, :func:`perfml.boards.use_board_files`; docs/boards.md).

A GPU perfml does not ship is described in a TOML file of the registry's layout, every value
with its source; it then takes part in everything a shipped board does (predictions,
characterizations, ``perfml boards``). Every board below is **synthetic**: a copy of a shipped
entry under another name, or made-up values, each file saying so in its sources.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from perfml.boards import get_board, list_boards, load_registry, use_board_files, user_board_files
from perfml.boards._registry import BOARDS_ENV, default_registry
from perfml.cli import main
from perfml.errors import DatasetSchemaError, MissingBoardParameterError, UnknownBoardError

from conftest import data_home_path, needs_data_home

MODEL = Path(__file__).resolve().parents[1] / "models" / "default"
HEADER = 'format = "perfml-boards"\nschema_version = 1\n'


def _toml_value(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def twin_file(path: Path, of: str, name: str, **changes) -> Path:
    """A boards file holding a synthetic copy of shipped board ``of`` named ``name`` (every
    field of the original, per-CC values included, unless ``changes`` replaces it)."""
    board = get_board(of)
    lines = [HEADER, "[sources]", f'twin = "synthetic: the {of} entry of perfml/data/boards.toml copied for a test"',
             "", "[[board]]", f'name = "{name}"', f'full_name = "Synthetic twin of {of}"', 'source = "@twin"']
    changes.setdefault("device_name", f"{name} (synthetic)")  # the original's would be ambiguous
    for field_name, value, _unit, _source in board.spec_items():
        value = changes.get(field_name, value)
        if field_name != "full_name" and value is not None:
            lines.append(f"{field_name} = {_toml_value(value)}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(autouse=True)
def shipped_registry_after(monkeypatch):
    """Every test starts and ends with the shipped registry alone."""
    monkeypatch.delenv(BOARDS_ENV, raising=False)
    use_board_files([])
    yield
    use_board_files([])


def _run(capsys, *argv) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# --------------------------------------------------------------------------- the registry
def test_a_twin_has_every_value_of_its_original_and_keeps_the_shipped_boards(tmp_path):
    registry = use_board_files([twin_file(tmp_path / "mine.toml", "H100-SXM", "My-H100")])
    mine, original = get_board("my h100"), get_board("H100-SXM")
    names = {"full_name", "device_name"}
    assert [(f, v) for f, v, *_ in mine.spec_items() if f not in names] == \
        [(f, v) for f, v, *_ in original.spec_items() if f not in names]
    assert mine.sources["sms"].startswith("synthetic: the H100-SXM entry")
    assert len(registry.boards) == len(load_registry().boards) + 1
    assert registry.origin["My-H100"] == str((tmp_path / "mine.toml").resolve())
    assert registry.user_files == (str((tmp_path / "mine.toml").resolve()),)
    # back to the shipped registry
    use_board_files([])
    with pytest.raises(UnknownBoardError, match=r"\$PERFML_BOARDS or `perfml --boards FILE`"):
        get_board("My-H100")


def test_a_new_compute_capability_table_is_inherited_by_the_users_boards(tmp_path):
    (tmp_path / "cc.toml").write_text(HEADER + """
[sources]
made-up = "synthetic: made-up values for a test"

[cc."12.7"]
source = "@made-up"
architecture = "Testwell"
fp32_cores_per_sm = 96
warp_size = 32

[[board]]
name = "Testwell-1"
full_name = "Synthetic board of a compute capability the registry lacks"
source = "@made-up"
compute_capability = "12.7"
sms = 10
boost_clock_mhz = 1500
memory_bandwidth_gbs = 500.0
fp32_cores_per_sm = 128
""")
    use_board_files([tmp_path / "cc.toml"])
    board = get_board("Testwell-1")
    assert board.architecture == "Testwell" and board.warp_size == 32
    assert board.fp32_cores_per_sm == 128  # the board's own value wins; the per-CC one is an alternative
    assert [a.value for a in board.alternatives["fp32_cores_per_sm"]] == [96]
    assert "12.7" in default_registry().compute_capabilities()


def test_a_value_the_board_lacks_is_a_typed_error_naming_the_boards_file(tmp_path):
    (tmp_path / "few.toml").write_text(HEADER + """
[[board]]
name = "Few-Values"
full_name = "Synthetic board with few values"
source = "synthetic: made-up values for a test"
compute_capability = "12.7"
sms = 10
""")
    use_board_files([tmp_path / "few.toml"])
    from perfml.boards import peak_flops

    with pytest.raises(MissingBoardParameterError, match=r"fp32_cores_per_sm.*\$PERFML_BOARDS"):
        peak_flops(get_board("Few-Values"))


def test_a_file_named_twice_is_read_once(tmp_path):
    mine = twin_file(tmp_path / "mine.toml", "GTX-980", "My-980")
    registry = use_board_files([mine, tmp_path / "." / "mine.toml"])
    assert registry.user_files == (str(mine.resolve()),)


def test_caches_follow_the_boards_files(tmp_path):
    """Two files giving one name other values: the features follow the file in use."""
    from perfml.learned.board_features import board_features
    from perfml.learned.operator_model._features import board_peaks

    slow = twin_file(tmp_path / "slow.toml", "Tesla-T4", "Mine", memory_bandwidth_gbs=300.0)
    fast = twin_file(tmp_path / "fast.toml", "Tesla-T4", "Mine", memory_bandwidth_gbs=600.0)
    seen = []
    for file in (slow, fast, slow):
        use_board_files([file])
        seen.append((float(board_peaks(["Mine"]).peak_bw[0]), float(board_features(["Mine"]).board_peak_bw_gbs.iloc[0])))
    assert seen == [(300e9, 300.0), (600e9, 600.0), (300e9, 300.0)]


# --------------------------------------------------------------------------- bad files
_BOARD = '[[board]]\nname = "Mine-1"\nfull_name = "Synthetic board"\nsource = "synthetic: made-up values for a test"\n'


@pytest.mark.parametrize(
    "text, message",
    [
        (_BOARD.replace("Mine-1", "GTX-980"), r"board 'GTX-980' is defined already by .*boards\.toml"),
        (_BOARD + 'aliases = ["H100 SXM"]\n', r"alias 'H100 SXM' of board 'Mine-1' already belongs to 'H100-SXM'"),
        (_BOARD + 'aliases = ["---"]\n', r"'---' of board 'Mine-1' has no letter or digit"),
        ('[sources]\ntpu = "my own database"\n' + _BOARD, r"\[sources\] name 'tpu' is already defined by .*boards\.toml"),
        ('[cc."9.0"]\nsource = "mine"\nwarp_size = 32\n' + _BOARD, r'\[cc\."9\.0"\] is already defined by .*boards\.toml'),
        (_BOARD + "sms = -5\n", r"sms = -5 is not a value a GPU has \(expected from 1 to 10,000 SMs\)"),
        (_BOARD + "sms = 0\n", r"sms = 0 is not a value a GPU has"),
        (_BOARD + "sms = 100000000000000000\n", r"sms = 100000000000000000 is not a value a GPU has"),
        (_BOARD + "memory_bandwidth_gbs = 1e-300\n", r"expected from 1 to 100,000 GB/s"),
        (_BOARD + "warp_issue_per_clock = 1e-300\n", r"warp_issue_per_clock = 1e-300 is not a value a GPU has"),
        (_BOARD + "warp_size = 1\n", r"warp_size = 1 is not a value a GPU has \(expected 32 threads\)"),
        (_BOARD + "l2_bytes = 1000000000000000000\n", r"l2_bytes = 1000000000000000000 is not a value a GPU has"),
        (_BOARD + "boost_clock_mhz = 1\n", r"expected from 50 to 10,000 MHz"),
        (_BOARD + "sms = 1.5\n", r"sms = 1\.5 has the wrong type \(expected a whole number\)"),
        (_BOARD + "memory_bandwidth_gbs = nan\n", r"memory_bandwidth_gbs = nan is not a finite number"),
        (_BOARD + "memory_bandwidth_gbs = inf\n", r"memory_bandwidth_gbs = inf is not a finite number"),
        (_BOARD + "memory_bandwidth_gbs = 3.35e12\n", r"expected from 1 to 100,000 GB/s, 1e9 bytes/s"),
        (_BOARD + "boost_clock_mhz = 1980000000\n", r"expected from 50 to 10,000 MHz"),
        (_BOARD + 'compute_capability = "sm_90"\n', r"compute_capability = 'sm_90' is not 'major\.minor'"),
        (_BOARD.replace('source = "synthetic: made-up values for a test"\n', "") + "sms = 4\n",
         r"board 'Mine-1'\.sms has no source"),
        (_BOARD + "sms = 4\n[extras]\nx = 1\n", r"unknown top-level key\(s\) \['extras'\]"),
        ("schema_version = 7\n" + _BOARD, r"schema_version"),
        # each value plausible, the pair impossible (a board where no 512-thread block is resident
        # was predicted at 1.8x the consistent file's time)
        (_BOARD + "max_threads_per_sm = 2048\nmax_warps_per_sm = 1\n",
         r"max_threads_per_sm = 2048 but max_warps_per_sm = 1 \(32 threads"),
        (_BOARD + 'compute_capability = "9.0"\nmax_warps_per_sm = 1\n',
         r'max_threads_per_sm \(from the \[cc\."9\.0"\] table\) = 2048 but max_warps_per_sm = 1'),
        (_BOARD + "max_threads_per_block = 4096\n", r"max_threads_per_block = 4096 is above CUDA's 1024 threads"),
        (_BOARD + "max_threads_per_sm = 1024\nmax_threads_per_block = 2048\n",
         r"max_threads_per_block = 2048 is above CUDA's 1024"),
        (_BOARD + "max_threads_per_sm = 512\nmax_threads_per_block = 1024\n",
         r"max_threads_per_block = 1024 is above max_threads_per_sm = 512"),
        (_BOARD + "shared_mem_per_sm_kb = 48\nshared_mem_per_block_kb = 96\n",
         r"shared_mem_per_block_kb = 96 is above shared_mem_per_sm_kb = 48"),
        (_BOARD + "registers_per_sm = 32768\nregisters_per_block = 65536\n",
         r"registers_per_block = 65536 is above registers_per_sm = 32768"),
        (_BOARD + "base_clock_mhz = 1500\nboost_clock_mhz = 1000\n", r"base_clock_mhz = 1500 is above boost_clock_mhz = 1000"),
        # 0 reads as "no L2" (compute capability 1.x) to the features and the L2-resident bound
        (_BOARD + 'compute_capability = "8.0"\nl2_bytes = 0\n',
         r"l2_bytes = 0 on compute capability 8\.0, but every GPU of compute capability 2\.0 or later has an L2"),
    ],
)
def test_a_bad_boards_file_is_refused_and_the_registry_is_unchanged(tmp_path, text, message):
    bad = tmp_path / "bad.toml"
    bad.write_text((text if text.startswith("schema_version") else HEADER + text))
    with pytest.raises(DatasetSchemaError, match=message) as info:
        use_board_files([bad])
    assert str(bad.resolve()) in str(info.value)
    assert user_board_files() == () and len(list_boards()) == len(load_registry().boards)


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_boards_file_that_is_not_a_file_is_refused(tmp_path, kind):
    target = tmp_path / "boards"
    if kind == "folder":
        target.mkdir()
    with pytest.raises(DatasetSchemaError, match=f"boards file .* is {'a folder' if kind == 'folder' else 'missing'}"):
        use_board_files([target])


# --------------------------------------------------------------------------- the command line
@pytest.mark.parametrize("terminal", [{}, {"COLUMNS": "40"}, {"FORCE_COLOR": "1", "COLUMNS": "60"}])
def test_boards_list_and_show_name_the_users_file(tmp_path, capsys, monkeypatch, terminal):
    """The file's path is printed whole (a narrow terminal or forced colours used to break it)."""
    for key, value in terminal.items():
        monkeypatch.setenv(key, value)
    mine = twin_file(tmp_path / "mine.toml", "GTX-980", "My-980")
    status, out, _ = _run(capsys, "--boards", str(mine), "boards", "list")
    assert status == 0 and "My-980" in out and f"from your boards file {mine.resolve()}: My-980" in out
    status, out, _ = _run(capsys, "--boards", str(mine), "boards", "show", "My-980")
    assert status == 0 and f"defined in your boards file {mine.resolve()}" in out
    status, _, err = _run(capsys, "boards", "show", "My-980")  # without the file: unknown again
    assert status == 2 and "unknown board 'My-980'" in err


def test_the_environment_variable_names_boards_files_and_a_bad_one_stops_every_command(tmp_path, capsys, monkeypatch):
    import os

    mine = twin_file(tmp_path / "mine.toml", "GTX-980", "My-980")
    monkeypatch.setenv(BOARDS_ENV, os.pathsep.join(["", str(mine)]))
    status, out, _ = _run(capsys, "boards", "show", "My-980", "--json")
    assert status == 0 and json.loads(out)["name"] == "My-980"
    monkeypatch.setenv(BOARDS_ENV, str(tmp_path / "nothere.toml"))
    status, out, err = _run(capsys, "boards", "list")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "nothere.toml" in err and "is missing" in err and "Traceback" not in err


@needs_data_home()
def test_a_twin_of_a_shipped_board_is_predicted_as_the_original(tmp_path, capsys):
    """Predictions depend on a board's values, not its name: the same rows on a synthetic twin
    and on its original agree to the last bit (application kernels and operators, spec tier)."""
    mine = twin_file(tmp_path / "mine.toml", "H100-SXM", "My-H100")
    rows = pd.DataFrame({"app_id": ["vectorAdd", "matMul_gpu", None], "input_size": [1 << 20, 1024, None],
                         "op": [None, None, "bmm"], "B": [None, None, 8], "M": [None, None, 512],
                         "N": [None, None, 512], "K": [None, None, 512]})
    queries = pd.concat([rows.assign(board="H100-SXM"), rows.assign(board="My-H100")], ignore_index=True)
    queries["input_size"] = queries["input_size"].astype("Int64")
    for dim in "BMNK":
        queries[dim] = queries[dim].astype("Int64")
    queries.to_csv(tmp_path / "q.csv", index=False)
    home = str(data_home_path())
    status, _, err = _run(capsys, "--boards", str(mine), "predict", "--model", str(MODEL), "--queries",
                          str(tmp_path / "q.csv"), "--output", str(tmp_path / "p.csv"), "--data-home", home)
    assert status == 0, err
    out = pd.read_csv(tmp_path / "p.csv")
    original, twin = out.iloc[:3].reset_index(drop=True), out.iloc[3:].reset_index(drop=True)
    for column in ("predicted_ms", "lower_ms", "upper_ms"):
        assert twin[column].tolist() == original[column].tolist()
    assert twin.tier.eq("spec").all()

    # without the boards file the twin is an unknown board, and nothing is written
    status, _, err = _run(capsys, "predict", "--model", str(MODEL), "--queries", str(tmp_path / "q.csv"),
                          "--output", str(tmp_path / "p2.csv"), "--data-home", home)
    assert status == 2 and "unknown board" in err and "--boards FILE" in err
    assert not (tmp_path / "p2.csv").exists()


@needs_data_home()
def test_more_bandwidth_on_a_users_board_never_slows_a_memory_bound_kernel(tmp_path, capsys):
    home = str(data_home_path())
    pd.DataFrame({"board": ["Mine"], "op": ["add"], "B": [65536], "H": [6400]}).to_csv(tmp_path / "q.csv", index=False)
    predicted = []
    for bandwidth in (300.0, 600.0, 1200.0):
        mine = twin_file(tmp_path / f"mine{bandwidth:g}.toml", "Tesla-T4", "Mine", memory_bandwidth_gbs=bandwidth)
        out = tmp_path / f"p{bandwidth:g}.csv"
        status, _, err = _run(capsys, "--boards", str(mine), "predict", "--model", str(MODEL), "--queries",
                              str(tmp_path / "q.csv"), "--output", str(out), "--data-home", home)
        assert status == 0, err
        predicted.append(float(pd.read_csv(out).predicted_ms[0]))
    assert all(math.isfinite(p) for p in predicted)
    assert predicted[0] >= predicted[1] >= predicted[2] and predicted[0] > predicted[2]


def test_characterize_from_runtimes_on_a_users_board(tmp_path, capsys):
    """A board nobody ships, calibrated from its own (synthetic) element-wise add calls."""
    mine = twin_file(tmp_path / "mine.toml", "Tesla-T4", "Mine")
    sizes = [(b, h) for b in (1024, 4096, 16384, 65536) for h in (256, 1024, 4096)]
    # synthetic times: 12 B per element at 250 GB/s plus a 5 us launch floor
    rows = pd.DataFrame([{"board": "Mine", "op": "add", "B": b, "H": h, "time_ms": 0.005 + 12 * b * h / 250e9 * 1e3}
                         for b, h in sizes])
    rows.to_csv(tmp_path / "adds.csv", index=False)
    out = tmp_path / "mine.json"
    status, _, err = _run(capsys, "--boards", str(mine), "characterize", "--from-runtimes", str(tmp_path / "adds.csv"),
                          "--board", "Mine", "--out", str(out))
    assert status == 0, err
    data = json.loads(out.read_text())
    assert data["board"] == "Mine"
    dram = [v for v in data["values"] if v["quantity"] == "dram_bandwidth" and v["tier"] == "calibrated"]
    assert dram and 0.8 * 250e9 <= dram[0]["value"] <= 1.05 * 250e9


# --------------------------------------------------------------------------- odd characters in names
@pytest.mark.parametrize("name", ["GTX-980\N{ROCKET}", "GTX\N{NON-BREAKING HYPHEN}980", "GTX-980\x00", "GTX\N{EN DASH}980",
                                  "\N{FULLWIDTH LATIN CAPITAL LETTER G}TX-980"])
def test_a_board_name_with_a_character_no_board_name_has_is_refused_not_dropped(name):
    """Lookup ignores case, spaces and -_./()+; any other character was dropped before, so
    'GTX-980' followed by an emoji was taken for the GTX-980."""
    with pytest.raises(UnknownBoardError, match="which no board name has"):
        get_board(name)


@pytest.mark.parametrize("name", ["GTX 980", "gtx_980", "NVIDIA GeForce GTX 980", " GTX-980 ", "gtx.980",
                                  "NVIDIA\N{REGISTERED SIGN} GeForce\N{REGISTERED SIGN} GTX 980"])
def test_spellings_of_letters_digits_and_punctuation_still_resolve(name):
    assert get_board(name).name == "GTX-980"


def test_a_boards_file_alias_with_an_odd_character_is_refused(tmp_path):
    (tmp_path / "odd.toml").write_text(HEADER + _BOARD + 'aliases = ["Mine\N{ROCKET}"]\n')
    with pytest.raises(DatasetSchemaError, match="alias 'Mine.' of board 'Mine-1' has"):
        use_board_files([tmp_path / "odd.toml"])


def test_no_l2_is_accepted_on_compute_capability_1x_where_it_is_right(tmp_path):
    (tmp_path / "old.toml").write_text(HEADER + _BOARD + 'compute_capability = "1.3"\nl2_bytes = 0\n')
    use_board_files([tmp_path / "old.toml"])
    assert get_board("Mine-1").l2_bytes == 0


@pytest.mark.parametrize("text, message", [
    # the name was checked only where it differed from the full name: a board 'Syn #1' loaded, and no
    # command could look it up
    (_BOARD.replace('name = "Mine-1"\nfull_name = "Synthetic board"', 'name = "Syn #1"\nfull_name = "Syn #1"'),
     "name or alias 'Syn #1' of board 'Syn #1' has '#'"),
    (_BOARD.replace('source = "synthetic: made-up values for a test"', 'source = ""'), "source is empty"),
    (_BOARD + 'sms = { value = 4, source = "synthetic", alternatives = [{ value = -3, source = "x" }] }\n',
     r"sms.*-3"),
    (_BOARD + 'compute_capability = "05.2"\n', "is not 'major.minor'"),
    # CUDA's first devices are 1.0: "0.0" loaded, and "0.x" boards were written by from-properties
    (_BOARD + 'compute_capability = "0.0"\n', "with a major from 1 to 20"),
    (_BOARD + 'compute_capability = "0.9"\n', "with a major from 1 to 20"),
    # a typo or a property read wrong: "99.0" loaded (sidecars refuse sm_999 by the same limit)
    (_BOARD + 'compute_capability = "99.0"\n', "with a major from 1 to 20"),
    # printed raw by `boards show`: a newline or a bidi mark garbled every listing
    (_BOARD + 'device_name = "GPU\\u202e"\n', r"device_name = 'GPU\\u202e' holds a control character"),
    (_BOARD + 'architecture = "Hopper\\nX"\n', "architecture = 'Hopper\\\\nX' holds a control character"),
    # a unit slip (KiB written as bytes): 60 loaded and moved predictions
    (_BOARD + 'compute_capability = "8.0"\nl2_bytes = 60\n', "has an L2 cache of at least 16 KiB"),
    (_BOARD + 'compute_capability = "2.0"\nl2_bytes = 16383\n', "has an L2 cache of at least 16 KiB"),
])
def test_a_boards_file_breaking_the_documented_rules_is_refused(tmp_path, text, message):
    (tmp_path / "bad.toml").write_text(HEADER + text)
    with pytest.raises(DatasetSchemaError, match=message):
        use_board_files([tmp_path / "bad.toml"])


def test_from_properties_reads_a_recorded_bytes_name_as_the_name(tmp_path, capsys):
    """A recording made with str(bytes) holds "b'NVIDIA H200'": it passed the known-device check."""
    props = _properties(tmp_path, name="b'NVIDIA H200'")
    status, _, err = _run(capsys, "boards", "from-properties", str(props), "--name", "My-Device", "--out",
                          str(tmp_path / "m.toml"))
    assert status == 2 and "the device 'NVIDIA H200' is the registry's board 'H200' already" in err
    status, _, err = _run(capsys, "boards", "from-properties", str(_properties(tmp_path)), "--name", "My GPU #2",
                          "--out", str(tmp_path / "m.toml"))
    assert status == 2 and "has '#'" in err and "nothing written" in err and not (tmp_path / "m.toml").exists()


# --------------------------------------------------------------------------- perfml boards from-properties
H200_PROPERTIES = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200" / "device_properties.json"


def _properties(tmp_path: Path, **changes) -> Path:
    """The H200's recorded properties with ``changes``: a synthetic device (its name changed)."""
    props = json.loads(H200_PROPERTIES.read_text())
    props.update({"name": "Synthetic Device (test)", **changes})
    path = tmp_path / "props.json"
    path.write_text(json.dumps(props))
    return path


def test_from_properties_writes_a_boards_file_of_the_devices_values(tmp_path, capsys):
    from perfml.boards import peak_bandwidth

    props = _properties(tmp_path)
    out = tmp_path / "mine.toml"
    status, stdout, err = _run(capsys, "boards", "from-properties", str(props), "--name", "My-Device", "--out", str(out))
    assert status == 0, err
    assert "memory_bandwidth_gbs" in err and "fp32_cores_per_sm" not in err  # CC 9.0 gives the per-SM units
    use_board_files([out])
    board, recorded = get_board("My-Device"), json.loads(H200_PROPERTIES.read_text())
    assert board.device_name == "Synthetic Device (test)" and board.compute_capability == "9.0"
    assert board.sms == recorded["multiProcessorCount"] and board.l2_bytes == recorded["l2CacheSize"]
    assert board.boost_clock_mhz == round(recorded["clockRate"] / 1000)
    assert board.fp32_cores_per_sm == get_board("H200").fp32_cores_per_sm  # inherited from [cc."9.0"]
    assert peak_bandwidth(board) == 2 * round(recorded["memoryClockRate"] / 1000) * 1e6 * recorded["memoryBusWidth"] / 8
    assert "props.json" in board.sources["sms"]
    assert get_board("Synthetic Device (test)").name == "My-Device"  # the driver's name finds it


def test_from_properties_of_a_new_compute_capability_says_what_is_missing(tmp_path, capsys):
    props = _properties(tmp_path, major=12, minor=7)
    status, _, err = _run(capsys, "boards", "from-properties", str(props), "--name", "My-Device", "--out", str(tmp_path / "m.toml"))
    assert status == 0 and "fp32_cores_per_sm" in err


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "is the registry's board 'H200' already"),  # the real H200's name
        ("not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object at the top level (a cudaGetDeviceProperties document), found a JSON list"),
        ('{"name": "X", "multiProcessorCount": 4}', "no usable major and minor"),
        ('{"name": "X", "major": 9, "minor": 0, "multiProcessorCount": -4}', "multiProcessorCount = -4 is not a positive whole number"),
        ('{"name": "X", "major": 9, "minor": 0, "multiProcessorCount": 132.9}', "multiProcessorCount = 132.9 is not a positive whole number"),
        ('{"name": 123, "major": 9, "minor": 0, "multiProcessorCount": 132}', "name = 123 is not the device's name"),
        ('{"name": "X", "major": 9, "minor": 0, "multiProcessorCount": 132, "clockRate": 1}', "clockRate = 1 is not at least 1000"),
        ('{"name": "X", "major": 9, "minor": 0, "multiProcessorCount": 132, "clockRate": "fast"}', "clockRate = 'fast' is not a positive whole number"),
        ('{"name": "X", "major": 9, "minor": 0, "multiProcessorCount": 132, "clockRate": Infinity}', "Infinity is not JSON"),
        ('{"name": "X", "major": 9, "minor": 0, "multiProcessorCount": 132, "l2CacheSize": 1e32}', "l2_bytes = 100000000000000005366162204393472 is not a value a GPU has"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ],
)
def test_from_properties_refuses_bad_or_known_devices_and_writes_nothing(tmp_path, capsys, content, message):
    if content is None:
        props = _properties(tmp_path, name="NVIDIA H200")
    else:
        props = tmp_path / "props.json"
        props.write_text(content)
    status, _, err = _run(capsys, "boards", "from-properties", str(props), "--name", "My-Device", "--out", str(tmp_path / "m.toml"))
    assert status == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "m.toml").exists()


def test_from_properties_never_replaces_a_file_silently(tmp_path, capsys):
    out = tmp_path / "m.toml"
    out.write_text("mine")
    argv = ["boards", "from-properties", str(_properties(tmp_path)), "--name", "My-Device", "--out", str(out)]
    status, _, err = _run(capsys, *argv)
    assert status == 2 and "--overwrite" in err and out.read_text() == "mine"
    status, _, err = _run(capsys, *argv, "--overwrite")
    assert status == 0 and 'name = "My-Device"' in out.read_text()
    status, _, err = _run(capsys, *argv[:4], "GTX-980", *argv[5:], "--overwrite")  # a shipped name
    assert status == 2 and "board 'GTX-980' is defined already" in err and 'name = "My-Device"' in out.read_text()


def test_boards_given_to_one_in_process_command_do_not_outlive_it(tmp_path, capsys):
    mine = twin_file(tmp_path / "mine.toml", "GTX-980", "My-980")
    status, _, err = _run(capsys, "--boards", str(mine), "boards", "show", "My-980")
    assert status == 0, err
    assert user_board_files() == ()
    with pytest.raises(UnknownBoardError):
        get_board("My-980")
    # and a caller's own files survive a command run in-process
    use_board_files([mine])
    status, _, _ = _run(capsys, "boards", "list")
    assert status == 0 and user_board_files() == (str(mine.resolve()),)


def test_boards_files_written_from_two_devices_are_used_together(tmp_path, capsys):
    """Each generated file names its source after its board: two files share no [sources] name."""
    files = []
    for name, cc in (("One", (9, 0)), ("Two", (8, 0))):
        props = tmp_path / f"{name}.json"
        props.write_text(json.dumps({"name": f"Synthetic Device {name}", "major": cc[0], "minor": cc[1],
                                     "multiProcessorCount": 100, "clockRate": 1500000}))
        files.append(tmp_path / f"{name}.toml")
        status, _, err = _run(capsys, *(a for f in files[:-1] for a in ("--boards", str(f))), "boards", "from-properties",
                              str(props), "--name", f"GPU-{name}", "--out", str(files[-1]))
        assert status == 0, err
    use_board_files(files)
    assert get_board("GPU-One").compute_capability == "9.0" and get_board("GPU-Two").compute_capability == "8.0"


@pytest.mark.parametrize("text", ['x = ' + "[" * n + "]" * n for n in (100, 1000)]
                         + ["[board]\n" + "x." * 100 + "y = 1"])
def test_a_boards_file_nested_too_deeply_is_refused(tmp_path, text):
    (tmp_path / "deep.toml").write_text(HEADER + text + "\n")
    with pytest.raises(DatasetSchemaError, match="nested too deeply"):
        use_board_files([tmp_path / "deep.toml"])


def test_a_boards_file_that_is_a_device_or_fifo_is_not_called_missing(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    for target in (tmp_path / "fifo", Path("/dev/null")):
        with pytest.raises(DatasetSchemaError, match="is not a regular file"):
            use_board_files([target])


def test_a_boards_file_edited_between_two_uses_is_read_again(tmp_path):
    import os

    mine = twin_file(tmp_path / "mine.toml", "Tesla-T4", "Mine", memory_bandwidth_gbs=300.0)
    use_board_files([mine])
    assert get_board("Mine").memory_bandwidth_gbs == 300.0
    twin_file(mine, "Tesla-T4", "Mine", memory_bandwidth_gbs=600.0)
    os.utime(mine, ns=(os.stat(mine).st_atime_ns, os.stat(mine).st_mtime_ns + 10**9))  # a later modification
    use_board_files([mine])
    assert get_board("Mine").memory_bandwidth_gbs == 600.0


def test_features_follow_an_edited_boards_file(tmp_path):
    """The feature caches are keyed by the files' modification times too, not only their paths."""
    import os

    from perfml.learned.operator_model._features import board_peaks

    mine = twin_file(tmp_path / "mine.toml", "Tesla-T4", "Mine", memory_bandwidth_gbs=300.0)
    use_board_files([mine])
    assert float(board_peaks(["Mine"]).peak_bw[0]) == 300e9
    twin_file(mine, "Tesla-T4", "Mine", memory_bandwidth_gbs=600.0)
    os.utime(mine, ns=(os.stat(mine).st_atime_ns, os.stat(mine).st_mtime_ns + 10**9))
    use_board_files([mine])
    assert float(board_peaks(["Mine"]).peak_bw[0]) == 600e9


def test_a_sweep_is_planned_on_a_users_board_as_on_its_original(tmp_path, capsys):
    """`perfml --boards FILE sweep plan --board NAME`: a twin of the GTX-980 plans the same
    points with the same time estimates (a board's plan depends on its values, not its name)."""
    mine = twin_file(tmp_path / "mine.toml", "GTX-980", "My-980")
    def plan(*boards_option: str, board: str) -> dict:
        status, out, err = _run(capsys, *boards_option, "sweep", "plan", "calibration", "--board", board, "--json", "--points")
        assert status == 0, err
        return json.loads(out)

    original, twin = plan(board="GTX-980"), plan("--boards", str(mine), board="My-980")
    assert twin["board"] == "My-980" and original["board"] == "GTX-980"
    assert {k: v for k, v in twin.items() if k != "board"} == {k: v for k, v in original.items() if k != "board"}


@needs_data_home()
@pytest.mark.parametrize("cc, dropped, named", [
    # a compute capability perfml has no [cc] table for: no cores per SM, no residency limits
    ("8.7", None, r"no value for 'fp32_cores_per_sm'.*no \[cc\.\"8\.7\"\] table"),
    ("8.0", "sms", r"no value for 'sms'"),
    ("8.0", "boost_clock_mhz", r"no value for 'boost_clock_mhz'"),
])
def test_a_board_lacking_a_figure_every_prediction_needs_is_named_not_blamed_on_the_size(tmp_path, capsys, cc,
                                                                                           dropped, named):
    # the NaN prediction was reported as "too far outside the training data: choose a size nearer",
    # and a kernel known from --reference as having "no measurement at input_size 1024"
    values = {"compute_capability": f'"{cc}"', "sms": "82", "boost_clock_mhz": "1695",
              "memory_bandwidth_gbs": "936.0", "l2_bytes": "6291456"}
    values.pop(dropped, None)
    (tmp_path / "b.toml").write_text(HEADER + _BOARD.replace("Mine-1", "Mine-2")
                                     + "".join(f"{k} = {v}\n" for k, v in values.items()))
    (tmp_path / "q.csv").write_text("board,app_id,input_size,block_x,block_y,grid_x,grid_y\n"
                                    "Mine-2,lud_perimeter,4096,32,1,1,1\n")
    (tmp_path / "k.csv").write_text("board,app_id,input_size\nMine-2,my_kernel,1024\n")
    (tmp_path / "r.csv").write_text("board,app_id,input_size,block_x,grid_x,time_ms\nGTX-980,my_kernel,1024,16,1,0.02\n")
    home = str(data_home_path())
    for queries, extra in (("q.csv", []), ("k.csv", ["--reference", str(tmp_path / "r.csv")])):
        status, _, err = _run(capsys, "--boards", str(tmp_path / "b.toml"), "predict", "--model", str(MODEL),
                              "--queries", str(tmp_path / queries), "--output", str(tmp_path / "p.csv"),
                              "--data-home", home, *extra)
        assert status == 2 and not (tmp_path / "p.csv").exists()
        assert re.search(r"no prediction on board Mine-2: .*" + named, err), err
        assert "nearer the training range" not in err and "no measurement at input_size" not in err


def test_bsp_names_the_field_a_board_lacks(tmp_path):
    """'lacks SM count / cores per SM' for a board whose SM count was there and only its cores per SM were
    missing (a compute capability perfml has no table for)."""
    from perfml.closed_form._bsp_constants import registry_constants
    from perfml.errors import MissingBoardParameterError

    use_board_files([twin_file(tmp_path / "mine.toml", "H100-SXM", "My-H100", compute_capability="12.0",
                               fp32_cores_per_sm=None)])
    with pytest.raises(MissingBoardParameterError, match=r"lacks fp32_cores_per_sm in the registry"):
        registry_constants("My-H100", "vectorAdd")


def test_a_board_of_a_compute_capability_without_a_table_names_it_where_the_bsp_model_needs_a_figure(tmp_path):
    """The message named the missing field and repeated its advice, not why it was missing: no
    [cc] table of that compute capability to inherit per-SM figures from."""
    from perfml.closed_form._bsp_constants import registry_constants
    from perfml.errors import MissingBoardParameterError

    (tmp_path / "new.toml").write_text(HEADER + _BOARD + 'compute_capability = "19.0"\nsms = 4\nboost_clock_mhz = 1500\n')
    use_board_files([tmp_path / "new.toml"])
    with pytest.raises(MissingBoardParameterError) as info:
        registry_constants("Mine-1", "vectorAdd")
    message = str(info.value)
    assert 'perfml has no [cc."19.0"] table' in message and "fp32_cores_per_sm" in message
    assert message.count("docs/boards.md") == 1
