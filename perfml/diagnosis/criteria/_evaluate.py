"""Every criterion of one profile row: :func:`evaluate_criteria`.

Builds a :class:`~._common.ProfileContext` for the row and asks each criterion family
(``_sync``, ``_divergence``, ``_load_balance``, ``_memory_access``, ``_throughput``) for
its criteria, in the order of seed 000 Sec. IV, then the shares and warp activity the
potential speedups of Sec. V need.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from perfml.diagnosis import metrics as M
from perfml.diagnosis._occupancy import Residency, theoretical_residency
from perfml.diagnosis.criteria._characterization import (
    BoardLike,
    CharacterizationLike,
    characterization_label,
    default_characterization,
)
from perfml.diagnosis.criteria._common import CriteriaReport, Criterion, ProfileContext, clip01
from perfml.diagnosis.criteria._divergence import divergence_criterion
from perfml.diagnosis.criteria._load_balance import loadbalanc_sm_criterion, loadbalanc_warp_criterion
from perfml.diagnosis.criteria._memory_access import (
    l1_granularity_criterion,
    l2_granularity_criterion,
    shmem_efficiency_criterion,
)
from perfml.diagnosis.criteria._sync import devicesync_criterion, hostsync_criterion
from perfml.diagnosis.criteria._throughput import (
    ariththr_criterion,
    memthr_criterion,
    throughput_occupancy_criterion,
)
from perfml.errors import MissingMetricError

__all__ = ["CRITERIA", "evaluate_criteria"]

#: criteria in the order of Section IV, plus MEMTHR (IV-H) and ARITHTHR (Sec. V)
CRITERIA = (
    "HOSTSYNC",
    "DEVICESYNC",
    "DIVERGENCE",
    "LOADBALANC_WARP",
    "LOADBALANC_SM",
    "L1_GRANULARITY",
    "L2_GRANULARITY",
    "SHMEMEFFICIENCY",
    "THROUGHPUT_OCCUPANCY",
    "MEMTHR",
    "ARITHTHR",
)


def _board_attr(board: BoardLike, attr: str):
    return board.require(attr, needed_for="the fine-grained criteria model")


def _launch(row: Mapping[str, object], key: str, default: float = 1.0) -> float:
    value = row.get(key)
    if value is None or pd.isna(value):
        return default
    return float(value)


def _check_columns(row: pd.Series | Mapping[str, object], cc: str, board: str) -> None:
    """Raise if the *table* lacks a column that compute capability ``cc`` should hold."""
    index = row.index if isinstance(row, pd.Series) else row.keys()
    absent = [
        (col, spec)
        for spec in M.TERMS.values()
        for col in spec.columns.get(cc, ())
        if col not in index
    ]
    if absent:
        col, spec = absent[0]
        more = f" (and {len(absent) - 1} more: {', '.join(c for c, _ in absent[1:4])}...)" if len(absent) > 1 else ""
        raise MissingMetricError(
            f"the profile table of board {board} (compute capability {cc}) has no column {col!r}{more}, "
            f"needed for {spec.description}; re-profile with `{spec.nvprof_hint}` or load a "
            "profiles_nca-shaped table that holds it"
        )


def _residency(row: Mapping[str, object], board: BoardLike) -> Residency:
    """Theoretical residency of the row's launch (block, grid, registers, static shared)."""
    threads = _launch(row, "block_x") * _launch(row, "block_y") * _launch(row, "block_z")
    grid = _launch(row, "grid_x") * _launch(row, "grid_y") * _launch(row, "grid_z")
    return theoretical_residency(
        board,
        threads_per_block=int(threads),
        grid_blocks=int(grid),
        registers_per_thread=int(_launch(row, "registers_per_thread", 0.0)),
        static_smem_bytes=int(_launch(row, "static_smem_bytes", 0.0)),
    )


def _share(ctx: ProfileContext, name: str) -> float | None:
    """L1% / L2% / ShMem% of Sec. V: nvprof utilization level / 10, None if unsupported."""
    if not ctx.supported(name):
        return None
    return ctx.optional(lambda: ctx.term(name) / 10.0)


