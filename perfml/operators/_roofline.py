"""Physical lower bound of an operator call on a board: the roofline of its work.

``t_min = max(flops / peak_fp32, bytes / peak_bandwidth)`` [1]_: no call can finish
faster than its arithmetic at the board's peak FP32 rate, nor faster than its compulsory
DRAM traffic at the board's peak bandwidth. The peaks are the registry's derived figures
(:func:`perfml.boards.peak_flops`, FP32 at the boost clock; :func:`perfml.boards.peak_bandwidth`);
the work is :func:`perfml.operators.operator_work`.

Two caveats, measured on the corpus (see ``tests/test_operators.py``):

* conv: the FLOP term counts the direct convolution. cuDNN's Winograd and FFT kernels
  need fewer multiplications, so by default (``conv_compute_bound=False``) the conv bound
  uses the byte term only, which no algorithm can avoid.
* operands re-used across back-to-back calls can stay in the L2 cache (README, NeuSight
  section, "Units and measurement"); the registry has no sourced L2 bandwidth, so the
  byte term uses the DRAM peak, and a small L2-resident call may beat it.

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.boards import Board, get_board, l2_resident_roofline_ms, peak_bandwidth, peak_flops
from perfml.errors import OperatorWorkError
from perfml.operators._work import operator_work

__all__ = ["roofline_lower_bound_ms"]


def roofline_lower_bound_ms(
    frame: pd.DataFrame,
    board: str | Board | None = None,
    *,
    conv_compute_bound: bool = False,
    l2_resident: bool = False,
) -> pd.Series:
    """Roofline lower bound of every operator row, in milliseconds.

    Parameters
    ----------
    frame : pandas.DataFrame
        Operator rows (see :func:`~perfml.operators.operator_work`).
    board : str or Board, optional
        The board every row runs on (a registry name or alias). When omitted, each row's
        ``board`` column names its board.
    conv_compute_bound : bool, default False
        Also bound conv rows by their direct-convolution FLOPs. Off by default: Winograd
        and FFT algorithms do fewer multiplications, so that term is not a physical bound.
    l2_resident : bool, default False
        Let up to the board's ``l2_bytes`` of the call's bytes come from a warm L2 (operands
        left there by an earlier call): the byte term becomes ``max(bytes - l2_bytes, 0) /
        peak bandwidth``, the bound no timing can beat whatever the cache held. Used to
        refuse measured times that are not physical (a ``--reference`` or ``--calibration``
        row); predictions are clamped to the DRAM bound (no measured call of
        ``dlops_runtimes.csv.gz`` beats it).

    Returns
    -------
    pandas.Series
        ``max(flops / peak FP32 FLOP/s, bytes / peak bandwidth)`` in ms, indexed like ``frame``.

    Raises
    ------
    OperatorWorkError
        If a row's work cannot be computed, or no board is given and ``frame`` has no
        ``board`` column.
    UnknownBoardError
        If a board is not in the registry.
    MissingBoardParameterError
        If the registry lacks a peak's inputs for a board.
    """
    work = operator_work(frame)
    if board is not None:
        boards = pd.Series([board if isinstance(board, str) else board.name] * len(frame), index=frame.index)
        resolved = {boards.iloc[0]: board} if len(frame) else {}
    else:
        if "board" not in frame.columns:
            raise OperatorWorkError(
                "no board given and the rows have no 'board' column; pass board=NAME or add the column"
            )
        boards = frame["board"].astype("string")
        missing = boards.isna().to_numpy()
        if missing.any():
            position = int(np.flatnonzero(missing)[0])
            raise OperatorWorkError(
                f"row {frame.index[position]!r}: column 'board' is empty; name the board the row ran on"
            )
        resolved = {name: name for name in boards.unique()}
    peak_fp32 = np.empty(len(frame))
    peak_bw = np.empty(len(frame))
    l2 = np.zeros(len(frame))
    names = boards.to_numpy(dtype=object)
    for name, spec in resolved.items():
        b = get_board(spec)
        rows = names == name
        peak_fp32[rows] = peak_flops(b)
        peak_bw[rows] = peak_bandwidth(b)
        if l2_resident:
            l2[rows] = float(b.l2_bytes or 0.0)
    flops = work["flops"].to_numpy(dtype=float)
    if not conv_compute_bound:
        flops = np.where(work["op_class"].to_numpy() == "Conv", 0.0, flops)
    bound = l2_resident_roofline_ms(flops, work["bytes"].to_numpy(), peak_flops_per_s=peak_fp32,
                                    peak_bytes_per_s=peak_bw, l2_bytes=l2)
    return pd.Series(bound, index=frame.index, name="roofline_lower_bound_ms")
