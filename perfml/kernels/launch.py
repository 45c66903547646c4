"""A resolved kernel launch: grid, block and dynamic shared memory.

:class:`LaunchConfig` is what a sidecar's ``[launch]`` expressions evaluate to; its
:meth:`~LaunchConfig.names` are the launch names sidecar expressions may use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["LAUNCH_NAMES", "LaunchConfig"]

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
