"""Fingerprint of a model's predictions, to show that a change of code leaves them as they were.

Prints nothing but counts; writes every prediction to a ``.npy`` file, or compares two such
files. Run on the tree before and on the tree after a change (two git worktrees), then compare:

    python experiments/prediction_fingerprint.py --out before.npy     # in the old tree
    python experiments/prediction_fingerprint.py --out after.npy      # in the new tree
    python experiments/prediction_fingerprint.py --compare before.npy after.npy

The predictions: ``--rows`` training rows (seeded sample of ``perfml train``'s application
rows) through each application sub-model of the bundle (``predict_transfer``: the feature
path, without the query checks) on their own boards and on every board of the registry;
then vectorAdd queries at 2^10..2^23 elements on every board through ``predict_any``
(``perfml predict``'s path: basis, roofline floor and interval), and one query of each
operator class (bmm, linear, add, softmax, ln) on every board. A query the model refuses is left
out (the same on both trees, or the counts differ).
"""

from __future__ import annotations

import argparse

import numpy as np


def fingerprint(model_dir: str, data_home, n_rows: int) -> np.ndarray:
    """Every prediction described in the module docstring, concatenated."""
    import pandas as pd

    from perfml.boards import list_boards
    from perfml.datasets import DataHome, find_data_home
    from perfml.errors import PerfmlError
    from perfml.learned.bundle import load_predictor, predict_any
    from perfml.learned.training import training_runtimes

    home = DataHome(find_data_home(data_home))
    bundle = load_predictor(model_dir, data_home=home)
    boards = [b.name for b in list_boards()]
    rows = training_runtimes(home).sample(n_rows, random_state=0).drop(columns=["measured_ms"])
    parts = []
    for key in ("described", "undescribed"):
        model = bundle.models.get(key)
        if model is None:
            continue
        mine = rows[rows["app_id"].isin(model.features_.apps_)]
        parts.append(model.predict_transfer(mine))
        parts.extend(model.predict_transfer(mine.assign(board=board)) for board in boards)
    sizes = pd.DataFrame({"app_id": "vectorAdd", "input_size": [str(2**k) for k in range(10, 24)]})
    ops = pd.DataFrame({"op": ["bmm", "linear", "add", "softmax", "ln"], "B": ["8", "8", "1", "1", "1"],
                        "M": ["512", "512", "", "", ""], "N": ["64", "1024", "", "", ""],
                        "K": ["512", "1024", "", "", ""], "H": ["", "", "4096", "4096", "4096"]})
    queries = [sizes.assign(board=board) for board in boards]
    queries += [ops.iloc[[i]].assign(board=board) for board in boards for i in range(len(ops))]
    for query in queries:
        try:
            out = predict_any(bundle, query, "fingerprint")
        except PerfmlError:
            continue
        parts.append(out[["predicted_ms", "lower_ms", "upper_ms"]].to_numpy(dtype=float).ravel())
    return np.concatenate([np.asarray(p, dtype=float).ravel() for p in parts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the predictions to this .npy file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two .npy files")
    parser.add_argument("--model", default="models/default")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--rows", type=int, default=4000)
    args = parser.parse_args()
    if args.compare:
        before, after = (np.load(path) for path in args.compare)
        print(f"before: {before.size} values ({np.isfinite(before).sum()} finite); "
              f"after: {after.size} values ({np.isfinite(after).sum()} finite)")
        if before.shape != after.shape:
            print("different counts: a query answered on one tree is refused on the other")
            return
        same = np.array_equal(before, after, equal_nan=True)
        finite = np.isfinite(before) & np.isfinite(after)
        worst = float(np.max(np.abs(after[finite] / before[finite] - 1.0))) if finite.any() else 0.0
        print(f"identical: {same}; largest relative difference: {worst:.3g}")
        return
    if not args.out:
        parser.error("give --out FILE.npy or --compare BEFORE AFTER")
    values = fingerprint(args.model, args.data_home, args.rows)
    np.save(args.out, values)
    print(f"{values.size} predictions ({np.isfinite(values).sum()} finite) written to {args.out}")


if __name__ == "__main__":
    main()
