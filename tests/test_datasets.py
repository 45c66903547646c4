"""Loaders of the data home: resolution, schemas, and malformed tables.

The real tables are read from ../shared/datasets (never copied into the repository);
malformed variants are written to a temporary directory by the tests.
"""

from __future__ import annotations

import gzip
import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml.datasets import SCHEMAS, load_runtimes, load_table, resolve_data_home
from perfml.errors import DataHomeError, DatasetSchemaError


@pytest.fixture(scope="module")
def runtimes_sample():
    """300 real rows of runtimes.csv (shared/datasets), used as a valid base table."""
    return load_runtimes(data_home=HOME).sample(300, random_state=0).reset_index(drop=True)


def write_home(tmp_path, frame: pd.DataFrame):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    with gzip.open(home / "runtimes.csv.gz", "wt") as fh:
        frame.to_csv(fh, index=False)
    return home


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_every_shared_table_loads_and_matches_readme_row_counts(name):
    # Row counts: shared/datasets/README.md, table "Files".
    expected_rows = {
        "runtimes": 65120, "runtime_samples": 314463, "profiles_nca": 11197, "profiles_rodinia": 52253,
        "boards": 11, "board_specs_long": 429, "bsp_inputs": 245, "bsp_published_predictions": 1995,
        "published_accuracy_summary": 336, "bspgpu_script_inputs": 4460,
    }
    assert len(load_table(name, data_home=HOME)) == expected_rows[name]


def test_runtimes_are_positive_milliseconds():
    rt = load_runtimes(data_home=HOME)
    assert (rt[["time_ms_mean", "time_ms_median", "time_ms_min"]] > 0).all().all()
    assert (rt["time_ms_min"] <= rt["time_ms_max"]).all()


def test_source_filter_and_unknown_source():
    assert set(load_runtimes(source="BSPGPU", data_home=HOME)["source"]) == {"BSPGPU"}
    with pytest.raises(DatasetSchemaError, match="choose one of"):
        load_runtimes(source="nope", data_home=HOME)


def test_data_home_precedence(tmp_path, monkeypatch, runtimes_sample):
    from perfml.datasets import find_data_home

    home = write_home(tmp_path, runtimes_sample)
    monkeypatch.setenv("PERFML_DATA_HOME", str(home))
    assert find_data_home() == home.resolve()  # the entry point's resolver reads the variable
    assert len(load_runtimes(data_home=find_data_home())) == 300
    monkeypatch.delenv("PERFML_DATA_HOME")
    # without the variable: the shared/datasets beside the repository, or (a checkout without
    # one) beside the working directory, here a synthetic one
    (tmp_path / "lab" / "work").mkdir(parents=True)
    (tmp_path / "lab" / "shared").mkdir()
    beside = shutil.copytree(home, tmp_path / "lab" / "shared" / "datasets")
    monkeypatch.chdir(tmp_path / "lab" / "work")
    found = find_data_home()
    assert found.name == "datasets" and (found / "runtimes.csv.gz").is_file()
    assert found in (beside.resolve(), (Path(__file__).resolve().parents[1].parent / "shared" / "datasets").resolve())
    assert resolve_data_home(home) == home.resolve()


def test_missing_data_home_is_a_typed_error(tmp_path, monkeypatch):
    from perfml.datasets import find_data_home

    with pytest.raises(DataHomeError, match="does not exist"):
        resolve_data_home(tmp_path / "nowhere")
    monkeypatch.setenv("PERFML_DATA_HOME", str(tmp_path))
    with pytest.raises(DataHomeError, match="no runtimes.csv.gz"):
        find_data_home()


@pytest.mark.parametrize("call", [
    lambda: resolve_data_home(None), lambda: load_runtimes(), lambda: load_table("bsp_inputs"),
])
def test_library_code_never_searches_for_the_data_home(call, monkeypatch, runtimes_sample, tmp_path):
    # Even with a valid $PERFML_DATA_HOME, data_home=None below the CLI is a typed error naming what to pass.
    monkeypatch.setenv("PERFML_DATA_HOME", str(write_home(tmp_path, runtimes_sample)))
    with pytest.raises(DataHomeError, match=r"pass data_home=perfml\.datasets\.DataHome\(PATH\) or a path"):
        call()


