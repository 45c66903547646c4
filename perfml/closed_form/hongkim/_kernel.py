"""Per-kernel inputs of the MWP/CWP model: :class:`HongKimKernel` and its domain check.

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", ISCA 2009, Sec. 3.
.. [2] Seed 002 (``../shared/seeds/002_018e9370bc0d26c6.txt``), the model's slides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

__all__ = ["FEATURE_COLUMNS", "OPTIONAL_FEATURE_COLUMNS", "HongKimKernel", "check_kernel_columns"]

#: Columns :class:`HongKimModel` reads from ``X``, in the order used for a bare 2-D array.
#: All counts are per warp (= per thread: the dynamic instruction counts of one thread).
FEATURE_COLUMNS: tuple[str, ...] = (
    "comp_insts",  # #Comp_insts: non-memory instructions per warp
    "coal_mem_insts",  # #Coal_Mem_insts: coalesced global memory instructions per warp
    "uncoal_mem_insts",  # #Uncoal_Mem_insts: uncoalesced global memory instructions per warp
    "uncoal_per_mw",  # #Uncoal_per_mw: memory transactions per uncoalesced warp instruction
    "threads_per_block",  # #Threads_per_block
    "blocks",  # #Blocks in the grid
    "active_blocks_per_sm",  # #Active_blocks_per_SM (occupancy, in blocks)
)
#: Optional columns (default 0 when absent); appended after FEATURE_COLUMNS in an array.
OPTIONAL_FEATURE_COLUMNS: tuple[str, ...] = (
    "synch_insts",  # #Synch_insts: __syncthreads() per warp
)


@dataclass(frozen=True)
class HongKimKernel:
    """Per-kernel inputs of the MWP/CWP model (counts per warp, i.e. per thread).

    Parameters
    ----------
    comp_insts : float
        ``#Comp_insts``: non-memory instructions.
    coal_mem_insts, uncoal_mem_insts : float
        ``#Coal_Mem_insts`` / ``#Uncoal_Mem_insts``: global memory instructions.
        Their sum ``#Mem_insts`` must be > 0: the model is built on memory periods.
    uncoal_per_mw : float
        ``#Uncoal_per_mw``: transactions an uncoalesced warp instruction generates (>= 1).
    threads_per_block, blocks, active_blocks_per_sm : int
        ``#Threads_per_block``, ``#Blocks``, ``#Active_blocks_per_SM``.
    synch_insts : float, default 0
        ``#Synch_insts``: barriers per warp.
    """

    comp_insts: float
    coal_mem_insts: float
    uncoal_mem_insts: float
    uncoal_per_mw: float
    threads_per_block: int
    blocks: int
    active_blocks_per_sm: int
    synch_insts: float = 0.0

    def __post_init__(self) -> None:
        check_kernel_columns({f.name: np.asarray(getattr(self, f.name), dtype=float)
                               for f in fields(self)}, error=ValueError, where="HongKimKernel")

    @classmethod
    def from_total_insts(cls, *, total_insts: float, coal_mem_insts: float,
                         uncoal_mem_insts: float, **kwargs: Any) -> "HongKimKernel":
        """Build from ``#Total_insts`` (= #Comp_insts + #Mem_insts), as profilers count."""
        comp = total_insts - coal_mem_insts - uncoal_mem_insts
        return cls(comp_insts=comp, coal_mem_insts=coal_mem_insts,
                   uncoal_mem_insts=uncoal_mem_insts, **kwargs)

    @property
    def mem_insts(self) -> float:
        """``#Mem_insts = #Coal_Mem_insts + #Uncoal_Mem_insts``."""
        return self.coal_mem_insts + self.uncoal_mem_insts

    @property
    def total_insts(self) -> float:
        """``#Total_insts = #Comp_insts + #Mem_insts``."""
        return self.comp_insts + self.mem_insts


def check_kernel_columns(cols: Mapping[str, np.ndarray], *, error: type[Exception],
                          where: str) -> None:
    """Raise ``error`` unless the kernel inputs are finite and inside the model's domain."""
    rules = {
        "comp_insts": (0.0, ">= 0"),
        "coal_mem_insts": (0.0, ">= 0"),
        "uncoal_mem_insts": (0.0, ">= 0"),
        "synch_insts": (0.0, ">= 0"),
        "uncoal_per_mw": (1.0, ">= 1"),
        "threads_per_block": (1.0, ">= 1"),
        "blocks": (1.0, ">= 1"),
        "active_blocks_per_sm": (1.0, ">= 1"),
    }
    # a launch's counts are whole numbers within CUDA's limits (C Programming Guide, "Technical
    # Specifications per Compute Capability": at most 1024 threads per block and 32 resident
    # blocks per SM on any compute capability); 4096 threads or 2.5 blocks were modelled
    whole = {"threads_per_block": 1024.0, "blocks": math.inf, "active_blocks_per_sm": 32.0}  # a grid's blocks: x*y*z
    for name, (low, text) in rules.items():
        if name not in cols:
            continue
        v = np.atleast_1d(np.asarray(cols[name], dtype=float))
        bad = ~np.isfinite(v) | (v < low)
        if name in whole:
            with np.errstate(invalid="ignore"):
                bad |= (v > whole[name]) | (np.mod(np.where(np.isfinite(v), v, 0.0), 1) != 0)
            text = f"a whole number {text}" + (f", at most {whole[name]:.0f}" if math.isfinite(whole[name]) else "")
        if np.any(bad):
            first = np.flatnonzero(bad)[0]
            raise error(f"{where}: {name} must be finite and {text}, found "
                        f"{float(v[first])!r} (row {first}).")
    mem = cols["coal_mem_insts"] + cols["uncoal_mem_insts"]
    if np.any(mem <= 0):
        first = np.flatnonzero(np.atleast_1d(mem <= 0))[0]
        raise error(f"{where}: coal_mem_insts + uncoal_mem_insts must be > 0 (row {first}); "
                    "the MWP/CWP model needs at least one global memory instruction per warp.")

