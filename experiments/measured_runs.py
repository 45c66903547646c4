"""A model's answers on its own training boards, at the runs and calls they measured (issue 10 §2).

The features of a training board's row leave that board out (cross-fitted), so that a
training row sees what a row of an unseen board sees. Asked about a run its own board ran
in training, the model alone therefore answers as if it had never seen that board;
``perfml predict`` answers such a row with the measurement (``basis`` ``measured``,
:func:`perfml.learned.queries.measured_on_board`). This prints, per sub-model and
training board, over every run of the data home's training runtimes
(:func:`perfml.learned.training.training_runtimes`; for the ``dlops`` sub-model every
call of ``dlops_runtimes.csv.gz``) on that board: the runs, the MAPE of the model alone
against the run's measured time (the median of its repeats, in log), the MAPE of what
``perfml predict`` writes (its ``predicted_ms``), and the share answered from the
measurement. "The model alone" is the same call with the measurement lookup switched off.
Asserts nothing.

Usage: PYTHONPATH=. python experiments/measured_runs.py [--model DIR] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent
RUN = ["board", "app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells as a query CSV holds them: whole numbers without ``.0``, empty where missing."""
    return frame.astype(object).map(
        lambda v: "" if pd.isna(v) or (isinstance(v, float) and not np.isfinite(v))
        else f"{v:.0f}" if isinstance(v, float) else str(v))


def runs_of(rt: pd.DataFrame) -> pd.DataFrame:
    """One row per (board, run): its query columns (text, as a CSV holds them) and its measured time.

    A row without a launch runs its kernel's default one (the description's), as the model
    reads it (:func:`perfml.learned.features.launch.launch_frame`): the same run as a row
    that gives that launch.
    """
    from perfml.learned.features.launch import launch_frame

    launch = launch_frame(rt)
    rt = rt.assign(input_size_2=rt["input_size_2"].fillna(0), **{c: launch[c] for c in RUN[4:]})
    runs = rt.groupby(RUN, dropna=False)["measured_ms"].apply(lambda t: float(np.exp(np.median(np.log(t)))))
    runs = runs.reset_index()
    return _text(runs[RUN]).assign(measured_ms=runs["measured_ms"].to_numpy())


def calls_of(ops: pd.DataFrame) -> pd.DataFrame:
    """One row per (board, operator call): its query columns (text) and its measured time."""
    from perfml.learned.operator_model._transfer import KEY_COLUMNS

    cols = ["board", *[c for c in KEY_COLUMNS if c in ops.columns]]
    key = _text(ops[cols])
    log_t = np.log(ops["time_ms"].to_numpy(dtype=float))
    calls = key.assign(log_t=log_t).groupby(cols, sort=False)["log_t"].median().reset_index()
    return calls.assign(measured_ms=np.exp(calls.pop("log_t").to_numpy()))


def _score(bundle, name: str, part: pd.DataFrame, columns: list[str]) -> None:
    """One line per board of ``part``: the model alone and what perfml predict writes."""
    from perfml.learned.bundle import predict_any

    off = lambda model, q: np.full(len(q), np.nan)  # noqa: E731 (the measurement lookup switched off)
    for board, rows in part.groupby("board"):
        rows = rows.reset_index(drop=True)
        q = rows[columns]
        answered = predict_any(bundle, q, "runs")
        with mock.patch("perfml.learned.queries.measured_on_board", off), \
                mock.patch("perfml.learned.operator_queries.measured_on_board", off):
            alone = predict_any(bundle, q, "runs")
        measured = rows["measured_ms"].to_numpy()
        mape = {key: 100 * np.mean(np.abs(out["predicted_ms"].to_numpy(dtype=float) / measured - 1))
                for key, out in (("alone", alone), ("answered", answered))}
        share = 100 * np.mean(answered["basis"].to_numpy() == "measured")
        print(f"{name:<12} {board:<20} {len(rows):>6} {mape['alone']:>19.2f} {mape['answered']:>22.2f} {share:>17.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home, load_dlops_runtimes
    from perfml.learned.bundle import load_predictor
    from perfml.learned.training import training_runtimes

    home = DataHome(find_data_home(args.data_home))
    bundle = load_predictor(args.model, data_home=home)
    runs = runs_of(training_runtimes(data_home=home))
    print(f"model {args.model}; {len(runs)} (board, run) pairs of the training runtimes, "
          f"{runs['board'].nunique()} boards")
    print(f"{'sub-model':<12} {'board':<20} {'runs':>6} {'model alone MAPE %':>19} {'perfml predict MAPE %':>22} "
          f"{'measured basis %':>17}")
    for corpus in ("described", "undescribed"):
        model = bundle.models.get(corpus)
        if model is None:
            continue
        part = runs[runs["app_id"].isin(set(model.features_.apps_)) & runs["board"].isin(set(model.features_.train_boards_))]
        _score(bundle, corpus, part, RUN)
    if bundle.models.get("dlops") is not None:
        calls = calls_of(load_dlops_runtimes(home))
        print(f"dlops: {len(calls)} (board, call) pairs of dlops_runtimes.csv.gz")
        _score(bundle, "dlops", calls, [c for c in calls.columns if c != "measured_ms"])


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
