"""Model constants of the BSP model per (board, app): cores, clock, latencies, cache hits.

Seed 003 (Section IV-VI) and the upstream scripts fix these constants per board and
app; ``shared/datasets/bsp_inputs.csv`` records them as written in those scripts. The
lookup order for a (board, app) is the first model source that has a row, in the
order given (default: the HiPC 2015 BSPGPU scripts, then the 2018 gpuperfpredict NCA
script). A board with no row at all (a board nobody fitted lambda on, e.g. an H100)
gets its cores and clock from the board registry and the paper's typical latencies
(seed 003 eq. 5 text, read from ``perfml/data/bsp_latencies.toml`` by
:mod:`perfml.closed_form._bsp_latencies`) with no cache hits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfml._expr import evaluate
from perfml.closed_form._bsp_latencies import paper_latencies
from perfml.errors import DatasetSchemaError

DEFAULT_SOURCES = ("BSPGPU-2015", "gpuperfpredict-NCA-2018")


@dataclass(frozen=True)
class BSPConstants:
    """Constants of eqs. 3-5 for one (board, app).

    ``l1_frac`` / ``l2_frac`` are the fractions of global reads that hit L1 / L2;
    ``l1_frac_per_size`` maps log2(N) to a per-size L1 fraction (GT-630 MMGU, seed
    003 Section VI-A). ``comp_cycles`` is an expression of N and threads, or None to
    use the kernel description's.
    """

    board: str
    app_id: str
    cores: float
    clock_mhz: float
    lat_shared: float
    lat_global: float
    lat_l1: float
    lat_l2: float
    l1_frac: float
    l2_frac: float
    l1_frac_per_size: tuple[tuple[int, float], ...] | None
    comp_cycles: str | None
    uses_shared: bool | None
    comm_gm_divisor: float
    comm_sm_divisor: float
    source: str

    def l1_fraction(self, n: np.ndarray) -> np.ndarray:
        """Fraction of global reads that hit L1 for size(s) ``n``."""
        n = np.asarray(n, dtype=float)
        if not self.l1_frac_per_size:
            return np.full(n.shape, self.l1_frac)
        table = dict(self.l1_frac_per_size)
        exps = np.rint(np.log2(n)).astype(int)
        last = max(table)
        return np.array([table.get(int(e), table[last] if e > last else table[min(table)]) for e in exps.ravel()]).reshape(n.shape)

    def comp(self, env: dict) -> np.ndarray | None:
        """Comp per thread (cycles) from the recorded expression, or None."""
        if self.comp_cycles is None:
            return None
        return np.asarray(evaluate(self.comp_cycles, env), dtype=float)


def _row_to_constants(row: pd.Series) -> BSPConstants:
    per_size = None
    if isinstance(row.get("l1_effect_frac_per_size"), str) and row["l1_effect_frac_per_size"].strip():
        values = [_fraction(row, "l1_effect_frac_per_size", v) for v in row["l1_effect_frac_per_size"].split(";")]
        first = _first_exponent(row.get("predicted_sizes"), row)
        per_size = tuple((first + i, v) for i, v in enumerate(values))
    for column in ("l1_effect_frac", "l2_effect_frac"):
        if pd.notna(row.get(column)):
            _fraction(row, column, row[column])
    comp = row.get("compute_cycles_per_thread")
    uses_shared = row.get("uses_shared_memory_term")
    return BSPConstants(
        board=row["board"],
        app_id=row["app_id"],
        cores=float(row["cores"]),
        clock_mhz=float(row["clock_mhz"]),
        lat_shared=float(row["latency_shared_cycles"]),
        lat_global=float(row["latency_global_cycles"]),
        lat_l1=float(row["latency_l1_cycles"]),
        lat_l2=float(row["latency_l2_cycles"]),
        l1_frac=_num(row.get("l1_effect_frac")),
        l2_frac=_num(row.get("l2_effect_frac")),
        l1_frac_per_size=per_size,
        comp_cycles=str(comp) if isinstance(comp, str) and comp.strip() else None,
        uses_shared=None if pd.isna(uses_shared) else bool(uses_shared),
        comm_gm_divisor=_num(row.get("comm_gm_divisor"), 1.0) or 1.0,
        comm_sm_divisor=_num(row.get("comm_sm_divisor"), 1.0) or 1.0,
        source=f"bsp_inputs.csv:{row['model_source']}:{row['script_path']}:{row['script_line']}",
    )


def _num(value, default: float = 0.0) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return default if np.isnan(value) else value


def _cell_error(row: pd.Series, column: str, value, expected: str) -> DatasetSchemaError:
    """bsp_inputs.csv's cell ``column`` of ``row`` is not what the BSP constants need."""
    where = f"{row.get('model_source')}:{row.get('script_path')}:{row.get('script_line')}"
    return DatasetSchemaError(
        f"bsp_inputs.csv: row of board {row.get('board')!r}, app {row.get('app_id')!r} ({where}), column {column!r}: "
        f"found {str(value)!r}, expected {expected}; restore the row from shared/datasets")


