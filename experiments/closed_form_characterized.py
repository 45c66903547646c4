"""Closed-form models before and after the board characterization (issue 11 §2).

Leave-one-board-out over the nine NCA applications of shared/datasets. Hong & Kim and the
roofline fit nothing on runtimes, so their leave-one-board-out predictions are their plain
predictions; what a held-out board contributes is only its characterization. Two tiers:

* ``paper`` / ``spec``: the models as they were (Hong & Kim with the paper's GTX 280
  Mem_LD and departure delays; roofline with datasheet peaks);
* ``characterized``: each board's calibrated tier built from its vectorAdd runs only
  (:func:`perfml.experiments.runner.calibrated_characterizations`, as
  ``experiments/unseen_boards_characterized.toml``), so the vectorAdd rows are not scored.

Prints MAPE and in-band share (0.8 <= T_k/T_m <= 1.2) on every row and on the rows
without vectorAdd, for both tiers. Asserts nothing.

Usage: python experiments/closed_form_characterized.py [--data-home DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
from perfml.closed_form.roofline import RooflineModel
from perfml.datasets import as_data_home, find_data_home
from perfml.evaluation.metrics import summarize
from perfml.experiments.runner import calibrated_characterizations, experiment_data
from perfml.experiments.spec import load_experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    data_home = as_data_home(find_data_home(args.data_home))  # a script is an entry point: it resolves the home
    spec = load_experiment(Path(__file__).with_name("unseen_boards_characterized.toml"))
    rt = experiment_data(spec, data_home)
    y = rt["measured_ms"].to_numpy(dtype=float)
    chs = calibrated_characterizations(spec, rt)
    scored = (rt["app_id"] != "vectorAdd").to_numpy()
    models = {
        "hongkim (paper Mem_LD, departure delays)": HongKimRuntimeModel(data_home=data_home),
        "hongkim (characterized)": HongKimRuntimeModel(data_home=data_home, hardware="characterized", characterizations=chs),
        "roofline (spec peaks)": RooflineModel(),
        "roofline (characterized peaks)": RooflineModel(peaks="characterized", characterizations=chs),
    }
    print(f"{'model':58s} {'rows':>6s} {'MAPE %':>9s} {'in band %':>9s}")
    for name, est in models.items():
        pred = est.fit(rt, y).predict(rt)
        for label, mask in (("all", np.ones(len(rt), bool)), ("no vectorAdd", scored)):
            ok = mask & np.isfinite(pred) & (pred > 0)
            s = summarize(pred[ok], y[ok])
            print(f"{name + ' / ' + label:58s} {int(ok.sum()):6d} {s['mape']:9.1f} {100 * s['within_band']:9.1f}")


if __name__ == "__main__":
    main()