def _warp_activity(ctx: ProfileContext) -> float | None:
    """Average fraction of the SM's warp slots active (Sec. V)."""
    return ctx.optional(
        lambda: clip01(
            ctx.term("active_warps") / (ctx.residency.max_warps_per_sm * ctx.term("elapsed_cycles_sm"))
        )
    )


def evaluate_criteria(
    row: pd.Series | Mapping[str, object],
    board: BoardLike,
    characterization: CharacterizationLike | None = None,
    *,
    strict: bool = True,
) -> CriteriaReport:
    """Every criterion of Sec. IV (and ARITHTHR, Sec. V) for one profile row.

    Parameters
    ----------
    row : pandas.Series or mapping
        One row of a ``profiles_nca``-shaped table (``compute_capability``, launch
        columns, ``m.*``/``e.*`` metrics).
    board : BoardLike
        The board the row was measured on (``perfml.boards.get_board``).
    characterization : CharacterizationLike, optional
        Characterization functions; identity (F = 1) when omitted.
    strict : bool, default True
        When a needed column exists but is empty in this row (nvprof did not record it,
        as for the largest matMul sizes), raise. With ``strict=False`` the criteria that
        need it get status ``missing`` (with the error message as note) and the others
        are still computed.

    Raises
    ------
    MissingMetricError
        If the table lacks a column needed on this compute capability (always), or a
        needed value is empty (``strict=True``).
    MissingBoardParameterError
        If the board lacks an attribute a criterion needs.
    """
    char = characterization if characterization is not None else default_characterization()
    bname = str(getattr(board, "name", "?"))
    cc = M.cc_key(row.get("compute_capability"))
    _check_columns(row, cc, bname)
    numbers = dict(
        warp_size=int(_board_attr(board, "warp_size")),
        sms=int(_board_attr(board, "sms")),
        clock_mhz=float(_board_attr(board, "boost_clock_mhz")),
        peak_bw_gbs=float(_board_attr(board, "memory_bandwidth_gbs")),
        fp32_cores_per_sm=int(_board_attr(board, "fp32_cores_per_sm")),
    )
    ctx = ProfileContext(row=row, board=board, board_name=bname, cc=cc, char=char, strict=strict,
                         residency_of=_residency, **numbers)
    out: dict[str, Criterion] = {}
    out["HOSTSYNC"] = hostsync_criterion(ctx)
    out["DEVICESYNC"] = devicesync_criterion(ctx)
    out["DIVERGENCE"] = divergence_criterion(ctx)
    residency = ctx.residency  # needed from here on; an impossible launch raises here
    out["LOADBALANC_WARP"] = loadbalanc_warp_criterion(ctx)
    out["LOADBALANC_SM"] = loadbalanc_sm_criterion(ctx)
    out["L1_GRANULARITY"] = l1_granularity_criterion(ctx)
    out["L2_GRANULARITY"] = l2_granularity_criterion(ctx)
    out["SHMEMEFFICIENCY"] = shmem_efficiency_criterion(ctx)
    out["MEMTHR"] = memthr_criterion(ctx)
    out["THROUGHPUT_OCCUPANCY"] = throughput_occupancy_criterion(ctx, out["MEMTHR"])
    out["ARITHTHR"] = ariththr_criterion(ctx)

    devicesync_value = out["DEVICESYNC"].value
    shares = {"L1": _share(ctx, "l1_utilization"), "L2": _share(ctx, "l2_utilization"),
              "ShMem": _share(ctx, "shmem_utilization")}
    return CriteriaReport(
        board=bname,
        compute_capability=cc,
        criteria={name: out[name] for name in CRITERIA},
        shares=shares,
        stall_sync=1.0 - devicesync_value if devicesync_value is not None else None,
        warp_activity=_warp_activity(ctx),
        residency=residency,
        characterization=characterization_label(char),
    )
