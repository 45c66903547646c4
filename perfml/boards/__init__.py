"""GPU boards: a registry of specifications with sources, and figures derived from them.

The registry (``perfml/data/boards.toml``) holds every board of the seed papers and of
the shared datasets plus current boards; each value carries its source, conflicting
statements are kept as alternatives, and unknown values stay ``None``.

Examples
--------
>>> from perfml.boards import get_board, peak_flops, occupancy
>>> board = get_board("GeForce GTX 680")
>>> round(peak_flops(board) / 1e9, 3)
3250.176
>>> occupancy(board, threads_per_block=256, registers_per_thread=32).occupancy
1.0
"""

from perfml.boards._board import FIELD_UNITS, SPEC_FIELDS, Alternative, Board
from perfml.boards._derived import (
    Occupancy,
    issue_limited_flops,
    l2_resident_roofline_ms,
    max_resident_warps,
    occupancy,
    peak_bandwidth,
    peak_flops,
    peak_warp_instructions,
    wave_size,
)
from perfml.boards._registry import (
    Registry,
    check_board_is_device,
    default_registry,
    get_board,
    list_boards,
    load_registry,
    resolve_board_name,
    same_board,
    use_board_files,
    user_board_files,
)
from perfml.boards._device import board_from_device
from perfml.boards._launch_limits import MAX_BLOCK, MAX_GRID, MAX_GRID_X_BEFORE_CC3
from perfml.boards._generation import board_architecture, board_generation

__all__ = [
    "Alternative",
    "Board",
    "FIELD_UNITS",
    "MAX_BLOCK",
    "MAX_GRID",
    "MAX_GRID_X_BEFORE_CC3",
    "Occupancy",
    "Registry",
    "SPEC_FIELDS",
    "board_architecture",
    "board_from_device",
    "check_board_is_device",
    "default_registry",
    "board_generation",
    "get_board",
    "issue_limited_flops",
    "peak_warp_instructions",
    "l2_resident_roofline_ms",
    "list_boards",
    "load_registry",
    "max_resident_warps",
    "occupancy",
    "peak_bandwidth",
    "use_board_files",
    "user_board_files",
    "peak_flops",
    "resolve_board_name",
    "same_board",
    "wave_size",
]
