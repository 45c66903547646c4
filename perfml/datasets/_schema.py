"""Schemas of the shared tables and their validation.

A schema names the columns a table must have, their kind, which columns must be
strictly positive (times, counts), and whether extra columns are allowed (the wide
profile tables carry one column per profiler metric). Validation raises
:class:`~perfml.errors.DatasetSchemaError` naming the file, the column and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfml.errors import DatasetSchemaError

# Column kinds: "str" (text, may be empty), "int" (integral numbers), "float" (numbers, may be empty).
_KINDS = ("str", "int", "float")


@dataclass(frozen=True)
class TableSchema:
    """Expected layout of one table of the data home.

    Attributes
    ----------
    file : str
        File name inside the data home.
    columns : dict
        Column name -> kind (``"str"``, ``"int"``, ``"float"``).
    positive : tuple of str
        Columns whose every value must be a finite number > 0 (times in ms, counts).
    non_negative : tuple of str
        Columns whose non-empty values must be >= 0 (a standard deviation, say).
    positive_if_given : tuple of str
        Columns that may be empty, but whose values must be finite and > 0 (a launch
        dimension: a block of 0 threads never ran).
    required_non_empty : tuple of str
        Columns that may not hold an empty cell.
    extra_prefixes : tuple of str or None
        ``None``: no column beyond ``columns`` is allowed. A tuple of prefixes: extra
        columns are allowed if they start with one of them (``("",)`` allows any).
    units : dict
        Column -> unit, for messages and documentation.
    numeric_extra : bool
        The extra columns (``extra_prefixes``) are profiler counters and metrics: every
        value a finite number >= 0 or empty (a text cell such as ``"High (8)"`` or ``"12%"``
        was an internal error where a counter was divided).
    raw_records : bool
        The table holds raw repetition records as published, the corrupt ones included
        (documented in the data home's README and excluded downstream by the 10x outlier
        rule: a 1.84e13 ms record of the BSPGPU runs): no per-value ceiling on its times.
    """

    file: str
    columns: dict[str, str]
    positive: tuple[str, ...] = ()
    non_negative: tuple[str, ...] = ()
    positive_if_given: tuple[str, ...] = ()
    required_non_empty: tuple[str, ...] = ()
    extra_prefixes: tuple[str, ...] | None = None
    units: dict[str, str] = field(default_factory=dict)
    numeric_extra: bool = False
    raw_records: bool = False

    def __post_init__(self) -> None:
        bad = {c: k for c, k in self.columns.items() if k not in _KINDS}
        if bad:
            raise ValueError(f"unknown column kinds in schema of {self.file}: {bad}")


def validate(df: pd.DataFrame, schema: TableSchema, path: str) -> pd.DataFrame:
    """Check ``df`` against ``schema`` and return it with numeric columns coerced.

    Raises
    ------
    DatasetSchemaError
        On a missing or unexpected column, a non-numeric value in a numeric column,
        or a non-positive / NaN value in a column that must be positive.
    """
    missing = [c for c in schema.columns if c not in df.columns]
    if missing:
        raise DatasetSchemaError(
            f"{path}: missing column(s) {', '.join(map(repr, missing))}; the table must have the "
            f"columns of shared/datasets/{schema.file} (see its README); restore them or point "
            "--data-home at an unmodified copy"
        )
    if schema.extra_prefixes is None:
        extra = [c for c in df.columns if c not in schema.columns]
    else:
        extra = [
            c
            for c in df.columns
            if c not in schema.columns and not any(str(c).startswith(p) for p in schema.extra_prefixes)
        ]
    if extra:
        raise DatasetSchemaError(
            f"{path}: unexpected column(s) {', '.join(map(repr, extra[:5]))}"
            f"{' ...' if len(extra) > 5 else ''}; expected exactly the columns of "
            f"shared/datasets/{schema.file}; remove them or rename them to the documented names"
        )
    out = df.copy()
    for col, kind in schema.columns.items():
        if kind in ("int", "float"):
            out[col] = _numeric(out[col], col, kind, path)
    for col in schema.required_non_empty:
        empty = out[col].isna()
        if empty.any():
            row = int(np.flatnonzero(empty.to_numpy())[0])
            raise DatasetSchemaError(
                f"{path}: column {col!r} is empty in row {row + 2} (line of the CSV); "
                "every row needs a value there: fill it or drop the row"
            )
    if "board" in out.columns:
        _check_board_spellings(out["board"], path)
    if schema.numeric_extra:
        for col in [c for c in out.columns if c not in schema.columns]:
            out[col] = _numeric(out[col], col, "float", path)
            values = out[col].to_numpy(dtype=float)
            bad = ~np.isnan(values) & ~(np.isfinite(values) & (values >= 0))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DatasetSchemaError(
                    f"{path}: column {col!r} is a profiler counter or metric and must be a number >= 0 or empty, "
                    f"found {float(values[row])!r} in row {row + 2} (line of the CSV); fix the row")
    for col in schema.positive:
        values = out[col].to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values <= 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            unit = schema.units.get(col, "")
            raise DatasetSchemaError(
                f"{path}: column {col!r} must be a positive number{f' in {unit}' if unit else ''}, "
                f"found {float(values[row])!r} in row {row + 2} (line of the CSV); drop the row or fix the "
                "measurement (times are milliseconds, see shared/datasets/README.md)"
            )
    for col in [c for c in schema.positive_if_given if c in out.columns]:
        values = out[col].to_numpy(dtype=float)
        bad = ~np.isnan(values) & ~(np.isfinite(values) & (values > 0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DatasetSchemaError(
                f"{path}: column {col!r} must be a positive number or empty, found {float(values[row])!r} in row {row + 2} "
                "(line of the CSV); fix the row"
            )
    for col in schema.non_negative:
        values = out[col].to_numpy(dtype=float)
        bad = ~np.isnan(values) & ~(np.isfinite(values) & (values >= 0))  # inf was taken
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DatasetSchemaError(
                f"{path}: column {col!r} must be >= 0, found {float(values[row])!r} in row {row + 2}; fix the row"
            )
    return out


def _check_board_spellings(boards: pd.Series, path: str) -> None:
    """Refuse a board name with surrounding spaces, and one board written two ways.

    The rows of a board are grouped by its name as written: ``"GTX-980"`` and ``"gtx-980 "``
    in one table were two boards to some computations and one (resolved through the
    registry's aliases) to others, which crashed ``fit-lambda`` and let ``predict-lambda``
    call a board "unseen" while reading its own rows. Names are compared ignoring case and
    every character but letters and digits, the registry's rule for aliases.
    """
    names = boards.dropna().astype(str)
    padded = names != names.str.strip()
    if padded.any():
        row = int(np.flatnonzero(padded.to_numpy())[0])
        raise DatasetSchemaError(f"{path}: column 'board' has {names.iloc[row]!r} in row {row + 2} (line of the CSV), "
                                 "with surrounding spaces; write the board's name without them")
    spellings = pd.DataFrame({"name": names.to_numpy(), "key": names.str.lower().str.replace(r"[^0-9a-z]", "", regex=True).to_numpy()})
    firsts = spellings.drop_duplicates("name")
    clash = firsts[firsts.duplicated("key", keep=False)]
    if len(clash):
        key = clash["key"].iloc[0]
        pair = clash[clash["key"] == key]
        rows = [int(np.flatnonzero((spellings["name"] == n).to_numpy())[0]) + 2 for n in pair["name"]]
        raise DatasetSchemaError(
            f"{path}: column 'board' writes one board two ways, {pair['name'].iloc[0]!r} (row {rows[0]}) and "
            f"{pair['name'].iloc[1]!r} (row {rows[1]}); write every row of a board with the same name")


def _as_written(value) -> str:
    """A cell for a message: ``'abc'`` or ``1.5``, never numpy's ``np.float64(1.5)``."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _numeric(series: pd.Series, col: str, kind: str, path: str) -> pd.Series:
    converted = pd.to_numeric(series, errors="coerce")
    bad = converted.isna() & series.notna() & (series.astype("string").str.strip() != "")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DatasetSchemaError(
            f"{path}: column {col!r} must be numeric, found {_as_written(series.iloc[row])} in row {row + 2}; "
            "fix the value (numbers only, empty for unknown)"
        )
    if kind == "int":
        values = converted.dropna().to_numpy(dtype=float)
        finite = values[np.isfinite(values)]
        if len(finite) and not np.all(np.equal(np.mod(finite, 1), 0)):
            fractional = converted.notna() & np.isfinite(converted.astype(float)) & (converted.astype(float) % 1 != 0)
            row = int(np.flatnonzero(fractional.to_numpy())[0])
            raise DatasetSchemaError(
                f"{path}: column {col!r} must hold whole numbers, found {_as_written(series.iloc[row])} in "
                f"row {row + 2}; fix the value"
            )
        huge = np.isfinite(converted.astype(float)) & (converted.astype(float).abs() > 2.0**53)
        if huge.any():  # the integer cast wrapped 1e30 to -9.2e18, then reported as a negative count
            row = int(np.flatnonzero(huge.to_numpy())[0])
            raise DatasetSchemaError(
                f"{path}: column {col!r} must hold whole numbers up to 2**53, found {_as_written(series.iloc[row])} in "
                f"row {row + 2}; fix the value"
            )
        # An infinite count is not a whole number: treat it as missing, so the positive /
        # non-empty checks name it instead of the integer cast crashing.
        converted = converted.where(np.isfinite(converted.astype(float)))
        if converted.isna().any():
            return converted.astype("Int64")
        return converted.astype("int64")
    return converted.astype(float)
