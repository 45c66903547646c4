"""Read the versioned TOML data files the closed-form models ship in ``perfml/data``.

One job: open a packaged file through :mod:`importlib.resources`, check its ``format``
and ``version`` keys and hand back the parsed document, or raise
:class:`~perfml.errors.DatasetSchemaError`. Also turns a table of sourced values
(``{ value = ..., source = "...", verified = ... }``) into plain numbers.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Mapping

from perfml._files import read_versioned
from perfml.errors import DatasetSchemaError

__all__ = ["read_packaged_toml", "sourced_values"]


def read_packaged_toml(name: str, *, format: str, version: int) -> dict[str, Any]:
    """Parse ``perfml/data/<name>`` and check its ``format`` and ``version``.

    The reading and the checks are :func:`perfml._files.read_versioned`'s (the one
    reader of versioned files).

    Raises
    ------
    DatasetSchemaError
        If the file is not valid TOML or carries another format or version.
    """
    return read_versioned(resources.files("perfml").joinpath("data", name), format, (version,),
                          error=DatasetSchemaError, syntax="toml")


def sourced_values(table: Mapping[str, Any], *, where: str,
                   fields: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """``(values, sources)`` of a table whose entries are ``{value, source, ...}``.

    Only the keys in ``fields`` are read; each must be an inline table with a numeric
    ``value`` and a non-empty ``source``.

    Raises
    ------
    DatasetSchemaError
        If a field is missing or an entry lacks its value or source.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in fields:
        entry = table.get(key)
        if not isinstance(entry, Mapping):
            raise DatasetSchemaError(
                f"{where}: {key} must be a table {{ value = ..., source = \"...\" }}, found "
                f"{entry!r}; add it to the data file."
            )
        value, source = entry.get("value"), entry.get("source")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DatasetSchemaError(f"{where}: {key}.value must be a number, found {value!r}.")
        if not isinstance(source, str) or not source.strip():
            raise DatasetSchemaError(
                f"{where}: {key}.source must say where the number comes from, found {source!r}."
            )
        values[key] = value
        sources[key] = source
    return values, sources
