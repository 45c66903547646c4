"""The operators' launch floor in the base time: leave-one-board-out with and without it.

``OperatorRegressor(launch_floor=True)`` (the default since this script was written) takes
``T_floor(op) + T_bound`` as the base time over which it learns its residual
(:mod:`perfml.learned.operator_model._floor`); ``launch_floor=False`` the roofline bound
alone, as before. Both are scored as ``perfml train`` scores its ``dlops`` sub-model: every
row of the data home's ``dlops_runtimes.csv.gz`` (both NeuSight splits), leave-one-board-out
over the five GPUs, the model's own defaults otherwise
(:func:`perfml.learned.training.fit_corpus` with the estimator replaced), and the 90 %
interval's coverage of each held-out board's rows per op class (calibrated on the other
boards, as ``perfml train`` reports it). The calibrated tier (``dlops-calibrated``) does
not use the floor: its base time's streaming curve is the board's own ``add`` calls.

From the same out-of-fold predictions it prints NeuSight's statistic, the APE of the summed
latency of each held-out board's ``test``-split rows (its LLM-shaped calls) per op class,
averaged over the boards (:func:`perfml.experiments.dlops.neusight_comparison` computes it
for the experiments); and, for the newest generation (the A100 held out, the model fitted on
the four older GPUs), the MAPE per op class and the same summed-latency error.

It also asks both models for calls smaller than any in the corpus (an ``add`` of 8 x 10
floats, ...) on every board, and prints the prediction next to the smallest time the
board measured for that operator: a time below that is nonsense for a call timed as
NeuSight times one (CUDA events around the call).

    python experiments/launch_floor.py [--max-rows N]

Prints the figures recorded in ``experiments/results/launch_floor.txt`` (about 10 min on 2
cores).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from perfml.datasets import DataHome, find_data_home
from perfml.learned.operators import OperatorRegressor
from perfml.learned.intervals import held_out_board_coverage
from perfml.learned.training import calibration_groups, corpus_figures, fit_corpus, operator_training_rows

#: the newest generation of the corpus, held out of the newest-board fit
NEWEST = "A100-PCIe-40GB"


def summed_ape(frame: pd.DataFrame) -> pd.Series:
    """Per op class: the APE (%) of the summed predicted vs summed measured latency of the
    ``test``-split rows, per board, averaged over the boards (NeuSight's per-class statistic)."""
    test = frame[frame["split"] == "test"]
    per_board = test.groupby(["board", "op_class"]).apply(
        lambda g: 100 * abs(g["predicted_ms"].sum() / g["measured_ms"].sum() - 1), include_groups=False)
    return per_board.unstack().mean()

#: calls smaller than any of the corpus (its smallest add has 37 elements)
TINY_CALLS = (
    {"op": "add", "B": 8, "H": 10},
    {"op": "softmax", "B": 2, "H": 16},
    {"op": "ln", "B": 2, "H": 64},
    {"op": "bmm", "B": 1, "M": 4, "N": 4, "K": 4},
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-rows", type=int, default=None, help="subsample the operator rows (default: all)")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    home = DataHome(find_data_home(args.data_home))  # an entry point: resolves the data home itself
    rows = operator_training_rows(home, max_rows=args.max_rows)
    corpus = "dlops"
    boards = sorted(rows["board"].astype(str).unique())
    tiny = pd.DataFrame([{"board": b, **call} for b in boards for call in TINY_CALLS])
    smallest = rows.groupby(["board", "op"])["measured_ms"].min()
    tables, per_board, coverage, tiny_out, sums, newest = [], [], [], [], [], []
    op_class = calibration_groups(corpus, rows)
    is_newest = (rows["board"] == NEWEST).to_numpy()
    for launch_floor in (False, True):
        name = f"launch_floor={launch_floor}"
        start = time.perf_counter()
        model, _, oof = fit_corpus(corpus, rows, estimator=OperatorRegressor(launch_floor=launch_floor, n_jobs=2))
        seconds = time.perf_counter() - start
        for entry in corpus_figures(corpus, rows, oof):
            tables.append({"model": name, **entry})
        scored = ~np.isnan(oof)
        ape = pd.Series(100 * np.abs(oof[scored] / rows["measured_ms"].to_numpy()[scored] - 1))
        per_board.append(ape.groupby(rows["board"].to_numpy()[scored]).mean().rename(name))
        groups = calibration_groups(corpus, rows)
        for group in dict.fromkeys(groups):
            m = groups == group
            cov = held_out_board_coverage(oof[m], rows["measured_ms"].to_numpy()[m], rows["board"].to_numpy()[m])
            coverage.append({"model": name, "group": group, **{b: 100 * c for b, c in cov["per_board"].items()}})
        tiny_out.append(pd.Series(model.predict(tiny), name=f"predicted ms, {name}"))
        frame = pd.DataFrame({"board": rows["board"].to_numpy(), "split": rows["split"].to_numpy(), "op_class": op_class,
                              "measured_ms": rows["measured_ms"].to_numpy(), "predicted_ms": oof})
        sums.append(summed_ape(frame[scored]).rename(name))
        older = OperatorRegressor(launch_floor=launch_floor, n_jobs=2).fit(rows[~is_newest], rows["measured_ms"][~is_newest])
        held = frame[is_newest].assign(predicted_ms=older.predict(rows[is_newest]))
        ape_newest = 100 * np.abs(held["predicted_ms"] / held["measured_ms"] - 1)
        newest.append({"model": name, "all": ape_newest.mean(), **ape_newest.groupby(held["op_class"]).mean().to_dict(),
                       **{f"{k} (summed, test split)": v for k, v in summed_ape(held).items()}})
        print(f"# {name}: fit + leave-one-board-out in {seconds:.0f} s", flush=True)
    pd.set_option("display.width", 200)
    print(f"\n## {corpus}: leave-one-board-out over {len(boards)} boards, {len(rows)} rows (calibration runs not scored)")
    print(pd.DataFrame(tables).round(2).to_string(index=False))
    print("\n## MAPE (%) per held-out board")
    print(pd.concat(per_board, axis=1).round(2).to_string())
    print("\n## NeuSight's statistic: APE (%) of the summed latency of a held-out board's test-split rows, "
          "mean over the boards")
    print(pd.concat(sums, axis=1).T.round(2).to_string())
    print(f"\n## newest generation: {NEWEST} held out, fitted on the {len(boards) - 1} older boards (MAPE %, and the "
          "summed-latency APE of its test-split rows)")
    print(pd.DataFrame(newest).set_index("model").T.round(2).to_string())
    print("\n## 90 % interval coverage (%) of each held-out board's rows, per op class (calibrated on the other boards)")
    print(pd.DataFrame(coverage).round(1).to_string(index=False))
    if tiny_out:
        out = pd.concat([tiny.astype(object).where(tiny.notna(), ""), *tiny_out], axis=1)
        out["smallest measured ms of the op on the board"] = [smallest.get((b, op), np.nan)
                                                             for b, op in zip(tiny["board"], tiny["op"])]
        print("\n## calls smaller than any of the corpus, on every board (the floor: the smallest time measured)")
        print(out.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
