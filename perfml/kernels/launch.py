"""A resolved kernel launch: grid, block and dynamic shared memory.

:class:`LaunchConfig` is what a sidecar's ``[launch]`` expressions evaluate to; its
:meth:`~LaunchConfig.names` are the launch names sidecar expressions may use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["CUDA_LIMITS", "LAUNCH_NAMES", "LaunchConfig"]

#: launch limits of every compute capability perfml targets (5.0 and newer): CUDA C++
#: Programming Guide, "Technical Specifications per Compute Capability" (max threads
#: per block; max x/y/z of a block and of a grid) and the largest dynamic shared memory
#: a block may opt into (227 KiB, compute capability 9.0).
CUDA_LIMITS = {
    "threads_per_block": 1024,
    "block": (1024, 1024, 64),
    "grid": (2**31 - 1, 65535, 65535),
    "shared_bytes": 227 * 1024,
}

#: names a sidecar expression may use besides the family's parameters
LAUNCH_NAMES = ("sms", "threads", "blocks", "threads_per_block", "warps",
                "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


@dataclass(frozen=True)
class LaunchConfig:
    """A resolved launch: grid and block dimensions and dynamic shared memory."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def threads(self) -> int:
        return self.blocks * self.threads_per_block

    def names(self) -> dict[str, int]:
        """The launch names available to sidecar expressions (``sms`` excluded)."""
        return {
            "threads": self.threads,
            "blocks": self.blocks,
            "threads_per_block": self.threads_per_block,
            "warps": self.blocks * math.ceil(self.threads_per_block / 32),
            "grid_x": self.grid[0],
            "grid_y": self.grid[1],
            "grid_z": self.grid[2],
            "block_x": self.block[0],
            "block_y": self.block[1],
            "block_z": self.block[2],
        }

    def cuda_limit_violation(self) -> str | None:
        """What breaks CUDA's launch limits (:data:`CUDA_LIMITS`), or None for a valid launch."""
        if any(d < 1 for d in (*self.grid, *self.block)):
            return f"grid {self.grid} and block {self.block} must be positive"
        if self.threads_per_block > CUDA_LIMITS["threads_per_block"]:
            return (f"block {self.block} has {self.threads_per_block} threads, more than "
                    f"CUDA's {CUDA_LIMITS['threads_per_block']}")
        for what, dims in (("block", self.block), ("grid", self.grid)):
            for axis, value, limit in zip("xyz", dims, CUDA_LIMITS[what]):
                if value > limit:
                    return f"{what} {axis} = {value} is above CUDA's limit of {limit}"
        if not 0 <= self.shared_bytes <= CUDA_LIMITS["shared_bytes"]:
            return (f"shared_bytes = {self.shared_bytes} is outside 0..{CUDA_LIMITS['shared_bytes']} "
                    "(the most a block may use)")
        return None
