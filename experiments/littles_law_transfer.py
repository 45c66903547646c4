"""How far a Little's-law transfer would carry the nine apps between boards (exploratory; nothing adopted).

The default transfer carries a run measured on the other boards to the target through one
closed-form model per app (BSP: cores x clock; roofline: bandwidth or FP32 rate). A
memory-bound run whose launch holds too few threads to keep the memory system busy is
*concurrency-limited* instead: by Little's law its throughput is the bytes in flight over
the memory latency (Little, Oper. Res. 9(3), 1961; applied to GPUs by Volkov, "Understanding
Latency Hiding on GPUs", PhD thesis, UC Berkeley, 2016, ch. 4), and it does not scale with
bandwidth until it reaches it. ``dotProd`` launched with 32 blocks of 256 threads streams at
99-145 GB/s on every board but one (38-74 % of their peaks), while the 80 GB/s GTX-750
reaches 88 % of its peak; the BSP transfer scales it by cores x clock and misses the GTX-750
by about 110 %.

The transfer tried here, for each row of board t, from the *same run* on the other boards b
(no learning, nothing fitted on t):

    T_conc   = min_b  T_b x R_b / R_t        R = resident threads of the launch on the board
                                               (min(blocks, wave size) x threads per block)
    T_stream = bytes / (BW_t x e_app)        e_app = the app's 90th-percentile bandwidth
                                               efficiency bytes / (T_b BW_b) over the other boards' runs
    T_little = max(T_conc, T_stream)

``T_conc`` assumes the same memory latency in ns on every board (no spec gives it; within
2012-2016 GDDR5 boards it is within a factor of about 1.5) and that a board whose own run was
bandwidth-bound only overestimates it (hence the minimum); ``T_stream`` is the roofline at the
app's demonstrated efficiency. It models memory only: a compute-bound app (the matMul
variants) is expected to lose.

Prints, per app, the leave-one-board-out MAPE of the default transfer baseline (``perfml
train``'s described sub-model with shrinkage 0, nested) and of ``T_little``, on the rows both
answer, and the same per board for ``dotProd``; asserts nothing.

Recorded (``experiments/results/littles_law_transfer.txt``): as formulated it is far worse,
33.96 % against 10.51 % over the 11,461 rows both answer, and worse on every app, ``dotProd``
included (23.54 % against 7.95 %). The efficiency is the flaw: ``e_app`` mixes regimes. The
one-thread-per-element ``dotProd`` launches are not bandwidth-bound at all (N = 8,388,608 on
the GTX-750: 3.7-4.8 ms, 14-18 GB/s, against 0.95 ms for 32 blocks of 256 threads), so a
per-app efficiency puts ``T_stream`` of the grid-32 run at 2.1 ms where it took 0.95 ms. A
concurrency-aware transfer would need the run's own regime, not the app's.

Usage: PYTHONPATH=. python experiments/littles_law_transfer.py [--data-home DIR]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

RUN = ["app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]


def resident_threads(rows: pd.DataFrame) -> np.ndarray:
    """Threads of each row's launch resident at once on its board: min(blocks, wave size) x block threads."""
    from perfml.boards import get_board, wave_size
    from perfml.errors import PerfmlError

    threads = (rows["block_x"] * rows["block_y"].fillna(1)).to_numpy(dtype=float)
    blocks = (rows["grid_x"] * rows["grid_y"].fillna(1)).to_numpy(dtype=float)
    out = np.full(len(rows), np.nan)
    cache: dict = {}
    for i, (board, t, n) in enumerate(zip(rows["board"], threads, blocks)):
        if not (np.isfinite(t) and np.isfinite(n)):
            continue
        key = (board, int(t))
        if key not in cache:
            try:
                cache[key] = wave_size(get_board(board), int(t))
            except (PerfmlError, ValueError):
                cache[key] = np.nan
        out[i] = min(n, cache[key]) * t
    return out


def little_transfer(rows: pd.DataFrame) -> np.ndarray:
    """T_little (ms) of each row from the other boards' rows (module docstring); NaN where no other board ran it."""
    from perfml.boards import get_board, peak_bandwidth
    from perfml.characterize._work import app_work

    bytes_moved = app_work(rows)[0]
    bw = rows["board"].map(lambda b: peak_bandwidth(get_board(b))).to_numpy(dtype=float)
    frame = rows[["board", *RUN]].copy()
    frame["t"] = rows["measured_ms"].to_numpy(dtype=float)
    frame["resident"] = resident_threads(rows)
    frame["bytes"] = bytes_moved
    frame["eff"] = bytes_moved / (frame["t"] * 1e-3) / bw
    frame["bw"] = bw
    per_run = frame.groupby(["board", *RUN], dropna=False).agg(t=("t", "median"), resident=("resident", "first"),
                                                                eff=("eff", "median")).reset_index()
    out = np.full(len(rows), np.nan)
    for board in frame["board"].unique():
        others = per_run[per_run["board"] != board]
        eff = others.groupby("app_id")["eff"].quantile(0.9)
        conc = others.assign(scaled=others["t"] * others["resident"])  # T_b R_b, divided by R_t below
        best = conc.groupby(RUN, dropna=False)["scaled"].min()
        mine = frame[frame["board"] == board]
        idx = pd.MultiIndex.from_frame(mine[RUN])
        t_conc = best.reindex(idx).to_numpy() / mine["resident"].to_numpy()
        t_stream = mine["bytes"].to_numpy() / (mine["bw"].to_numpy() * mine["app_id"].map(eff).to_numpy()) * 1e3
        out[(frame["board"] == board).to_numpy()] = np.maximum(t_conc, t_stream)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home
    from perfml.learned.intervals import board_oof_predictions
    from perfml.learned.training import corpus_rows, make_corpus_model

    home = DataHome(find_data_home(args.data_home))
    rows = corpus_rows(home, corpora=["described"])["described"]
    y = rows["measured_ms"].to_numpy(dtype=float)
    base = board_oof_predictions(make_corpus_model("described", data_home=home, n_jobs=2).set_params(shrinkage=0.0),
                                 rows, y)
    little = little_transfer(rows)
    both = np.isfinite(base) & np.isfinite(little)
    ape = pd.DataFrame({"board": rows["board"], "app_id": rows["app_id"],
                        "transfer": np.abs(base / y - 1) * 100, "little": np.abs(little / y - 1) * 100})[both]
    print(f"rows both answer: {int(both.sum())} of {len(rows)} (T_little needs the same run on another board)\n")
    pd.set_option("display.width", 200)
    table = ape.groupby("app_id")[["transfer", "little"]].mean()
    table.loc["all"] = ape[["transfer", "little"]].mean()
    print("leave-one-board-out MAPE (%) per app: default transfer baseline (nested) vs T_little")
    print(table.round(2).to_string())
    print("\ndotProd per board")
    print(ape[ape["app_id"] == "dotProd"].groupby("board")[["transfer", "little"]].mean().round(2).to_string())


if __name__ == "__main__":
    main()
