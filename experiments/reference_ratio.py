"""The ``perfml predict --reference`` path, scored: a kernel the model never saw, timed on one board.

For a query with a ``--reference`` measurement t_R of the same run on board R, perfml
predicts board T as ``t_R x M(T) / M(R)``, where M is the sub-model
(:func:`perfml.learned.queries._reference_predictions`). This script scores that ratio for
kernels the model never saw: the kernels are split into groups (GroupKFold by ``app_id``);
a model is fitted on the other kernels' rows (every board), and every held-out run measured
on two boards R != T gives one prediction of T from R. Printed per corpus and model: the
MAPE per reference board, their mean, and the pooled MAPE and share within 0.8-1.2.
Models: entries of the corpus's experiment file (default: the issue-rate transfer baseline
and hybrid), so "what the learned residual adds" is measured on this path too.
Asserts nothing.

Usage:
    PYTHONPATH=. python experiments/reference_ratio.py [--corpus nine-apps rodinia]
        [--models transfer_only_issue hybrid_xgboost_issue] [--kernel-folds 3] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CORPORA = {"nine-apps": "unseen_boards.toml", "rodinia": "rodinia_unseen_boards.toml"}


def held_out_predictions(spec, model_name: str, rt: pd.DataFrame, data_home, kernel_folds: int) -> pd.Series:
    """M(row) for every row, from a model fitted without the row's kernel (kernel-grouped folds)."""
    from sklearn.model_selection import GroupKFold

    from perfml.experiments.runner import build_estimator

    model = next(m for m in spec.models if m.name == model_name)
    y = rt["measured_ms"].to_numpy(dtype=float)
    out = pd.Series(np.nan, index=rt.index)
    for train, test in GroupKFold(n_splits=kernel_folds).split(rt, y, rt["app_id"]):
        est = build_estimator(model, data_home).fit(rt.iloc[train], y[train])
        out.iloc[test] = est.predict(rt.iloc[test])
    return out


def reference_pairs(rt: pd.DataFrame, model_ms: pd.Series) -> pd.DataFrame:
    """Every (run, reference board R, target board T != R): ``t_R x M(T) / M(R)`` against ``t_T``."""
    from perfml.learned.features._common import RUN_KEY, second_size

    runs = rt.assign(input_size_2=second_size(rt), model_ms=model_ms.to_numpy())
    key = runs[RUN_KEY].astype(str).agg("|".join, axis=1)
    runs = runs.assign(run=key)[["run", "board", "measured_ms", "model_ms"]]
    # one time per (run, board): the median of repeated rows
    runs = runs.groupby(["run", "board"], as_index=False)[["measured_ms", "model_ms"]].median()
    pairs = runs.merge(runs, on="run", suffixes=("_ref", "_target"))
    pairs = pairs[pairs["board_ref"] != pairs["board_target"]]
    predicted = pairs["measured_ms_ref"] * pairs["model_ms_target"] / pairs["model_ms_ref"]
    ratio = predicted / pairs["measured_ms_target"]
    return pairs.assign(predicted_ms=predicted, ape=100 * (ratio - 1).abs(), in_band=ratio.between(0.8, 1.2))


def report(corpus: str, model_name: str, pairs: pd.DataFrame) -> str:
    per_ref = pairs.groupby("board_ref").agg(pairs=("ape", "size"), mape=("ape", "mean"), in_band=("in_band", "mean"))
    per_ref["in_band"] *= 100
    return "\n".join([
        f"== {corpus} / {model_name}: --reference ratio, kernels never seen in training",
        per_ref.round(2).to_string(), "",
        f"{corpus} / {model_name}: mean over reference boards: MAPE {per_ref['mape'].mean():.2f} %, "
        f"in band {per_ref['in_band'].mean():.1f} %; all pairs pooled ({len(pairs)}): MAPE {pairs['ape'].mean():.2f} %, "
        f"in band {100 * pairs['in_band'].mean():.1f} %", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--models", nargs="+", default=["transfer_only_issue", "hybrid_xgboost_issue"])
    parser.add_argument("--kernel-folds", type=int, default=3)
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home
    from perfml.experiments.runner import experiment_data
    from perfml.experiments.spec import load_experiment

    data_home = DataHome(find_data_home(args.data_home))
    for corpus in args.corpus:
        spec = load_experiment(HERE / CORPORA[corpus])
        rt = experiment_data(spec, data_home)
        print(f"# {corpus}: {len(rt)} rows, {rt['board'].nunique()} boards, {rt['app_id'].nunique()} kernels, "
              f"{args.kernel_folds} kernel folds\n")
        for name in args.models:
            t0 = time.perf_counter()
            pairs = reference_pairs(rt, held_out_predictions(spec, name, rt, data_home, args.kernel_folds))
            print(report(corpus, name, pairs))
            print(f"({time.perf_counter() - t0:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
