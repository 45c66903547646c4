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
    return load_runtimes().sample(300, random_state=0).reset_index(drop=True)


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
    assert len(load_table(name)) == expected_rows[name]


def test_runtimes_are_positive_milliseconds():
    rt = load_runtimes()
    assert (rt[["time_ms_mean", "time_ms_median", "time_ms_min"]] > 0).all().all()
    assert (rt["time_ms_min"] <= rt["time_ms_max"]).all()


def test_source_filter_and_unknown_source():
    assert set(load_runtimes(source="BSPGPU")["source"]) == {"BSPGPU"}
    with pytest.raises(DatasetSchemaError, match="choose one of"):
        load_runtimes(source="nope")


def test_data_home_precedence(tmp_path, monkeypatch, runtimes_sample):
    home = write_home(tmp_path, runtimes_sample)
    monkeypatch.setenv("PERFML_DATA_HOME", str(home))
    assert resolve_data_home() == home.resolve()
    assert len(load_runtimes()) == 300
    monkeypatch.delenv("PERFML_DATA_HOME")
    assert resolve_data_home().name == "datasets"  # the shared/datasets beside the repository
    assert resolve_data_home(home) == home.resolve()


def test_missing_data_home_is_a_typed_error(tmp_path, monkeypatch):
    with pytest.raises(DataHomeError, match="does not exist"):
        resolve_data_home(tmp_path / "nowhere")
    monkeypatch.setenv("PERFML_DATA_HOME", str(tmp_path))
    with pytest.raises(DataHomeError, match="no runtimes.csv.gz"):
        resolve_data_home()


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
