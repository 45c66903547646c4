"""The calibrated tier through the command line, on a board the model never saw.

What a user does who has measured only element-wise ``add`` calls on a board and wants the
time of every other operator call there:

1. ``perfml train --out M --source neusight-2025 --corpus dlops --exclude-board B``
   (both operator sub-models: spec-only ``dlops`` and ``dlops-calibrated``; board B is
   not in training, so for the model it is a board never seen);
2. ``perfml predict --model M --queries Q --output P`` (spec-only tier: B known by its
   registry entry), and the same with ``--calibration ADDS`` (calibrated tier: B's own
   ``add`` calls, nothing else of B).

Q is every other operator row of board B in ``dlops_runtimes.csv.gz`` without its time;
ADDS its ``add`` rows (board, op, B, H, time_ms). Prints, per tier and op class, MAPE, the
share within [0.8, 1.2], and the coverage and mean relative width of the 90 % interval,
scored against B's measured times. Asserts nothing. Default board: A100-PCIe-40GB (the
newest generation of the corpus, so the four training boards are all older).

With ``--calibration-rows 20,50`` the calibrated tier is also run from random subsets of
that many ``add`` calls (seed 0): how many a user needs to time.

Usage: PYTHONPATH=. python experiments/calibrated_cli_unseen_board.py [--board B] [--data-home DIR]
       [--workdir DIR] [--n-jobs N] [--calibration-rows N,N,...]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from perfml.experiments.cli_steps import run_perfml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="A100-PCIe-40GB")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--workdir", default=None, help="Keep the model and files here (default: a temporary directory).")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--calibration-rows", default="",
                        help="Also calibrate from random subsets of the add calls of these sizes (comma-separated, seed 0).")
    args = parser.parse_args()
    subsets = [int(n) for n in args.calibration_rows.split(",") if n.strip()]

    import numpy as np
    import pandas as pd

    from perfml.datasets import find_data_home, load_dlops_runtimes
    from perfml.operators import OP_CLASS

    home = find_data_home(args.data_home)
    rt = load_dlops_runtimes(home)
    target = rt[rt["board"] == args.board]
    if target.empty:
        raise SystemExit(f"no row of board {args.board!r}; choose among {', '.join(sorted(rt['board'].unique()))}")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir) if args.workdir else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        queries = target[target["op"] != "add"].reset_index(drop=True)
        queries.drop(columns=["time_ms"]).to_csv(work / "queries.csv", index=False)
        adds = target[target["op"] == "add"][["board", "op", "B", "H", "time_ms"]]
        adds.to_csv(work / "adds.csv", index=False)
        for n in subsets:  # what fewer add calls give: a random subset, every size equally likely
            adds.sample(n=min(n, len(adds)), random_state=0).to_csv(work / f"adds_{n}.csv", index=False)
        print(f"board {args.board}: {len(queries)} query rows (every op but add), "
              f"{int((target['op'] == 'add').sum())} add calls as the calibration\n")
        model = work / "model"
        run_perfml(["--quiet", "train", "--out", str(model), "--overwrite", "--data-home", str(home), "--source", "neusight-2025",
                    "--corpus", "dlops", "--exclude-board", args.board, "--seed", "0", "--n-jobs", str(args.n_jobs)])
        results = {}
        tiers = [("spec-only", []), ("calibrated", ["--calibration", str(work / "adds.csv")])]
        tiers += [(f"cal-{n}-adds", ["--calibration", str(work / f"adds_{n}.csv")]) for n in subsets]
        for tier, extra in tiers:
            out = work / f"predicted_{tier}.csv"
            run_perfml(["predict", "--model", str(model), "--queries", str(work / "queries.csv"), "--output", str(out),
                        "--overwrite", "--data-home", str(home), *extra])
            results[tier] = pd.read_csv(out, low_memory=False)  # one dtype per column (extrapolation is mostly empty)
    y = queries["time_ms"].to_numpy(dtype=float)
    classes = queries["op"].map(OP_CLASS).to_numpy(dtype=object)
    print(f"\n{'tier':<14} {'class':<8} {'rows':>6} {'MAPE %':>8} {'in 0.8-1.2 %':>13} {'90% cover %':>12} {'mean width':>11}")
    for tier, frame in results.items():
        pred = frame["predicted_ms"].to_numpy(dtype=float)
        lo, hi = frame["lower_ms"].to_numpy(dtype=float), frame["upper_ms"].to_numpy(dtype=float)
        for cls in ["all", *sorted(set(classes))]:
            m = np.ones(len(y), dtype=bool) if cls == "all" else classes == cls
            ape = np.abs(pred[m] / y[m] - 1.0)
            cover = np.mean((lo[m] <= y[m]) & (y[m] <= hi[m]))
            width = np.mean((hi[m] - lo[m]) / pred[m])
            print(f"{tier:<14} {cls:<8} {int(m.sum()):>6} {100 * ape.mean():>8.2f} {100 * np.mean(ape <= 0.2):>13.1f} "
                  f"{100 * cover:>12.1f} {width:>11.3f}")


if __name__ == "__main__":
    main()