def test_missing_table_in_home(tmp_path, runtimes_sample):
    home = write_home(tmp_path, runtimes_sample)
    with pytest.raises(DataHomeError, match="bsp_inputs.csv"):
        load_table("bsp_inputs", home)


def test_missing_column_names_file_and_column(tmp_path, runtimes_sample):
    home = write_home(tmp_path, runtimes_sample.drop(columns=["time_ms_mean"]))
    with pytest.raises(DatasetSchemaError, match=r"runtimes.csv.gz: missing column\(s\) 'time_ms_mean'"):
        load_runtimes(home)


def test_extra_column_is_rejected(tmp_path, runtimes_sample):
    home = write_home(tmp_path, runtimes_sample.assign(time_s=1.0))
    with pytest.raises(DatasetSchemaError, match="unexpected column.*'time_s'"):
        load_runtimes(home)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_non_positive_or_nan_time(tmp_path, runtimes_sample, bad):
    frame = runtimes_sample.copy()
    frame.loc[5, "time_ms_median"] = bad
    home = write_home(tmp_path, frame)
    with pytest.raises(DatasetSchemaError, match=r"'time_ms_median' must be a positive number in ms.*row 7"):
        load_runtimes(home)


def test_text_in_numeric_column(tmp_path, runtimes_sample):
    frame = runtimes_sample.astype({"time_ms_mean": object})
    frame.loc[3, "time_ms_mean"] = "fast"
    home = write_home(tmp_path, frame)
    with pytest.raises(DatasetSchemaError, match="'time_ms_mean' must be numeric, found 'fast'"):
        load_runtimes(home)


def test_unreadable_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "runtimes.csv.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(DatasetSchemaError, match="cannot be read as CSV"):
        load_runtimes(home)


_NUMERIC = ["time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max", "input_size", "n_reps"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    mutation=st.sampled_from(["drop", "extra", "value", "rename"]),
)
def test_malformed_tables_always_raise_dataset_schema_error(tmp_path_factory, runtimes_sample, data, mutation):
    """Property: any of these corruptions yields DatasetSchemaError (never another exception)."""
    frame = runtimes_sample.head(40).copy()
    if mutation == "drop":
        frame = frame.drop(columns=[data.draw(st.sampled_from(list(SCHEMAS["runtimes"].columns)))])
    elif mutation == "extra":
        name = data.draw(st.text(alphabet=string.ascii_letters, min_size=1, max_size=8))
        if name in frame.columns:
            name += "_x"
        frame[name] = 1
    elif mutation == "rename":
        col = data.draw(st.sampled_from(_NUMERIC))
        frame = frame.rename(columns={col: col + "_renamed"})
    else:
        col = data.draw(st.sampled_from(_NUMERIC))
        row = data.draw(st.integers(0, len(frame) - 1))
        value = data.draw(st.sampled_from([0, -5, np.nan, "abc", -0.001, float("inf")]))
        frame = frame.astype({col: object})
        frame.loc[row, col] = value
    home = write_home(tmp_path_factory.mktemp("h"), frame)
    with pytest.raises(DatasetSchemaError):
        load_runtimes(home)


@pytest.mark.parametrize("col", ["input_size", "n_reps"])
def test_infinite_count_is_a_typed_error(tmp_path, runtimes_sample, col):
    # Found by the hypothesis test above: an integer column holding inf crashed the cast.
    frame = runtimes_sample.astype({col: object})
    frame.loc[4, col] = float("inf")
    home = write_home(tmp_path, frame)
    with pytest.raises(DatasetSchemaError, match=rf"'{col}' must be a positive number"):
        load_runtimes(home)


