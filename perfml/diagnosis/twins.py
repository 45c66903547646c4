"""Check the criteria model on kernel twins that differ by one optimization.

Seed 000 (Sec. VI) validates the model by tuning a kernel and comparing the potential
speedup predicted for the original code with the speedup the tuned code achieved
(reduction: 5.8x predicted, 4.98x measured). The NCA datasets hold such twins, measured
on many boards (``shared/datasets/README.md``, "Application ids"):

* global-memory matMul, uncoalesced -> coalesced (``matMul_gpu_uncoalesced`` -> ``matMul_gpu``)
* shared-memory matMul, uncoalesced -> coalesced
  (``matMul_gpu_sharedmem_uncoalesced`` -> ``matMul_gpu_sharedmem``)
* matSum, uncoalesced -> coalesced (``matrix_sum_normal`` -> ``matrix_sum_coalesced``)

For each pair, board and input size profiled for both twins (block_16 = 16x16 threads):

(a) the criterion the optimization targets must be better (strictly larger) for the
    optimized twin. Coalescing is what L1/L2 granularity measure (Sec. IV-F, footnote 3);
    L2_GRANULARITY is the primary criterion because it is supported on every compute
    capability, L1_GRANULARITY (CC 3.x only) and, for the shared-memory pair,
    SHMEMEFFICIENCY are reported as well;
(b) the overall PotentialSpeedup predicted for the unoptimized twin is compared with the
    measured speedup ``time(unoptimized) / time(optimized)`` (``runtimes.csv.gz``, source
    ``gpuperfpredict-nca``, same board, app, input size, 16x16 launch, default GPU
    configuration, same kernel code version as the profile; median time of the
    repetitions). The potential speedup of the targeted criterion is given beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfml.diagnosis._report import DEFAULT_BLOCK_DIR, diagnose_row, resolve_board
from perfml.diagnosis.criteria import BoardLike, CharacterizationLike
from perfml.errors import PerfmlError

__all__ = ["TWIN_PAIRS", "TwinPair", "twin_cases", "twin_check", "twin_table", "twin_summary"]

RUNTIME_SOURCE = "gpuperfpredict-nca"


@dataclass(frozen=True)
class TwinPair:
    """Two app ids that differ by one optimization, and the criteria it targets.

    ``name`` uses the paper labels of the README's application table (MMGU = global
    uncoalesced matMul, MMGC = global coalesced, MMSU/MMSC = shared-memory matMul,
    MAU/MAC = matSum uncoalesced/coalesced).
    """

    name: str
    unoptimized: str
    optimized: str
    targeted: tuple[str, ...]

    @property
    def primary(self) -> str:
        """The targeted criterion that decides (a)."""
        return self.targeted[0]


TWIN_PAIRS: tuple[TwinPair, ...] = (
    TwinPair("MMGU->MMGC", "matMul_gpu_uncoalesced", "matMul_gpu",
             ("L2_GRANULARITY", "L1_GRANULARITY")),
    TwinPair("MMSU->MMSC", "matMul_gpu_sharedmem_uncoalesced", "matMul_gpu_sharedmem",
             ("L2_GRANULARITY", "L1_GRANULARITY", "SHMEMEFFICIENCY")),
    TwinPair("MAU->MAC", "matrix_sum_normal", "matrix_sum_coalesced",
             ("L2_GRANULARITY", "L1_GRANULARITY")),
)


def _runtime_index(runtimes: pd.DataFrame) -> pd.DataFrame:
    rt = runtimes[
        (runtimes["source"] == RUNTIME_SOURCE)
        & (runtimes["block_x"] == 16)
        & (runtimes["block_y"] == 16)
        & (runtimes["gpu_config"].fillna("default") == "default")
    ].copy()
    rt["_block16"] = rt["subsets"].fillna("").str.contains("block_16", regex=False)
    return rt


def _measured_ms(rt: pd.DataFrame, board: str, app_id: str, size: int, kernel: str) -> tuple[float, bool]:
    """Median time of the 16x16 run of (board, app, size); same kernel version preferred.

    Returns (time in ms or NaN, whether the kernel version matched the profile's).
    """
    rows = rt[(rt["board"] == board) & (rt["app_id"] == app_id) & (rt["input_size"] == size)]
    same = rows[rows["kernel"] == kernel]
    for cand, matched in ((same[same["_block16"]], True), (same, True), (rows[rows["_block16"]], False)):
        if len(cand):
            return float(cand["time_ms_median"].iloc[0]), matched
    return float("nan"), False


def twin_cases(
    profiles: pd.DataFrame,
    runtimes: pd.DataFrame,
    *,
    board_lookup: Callable[[str], BoardLike] | None = None,
    characterization: CharacterizationLike | None = None,
    pairs: tuple[TwinPair, ...] = TWIN_PAIRS,
    block_dir: str = DEFAULT_BLOCK_DIR,
) -> pd.DataFrame:
    """One row per (pair, board, input size) profiled for both twins.

    Columns: pair, board, compute_capability, input_size, ``<crit>_unopt`` /
    ``<crit>_opt`` for every targeted criterion (NaN when unsupported),
    ``predicted_potential`` (overall PotentialSpeedup of the unoptimized twin),
    ``predicted_targeted`` (potential speedup of the primary criterion),
    ``bound``, ``measured_speedup``, ``kernel_matched``, ``error``.
    """
    lookup = board_lookup or resolve_board
    prof = profiles[profiles["block_dir"] == block_dir]
    rt = _runtime_index(runtimes)
    records: list[dict[str, object]] = []
    boards_cache: dict[str, BoardLike] = {}
    for pair in pairs:
        un = prof[prof["app_id"] == pair.unoptimized]
        op = prof[prof["app_id"] == pair.optimized]
        for board in sorted(set(un["board"]) & set(op["board"])):
            if board not in boards_cache:
                boards_cache[board] = lookup(board)
            b = boards_cache[board]
            ub, ob = un[un["board"] == board], op[op["board"] == board]
            for size in sorted(set(ub["input_size"]) & set(ob["input_size"])):
                ru = _pick(ub[ub["input_size"] == size], ub)
                ro = _pick(ob[ob["input_size"] == size], ob)
                rec: dict[str, object] = {
                    "pair": pair.name,
                    "board": board,
                    "compute_capability": f"{float(ru['compute_capability']):.1f}",
                    "input_size": int(size),
                    "error": "",
                }
                try:
                    du = diagnose_row(ru, b, characterization, strict=False)
                    do = diagnose_row(ro, b, characterization, strict=False)
                except PerfmlError as exc:  # e.g. a board attribute missing: reported, not fatal
                    rec["error"] = str(exc)
                    records.append(rec)
                    continue
                for crit in pair.targeted:
                    rec[f"{crit}_unopt"] = _nan(du.report.value(crit))
                    rec[f"{crit}_opt"] = _nan(do.report.value(crit))
                rec["predicted_potential"] = _nan(du.overall.value)
                rec["bound"] = du.overall.bound
                rec["predicted_targeted"] = _nan(du.speedups[pair.primary].value)
                tu, mu = _measured_ms(rt, board, pair.unoptimized, int(size), str(ru["kernel"]))
                to, mo = _measured_ms(rt, board, pair.optimized, int(size), str(ro["kernel"]))
                rec["measured_speedup"] = tu / to if to > 0 else float("nan")
                rec["kernel_matched"] = bool(mu and mo)
                records.append(rec)
    return pd.DataFrame.from_records(records)


def _pick(rows: pd.DataFrame, all_rows: pd.DataFrame) -> pd.Series:
    if len(rows) == 1:
        return rows.iloc[0]
    counts = all_rows["kernel"].value_counts()
    return rows.assign(_n=rows["kernel"].map(counts)).sort_values("_n", ascending=False).iloc[0]


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _improved(cases: pd.DataFrame, crit: str) -> tuple[int, int]:
    u, o = cases.get(f"{crit}_unopt"), cases.get(f"{crit}_opt")
    if u is None or o is None:
        return 0, 0
    ok = u.notna() & o.notna()
    return int((o[ok] > u[ok] + 1e-12).sum()), int(ok.sum())


def twin_table(cases: pd.DataFrame, pairs: tuple[TwinPair, ...] = TWIN_PAIRS) -> pd.DataFrame:
    """Per (pair, board), aggregated over sizes (medians), with verdict (a) per criterion.

    ``a_<crit>`` is ``"yes k/n"`` when the criterion is strictly better for the optimized
    twin at a majority of the n sizes, ``"no k/n"`` otherwise, ``"unsupported"`` when the
    compute capability cannot give it. ``a_holds`` is the verdict of the primary criterion.
    ``ratio`` = median predicted potential / median measured speedup.
    """
    rows: list[dict[str, object]] = []
    by_name = {p.name: p for p in pairs}
    ok_cases = cases[cases["error"] == ""] if "error" in cases else cases
    for (pair_name, board), g in ok_cases.groupby(["pair", "board"], sort=False):
        pair = by_name[pair_name]
        prim = pair.primary
        row: dict[str, object] = {
            "pair": pair_name,
            "board": board,
            "cc": g["compute_capability"].iloc[0],
            "n_sizes": len(g),
            "criterion": prim,
            "crit_unopt": float(np.nanmedian(g[f"{prim}_unopt"])),
            "crit_opt": float(np.nanmedian(g[f"{prim}_opt"])),
        }
        for crit in pair.targeted:
            k, n = _improved(g, crit)
            row[f"a_{crit}"] = "unsupported" if n == 0 else f"{'yes' if k > n / 2 else 'no'} {k}/{n}"
        k, n = _improved(g, prim)
        row["a_holds"] = bool(n and k > n / 2)
        pred_ok = g["predicted_potential"].notna() & g["measured_speedup"].notna()
        row["n_predicted"] = int(pred_ok.sum())
        row["predicted_potential"] = _median(g.loc[pred_ok, "predicted_potential"])
        row["predicted_targeted"] = _median(g["predicted_targeted"])
        row["inverse_targeted"] = _median(1.0 / g[f"{prim}_unopt"])
        row["measured_speedup"] = _median(g.loc[pred_ok, "measured_speedup"])
        row["measured_all_sizes"] = _median(g["measured_speedup"])
        row["ratio"] = row["predicted_potential"] / row["measured_speedup"]
        known = g.loc[g["bound"] != "unknown", "bound"]
        row["bound"] = known.mode().iloc[0] if len(known) else "unknown"
        row["kernel_matched"] = bool(g["kernel_matched"].all())
        rows.append(row)
    return pd.DataFrame.from_records(rows)


def _median(x: pd.Series) -> float:
    x = x.dropna()
    return float(np.median(x)) if len(x) else float("nan")


def twin_summary(table: pd.DataFrame) -> dict[str, float]:
    """Headline figures of the twin table (shares over (pair, board) cases)."""
    n = len(table)
    if n == 0:
        return {"cases": 0}
    pot, meas = table["predicted_potential"], table["measured_speedup"]
    return {
        "cases": n,
        "a_holds_share": float(table["a_holds"].mean()),
        "potential_ge_measured_share": float((pot >= meas).mean()),
        "targeted_ge_measured_share": float((table["predicted_targeted"] >= meas).mean()),
        "median_ratio": float(np.nanmedian(table["ratio"])),
        "median_log10_abs_ratio": float(np.nanmedian(np.abs(np.log10(table["ratio"])))),
    }


def twin_check(
    data_home: str | None = None,
    *,
    characterization: CharacterizationLike | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-size cases and the per (pair, board) table, from the data home's tables."""
    from perfml.datasets import load_profiles_nca, load_runtimes

    cases = twin_cases(
        load_profiles_nca(data_home), load_runtimes(data_home), characterization=characterization
    )
    return cases, twin_table(cases)
