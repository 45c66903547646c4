"""Loaders of the shared tables (``shared/datasets``), each checked against its schema.

All times are milliseconds (see shared/datasets/README.md, "Units and conventions").
Before a table is returned it is checked, in this order: it can be read at all (a
gzip file cut short or corrupt, text that is not UTF-8, a CSV that does not parse are
typed errors); its row count against the data home's manifest; its schema; its time
units (:mod:`perfml.datasets._manifest`); the expressions of ``bsp_inputs.csv``
evaluated with the bounded evaluator; its sha256 against the manifest. Parsed and
checked tables are cached per (path, modification time, size).
"""

from __future__ import annotations

import functools
import gzip
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.datasets import _columns as C
from perfml._expr import ARITH, ExpressionError
from perfml.datasets._manifest import (
    ManifestEntry,
    check_row_count,
    check_sha256,
    check_time_units,
    manifest_entry,
)
from perfml.datasets._schema import TableSchema, validate
from perfml.errors import DatasetSchemaError, DataHomeError

_TIMES = ("time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max")
#: launch dimensions: empty where unknown, never 0 or negative
_LAUNCH = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")

SCHEMAS: dict[str, TableSchema] = {
    "runtimes": TableSchema(
        file="runtimes.csv.gz",
        columns=C._RUNTIMES_COLUMNS,
        positive=(*_TIMES, "input_size", "n_reps"),
        non_negative=("time_ms_std", "n_outliers_excluded", "registers_per_thread", "static_smem_bytes"),
        positive_if_given=(*_LAUNCH, "n_launches_per_rep"),
        required_non_empty=("source", "board", "app", "app_id", "kernel"),
        units={c: "ms" for c in (*_TIMES, "time_ms_std")},
    ),
    "runtime_samples": TableSchema(
        file="runtime_samples.csv.gz",
        columns=C._SAMPLES_COLUMNS,
        positive_if_given=_LAUNCH,
        positive=("time_ms", "input_size"),
        required_non_empty=("source", "board", "app_id"),
        units={"time_ms": "ms"},
        raw_records=True,
    ),
    "profiles_nca": TableSchema(
        file="profiles_nca.csv.gz",
        columns=C._PROFILES_NCA_COLUMNS,
        positive_if_given=_LAUNCH,
        positive=("input_size",),
        required_non_empty=("board", "app_id", "kernel"),
        extra_prefixes=("m.", "e."),
        numeric_extra=True,
    ),
    "profiles_rodinia": TableSchema(
        file="profiles_rodinia.csv.gz",
        columns=C._PROFILES_RODINIA_COLUMNS,
        positive_if_given=_LAUNCH,
        positive=("input_size",),
        required_non_empty=("board", "app_id", "kernel"),
        extra_prefixes=("",),  # one column per nvprof metric/event, names vary
        numeric_extra=True,
    ),
    "boards": TableSchema(file="boards.csv", columns=C._BOARDS_COLUMNS, required_non_empty=("board",)),
    "board_specs_long": TableSchema(
        file="board_specs_long.csv",
        columns=C._BOARD_SPECS_LONG_COLUMNS,
        required_non_empty=("board", "attribute"),
    ),
    "bsp_inputs": TableSchema(
        file="bsp_inputs.csv",
        columns=C._BSP_INPUTS_COLUMNS,
        positive=("cores", "clock_mhz", "latency_global_cycles", "latency_shared_cycles"),
        required_non_empty=("model_source", "board", "app_id"),
        units={"clock_mhz": "MHz", "latency_global_cycles": "cycles"},
    ),
    "bsp_published_predictions": TableSchema(
        file="bsp_published_predictions.csv",
        columns=C._BSP_PUBLISHED_COLUMNS,
        positive=("measured_ms", "predicted_ms", "input_size"),
        units={"measured_ms": "ms", "predicted_ms": "ms"},
    ),
    "bspgpu_script_inputs": TableSchema(
        file="bspgpu_script_inputs.csv",
        columns=C._BSPGPU_SCRIPT_INPUTS_COLUMNS,
        positive=("time_ms", "input_size"),
        required_non_empty=("board", "app_id"),
        units={"time_ms": "ms"},
        raw_records=True,
    ),
    "published_accuracy_summary": TableSchema(
        file="published_accuracy_summary.csv",
        columns=C._PUBLISHED_ACCURACY_COLUMNS,
        required_non_empty=("method", "board"),
    ),
}


def read_table(name: str, home) -> pd.DataFrame:
    """Read and validate table ``name`` of the data home directory ``home`` (cached per file version)."""
    path = Path(home) / SCHEMAS[name].file
    if not path.is_file():
        raise DataHomeError(
            f"{path} does not exist; the data home must hold the shared datasets tables "
            f"(same file names as shared/datasets), including {SCHEMAS[name].file}"
        )
    stat = path.stat()
    entry = manifest_entry(Path(home), SCHEMAS[name].file)
    return _load_cached(name, str(path), stat.st_mtime_ns, stat.st_size, entry)


