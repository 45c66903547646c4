"""Loaders of the deep-learning operator corpus (NeuSight, ASPLOS 2025): the ``dlops_*`` tables.

Three tables of the data home, each checked against its schema (columns and kinds as
the column dictionary of shared/datasets/README.md, section "Deep-learning operator
latencies (NeuSight, ASPLOS 2025)") and, for the runtimes, row by row: the split is
``train`` or ``test``, the operator is one of :data:`DLOPS_OPS`, every dimension the
operator needs (:data:`DLOPS_OP_DIMS`) is a positive whole number, the dtype is
``float32`` and ``time_ms`` is a positive finite latency in **milliseconds** (upstream
``Latency`` of ``torch.cuda.Event.elapsed_time``; README, "Units and measurement").

A bad table raises :class:`~perfml.errors.DatasetSchemaError` naming the file, the
row (line of the CSV), the column and the fix. Loaded tables are cached by path,
modification time and size; every call returns a fresh copy the caller may modify.

References
----------
.. [1] S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep
   Learning Training and Inference" (NeuSight), ASPLOS 2025, doi:10.1145/3669940.3707265.
   Data: https://github.com/sitar-lab/NeuSight (MIT), commit 6945927d.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from types import MappingProxyType

import numpy as np
import pandas as pd

from perfml.datasets._home import DataHome, resolve_data_home
from perfml.datasets._schema import TableSchema, validate
from perfml.datasets._manifest import ManifestEntry, check_sha256, check_time_units, manifest_entry
from perfml.datasets._tables import read_csv_checked
from perfml.errors import DatasetSchemaError, DataHomeError

__all__ = [
    "DLOPS_OPS",
    "DLOPS_OP_DIMS",
    "DLOPS_SCHEMAS",
    "DLOPS_SPLITS",
    "load_dlops_device_configs",
    "load_dlops_published_errors",
    "load_dlops_runtimes",
    "load_dlops_table",
]

#: matmul dimensions: bmm (B,M,N) x (B,N,K); linear: input (B,M,N), weight (K,N)
_MATMUL_DIMS = ("B", "M", "N", "K")
#: vector operators: a (B, H) tensor; ln / softmax normalise over H
_VECTOR_DIMS = ("B", "H")
#: conv2d: batch, channels, square kernel and input, stride (padding may be 0)
_CONV_DIMS = ("B", "in_channels", "out_channels", "kernel_size", "input_size", "stride")

#: every operator of dlops_runtimes -> the dimension columns it needs (each > 0).
#: README, "Operator semantics (from neusight/Dataset/collect.py)".
DLOPS_OP_DIMS = MappingProxyType(
    {
        "bmm": _MATMUL_DIMS,
        "linear": _MATMUL_DIMS,
        **{
            op: _VECTOR_DIMS
            for op in (
                "add", "mul", "pow", "div", "addu", "mulu", "powu", "divu",
                "relu", "gelu", "tanh", "ln", "softmax",
            )
        },
        "conv": _CONV_DIMS,
    }
)

#: the operators of the corpus, in the README's order
DLOPS_OPS: tuple[str, ...] = tuple(DLOPS_OP_DIMS)

#: NeuSight's own split of the operator rows
DLOPS_SPLITS: tuple[str, ...] = ("train", "test")

_DIM_COLUMNS = ("B", "M", "N", "K", "H", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding")

_RUNTIMES_COLUMNS: dict[str, str] = {
    "source": "str",
    "split": "str",
    "board": "str",
    "device_name": "str",
    "op": "str",
    "kernel_name": "str",
    "kernels": "str",
    "n_kernels": "int",
    **{c: "int" for c in _DIM_COLUMNS},
    "dtype": "str",
    "grid_x": "int",
    "grid_y": "int",
    "grid_z": "int",
    "block_x": "int",
    "block_y": "int",
    "block_z": "int",
    "warps_per_sm": "float",
    "blocks_per_sm": "float",
    "time_ms": "float",
    "torch_version": "str",
    "cuda_version": "str",
    "cudnn_version": "str",
    "neusight_trainset": "int",
    "upstream_path": "str",
    "upstream_row": "int",
}

_DEVICE_CONFIGS_COLUMNS: dict[str, str] = {
    "source": "str",
    "board": "str",
    "in_perfml_registry": "int",
    "device_name": "str",
    "config_variant": "str",
    "is_physical_gpu": "int",
    "neusight_role": "str",
    "dev_mem_gb": "float",
    "mem_bw_gbs": "float",
    "num_sm": "int",
    "core_per_sm": "int",
    "freq_mhz": "float",
    "single_flops_gflops": "float",
    "l2_cache_mb": "float",
    "fp32_gflops_from_fields": "float",
    "sms_observed_by_profiler": "int",
    "n_runtime_rows": "int",
    "notes": "str",
    "config_file": "str",
    "identical_copies": "str",
}

_PUBLISHED_ERRORS_COLUMNS: dict[str, str] = {
    "source": "str",
    "level": "str",
    "method": "str",
    "distribution": "str",
    "op_class": "str",
    "neusight_op_class": "str",
    "board": "str",
    "device_name": "str",
    "model": "str",
    "mode": "str",
    "seqlen": "int",
    "batch": "int",
    "option": "str",
    "mean_abs_pct_error": "float",
    "n": "int",
    "source_path": "str",
}

DLOPS_SCHEMAS: dict[str, TableSchema] = {
    "dlops_runtimes": TableSchema(
        file="dlops_runtimes.csv.gz",
        columns=_RUNTIMES_COLUMNS,
        positive=("time_ms", "B", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"),
        non_negative=("warps_per_sm", "blocks_per_sm", "n_kernels", "padding"),
        required_non_empty=("source", "split", "board", "device_name", "op", "dtype", "upstream_path", "upstream_row"),
        units={"time_ms": "ms"},
    ),
    "dlops_device_configs": TableSchema(
        file="dlops_device_configs.csv",
        columns=_DEVICE_CONFIGS_COLUMNS,
        positive=("dev_mem_gb", "mem_bw_gbs", "num_sm", "core_per_sm", "freq_mhz", "single_flops_gflops", "l2_cache_mb"),
        required_non_empty=("board", "device_name", "is_physical_gpu", "config_file"),
        units={"mem_bw_gbs": "GB/s", "freq_mhz": "MHz", "single_flops_gflops": "GFLOP/s", "l2_cache_mb": "MB", "dev_mem_gb": "GB"},
    ),
    "dlops_published_errors": TableSchema(
        file="dlops_published_errors.csv",
        columns=_PUBLISHED_ERRORS_COLUMNS,
        positive=("n",),
        non_negative=("mean_abs_pct_error",),
        required_non_empty=("level", "method", "distribution", "op_class", "mean_abs_pct_error"),
        units={"mean_abs_pct_error": "%"},
    ),
}

_LEVELS = ("published_table", "per_device", "per_run")
_DISTRIBUTIONS = ("in", "out")


# --------------------------------------------------------------------------- loading
def load_dlops_table(name: str, data_home: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Load one ``dlops_*`` table by its short name (a key of :data:`DLOPS_SCHEMAS`), checked.

    Raises
    ------
    UnknownTableError
        For a name that is not a dlops table (also a ``KeyError``).
    DataHomeError
        If the data home or the file does not exist.
    DatasetSchemaError
        If the table does not match its schema or a row breaks a value rule.
    """
    if name not in DLOPS_SCHEMAS:
        from perfml.errors import UnknownTableError

        raise UnknownTableError(f"unknown dlops table {name!r}; known: {', '.join(DLOPS_SCHEMAS)}")
    home = resolve_data_home(data_home, what="reading the dlops tables")
    path = home / DLOPS_SCHEMAS[name].file
    if not path.is_file():
        raise DataHomeError(
            f"{path} does not exist; the data home must hold the NeuSight tables of "
            f"shared/datasets, including {DLOPS_SCHEMAS[name].file}"
        )
    stat = path.stat()
    entry = manifest_entry(home, DLOPS_SCHEMAS[name].file)
    return _load_cached(name, str(path), stat.st_mtime_ns, stat.st_size, entry).copy()


