"""Is a board with more of everything ever predicted slower? A physical-plausibility check.

Board A *dominates* board B when both have the same compute capability and A has at least
as much of every capacity perfml's models see, and more of one: SMs, boost clock,
issue-limited and datasheet FP32 rate, DRAM bandwidth, L2, shared memory, registers,
resident threads and blocks per SM (registry values, ``perfml/data/boards.toml``; a pair
where any of them is unknown is left out). The same kernel launch should then never take
longer on A: the launch gets at least the same of every resource.

For every dominating pair of the registry, the query rows (real kernels: the run keys of
the data home's application runtimes, and a seeded sample of its operator calls) are
predicted on both boards through ``perfml.learned.bundle.predict_any`` (what ``perfml
predict`` writes), and the rows where A comes out slower than B are counted. Nothing is
measured or fitted here; it checks the model, not the hardware.

Usage: PYTHONPATH=. python experiments/board_dominance.py [--model DIR] [--data-home DIR]
       [--runs-per-kernel N] [--calls-per-op N] [--seed S]
"""

from __future__ import annotations

import argparse
import math
import re

import numpy as np
import pandas as pd

#: Capacities compared (registry fields, and the rates derived from them).
CAPACITIES = ("sms", "boost_clock_mhz", "l2_bytes", "shared_mem_per_sm_kb", "registers_per_sm",
              "max_threads_per_sm", "max_blocks_per_sm")