#: errors reading a CSV (gzip cut short -> EOFError, corrupt deflate data -> zlib.error, ...)
_READ_ERRORS = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError,
                EOFError, zlib.error, gzip.BadGzipFile, ValueError, MemoryError)

#: variables of the compute expressions of bsp_inputs.csv, at a large size of the seed
#: 003 experiments (N = 2^14 elements or matrix side, one thread per element)
_BSP_ENV = {"N": 2.0**14, "threads": 2.0**14}


@functools.lru_cache(maxsize=16)
def _load_cached(name: str, path: str, mtime_ns: int, size: int,
                 entry: ManifestEntry | None) -> pd.DataFrame:
    schema = SCHEMAS[name]
    raw = read_csv_checked(path, schema.file, entry)
    df = validate(raw, schema, path)
    times = [c for c, u in schema.units.items() if u == "ms" and c in schema.positive]
    check_time_units(df, times, entry, path, ceiling=not schema.raw_records)
    if name == "bsp_inputs":
        _check_bsp_expressions(df, path)
    if name == "runtimes":
        _check_runtime_rows(df, path)
    if entry is not None:
        check_sha256(entry, path)
    return df


def _check_runtime_rows(df: pd.DataFrame, path: str) -> None:
    """What each row of ``runtimes`` says about one run holds together: a launch dimension is a whole
    number (a block of 2.5 threads was taken), and ``time_ms_min <= mean, median <= time_ms_max``
    (a row whose minimum exceeds its maximum loaded). shared/datasets holds both on every row."""
    for column in _LAUNCH:
        values = df[column].to_numpy(dtype=float)
        bad = np.isfinite(values) & (np.mod(np.where(np.isfinite(values), values, 0.0), 1) != 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DatasetSchemaError(f"{path}: column {column!r} is a launch dimension, a whole number, found "
                                     f"{float(values[row])!r} in row {row + 2} (line of the CSV); fix the row")
    low, high = df["time_ms_min"].to_numpy(dtype=float), df["time_ms_max"].to_numpy(dtype=float)
    for column in ("time_ms_mean", "time_ms_median"):
        values = df[column].to_numpy(dtype=float)
        bad = (values < low * (1 - 1e-9)) | (values > high * (1 + 1e-9))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DatasetSchemaError(
                f"{path}: row {row + 2} (line of the CSV) has {column} {float(values[row])!r} outside its own "
                f"[time_ms_min, time_ms_max] = [{float(low[row])!r}, {float(high[row])!r}] ms; the row's statistics "
                "are of different runs or units: fix the row")


def read_csv_checked(path: str, file: str, entry: ManifestEntry | None) -> pd.DataFrame:
    """Read one CSV (or .csv.gz) table of the data home, typed errors only.

    A gzip file cut short (``EOFError``), corrupt deflate data (``zlib.error``), a bad
    gzip header, text that is not UTF-8 or a CSV that does not parse raise
    :class:`~perfml.errors.DatasetSchemaError` naming the file; with a manifest
    ``entry``, the number of data rows must be the recorded one. Every loader of the
    data home reads its tables through this function.
    """
    try:
        raw = pd.read_csv(path, low_memory=False)
    except _READ_ERRORS as exc:
        first = (str(exc).splitlines() or [""])[0] or "no detail"
        raise DatasetSchemaError(
            f"{path}: cannot be read as CSV ({exc.__class__.__name__}: {first}); "
            f"the file is truncated or corrupt: restore it from shared/datasets/{file}"
        ) from None
    if entry is not None:
        check_row_count(raw, entry, path)
    return raw


def _check_bsp_expressions(df: pd.DataFrame, path: str) -> None:
    """Every compute expression of bsp_inputs.csv evaluates (bounded) to a finite value >= 0.

    A value that is not an expression is a pointer to documentation (``"see
    R-code/include/<app>.R"``) and is left alone when it starts with ``"see "``.
    """
    col = "compute_cycles_per_thread"
    if col not in df:
        return
    for i, text in df[col].items():
        if not isinstance(text, str) or not text.strip() or text.strip().startswith("see "):
            continue
        try:
            value = ARITH.evaluate(text, _BSP_ENV)
        except ExpressionError as exc:
            raise DatasetSchemaError(
                f"{path}: row {i + 2}, {col} = {text!r} is not a usable expression of N and "
                f"threads ({exc}); restore the file from shared/datasets/bsp_inputs.csv"
            ) from None
        if not float(value) >= 0:
            raise DatasetSchemaError(
                f"{path}: row {i + 2}, {col} = {text!r} gives {value} cycles at N = 2^14, "
                "expected a count >= 0; restore the file from shared/datasets/bsp_inputs.csv"
            )
