"""Inputs of the Hong & Kim MWP/CWP model for rows of the measured runtimes.

:class:`perfml.closed_form.hongkim.HongKimModel` takes per-kernel counts (per warp, i.e. the
dynamic instruction counts of one thread) and a launch; this module builds them for
each row of ``runtimes.csv`` (board, app_id, input_size, launch, registers, shared
bytes) and the per-board hardware parameters, and runs the model.

Where every input column comes from
-----------------------------------
``comp_insts``
    ``instruction_source="description"``: the kernel description's arithmetic
    (``[model.work]`` of its sidecar in ``perfml/kernels/cuda``) turned into instructions. A fused
    multiply-add carries 2 flops in one instruction (:data:`FLOPS_PER_INSTRUCTION`
    says which apps accumulate products), other flops and every ``int_ops`` are one
    instruction each, and the shared-memory loads and stores ``sld + sst`` are added:
    the model's memory instructions are the ones that wait ``Mem_LD`` cycles on DRAM
    (seed 002 lines 246-262), and a shared-memory access, with no DRAM latency, is
    issued like a computation instruction. That is our reading of the paper (Sec. 3);
    the slides do not say it, and the repository holds the slides only, so it is to
    be checked against the paper. No address arithmetic or loop control is added: the descriptions do
    not count it and its amount depends on how nvcc unrolls the loop, so this count
    is a lower bound. The paper counted PTX instructions (seed 002 line 299), which
    include that overhead; ``instruction_source="profiles"`` is the closer match.

    ``instruction_source="profiles"``: ``e.inst_executed / warps`` minus the global
    memory instructions below, the median over the profiles of the same app, input
    size and block shape measured on the *other* boards (never the row's own board,
    so the row's measurements do not leak into its prediction).
``coal_mem_insts``, ``uncoal_mem_insts``
    Global loads plus stores per thread: ``gld + gst`` of the description, or
    ``sum(e.gld_inst_*bit) + sum(e.gst_inst_*bit)`` per thread from the other
    boards' profiles. They go wholly to ``uncoal_mem_insts`` when the description's
    ``variant`` says ``uncoalesced`` and wholly to ``coal_mem_insts`` otherwise. The
    paper gives a coalesced warp instruction one memory request of latency
    ``Mem_LD`` and spacing ``Departure_del_coal`` (seed 002 lines 248, 256); it has
    no transaction count for it, so the 2 transactions a 16x16 block's warp makes
    for its two rows are not modelled. The split is per kernel, not per access: in
    ``matMul_gpu_uncoalesced`` (seed 003 Figure 3) the ``Nd[k * N + i]`` load reads
    one word for the 16 threads of a row (one transaction) yet is counted as
    uncoalesced with the ``Md`` load (the Kepler profiles show 8.5 transactions per
    load request at 16x16, the mean of 16 and 1).
``uncoal_per_mw``
    Transactions of one uncoalesced warp instruction (:func:`uncoalesced_transactions`):
    ``min(block_x, 32)`` on compute capability >= 2.0, ``2 x min(block_x, 16)`` on 1.x,
    which coalesces per half-warp. In the uncoalesced kernels ``threadIdx.x`` walks
    the strided dimension (seed 003 Figure 3: ``Md[j * N + k]`` with
    ``j = blockIdx.x * tWidth + threadIdx.x``), so each distinct ``threadIdx.x`` of a
    coalescing group touches its own segment, while the threads that differ only in
    ``threadIdx.y`` read neighbouring words of it. A fully uncoalesced 4-byte warp
    access (``block_x >= 32``) makes 32 transactions; a 16x16 block's warp makes 16
    (32 on CC 1.x). The Kepler profiles agree: ``m.Global Load Transactions Per
    Request`` and ``m.Global Store Transactions Per Request`` of ``matrix_sum_normal``
    and ``matMul_gpu_sharedmem_uncoalesced`` are 8, 16 and 32 for 8x8, 16x16 and 32x32
    blocks on GTX-680 and Tesla-K40 (profiles_nca.csv.gz). Maxwell's nvprof counts in
    other units (8 per request even for a coalesced load), so it is no check there.
    The value has no effect when ``uncoal_mem_insts`` is 0 (``Weight_uncoal = 0``).
``threads_per_block``, ``blocks``
    ``block_x * block_y`` and ``grid_x * grid_y`` of the row; a missing (NaN) value
    falls back to the description's default launch
    (:meth:`perfml.apps.AppDescription.launch_dims`).
``active_blocks_per_sm``
    :func:`perfml.boards.occupancy` of the row's board with the row's
    ``registers_per_thread`` and ``static_smem_bytes`` (a missing value, as in every
    BSPGPU row, counts as 0, i.e. not limiting).
``synch_insts``
    Barriers per thread that wait on global memory requests, read from the kernel
    code (:data:`SYNCH_PER_THREAD`); 0 for kernels without a barrier.

The hardware of every board comes from :func:`hongkim_hardware_for`.

The code lives in :mod:`perfml.closed_form.hongkim` (``_board_hardware``,
``_runtime_inputs``, ``_profile_counts``, ``_runtimes``); this module re-exports it.

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", ISCA 2009, Sec. 3.
.. [2] Seed 002 (``../shared/seeds/002_018e9370bc0d26c6.txt``), the model's slides.
.. [3] Seed 003 (``../shared/seeds/003_75f9c814dfb7125c.txt``), Figures 3-5: the matMul
   and subSeqMax kernels.
"""

from __future__ import annotations

from perfml.closed_form.hongkim._board_hardware import coalescing_threads, hongkim_hardware_for
from perfml.closed_form.hongkim._runtime_inputs import (
    FLOPS_PER_INSTRUCTION,
    INPUT_COLUMNS,
    INSTRUCTION_SOURCES,
    SYNCH_PER_THREAD,
    hongkim_inputs,
    uncoalesced_transactions,
)
from perfml.closed_form.hongkim._runtimes import predict_hongkim_for_runtimes

__all__ = [
    "FLOPS_PER_INSTRUCTION",
    "INPUT_COLUMNS",
    "INSTRUCTION_SOURCES",
    "SYNCH_PER_THREAD",
    "coalescing_threads",
    "hongkim_hardware_for",
    "hongkim_inputs",
    "predict_hongkim_for_runtimes",
    "uncoalesced_transactions",
]

