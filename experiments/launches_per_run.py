"""How many launches did the training boards run each kernel at, per input size? (issue 10 §2)

A query row may leave its launch empty (issue 10 §2: the launch is optional). For a kernel
without a description, perfml then takes the launch from the training runs of the same
kernel and sizes (:class:`perfml.learned.queries._LaunchFiller`). That is only an answer
when those runs hold one launch: where they hold several, the query is refused and told to
give its launch. (A described kernel takes its description's default launch instead.) This
prints, per kernel of the training runtimes
(:func:`perfml.learned.training.training_runtimes`, default GPU configuration): its runs
(distinct input sizes), the runs measured at several launches, the most launches of one
run, and, over the (run, board) pairs with several launches, the median and largest ratio
of the slowest launch's time to the fastest's (``time_ms_mean``); asserts nothing.

Usage: PYTHONPATH=. python experiments/launches_per_run.py [--data-home DIR]
"""

from __future__ import annotations

import argparse

import pandas as pd

LAUNCH = ["block_x", "block_y", "grid_x", "grid_y"]
RUN = ["app_id", "input_size", "input_size_2"]


def launches_per_run(rt: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel: runs, runs at several launches, most launches of a run, time spread."""
    rt = rt.assign(input_size_2=rt["input_size_2"].fillna(0), **{c: rt[c].fillna(1) for c in LAUNCH})
    launches = rt.groupby(RUN)[LAUNCH].apply(lambda g: len(g.drop_duplicates())).rename("launches").reset_index()
    per_board = rt.groupby([*RUN, "board", *LAUNCH])["measured_ms"].median().reset_index()
    spread = per_board.groupby([*RUN, "board"])["measured_ms"].agg(lambda t: t.max() / t.min()).rename("spread")
    spread = spread[per_board.groupby([*RUN, "board"]).size() > 1].reset_index()
    from perfml.apps import list_apps

    described = set(list_apps())
    rows = []
    for app, runs in launches.groupby("app_id"):
        s = spread[spread["app_id"] == app]
        worst = s.loc[s["spread"].idxmax()] if len(s) else None
        rows.append({
            "kernel": app, "described": app in described, "runs": len(runs), "several launches": int((runs["launches"] > 1).sum()),
            "most launches": int(runs["launches"].max()),
            "median slowest/fastest": round(float(s["spread"].median()), 2) if len(s) else None,
            "largest slowest/fastest": round(float(worst["spread"]), 2) if worst is not None else None,
            "largest at": f"{worst['board']}, input_size {int(worst['input_size'])}" if worst is not None else "",
        })
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home
    from perfml.learned.training import training_runtimes

    rt = training_runtimes(data_home=DataHome(find_data_home(args.data_home)))
    table = launches_per_run(rt)
    print("launches per run (kernel, input_size, input_size_2) of the training runtimes; slowest/fastest: the "
          "time of the run's slowest launch over its fastest on one board (time_ms_mean)")
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
