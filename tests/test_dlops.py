"""Loaders of the NeuSight operator corpus (``dlops_*`` tables): schema, value rules, filters.

Truth: the real tables of ../shared/datasets (never copied here); row counts and the
per-board train/test counts are those of shared/datasets/README.md, NeuSight section
("Files (dlops)" and "Counts (dlops_runtimes ...)", row "all"). Malformed variants are
written to a temporary data home by the tests.
"""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml.datasets import (
    DLOPS_OP_DIMS,
    DLOPS_OPS,
    DLOPS_SCHEMAS,
    load_dlops_device_configs,
    load_dlops_published_errors,
    load_dlops_runtimes,
    load_dlops_table,
)
from perfml.errors import DataHomeError, DatasetSchemaError

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)


@pytest.fixture(scope="module")
def dlops_sample():
    """Six real rows of every operator of dlops_runtimes (shared/datasets), a valid base table."""
    rt = load_dlops_runtimes(data_home=HOME)
    return rt.groupby("op", sort=False).head(6).reset_index(drop=True)


def write_home(tmp_path, frame: pd.DataFrame, file: str = "dlops_runtimes.csv.gz"):
    """A data home holding ``frame`` as ``file`` (plus the empty marker table every home has)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    with gzip.open(home / "runtimes.csv.gz", "wt") as fh:
        fh.write("")
    if file.endswith(".gz"):
        with gzip.open(home / file, "wt") as fh:
            frame.to_csv(fh, index=False)
    else:
        frame.to_csv(home / file, index=False)
    return home


@pytest.mark.parametrize(
    "name, rows",
    # README "Files (dlops)": rows of each table.
    [("dlops_runtimes", 267230), ("dlops_device_configs", 10), ("dlops_published_errors", 2183)],
)
def test_every_dlops_table_loads_with_readme_row_count(name, rows):
    frame = load_dlops_table(name, data_home=HOME)
    assert len(frame) == rows
    assert list(frame.columns) == list(DLOPS_SCHEMAS[name].columns)


def test_runtimes_match_readme_counts_per_board_and_split():
    # README "Counts (dlops_runtimes, train / test rows per board and op)", row "all".
    expected = {
        "Tesla-P4": (51598, 1760),
        "Tesla-P100-PCIe": (51567, 3815),
        "Tesla-V100-PCIe-32GB": (51512, 1925),
        "Tesla-T4": (51524, 3821),
        "A100-PCIe-40GB": (45521, 4187),
    }
    rt = load_dlops_runtimes(data_home=HOME)
    counts = rt.groupby(["board", "split"]).size()
    for board, (train, test) in expected.items():
        assert counts[(board, "train")] == train
        assert counts[(board, "test")] == test
    # README: 4996 conv train rows on the P4, no conv test rows, no conv rows on the A100.
    conv = rt[rt["op"] == "conv"]
    assert (conv["split"] == "train").all()
    assert (conv["board"] == "Tesla-P4").sum() == 4996
    assert not (conv["board"] == "A100-PCIe-40GB").any()


def test_runtimes_values_follow_the_column_dictionary():
    rt = load_dlops_runtimes(data_home=HOME)
    assert set(rt["op"]) == set(DLOPS_OPS)
    assert set(rt["split"]) == {"train", "test"}
    times = rt["time_ms"].to_numpy()
    assert np.isfinite(times).all() and (times > 0).all()
    # milliseconds: the smallest call is the launch / event floor of 0.024-0.031 ms (README)
    assert 0.02 < times.min() < 0.04
    for op, dims in DLOPS_OP_DIMS.items():
        rows = rt[rt["op"] == op]
        assert (rows[list(dims)].to_numpy(dtype=float) > 0).all(), op


def test_filters_select_boards_ops_and_split():
    sub = load_dlops_runtimes(boards="Tesla-P4", ops=["bmm", "linear"], split="test", data_home=HOME)
    # README counts: P4 test rows, bmm 72 + linear 974
    assert len(sub) == 72 + 974
    assert set(sub["board"]) == {"Tesla-P4"} and set(sub["op"]) == {"bmm", "linear"}
    assert list(sub.index) == list(range(len(sub)))
    two = load_dlops_runtimes(boards=["Tesla-T4", "A100-PCIe-40GB"], ops="softmax", data_home=HOME)
    assert set(two["board"]) == {"Tesla-T4", "A100-PCIe-40GB"}
    assert len(two) == 1750 + 75 + 1750 + 79


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"boards": "Tesla-P5"}, r"no rows with board 'Tesla-P5'; choose among .*Tesla-P4"),
        ({"ops": ["bmm", "matmul"]}, r"no rows with op 'matmul'; choose among bmm, linear"),
        ({"split": "validation"}, r"no rows with split 'validation'; choose among train, test"),
    ],
)
def test_unknown_filter_values_are_typed_errors(kwargs, match):
    with pytest.raises(DatasetSchemaError, match=match):
        load_dlops_runtimes(**kwargs, data_home=HOME)


def test_loader_returns_a_fresh_copy():
    first = load_dlops_runtimes(ops="relu", data_home=HOME)
    first.loc[0, "time_ms"] = -1.0
    assert (load_dlops_runtimes(ops="relu", data_home=HOME)["time_ms"] > 0).all()
    everything = load_dlops_runtimes(data_home=HOME)
    everything.loc[0, "time_ms"] = -1.0
    assert (load_dlops_runtimes(data_home=HOME)["time_ms"] > 0).all()


def test_device_configs_and_published_errors():
    configs = load_dlops_device_configs(data_home=HOME)
    assert len(configs) == 10 and len(load_dlops_device_configs(physical_only=True, data_home=HOME)) == 9
    # README "dlops_device_configs": the known P4 error is kept as written (40 SMs x 64 cores).
    p4 = configs[configs["board"] == "Tesla-P4"].iloc[0]
    assert (p4["num_sm"], p4["core_per_sm"], p4["sms_observed_by_profiler"]) == (40, 64, 20)
    table = load_dlops_published_errors(level="published_table", data_home=HOME)
    assert len(table) == 40
    # README, published per-op-class table: NeuSight out-of-distribution BMM 13.8, LN 56.7
    ns = table[(table["method"] == "neusight") & (table["distribution"] == "out")].set_index("op_class")
    assert round(ns.loc["BMM", "mean_abs_pct_error"], 1) == 13.8
    assert round(ns.loc["LN", "mean_abs_pct_error"], 1) == 56.7
    with pytest.raises(DatasetSchemaError, match="choose among published_table, per_device, per_run"):
        load_dlops_published_errors(level="per_op", data_home=HOME)


# --------------------------------------------------------------------------- malformed tables
def test_missing_table_is_a_data_home_error(tmp_path, dlops_sample):
    home = write_home(tmp_path, dlops_sample)
    with pytest.raises(DataHomeError, match="dlops_device_configs.csv"):
        load_dlops_device_configs(home)


def test_missing_column_names_file_and_column(tmp_path, dlops_sample):
    home = write_home(tmp_path, dlops_sample.drop(columns=["time_ms"]))
    with pytest.raises(DatasetSchemaError, match=r"dlops_runtimes.csv.gz: missing column\(s\) 'time_ms'"):
        load_dlops_runtimes(home)


@pytest.mark.parametrize(
    "column, value, match",
    [
        ("op", "matmul", r"column 'op' must be one of bmm, linear.*found 'matmul' in row 5"),
        ("split", "val", r"column 'split' must be one of train, test, found 'val' in row 5"),
        ("dtype", "float16", r"column 'dtype' must be one of float32, found 'float16' in row 5"),
        ("time_ms", 0.0, r"'time_ms' must be a positive number in ms, found \S*0\.0\S* in row 5"),
        ("time_ms", float("inf"), r"'time_ms' must be a positive number in ms, found \S*inf\S* in row 5"),
        ("time_ms", "fast", r"'time_ms' must be numeric, found 'fast' in row 5"),
        ("B", 2.5, r"'B' must hold whole numbers, found 2.5 in row 5"),
    ],
)
def test_bad_cell_names_column_row_and_fix(tmp_path, dlops_sample, column, value, match):
    frame = dlops_sample.astype({column: object})
    frame.loc[3, column] = value
    home = write_home(tmp_path, frame)
    with pytest.raises(DatasetSchemaError, match=match):
        load_dlops_runtimes(home)


def test_conv_padding_may_be_zero_but_not_negative(tmp_path, dlops_sample):
    frame = dlops_sample.copy()
    conv = frame.index[frame["op"] == "conv"]
    frame.loc[conv, "padding"] = 0
    assert (load_dlops_runtimes(write_home(tmp_path, frame))["op"] == "conv").sum() == len(conv)
    frame.loc[conv[1], "padding"] = -1
    with pytest.raises(DatasetSchemaError, match=rf"'padding' must be .*>= 0.* row {conv[1] + 2}\b"):
        load_dlops_runtimes(write_home(tmp_path, frame))
    frame.loc[conv[1], "padding"] = pd.NA
    with pytest.raises(DatasetSchemaError, match=rf"'padding' must be a whole number >= 0 for op 'conv'.* row {conv[1] + 2}\b"):
        load_dlops_runtimes(write_home(tmp_path, frame))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_dimension_the_op_needs_must_be_positive(tmp_path_factory, dlops_sample, data):
    """Property: blanking or zeroing/negating any dimension an op needs is caught, naming it and the row."""
    row = data.draw(st.integers(0, len(dlops_sample) - 1))
    op = dlops_sample.loc[row, "op"]
    dim = data.draw(st.sampled_from(DLOPS_OP_DIMS[op]))
    value = data.draw(st.sampled_from([0, -1, -4096, None]))
    frame = dlops_sample.astype({dim: object})
    frame.loc[row, dim] = value
    home = write_home(tmp_path_factory.mktemp("h"), frame)
    with pytest.raises(DatasetSchemaError, match=rf"column '{dim}' must be a positive .* in row {row + 2}\b"):
        load_dlops_runtimes(home)


def test_a_dimension_the_op_does_not_need_may_be_empty(tmp_path, dlops_sample):
    frame = dlops_sample.copy()
    vector = frame["op"] == "relu"
    frame.loc[vector, ["M", "N", "K", "in_channels"]] = pd.NA
    frame.loc[frame["op"] == "bmm", "H"] = pd.NA
    assert len(load_dlops_runtimes(write_home(tmp_path, frame))) == len(frame)


def test_published_errors_level_is_checked(tmp_path):
    frame = load_dlops_published_errors(data_home=HOME).head(20).astype({"level": object})
    frame.loc[7, "level"] = "per_op"
    home = write_home(tmp_path, frame, "dlops_published_errors.csv")
    with pytest.raises(DatasetSchemaError, match=r"dlops_published_errors.csv: column 'level' must be one of .* row 9"):
        load_dlops_published_errors(home)


def test_cache_follows_file_changes(tmp_path, dlops_sample):
    """The cache key is path + mtime + size: a rewritten file is read again, not served stale."""
    import os

    home = write_home(tmp_path, dlops_sample)
    assert len(load_dlops_runtimes(home)) == len(dlops_sample)
    path = home / "dlops_runtimes.csv.gz"
    before = path.stat().st_mtime_ns
    write_home(tmp_path, dlops_sample.head(10))
    os.utime(path, ns=(before + 10**9, before + 10**9))
    assert len(load_dlops_runtimes(home)) == 10


def test_a_truncated_gzip_is_a_typed_error_not_eof(tmp_path, dlops_sample):
    # Issue 14 §5: a gzip cut short surfaced as EOFError (printed as "Aborted."); the dlops
    # loader reads through the data home's one checked reader.
    home = write_home(tmp_path, pd.concat([dlops_sample] * 50, ignore_index=True))
    data = (home / "dlops_runtimes.csv.gz").read_bytes()
    (home / "dlops_runtimes.csv.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetSchemaError, match="truncated or corrupt"):
        load_dlops_runtimes(home)


def test_the_shared_table_is_checked_against_the_manifest(tmp_path):
    # A copy of the real table with one row dropped no longer matches the manifest's row count.
    import shutil

    shared = HOME.path
    home = tmp_path / "home"
    home.mkdir()
    for name in ("runtimes.csv.gz", "manifest.csv"):
        shutil.copy(shared / name, home / name)
    with gzip.open(shared / "dlops_runtimes.csv.gz", "rt") as src, gzip.open(home / "dlops_runtimes.csv.gz", "wt") as dst:
        lines = src.readlines()
        dst.writelines(lines[:-1])
    with pytest.raises(DatasetSchemaError, match="rows"):
        load_dlops_runtimes(home)