# --------------------------------------------------------------------------- data home manifest
# Issue 14, section 3: a data home is checked against its manifest (row counts, sha256),
# its time units and its expressions; section 5: a corrupt gzip is a typed error.

import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

from perfml.datasets import _manifest, load_bsp_inputs  # noqa: E402

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

SHARED = HOME.path


def copy_home(tmp_path, *files, manifest=True, readme=True):
    """A copy of (part of) the shared data home, with its manifest and README if asked."""
    home = tmp_path / "copy"
    home.mkdir()
    for name in ("runtimes.csv.gz", *files):
        shutil.copy(SHARED / name, home / name)
    if manifest:
        shutil.copy(SHARED / "manifest.csv", home / "manifest.csv")
    if readme:
        shutil.copy(SHARED / "README.md", home / "README.md")
    return home


def _rewrite_runtimes(home, transform):
    path = home / "runtimes.csv.gz"
    frame = pd.read_csv(path, low_memory=False)
    with gzip.open(path, "wt") as fh:
        transform(frame).to_csv(fh, index=False)


def test_the_copy_of_the_shared_home_loads():
    # the manifest checks pass on the genuine files (sha256 and rows of shared/datasets/manifest.csv)
    assert len(load_runtimes(data_home=HOME)) == 65120
    assert len(load_bsp_inputs(data_home=HOME)) == 245


def test_gzip_cut_short_is_a_typed_error(tmp_path):
    home = copy_home(tmp_path)
    path = home / "runtimes.csv.gz"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DatasetSchemaError, match="truncated or corrupt"):
        load_runtimes(home)


def test_gzip_with_corrupt_deflate_data_is_a_typed_error(tmp_path):
    home = copy_home(tmp_path)
    path = home / "runtimes.csv.gz"
    data = bytearray(path.read_bytes())
    data[5000:5100] = bytes(100)
    path.write_bytes(bytes(data))
    with pytest.raises(DatasetSchemaError, match=r"runtimes.csv.gz"):
        load_runtimes(home)


@pytest.mark.parametrize("manifest", [True, False], ids=["home-manifest", "shipped-manifest"])
def test_recompressed_gzip_cut_mid_row_is_refused(tmp_path, manifest):
    home = copy_home(tmp_path, manifest=manifest)
    path = home / "runtimes.csv.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    cut = text.index("\n", len(text) // 2) - 7  # seven characters before a row's end
    path.write_bytes(gzip.compress(text[:cut].encode()))
    with pytest.raises(DatasetSchemaError, match="cut short"):
        load_runtimes(home)


@pytest.mark.parametrize("manifest", [True, False], ids=["home-manifest", "shipped-manifest"])
def test_truncated_bsp_inputs_is_refused(tmp_path, manifest):
    home = copy_home(tmp_path, "bsp_inputs.csv", manifest=manifest)
    path = home / "bsp_inputs.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-20]))
    with pytest.raises(DatasetSchemaError, match=r"has 225 data rows, the manifest records 245"):
        load_bsp_inputs(home)


def test_times_multiplied_by_1000_are_refused(tmp_path):
    home = copy_home(tmp_path)
    times = ["time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max", "time_ms_std"]
    _rewrite_runtimes(home, lambda f: f.assign(**{c: f[c] * 1000 for c in times}))
    with pytest.raises(DatasetSchemaError, match=r"1e\+03 times .* not in milliseconds"):
        load_runtimes(home)


def test_times_in_seconds_are_refused_without_a_manifest(tmp_path):
    home = copy_home(tmp_path, manifest=False, readme=False)  # a user's own data home
    times = ["time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max", "time_ms_std"]
    _rewrite_runtimes(home, lambda f: f.assign(**{c: f[c] / 1000 for c in times}))
    with pytest.raises(DatasetSchemaError, match="below the 0.0005 ms"):
        load_runtimes(home)


def test_a_user_home_without_manifest_is_not_held_to_the_shared_checksums(tmp_path):
    home = copy_home(tmp_path, manifest=False, readme=False)
    _rewrite_runtimes(home, lambda f: f.head(1000))
    assert len(load_runtimes(home)) == 1000


