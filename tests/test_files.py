"""Tests of :mod:`perfml._files`, the one reader and writer of versioned TOML/JSON files.

Issue 9: "one helper reads TOML/JSON with a format name and version and raises the
typed error; every file format perfml reads or writes has a version". Every error
path is exercised on a temporary file; the shipped files are read through it.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfml._files import check_versioned, read_versioned, write_json
from perfml.errors import ExperimentSpecError, FileFormatError, PerfmlError

REPO = Path(__file__).resolve().parents[1]
GOOD_TOML = 'format = "perfml-thing"\nversion = 2\nvalue = 3\n'


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_reads_a_good_toml_and_json_file(tmp_path):
    toml = _write(tmp_path, "a.toml", GOOD_TOML)
    assert read_versioned(toml, "perfml-thing", (1, 2))["value"] == 3
    js = _write(tmp_path, "a.json", json.dumps({"format": "perfml-thing", "version": 1, "v": [1]}))
    assert read_versioned(js, "perfml-thing", (1,))["v"] == [1]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.toml", "value = \n", "not valid TOML"),
        ("bad.json", "{", "not valid JSON"),
        ("nan.json", '{"format": "perfml-thing", "version": 2, "x": NaN}', "NaN is not JSON"),
        ("list.json", "[1, 2]", "found a JSON list"),
        ("latin1.toml", b'format = "perfml-thing"\nversion = 2\nname = "\xe9"\n', "not UTF-8"),
        ("noformat.toml", "version = 2\n", "missing `format = 'perfml-thing'`"),
        ("otherformat.toml", 'format = "perfml-other"\nversion = 2\n', "unsupported format 'perfml-other'"),
        ("noversion.toml", 'format = "perfml-thing"\n', "missing `version = N` or `schema_version = N`"),
        # Python's own refusal ("... use sys.set_int_max_str_digits()") spoke of its settings
        ("longint.json", '{"format": "perfml-thing", "version": 2, "x": ' + "9" * 5000 + "}",
         r"the integer 9+\.\.\. \(5000 digits\) is too large"),
        ("newer.toml", 'format = "perfml-thing"\nversion = 3\n', r"unknown perfml-thing version 3 .*reads version\(s\) \[1, 2\]"),
        ("boolversion.toml", 'format = "perfml-thing"\nversion = true\n', "version True"),
        ("strversion.toml", 'format = "perfml-thing"\nversion = "2"\n', "version '2'"),
        ("legacy9.toml", 'format = "perfml-thing"\nschema_version = 9\n', "schema_version 9"),
        ("slash9.toml", 'format = "perfml-thing/9"\n', "version 9"),
    ],
)
def test_every_malformed_file_is_a_typed_one_line_error(tmp_path, name, content, message):
    path = _write(tmp_path, name, content)
    with pytest.raises(FileFormatError, match=message) as info:
        read_versioned(path, "perfml-thing", (1, 2))
    text = str(info.value)
    assert str(path) in text and "\n" not in text


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileFormatError, match="does not exist"):
        read_versioned(tmp_path / "nope.toml", "perfml-thing", (1,))
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(FileFormatError, match="is a directory"):
        read_versioned(folder, "perfml-thing", (1,))


def test_unreadable_file(tmp_path, monkeypatch):
    path = _write(tmp_path, "a.toml", GOOD_TOML)

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(FileFormatError, match="permission denied"):
        read_versioned(path, "perfml-thing", (2,))


def test_other_os_errors_are_typed(tmp_path, monkeypatch):
    path = _write(tmp_path, "a.toml", GOOD_TOML)

    def broken(self, *args, **kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(Path, "read_text", broken)
    with pytest.raises(FileFormatError, match="Input/output error"):
        read_versioned(path, "perfml-thing", (2,))


def test_unknown_suffix_needs_an_explicit_syntax(tmp_path):
    path = _write(tmp_path, "thing.cfg", GOOD_TOML)
    with pytest.raises(FileFormatError, match="TOML or JSON"):
        read_versioned(path, "perfml-thing", (2,))
    assert read_versioned(path, "perfml-thing", (2,), syntax="toml")["value"] == 3


def test_legacy_keys_and_defaults_are_accepted_where_asked(tmp_path):
    legacy = _write(tmp_path, "a.toml", "schema_version = 1\nx = 1\n")
    assert read_versioned(legacy, "perfml-thing", (1,), require_format=False)["x"] == 1
    slash = _write(tmp_path, "b.toml", 'format = "perfml-thing/1"\n')
    assert read_versioned(slash, "perfml-thing", (1,)) == {"format": "perfml-thing/1"}
    bare = _write(tmp_path, "c.toml", "x = 1\n")
    assert read_versioned(bare, "perfml-thing", (1,), require_format=False, default_version=1)["x"] == 1


def test_the_callers_error_class_is_raised(tmp_path):
    path = _write(tmp_path, "a.toml", "x = \n")
    with pytest.raises(ExperimentSpecError, match="not valid TOML"):
        read_versioned(path, "perfml-experiment", (1,), error=ExperimentSpecError)


def test_check_versioned_on_a_parsed_document():
    assert check_versioned({"format": "perfml-thing", "version": 2}, "doc", "perfml-thing", (2,)) == 2
    with pytest.raises(FileFormatError, match="^doc: unknown thing version 1"):
        check_versioned({"format": "perfml-thing", "version": 1}, "doc", "perfml-thing", (2,),
                        label="thing")


@settings(max_examples=60, deadline=None)
@given(content=st.binary(max_size=200), suffix=st.sampled_from([".toml", ".json"]))
def test_arbitrary_bytes_never_escape_as_another_exception(tmp_path_factory, content, suffix):
    path = tmp_path_factory.mktemp("fuzz") / f"f{suffix}"
    path.write_bytes(content)
    try:
        read_versioned(path, "perfml-thing", (1,))
    except FileFormatError:
        pass


# --------------------------------------------------------------------------- writer


def test_write_json_round_trips_and_puts_format_first(tmp_path):
    path = write_json(tmp_path / "out" / "x.json", {"a": [1, 2.5]}, "perfml-thing", 1)
    text = path.read_text()
    assert text.index('"format"') < text.index('"version"') < text.index('"a"')
    assert read_versioned(path, "perfml-thing", (1,))["a"] == [1, 2.5]
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]  # no temporary left behind


def test_write_json_refuses_to_replace_silently_or_write_nan(tmp_path):
    path = write_json(tmp_path / "x.json", {}, "perfml-thing", 1)
    with pytest.raises(FileFormatError, match="exists"):
        write_json(path, {"b": 1}, "perfml-thing", 1)
    write_json(path, {"b": 1}, "perfml-thing", 1, overwrite=True)
    assert json.loads(path.read_text())["b"] == 1
    with pytest.raises(FileFormatError, match="non-finite"):
        write_json(tmp_path / "y.json", {"v": {"w": [float("nan")]}}, "perfml-thing", 1)
    assert not (tmp_path / "y.json").exists()


def test_write_json_writes_only_regular_files(tmp_path):
    folder = tmp_path / "d.json"
    folder.mkdir()
    with pytest.raises(FileFormatError, match="not a regular file"):
        write_json(folder, {}, "perfml-thing", 1, overwrite=True)
    target = write_json(tmp_path / "t.json", {"keep": 1}, "perfml-thing", 1)
    link = tmp_path / "l.json"
    link.symlink_to(target)
    with pytest.raises(FileFormatError, match="not a regular file"):
        write_json(link, {}, "perfml-thing", 1, overwrite=True)
    assert json.loads(target.read_text())["keep"] == 1


def test_write_json_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_json(tmp_path / "m.json", {}, "perfml-thing", 1)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


# --------------------------------------------------------------------------- shipped files


def _shipped():
    data = resources.files("perfml") / "data"
    yield from sorted((data / n for n in ("seed001_gtx980.toml", "seed003_table2.toml",
                                          "seed004_tables.toml", "hongkim_worked_table.toml",
                                          "apps.toml", "boards.toml") if (data / n).is_file()),
                      key=str)
    yield from sorted((REPO / "experiments").glob("*.toml"))
    yield from sorted(Path(str(resources.files("perfml") / "descriptions" / "cumapz")).glob("*.toml"))


@pytest.mark.parametrize("path", list(_shipped()), ids=lambda p: Path(str(p)).name)
def test_every_shipped_file_names_its_format_and_version(path):
    import tomllib

    raw = tomllib.loads(Path(str(path)).read_text(encoding="utf-8"))
    assert isinstance(raw.get("format"), str) and raw["format"].startswith("perfml-"), path
    assert isinstance(raw.get("version", raw.get("schema_version")), int), path
    fmt = raw["format"]
    read_versioned(path, fmt, (raw.get("version", raw.get("schema_version")),))


def test_readers_raise_typed_errors_for_a_directory(tmp_path):
    """The switched readers go through read_versioned: a directory is a typed error."""
    from perfml.boards import load_registry
    from perfml.cumapz import load_description
    from perfml.experiments.spec import load_experiment

    folder = tmp_path / "x.toml"
    folder.mkdir()
    for reader in (load_experiment, load_description, load_registry):
        with pytest.raises(PerfmlError):
            reader(folder)


def _nested(syntax: str, depth: int) -> str:
    """A document ``depth`` tables and arrays deep (the top-level table counts as one)."""
    arrays = depth - 1
    if syntax == "toml":
        return 'format = "perfml-thing"\nversion = 2\nx = ' + "[" * arrays + "]" * arrays + "\n"
    return '{"format": "perfml-thing", "version": 2, "x": ' + "[" * arrays + "]" * arrays + "}"


@pytest.mark.parametrize("syntax", ["toml", "json"])
@pytest.mark.parametrize("recursion_limit", [None, 50_000])
def test_deep_nesting_is_refused_the_same_whatever_the_interpreter_allows(tmp_path, syntax, recursion_limit):
    """The limit is perfml's MAX_NESTING, not the interpreter's recursion limit: other libraries
    (hypothesis, dask) raise that one, and a 1,000-level file then parsed on one machine and not
    on another (the fifteenth session's CI failure)."""
    import sys

    from perfml._files import MAX_NESTING

    old = sys.getrecursionlimit()
    if recursion_limit is not None:
        sys.setrecursionlimit(recursion_limit)
    try:
        ok = _write(tmp_path, f"ok.{syntax}", _nested(syntax, MAX_NESTING))
        assert read_versioned(ok, "perfml-thing", (2,))["version"] == 2
        for depth in (MAX_NESTING + 1, 1_000, 5_000):
            deep = _write(tmp_path, f"deep{depth}.{syntax}", _nested(syntax, depth))
            with pytest.raises(FileFormatError, match=f"nested too deeply: more than {MAX_NESTING} levels") as info:
                read_versioned(deep, "perfml-thing", (2,))
            assert str(deep) in str(info.value) and "\n" not in str(info.value)
    finally:
        sys.setrecursionlimit(old)


def _deep_model(tmp_path: Path, text: str) -> Path:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "perfml-model.json").write_text(text)
    return tmp_path / "model"


