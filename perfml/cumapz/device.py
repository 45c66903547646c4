"""The device parameters CuMAPz needs, taken from a board of the registry.

Kim & Shrivastava (2011), Sec. 5: "The detailed information about the target
hardware, such as number of channels, channel width, and number of banks, is also
needed". These come from :func:`perfml.boards.get_board`; the memory-transaction
rules that depend only on the compute capability (half-warp coalescing with 32/64/128
byte segments on 1.2/1.3, 4-byte banks) are in :data:`COALESCING_RULES`, with their
source. A needed board field that the registry leaves empty raises
:class:`~perfml.errors.MissingBoardParameterError` naming the board, the field and
the ``--param`` that supplies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfml.errors import MissingBoardParameterError, PerfmlError

__all__ = ["CumapzDevice", "COALESCING_RULES", "device_from_board", "parse_param_overrides"]


@dataclass(frozen=True)
class CoalescingRule:
    """How one compute capability turns thread addresses into memory transactions."""

    #: threads whose accesses are coalesced together (and checked for bank conflicts)
    group: int
    #: segment size (bytes) searched first, by element size in bytes
    segment_by_elem: dict[int, int]
    #: smallest transaction (bytes) a segment can be reduced to
    min_transaction: int
    #: width of one shared memory bank in bytes
    bank_bytes: int
    source: str


#: Transaction rules by compute capability ("major.minor").
COALESCING_RULES: dict[str, CoalescingRule] = {
    cc: CoalescingRule(
        group=16,
        segment_by_elem={1: 32, 2: 64, 4: 128, 8: 128, 16: 128},
        min_transaction=32,
        bank_bytes=4,
        source="NVIDIA CUDA C Programming Guide 3.1, Sec. G.3.2.2 (coalescing, "
        "compute capability 1.2 and 1.3) and G.3.3 (16 banks of 32 bits, per half-warp); "
        "Kim & Shrivastava 2011 Sec. 5.3, 5.5",
    )
    for cc in ("1.2", "1.3")
}

# Board fields used, with the --param name that supplies a missing one.
_FIELDS = (
    "memory_channels",
    "channel_interleave_bytes",
    "shared_banks",
    "max_blocks_per_sm",
    "max_threads_per_sm",
    "shared_mem_per_sm_kb",
    "warp_size",
)
_OPTIONAL_FIELDS = ("registers_per_sm",)

#: field -> (ceiling, must be a power of two, why): what a GPU can have. The coalescing and
#: bank rules (CUDA C Programming Guide 3.1, G.3.2.2 and G.3.3) are written for 32-thread
#: warps and half-warps of 16; channel interleaves and banks are powers of two (addresses
#: are split by bit fields); the ceilings are several times the largest board of the registry.
_PLAUSIBLE: dict[str, tuple[float, bool, str]] = {
    "warp_size": (32, True, "the coalescing rules are written for 32-thread warps"),
    "shared_banks": (64, True, "banks are selected by address bits"),
    "channel_interleave_bytes": (1 << 20, True, "channels are selected by address bits"),
    "memory_channels": (1024, False, "more than any GPU's memory channels"),
    "max_blocks_per_sm": (256, False, "no compute capability allows more than 32 resident blocks"),
    "max_threads_per_sm": (16384, False, "no compute capability allows more than 2048 resident threads"),
    "shared_mem_per_sm_kb": (4096, False, "no GPU has more than 256 KiB per SM"),
    "registers_per_sm": (1 << 20, False, "no GPU has more than 65536 registers per SM"),
}


@dataclass(frozen=True)
class CumapzDevice:
    """Device parameters of Kim & Shrivastava (2011), Sec. 5, for one board."""

    board: str
    compute_capability: str
    n_channels: int
    #: bytes of consecutive addresses mapped to one channel before moving to the next
    #: ("channel width is 256-byte in Tesla C1060", Sec. 5.4); board field
    #: ``channel_interleave_bytes`` (not ``memory_channel_width_bits``, the bus width
    #: of one channel)
    channel_width_bytes: int
    n_banks: int
    max_blocks_per_sm: int
    max_threads_per_sm: int
    shared_mem_per_sm_bytes: int
    registers_per_sm: int | None
    warp_size: int
    rule: CoalescingRule


def parse_param_overrides(items: list[str] | None) -> dict[str, Any]:
    """Parse ``--param field=value`` strings into a dict (values as int or float)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise PerfmlError(f"--param expects FIELD=VALUE (e.g. memory_channels=8), found {item!r}")
        key, _, value = item.partition("=")
        key = key.strip()
        if key in out:
            raise PerfmlError(f"--param {key} is given more than once; only one value would be used: give each "
                              "field once")
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                out[key] = value.strip()
    return out


