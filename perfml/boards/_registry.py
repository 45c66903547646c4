"""Load the board registry (``perfml/data/boards.toml``) and resolve board names.

The file layout is documented in its header. Per-compute-capability facts are
inherited by every board of that compute capability; a board's own value wins and
the overridden per-CC value is kept as an alternative.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml.boards._board import SPEC_FIELDS, Alternative, Board
from perfml._files import read_versioned
from perfml.errors import DatasetSchemaError, UnknownBoardError

__all__ = [
    "SCHEMA_VERSION",
    "Registry",
    "load_registry",
    "default_registry",
    "get_board",
    "list_boards",
    "resolve_board_name",
    "normalize_board_name",
]

#: registry file format version this code reads
SCHEMA_VERSION = 1

_STR_FIELDS = frozenset(
    {
        "full_name",
        "device_name",
        "architecture",
        "compute_capability",
        "memory_type",
        "register_alloc_granularity",
    }
)
_FLOAT_FIELDS = frozenset({"memory_bandwidth_gbs", "warp_issue_per_clock"})
_BOARD_META_KEYS = frozenset({"name", "full_name", "aliases", "source", "alternatives"})
_CC_META_KEYS = frozenset({"source"})


@dataclass(frozen=True)
class _Entry:
    """One parsed value of the registry file."""

    value: Any
    source: str | None
    note: str | None
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True)
class Registry:
    """An immutable set of boards with a case-insensitive name and alias index.

    Attributes
    ----------
    boards : Mapping[str, Board]
        Canonical name -> board, in file order.
    path : str
        The file the registry was read from.
    """

    boards: Mapping[str, Board]
    path: str
    _index: Mapping[str, str]
    _cc_tables: Mapping[str, Mapping[str, _Entry]]

    def resolve(self, name: str) -> str:
        """Return the canonical name for a board name or alias (case-insensitive).

        Raises
        ------
        UnknownBoardError
            If nothing matches; the message lists the closest names.
        """
        key = normalize_board_name(name)
        if key in self._index:
            return self._index[key]
        raise UnknownBoardError(self._unknown_message(name))

    def get(self, name: str) -> Board:
        """Return the board for a name or alias (see :meth:`resolve`)."""
        return self.boards[self.resolve(name)]

    def cc_defaults(self, compute_capability: str) -> Mapping[str, tuple[Any, str | None]]:
        """Per-compute-capability facts as ``field -> (value, source)`` (empty if unknown CC)."""
        table = self._cc_tables.get(compute_capability, {})
        return MappingProxyType({f: (e.value, e.source) for f, e in table.items()})

    def compute_capabilities(self) -> tuple[str, ...]:
        """Every compute capability with a ``[cc."X.Y"]`` table, oldest first."""
        return tuple(sorted(self._cc_tables, key=lambda cc: tuple(int(p) for p in cc.split("."))))

    def _unknown_message(self, name: str) -> str:
        key = normalize_board_name(name)
        # difflib is quadratic in the name's length; a name over 4x the longest known one cannot
        # reach the 0.6 similarity ratio (2 x matches / total length) anyway
        longest = max(map(len, self._index), default=0)
        close_keys = difflib.get_close_matches(key, list(self._index), n=8, cutoff=0.6) if len(key) <= 4 * longest else []
        close: list[str] = []
        for k in close_keys:
            canonical = self._index[k]
            if canonical not in close:
                close.append(canonical)
        if close:
            hint = f"closest names: {', '.join(close[:5])}"
        else:
            hint = f"known boards: {', '.join(self.boards)}"
        return (
            f"unknown board {name!r}; {hint}. Run `perfml boards list` for every board, "
            "or add the board to perfml/data/boards.toml"
        )


def normalize_board_name(name: str) -> str:
    """Lookup key of a board name: lower case, no leading "NVIDIA", only letters and digits.

    >>> normalize_board_name("NVIDIA GeForce GTX-680")
    'geforcegtx680'
    """
    text = name.strip().lower()
    text = re.sub(r"^nvidia[\s_-]*", "", text)
    return re.sub(r"[^0-9a-z]", "", text)


# --------------------------------------------------------------------------- loading
def _default_path() -> Path:
    return Path(str(resources.files("perfml").joinpath("data", "boards.toml")))


@functools.lru_cache(maxsize=1)
def default_registry() -> Registry:
    """The registry shipped with perfml (read once; it is immutable)."""
    return load_registry(_default_path())


def load_registry(path: str | os.PathLike[str] | None = None) -> Registry:
    """Read and validate a board registry file.

    Parameters
    ----------
    path : path-like, optional
        TOML file in the layout of ``perfml/data/boards.toml``; the shipped file when
        omitted.

    Raises
    ------
    DatasetSchemaError
        If the file is malformed: unknown schema version, unknown field, wrong type,
        undefined ``@source`` reference, or an alias claimed by two boards.
    """
    file = Path(path) if path is not None else _default_path()
    where = str(file)
    # registry files written before they named their format carry only schema_version
    raw = read_versioned(file, "perfml-boards", (SCHEMA_VERSION,), error=DatasetSchemaError,
                         syntax="toml", require_format=False)
    named_sources = raw.get("sources", {})
    parser = _Parser(where, named_sources)

    cc_tables: dict[str, dict[str, _Entry]] = {}
    for cc, table in raw.get("cc", {}).items():
        if not re.fullmatch(r"\d+\.\d+", cc):
            raise DatasetSchemaError(f"{where}: [cc.{cc!r}] is not a 'major.minor' compute capability")
        cc_tables[cc] = parser.table(table, f"[cc.\"{cc}\"]", _CC_META_KEYS)

    boards: dict[str, Board] = {}
    index: dict[str, str] = {}
    for i, spec in enumerate(raw.get("board", [])):
        board = _build_board(spec, i, parser, cc_tables)
        if board.name in boards:
            raise DatasetSchemaError(f"{where}: board {board.name!r} is defined twice")
        boards[board.name] = board
        for spelling in (board.name, board.full_name, board.device_name, *board.aliases):
            if not spelling:
                continue
            key = normalize_board_name(spelling)
            owner = index.setdefault(key, board.name)
            if owner != board.name:
                raise DatasetSchemaError(
                    f"{where}: name or alias {spelling!r} of board {board.name!r} "
                    f"already belongs to {owner!r}; remove the ambiguous alias"
                )
    return Registry(
        boards=MappingProxyType(boards),
        path=where,
        _index=MappingProxyType(index),
        _cc_tables=MappingProxyType({k: MappingProxyType(v) for k, v in cc_tables.items()}),
    )


class _Parser:
    """Turns raw TOML values into typed :class:`_Entry` objects."""

    def __init__(self, where: str, named_sources: Mapping[str, str]) -> None:
        self.where = where
        self.named_sources = named_sources

    def source(self, text: Any, context: str) -> str | None:
        if text is None:
            return None
        if not isinstance(text, str):
            raise DatasetSchemaError(f"{self.where}: {context}: source must be a string, got {text!r}")
        if text.startswith("@"):
            key = text[1:]
            if key not in self.named_sources:
                raise DatasetSchemaError(
                    f"{self.where}: {context}: source reference {text!r} is not defined in [sources]"
                )
            return self.named_sources[key]
        return self.expand(text)

    def expand(self, text: str | None) -> str | None:
        """Replace ``@name`` references inside a longer text by their [sources] entry."""
        if text is None:
            return None

        def _expand(match: re.Match[str]) -> str:
            return self.named_sources.get(match.group(1), match.group(0))

        return re.sub(r"@([a-z0-9][a-z0-9-]*)", _expand, str(text))

    def value(self, field_name: str, value: Any, context: str) -> Any:
        if field_name in _STR_FIELDS:
            ok = isinstance(value, str)
        elif field_name in _FLOAT_FIELDS:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        else:
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            raise DatasetSchemaError(
                f"{self.where}: {context}.{field_name} = {value!r} has the wrong type "
                f"(expected {'a string' if field_name in _STR_FIELDS else 'a number'})"
            )
        return value

    def entry(self, field_name: str, raw: Any, default_source: str | None, context: str) -> _Entry:
        where = f"{context}.{field_name}"
        if isinstance(raw, dict):
            unknown = set(raw) - {"value", "source", "note", "alternatives"}
            if unknown or "value" not in raw:
                raise DatasetSchemaError(
                    f"{self.where}: {where}: an inline table needs 'value' and may have "
                    f"'source', 'note', 'alternatives' (found {sorted(raw)})"
                )
            value = self.value(field_name, raw["value"], context)
            source = self.source(raw.get("source"), where) or default_source
            note = self.expand(raw.get("note"))
            alternatives = self.alternatives(field_name, raw.get("alternatives", []), where)
        else:
            value = self.value(field_name, raw, context)
            source, note, alternatives = default_source, None, ()
        if source is None:
            raise DatasetSchemaError(
                f"{self.where}: {where} has no source; give it one or set the table's default `source`"
            )
        return _Entry(value, source, note, alternatives)

    def alternatives(self, field_name: str, raw: Any, context: str) -> tuple[Alternative, ...]:
        if not isinstance(raw, list):
            raise DatasetSchemaError(f"{self.where}: {context}: alternatives must be a list")
        out = []
        for alt in raw:
            if not isinstance(alt, dict) or "value" not in alt or "source" not in alt:
                raise DatasetSchemaError(
                    f"{self.where}: {context}: each alternative needs 'value' and 'source' (found {alt!r})"
                )
            source = self.source(alt["source"], context) or ""
            out.append(Alternative(alt["value"], source, self.expand(alt.get("note"))))
        return tuple(out)

    def table(self, table: Mapping[str, Any], context: str, meta: frozenset[str]) -> dict[str, _Entry]:
        default_source = self.source(table.get("source"), context)
        entries: dict[str, _Entry] = {}
        for key, raw in table.items():
            if key in meta:
                continue
            if key not in SPEC_FIELDS:
                raise DatasetSchemaError(
                    f"{self.where}: {context}: unknown field {key!r}; expected one of {', '.join(SPEC_FIELDS)}"
                )
            entries[key] = self.entry(key, raw, default_source, context)
        return entries


def _build_board(
    spec: Mapping[str, Any], i: int, parser: _Parser, cc_tables: Mapping[str, Mapping[str, _Entry]]
) -> Board:
    where = parser.where
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise DatasetSchemaError(f"{where}: board #{i + 1} has no name")
    context = f"board {name!r}"
    full_name = spec.get("full_name")
    if not isinstance(full_name, str):
        raise DatasetSchemaError(f"{where}: {context} has no full_name")
    aliases = spec.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise DatasetSchemaError(f"{where}: {context}: aliases must be a list of strings")

    own = parser.table({k: v for k, v in spec.items() if k != "full_name"}, context, _BOARD_META_KEYS)
    cc_entry = own.get("compute_capability")
    inherited = cc_tables.get(cc_entry.value, {}) if cc_entry else {}

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    notes: dict[str, str] = {}
    alternatives: dict[str, list[Alternative]] = {}
    for field_name in SPEC_FIELDS:
        if field_name == "full_name":
            continue
        entry = own.get(field_name)
        base = inherited.get(field_name)
        if entry is None and base is None:
            continue
        chosen = entry if entry is not None else base
        assert chosen is not None
        values[field_name] = chosen.value
        sources[field_name] = chosen.source or ""
        if chosen.note:
            notes[field_name] = chosen.note
        alts = list(chosen.alternatives)
        if entry is not None and base is not None and base.value != entry.value:
            alts.append(
                Alternative(
                    base.value,
                    base.source or "",
                    f"per-compute-capability default for CC {cc_entry.value if cc_entry else '?'}",
                )
            )
        if alts:
            alternatives[field_name] = alts

    extra = spec.get("alternatives", {})
    if not isinstance(extra, dict):
        raise DatasetSchemaError(f"{where}: {context}: alternatives must be a table of lists")
    for field_name, raw in extra.items():
        alternatives.setdefault(field_name, []).extend(
            parser.alternatives(field_name, raw, f"{context}.alternatives.{field_name}")
        )

    sources["full_name"] = parser.source(spec.get("source"), context) or ""
    return Board(
        name=name,
        full_name=full_name,
        aliases=tuple(aliases),
        sources=sources,
        alternatives={k: tuple(v) for k, v in alternatives.items()},
        notes=notes,
        **values,
    )


# --------------------------------------------------------------------------- public API
def resolve_board_name(name: str, *, registry: Registry | None = None) -> str:
    """Canonical registry name for a board name or alias (case-insensitive).

    Parameters
    ----------
    name : str
        Canonical name, marketing name, driver device name or alias, e.g.
        ``"Tesla K20c"``, ``"GeForce GTX TITAN"``, ``"gtx-680"``.
    registry : Registry, optional
        Registry to search; the shipped one by default.

    Raises
    ------
    UnknownBoardError
        If no board matches; the message lists the closest names.
    """
    return (registry or default_registry()).resolve(name)


def get_board(name: str | Board, *, registry: Registry | None = None) -> Board:
    """Return a board by name or alias (case-insensitive).

    Parameters
    ----------
    name : str or Board
        Board name or alias; a Board is returned unchanged.
    registry : Registry, optional
        Registry to search; the shipped one by default.

    Raises
    ------
    UnknownBoardError
        If no board matches; the message lists the closest names.

    Examples
    --------
    >>> get_board("Tesla K20c").name
    'Tesla-K20'
    """
    if isinstance(name, Board):
        return name
    return (registry or default_registry()).get(name)


def list_boards(*, registry: Registry | None = None) -> list[Board]:
    """Every board of the registry, in file order."""
    return list((registry or default_registry()).boards.values())


def same_board(a: str, b: str, *, registry: Registry | None = None) -> bool:
    """Whether two board names denote the same board.

    Registry names and aliases resolve to the canonical name; a name the registry does
    not know is compared after :func:`normalize_board_name` (case, spaces, ``-`` and
    ``_`` ignored).
    """

    def canonical(name: str) -> str:
        try:
            return resolve_board_name(name, registry=registry)
        except UnknownBoardError:
            return normalize_board_name(name)

    return canonical(a) == canonical(b) or normalize_board_name(a) == normalize_board_name(b)