def _deep_result_set(tmp_path: Path, text: str) -> Path:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "manifest.json").write_text(text)
    return tmp_path / "results"


def _readers():
    from perfml.characterize import load_characterization
    from perfml.errors import KernelSidecarError, ModelFormatError, ResultSchemaError, SweepSpecError
    from perfml.kernels.sidecar import load_family
    from perfml.learned.persistence import load_model
    from perfml.measure.spec import load_spec
    from perfml.measure.store import ResultSet

    def file(name):
        def make(tmp_path, text):
            return _write(tmp_path, name, text)
        return make

    return [
        ("kernel sidecar", "toml", file("k.toml"), load_family, KernelSidecarError),
        ("sweep spec", "toml", file("s.toml"), load_spec, SweepSpecError),
        ("characterization", "json", file("c.json"), load_characterization, ResultSchemaError),
        ("result set manifest", "json", _deep_result_set, ResultSet.open, ResultSchemaError),
        ("model manifest", "json", _deep_model, load_model, ModelFormatError),
    ]


@pytest.mark.parametrize("reader", _readers(), ids=lambda r: r[0])
def test_every_reader_of_a_user_given_file_refuses_deep_nesting_with_its_own_error(tmp_path, reader):
    """Each file a user hands perfml (sidecar, sweep spec, characterization, result set, model)
    goes through the one parser, so 1,000 nested arrays are that reader's typed error, also
    where the interpreter would parse them (recursion limit raised, as hypothesis does)."""
    import sys

    _, syntax, make, read, error = reader
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        path = make(tmp_path, _nested(syntax, 1_000))
        with pytest.raises(error, match="nested too deeply"):
            read(path)
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize("recursion_limit", [None, 50_000])
def test_a_deep_top_level_array_is_called_too_deep_not_a_list(tmp_path, recursion_limit):
    """Where the interpreter cannot parse it, the file is "nested too deeply"; where it can
    (a raised recursion limit), the message must be the same, not "found a JSON list"."""
    import sys

    old = sys.getrecursionlimit()
    if recursion_limit is not None:
        sys.setrecursionlimit(recursion_limit)
    try:
        deep = _write(tmp_path, "deep.json", "[" * 5_000 + "]" * 5_000)
        with pytest.raises(FileFormatError, match="nested too deeply"):
            read_versioned(deep, "perfml-thing", (2,))
    finally:
        sys.setrecursionlimit(old)


