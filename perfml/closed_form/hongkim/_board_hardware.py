"""Hong & Kim hardware of the boards of perfml's registry, and their coalescing width.

:func:`hongkim_hardware_for` builds :class:`~perfml.closed_form.hongkim.HongKimHardware`
from ``perfml/data/boards.toml`` (through :func:`perfml.boards.get_board`); the
latencies no spec sheet gives come from ``perfml/data/hongkim_hardware.toml``.
"""

from __future__ import annotations

from perfml.closed_form.hongkim._hardware import HongKimHardware

__all__ = ["coalescing_threads", "hongkim_hardware_for"]


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


def coalescing_threads(board) -> int:
    """Threads whose global accesses coalesce together: 16 on CC 1.x, the warp after."""
    warp = int(board.require("warp_size", needed_for="coalescing"))
    cc = board.require("compute_capability", needed_for="coalescing")
    return warp // 2 if int(str(cc).split(".")[0]) < 2 else warp
