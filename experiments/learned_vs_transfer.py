"""What the learned residual adds over the transfer baseline, per corpus (issue 10 §3).

Leave-one-board-out, per corpus: the learned model (``hybrid_xgboost``: the transfer of
the same run from the other boards plus an xgboost residual, shrunk by inner
board-grouped cross-validation) against ``transfer_only`` (the same baseline, shrinkage
0: no learned part), scored on the same rows. Prints MAPE, median APE and the in-band
share (0.8 <= T_pred/T_meas <= 1.2) per model, and what the learned part changes. Asserts
nothing.

Corpora: ``nine-apps`` (experiments/unseen_boards.toml) and ``rodinia``
(experiments/rodinia_unseen_boards.toml).

Usage:
    PYTHONPATH=. python experiments/learned_vs_transfer.py [--corpus nine-apps rodinia]
        [--learned hybrid_xgboost ...] [--out FILE] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPORA = {"nine-apps": "unseen_boards.toml", "rodinia": "rodinia_unseen_boards.toml"}
BASELINE = "transfer_only"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--learned", nargs="+", default=["hybrid_xgboost"], help="learned model entries to compare")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import as_data_home, find_data_home
    from perfml.experiments.runner import run_experiment
    from perfml.experiments.spec import load_experiment

    data_home = as_data_home(find_data_home(args.data_home))  # a script is an entry point: it resolves the home
    lines = [f"{'corpus':10s} {'model':28s} {'rows':>6s} {'MAPE %':>8s} {'median %':>9s} {'in band %':>9s} {'vs transfer (MAPE pts)':>23s}"]
    print(lines[0], flush=True)
    for corpus in args.corpus:
        spec = load_experiment(HERE / CORPORA[corpus])
        names = [BASELINE] + [m for m in args.learned if m != BASELINE]
        t0 = time.perf_counter()
        summary = run_experiment(spec, data_home=data_home, track=False, models=names).summary.set_index("model")
        base = summary.loc[BASELINE, "mape"]
        for name in names:
            row = summary.loc[name]
            delta = "" if name == BASELINE else f"{row['mape'] - base:+.2f}"
            line = (f"{corpus:10s} {name:28s} {int(row['n']):6d} {row['mape']:8.2f} {row['median_ape']:9.2f} "
                    f"{100 * row['within_band']:9.1f} {delta:>23s}")
            lines.append(line)
            print(line, flush=True)
        print(f"  ({corpus}: {time.perf_counter() - t0:.0f} s)", flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
        print(f"written: {args.out}")


if __name__ == "__main__":
    main()
