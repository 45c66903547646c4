"""What the learned residual adds over the transfer baseline, per corpus (issue 10 §3).

Leave-one-board-out, per corpus: the learned model (``hybrid_xgboost``: the transfer of
the same run from the other boards plus an xgboost residual, shrunk by inner
board-grouped cross-validation) against ``transfer_only`` (the same baseline, shrinkage
0: no learned part), scored on the same rows. Prints MAPE, median APE and the in-band
share (0.8 <= T_pred/T_meas <= 1.2) per model, and what the learned part changes. Asserts
nothing.

Corpora: ``nine-apps`` (experiments/unseen_boards.toml) and ``rodinia``
(experiments/rodinia_unseen_boards.toml).

``--sub-models``: instead of the experiment files, ``perfml train``'s own Amaris sub-models
(``described``, ``undescribed``, ``described-calibrated``:
:func:`perfml.learned.training.make_corpus_model`, every row of the data home's corpus),
each under the nested leave-one-board-out ``perfml train`` scores them with
(:func:`perfml.learned.intervals.board_oof_predictions`), against the same configuration
with shrinkage 0 (its transfer baseline alone); with the 90 % interval's coverage of
held-out-board rows and its mean relative width.

Usage:
    PYTHONPATH=. python experiments/learned_vs_transfer.py [--corpus nine-apps rodinia]
        [--learned hybrid_xgboost ...] [--out FILE] [--data-home DIR]
    PYTHONPATH=. python experiments/learned_vs_transfer.py --sub-models [--data-home DIR]
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
    parser.add_argument("--sub-models", action="store_true", help="compare perfml train's described, undescribed and described-calibrated sub-models instead")
    args = parser.parse_args()
    if args.sub_models:
        sub_models(args.data_home)
        return

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


def sub_models(data_home_arg) -> None:
    """perfml train's Amaris sub-models against their transfer baseline, nested leave-one-board-out.

    Each configuration goes through :func:`perfml.learned.training.fit_corpus` exactly as
    ``perfml train`` runs it (its interval calibration included), with the shrinkage set to
    0 (the transfer baseline alone) or left "auto"; the figures are
    :func:`~perfml.learned.training.corpus_figures` of its out-of-fold predictions.
    """
    from perfml.datasets import DataHome, find_data_home
    from perfml.learned.training import calibrated_tier_rows, corpus_figures, corpus_rows, fit_corpus

    home = DataHome(find_data_home(data_home_arg))
    rows = corpus_rows(home, corpora=["described", "undescribed"])
    rows["described-calibrated"] = calibrated_tier_rows("described-calibrated", rows["described"])[0]
    print(f"{'sub-model':21s} {'model':25s} {'rows':>6s} {'MAPE %':>8s} {'in band %':>9s} {'cover %':>8s} "
          f"{'width':>6s} {'vs transfer (MAPE pts)':>23s}", flush=True)
    for corpus, part in rows.items():
        base = None
        for name, shrinkage in ((BASELINE, 0.0), ("learned (shrinkage auto)", "auto")):
            t0 = time.perf_counter()
            _, _, oof = fit_corpus(corpus, part, data_home=home, n_jobs=2, shrinkage=shrinkage)
            figures = corpus_figures(corpus, part, oof)[0]
            delta = "" if base is None else f"{figures['mape'] - base:+.2f}"
            base = figures["mape"] if base is None else base
            print(f"{corpus:21s} {name:25s} {figures['rows']:6d} {figures['mape']:8.2f} {figures['in_band']:9.1f} "
                  f"{figures['coverage']:8.1f} {figures['mean_relative_width']:6.3f} {delta:>23s}"
                  f"   ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