def test_power_tower_in_bsp_inputs_is_refused(tmp_path):
    home = copy_home(tmp_path, "bsp_inputs.csv")
    path = home / "bsp_inputs.csv"
    path.write_text(path.read_text().replace(",N*4,", ",9^9^9,", 1))
    with pytest.raises(DatasetSchemaError, match=r"9\^9\^9.*overflows"):
        load_bsp_inputs(home)


def test_an_edited_value_fails_the_checksum(tmp_path):
    home = copy_home(tmp_path, "bsp_inputs.csv")
    path = home / "bsp_inputs.csv"
    text = path.read_text()
    path.write_text(text.replace(",N*4,", ",N*5,", 1))
    with pytest.raises(DatasetSchemaError, match="sha256 .* differs from the manifest"):
        load_bsp_inputs(home)


def test_a_malformed_home_manifest_is_a_typed_error(tmp_path):
    home = copy_home(tmp_path)
    (home / "manifest.csv").write_text("file,rows,bytes,sha256\nruntimes.csv.gz,many,1,abc\n")
    with pytest.raises(DataHomeError, match="manifest"):
        load_runtimes(home)


def _manifest_without_runtimes(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("runtimes.csv.gz,"))


@pytest.mark.parametrize("damage", [
    _manifest_without_runtimes,                                          # its line deleted
    lambda t: t.replace("runtimes.csv.gz,", "RUNTIMES.CSV.GZ,"),         # misspelt
    lambda t: t.replace("runtimes.csv.gz,", "runtimes.csv.gz ,"),        # a trailing space
    lambda t: t.replace("runtimes.csv.gz,", "./runtimes.csv.gz,"),
], ids=["deleted", "case", "space", "dot-slash"])
def test_a_damaged_manifest_line_does_not_switch_the_checks_off(tmp_path, damage):
    # the data home's manifest without a usable line for runtimes.csv.gz left the table unchecked:
    # its times x1000 were read, fit-lambda gave lambda 0.012, a trained model 1000x times
    home = copy_home(tmp_path)
    manifest = home / "manifest.csv"
    manifest.write_text(damage(manifest.read_text()))
    _rewrite_runtimes(home, lambda f: f.assign(**{c: f[c] * 1000 for c in f.columns if c.startswith("time_ms")}))
    with pytest.raises(DatasetSchemaError, match=r"runtimes.csv.gz"):
        load_runtimes(home)


@pytest.mark.parametrize("text, message", [
    ("", "header is empty"),
    ("file,rows,bytes,sha256\n", "lists no file"),
    ("name,count\nruntimes.csv.gz,3\n", "header is name,count"),
])
def test_an_empty_manifest_is_refused(tmp_path, text, message):
    home = copy_home(tmp_path)
    (home / "manifest.csv").write_text(text)
    with pytest.raises(DataHomeError, match=message):
        load_runtimes(home)


def test_a_manifest_listing_a_file_twice_with_other_values_is_refused_and_a_bom_is_read(tmp_path):
    home = copy_home(tmp_path)
    manifest = home / "manifest.csv"
    text = manifest.read_text()
    line = next(line for line in text.splitlines() if line.startswith("runtimes.csv.gz,"))
    manifest.write_text("\ufeff" + text)
    assert len(load_runtimes(home)) == 65120
    manifest.write_text(text + line.replace(",", ",1", 1) + "\n")
    with pytest.raises(DataHomeError, match="lists runtimes.csv.gz again"):
        load_runtimes(home)


@pytest.mark.parametrize("name, message", [
    ("gtx-980", r"writes one board two ways, 'GTX-980' \(row \d+\) and 'gtx-980' \(row \d+\)"),
    ("GTX-980 ", r"has 'GTX-980 ' in row \d+ .*with surrounding spaces"),
])
def test_a_board_written_two_ways_is_refused(tmp_path, name, message):
    # part of the GTX-980's rows renamed: fit-lambda crashed (KeyError), predict-lambda called the
    # GTX-980 unseen while reading its own rows
    home = copy_home(tmp_path, manifest=False, readme=False)  # a user's own data home: no checksum
    _rewrite_runtimes(home, lambda f: f.assign(board=f["board"].mask((f["board"] == "GTX-980") & (f.index % 2 == 0), name)))
    with pytest.raises(DatasetSchemaError, match=message):
        load_runtimes(home)


