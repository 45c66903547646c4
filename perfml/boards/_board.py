"""The :class:`Board` data model: one GPU board, every value with its source.

A board is plain data. Formulas over it (peak FLOP/s, bandwidth, occupancy) live in
:mod:`perfml.boards._derived`; loading and name lookup in :mod:`perfml.boards._registry`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from perfml.errors import MissingBoardParameterError

__all__ = ["Alternative", "Board", "FIELD_UNITS", "SPEC_FIELDS"]


@dataclass(frozen=True)
class Alternative:
    """A statement about a board field that disagrees with (or duplicates) the value used.

    Attributes
    ----------
    value : object
        The value the source states.
    source : str
        Where the statement comes from.
    note : str or None
        Why it is not the value used, or how it relates to it.
    """

    value: Any
    source: str
    note: str | None = None


#: unit of every specification field ("" for dimensionless counts and names)
FIELD_UNITS: Mapping[str, str] = MappingProxyType(
    {
        "full_name": "",
        "device_name": "",
        "architecture": "",
        "compute_capability": "",
        "sms": "SMs",
        "fp32_cores_per_sm": "FP32 FMA/clock/SM",
        "fp64_units_per_sm": "FP64 FMA/clock/SM",
        "fp16_units_per_sm": "FP16 FMA/clock/SM",
        "sfu_per_sm": "SFU ops/clock/SM",
        "ldst_units_per_sm": "LD/ST units/SM",
        "base_clock_mhz": "MHz",
        "boost_clock_mhz": "MHz",
        "memory_clock_mhz": "MHz (deviceQuery convention)",
        "bus_width_bits": "bit",
        "memory_bandwidth_gbs": "GB/s",
        "memory_type": "",
        "global_mem_bytes": "bytes",
        "memory_channels": "channels",
        "memory_channel_width_bits": "bit",
        "channel_interleave_bytes": "bytes",
        "l1_shared_kb_per_sm": "KiB",
        "l1_cache_kb_per_sm": "KiB",
        "shared_mem_per_sm_kb": "KiB",
        "shared_mem_per_block_kb": "KiB",
        "shared_banks": "banks",
        "l2_bytes": "bytes",
        "registers_per_sm": "32-bit registers",
        "registers_per_block": "32-bit registers",
        "max_registers_per_thread": "32-bit registers",
        "max_threads_per_sm": "threads",
        "max_threads_per_block": "threads",
        "max_warps_per_sm": "warps",
        "max_blocks_per_sm": "blocks",
        "warp_size": "threads",
        "register_alloc_unit": "registers",
        "register_alloc_granularity": "",
        "warp_alloc_granularity": "warps",
        "shared_mem_alloc_unit_bytes": "bytes",
        "reserved_shared_mem_per_block_bytes": "bytes",
        "tdp_w": "W",
        "warp_issue_per_clock": "warp instructions/clock/SM (single issue)",
    }
)

#: specification fields, in display order (every Board attribute that carries a source)
SPEC_FIELDS: tuple[str, ...] = tuple(FIELD_UNITS)

#: where boards are described: the shipped registry, or a boards file of the user's
BOARD_FILES = "perfml/data/boards.toml or a boards file of your own ($PERFML_BOARDS or `perfml --boards FILE`; docs/boards.md)"

# Where to look when a value is missing; used in MissingBoardParameterError messages.
_FIX = (
    f"add it with its source to the board's entry ({BOARD_FILES}) "
    "(or to the [cc.\"X.Y\"] table when it holds for the whole compute capability)"
)


@dataclass(frozen=True)
class Board:
    """One GPU board: specification values, each with its source.

    Values that no source states are ``None``; perfml never invents them. Build boards
    with :func:`perfml.boards.get_board` (registry) or :func:`perfml.boards.board_from_device`.

    Attributes
    ----------
    name : str
        Canonical registry name, e.g. ``"GTX-680"``.
    full_name : str
        Marketing name.
    compute_capability : str or None
        ``"major.minor"``, e.g. ``"3.5"``.
    sms : int or None
        Streaming multiprocessors.
    fp32_cores_per_sm, fp64_units_per_sm, fp16_units_per_sm, sfu_per_sm : int or None
        Results per clock per SM of the FP32 / FP64 / FP16 (non-tensor) FMA pipes and
        of the special-function units (CUDA Programming Guide throughput table).
    ldst_units_per_sm : int or None
        Load/store units per SM (architecture whitepapers).
    base_clock_mhz, boost_clock_mhz : int or None
        Base clock and highest default clock (see the registry header for conventions).
    memory_clock_mhz : int or None
        Memory clock in the deviceQuery convention (half the effective data rate).
    bus_width_bits : int or None
        Memory bus width.
    memory_bandwidth_gbs : float or None
        Peak DRAM bandwidth stated by a source, GB/s.
    l1_shared_kb_per_sm : int or None
        Size of the unified L1/shared-memory array per SM (KiB); None where there is none.
    l1_cache_kb_per_sm : int or None
        L1 data cache per SM in the configuration a source states (KiB).
    shared_mem_per_sm_kb, shared_mem_per_block_kb : int or None
        Maximum shared memory per SM and per block (KiB).
    shared_banks : int or None
        Shared-memory banks.
    l2_bytes : int or None
        L2 cache size.
    registers_per_sm, registers_per_block, max_registers_per_thread : int or None
        Register file limits (32-bit registers).
    max_threads_per_sm, max_threads_per_block, max_warps_per_sm, max_blocks_per_sm : int or None
        Residency limits.
    warp_size : int or None
        Threads per warp.
    register_alloc_unit, register_alloc_granularity, warp_alloc_granularity : optional
        CUDA occupancy calculator allocation rules (granularity ``"warp"`` or ``"block"``).
    shared_mem_alloc_unit_bytes, reserved_shared_mem_per_block_bytes : int or None
        Shared-memory allocation unit and the per-block system reservation.
    tdp_w : int or None
        Thermal design power / maximum board power (W).
    warp_issue_per_clock : float or None
        Warp instructions the SM issues per clock when every warp offers one instruction
        at a time (no instruction-level parallelism: Kepler's and GF104's pairs need two
        independent instructions of one warp). Sets the issue-limited FP32 rate
        (:func:`perfml.boards.issue_limited_flops`).
    memory_type : str or None
        e.g. ``"GDDR5"``, ``"HBM3"``.
    global_mem_bytes : int or None
        Device memory.
    memory_channels, memory_channel_width_bits, channel_interleave_bytes : int or None
        DRAM partitions, their width, and the address interleave between them.
    aliases : tuple of str
        Other spellings that resolve to this board.
    sources : Mapping[str, str]
        Source of every field that has a value.
    alternatives : Mapping[str, tuple[Alternative, ...]]
        Other statements about a field (conflicting sources, per-CC defaults overridden).
    notes : Mapping[str, str]
        Why a value was chosen, or how to read it.
    """

    name: str
    full_name: str
    device_name: str | None = None
    architecture: str | None = None
    compute_capability: str | None = None
    sms: int | None = None
    fp32_cores_per_sm: int | None = None
    fp64_units_per_sm: int | None = None
    fp16_units_per_sm: int | None = None
    sfu_per_sm: int | None = None
    ldst_units_per_sm: int | None = None
    base_clock_mhz: int | None = None
    boost_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    bus_width_bits: int | None = None
    memory_bandwidth_gbs: float | None = None
    memory_type: str | None = None
    global_mem_bytes: int | None = None
    memory_channels: int | None = None
    memory_channel_width_bits: int | None = None
    channel_interleave_bytes: int | None = None
    l1_shared_kb_per_sm: int | None = None
    l1_cache_kb_per_sm: int | None = None
    shared_mem_per_sm_kb: int | None = None
    shared_mem_per_block_kb: int | None = None
    shared_banks: int | None = None
    l2_bytes: int | None = None
    registers_per_sm: int | None = None
    registers_per_block: int | None = None
    max_registers_per_thread: int | None = None
    max_threads_per_sm: int | None = None
    max_threads_per_block: int | None = None
    max_warps_per_sm: int | None = None
    max_blocks_per_sm: int | None = None
    warp_size: int | None = None
    register_alloc_unit: int | None = None
    register_alloc_granularity: str | None = None
    warp_alloc_granularity: int | None = None
    shared_mem_alloc_unit_bytes: int | None = None
    reserved_shared_mem_per_block_bytes: int | None = None
    tdp_w: int | None = None
    warp_issue_per_clock: float | None = None
    aliases: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    alternatives: Mapping[str, tuple[Alternative, ...]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    notes: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        # Freeze the mappings so a Board cannot be changed through them.
        for name in ("sources", "alternatives", "notes"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    # ------------------------------------------------------------------ properties
    @property
    def total_cores(self) -> int | None:
        """FP32 CUDA cores of the board (``sms * fp32_cores_per_sm``), or None if unknown."""
        if self.sms is None or self.fp32_cores_per_sm is None:
            return None
        return self.sms * self.fp32_cores_per_sm

    @property
    def cc_major_minor(self) -> tuple[int, int] | None:
        """Compute capability as ``(major, minor)`` integers, or None if unknown."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    # ------------------------------------------------------------------ access
    def value_source(self, field_name: str) -> str | None:
        """Return the source of a field's value (None when the field has no value).

        Parameters
        ----------
        field_name : str
            A specification field, e.g. ``"boost_clock_mhz"``.

        Raises
        ------
        AttributeError
            If ``field_name`` is not a Board specification field.
        """
        if field_name not in FIELD_UNITS:
            raise AttributeError(
                f"Board has no specification field {field_name!r}; "
                f"expected one of: {', '.join(SPEC_FIELDS)}"
            )
        return self.sources.get(field_name)

    def require(self, field_name: str, *, needed_for: str | None = None) -> Any:
        """Return a field's value, raising if the registry leaves it empty.

        Parameters
        ----------
        field_name : str
            A specification field.
        needed_for : str, optional
            What needs the value (named in the error message).

        Raises
        ------
        MissingBoardParameterError
            If the value is None; the message names the board, the field and the fix.
        """
        value = getattr(self, field_name)
        if value is None:
            purpose = f" (needed for {needed_for})" if needed_for else ""
            raise MissingBoardParameterError(
                f"board {self.name!r} has no value for {field_name!r}{purpose}; {_FIX}"
            )
        return value

    def spec_items(self) -> list[tuple[str, Any, str, str | None]]:
        """Every specification field as ``(field, value, unit, source)``, in display order."""
        return [(f, getattr(self, f), FIELD_UNITS[f], self.sources.get(f)) for f in SPEC_FIELDS]

    def to_dict(self) -> dict[str, Any]:
        """Plain-data view (JSON-serialisable): values, units, sources, alternatives, notes."""
        fields: dict[str, Any] = {}
        for f, value, unit, source in self.spec_items():
            entry: dict[str, Any] = {"value": value, "unit": unit, "source": source}
            if f in self.notes:
                entry["note"] = self.notes[f]
            if f in self.alternatives:
                entry["alternatives"] = [dataclasses.asdict(a) for a in self.alternatives[f]]
            fields[f] = entry
        extra = {
            k: [dataclasses.asdict(a) for a in v]
            for k, v in self.alternatives.items()
            if k not in FIELD_UNITS
        }
        out: dict[str, Any] = {
            "name": self.name,
            "aliases": list(self.aliases),
            "total_cores": self.total_cores,
            "fields": fields,
        }
        if extra:
            out["other_alternatives"] = extra
        return out
