"""Load the board registry (``perfml/data/boards.toml``) and resolve board names.

The file layout is documented in its header. Per-compute-capability facts are
inherited by every board of that compute capability; a board's own value wins and
the overridden per-CC value is kept as an alternative.

Users add boards the shipped file lacks with files of their own in the same layout
(docs/boards.md): :func:`use_board_files` in Python; on the command line
``$PERFML_BOARDS`` (``os.pathsep``-separated) or ``perfml --boards FILE``. Such a file may add boards, ``[sources]`` names and ``[cc."X.Y"]``
tables of compute capabilities the registry does not have; it may not redefine a
board, alias, source name or compute capability that an earlier file defines, so
a shipped value never changes behind the user's back.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml.boards._launch_limits import MAX_THREADS_PER_BLOCK
from perfml.boards._board import BOARD_FILES, SPEC_FIELDS, Alternative, Board
from perfml._files import read_versioned
from perfml.errors import DatasetSchemaError, UnknownBoardError

__all__ = [
    "BOARDS_ENV",
    "SCHEMA_VERSION",
    "Registry",
    "load_registry",
    "default_registry",
    "get_board",
    "list_boards",
    "resolve_board_name",
    "normalize_board_name",
    "use_board_files",
    "user_board_files",
]

#: registry file format version this code reads
SCHEMA_VERSION = 1

#: environment variable the CLI reads for the user's own board files (os.pathsep-separated)
BOARDS_ENV = "PERFML_BOARDS"

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
#: the highest compute capability major a board may have: majors run to 12 (Blackwell) in 2026,
#: a few generations of headroom, while 99 (a typo, or a device property read wrong) is refused
MAX_CC_MAJOR = 20
_BOARD_META_KEYS = frozenset({"name", "full_name", "aliases", "source", "alternatives"})
_CC_META_KEYS = frozenset({"source"})


#: field -> (lowest, highest, unit): what a GPU can have. The floors are 0 only where a real
#: board lacks the unit (no FP64 / FP16 units or SFUs, no L2 on compute capability 1.x, no
#: reserved shared memory before 8.0); the ceilings are far above every board of the registry
#: (10x to 1000x its largest value; ``perfml boards list``), so they catch a unit slip (Hz for
#: MHz, B/s for GB/s) or a typo, never a new board. A warp is 32 threads on every CUDA device
#: (the guide's ``warpSize``), and the occupancy and coalescing formulas assume it.
_PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "sms": (1, 10_000, "SMs"),
    "fp32_cores_per_sm": (1, 4096, "FP32 FMA/clock/SM"),
    "fp64_units_per_sm": (0, 4096, "FP64 FMA/clock/SM"),
    "fp16_units_per_sm": (0, 8192, "FP16 FMA/clock/SM"),
    "sfu_per_sm": (0, 1024, "SFU ops/clock/SM"),
    "ldst_units_per_sm": (1, 1024, "LD/ST units/SM"),
    "base_clock_mhz": (50, 10_000, "MHz"),
    "boost_clock_mhz": (50, 10_000, "MHz"),
    "memory_clock_mhz": (50, 50_000, "MHz, deviceQuery convention: half the effective data rate"),
    "bus_width_bits": (8, 65_536, "bits"),
    "memory_bandwidth_gbs": (1, 100_000, "GB/s, 1e9 bytes/s"),
    "global_mem_bytes": (2**20, 2**50, "bytes"),
    "memory_channels": (1, 1024, "channels"),
    "memory_channel_width_bits": (8, 4096, "bits"),
    "channel_interleave_bytes": (32, 2**20, "bytes"),
    "l1_shared_kb_per_sm": (0, 16_384, "KiB"),
    "l1_cache_kb_per_sm": (0, 16_384, "KiB"),
    "shared_mem_per_sm_kb": (1, 16_384, "KiB"),
    "shared_mem_per_block_kb": (1, 16_384, "KiB"),
    "shared_banks": (1, 1024, "banks"),
    "l2_bytes": (0, 2**34, "bytes"),
    "registers_per_sm": (1024, 2**22, "32-bit registers"),
    "registers_per_block": (1024, 2**22, "32-bit registers"),
    "max_registers_per_thread": (16, 4096, "32-bit registers"),
    "max_threads_per_sm": (32, 65_536, "threads"),
    "max_threads_per_block": (32, 65_536, "threads"),
    "max_warps_per_sm": (1, 2048, "warps"),
    "max_blocks_per_sm": (1, 1024, "blocks"),
    "warp_size": (32, 32, "threads"),
    "register_alloc_unit": (1, 65_536, "registers"),
    "warp_alloc_granularity": (1, 64, "warps"),
    "shared_mem_alloc_unit_bytes": (1, 65_536, "bytes"),
    "reserved_shared_mem_per_block_bytes": (0, 65_536, "bytes"),
    "tdp_w": (1, 10_000, "W"),
    "warp_issue_per_clock": (0.01, 64, "warp instructions/clock/SM"),
}


def _check_magnitude(field_name: str, value: float, where: str) -> None:
    """A registry number is finite and within the field's plausible range (:data:`_PLAUSIBLE`);
    otherwise :class:`DatasetSchemaError` naming the value, the range and the unit."""
    if not math.isfinite(value):
        raise DatasetSchemaError(f"{where} = {value!r} is not a finite number; give the value or leave the field out")
    low, high, unit = _PLAUSIBLE.get(field_name, (0, math.inf, ""))
    if not low <= value <= high:
        def shown(v: float) -> str:
            return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"

        what = shown(low) if low == high else f"from {shown(low)} to {shown(high)}"
        raise DatasetSchemaError(
            f"{where} = {value!r} is not a value a GPU has (expected {what} {unit}); check the unit "
            "and the value, or leave the field out if no source states it"
        )


#: the smallest L2 (bytes) a board of compute capability 2.0 or later is given: 8x below the
#: smallest of the registry (the GT-630's 128 KiB, ``perfml boards list``), so only a unit slip
#: (KiB or MiB written as bytes) falls below it
MIN_L2_BYTES = 16 * 1024

#: (larger, smaller, why): pairs of fields where the first can never be below the second on a GPU
_ORDERED_FIELDS = (
    ("max_threads_per_sm", "max_threads_per_block", "a block is resident on one SM"),
    ("shared_mem_per_sm_kb", "shared_mem_per_block_kb", "a block's shared memory is carved from its SM's"),
    ("registers_per_sm", "registers_per_block", "a block's registers are its SM's"),
    ("boost_clock_mhz", "base_clock_mhz", "the boost clock is the base clock or above it"),
)


def _check_consistency(values: Mapping[str, Any], where: str, *, inherited_from: str | None = None,
                       own: set[str] | None = None) -> None:
    """Refuse a board whose fields contradict each other (each one plausible on its own).

    The occupancy and wave-size formulas read these fields together: ``max_warps_per_sm = 1``
    beside ``max_threads_per_sm = 2048`` predicted a 512-thread block on a board where none
    can be resident. Checked: ``max_threads_per_sm = warp size (32) x max_warps_per_sm``
    (a warp is 32 threads on every CUDA device), ``max_threads_per_block`` at most
    :data:`~perfml.boards._launch_limits.MAX_THREADS_PER_BLOCK`, ``l2_bytes`` not 0 from compute
    capability 2.0 on (CUDA C Programming Guide, appendix 'Compute Capabilities': global memory
    is cached in L2 from 2.x), and the pairs of :data:`_ORDERED_FIELDS`. A field the board
    takes from its compute capability's table is named as such, so the fix is clear.
    """
    def name(field_name: str) -> str:
        if own is not None and field_name not in own and inherited_from:
            return f"{field_name} (from the [cc.\"{inherited_from}\"] table)"
        return field_name

    threads, warps = values.get("max_threads_per_sm"), values.get("max_warps_per_sm")
    if threads is not None and warps is not None and threads != 32 * warps:
        raise DatasetSchemaError(
            f"{where}: {name('max_threads_per_sm')} = {threads} but {name('max_warps_per_sm')} = {warps} "
            f"({32 * warps} threads of 32 per warp); the two must agree (threads = 32 x warps): correct the one "
            "that is wrong"
        )
    per_block = values.get("max_threads_per_block")
    if per_block is not None and per_block > MAX_THREADS_PER_BLOCK:
        raise DatasetSchemaError(
            f"{where}: {name('max_threads_per_block')} = {per_block} is above CUDA's {MAX_THREADS_PER_BLOCK} "
            "threads per block (every compute capability from 2.0; 512 before it); give the device's value"
        )
    cc, l2 = values.get("compute_capability"), values.get("l2_bytes")
    if isinstance(cc, str) and l2 is not None and l2 < MIN_L2_BYTES and int(cc.split(".")[0]) >= 2:
        # 0 is right for compute capability 1.x only; on a later board it reads as "no L2" to
        # the features and the L2-resident roofline, which no such board is; a few bytes (60)
        # is a unit slip (KiB or MiB for bytes), and moved predictions as silently
        raise DatasetSchemaError(
            f"{where}: {name('l2_bytes')} = {l2} on compute capability {cc}, but every GPU of compute capability "
            f"2.0 or later has an L2 cache of at least {MIN_L2_BYTES // 1024} KiB (0 is for 1.x, which caches no "
            "global memory): give its size in bytes, not KiB or MiB (deviceQuery's 'L2 Cache Size', "
            "cudaDeviceProp.l2CacheSize), or leave the field out if no source states it"
        )
    for larger, smaller, why in _ORDERED_FIELDS:
        big, small = values.get(larger), values.get(smaller)
        if big is not None and small is not None and small > big:
            raise DatasetSchemaError(
                f"{where}: {name(smaller)} = {small} is above {name(larger)} = {big}, which no GPU has ({why}); "
                "correct the one that is wrong"
            )


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
        The file the registry was read from (the shipped one, or the first given).
    files : tuple of str
        Every file read, ``path`` first, then the user's board files in order.
    origin : Mapping[str, str]
        Canonical name -> the file that defines the board.
    """

    boards: Mapping[str, Board]
    path: str
    _index: Mapping[str, str]
    _cc_tables: Mapping[str, Mapping[str, _Entry]]
    files: tuple[str, ...] = ()
    origin: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def user_files(self) -> tuple[str, ...]:
        """The files read after the first one (the user's board files)."""
        return self.files[1:]

    def resolve(self, name: str) -> str:
        """Return the canonical name for a board name or alias (case-insensitive).

        Raises
        ------
        UnknownBoardError
            If nothing matches; the message lists the closest names.
        """
        if not isinstance(name, str):
            raise UnknownBoardError(f"board name {name!r} is not text; name a board as `perfml boards list` shows it")
        odd = odd_name_characters(name)
        if odd:
            raise UnknownBoardError(
                f"board name {name!r} has {odd!r}, which no board name has (letters, digits, spaces "
                f"and {_NAME_PUNCTUATION!r} only); write the name as `perfml boards list` shows it"
            )
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
            f"or describe the board in {BOARD_FILES}"
        )