def test_tables_are_cached_per_path_mtime_and_size(tmp_path, monkeypatch):
    home = copy_home(tmp_path)
    calls = []
    real = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = load_runtimes(home)
    first.loc[0, "board"] = "changed by the caller"
    again = load_runtimes(home)
    assert len(calls) == 1 and again.loc[0, "board"] != "changed by the caller"
    path = home / "runtimes.csv.gz"
    path.write_bytes(path.read_bytes()[:1000])  # new size and mtime: read again, and refused
    with pytest.raises(DatasetSchemaError):
        load_runtimes(home)


def test_shipped_manifest_is_the_readme_table():
    """perfml/data/datasets_manifest.toml was parsed from shared/datasets/README.md."""
    parsed = _manifest.manifest_from_readme((SHARED / "README.md").read_text())
    shipped = _manifest.shipped_manifest()
    assert {e["file"]: (e["rows"], e["sha256"]) for e in parsed} == {
        f: (e.rows, e.sha256) for f, e in shipped.items()
    }
    home_manifest = pd.read_csv(SHARED / "manifest.csv")
    for row in home_manifest.itertuples():
        if row.file in shipped:
            assert (shipped[row.file].rows, shipped[row.file].sha256) == (row.rows, row.sha256)


def test_a_time_beyond_any_kernel_call_is_refused_without_a_manifest(tmp_path):
    # 1e308 ms gave lambda 4e-304 in fit-lambda and a null MAPE in evaluate, exit 0
    home = copy_home(tmp_path, manifest=False, readme=False)  # a user's own data home
    times = ["time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max"]
    _rewrite_runtimes(home, lambda f: f.assign(**{c: f[c].where(f.index != 7, 1e308) for c in times}))
    with pytest.raises(DatasetSchemaError, match=r"holds 1e\+308 ms in row 9, beyond any kernel call"):
        load_runtimes(home)


@pytest.mark.parametrize("bad", [0.0, -32.0])
def test_a_launch_dimension_of_zero_is_refused(tmp_path, runtimes_sample, bad):
    frame = runtimes_sample.copy()
    frame.loc[4, "block_x"] = bad  # a block of no thread never ran; hongkim used it
    home = write_home(tmp_path, frame)
    with pytest.raises(DatasetSchemaError, match=r"'block_x' must be a positive number or empty.*row 6"):
        load_runtimes(home)


def test_the_raw_repetition_tables_keep_their_documented_corrupt_record(data_home):
    # runtime_samples: a 1.84e13 ms GTX-295 record the README lists; the outlier rule drops it downstream
    from perfml.datasets._tables import read_table

    samples = read_table("runtime_samples", data_home.path)
    assert samples["time_ms"].max() > 1e13


def _rewrite(home, name, transform):
    path = home / name
    frame = pd.read_csv(path, low_memory=False)
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            transform(frame).to_csv(fh, index=False)
    else:
        transform(frame).to_csv(path, index=False)


@pytest.mark.parametrize("value, message", [
    ("High (8)", r"'m.L2 Cache Utilization' must be numeric, found 'High \(8\)'"),
    ("-3", r"'m.L2 Cache Utilization' is a profiler counter or metric and must be a number >= 0"),
    ("inf", r"must be a number >= 0 or empty, found inf"),
])
def test_a_profile_counter_that_is_not_a_count_is_refused(tmp_path, value, message):
    # without a manifest, text in a metric column reached the criteria: internal ValueError in diagnose
    home = copy_home(tmp_path, "profiles_nca.csv.gz", manifest=False, readme=False)
    _rewrite(home, "profiles_nca.csv.gz",
             lambda f: f.astype({"m.L2 Cache Utilization": object}).assign(**{"m.L2 Cache Utilization": value}))
    with pytest.raises(DatasetSchemaError, match=message):
        load_table("profiles_nca", home)


