"""Printing helpers shared by the CLI commands: rich tables or bare JSON."""

from __future__ import annotations

import json
import math

import pandas as pd


def _clean(value):
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """JSON-safe records of a DataFrame (NaN -> null, numpy scalars -> Python)."""
    return [{k: _clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def print_json(obj) -> None:
    """Print ``obj`` (a DataFrame, list or dict) as JSON and nothing else."""
    if isinstance(obj, pd.DataFrame):
        obj = frame_records(obj)
    print(json.dumps(obj, indent=2, default=str))


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
                cells.append("" if math.isnan(value) else floatfmt.format(value))
            else:
                cells.append(str(value))
        table.add_row(*cells)
    Console(width=200).print(table)
