"""Do predictions on boards out of training grow with the size, as the work does? (issue 10 §3)

A described application's work grows with its ``input_size``. At a fixed block shape, a
prediction that falls from one measured size to the next larger one is a discontinuity of
the model, not of the kernel. This asks ``models/default`` (:func:`perfml.learned.bundle.predict_any`,
no launch given: each application's default launch) about every training size of each
described application on every registry board out of the described sub-model's training
boards, and prints, per application: the boards scored, those where a prediction falls by
more than ``--tolerance`` (default 10 %) from one size to the next larger one at the same
block shape, and the worst such fall; then the ``--top`` worst falls with their board,
sizes, the training boards that measured a fall there too and the predictions' basis. Sizes a board cannot run (memory, grid limits) are left
out from the largest down. Asserts nothing.

A fall can also be measured: partition camping made matrix_sum_normal at 7680 slower than
at 7936 on five of the nine training boards that ran both. Each fall is therefore shown
with ``measured``: of the training boards that ran both sizes at that block shape, how many
measured a fall beyond the tolerance themselves (``k/n``); the per-application summary
counts apart the boards with a fall that no training board measured.

Usage: PYTHONPATH=. python experiments/size_continuity.py [--model DIR] [--data-home DIR]
       [--tolerance 0.10] [--top 15]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent


def predictions(bundle, board: str, app: str, sizes: np.ndarray):
    """The predictions of ``app`` on ``board`` at ``sizes``, the largest the board cannot run left out."""
    from perfml.errors import PerfmlError
    from perfml.learned.bundle import predict_any

    for keep in range(len(sizes), 1, -1):
        q = pd.DataFrame({"board": board, "app_id": app, "input_size": [f"{s:.0f}" for s in sizes[:keep]]})
        try:
            return predict_any(bundle, q, "sizes")
        except PerfmlError:
            continue
    return None


def falls(out: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Consecutive sizes at the same default block shape where the prediction falls by more than ``tolerance``."""
    from perfml.learned.features.launch import launch_frame

    frame = out.assign(input_size=out["input_size"].astype(float))
    launch = launch_frame(frame)
    frame = frame.assign(block=[f"{x:.0f}x{y:.0f}" for x, y in zip(launch["block_x"], launch["block_y"])])
    rows = []
    for block, part in frame.groupby("block", sort=False):
        part = part.sort_values("input_size")
        p = part["predicted_ms"].to_numpy(dtype=float)
        n = part["input_size"].to_numpy(dtype=float)
        for i in np.flatnonzero(p[1:] < (1 - tolerance) * p[:-1]):
            rows.append({"block": block, "from_size": n[i], "to_size": n[i + 1], "ratio": p[i + 1] / p[i],
                         "basis": f"{part['basis'].iloc[i]} / {part['basis'].iloc[i + 1]}"})
    return pd.DataFrame(rows, columns=["block", "from_size", "to_size", "ratio", "basis"])


def measured_falls(rt: pd.DataFrame, app: str, block: str, from_size: float, to_size: float,
                   tolerance: float) -> str:
    """``k/n``: of the training boards that ran ``app`` at both sizes with ``block``, those whose own time fell."""
    part = rt[(rt["app_id"] == app) & (rt["block"] == block) & rt["input_size"].isin([from_size, to_size])]
    times = part.groupby(["board", "input_size"])["measured_ms"].median().unstack()  # the time training fits
    if from_size not in times or to_size not in times:
        return "0/0"
    both = times[[from_size, to_size]].dropna()
    return f"{int((both[to_size] < (1 - tolerance) * both[from_size]).sum())}/{len(both)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()

    from perfml.apps import list_apps
    from perfml.boards import load_registry
    from perfml.datasets import DataHome, find_data_home
    from perfml.learned.bundle import load_predictor
    from perfml.learned.training import training_runtimes

    home = DataHome(find_data_home(args.data_home))
    bundle = load_predictor(args.model, data_home=home)
    trained = set(bundle.models["described"].features_.train_boards_)
    boards = [b for b in load_registry().boards if b not in trained]
    rt = training_runtimes(data_home=home)
    rt = rt.assign(input_size=rt["input_size"].astype(float),
                   block=[f"{x:.0f}x{y:.0f}" for x, y in zip(rt["block_x"], rt["block_y"].fillna(1))])
    print(f"model {args.model}; {len(boards)} registry boards out of the described sub-model's training boards; "
          f"a fall: a prediction below {1 - args.tolerance:.2f}x the one at the next smaller size, same block shape")
    print(f"{'app':<34} {'boards':>6} {'with a fall':>11} {'not measured':>12} {'worst ratio':>11}  worst at")
    every = []
    for app in list_apps():
        sizes = np.sort(rt.loc[rt["app_id"] == app, "input_size"].astype(float).unique())
        if len(sizes) < 2:
            continue
        scored, found = 0, []
        for board in boards:
            out = predictions(bundle, board, app, sizes)
            if out is None:
                continue
            scored += 1
            f = falls(out, args.tolerance)
            if len(f):
                found.append(f.assign(board=board, app=app))
        f = pd.concat(found, ignore_index=True) if found else pd.DataFrame()
        if len(f):
            f["measured"] = [measured_falls(rt, app, r.block, r.from_size, r.to_size, args.tolerance)
                             for r in f.itertuples()]
        unmeasured = f.loc[f["measured"].str.startswith("0/"), "board"].nunique() if len(f) else 0
        worst = f.loc[f["ratio"].idxmin()] if len(f) else None
        at = (f"{worst['board']}, {worst['from_size']:.0f} -> {worst['to_size']:.0f} (block {worst['block']})"
              if worst is not None else "")
        print(f"{app:<34} {scored:>6} {f['board'].nunique() if len(f) else 0:>11} {unmeasured:>12} "
              f"{worst['ratio'] if worst is not None else float('nan'):>11.3f}  {at}")
        every.append(f)
    every = pd.concat([f for f in every if len(f)], ignore_index=True) if any(len(f) for f in every) else pd.DataFrame()
    if len(every):
        print(f"\nthe {args.top} worst falls")
        top = every.nsmallest(args.top, "ratio")
        print(top[["app", "board", "block", "from_size", "to_size", "ratio", "measured", "basis"]].to_string(
            index=False, formatters={"from_size": "{:.0f}".format, "to_size": "{:.0f}".format, "ratio": "{:.3f}".format}))


if __name__ == "__main__":
    main()
