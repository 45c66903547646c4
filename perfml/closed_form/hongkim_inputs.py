"""Inputs of the Hong & Kim MWP/CWP model for rows of the measured runtimes.

:class:`perfml.closed_form.hongkim.HongKimModel` takes per-kernel counts (per warp, i.e. the
dynamic instruction counts of one thread) and a launch; this module builds them for
each row of ``runtimes.csv`` (board, app_id, input_size, launch, registers, shared
bytes) and the per-board hardware parameters, and runs the model.

Where every input column comes from
-----------------------------------
``comp_insts``
    ``instruction_source="description"``: the kernel description's arithmetic
    (``perfml/data/apps.toml`` ``[work]``) turned into instructions. A fused
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

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", ISCA 2009, Sec. 3.
.. [2] Seed 002 (``../shared/seeds/002_018e9370bc0d26c6.txt``), the model's slides.
.. [3] Seed 003 (``../shared/seeds/003_75f9c814dfb7125c.txt``), Figures 3-5: the matMul
   and subSeqMax kernels.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from perfml._expr import evaluate as evaluate_expression
from perfml.errors import MissingMetricError, PerfmlError
from perfml.closed_form.hongkim import FEATURE_COLUMNS, HongKimHardware, HongKimModel
from perfml.closed_form._inputs import check_frame

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

INSTRUCTION_SOURCES: tuple[str, ...] = ("description", "profiles")

#: Columns of :func:`hongkim_inputs`: the model's inputs, then ``note`` ("" when the row
#: is described, else why its inputs are NaN).
INPUT_COLUMNS: tuple[str, ...] = FEATURE_COLUMNS + ("synch_insts", "note")

#: Flops per arithmetic instruction, by app family. 2 where the kernel accumulates
#: products, which nvcc emits as one FFMA: matMul ``Pvalue += Md[..] * Nd[..]`` (seed 003
#: Figures 3-4, "each thread performs N single precision fused multiply-add"), dotProd
#: (per-thread sum of products, apps.toml [dotProd]). 1 for the additions of matSum and
#: vectorAdd (``C = A + B``). An app not listed counts one instruction per flop.
FLOPS_PER_INSTRUCTION: Mapping[str, float] = MappingProxyType(
    {"matMul": 2.0, "dotProd": 2.0, "matSum": 1.0, "vectorAdd": 1.0, "subSeqMax": 1.0}
)

#: ``#Synch_insts`` per thread, by app_id, as expressions of N, bx, by, threads
#: (perfml._expr): the ``__syncthreads()`` that wait on the block's global memory
#: requests. The paper's synchronization cost, ``Departure_delay x (MWP - 1)`` per
#: barrier (Sec. 3), is the wait for the last of MWP outstanding memory requests, so a
#: barrier with no global access before it since the previous barrier costs nothing and
#: is not counted. Shared-memory matMul: of the two barriers per tile phase (N/bx
#: phases), the one after the tile loads (seed 003 Figure 4). subSeqMax: the one after
#: ``loadSharedMemory`` in each of the N/threads iterations (seed 003 Figure 5, line 7).
#: dotProd: the one after the per-thread sums, not the log2(bx) steps of the
#: shared-memory tree reduction (apps.toml [dotProd]). Other kernels have no barrier.
SYNCH_PER_THREAD: Mapping[str, str] = MappingProxyType(
    {
        "matMul_gpu_sharedmem": "N/bx",
        "matMul_gpu_sharedmem_uncoalesced": "N/bx",
        "subSeqMax": "N/threads",
        "dotProd": "1",
    }
)

_REQUIRED = ("board", "app_id", "input_size")
_LAUNCH = ("block_x", "block_y", "grid_x", "grid_y")


# --------------------------------------------------------------------------- hardware


def hongkim_hardware_for(board_name: str, *, issue_cycles: float | None = None) -> HongKimHardware:
    """Hong & Kim hardware parameters of a registry board.

    ``n_sm``, ``freq_ghz`` (boost clock) and ``threads_per_warp`` come from the board
    registry through :meth:`HongKimHardware.from_board`; ``mem_bandwidth_gbs`` is
    :func:`perfml.boards.peak_bandwidth` (the stated bandwidth, else the one the memory
    clock and bus width give, as for GT-630 and GTX-295). The memory
    latency and departure delays are that method's defaults, ``Mem_LD = 450``,
    ``Departure_del_uncoal = 40`` and ``Departure_del_coal = 4`` cycles: the paper's
    GTX 280 values (Hong & Kim 2009, model parameter table), applied to every board.
    That is a known limitation: they were measured with microbenchmarks on one GT200
    board and are not this board's values (Kepler and Maxwell DRAM latencies and
    request rates differ); nothing here fits them to measured runtimes.

    Parameters
    ----------
    board_name : str
        Any name :func:`perfml.boards.get_board` resolves.
    issue_cycles : float, optional
        ``#Issue_cycles``, cycles one SM takes to issue one warp instruction. By default
        ``warp_size / fp32_cores_per_sm`` of the board: the paper's own definition (32
        threads on the 8 SPs of a GT200 SM = 4 cycles), which gives 1/6 cycle on a
        192-core Kepler SMX and 1/4 on a 128-core Maxwell SMM. Pass 4.0 for the paper's
        GT200 value.

    Raises
    ------
    UnknownBoardError
        If the registry has no such board.
    MissingBoardParameterError
        If the board leaves a needed field empty.
    """
    from perfml.boards import get_board, peak_bandwidth

    board = get_board(board_name)
    overrides = {"mem_bandwidth_gbs": peak_bandwidth(board) / 1e9}
    if issue_cycles is None:
        warp = board.require("warp_size", needed_for="the Hong & Kim #Issue_cycles")
        cores = board.require("fp32_cores_per_sm", needed_for="the Hong & Kim #Issue_cycles")
        overrides["issue_cycles"] = float(warp) / float(cores)
    else:
        overrides["issue_cycles"] = float(issue_cycles)
    return HongKimHardware.from_board(board, **overrides)


# ----------------------------------------------------------------------------- inputs


def uncoalesced_transactions(block_x, warp_size=32, coalescing_threads=32):
    """``#Uncoal_per_mw`` of the uncoalesced kernels.

    ``(warp_size / coalescing_threads) x min(block_x, coalescing_threads)``: memory
    accesses are coalesced per group of ``coalescing_threads`` (a half-warp of 16 on
    compute capability 1.x, the whole warp from 2.0 on; CUDA C Programming Guide,
    compute capabilities, global memory). A group of a ``block_x``-wide block holds
    ``min(block_x, coalescing_threads)`` distinct ``threadIdx.x``; in these kernels each
    of them walks its own row (seed 003 Figure 3), so each makes its own transaction,
    and the threads of the group that differ only in ``threadIdx.y`` read adjacent
    words of the same segment. For compute capability >= 2.0 this is
    ``min(block_x, 32)``: 16 for a 16x16 block, 32 (fully uncoalesced) from
    ``block_x = 32``. See the module docstring for the profile evidence.
    """
    groups = float(warp_size) / float(coalescing_threads)
    return groups * np.minimum(np.asarray(block_x, dtype=float), float(coalescing_threads))


def coalescing_threads(board) -> int:
    """Threads whose global accesses coalesce together: 16 on CC 1.x, the warp after."""
    warp = int(board.require("warp_size", needed_for="coalescing"))
    cc = board.require("compute_capability", needed_for="coalescing")
    return warp // 2 if int(str(cc).split(".")[0]) < 2 else warp


def hongkim_inputs(runtimes: pd.DataFrame, *, data_home=None, instruction_source: str = "description") -> pd.DataFrame:
    """Per-kernel inputs of the Hong & Kim model for each row of ``runtimes``.

    Parameters
    ----------
    runtimes : DataFrame
        Rows of ``runtimes.csv``: ``board``, ``app_id``, ``input_size`` and, when known,
        ``block_x``, ``block_y``, ``grid_x``, ``grid_y``, ``registers_per_thread``,
        ``static_smem_bytes``.
    data_home : path, optional
        Data home of the profiles (``instruction_source="profiles"`` only).
    instruction_source : {"description", "profiles"}
        Where the instruction counts come from (see the module docstring). With
        ``"profiles"``, a row's counts are the median over the *other* boards' profiles
        of the same app, input size and block shape; its own board is never used.

    Returns
    -------
    DataFrame
        Indexed like ``runtimes``, with the columns of :data:`INPUT_COLUMNS` (counts
        per warp, as :class:`~perfml.closed_form.hongkim.HongKimModel` reads them). A row the
        model cannot describe (no kernel description, a board the registry lacks or
        that leaves an occupancy field empty, a launch the board cannot run, no
        profile on another board) has NaN inputs and says why in ``note``.
    """
    if instruction_source not in INSTRUCTION_SOURCES:
        raise PerfmlError(
            f"instruction_source must be one of {', '.join(INSTRUCTION_SOURCES)}, got {instruction_source!r}"
        )
    rt = check_frame(runtimes, _REQUIRED, "hongkim_inputs")
    out = pd.DataFrame(np.nan, index=rt.index, columns=list(INPUT_COLUMNS[:-1]))
    out["note"] = ""
    profiles = _profile_counts(data_home) if instruction_source == "profiles" else None

    for app_id, part in rt.groupby("app_id", sort=False):
        from perfml.apps import get_app

        try:
            app = get_app(app_id)
        except PerfmlError as exc:
            out.loc[part.index, "note"] = f"no kernel description: {exc}"
            continue
        n = part["input_size"].to_numpy(dtype=float)
        given = {c: (part[c].to_numpy(dtype=float) if c in part else None) for c in _LAUNCH}
        bx, by, gx, gy = app.launch_dims(n, **given)
        threads = bx * by * gx * gy
        env = {"N": n, "bx": bx, "by": by, "threads": threads}
        idx = part.index

        if profiles is None:
            w = app.work_per_thread(n, **given)
            flops_per_inst = FLOPS_PER_INSTRUCTION.get(app.app, 1.0)
            comp = w["flops"] / flops_per_inst + w["int_ops"] + w["sld"] + w["sst"]
            mem = w["gld"] + w["gst"]
        else:
            comp, mem, missing = _from_other_boards(profiles, app_id, part["board"].to_numpy(), n, bx, by)
            if missing.any():
                out.loc[idx[missing], "note"] = (
                    "no profile of this app, input size and block shape on another board"
                )

        uncoalesced = "uncoalesced" in app.variant
        out.loc[idx, "comp_insts"] = comp
        out.loc[idx, "coal_mem_insts"] = 0.0 if uncoalesced else mem
        out.loc[idx, "uncoal_mem_insts"] = mem if uncoalesced else 0.0
        out.loc[idx, "threads_per_block"] = bx * by
        out.loc[idx, "blocks"] = gx * gy
        expr = SYNCH_PER_THREAD.get(app_id, 0)
        out.loc[idx, "synch_insts"] = np.broadcast_to(
            np.asarray(evaluate_expression(expr, env), dtype=float), n.shape)

        regs = _optional(part, "registers_per_thread")
        smem = _optional(part, "static_smem_bytes")
        tpb = (bx * by).astype(int)
        for (board, t, r, s), rows in pd.DataFrame(
                {"board": part["board"].astype(str).to_numpy(), "t": tpb, "r": regs, "s": smem},
                index=idx).groupby(["board", "t", "r", "s"], sort=False).groups.items():
            try:
                warp, group, active = _occupancy(board, int(t), int(r), int(s))
            except (PerfmlError, ValueError) as exc:
                out.loc[rows, "note"] = f"board {board!r}: {exc}"
                continue
            out.loc[rows, "active_blocks_per_sm"] = float(active)
            out.loc[rows, "uncoal_per_mw"] = uncoalesced_transactions(bx[idx.get_indexer(rows)], warp, group)

    bad = out["note"] != ""
    out.loc[bad, list(INPUT_COLUMNS[:-1])] = np.nan
    return out


def _optional(part: pd.DataFrame, column: str) -> np.ndarray:
    """A per-row count that may be missing; missing counts as 0 (not limiting)."""
    if column not in part:
        return np.zeros(len(part), dtype=int)
    values = pd.to_numeric(part[column], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isfinite(values), values, 0.0).astype(int)


@functools.lru_cache(maxsize=4096)
def _occupancy(board_name: str, threads_per_block: int, registers: int, smem: int) -> tuple[int, int, int]:
    """(warp_size, coalescing threads, active blocks per SM) of a launch on a board, cached."""
    from perfml.boards import get_board, occupancy

    board = get_board(board_name)
    occ = occupancy(board, threads_per_block, int(registers), int(smem))
    return int(board.warp_size), coalescing_threads(board), int(occ.active_blocks_per_sm)


# --------------------------------------------------------------------------- profiles


def _profile_counts(data_home) -> pd.DataFrame:
    """Per-warp instruction counts of every NCA profile row.

    ``insts`` = ``e.inst_executed`` / warps launched (``blocks x ceil(threads per block /
    warp_size)``), ``mem`` = global load plus store instructions (``e.gld_inst_*bit``,
    ``e.gst_inst_*bit``, thread-level events) / threads. Read through
    ``perfml.datasets.load_profiles_nca`` at call time.
    """
    from perfml import datasets

    prof = datasets.load_profiles_nca(data_home)
    for column in ("e.inst_executed", "e.gld_inst_32bit", "e.gst_inst_32bit"):
        if column not in prof:
            raise MissingMetricError(
                f"profiles_nca lacks {column!r}, which the Hong & Kim instruction counts need; "
                "use instruction_source='description'"
            )
    warp = prof["board"].map(lambda b: _warp_size(str(b))).to_numpy(dtype=float)
    tpb = (prof["block_x"] * prof["block_y"].fillna(1)).to_numpy(dtype=float)
    blocks = (prof["grid_x"] * prof["grid_y"].fillna(1)).to_numpy(dtype=float)
    threads = tpb * blocks
    warps = blocks * np.ceil(tpb / warp)
    width_cols = [c for c in prof.columns if c.startswith(("e.gld_inst_", "e.gst_inst_"))]
    mem = prof[width_cols].sum(axis=1, min_count=1).to_numpy(dtype=float) / threads
    insts = prof["e.inst_executed"].to_numpy(dtype=float) / warps
    frame = pd.DataFrame({
        "board": prof["board"].astype(str).to_numpy(),
        "app_id": prof["app_id"].astype(str).to_numpy(),
        "input_size": prof["input_size"].to_numpy(dtype=float),
        "block_x": prof["block_x"].to_numpy(dtype=float),
        "block_y": prof["block_y"].fillna(1).to_numpy(dtype=float),
        "comp": np.clip(insts - mem, 0.0, None),
        "mem": mem,
    })
    ok = np.isfinite(frame["comp"]) & np.isfinite(frame["mem"]) & (frame["mem"] > 0)
    # One value per board and configuration (several block_dir / kernel versions may
    # hold the same one), so that every board weighs the same in the median.
    keys = ["app_id", "input_size", "block_x", "block_y", "board"]
    return frame[ok].groupby(keys, as_index=False)[["comp", "mem"]].median()


@functools.lru_cache(maxsize=64)
def _warp_size(board_name: str) -> float:
    from perfml.boards import get_board

    try:
        return float(get_board(board_name).warp_size or math.nan)
    except PerfmlError:
        return math.nan


def _from_other_boards(profiles, app_id, boards, n, bx, by):
    """Median per-warp (comp, mem) over the boards other than each row's own."""
    comp = np.full(len(n), np.nan)
    mem = np.full(len(n), np.nan)
    same_app = profiles[profiles["app_id"] == app_id]
    by_config = {key: (g["board"].to_numpy(), g["comp"].to_numpy(), g["mem"].to_numpy())
                 for key, g in same_app.groupby(["input_size", "block_x", "block_y"])}
    keys = pd.DataFrame({"board": boards, "n": n, "bx": bx, "by": by})
    for (board, size, x, y), rows in keys.groupby(["board", "n", "bx", "by"], sort=False).indices.items():
        found = by_config.get((size, x, y))
        if found is None:
            continue
        other = found[0] != board
        if other.any():
            comp[rows] = np.median(found[1][other])
            mem[rows] = np.median(found[2][other])
    return comp, mem, ~np.isfinite(comp)


