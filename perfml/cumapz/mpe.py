"""Memory performance estimate, eq. (8) of Kim & Shrivastava (2011), and the result.

``MPE = data_reuse * lat_hiding * bw_util / ch_skew * branch_eff * shm_eff**(1/2)``;
"The larger MPE value is, the better the memory performance is" (Sec. 5.7). MPE is
only comparable between versions of one program (Sec. 8).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from perfml.cumapz import factors as F
from perfml.cumapz.description import KernelDescription
from perfml.cumapz.device import CumapzDevice, device_from_board
from perfml.cumapz.emulator import MemoryTrace, emulate

__all__ = ["CumapzResult", "mpe", "analyze", "analyze_on_board"]


def mpe(
    data_reuse: float,
    lat_hiding: float,
    bw_util: float,
    ch_skew: float,
    branch_eff: float,
    shm_eff: float,
) -> float:
    """Eq. (8): ``data_reuse * lat_hiding * bw_util / ch_skew * branch_eff * sqrt(shm_eff)``."""
    return data_reuse * lat_hiding * bw_util / ch_skew * branch_eff * math.sqrt(shm_eff)


@dataclass(frozen=True)
class CumapzResult:
    """The six factors, MPE, and the counts they were computed from."""

    description: str
    board: str
    data_reuse: float
    lat_hiding: float
    bw_util: float
    ch_skew: float
    shm_eff: float
    branch_eff: float
    mpe: float
    no_buffer_policy: str
    counts: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


def _result(desc: KernelDescription, device: CumapzDevice, trace: MemoryTrace,
            policy: str) -> CumapzResult:
    geo = trace.geometry
    dr = F.data_reuse(trace.bytes_shmem, trace.bytes_buffered)
    lh = F.lat_hiding(geo.occupancy_pct, geo.n_shm_load, policy)
    bw = F.bw_util(trace.bytes_access, trace.bytes_tr)
    cs = 1.0 if trace.channel_skipped else F.ch_skew(trace.channel_skews, trace.channel_weights)
    se = F.shm_eff(trace.n_shared_requests, trace.n_shared_serialized)
    be = F.branch_eff(trace.n_branch_slots, trace.n_path)
    counts = {
        "grid": list(geo.grid),
        "block": list(geo.block),
        "occupancy_pct": geo.occupancy_pct,
        "max_blks": geo.max_blks,
        "n_shm_load": geo.n_shm_load,
        "n_blk_to_check": geo.n_blk_to_check,
        "channel_skew_skipped": trace.channel_skipped,
        "channel_skew_by_access": [
            {"access": lbl, "ch_skew": s, "bytes_tr": w}
            for lbl, s, w in zip(trace.channel_labels, trace.channel_skews, trace.channel_weights)
        ],
        "bytes_shmem": trace.bytes_shmem,
        "n_buffered_accesses": trace.n_buffered_accesses,
        "bytes_buffered": trace.bytes_buffered,
        "bytes_access": trace.bytes_access,
        "bytes_tr": trace.bytes_tr,
        "n_transactions": trace.n_transactions,
        "n_global_accesses": trace.n_global_accesses,
        "n_shared_requests": trace.n_shared_requests,
        "n_shared_serialized": trace.n_shared_serialized,
        "n_branch_slots": trace.n_branch_slots,
        "n_path": trace.n_path,
        "n_diverged": trace.n_diverged,
        "device": {
            "channels": device.n_channels,
            "channel_width_bytes": device.channel_width_bytes,
            "banks": device.n_banks,
            "half_warp": device.rule.group,
            "max_blocks_per_sm": device.max_blocks_per_sm,
            "compute_capability": device.compute_capability,
        },
    }
    return CumapzResult(
        description=desc.name,
        board=device.board,
        data_reuse=dr,
        lat_hiding=lh,
        bw_util=bw,
        ch_skew=cs,
        shm_eff=se,
        branch_eff=be,
        mpe=mpe(dr, lh, bw, cs, be, se),
        no_buffer_policy=policy,
        counts=counts,
    )


def analyze(
    desc: KernelDescription,
    device: CumapzDevice,
    *,
    no_buffer_policy: str = "literal",
    chunk_threads: int | None = None,
    max_accesses: int | None = None,
) -> CumapzResult:
    """Emulate ``desc`` on ``device`` and compute the factors and MPE (eq. 1-8).

    ``max_accesses`` bounds the emulated work (default
    :data:`~perfml.cumapz.emulator.DEFAULT_MAX_ACCESSES`); a larger analysis raises
    :class:`~perfml.errors.WorkLimitError` before it starts.
    """
    if no_buffer_policy not in F.NO_BUFFER_POLICIES:
        from perfml.errors import PerfmlError

        raise PerfmlError(
            f"no_buffer_policy must be one of {', '.join(F.NO_BUFFER_POLICIES)}, "
            f"found {no_buffer_policy!r}"
        )
    kwargs: dict[str, int] = {} if chunk_threads is None else {"chunk_threads": chunk_threads}
    if max_accesses is not None:
        kwargs["max_accesses"] = max_accesses
    trace = emulate(desc, device, **kwargs)
    return _result(desc, device, trace, no_buffer_policy)


def analyze_on_board(
    desc: KernelDescription,
    board: str | Any = "Tesla-C1060",
    *,
    params: dict[str, Any] | None = None,
    no_buffer_policy: str = "literal",
    max_accesses: int | None = None,
) -> CumapzResult:
    """Like :func:`analyze`, looking the board up in :mod:`perfml.boards` by name."""
    if isinstance(board, str):
        from perfml.boards import get_board

        board = get_board(board)
    return analyze(desc, device_from_board(board, params), no_buffer_policy=no_buffer_policy,
                   max_accesses=max_accesses)