@functools.lru_cache(maxsize=8)
def _load_cached(name: str, path: str, mtime_ns: int, size: int,
                 entry: ManifestEntry | None) -> pd.DataFrame:
    schema = DLOPS_SCHEMAS[name]
    # the one checked reader of the data home: typed errors for a cut or corrupt gzip, and
    # the manifest's row count
    raw = read_csv_checked(path, schema.file, entry)
    # Text columns the parser read as numbers (cuda_version 12.1, cudnn_version 8902, a column
    # left all empty) become text; asking read_csv for text dtypes up front is 2-3x slower.
    for col, kind in schema.columns.items():
        if kind == "str" and col in raw.columns and not pd.api.types.is_string_dtype(raw[col].dtype):
            raw[col] = raw[col].astype("string")
    raw, light = _coerce_parsed_numbers(raw, schema, path)
    frame = validate(raw, light, path)
    if name == "dlops_runtimes":
        _check_runtime_values(frame, path)
    elif name == "dlops_published_errors":
        _check_allowed(frame, "level", _LEVELS, path)
        _check_allowed(frame, "distribution", _DISTRIBUTIONS, path)
    if name == "dlops_runtimes":
        check_time_units(frame, ["time_ms"], entry, path)
    if entry is not None:
        check_sha256(entry, path)
    return frame


