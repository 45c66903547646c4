"""A characterized operator model asked about a board known only by its registry entry.

Leave-one-board-out over the operator rows of ``experiments/dlops_unseen_boards_calibrated.toml``
(same rows, same capped training split, ``add`` calls not scored): the training boards are
characterized from their ``add`` calls (streaming curve, as at the calibrated tier), the
held-out board only by its registry's spec values (no curve, no achieved figure). This is
what a bundle whose operator sub-model were characterized would do for a query without
``--calibration``; the spec-only model (``operator_xgboost`` of the same experiment file)
is the comparison. Prints MAPE overall, per op class and per board. Asserts nothing.

Usage: PYTHONPATH=. python experiments/characterized_model_spec_target.py [--data-home DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    import numpy as np
    import pandas as pd

    from perfml.boards import get_board
    from perfml.characterize import Characterization, spec_values
    from perfml.datasets import as_data_home, find_data_home
    from perfml.experiments.runner import (
        calibrated_characterizations,
        experiment_data,
        experiment_splitter,
        scored_mask,
    )
    from perfml.experiments.spec import load_experiment
    from perfml.learned.operators import OperatorRegressor
    from perfml.operators import OP_CLASS

    spec = load_experiment(HERE / "dlops_unseen_boards_calibrated.toml")
    data_home = as_data_home(find_data_home(args.data_home))
    rt = experiment_data(spec, data_home)
    y = rt["measured_ms"].to_numpy(dtype=float)
    calibrated = calibrated_characterizations(spec, rt, data_home)
    splitter = experiment_splitter(spec)
    predicted = np.full(len(rt), np.nan)
    t0 = time.perf_counter()
    for train, test in splitter.split(rt, y, splitter.groups_of(rt)):
        held = str(rt["board"].iloc[test[0]])
        board = get_board(held)
        chars = {**calibrated, held: Characterization(board=board.name, source="registry only",
                                                      values=spec_values(board))}
        model = OperatorRegressor(characterization=True, characterizations=chars, n_jobs=2)
        predicted[test] = model.fit(rt.iloc[train], y[train]).predict(rt.iloc[test])
    scored = scored_mask(spec, rt)
    ape = pd.DataFrame({"ape": 100 * np.abs(predicted / y - 1), "board": rt["board"],
                        "op_class": rt["op"].map(OP_CLASS)})[scored]
    print(f"characterized operator model, spec-only target: MAPE {ape['ape'].mean():.2f} % over {len(ape)} rows "
          f"({time.perf_counter() - t0:.0f} s)")
    print(ape.groupby("op_class")["ape"].mean().round(2).to_string())
    print(ape.groupby("board")["ape"].mean().round(2).to_string())


if __name__ == "__main__":
    main()
