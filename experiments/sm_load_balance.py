"""Does the SM load balance of a launch carry a kernel between boards? (exploratory; nothing adopted)

Seed 000 (Sec. IV-E, "Streaming Multiprocessor (SM) Load Balancing") measures how evenly a
kernel's work spreads over the SMs:

    LOADBALANC_SM = 1 - (max_SM(TotActiveCycles) - AvgCycles) / max_SM(TotActiveCycles)
                  = AvgCycles / max_SM(TotActiveCycles)

with the potential speedup 1 / LOADBALANC_SM (Sec. V). Taken from the launch alone, with the
blocks of equal work dealt round-robin to S SMs, the busiest SM runs ceil(B / S) blocks where
the average is B / S, so

    LOADBALANC_SM = (B / S) / ceil(B / S)        (static_load_balance below)

and a model that assumes every core busy (the BSP model of seed 003, eq. 3: work / (R x P))
is short by the factor 1 / LOADBALANC_SM. It matters only for launches of few blocks: the
nine apps' ``subSeqMax`` (32 blocks of 128 threads at every size) and the small sizes of the
others, and the Rodinia kernels whose grids shrink (``lud_perimeter``).

Part 1 (data): subSeqMax's measured time x boost clock (millions of cycles at the largest
common size) beside ceil(32 / S) blocks per SM, per board. Where the cycles grow with the
blocks per SM, the SMs are throughput-bound and the correction applies; where they do not,
each block's own latency chain sets the time (Habitat's wave scaling, which perfml has:
``perfml.learned.features.closed_form.wave_logs``).

Part 2 (models): leave-one-board-out of the nine apps (``experiments/unseen_boards.toml``:
``hybrid_xgboost_issue``, ``transfer_only_issue``) and of the Rodinia kernels
(``experiments/rodinia_unseen_boards.toml``: ``hybrid_xgboost_issue_waves_forced``), each in
three configurations:

* ``default``: as shipped;
* ``balanced_bsp``: the BSP time of every row divided by its LOADBALANC_SM (the correction
  in place; the transfers through BSP change with it);
* ``candidate``: the corrected BSP time as a fifth closed-form baseline (``bsp_balanced``)
  beside BSP, roofline memory / compute and waves, chosen per app like the others.

The configurations are applied by patching :func:`perfml.learned.features.closed_form.closed_form_logs`
(and the baselines it lists) for the run of this script only; nothing of the library changes.
Prints MAPE per model, board and kernel. Measures; asserts nothing.

Usage: PYTHONPATH=. python experiments/sm_load_balance.py [--configs ...] [--corpus nine-apps rodinia] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CONFIGS = ("default", "balanced_bsp", "candidate")
CORPORA = {
    "nine-apps": ("unseen_boards.toml", ["hybrid_xgboost_issue", "transfer_only_issue"]),
    "rodinia": ("rodinia_unseen_boards.toml", ["hybrid_xgboost_issue_waves_forced"]),
}


def static_load_balance(blocks, sms) -> np.ndarray:
    """LOADBALANC_SM of a launch of ``blocks`` equal blocks dealt round-robin to ``sms`` SMs (seed 000, Sec. IV-E).

    ``(B / S) / ceil(B / S)``, in (0, 1]; 1 where the blocks divide evenly. NaN where either
    is missing or not positive.
    """
    b = np.asarray(blocks, dtype=float)
    s = np.asarray(sms, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (b / s) / np.ceil(b / s)
    return np.where((b > 0) & (s > 0) & np.isfinite(out), out, np.nan)


def row_load_balance(rows: pd.DataFrame, registry=None) -> np.ndarray:
    """:func:`static_load_balance` of each row (``board``, ``grid_x``, ``grid_y``) on its board."""
    from perfml.boards import get_board

    blocks = (rows["grid_x"] * rows["grid_y"].fillna(1)).to_numpy(dtype=float)
    codes, names = pd.factorize(rows["board"].astype(str))
    sms = np.array([get_board(name, registry=registry).sms or np.nan for name in names], dtype=float)
    return static_load_balance(blocks, sms[codes])


@contextlib.contextmanager
def load_balance(config: str):
    """Patch the closed-form times for one configuration of Part 2; restores everything on exit."""
    from perfml.learned.features import builder, closed_form

    if config == "default":
        yield
        return
    original_logs, original_baselines = closed_form.closed_form_logs, closed_form.BASELINES

    def patched(rows, **kwargs):
        out = original_logs(rows, **kwargs)
        # a launch the row does not give (NaN balance) keeps the uncorrected time
        correction = -np.log(np.nan_to_num(row_load_balance(rows, kwargs.get("registry")), nan=1.0))
        if config == "balanced_bsp":
            out["bsp"] = out["bsp"] + correction
        else:
            out["bsp_balanced"] = out["bsp"] + correction
        return out

    closed_form.closed_form_logs = builder.closed_form_logs = patched
    if config == "candidate":
        closed_form.BASELINES = (*original_baselines, "bsp_balanced")
    try:
        yield
    finally:
        closed_form.closed_form_logs = builder.closed_form_logs = original_logs
        closed_form.BASELINES = original_baselines


def subseqmax_cycles(rt: pd.DataFrame, registry=None) -> pd.DataFrame:
    """Part 1: per board, blocks per SM of subSeqMax's 32-block launch and its time in millions of boost cycles."""
    from perfml.boards import get_board

    rows = rt[rt["app_id"] == "subSeqMax"]
    size = rows.groupby("input_size")["board"].nunique()
    size = size[size == rows["board"].nunique()].index.max()  # the largest size every board measured
    at = rows[rows["input_size"] == size].groupby("board").agg(
        measured_ms=("measured_ms", "median"), blocks=("grid_x", "median"), threads=("block_x", "median"))
    boards = [get_board(name, registry=registry) for name in at.index]
    at["sms"] = [b.sms for b in boards]
    at["blocks_per_sm"] = np.ceil(at["blocks"] / at["sms"]).astype(int)
    at["boost_mhz"] = [b.boost_clock_mhz for b in boards]
    at["mcycles"] = at["measured_ms"] * at["boost_mhz"] / 1e3
    at["architecture"] = [str(b.architecture) for b in boards]
    at.attrs["input_size"] = int(size)
    return at.sort_values(["architecture", "blocks_per_sm", "mcycles"])


