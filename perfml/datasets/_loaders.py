"""The loaders of the data home's tables: one entry point per table, through a :class:`DataHome`.

Reading and checking a file is :mod:`perfml.datasets._tables`'s job; this module only
resolves the data home (a :class:`~perfml.datasets.DataHome`, a path, or None for the
documented default) and hands back a fresh copy of the cached, validated table.
"""

from __future__ import annotations

import pandas as pd

from perfml.datasets._home import as_data_home
from perfml.datasets._tables import SCHEMAS
from perfml.errors import DatasetSchemaError

__all__ = [
    "load_board_specs_long",
    "load_boards_table",
    "load_bsp_inputs",
    "load_bsp_published_predictions",
    "load_bspgpu_script_inputs",
    "load_profiles_nca",
    "load_profiles_rodinia",
    "load_published_accuracy",
    "load_runtime_samples",
    "load_runtimes",
    "load_table",
]


def load_table(name: str, data_home=None) -> pd.DataFrame:
    """Load one table of the data home by its short name (a key of :data:`SCHEMAS`).

    ``data_home`` is a :class:`~perfml.datasets.DataHome` (its cached table is used) or
    a path; it is required (None raises: library code never searches for it, the entry
    point resolves it with :func:`~perfml.datasets.find_data_home`). The result is
    validated (columns, numeric kinds, positive times) and is a fresh copy: callers may
    modify it.

    Raises
    ------
    UnknownTableError
        If ``name`` is none of the tables (also a ``KeyError``).
    DataHomeError
        If ``data_home`` is None, or the data home or the file does not exist.
    DatasetSchemaError
        If the table does not match its schema.
    """
    if name not in SCHEMAS:
        from perfml.errors import UnknownTableError

        raise UnknownTableError(f"unknown table {name!r}; known: {', '.join(SCHEMAS)}")
    return as_data_home(data_home, what=f"reading the {name} table").table(name)


def load_runtimes(data_home=None, *, source: str | None = None) -> pd.DataFrame:
    """Aggregated kernel times, one row per (source, board, app/kernel, launch, size); ms."""
    df = load_table("runtimes", data_home)
    if source is not None:
        known = sorted(df["source"].dropna().unique())
        if source not in known:
            from perfml.errors import UnknownSourceError

            raise UnknownSourceError(f"runtimes: no rows with source {source!r}; choose one of {', '.join(known)}")
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