def _cc_key(cc: Any) -> str:
    if cc is None:
        return ""
    if isinstance(cc, (tuple, list)):
        return f"{cc[0]}.{cc[1]}"
    if isinstance(cc, float):
        return f"{cc:.1f}"
    return str(cc)


def device_from_board(board: Any, overrides: dict[str, Any] | None = None) -> CumapzDevice:
    """Collect the CuMAPz device parameters of ``board`` (a registry ``Board``).

    ``overrides`` replaces or supplies board fields by name
    (``{"memory_channels": 8}``), as ``--param memory_channels=8`` does on the CLI.

    Raises
    ------
    MissingBoardParameterError
        If a needed field is ``None`` and not overridden.
    """
    overrides = dict(overrides or {})
    name = getattr(board, "name", str(board))
    allowed = set(_FIELDS) | set(_OPTIONAL_FIELDS) | {"compute_capability"}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        raise PerfmlError(
            f"--param {', '.join(unknown)} is not a board field CuMAPz uses; "
            f"use one of {', '.join(sorted(allowed))}"
        )

    def field(f: str, required: bool = True) -> Any:
        value = overrides.get(f, getattr(board, f, None))
        if value is None and required:
            raise MissingBoardParameterError(
                f"board {name!r} has no value for {f!r}, which CuMAPz needs; add it to the "
                f"board registry or pass --param {f}=VALUE"
                + (" (the CuMAPz 'channel width': 256 on Tesla C1060, "
                   "Kim & Shrivastava 2011 Sec. 5.4)" if f == "channel_interleave_bytes" else "")
            )
        return value

    def whole(f: str) -> int:
        value = field(f)
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not number.is_integer() or number <= 0:
            raise MissingBoardParameterError(
                f"board {name!r}: {f}={value!r} is not a positive whole number; "
                f"pass --param {f}=VALUE with an integer"
            )
        high, power_of_two, why = _PLAUSIBLE[f]
        wrong_warp = f == "warp_size" and number != 32
        if wrong_warp or number > high or (power_of_two and int(number) & (int(number) - 1)):
            shape = "32" if wrong_warp else ("a power of two " if power_of_two else "") + f"at most {int(high):,}"
            raise MissingBoardParameterError(
                f"board {name!r}: {f}={value!r} is not {shape} ({why}); pass --param {f}=VALUE "
                "with a value a GPU has")
        return int(number)

    cc = _cc_key(field("compute_capability"))
    rule = COALESCING_RULES.get(cc)
    if rule is None:
        raise MissingBoardParameterError(
            f"board {name!r} has compute capability {cc or 'unknown'}; CuMAPz's coalescing and "
            f"bank rules are known for {', '.join(COALESCING_RULES)} only (the GT200 generation "
            "of Kim & Shrivastava 2011); pass --param compute_capability=1.3 to analyse as GT200"
        )
    regs = field("registers_per_sm", required=False)
    return CumapzDevice(
        board=name,
        compute_capability=cc,
        n_channels=whole("memory_channels"),
        channel_width_bytes=whole("channel_interleave_bytes"),
        n_banks=whole("shared_banks"),
        max_blocks_per_sm=whole("max_blocks_per_sm"),
        max_threads_per_sm=whole("max_threads_per_sm"),
        shared_mem_per_sm_bytes=int(round(float(whole("shared_mem_per_sm_kb")) * 1024)),
        registers_per_sm=None if regs is None else whole("registers_per_sm"),
        warp_size=whole("warp_size"),
        rule=rule,
    )