APP_COLUMNS = ["app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]


def capacities(board) -> dict[str, float] | None:
    """The board's capacities, or None when one is unknown."""
    from perfml.boards import issue_limited_flops, peak_bandwidth, peak_flops

    try:
        values = {name: float(getattr(board, name)) for name in CAPACITIES}
        values["fp32_issue"] = float(issue_limited_flops(board))
        values["fp32_peak"] = float(peak_flops(board, "fp32"))
        values["dram_bandwidth"] = float(peak_bandwidth(board))
    except Exception:  # noqa: BLE001 - a missing field in any form: the board is left out
        return None
    return values if all(math.isfinite(v) for v in values.values()) else None


def dominating_pairs() -> list[tuple[str, str]]:
    """(A, B) for every registry pair where A dominates B (same compute capability)."""
    from perfml.boards import list_boards

    known = {b.name: (b.compute_capability, capacities(b)) for b in list_boards()}
    known = {name: v for name, v in known.items() if v[0] and v[1] is not None}
    pairs = []
    for a, (cc_a, cap_a) in known.items():
        for b, (cc_b, cap_b) in known.items():
            if a != b and cc_a == cc_b and all(cap_a[k] >= cap_b[k] for k in cap_a) and any(cap_a[k] > cap_b[k] for k in cap_a):
                pairs.append((a, b))
    return sorted(pairs)


def application_rows(home) -> pd.DataFrame:
    """The data home's application runs (nine apps and Rodinia): run key, board, measured mean time."""
    from perfml.datasets import load_runtimes

    rt = load_runtimes(home)
    rt = rt[rt["source"].isin(["gpuperfpredict-nca", "gpuperfpredict-rodinia"])]
    return rt[["board", *APP_COLUMNS]].assign(time_ms=rt["time_ms_mean"])


def operator_rows(home) -> pd.DataFrame:
    """The data home's operator calls: op, its dimensions, board, measured time (NaN dims of other ops)."""
    from perfml.datasets import DLOPS_OP_DIMS, load_dlops_runtimes

    d = load_dlops_runtimes(home)
    dims = sorted({c for cols in DLOPS_OP_DIMS.values() for c in cols})
    out = d[["board", "op"]].copy()
    for op, cols in DLOPS_OP_DIMS.items():  # only the op's own dimensions name the call
        mine = (d["op"] == op).to_numpy()
        for c in dims:
            out.loc[mine, c] = d.loc[mine, c] if c in cols else np.nan
    return out.assign(time_ms=d["time_ms"])


def sample_queries(rows: pd.DataFrame, kernel: str, per_kernel: int, seed: int) -> pd.DataFrame:
    """A seeded sample of at most ``per_kernel`` distinct calls of each kernel (no board, no time)."""
    calls = rows.drop(columns=["board", "time_ms"]).drop_duplicates().dropna(axis=1, how="all")
    shuffled = calls.sample(frac=1.0, random_state=seed)
    return shuffled.groupby(kernel, sort=False).head(per_kernel).reset_index(drop=True)


def measured_ratio(rows: pd.DataFrame, q: pd.DataFrame, a: str, b: str) -> np.ndarray:
    """Measured time on A over measured time on B of each query row (median of repeats; NaN where one lacks it)."""
    keys = list(q.columns)
    times = [q.merge(rows[rows["board"] == board].groupby(keys, dropna=False)["time_ms"].median().reset_index(),
                     on=keys, how="left")["time_ms"].to_numpy(dtype=float) for board in (a, b)]
    return times[0] / times[1]


def launchable(q: pd.DataFrame, boards: tuple[str, ...]) -> pd.DataFrame:
    """The application rows whose launch every board of ``boards`` accepts (threads per block, grid)."""
    from perfml.boards import MAX_GRID_X_BEFORE_CC3, get_board

    if "block_x" not in q:
        return q
    threads = q["block_x"].fillna(1) * q["block_y"].fillna(1)
    keep = np.ones(len(q), dtype=bool)
    for name in boards:
        board = get_board(name)
        keep &= (threads <= board.max_threads_per_block).to_numpy()
        if float(board.compute_capability) < 3.0:
            keep &= (q["grid_x"].fillna(1) <= MAX_GRID_X_BEFORE_CC3).to_numpy()
    return q[keep].reset_index(drop=True)


def predictable(bundle, q: pd.DataFrame, boards: tuple[str, ...]) -> pd.DataFrame:
    """The rows every board of ``boards`` can run (query checks: block, grid, buffers in memory)."""
    from perfml.errors import QueryValidationError
    from perfml.learned.bundle import predict_any

    q = launchable(q, boards)
    for board in boards:
        while len(q):
            try:
                predict_any(bundle, q.assign(board=board), "queries")
                break
            except QueryValidationError as exc:  # "queries: row N (line N + 1), ...": drop it, check again
                row = re.match(r"queries: row (\d+) ", str(exc))
                if row is None:
                    raise
                q = q.drop(index=q.index[int(row.group(1)) - 1]).reset_index(drop=True)  # rows count from 1
    return q


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models/default")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--runs-per-kernel", type=int, default=200)
    parser.add_argument("--calls-per-op", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home
    from perfml.learned.bundle import load_predictor, predict_any

    home = DataHome(find_data_home(args.data_home))
    bundle = load_predictor(args.model, data_home=home)
    rows = {"applications": application_rows(home), "operators": operator_rows(home)}
    queries = {"applications": sample_queries(rows["applications"], "app_id", args.runs_per_kernel, args.seed),
               "operators": sample_queries(rows["operators"], "op", args.calls_per_op, args.seed)}
    pairs = dominating_pairs()
    print(f"model {args.model}; {len(pairs)} dominating pairs of the registry (same compute capability); "
          + "; ".join(f"{k}: {len(q)} query rows" for k, q in queries.items()))
    print("measured: where both boards measured the row (data home), how many of those rows the dominating "
          "board ran slower itself\n")
    print(f"{'A (dominates)':<16} {'B':<21} {'corpus':<13} {'rows':>5} {'A slower':>8} {'> 1 %':>6} {'> 5 %':>6} "
          f"{'max A/B':>8} {'measured':>9} {'A slower':>8}  worst row")
    totals = {k: np.zeros(6) for k in queries}
    worst_all = dict.fromkeys(queries, 1.0)
    for a, b in pairs:
        for corpus, q in queries.items():
            q = predictable(bundle, q, (a, b))
            pa = predict_any(bundle, q.assign(board=a), "queries")["predicted_ms"].to_numpy(dtype=float)
            pb = predict_any(bundle, q.assign(board=b), "queries")["predicted_ms"].to_numpy(dtype=float)
            ratio = pa / pb
            slower = ratio > 1 + 1e-9
            measured = measured_ratio(rows[corpus], q, a, b)
            both = np.isfinite(measured)
            worst = int(np.argmax(ratio))
            key = q.iloc[worst].dropna().to_dict()
            print(f"{a:<16} {b:<21} {corpus:<13} {len(q):>5} {int(slower.sum()):>8} {int((ratio > 1.01).sum()):>6} "
                  f"{int((ratio > 1.05).sum()):>6} {ratio.max():>8.3f} {int(both.sum()):>9} "
                  f"{int((measured[both] > 1 + 1e-9).sum()):>8}  "
                  + (", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in key.items())
                     if slower.any() else "-"))
            totals[corpus] += [len(q), slower.sum(), (ratio > 1.01).sum(), (ratio > 1.05).sum(), both.sum(),
                               (measured[both] > 1 + 1e-9).sum()]
            worst_all[corpus] = max(worst_all[corpus], float(ratio.max()))
    print()
    for corpus, (n, slower, one, five, n_measured, measured_slower) in totals.items():
        print(f"{corpus}: {int(n)} comparisons; the dominating board predicted slower in {int(slower)} "
              f"({100 * slower / max(n, 1):.2f} %), by more than 1 % in {int(one)}, by more than 5 % in {int(five)}; "
              f"worst ratio {worst_all[corpus]:.3f}; of {int(n_measured)} rows both boards measured, the dominating "
              f"board ran slower in {int(measured_slower)}")


if __name__ == "__main__":
    main()