# ---------------------------------------------------------------------------- predict


def predict_hongkim_for_runtimes(runtimes: pd.DataFrame, data_home=None, *, instruction_source: str = "description", issue_cycles: float | None = None) -> np.ndarray:
    """Uncalibrated Hong & Kim kernel time (ms) for each row of ``runtimes``.

    Builds the inputs with :func:`hongkim_inputs` and the hardware of every board with
    :func:`hongkim_hardware_for`, then runs :class:`~perfml.closed_form.hongkim.HongKimModel`
    (``calibrate=False``: nothing is fitted to the measured times).

    Returns
    -------
    ndarray of shape (n_rows,)
        NaN where the model cannot describe a row: no kernel description, a board
        missing from the registry or leaving a needed field empty, a launch the board
        cannot run, a kernel with no global memory instruction, or (profiles) no
        profile of the kernel on another board.
    """
    inputs = hongkim_inputs(runtimes, data_home=data_home, instruction_source=instruction_source)
    inputs["board"] = runtimes["board"].astype(str).to_numpy()
    hardware = {}
    for board in pd.unique(inputs["board"]):
        try:
            hardware[board] = hongkim_hardware_for(board, issue_cycles=issue_cycles)
        except (PerfmlError, ValueError):
            continue
    features = inputs[list(FEATURE_COLUMNS)].to_numpy(dtype=float)
    ok = (np.isfinite(features).all(axis=1)
          & ((inputs["coal_mem_insts"] + inputs["uncoal_mem_insts"]) > 0).to_numpy()
          & inputs["board"].isin(hardware).to_numpy())
    pred = np.full(len(inputs), np.nan)
    if ok.any():
        rows = inputs[ok]
        used = {b: hardware[b] for b in pd.unique(rows["board"])}
        model = HongKimModel(hardware=used).fit(rows)
        pred[ok] = model.predict(rows)
    return pred