#: punctuation a board name may hold besides ASCII letters, digits and spaces. Lookup ignores
#: it; anything else (an emoji, a typographic dash, a control character) is refused rather
#: than dropped, so that "GTX-980\u2011x" is not silently taken for "GTX-980x"
_NAME_PUNCTUATION = "-_./()+"


#: marks of marketing names ("NVIDIA(R) GeForce(R) GTX 980"), ignored like the punctuation
_TRADEMARKS = "\u00ae\u2122\u00a9"


def odd_name_characters(name: str) -> str:
    """The characters of ``name`` that no board name may have ("" when there are none)."""
    allowed = set(_NAME_PUNCTUATION) | {" "}
    return "".join(dict.fromkeys(c for c in name.strip()
                                 if not ((c.isascii() and (c.isalnum() or c in allowed)) or c in _TRADEMARKS)))


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


#: the user's board files in use (set by :func:`use_board_files`; the CLI passes $PERFML_BOARDS
#: and --boards there, as nothing below the CLI reads the environment), each with its
#: modification time and size: the cache key of their registry, so that a file edited
#: between two calls of :func:`use_board_files` is read again
_user_key: tuple[tuple[str, int, int], ...] = ()


def _file_key(files: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    key = []
    for f in files:
        try:
            st = os.stat(f)
            key.append((f, st.st_mtime_ns, st.st_size))
        except OSError:
            key.append((f, -1, -1))  # missing: load_registry says so
    return tuple(key)


def use_board_files(paths: Sequence[str | os.PathLike[str]]) -> Registry:
    """Make the shipped registry plus the boards files ``paths`` the default registry.

    Every later :func:`get_board` (and everything that looks a board up by name) sees the
    user's boards; an empty ``paths`` goes back to the shipped registry alone. The files
    are read and checked now, so a bad file fails here and nothing changes.

    Raises
    ------
    DatasetSchemaError
        As :func:`load_registry`.
    """
    global _user_key
    key = _file_key(tuple(str(Path(p).expanduser().resolve()) for p in paths))
    registry = _registry_of(key)
    _user_key = key
    return registry


def restore_board_files(files: tuple[str, ...]) -> None:
    """Put back what :func:`user_board_files` returned earlier, without reading the files again
    (the command line restores the caller's registry after an in-process ``perfml --boards``)."""
    global _user_key
    _user_key = _file_key(tuple(files))


def registry_key() -> tuple[tuple[str, int, int], ...]:
    """What identifies the default registry now (the user's files, their modification times and
    sizes): a cache of figures looked up by board name is keyed by it too."""
    return _user_key


def user_board_files() -> tuple[str, ...]:
    """The user's boards files in use (see :func:`use_board_files`)."""
    return tuple(f for f, *_ in _user_key)


def default_registry() -> Registry:
    """The shipped registry plus the user's boards files (:func:`use_board_files`).

    Read once per set of files (registries are immutable).
    """
    return _registry_of(_user_key)


@functools.lru_cache(maxsize=4)
def _registry_of(key: tuple[tuple[str, int, int], ...]) -> Registry:
    return load_registry(_default_path(), extra=[f for f, *_ in key])


def _checked_user_file(path: str | os.PathLike[str]) -> Path:
    file = Path(path).expanduser()
    if not file.is_file():
        what = "a folder" if file.is_dir() else "not a regular file" if file.exists() else "missing"
        raise DatasetSchemaError(
            f"boards file {str(file)!r} (from ${BOARDS_ENV} or --boards) is {what}; name a TOML file "
            f"in the layout of perfml/data/boards.toml (docs/boards.md), or unset ${BOARDS_ENV}"
        )
    return file


def load_registry(
    path: str | os.PathLike[str] | None = None, *, extra: Sequence[str | os.PathLike[str]] = ()
) -> Registry:
    """Read and validate a board registry file, and the user's board files after it.

    Parameters
    ----------
    path : path-like, optional
        TOML file in the layout of ``perfml/data/boards.toml``; the shipped file when
        omitted.
    extra : sequence of path-like
        Board files of the user, same layout, read in order after ``path``. Each may
        add boards, ``[sources]`` names and ``[cc."X.Y"]`` tables; none may redefine
        what an earlier file defines.

    Raises
    ------
    DatasetSchemaError
        If a file is malformed (unknown schema version, unknown field, wrong type,
        a value without a source, undefined ``@source`` reference), missing, or
        redefines a board, alias, source name or compute capability.
    """
    files = [Path(path) if path is not None else _default_path()]
    for p in extra:  # a file named twice is read once
        file = _checked_user_file(p)
        if all(file.resolve() != f.resolve() for f in files):
            files.append(file)
    named_sources: dict[str, str] = {}
    source_origin: dict[str, str] = {}
    cc_tables: dict[str, dict[str, _Entry]] = {}
    cc_origin: dict[str, str] = {}
    boards: dict[str, Board] = {}
    origin: dict[str, str] = {}
    index: dict[str, str] = {}
    for file in files:
        where = str(file)
        # registry files written before they named their format carry only schema_version
        raw = read_versioned(file, "perfml-boards", (SCHEMA_VERSION,), error=DatasetSchemaError,
                             syntax="toml", require_format=False)
        unknown_tables = set(raw) - {"format", "schema_version", "version", "sources", "cc", "board"}
        if unknown_tables:
            raise DatasetSchemaError(
                f"{where}: unknown top-level key(s) {sorted(unknown_tables)}; a boards file has "
                "format, schema_version, [sources], [cc.\"X.Y\"] and [[board]] (docs/boards.md)"
            )
        own_sources = raw.get("sources", {})
        if not isinstance(own_sources, dict) or not all(isinstance(v, str) for v in own_sources.values()):
            raise DatasetSchemaError(f"{where}: [sources] must map short names to citation strings")
        for key in own_sources:
            if key in named_sources:
                raise DatasetSchemaError(
                    f"{where}: [sources] name {key!r} is already defined by {source_origin[key]}; "
                    "give your source another name"
                )
            source_origin[key] = where
        named_sources.update(own_sources)
        parser = _Parser(where, named_sources)

        cc_raw = raw.get("cc", {})
        if not isinstance(cc_raw, dict):
            raise DatasetSchemaError(f"{where}: [cc] must hold [cc.\"X.Y\"] tables")
        for cc, table in cc_raw.items():
            if not re.fullmatch(r"\d+\.\d+", cc):
                raise DatasetSchemaError(f"{where}: [cc.{cc!r}] is not a 'major.minor' compute capability")
            if cc in cc_tables:
                raise DatasetSchemaError(
                    f"{where}: [cc.\"{cc}\"] is already defined by {cc_origin[cc]}; state the values "
                    "that differ on your board's own entry instead (they win over the per-CC table)"
                )
            if not isinstance(table, dict):
                raise DatasetSchemaError(f"{where}: [cc.\"{cc}\"] must be a table")
            cc_tables[cc] = parser.table(table, f"[cc.\"{cc}\"]", _CC_META_KEYS)
            cc_origin[cc] = where

        board_specs = raw.get("board", [])
        if not isinstance(board_specs, list) or not all(isinstance(b, dict) for b in board_specs):
            raise DatasetSchemaError(f"{where}: boards are [[board]] tables")
        for i, spec in enumerate(board_specs):
            board = _build_board(spec, i, parser, cc_tables)
            if board.name in boards:
                again = "twice" if origin[board.name] == where else f"already by {origin[board.name]}"
                raise DatasetSchemaError(
                    f"{where}: board {board.name!r} is defined {again}; give your board another name"
                )
            for spelling in (board.name, board.full_name, board.device_name, *board.aliases):
                if not spelling:
                    continue
                # a full name may hold any text ("GeForce GTX 980 (Maxwell)"); the name it is looked up
                # by may not, even where the two are the same text
                odd = odd_name_characters(spelling) if spelling != board.full_name or spelling == board.name else ""
                if odd:
                    raise DatasetSchemaError(
                        f"{where}: name or alias {spelling!r} of board {board.name!r} has {odd!r}; board "
                        f"names and aliases hold letters, digits, spaces and {_NAME_PUNCTUATION!r} only"
                    )
                key = normalize_board_name(spelling)
                if not key:
                    raise DatasetSchemaError(
                        f"{where}: name or alias {spelling!r} of board {board.name!r} has no letter "
                        "or digit; board names are looked up by their letters and digits"
                    )
                owner = index.setdefault(key, board.name)
                if owner != board.name:
                    raise DatasetSchemaError(
                        f"{where}: name or alias {spelling!r} of board {board.name!r} "
                        f"already belongs to {owner!r} ({origin.get(owner, where)}); remove the ambiguous alias"
                    )
            boards[board.name] = board
            origin[board.name] = where
    return Registry(
        boards=MappingProxyType(boards),
        path=str(files[0]),
        _index=MappingProxyType(index),
        _cc_tables=MappingProxyType({k: MappingProxyType(v) for k, v in cc_tables.items()}),
        files=tuple(str(f) for f in files),
        origin=MappingProxyType(origin),
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
        if not text.strip():
            raise DatasetSchemaError(f"{self.where}: {context}: source is empty; name where the value comes from "
                                     "(a datasheet, a paper and table, a measurement)")
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
                f"(expected {'a string' if field_name in _STR_FIELDS else 'a number' if field_name in _FLOAT_FIELDS else 'a whole number'})"
            )
        if field_name == "compute_capability" and not (re.fullmatch(r"[1-9]\d*\.\d+", value)
                                                      and int(value.split(".")[0]) <= MAX_CC_MAJOR):
            raise DatasetSchemaError(
                f"{self.where}: {context}.compute_capability = {value!r} is not 'major.minor' with a major from 1 to "
                f"{MAX_CC_MAJOR} (e.g. \"9.0\"; CUDA's first devices are 1.0)"
            )
        if field_name in _STR_FIELDS and not value.isprintable():  # a newline or a bidi mark garbled every listing
            raise DatasetSchemaError(f"{self.where}: {context}.{field_name} = {value!r} holds a control character; "
                                     "give it on one line, in printable characters")
        if field_name not in _STR_FIELDS:
            _check_magnitude(field_name, value, f"{self.where}: {context}.{field_name}")
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
            value = self.value(field_name, alt["value"], f"{context} (an alternative)")  # same checks as the value
            out.append(Alternative(value, source, self.expand(alt.get("note"))))
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

    _check_consistency(values, f"{where}: {context}", inherited_from=cc_entry.value if cc_entry else None,
                       own=set(own))
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


def check_board_is_device(board: str, device_name: str, where: object, fix: str | None = None) -> None:
    """Refuse ``board`` as the name of measurements made on ``device_name`` when the device
    is another registry board (its name or one of its aliases or device names).

    A device the registry does not know (a synthetic device, a GPU newer than the registry)
    may be named as any board: the user's ``--board`` is then the only knowledge.

    Raises
    ------
    CharacterizationBoardError
        The device resolves to a registry board that is not ``board``.
    """
    from perfml.errors import CharacterizationBoardError

    try:
        measured = resolve_board_name(device_name)
    except UnknownBoardError:
        return
    if not same_board(board, measured):
        raise CharacterizationBoardError(
            f"{where}: the device {device_name!r} is the registry's board {measured!r}, not {board!r}; "
            + (fix or f"pass --board {measured} or leave --board out (the device names its board)"))


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
