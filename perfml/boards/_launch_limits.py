"""CUDA's launch limits: the largest block and grid a kernel launch may have.

CUDA C++ Programming Guide, "Features and Technical Specifications", table of technical
specifications per compute capability: for compute capability >= 3.0 a block has at most
1024 threads along x and y and 64 along z, a grid at most 2**31 - 1 blocks along x and
65535 along y and z; before 3.0, grid_x is limited to 65535 as well. The threads of one
block are limited by the board's ``max_threads_per_block`` (registry).
"""

from __future__ import annotations

#: per-dimension block limits (compute capability >= 3.0; x and y were 512 before 2.0,
#: where the registry's max_threads_per_block of 512 binds first)
MAX_BLOCK = {"block_x": 1024, "block_y": 1024, "block_z": 64}
#: per-dimension grid limits (compute capability >= 3.0)
MAX_GRID = {"grid_x": 2**31 - 1, "grid_y": 65535, "grid_z": 65535}
#: before compute capability 3.0 grid_x is limited to 65535 as well
MAX_GRID_X_BEFORE_CC3 = 65535
#: threads of one block, all dimensions together, on every compute capability from 2.0 (512
#: before it, where the registry's max_threads_per_block gives it): the same table's "Maximum
#: number of threads per block"; a board entry above it is refused (perfml.boards._registry)
MAX_THREADS_PER_BLOCK = 1024