def run_corpus(corpus: str, config: str, data_home) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, float]:
    """Part 2: one corpus under one configuration: (summary, per board, per kernel, seconds)."""
    from perfml.experiments.runner import run_experiment
    from perfml.experiments.spec import load_experiment

    file, models = CORPORA[corpus]
    t0 = time.perf_counter()
    with load_balance(config):
        result = run_experiment(load_experiment(HERE / file), data_home=data_home, track=False, models=models)
    seconds = time.perf_counter() - t0
    summary = result.summary[result.summary["model"].isin(models)][["model", "n", "mape", "within_band"]]
    per_board = result.per_board.pivot_table(index="board", columns="model", values="mape")
    kernel = result.per_app.columns[0]
    per_kernel = result.per_app.pivot_table(index=kernel, columns="model", values="mape")
    return summary.assign(config=config), per_board.add_suffix(f" [{config}]"), per_kernel.add_suffix(f" [{config}]"), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument("--corpus", nargs="+", choices=tuple(CORPORA), default=list(CORPORA))
    args = parser.parse_args()
    from perfml.datasets import as_data_home, find_data_home
    from perfml.experiments.runner import experiment_data
    from perfml.experiments.spec import load_experiment

    home = as_data_home(find_data_home(args.data_home), what="sm_load_balance")
    pd.set_option("display.width", 250)
    nine = experiment_data(load_experiment(HERE / CORPORA["nine-apps"][0]), home)
    cycles = subseqmax_cycles(nine)
    print(f"Part 1: subSeqMax at N = {cycles.attrs['input_size']:,} (32 blocks of 128 threads): measured time x boost clock")
    print(cycles[["architecture", "sms", "blocks_per_sm", "boost_mhz", "measured_ms", "mcycles"]].round(2).to_string())
    print()
    for corpus in args.corpus:
        summaries, boards, kernels = [], [], []
        for config in args.configs:
            summary, per_board, per_kernel, seconds = run_corpus(corpus, config, home)
            print(f"{corpus} [{config}]: {seconds:.0f} s")
            summaries.append(summary)
            boards.append(per_board)
            kernels.append(per_kernel)
        print(f"\nPart 2, {corpus}: leave-one-board-out MAPE % and share within 0.8-1.2")
        table = pd.concat(summaries, ignore_index=True)
        table["within_band"] = 100 * table["within_band"]
        print(table.pivot_table(index="model", columns="config", values=["mape", "within_band"]).round(2).to_string())
        print(f"\n{corpus}: MAPE % per board")
        print(pd.concat(boards, axis=1).round(2).to_string())
        print(f"\n{corpus}: MAPE % per kernel")
        print(pd.concat(kernels, axis=1).round(2).to_string())
        print()


if __name__ == "__main__":
    main()