def _fraction(row: pd.Series, column: str, value) -> float:
    """One fraction of the share of accesses served by a cache (seed 003 eq. 3's L1/L2 effect): in [0, 1]."""
    expected = "fractions in [0, 1] (a list separated by ';')" if column.endswith("_per_size") else "a fraction in [0, 1]"
    try:
        number = float(str(value).strip())
    except ValueError:
        raise _cell_error(row, column, row.get(column), expected) from None
    if not 0.0 <= number <= 1.0:  # NaN fails too
        raise _cell_error(row, column, row.get(column), expected)
    return number


def _first_exponent(spec, row: pd.Series | None = None) -> int:
    # "2^7..2^14" -> 7 (the size the first per-size value belongs to)
    if isinstance(spec, str) and spec.strip():
        match = re.fullmatch(r"\s*2\^(\d{1,2})\s*\.\.\s*2\^(\d{1,2})\s*", spec)
        if match is None or int(match.group(1)) > int(match.group(2)):
            if row is None:
                raise DatasetSchemaError(f"bsp_inputs.csv: predicted_sizes {spec!r} is not '2^a..2^b'")
            raise _cell_error(row, "predicted_sizes", spec, "a range of powers of two, '2^a..2^b' with a <= b")
        return int(match.group(1))
    return 7


class ConstantsTable:
    """Resolves :class:`BSPConstants` for (board, app) pairs from ``bsp_inputs.csv``."""

    def __init__(self, bsp_inputs: pd.DataFrame | None, sources=DEFAULT_SOURCES, gpu_config="default", registry=None):
        self.sources = tuple(sources)
        self.registry = registry
        self._rows: dict[tuple[str, str], pd.Series] = {}
        self._board_rows: dict[str, pd.Series] = {}
        if not self.sources:  # registry constants only: the table is not needed (None allowed)
            return
        table = bsp_inputs[bsp_inputs["model_source"].isin(self.sources)]
        if "gpu_config" in table:
            table = table[table["gpu_config"].fillna("default") == gpu_config]
        for source in reversed(self.sources):  # earlier sources overwrite later ones
            part = table[table["model_source"] == source]
            for _, row in part.iterrows():
                self._rows[(row["board"], row["app_id"])] = row
                self._board_rows[row["board"]] = row

    def get(self, board: str, app_id: str) -> BSPConstants:
        """Constants for (board, app): the app's own row, else the board's, else the registry."""
        row = self._rows.get((board, app_id))
        if row is not None:
            return _row_to_constants(row)
        row = self._board_rows.get(board)
        if row is not None:
            # The board has constants for other apps: keep its cores/clock/latencies,
            # but no app-specific cache fractions or compute expression.
            base = _row_to_constants(row)
            return BSPConstants(
                **{
                    **base.__dict__,
                    "app_id": app_id,
                    "l1_frac": 0.0,
                    "l2_frac": 0.0,
                    "l1_frac_per_size": None,
                    "comp_cycles": None,
                    "uses_shared": None,
                    "source": base.source + " (board constants; app-specific terms from the kernel description)",
                }
            )
        return registry_constants(board, app_id, registry=self.registry)


def registry_constants(board_name: str, app_id: str, registry=None) -> BSPConstants:
    """Constants for a board without any ``bsp_inputs`` row: cores and clock from the registry."""
    from perfml.boards import default_registry, get_board
    from perfml.boards._board import BOARD_FILES
    from perfml.errors import MissingBoardParameterError

    board = get_board(board_name, registry=registry)
    clock = board.boost_clock_mhz or board.base_clock_mhz
    cores = board.total_cores if board.sms and board.fp32_cores_per_sm else None
    if not clock or not cores:
        lacking = [name for name, have in (("boost_clock_mhz (or base_clock_mhz)", clock), ("sms", board.sms),
                                           ("fp32_cores_per_sm", board.fp32_cores_per_sm)) if not have]
        cc = board.compute_capability
        why = (f" (perfml has no [cc.\"{cc}\"] table, so no per-SM figure of compute capability {cc} is inherited)"
               if cc and cc not in (registry or default_registry()).compute_capabilities() else "")
        raise MissingBoardParameterError(
            f"board {board.name!r} lacks {', '.join(lacking)} in the registry{why}, which the BSP model needs (R and P "
            f"of seed 003 eq. 3); add it with its source to the board's entry ({BOARD_FILES})"
        )
    latencies = paper_latencies()  # seed 003 line 151, perfml/data/bsp_latencies.toml
    return BSPConstants(
        board=board.name,
        app_id=app_id,
        cores=float(cores),
        clock_mhz=float(clock),
        lat_shared=latencies["shared"],
        lat_global=latencies["global"],
        lat_l1=latencies["l1"],
        lat_l2=latencies["l2"],
        l1_frac=0.0,
        l2_frac=0.0,
        l1_frac_per_size=None,
        comp_cycles=None,
        uses_shared=None,
        comm_gm_divisor=1.0,
        comm_sm_divisor=1.0,
        source=f"registry:{board.name} (cores x {'boost' if board.boost_clock_mhz else 'base'} clock) + seed 003 latencies",
    )