def test_json_keys_given_twice_and_numbers_no_float_holds_are_refused(tmp_path):
    # json keeps the last of two keys silently (and readers differ); a 400-digit integer overflowed
    # later, far from the file, in a message that named none
    twice = _write(tmp_path, "twice.json", '{"format": "perfml-x", "version": 1, "a": 1, "a": 2}')
    with pytest.raises(FileFormatError, match=r"twice.json: key 'a' is given twice"):
        read_versioned(twice, "perfml-x", (1,))
    huge = _write(tmp_path, "huge.json", '{"format": "perfml-x", "version": 1, "n": ' + "9" * 400 + "}")
    with pytest.raises(FileFormatError, match=r"huge.json: the integer 9+\.\.\. \(400 digits\) is too large"):
        read_versioned(huge, "perfml-x", (1,))


def test_write_json_keeps_a_file_another_program_wrote_while_it_was_writing(tmp_path, monkeypatch):
    """Between write_json's check that the name is free and the file's arrival there, another
    program writes the same name: that file is kept, and the refusal says so (it was replaced)."""
    import tempfile

    target = tmp_path / "x.json"
    mkstemp = tempfile.mkstemp

    def meanwhile(*args, **kwargs):
        made = mkstemp(*args, **kwargs)
        target.write_text("the other program's file")
        return made

    monkeypatch.setattr(tempfile, "mkstemp", meanwhile)
    with pytest.raises(FileFormatError, match="exists|another program"):
        write_json(target, {"a": 1}, "perfml-thing", 1)
    assert target.read_text() == "the other program's file"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temporary left behind
