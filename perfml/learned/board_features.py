"""Board specification features, from the registry only (never from measurements).

Every feature is a registry field or a figure derived from fields in
:mod:`perfml.boards` (peak FLOP/s, peak bandwidth, resident warps). Unknown values
stay NaN; the gradient-boosted models handle them, the linear baselines impute.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

#: Registry fields used as features (name of the feature = "board_" + field).
BOARD_FIELDS = (
    "sms",
    "fp32_cores_per_sm",
    "fp64_units_per_sm",
    "sfu_per_sm",
    "ldst_units_per_sm",
    "boost_clock_mhz",
    "memory_clock_mhz",
    "bus_width_bits",
    "memory_bandwidth_gbs",
    "shared_mem_per_sm_kb",
    "l2_bytes",
    "registers_per_sm",
    "max_threads_per_sm",
    "max_warps_per_sm",
    "max_blocks_per_sm",
)

#: Derived figures that are a ratio of two capacities (numerator, denominator), so that a
#: board with more of one capacity can fall on either side of a split on the ratio.
#: ``rel_*`` computes them from the two capacities held to the training boards' range
#: (:class:`perfml.learned.features.BoardFeatures`).
RATIO_FEATURES = {"board_flop_per_byte": ("board_peak_fp32_gflops", "board_peak_bw_gbs")}


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def board_feature_row(name: str) -> tuple[tuple[str, float], ...]:
    """Feature values of one board of the default registry (cached; boards are immutable)."""
    from perfml.boards._registry import registry_key

    return _cached_feature_row(name, registry_key())


@functools.lru_cache(maxsize=256)
def _cached_feature_row(name: str, board_files: tuple) -> tuple[tuple[str, float], ...]:
    # keyed by the user's boards files too: another file may give the same name other values
    return _feature_row(name, None)


def _feature_row(name: str, registry) -> tuple[tuple[str, float], ...]:
    from perfml.boards import get_board, max_resident_warps, peak_bandwidth, peak_flops
    from perfml.errors import MissingBoardParameterError

    board = get_board(name, registry=registry)
    row = {f"board_{f}": _num(getattr(board, f, None)) for f in BOARD_FIELDS}
    cc = str(board.compute_capability or "nan")
    row["board_cc"] = _num(cc)
    row["board_total_cores"] = row["board_sms"] * row["board_fp32_cores_per_sm"]
    for key, fn in (
        ("board_peak_fp32_gflops", lambda: peak_flops(board, "fp32") / 1e9),
        ("board_peak_fp64_gflops", lambda: peak_flops(board, "fp64") / 1e9),
        ("board_peak_bw_gbs", lambda: peak_bandwidth(board) / 1e9),
        ("board_resident_warps", lambda: float(max_resident_warps(board))),
    ):
        try:
            row[key] = float(fn())
        except (MissingBoardParameterError, TypeError, ValueError, ZeroDivisionError):
            row[key] = float("nan")
    row["board_flop_per_byte"] = row["board_peak_fp32_gflops"] / row["board_peak_bw_gbs"]
    return tuple(row.items())


def board_features(boards, registry=None) -> pd.DataFrame:
    """Board features for a sequence of board names (one row per name, in order).

    Boards are looked up in ``registry`` (a :class:`perfml.boards.Registry`; the default
    registry when None).
    """
    if not isinstance(boards, (pd.Series, pd.Index, np.ndarray)):
        boards = np.asarray(list(boards), dtype=object)
    row = board_feature_row if registry is None else (lambda b: _feature_row(b, registry))
    codes, unique = pd.factorize(boards)
    if not len(unique):
        return pd.DataFrame()
    table = pd.DataFrame([dict(row(b)) for b in unique])
    # one row per board name, in order (a take of the per-board rows: same values as one dict per row)
    frame = pd.DataFrame(table.to_numpy(dtype=float)[codes], columns=table.columns)
    return frame.replace([np.inf, -np.inf], np.nan)
