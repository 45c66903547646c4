"""The transfer baseline alone, leave-one-board-out on the nine apps: spec vs calibrated peaks, spread vs transfer-cv.

Prints MAPE (%) per board and overall of ``exp(xfer_log_t)`` (what ``transfer_only`` models
predict: shrinkage 0) for the four combinations of

* ``closed_form_peaks``: ``spec`` (datasheet) or ``characterized`` (the calibrated tier: each
  board's DRAM bandwidth and launch floor from its own vectorAdd runs only,
  :func:`perfml.characterize.calibrate_from_rows`);
* ``baseline_selection``: ``spread`` (the default) or ``transfer-cv`` (each app's baseline
  chosen by an inner leave-one-board-out of its transfer over the training boards).

vectorAdd rows are not scored (they are the calibration runs), as in
experiments/unseen_boards_characterized.toml. No learner is fitted, so it runs in seconds:

    PYTHONPATH=. python experiments/transfer_baseline_selection.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd


def main() -> None:
    from perfml.characterize import calibrate_from_rows
    from perfml.datasets import DataHome, find_data_home
    from perfml.evaluation.closed_form import describable_runtimes
    from perfml.learned.features import FeatureBuilder

    warnings.filterwarnings("ignore", category=UserWarning)
    home = DataHome(find_data_home())
    rt = describable_runtimes(home, source="gpuperfpredict-nca").reset_index(drop=True)
    y = rt["measured_ms"].to_numpy(dtype=float)
    calibration = rt[rt["app_id"] == "vectorAdd"]
    command = "experiments/transfer_baseline_selection.py: calibrate_from_rows on each board's vectorAdd rows"
    chars = {b: calibrate_from_rows(calibration, b, command=command) for b in sorted(rt["board"].unique())}
    table, overall = {}, {}
    for peaks in ("spec", "characterized"):
        for selection in ("spread", "transfer-cv"):
            t0 = time.perf_counter()
            errors = []
            for held in sorted(rt["board"].unique()):
                train = (rt["board"] != held).to_numpy()
                test = ((rt["board"] == held) & (rt["app_id"] != "vectorAdd")).to_numpy()
                builder = FeatureBuilder(profiles=False, data_home=home, board_features="relative",
                                         closed_form_peaks=peaks, baseline_selection=selection,
                                         characterizations=chars if peaks == "characterized" else None)
                builder.fit(rt[train], y[train])
                predicted = np.exp(builder.transform(rt[test])["xfer_log_t"].to_numpy(dtype=float))
                errors.append(pd.Series(np.abs(predicted / y[test] - 1.0) * 100, index=rt.index[test]))
            ape = pd.concat(errors)
            name = f"{peaks}/{selection}"
            table[name] = ape.groupby(rt.loc[ape.index, "board"]).mean()
            overall[name] = ape.mean()
            print(f"{name}: {len(ape)} rows, {time.perf_counter() - t0:.1f} s", flush=True)
    frame = pd.DataFrame(table)
    frame.loc["overall"] = pd.Series(overall)
    with pd.option_context("display.width", 200, "display.max_columns", 10):
        print("transfer baseline alone, leave-one-board-out, nine apps, vectorAdd not scored: MAPE (%)")
        print(frame.round(2).to_string())


if __name__ == "__main__":
    main()
