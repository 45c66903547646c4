"""Theoretical residency of a launch: blocks and warps an SM holds at once.

Used by the denominator of LOADBALANC_WARP ("(BLOCKSIZE/32) x #Blocks_per_SM", seed 000,
Sec. IV-D) and by ``occ`` of THROUGHPUT/OCCUPANCY (Sec. IV-H), which "depends on the
kernel configuration (block size, grid size and amount of shared memory)".

The per-SM limits are the CUDA occupancy calculator rules of
:func:`perfml.boards.occupancy` (board registry values); on top of them, a grid too
small to fill the device caps the blocks mapped to one SM at ``ceil(grid / |SM|)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Residency", "theoretical_residency"]


@dataclass(frozen=True)
class Residency:
    """Blocks and warps resident per SM for a launch, and what limits them."""

    blocks_per_sm: int
    warps_per_block: int
    max_warps_per_sm: int
    limited_by: str

    @property
    def warps_per_sm(self) -> int:
        """Theoretical resident warps per SM, ``(BLOCKSIZE/32) x #Blocks_per_SM``."""
        return self.blocks_per_sm * self.warps_per_block

    @property
    def occupancy(self) -> float:
        """Theoretical occupancy ``occ`` in [0, 1]."""
        return self.warps_per_sm / self.max_warps_per_sm


def theoretical_residency(
    board: Any,
    *,
    threads_per_block: int,
    grid_blocks: int,
    registers_per_thread: int = 0,
    static_smem_bytes: int = 0,
) -> Residency:
    """Blocks per SM of a launch: occupancy-calculator limits, capped by the grid size.

    ``#Blocks_per_SM`` of seed 000 Sec. IV-D is "the number of blocks mapped to each single
    SM": the minimum of the warp, block, register and shared-memory limits
    (:func:`perfml.boards.occupancy`) and of ``ceil(grid_blocks / sms)``.
    """
    from perfml.boards import occupancy

    occ = occupancy(board, int(threads_per_block), int(registers_per_thread), int(static_smem_bytes))
    sms = board.require("sms", needed_for="blocks per SM")
    grid_cap = max(1, math.ceil(grid_blocks / sms))
    blocks, limited_by = occ.active_blocks_per_sm, occ.limited_by
    if grid_cap < blocks:
        blocks, limited_by = grid_cap, "grid size"
    return Residency(
        blocks_per_sm=max(1, int(blocks)),
        warps_per_block=int(occ.warps_per_block),
        max_warps_per_sm=int(board.require("max_warps_per_sm", needed_for="occupancy")),
        limited_by=limited_by,
    )