def _coerce_parsed_numbers(raw: pd.DataFrame, schema: TableSchema, path: str) -> tuple[pd.DataFrame, TableSchema]:
    """Coerce numeric columns the CSV parser already read as numbers; return the rest's schema.

    :func:`~perfml.datasets.validate` converts every numeric column through a string
    comparison (about 5 s on the 267k-row runtimes table). Columns the parser already
    read as numbers cannot hold text, so they are coerced here with the same rules (an
    ``int`` column must hold whole numbers; empty or infinite cells become missing) and
    handed to ``validate`` as already typed; any other column goes through ``validate``
    as usual, which names the first bad cell.
    """
    kinds = dict(schema.columns)
    out = raw.copy()
    for col, kind in schema.columns.items():
        if kind == "str" or col not in raw.columns or not pd.api.types.is_numeric_dtype(raw[col].dtype):
            continue
        values = raw[col].to_numpy(dtype=float, na_value=np.nan)
        finite = np.isfinite(values)
        if kind == "int":
            fractional = finite & (np.mod(np.where(finite, values, 0.0), 1) != 0)
            if fractional.any():
                line = _first_bad_row(fractional)
                raise DatasetSchemaError(
                    f"{path}: column {col!r} must hold whole numbers, found {float(values[line - 2])!r} in "
                    f"row {line}; fix the value"
                )
            series = pd.Series(np.where(finite, values, np.nan), index=raw.index)
            out[col] = series.astype("int64") if finite.all() else series.astype("Int64")
        else:
            out[col] = values
        kinds[col] = "str"  # already typed: validate leaves it as is
    light = TableSchema(
        file=schema.file,
        columns=kinds,
        positive=schema.positive,
        non_negative=schema.non_negative,
        required_non_empty=schema.required_non_empty,
        extra_prefixes=schema.extra_prefixes,
        units=schema.units,
    )
    return out, light


def _first_bad_row(mask: np.ndarray) -> int:
    """CSV line of the first ``True`` of ``mask`` (header is line 1)."""
    return int(np.flatnonzero(mask)[0]) + 2


def _check_allowed(frame: pd.DataFrame, column: str, allowed: Iterable[str], path: str) -> None:
    allowed = tuple(allowed)
    values = frame[column]
    bad = (~values.isin(allowed)).to_numpy()
    if bad.any():
        line = _first_bad_row(bad)
        raise DatasetSchemaError(
            f"{path}: column {column!r} must be one of {', '.join(allowed)}, found "
            f"{values.iloc[line - 2]!r} in row {line} (line of the CSV); fix or drop the row "
            "(see the dlops column dictionary in shared/datasets/README.md)"
        )


def _check_runtime_values(frame: pd.DataFrame, path: str) -> None:
    """Value rules of dlops_runtimes beyond column kinds (see the module docstring)."""
    _check_allowed(frame, "split", DLOPS_SPLITS, path)
    _check_allowed(frame, "op", DLOPS_OPS, path)
    _check_allowed(frame, "dtype", ("float32",), path)
    ops = frame["op"].to_numpy()
    for dim in _DIM_COLUMNS:
        if dim == "padding":
            continue
        needed_by = [op for op, dims in DLOPS_OP_DIMS.items() if dim in dims]
        rows = frame["op"].isin(needed_by).to_numpy()
        values = frame[dim].to_numpy(dtype=float, na_value=np.nan)
        bad = rows & ~(np.isfinite(values) & (values > 0))
        if bad.any():
            line = _first_bad_row(bad)
            op = ops[line - 2]
            raise DatasetSchemaError(
                f"{path}: column {dim!r} must be a positive whole number for op {op!r} "
                f"(it needs {', '.join(DLOPS_OP_DIMS[op])}), found {values[line - 2]!r} in row {line} "
                "(line of the CSV); fill in the dimension or drop the row"
            )
    conv = (frame["op"] == "conv").to_numpy()
    padding = frame["padding"].to_numpy(dtype=float, na_value=np.nan)
    bad = conv & ~(np.isfinite(padding) & (padding >= 0))
    if bad.any():
        line = _first_bad_row(bad)
        raise DatasetSchemaError(
            f"{path}: column 'padding' must be a whole number >= 0 for op 'conv', found "
            f"{float(padding[line - 2])!r} in row {line} (line of the CSV); fill it in or drop the row"
        )


