"""A target characterization without a launch floor: the operators' calibrated tier, held out board by board.

The calibrated-tier operator model (``dlops-calibrated``, ``OperatorRegressor(characterization=True)``)
takes as base time the roofline of the board's achieved peaks, whose memory roof is the
board's streaming curve: the time its ``add`` calls took per byte count, so the launch floor
is in it. A characterization made from microbenchmark sweeps (``perfml characterize DIR``)
has neither that curve nor a ``launch_overhead``; the base of a small call was then its
nanosecond roofline, below anything the training boards' curves knew.
:func:`perfml.learned.operator_model._features.characterization_block` now charges such a
board the floor plus the bytes at its achieved bandwidth (the shape of a curve), with the
training boards' median launch overhead as the floor (what their curves start at).

Protocol: leave-one-board-out over the five NeuSight GPUs of the data home. Each training
board is characterized from its own ``add`` calls (as ``perfml train`` does,
:func:`perfml.learned.training.training_characterizations`); the held-out board is predicted
three ways, and scored on every row but its ``add`` calls:

* ``curve``: its own characterization from its ``add`` calls (the calibrated tier);
* ``no floor (before)``: the same characterization stripped of its streaming curve and its
  ``launch_overhead``, with no floor charged (the model's ``floor_`` cleared);
* ``training floor (now)``: the stripped characterization, charged the training boards'
  median launch overhead.

Prints MAPE (%) and mean |log(predicted / measured)| per held-out board, for every row, for
calls under 0.05 ms and for the others.

    python experiments/characterization_without_floor.py [--rows-per-op N] [--data-home DIR]

``--rows-per-op`` (default 400) keeps that many rows per (board, op, NeuSight split), fixed
seed (all rows: 0); the recording is ``experiments/results/characterization_without_floor.txt``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import pandas as pd

from perfml.datasets import DataHome, find_data_home
from perfml.learned.operators import OperatorRegressor
from perfml.learned.training import calibration_mask, operator_training_rows, training_characterizations

CORPUS = "dlops-calibrated"
SMALL_MS = 0.05


def stripped(characterization):
    """The characterization without its streaming curve and its launch overhead (as a sweep's has neither)."""
    return dataclasses.replace(characterization, stream_curve=None,
                               values=tuple(v for v in characterization.values if v.quantity != "launch_overhead"))


def scores(pred, measured) -> dict:
    parts = {"all": np.ones(len(measured), dtype=bool), f"< {SMALL_MS} ms": measured < SMALL_MS,
             f">= {SMALL_MS} ms": measured >= SMALL_MS}
    out = {}
    for name, m in parts.items():
        out[(name, "rows")] = int(m.sum())
        out[(name, "MAPE %")] = float(100 * np.mean(np.abs(pred[m] / measured[m] - 1)))
        out[(name, "mean |log|")] = float(np.mean(np.abs(np.log(pred[m] / measured[m]))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-op", type=int, default=400, help="rows per (board, op, split); 0: all rows")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    home = DataHome(find_data_home(args.data_home))  # an entry point: resolves the data home itself
    rows = operator_training_rows(home)
    if args.rows_per_op:
        rows = rows.sample(frac=1.0, random_state=0)
        rows = rows[rows.groupby(["board", "op", "split"]).cumcount() < args.rows_per_op].reset_index(drop=True)
    characterizations = training_characterizations(CORPUS, rows)
    scored = ~calibration_mask(CORPUS, rows)
    boards = sorted(rows["board"].astype(str).unique())
    print(f"{len(rows)} rows of {len(boards)} boards ({args.rows_per_op or 'all'} per board, op and split)")
    table = []
    for board in boards:
        start = time.perf_counter()
        train = rows[rows["board"] != board].reset_index(drop=True)
        test = rows[(rows["board"] == board).to_numpy() & scored].reset_index(drop=True)
        given = {b: c for b, c in characterizations.items() if b != board}
        est = OperatorRegressor(n_jobs=2, characterization=True, characterizations=given)
        est.fit(train, train["measured_ms"])
        y = test["measured_ms"].to_numpy(dtype=float)
        for way, char, floor in (("curve", characterizations[board], True),
                                 ("no floor (before)", stripped(characterizations[board]), False),
                                 ("training floor (now)", stripped(characterizations[board]), True)):
            if not floor:  # as before: nothing stands in for the missing floor
                est._training_launch_overhead_ms = lambda: None
            est.set_params(characterizations={**given, board: char})
            table.append({"board": board, "way": way, **scores(est.predict(test), y)})
            est.__dict__.pop("_training_launch_overhead_ms", None)
        print(f"  {board}: {time.perf_counter() - start:.1f} s", flush=True)
    frame = pd.DataFrame(table).set_index(["board", "way"])
    frame.columns = pd.MultiIndex.from_tuples(frame.columns)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(frame)
        print("\nall boards (row-weighted):")
        pooled = {}
        for way, part in frame.groupby(level="way", sort=False):
            row = {}
            for name in dict.fromkeys(c[0] for c in frame.columns):
                n = part[(name, "rows")]
                row[(name, "MAPE %")] = float(np.average(part[(name, "MAPE %")], weights=n))
                row[(name, "mean |log|")] = float(np.average(part[(name, "mean |log|")], weights=n))
            pooled[way] = row
        print(pd.DataFrame(pooled).T)


if __name__ == "__main__":
    main()