def test_a_profile_row_of_zero_elapsed_cycles_is_refused_by_diagnose(tmp_path, capsys):
    from perfml.cli import main

    home = copy_home(tmp_path, "profiles_nca.csv.gz", manifest=False, readme=False)
    _rewrite(home, "profiles_nca.csv.gz", lambda f: f.assign(**{"e.elapsed_cycles_sm": 0}))
    code = main(["diagnose", "--board", "GTX-680", "--app", "matMul_gpu", "--allow-missing", "--data-home", str(home)])
    err = capsys.readouterr().err
    assert code == 2 and "elapsed clock cycles" in err and "is 0" in err and "internal error" not in err


@pytest.mark.parametrize("column, value, message", [
    ("l1_effect_frac_per_size", "abc;0.5", r"column 'l1_effect_frac_per_size': found 'abc;0.5'"),
    ("l1_effect_frac_per_size", "-5;-5", r"expected fractions in \[0, 1\]"),
    ("predicted_sizes", "2^x..2^14", r"column 'predicted_sizes': found '2\^x..2\^14', expected a range of powers of two"),
    ("l2_effect_frac", "7", r"column 'l2_effect_frac': found '7.0'"),
])
def test_bsp_inputs_cells_the_constants_parse_are_checked(tmp_path, column, value, message):
    # ValueError from float()/int() (an internal error of fit-lambda), or a fraction of -5 used silently
    from perfml.closed_form.bsp import BSPModel

    home = copy_home(tmp_path, "bsp_inputs.csv", manifest=False, readme=False)
    per_size = "l1_effect_frac_per_size"
    _rewrite(home, "bsp_inputs.csv", lambda f: f.astype({column: object}).assign(
        **{column: f[column].where(f[per_size].isna(), value) if column != "l2_effect_frac" else value}))
    rows = load_runtimes(home, source="BSPGPU")
    with pytest.raises(DatasetSchemaError, match=message):
        BSPModel(data_home=home).fit(rows, rows["time_ms_median"].to_numpy())


def test_a_fractional_count_is_quoted_as_written_not_as_numpy_repr(tmp_path):
    home = copy_home(tmp_path, manifest=False, readme=False)
    _rewrite_runtimes(home, lambda f: f.assign(input_size=f["input_size"].astype(float).where(f.index != 3, 1.5)))
    with pytest.raises(DatasetSchemaError, match=r"column 'input_size' must hold whole numbers, found 1\.5 in row 5;") as info:
        load_runtimes(home)
    assert "np." not in str(info.value)


def test_an_empty_data_home_path_is_refused_not_read_as_the_current_folder(tmp_path, monkeypatch):
    from perfml.datasets import find_data_home

    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataHomeError, match="--data-home is empty"):
        find_data_home("")


def test_a_board_the_registry_does_not_know_is_told_with_its_file_and_row(tmp_path, capsys):
    """A data home table naming a board the registry lacks: the command names the file, the line
    and the closest boards (it said only "unknown board", from wherever the board was looked up)."""
    from perfml.cli import main

    home = copy_home(tmp_path, manifest=False, readme=False)  # a user's own data home: no checksum
    frame = pd.read_csv(home / "runtimes.csv.gz", low_memory=False)
    line = int(np.flatnonzero((frame["board"] == "GTX-980").to_numpy())[0]) + 2
    _rewrite_runtimes(home, lambda f: f.assign(board=f["board"].replace("GTX-980", "GTX-9800")))
    assert main(["evaluate", "--data-home", str(home), "--model", "roofline"]) == 2
    err = capsys.readouterr().err
    assert f"runtimes.csv.gz: row {line} (line of the CSV), column board: unknown board 'GTX-9800'" in err
    assert "closest names: GTX-980" in err and "Traceback" not in err
    assert len(load_runtimes(home)) == 65120  # the dataset layer itself does not know the registry


