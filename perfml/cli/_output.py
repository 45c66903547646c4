"""Printing helpers shared by the CLI commands: rich tables or bare JSON."""

from __future__ import annotations

import json
import math
import os

import pandas as pd


def _clean(value):
    """``value`` with non-finite floats as None and numpy / pandas scalars as Python ones."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, (str, int, float, bool)) else k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_clean(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return frame_records(value)
    if isinstance(value, pd.Series):
        return _clean(value.to_dict())
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy arrays and scalars
        return _clean(value.tolist())
    if hasattr(value, "item"):
        try:
            return _clean(value.item())
        except (TypeError, ValueError):
            pass
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """JSON-safe records of a DataFrame (NaN and infinities -> null, numpy scalars -> Python)."""
    return [{k: _clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def to_json(obj, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """Strict JSON text of ``obj`` (a DataFrame, list or dict).

    Non-finite numbers become ``null`` (JSON has no NaN or Infinity; Python's
    ``json`` would otherwise write them and break every other parser); anything else
    JSON cannot hold (a timestamp, a path) is written as its string.
    """
    return json.dumps(_clean(obj), indent=indent, sort_keys=sort_keys, default=str, allow_nan=False)


def print_json(obj, *, sort_keys: bool = False) -> None:
    """Print ``obj`` (a DataFrame, list or dict) as strict JSON and nothing else."""
    print(to_json(obj, sort_keys=sort_keys))


def print_table(frame: pd.DataFrame, title: str | None = None, floatfmt: str = "{:.3f}") -> None:
    """Print a DataFrame as a rich table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in frame.columns:
        table.add_column(str(col), justify="right" if pd.api.types.is_numeric_dtype(frame[col]) else "left")
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            if isinstance(value, float):
                # a small value keeps 3 significant figures (a T_k of 0.0005 ms printed as 0.001)
                small = value != 0 and abs(value) < 0.01
                cells.append("" if math.isnan(value) else f"{value:.3g}" if small else floatfmt.format(value))
            else:
                cells.append(str(value))
        table.add_row(*cells)
    Console(width=200).print(table)
