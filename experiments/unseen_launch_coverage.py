"""Does the interval of a launch no training board measured hold its runtime?

``perfml predict`` flags a row whose block shape was measured for its kernel on no training
board (:func:`perfml.learned.queries.unmeasured_launches`). Its interval was first the
extrapolation rule's (twice the log half-width, :data:`perfml.learned.intervals.EXTRAPOLATION_WIDENING`);
a model trained since a259fc7 calibrates such rows on their own (the manifest's
``unmeasured_launch`` entry, :func:`perfml.learned.intervals.calibrate_unmeasured_launch`)
and gives them the larger of that half-width and the group's.

This script scores those intervals on the rows they are for: the out-of-fold predictions of
``experiments/unseen_launches.toml`` (the nine apps; each fold an unseen board *and* a block
size no training board has; model ``hybrid_xgboost_issue``, the described sub-model's
configuration in ``models/default``). Per row, the 90 % interval of ``models/default``'s
described sub-model (its leave-one-board-out calibration) as calibrated, widened, and
launch-calibrated (the kernel's own half-width, else the pooled one; and, for comparison,
the pooled one for every kernel). The launch-calibrated
interval of a board's rows is calibrated here on the *other* boards' rows of this experiment
(held out, as :func:`calibrate_unmeasured_launch` scores it), not on ``models/default``'s entry, whose calibration rows are these rows: its
coverage on them would be in-sample. The entry's own held-out-board figures are printed in
the header.

Prints the rows, their MAPE, and per interval the share of measured times inside it and
its mean relative width ((upper - lower) / predicted), overall and per app. Asserts nothing.

Usage: PYTHONPATH=. python experiments/unseen_launch_coverage.py [--model NAME] [--level 0.9]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent


def scored(predictions: pd.DataFrame, calibration: dict, level: float) -> pd.DataFrame:
    """Per row: within each interval (as calibrated, widened, launch-calibrated on the other boards) and its width."""
    from perfml.learned.intervals import calibrate_unmeasured_launch, interval_bounds

    pred = predictions["predicted_ms"].to_numpy(dtype=float)
    measured = predictions["measured_ms"].to_numpy(dtype=float)
    apps = predictions["app_id"].to_numpy()
    boards = predictions["board"].astype(str).to_numpy()
    out = pd.DataFrame({"app_id": apps, "ape": np.abs(pred / measured - 1.0) * 100})
    for name, widened in (("calibrated", False), ("widened", True)):
        lower, upper = interval_bounds(pred, apps, np.full(len(pred), widened), calibration, level)
        out[f"{name}_covers"] = (lower <= measured) & (measured <= upper)
        out[f"{name}_width"] = (upper - lower) / pred
    # launch-calibrated: per board, the entry a model trained without that board's rows would hold
    # (per kernel, as perfml train records it, and pooled over the kernels, for comparison)
    for name, per_kernel in (("launch", True), ("pooled", False)):
        covers, width = np.zeros(len(pred), dtype=bool), np.zeros(len(pred))
        for board in sorted(set(boards)):
            mine = boards == board
            entry = calibrate_unmeasured_launch(pred[~mine], measured[~mine], boards[~mine],
                                                apps[~mine] if per_kernel else None, level)
            lower, upper = interval_bounds(pred[mine], apps[mine], np.zeros(mine.sum(), dtype=bool),
                                           {**calibration, "unmeasured_launch": entry}, level,
                                           unmeasured_launch=np.ones(mine.sum(), dtype=bool))
            covers[mine] = (lower <= measured[mine]) & (measured[mine] <= upper)
            width[mine] = (upper - lower) / pred[mine]
        out[f"{name}_covers"], out[f"{name}_width"] = covers, width
    return out


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    def one(part: pd.DataFrame) -> pd.Series:
        return pd.Series({"rows": len(part), "MAPE %": part["ape"].mean(),
                          "covered % (calibrated)": 100 * part["calibrated_covers"].mean(),
                          "width (calibrated)": part["calibrated_width"].mean(),
                          "covered % (widened)": 100 * part["widened_covers"].mean(),
                          "width (widened)": part["widened_width"].mean(),
                          "covered % (launch, held out)": 100 * part["launch_covers"].mean(),
                          "width (launch)": part["launch_width"].mean(),
                          "covered % (launch pooled, held out)": 100 * part["pooled_covers"].mean(),
                          "width (launch pooled)": part["pooled_width"].mean()})

    table = rows.groupby("app_id").apply(one, include_groups=False)
    table.loc["all"] = one(rows)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="hybrid_xgboost_issue", help="model of experiments/unseen_launches.toml")
    parser.add_argument("--level", type=float, default=0.90)
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import as_data_home, find_data_home
    from perfml.experiments.runner import run_experiment
    from perfml.experiments.spec import load_experiment
    from perfml.learned.bundle import load_predictor

    home = as_data_home(find_data_home(args.data_home))  # a script is an entry point: it resolves the home
    spec = load_experiment(HERE / "experiments" / "unseen_launches.toml")
    result = run_experiment(spec, data_home=home, track=False, models=[args.model])
    calibration = load_predictor(HERE / "models" / "default", data_home=home).models["described"].metadata_["intervals"]
    rows = scored(result.predictions, calibration, args.level)
    pd.set_option("display.width", 250)
    print(f"{spec.name} ({spec.protocol}), model {args.model}: {len(rows)} out-of-fold rows; "
          f"{args.level:.0%} interval of models/default's described sub-model, as calibrated, widened "
          f"(x{calibration['extrapolation_widening']:g} log half-width), and launch-calibrated on the other boards' rows")
    entry = calibration.get("unmeasured_launch")
    if entry is None:
        print("models/default's described sub-model has no unmeasured_launch entry (trained before a259fc7): "
              "its flagged rows take the widened interval")
    else:
        held = entry["held_out_board"]
        print(f"models/default's unmeasured_launch entry: {entry['n']} rows of {len(entry['boards'])} boards "
              f"({entry['protocol']}), MAPE {entry['mape']:.2f}%; its {held['level']:.0%} interval covers "
              f"{100 * held['coverage']:.2f}% of held-out-board rows, mean relative width {held['mean_relative_width']:.2f}; "
              "per kernel: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in held["per_kernel"].items()))
    print(summary(rows).round(2).to_string())


if __name__ == "__main__":
    main()
