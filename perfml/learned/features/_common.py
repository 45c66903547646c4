"""Names, keys and helpers shared by the feature groups."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from perfml.apps import list_apps

#: Columns every row must have.
REQUIRED = ("board", "app_id", "input_size")

#: nvprof counters used as kernel descriptors (profiles_nca names), all compute capabilities.
PROFILE_METRICS = {
    "prof_inst_executed": "e.inst_executed",
    "prof_gld_inst": "e.gld_inst_32bit",
    "prof_gst_inst": "e.gst_inst_32bit",
    "prof_shared_load": "e.shared_load",
    "prof_shared_store": "e.shared_store",
    "prof_gld_transactions": "m.Global Load Transactions",
    "prof_gst_transactions": "m.Global Store Transactions",
    "prof_gld_tpr": "m.Global Load Transactions Per Request",
    "prof_gst_tpr": "m.Global Store Transactions Per Request",
    "prof_shm_ld_tpr": "m.Shared Memory Load Transactions Per Request",
    "prof_dram_read_tx": "m.Device Memory Read Transactions",
    "prof_dram_write_tx": "m.Device Memory Write Transactions",
    "prof_l2_read_tx": "m.L2 Read Transactions",
    "prof_gld_efficiency": "m.Global Memory Load Efficiency",
    "prof_ldst_executed": "m.Executed Load/Store Instructions",
}
PROFILE_KEY = ["app_id", "input_size", "block_x", "block_y"]
#: A kernel run: the app, its size and its full launch configuration.
RUN_KEY = ["app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]
#: the column of the per-run table (:attr:`ClosedFormFeatures.transfer_`) with the median log of
#: the run's measured times (ms) on its board: what a query of that run on that board is answered with
MEASURED_LOG_MS = "measured_log_ms"

#: Work per launch a row may carry when its kernel has no description (sweep rows of
#: microbenchmarks, whose sidecar gives it: :mod:`perfml.measure.runtime_rows`).
WORK_COLUMNS = ("work_flops", "work_dram_bytes")

#: Closed-form baselines whose per-app offset is cross-fitted over training boards.
BASELINES = ("bsp", "roof_memory", "roof_compute", "waves")

#: Features whose value can only increase the runtime (monotone +1 constraints).
MONOTONE_INCREASING = (
    "desc_log_n",
    "desc_log_flops",
    "desc_log_gld",
    "desc_log_gst",
    "desc_log_dram_bytes",
    "bsp_log_t1",
    "roof_log_compute",
    "roof_log_memory",
    "roof_log_bound",
)


def log_or_nan(values) -> np.ndarray:
    """Natural log of positive values, 0 for 0, NaN for negative or missing values."""
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(v), np.where(v == 0, 0.0, np.nan))


def described(app_id: str) -> bool:
    """Whether the app has a kernel description."""
    return app_id in set(list_apps())


def second_size(X: pd.DataFrame) -> np.ndarray:
    """The second size parameter (Rodinia ``input_size_2``), 0 where there is none."""
    if "input_size_2" not in X:
        return np.zeros(len(X))
    return np.nan_to_num(X["input_size_2"].to_numpy(dtype=float), nan=0.0)


@functools.lru_cache(maxsize=256)
def _default_architecture(board: str, board_files: tuple) -> str:
    # keyed by the user's boards files too: another file may give the same name other values
    from perfml.boards import get_board

    return str(get_board(board).architecture)


def architecture(board: str, registry=None) -> str:
    """Architecture of a board of ``registry`` (the default registry when None)."""
    if registry is None:
        from perfml.boards._registry import registry_key

        return _default_architecture(board, registry_key())
    from perfml.boards import get_board

    return str(get_board(board, registry=registry).architecture)


def _key_column(values) -> pd.Index:
    """A key column as an index that compares by value (numbers as float64)."""
    index = pd.Index(values)
    if pd.api.types.is_numeric_dtype(index.dtype):
        return pd.Index(np.asarray(index, dtype=float))
    return index


class OtherBoardsMedian:
    """:func:`other_boards_median` of one table, with each board's pool median computed once.

    The median over the training boards other than a row's own depends only on the
    row's board (and, for a board not in the table, is the median over the whole table),
    so each is computed once and then looked up by key for any number of rows, instead
    of a groupby and a merge per call. A key (several columns) is looked up as one
    integer: each column's position among the table's values of that column, combined
    in mixed radix (a value the table lacks, or a missing one, matches nothing, as in a
    merge on the groupby medians, which drop missing keys).

    Parameters
    ----------
    table : DataFrame
        Rows with ``board``, ``keys`` and ``value_cols``.
    keys, value_cols : list of str
    """

    def __init__(self, table: pd.DataFrame, keys, value_cols):
        self.table = table
        self.keys = list(keys)
        self.value_cols = list(value_cols)
        self._boards = set(table["board"].unique()) if not table.empty else set()
        self._uniques = [_key_column(table[k]).dropna().unique() for k in self.keys]
        sizes = [max(len(u), 1) for u in self._uniques]
        self._radix = np.cumprod([1, *sizes[:0:-1]])[::-1].astype(np.int64) if sizes else np.array([], dtype=np.int64)
        self._encodable = float(np.prod(np.asarray(sizes, dtype=float))) < 2.0**62
        self._medians: dict = {}

    def _codes(self, frame: pd.DataFrame) -> np.ndarray:
        """One int64 per row of ``frame`` for its key (-1 where a column's value is not in the table)."""
        code = np.zeros(len(frame), dtype=np.int64)
        missing = np.zeros(len(frame), dtype=bool)
        for k, uniques, radix in zip(self.keys, self._uniques, self._radix):
            pos = uniques.get_indexer(_key_column(frame[k]))
            missing |= pos < 0
            code += pos.astype(np.int64) * radix
        code[missing] = -1
        return code

    def _median(self, board: str):
        """(key lookup, values) of the median over the table's boards other than ``board``."""
        key = board if board in self._boards else None  # an unseen board: the whole table
        if key not in self._medians:
            pool = self.table[self.table["board"] != board] if key is not None else self.table
            if pool.empty:
                self._medians[key] = None
            else:
                med = pool.groupby(self.keys)[self.value_cols].median()
                index_frame = med.index.to_frame(index=False)
                if self._encodable:
                    lookup = pd.Index(self._codes(index_frame))
                else:
                    lookup = pd.MultiIndex.from_arrays([_key_column(index_frame[k]) for k in self.keys])
                self._medians[key] = (lookup, med.to_numpy(dtype=float))
        return self._medians[key]

    def __call__(self, rows: pd.DataFrame) -> pd.DataFrame:
        """For each row, the median of ``value_cols`` over the boards other than the row's (NaN if none)."""
        return pd.DataFrame(self.values(rows), index=rows.index, columns=self.value_cols)

    def values(self, rows: pd.DataFrame) -> np.ndarray:
        """:meth:`__call__`'s values as an array (rows x ``value_cols``), without the frame."""
        out = np.full((len(rows), len(self.value_cols)), np.nan)
        if self.table.empty or not len(rows):
            return out
        board_codes, boards = pd.factorize(rows["board"].to_numpy(dtype=object))
        codes = self._codes(rows) if self._encodable else None
        for j, board in enumerate(boards):
            med = self._median(board)
            if med is None:
                continue
            lookup, values = med
            pick = np.flatnonzero(board_codes == j)
            if codes is not None:
                target = codes[pick]
            else:
                target = pd.MultiIndex.from_arrays([_key_column(rows[k].to_numpy()[pick]) for k in self.keys])
            pos = lookup.get_indexer(target)
            if codes is not None:
                pos[target < 0] = -1
            found = pos >= 0
            out[pick[found]] = values[pos[found]]
        return out


#: the axes of a run (after its app) on which the nearest measured run is sought, each on a log scale
RUN_AXES = ("input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y")
#: rows x runs per distance array of :class:`NearestRunMedian` (8 MB of float64)
_NEAREST_CHUNK = 1_000_000


class NearestRunMedian:
    """For each row, the values of its app's *nearest* run measured on training boards other than its own.

    The transfer of a run (:class:`OtherBoardsMedian` on :data:`RUN_KEY`) needs the same
    app, size and launch on another board. A run no other board measured with exactly
    that launch (a user's block size, a grid-stride launch with fewer blocks) used to
    fall back to the app's median over every run, which mixes regimes: dotProd's median
    offset comes from its large-grid launches, and missed the GTX-750's 64-thread,
    32-block grid-stride runs by 38.8 % (23.0 % through the nearest run,
    ``tests/test_nearest_run.py``). Here the fallback is the app's run whose
    size and launch are closest, every axis of :data:`RUN_AXES` compared as
    ``log(1 + x)`` (a factor of 2 in block size weighs like a factor of 2 in input size):
    the run most likely to share the row's regime. The run's values are the median over
    the other boards that measured it. An axis missing on either side (a query without
    a launch) does not count. Ties go to the first run in the table's order of sizes and
    launches.

    Parameters
    ----------
    table : DataFrame
        Per (board, run) values: ``board``, :data:`RUN_KEY` and ``value_cols``.
    value_cols : list of str
    """

    def __init__(self, table: pd.DataFrame, value_cols):
        self.table = table
        self.value_cols = list(value_cols)
        self._boards = set(table["board"].unique()) if not table.empty else set()
        self._pools: dict = {}

    def _pool(self, board: str):
        """Per app: (log coordinates of each distinct run, its median values, its key) over the boards other than ``board``."""
        key = board if board in self._boards else None
        if key not in self._pools:
            pool = self.table[self.table["board"] != board] if key is not None else self.table
            per_app = {}
            if not pool.empty:
                runs = pool.groupby(RUN_KEY, dropna=False, sort=True)[self.value_cols].median().reset_index()
                for app, part in runs.groupby("app_id", sort=False):
                    per_app[app] = (_log_axes(part), part[self.value_cols].to_numpy(dtype=float),
                                    part[list(RUN_AXES)].to_numpy(dtype=float))
            self._pools[key] = per_app
        return self._pools[key]

    def __call__(self, rows: pd.DataFrame) -> pd.DataFrame:
        """For each row, the median values of its app's nearest run on the other boards (NaN if the app has none)."""
        return self.nearest(rows)[0]

    def nearest(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """For each row, the median values of its app's nearest run on the other boards, and that run.

        The run is ``rows`` with each axis of :data:`RUN_AXES` replaced by the nearest
        run's (NaN everywhere if the app has none).
        """
        out = np.full((len(rows), len(self.value_cols)), np.nan)
        where = np.full((len(rows), len(RUN_AXES)), np.nan)
        if not self.table.empty and len(rows):
            coords = _log_axes(rows)
            apps = rows["app_id"].to_numpy(dtype=object)
            boards = rows["board"].to_numpy(dtype=object)
            for (board, app), pick in pd.Series(range(len(rows))).groupby([boards, apps], sort=False).groups.items():
                candidates = self._pool(board).get(app)
                if candidates is None:
                    continue
                points, values, keys = candidates
                pick = np.asarray(pick, dtype=np.int64)
                step = max(1, _NEAREST_CHUNK // max(len(points), 1))  # bounds the rows x runs array
                for start in range(0, len(pick), step):
                    part = pick[start:start + step]
                    best = np.argmin(_masked_sq_distances(coords[part], points), axis=1)
                    out[part] = values[best]
                    where[part] = keys[best]
        runs = rows.drop(columns=[axis for axis in RUN_AXES if axis in rows]).assign(
            **{axis: where[:, j] for j, axis in enumerate(RUN_AXES)})
        return pd.DataFrame(out, index=rows.index, columns=self.value_cols), runs


def _masked_sq_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of ``a`` and ``b``, an axis missing (NaN) on either side counting 0.

    ``sum_k m_ak m_bk (a_k - b_k)^2`` written as three matrix products (so BLAS does the
    work, not a rows x runs x axes array): ``(m_a a^2) m_b' + m_a (m_b b^2)' - 2 (m_a a)(m_b b)'``.
    """
    ma, mb = np.isfinite(a), np.isfinite(b)
    a0, b0 = np.where(ma, a, 0.0), np.where(mb, b, 0.0)
    ma, mb = ma.astype(float), mb.astype(float)
    return (a0 * a0) @ mb.T + ma @ (b0 * b0).T - 2.0 * (a0 @ b0.T)


def _log_axes(frame: pd.DataFrame) -> np.ndarray:
    """``log(1 + x)`` of each axis of :data:`RUN_AXES` (NaN where missing or negative)."""
    columns = []
    for axis in RUN_AXES:
        if axis in frame:
            v = pd.to_numeric(frame[axis], errors="coerce").to_numpy(dtype=float)
        else:
            v = np.full(len(frame), np.nan)
        with np.errstate(invalid="ignore"):
            columns.append(np.where(v >= 0, np.log1p(np.where(v >= 0, v, 0.0)), np.nan))
    return np.column_stack(columns) if columns else np.empty((len(frame), 0))


def other_boards_median(table: pd.DataFrame, keys: list[str], value_cols: list[str], rows: pd.DataFrame) -> pd.DataFrame:
    """For each row, the median of ``value_cols`` over training boards other than the row's."""
    return OtherBoardsMedian(table, keys, value_cols)(rows)


def board_peaks(boards: pd.Series, registry=None) -> pd.DataFrame:
    """Per row: FP32 peak (FLOP/s) and peak bandwidth (bytes/s) of the board, NaN if unknown."""
    from perfml.boards import peak_bandwidth, peak_flops
    from perfml.closed_form.roofline import board_rates

    values = board_rates(boards, (peak_flops, peak_bandwidth), registry)
    return pd.DataFrame(values, columns=["compute", "bandwidth"], index=boards.index)
