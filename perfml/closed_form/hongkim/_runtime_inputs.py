"""Per-row inputs of the MWP/CWP model for the measured runtimes (``runtimes.csv`` rows).

See :mod:`perfml.closed_form.hongkim_inputs` for where every input column comes from.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from perfml._expr import evaluate as evaluate_expression
from perfml.closed_form._inputs import check_frame
from perfml.closed_form.hongkim._board_hardware import coalescing_threads
from perfml.closed_form.hongkim._kernel import FEATURE_COLUMNS
from perfml.closed_form.hongkim._profile_counts import from_other_boards, profile_counts
from perfml.errors import PerfmlError

__all__ = [
    "FLOPS_PER_INSTRUCTION",
    "INPUT_COLUMNS",
    "INSTRUCTION_SOURCES",
    "SYNCH_PER_THREAD",
    "hongkim_inputs",
    "uncoalesced_transactions",
]

INSTRUCTION_SOURCES: tuple[str, ...] = ("description", "profiles")

#: Columns of :func:`hongkim_inputs`: the model's inputs, then ``note`` ("" when the row
#: is described, else why its inputs are NaN).
INPUT_COLUMNS: tuple[str, ...] = FEATURE_COLUMNS + ("synch_insts", "note")

#: Flops per arithmetic instruction, by app family. 2 where the kernel accumulates
#: products, which nvcc emits as one FFMA: matMul ``Pvalue += Md[..] * Nd[..]`` (seed 003
#: Figures 3-4, "each thread performs N single precision fused multiply-add"), dotProd
#: (per-thread sum of products, kernels/cuda/dotProd.toml [model.work]). 1 for the additions of matSum and
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
#: shared-memory tree reduction (kernels/cuda/dotProd.toml [model.work]). Other kernels have no barrier.
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
    profiles = profile_counts(data_home) if instruction_source == "profiles" else None

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
            comp, mem, missing = from_other_boards(profiles, app_id, part["board"].to_numpy(), n, bx, by)
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


def _occupancy(board_name: str, threads_per_block: int, registers: int, smem: int) -> tuple[int, int, int]:
    """(warp_size, coalescing threads, active blocks per SM) of a launch on a board, cached."""
    from perfml.boards._registry import registry_key

    return _cached_occupancy(board_name, threads_per_block, registers, smem, registry_key())


@functools.lru_cache(maxsize=4096)
def _cached_occupancy(board_name: str, threads_per_block: int, registers: int, smem: int,
                      board_files: tuple) -> tuple[int, int, int]:
    # keyed by the user's boards files too: another file may give the same name other values
    from perfml.boards import get_board, occupancy

    board = get_board(board_name)
    occ = occupancy(board, threads_per_block, int(registers), int(smem))
    return int(board.warp_size), coalescing_threads(board), int(occ.active_blocks_per_sm)
