"""The CuMAPz performance factors, equations (1)-(7) of Kim & Shrivastava (2011).

Each function takes the counts the warp-level emulator accumulates
(:class:`perfml.cumapz.emulator.MemoryTrace`) and returns one factor. Where the
paper's equation is undefined or ambiguous, the docstring says what is done and why.

References
----------
Y. Kim and A. Shrivastava, "Memory Performance Estimation of CUDA Programs",
ACM Trans. Embedded Computing Systems (2011) -- seed 004 of the perfml issue.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "data_reuse",
    "lat_hiding",
    "bw_util",
    "n_blk_to_check",
    "channel_skew_of_counts",
    "ch_skew",
    "shm_eff",
    "branch_eff",
    "occupancy",
    "NO_BUFFER_POLICIES",
]

#: How eq. (2) treats a kernel with no data fetch reference (n_shm_load = 0):
#: ``"literal"`` keeps the equation as printed (lat_hiding = 0, hence MPE = 0);
#: ``"one"`` counts the kernel's own loads as one independent load (lat_hiding is then
#: set by occupancy alone). The paper models only shared-memory versions.
NO_BUFFER_POLICIES = ("literal", "one")


def data_reuse(bytes_shmem: int, bytes_buffered: int) -> float:
    """Degree of data reuse, eq. (1): ``bytes_shmem / bytes_buffered``.

    ``bytes_shmem`` is the bytes read from (or written to) shared memory buffers by
    the global references whose addresses are buffered; ``bytes_buffered`` is the bytes
    *transferred* (after coalescing, Sec. 5.3) by the data fetch loads. A kernel
    without buffers (0/0) gets 1.0, the value of a buffer whose every element is read
    exactly once, i.e. no reuse.
    """
    if bytes_buffered == 0:
        return 1.0
    return bytes_shmem / bytes_buffered


def occupancy(
    *,
    threads_per_block: int,
    warp_size: int,
    shared_bytes_per_block: int,
    registers_per_thread: int | None,
    max_blocks_per_sm: int,
    max_threads_per_sm: int,
    shared_mem_per_sm_bytes: int,
    registers_per_sm: int | None,
) -> tuple[int, float]:
    """Resident blocks per SM and occupancy in percent (CUDA occupancy calculator).

    Blocks per SM is the minimum of the block limit, the thread limit (blocks rounded
    up to whole warps), the shared-memory limit and, when the description gives
    ``registers_per_thread`` and the board ``registers_per_sm``, the register limit.
    Allocation granularities are not modelled. Returns ``(max_blks, occupancy_pct)``;
    ``max_blks`` is the ``max_blks`` of eq. (4).
    """
    warps = -(-threads_per_block // warp_size)
    threads_alloc = warps * warp_size
    limits = [max_blocks_per_sm, max_threads_per_sm // threads_alloc]
    if shared_bytes_per_block > 0:
        limits.append(shared_mem_per_sm_bytes // shared_bytes_per_block)
    if registers_per_thread and registers_per_sm:
        limits.append(registers_per_sm // (registers_per_thread * threads_alloc))
    blocks = max(0, min(limits))
    return blocks, 100.0 * blocks * threads_alloc / max_threads_per_sm


def lat_hiding(occupancy_pct: float, n_shm_load: int, policy: str = "literal") -> float:
    """Degree of global-memory latency hiding, eq. (2).

    ``lat_hiding = MIN(Occupancy, 50) / 50 * n_shm_load ** (1/2)``, with Occupancy in
    percent and ``n_shm_load`` the number of load instructions for shared memory data
    fetch a thread executes (fetch references times their loop trip counts).
    ``policy`` (:data:`NO_BUFFER_POLICIES`) decides the case ``n_shm_load == 0``.
    """
    if policy not in NO_BUFFER_POLICIES:
        raise ValueError(f"policy must be one of {NO_BUFFER_POLICIES}, not {policy!r}")
    n = n_shm_load if (n_shm_load > 0 or policy == "literal") else 1
    return min(occupancy_pct, 50.0) / 50.0 * math.sqrt(n)


def bw_util(bytes_access: int, bytes_tr: int) -> float:
    """Global memory bandwidth utilisation, eq. (3): ``bytes_access / bytes_tr``.

    Sums over every global access that reaches global memory (data fetch loads and the
    references that miss the buffers), per half-warp: ``bytes_access`` counts the
    distinct bytes requested, ``bytes_tr`` the bytes of the coalesced transactions. A
    kernel without global accesses gets 1.0.
    """
    if bytes_tr == 0:
        return 1.0
    return bytes_access / bytes_tr


def n_blk_to_check(
    n_channels: int, max_blks: int, channel_width_bytes: int, block_dim_x: int, elem_bytes: int
) -> int:
    """Blocks whose accesses are checked for channel skew, eq. (4).

    ``n_channels * MIN(max_blks, channel_width / (bDim.X * elem_size))``, rounded up to
    a whole block; ``elem_size`` is the largest element size of the global arrays.
    """
    ratio = channel_width_bytes / (block_dim_x * elem_bytes)
    return max(1, math.ceil(n_channels * min(max_blks, ratio)))


def channel_skew_of_counts(blocks_per_channel: np.ndarray, n_channels: int) -> float:
    """Channel skew of one access instruction, eq. (5).

    ``max_n_block_per_ch / MAX(1, min_n_block_per_ch)`` over the channels that received
    at least one of the checked blocks. The paper sets the skew to ``n_channels`` "when
    max and min are the same, which means all the accesses are focused on one
    channel"; equal counts spread over several channels are the ideal case, so the
    ``n_channels`` value is given only when a single channel is used.
    """
    counts = np.asarray(blocks_per_channel)
    nonzero = counts[counts > 0]
    if nonzero.size == 0:
        return 1.0
    if nonzero.size == 1:
        return float(n_channels)
    return float(nonzero.max()) / max(1.0, float(nonzero.min()))


def ch_skew(skews: Sequence[float], weights: Sequence[float]) -> float:
    """Combine per-instruction skews (eq. 5) into the kernel's ``ch_skew``.

    The paper computes the skew of the addresses requested while the first
    ``n_blk_to_check`` blocks run, one global memory instruction at a time, without
    saying how instructions combine. Each instruction's time scales with its
    transferred bytes times its skew, so the kernel's skew is their byte-weighted mean.
    """
    w = np.asarray(weights, dtype=float)
    if w.size == 0 or w.sum() == 0:
        return 1.0
    return float(np.dot(np.asarray(skews, dtype=float), w) / w.sum())


def shm_eff(n_requests: int, n_serialized: int) -> float:
    """Shared memory access efficiency, eq. (6).

    The paper's ``(n_half_warp * n_buffer) / n_bk_conflict`` with ``shm_eff = 1`` when
    there is no conflict. Read so that it stays in (0, 1]: ``n_requests`` counts
    half-warp shared memory requests (fetch stores and buffered reads/writes), and
    ``n_serialized`` the sum of their serialisation degrees (K for a K-way bank
    conflict, 1 when conflict-free). The result is 1 / (mean serialisation).
    """
    if n_serialized == 0:
        return 1.0
    return n_requests / n_serialized


def branch_eff(n_slots: int, n_path: int) -> float:
    """Branch divergence efficiency, eq. (7): ``n_warp / n_path``.

    ``n_path`` sums, over references r, buffers b and warps w, 2 when the active
    threads of w split between buffer b and another source for r, else 1. The
    paper's numerator ``n_warp`` is replaced by ``n_slots``, the number of (r, b, w)
    terms, so that a kernel without divergence gets exactly 1 (with the literal
    ``n_warp`` the factor would shrink with |R| x |B| even without divergence).
    """
    if n_path == 0:
        return 1.0
    return n_slots / n_path
