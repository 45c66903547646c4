"""One reference board (the Habitat setting, Yu et al., USENIX ATC 2021), per corpus.

The user measured a kernel on exactly one board (the reference) and asks for its runtime
on the others. For each corpus and each reference board R, the kernels are split into
groups (:class:`perfml.evaluation.one_reference.OneReferenceBoardSplit`); a model is
trained on every row of the other kernels plus the held-out kernels' rows on R only, and
predicts the held-out kernels on every other board. Printed per corpus and model: the
matrix of MAPE (reference board x predicted board), the MAPE and in-band share per
reference board, and their mean over reference boards. Asserts nothing.

Corpora: ``nine-apps`` (the data of experiments/unseen_boards.toml) and ``rodinia`` (of
experiments/rodinia_unseen_boards.toml); models: entries of those files.

Usage:
    PYTHONPATH=. python experiments/one_reference_board.py [--corpus nine-apps rodinia]
        [--models transfer_only hybrid_xgboost] [--kernel-folds 3] [--out DIR] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CORPORA = {"nine-apps": "unseen_boards.toml", "rodinia": "rodinia_unseen_boards.toml"}


def one_reference_table(spec, model_name: str, rt: pd.DataFrame, data_home, kernel_folds: int):
    """Out-of-fold predictions of every reference board for one model entry of ``spec``."""
    from perfml.evaluation.harness import cross_val_predictions
    from perfml.evaluation.one_reference import OneReferenceBoardSplit
    from perfml.experiments.runner import build_estimator

    model = next(m for m in spec.models if m.name == model_name)
    y = rt["measured_ms"].to_numpy(dtype=float)
    parts = []
    for reference in sorted(rt["board"].unique()):
        est = build_estimator(model, data_home)
        pred = cross_val_predictions(est, rt, y, OneReferenceBoardSplit(reference, n_kernel_folds=kernel_folds))
        parts.append(pred.assign(reference=reference))
    out = pd.concat(parts, ignore_index=True)
    ratio = out["predicted_ms"] / out["measured_ms"]
    return out.assign(ape=100 * (ratio - 1).abs(), in_band=ratio.between(0.8, 1.2))


def report(corpus: str, model_name: str, table: pd.DataFrame) -> str:
    """The matrix and the per-reference summary as text."""
    matrix = table.pivot_table(index="reference", columns="board", values="ape", aggfunc="mean")
    per_ref = table.groupby("reference").agg(rows=("ape", "size"), mape=("ape", "mean"), in_band=("in_band", "mean"))
    per_ref["in_band"] *= 100
    lines = [f"== {corpus} / {model_name}: MAPE % (rows: reference board, columns: predicted board)",
             matrix.round(1).to_string(na_rep="-"), "",
             per_ref.round(2).to_string(), "",
             f"{corpus} / {model_name}: mean over reference boards: MAPE {per_ref['mape'].mean():.2f} %, "
             f"in band {per_ref['in_band'].mean():.1f} %; all rows pooled: MAPE {table['ape'].mean():.2f} %, "
             f"in band {100 * table['in_band'].mean():.1f} %", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--models", nargs="+", default=["transfer_only", "hybrid_xgboost"])
    parser.add_argument("--kernel-folds", type=int, default=3)
    parser.add_argument("--out", default=None, help="folder for one_reference_board_<corpus>.txt (not written when absent)")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import as_data_home, find_data_home
    from perfml.experiments.runner import experiment_data
    from perfml.experiments.spec import load_experiment

    data_home = as_data_home(find_data_home(args.data_home))  # a script is an entry point: it resolves the home
    for corpus in args.corpus:
        spec = load_experiment(HERE / CORPORA[corpus])
        rt = experiment_data(spec, data_home)
        texts = [f"# one reference board, {corpus}: {len(rt)} rows, {rt['board'].nunique()} boards, "
                 f"{rt['app_id'].nunique()} kernels, {args.kernel_folds} kernel folds per reference board\n"]
        for name in args.models:
            t0 = time.perf_counter()
            table = one_reference_table(spec, name, rt, data_home, args.kernel_folds)
            text = report(corpus, name, table) + f"({time.perf_counter() - t0:.0f} s)\n"
            print(text, flush=True)
            texts.append(text)
        if args.out:
            path = Path(args.out) / f"one_reference_board_{corpus.replace('-', '_')}.txt"
            path.write_text("\n".join(texts))
            print(f"written: {path}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