def test_the_data_homes_board_check_covers_the_operator_table():
    from perfml.datasets import DataHome, load_dlops_runtimes

    home = DataHome(SHARED, board_check=lambda board: "not this one" if board == "Tesla-T4" else None)
    with pytest.raises(DatasetSchemaError, match=r"dlops_runtimes.csv.gz: row \d+ \(line of the CSV\), "
                                                 r"column board: not this one"):
        load_dlops_runtimes(home)
    with pytest.raises(DatasetSchemaError, match=r"runtimes.csv.gz: row \d+ .*not this one"):
        DataHome(SHARED, board_check=lambda board: "not this one" if board == "GTX-980" else None).table("runtimes")
    assert len(load_dlops_runtimes(DataHome(SHARED, board_check=lambda board: None))) == 267230


def test_in_memory_tables_are_held_to_their_schema():
    """DataHome.with_tables returned the frame unchecked (a -1 ms time and a misspelt table name went through)."""
    from perfml.datasets import DataHome

    home = DataHome(SHARED)
    rt = home.table("runtimes")
    with pytest.raises(DatasetSchemaError, match="no table is called 'runtimez'"):
        home.with_tables(runtimez=rt)
    with pytest.raises(DatasetSchemaError, match="must be a pandas DataFrame"):
        home.with_tables(runtimes="oops")
    with pytest.raises(DatasetSchemaError, match="in-memory table 'runtimes': column 'time_ms_median' must be a positive"):
        home.with_tables(runtimes=rt.assign(time_ms_median=-1.0))
    with pytest.raises(DatasetSchemaError, match="in-memory table 'runtimes': row 2 .*column board: not known"):
        DataHome(SHARED, board_check=lambda b: "not known" if b == rt["board"].iloc[0] else None).with_tables(runtimes=rt)
    again = home.with_tables(runtimes=rt.iloc[:100])
    assert len(again.table("runtimes")) == 100 and len(again.table("boards")) == len(home.table("boards"))


def test_a_count_beyond_what_a_float_holds_is_refused_as_it_was_written(tmp_path):
    """An input size of 1e30 in a user's data home: the integer cast wrapped it to -9.2e18, and the
    table was refused for a negative size, "times are milliseconds", a value the user never wrote."""
    home = copy_home(tmp_path, manifest=False, readme=False)  # a user's own data home: no checksum
    _rewrite_runtimes(home, lambda f: f.assign(input_size=f["input_size"].astype(object).where(f.index != 3, "1e30")))
    with pytest.raises(DatasetSchemaError, match=r"column 'input_size' must hold whole numbers up to 2\*\*53, found .*1e\+?30.* in row 5"):
        load_runtimes(home)


@pytest.mark.parametrize("column, value, message", [
    ("grid_x", "2.5", r"column 'grid_x' is a launch dimension, a whole number, found 2.5 in row 5"),
    ("n_launches_per_rep", "0", r"column 'n_launches_per_rep' must be a positive number or empty"),
    ("registers_per_thread", "-4", r"column 'registers_per_thread' must be >= 0"),
    ("time_ms_std", "inf", r"column 'time_ms_std' must be >= 0"),
    ("time_ms_min", "1e6", r"row 5 \(line of the CSV\) has time_ms_mean .* outside its own \[time_ms_min, time_ms_max\]"),
])
def test_a_runtime_row_that_does_not_hold_together_is_refused(tmp_path, column, value, message):
    """A user's own data home (no manifest): 2.5-thread blocks, a run of 0 launches, -4 registers, an
    infinite spread and a minimum above the maximum all loaded."""
    home = copy_home(tmp_path, manifest=False, readme=False)
    _rewrite_runtimes(home, lambda f: f.assign(**{column: f[column].astype(object).where(f.index != 3, value)}))
    with pytest.raises(DatasetSchemaError, match=message):
        load_runtimes(home)
