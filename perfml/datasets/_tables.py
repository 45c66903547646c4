"""Loaders of the shared tables (``shared/datasets``), each checked against its schema.

All times are milliseconds (see shared/datasets/README.md, "Units and conventions").
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pandas as pd

from perfml.datasets import _columns as C
from perfml.datasets._home import as_data_home
from perfml.datasets._schema import TableSchema, validate
from perfml.errors import DatasetSchemaError, DataHomeError

_TIMES = ("time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max")

SCHEMAS: dict[str, TableSchema] = {
    "runtimes": TableSchema(
        file="runtimes.csv.gz",
        columns=C._RUNTIMES_COLUMNS,
        positive=(*_TIMES, "input_size", "n_reps"),
        non_negative=("time_ms_std",),
        required_non_empty=("source", "board", "app", "app_id", "kernel"),
        units={c: "ms" for c in (*_TIMES, "time_ms_std")},
    ),
    "runtime_samples": TableSchema(
        file="runtime_samples.csv.gz",
        columns=C._SAMPLES_COLUMNS,
        positive=("time_ms", "input_size"),
        required_non_empty=("source", "board", "app_id"),
        units={"time_ms": "ms"},
    ),
    "profiles_nca": TableSchema(
        file="profiles_nca.csv.gz",
        columns=C._PROFILES_NCA_COLUMNS,
        positive=("input_size",),
        required_non_empty=("board", "app_id", "kernel"),
        extra_prefixes=("m.", "e."),
    ),
    "profiles_rodinia": TableSchema(
        file="profiles_rodinia.csv.gz",
        columns=C._PROFILES_RODINIA_COLUMNS,
        positive=("input_size",),
        required_non_empty=("board", "app_id", "kernel"),
        extra_prefixes=("",),  # one column per nvprof metric/event, names vary
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
    ),
    "published_accuracy_summary": TableSchema(
        file="published_accuracy_summary.csv",
        columns=C._PUBLISHED_ACCURACY_COLUMNS,
        required_non_empty=("method", "board"),
    ),
}


def load_table(name: str, data_home=None) -> pd.DataFrame:
    """Load one table of the data home by its short name (a key of :data:`SCHEMAS`).

    ``data_home`` is a :class:`~perfml.datasets.DataHome` (its cached table is used), a
    path, or None (:func:`~perfml.datasets.find_data_home`). The result is validated
    (columns, numeric kinds, positive times) and is a fresh copy: callers may modify it.

    Raises
    ------
    DataHomeError
        If the data home or the file does not exist.
    DatasetSchemaError
        If the table does not match its schema.
    """
    if name not in SCHEMAS:
        raise KeyError(f"unknown table {name!r}; known: {', '.join(SCHEMAS)}")
    return as_data_home(data_home).table(name)


def read_table(name: str, home) -> pd.DataFrame:
    """Read and validate table ``name`` of the data home directory ``home`` (cached per file version)."""
    path = Path(home) / SCHEMAS[name].file
    if not path.is_file():
        raise DataHomeError(
            f"{path} does not exist; the data home must hold the shared datasets tables "
            f"(same file names as shared/datasets), including {SCHEMAS[name].file}"
        )
    stat = path.stat()
    return _load_cached(name, str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _load_cached(name: str, path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    schema = SCHEMAS[name]
    try:
        raw = pd.read_csv(path, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise DatasetSchemaError(
            f"{path}: cannot be read as CSV ({exc.__class__.__name__}: {str(exc).splitlines()[0]}); "
            f"restore the file from shared/datasets/{schema.file}"
        ) from None
    return validate(raw, schema, path)


def load_runtimes(data_home=None, *, source: str | None = None) -> pd.DataFrame:
    """Aggregated kernel times, one row per (source, board, app/kernel, launch, size); ms."""
    df = load_table("runtimes", data_home)
    if source is not None:
        known = sorted(df["source"].dropna().unique())
        if source not in known:
            raise DatasetSchemaError(
                f"runtimes: no rows with source {source!r}; choose one of {', '.join(known)}"
            )
        df = df[df["source"] == source].reset_index(drop=True)
    return df


def load_runtime_samples(data_home=None) -> pd.DataFrame:
    """Every individual kernel-time measurement behind :func:`load_runtimes`; ms."""
    return load_table("runtime_samples", data_home)


def load_profiles_nca(data_home=None) -> pd.DataFrame:
    """nvprof metrics (``m.<description>``) and events (``e.<name>``) of the NCA apps."""
    return load_table("profiles_nca", data_home)


def load_profiles_rodinia(data_home=None) -> pd.DataFrame:
    """nvprof metrics/events of the Rodinia kernels (R-style lower-case metric names)."""
    return load_table("profiles_rodinia", data_home)


def load_bsp_inputs(data_home=None) -> pd.DataFrame:
    """BSP-model parameters as written in the upstream R scripts."""
    return load_table("bsp_inputs", data_home)


def load_boards_table(data_home=None) -> pd.DataFrame:
    """Selected board specifications with their sources (one row per dataset board)."""
    return load_table("boards", data_home)


def load_board_specs_long(data_home=None) -> pd.DataFrame:
    """Every upstream statement of a board attribute (conflicts visible)."""
    return load_table("board_specs_long", data_home)


def load_bsp_published_predictions(data_home=None) -> pd.DataFrame:
    """Upstream BSP predictions vs measurements (NCA apps, 2018 lambda table); ms."""
    return load_table("bsp_published_predictions", data_home)


def load_bspgpu_script_inputs(data_home=None) -> pd.DataFrame:
    """The BSPGPU per-board repetition matrices exactly as the upstream R scripts read them; ms."""
    return load_table("bspgpu_script_inputs", data_home)


def load_published_accuracy(data_home=None) -> pd.DataFrame:
    """Per board/kernel accuracy of the upstream ML and BSP predictions."""
    return load_table("published_accuracy_summary", data_home)