# --------------------------------------------------------------------------- public loaders
def _as_tuple(value: str | Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    out = tuple(value)
    example = {"boards": "'Tesla-T4'", "ops": "'bmm'"}.get(what, "'...'")
    if not all(isinstance(v, str) for v in out):
        raise DatasetSchemaError(f"{what} must be names (strings), got {out!r}; pass e.g. {what}=[{example}]")
    if not out:  # an empty filter kept no row, silently
        raise DatasetSchemaError(f"{what}=[] selects nothing; name at least one, e.g. {what}=[{example}], or pass None for all")
    return out


def _select(frame: pd.DataFrame, column: str, wanted: tuple[str, ...], table: str, known: Iterable[str]) -> pd.Series:
    known = list(dict.fromkeys(known))
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise DatasetSchemaError(
            f"{table}: no rows with {column} {', '.join(map(repr, unknown))}; choose among "
            f"{', '.join(known)}"
        )
    return frame[column].isin(wanted)


def load_dlops_runtimes(
    data_home: str | os.PathLike[str] | None = None,
    *,
    boards: str | Iterable[str] | None = None,
    ops: str | Iterable[str] | None = None,
    split: str | None = None,
) -> pd.DataFrame:
    """Per-call latencies of PyTorch operators on five GPUs (NeuSight), one row per call; ms.

    Parameters
    ----------
    data_home : path-like, optional
        The data home (see :func:`perfml.datasets.resolve_data_home`; required, None raises :class:`~perfml.errors.DataHomeError`).
    boards : str or iterable of str, optional
        Keep these boards only (the table's canonical names, e.g. ``"Tesla-P4"``).
    ops : str or iterable of str, optional
        Keep these operators only (names of :data:`DLOPS_OPS`).
    split : {"train", "test"}, optional
        Keep NeuSight's training or test rows only.

    Returns
    -------
    pandas.DataFrame
        The rows, index reset; dimension columns are nullable integers (empty where the
        operator does not use them).

    Raises
    ------
    DatasetSchemaError
        If the table is malformed, or a filter names a board, op or split with no rows.
    """
    table = DLOPS_SCHEMAS["dlops_runtimes"].file
    home = resolve_data_home(data_home, what="reading the dlops tables")
    path = home / table
    if not path.is_file():
        return load_dlops_table("dlops_runtimes", data_home)  # raises DataHomeError
    stat = path.stat()
    frame = _load_cached("dlops_runtimes", str(path), stat.st_mtime_ns, stat.st_size,
                         manifest_entry(home, table))
    if isinstance(data_home, DataHome):
        data_home.check_boards(frame, path)
    keep = pd.Series(True, index=frame.index)
    wanted_boards = _as_tuple(boards, "boards")
    if wanted_boards is not None:
        keep &= _select(frame, "board", wanted_boards, table, frame["board"].unique())
    wanted_ops = _as_tuple(ops, "ops")
    if wanted_ops is not None:
        keep &= _select(frame, "op", wanted_ops, table, DLOPS_OPS)
    if split is not None:
        keep &= _select(frame, "split", (split,), table, DLOPS_SPLITS)
    if bool(keep.all()):
        return frame.copy()
    return frame.loc[keep].reset_index(drop=True)


def load_dlops_device_configs(
    data_home: str | os.PathLike[str] | None = None, *, physical_only: bool = False
) -> pd.DataFrame:
    """NeuSight's device description files, one row per NVIDIA JSON (specifications, not measurements).

    Units: ``mem_bw_gbs`` GB/s, ``freq_mhz`` MHz, ``single_flops_gflops`` GFLOP/s,
    ``l2_cache_mb`` MB, ``dev_mem_gb`` GB. Known upstream inaccuracies are kept as
    written and described in ``notes`` (README, "dlops_device_configs").

    Parameters
    ----------
    physical_only : bool, default False
        Drop the pseudo-device rows (``is_physical_gpu == 0``: the aggregated H100 pair).
    """
    frame = load_dlops_table("dlops_device_configs", data_home)
    if physical_only:
        frame = frame[frame["is_physical_gpu"] == 1].reset_index(drop=True)
    return frame


def load_dlops_published_errors(
    data_home: str | os.PathLike[str] | None = None, *, level: str | None = None
) -> pd.DataFrame:
    """NeuSight's published mean absolute % errors, long format (not errors on the operator rows).

    Parameters
    ----------
    level : {"published_table", "per_device", "per_run"}, optional
        Keep one aggregation level only (README, "dlops_published_errors").
    """
    frame = load_dlops_table("dlops_published_errors", data_home)
    if level is not None:
        keep = _select(frame, "level", (level,), DLOPS_SCHEMAS["dlops_published_errors"].file, _LEVELS)
        frame = frame.loc[keep].reset_index(drop=True)
    return frame
