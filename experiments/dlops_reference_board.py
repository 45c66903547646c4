"""One reference board (the Habitat setting) on the deep-learning operators (issue 10 §3).

The user measured an operator call on exactly one board (the *reference*) and asks for its
time on another (the *target*). For every ordered pair of the five NeuSight GPUs
(dlops_runtimes.csv.gz) this prints the MAPE per op class of two predictors, and the mean
over pairs:

* ``roofline_ratio``: the reference time scaled by the ratio of the two boards' roofline
  bounds, ``T_t = T_r * T_bound,t / T_bound,r`` (Habitat's scaling of a measured time by
  hardware ratios, Yu et al., USENIX ATC 2021, on perfml's roofline;
  :class:`perfml.learned.operators.OperatorTransferBaseline` fitted on the reference rows);
* ``learned``: :class:`perfml.learned.operators.OperatorRegressor` (spec-only tier) trained
  on the boards other than the target, whose transfer features are then given the
  reference measurement only (its transfer table is rebuilt from the reference rows).

No leakage of the target or of the user's calls: the calls (operator + dims) are split in
two halves by a seeded hash; the learned model that predicts one half was trained on the
other half's calls only, and never on the target board. A call scores for (r, t) when both
boards measured it.

Runtime: the training rows are capped (at most ``--cap`` rows per (board, op, NeuSight split),
fixed seed, the same calls on every board); every call measured on both boards is scored.

    PYTHONPATH=. python experiments/dlops_reference_board.py [--cap 1500] [--n-jobs 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=1500, help="training rows per (board, op, split), fixed seed")
    parser.add_argument("--n-jobs", type=int, default=1, help="xgboost threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home, load_dlops_runtimes
    from perfml.evaluation.protocols import CappedTrainSplit, LeaveOneBoardOut
    from perfml.learned.operator_model import KEY_COLUMNS, TransferTable, call_keys
    from perfml.learned.operators import OperatorRegressor, OperatorTransferBaseline
    from perfml.operators import operator_work, roofline_lower_bound_ms

    t0 = time.perf_counter()
    rt = load_dlops_runtimes(DataHome(find_data_home()))
    rt["op_class"] = operator_work(rt)["op_class"].astype(str).to_numpy()
    rt["key"] = call_keys(rt).to_numpy()
    rt["bound_ms"] = roofline_lower_bound_ms(rt).to_numpy()
    rng = np.random.RandomState(args.seed)
    keys = rt["key"].unique()
    half = dict(zip(keys, rng.randint(0, 2, len(keys))))
    rt["half"] = rt["key"].map(half).to_numpy()
    kept = CappedTrainSplit(LeaveOneBoardOut(), args.cap, ("board", "op", "split"), random_state=args.seed,
                            same_rows_by=KEY_COLUMNS).kept(rt)
    boards = sorted(rt["board"].unique())
    pieces = []
    for target in boards:
        for part in (0, 1):
            train = rt[kept & (rt["board"] != target) & (rt["half"] != part)]
            model = OperatorRegressor(n_jobs=args.n_jobs, random_state=args.seed).fit(train, train["time_ms"])
            query_all = rt[(rt["board"] == target) & (rt["half"] == part)]
            for reference in boards:
                if reference == target:
                    continue
                ref = rt[(rt["board"] == reference) & (rt["half"] == part)]
                query = query_all[query_all["key"].isin(set(ref["key"]))]
                if query.empty:
                    continue
                # the user's reference measurements are all the learned model knows of these calls
                model.transfer_ = TransferTable().fit(ref["key"], ref["board"], np.log(ref["time_ms"].to_numpy()),
                                                      np.log(ref["bound_ms"].to_numpy()))
                learned = model.predict(query)
                ratio = OperatorTransferBaseline().fit(ref, ref["time_ms"]).predict(query)
                for name, pred in (("learned", learned), ("roofline_ratio", ratio)):
                    pieces.append(pd.DataFrame({
                        "reference": reference, "target": target, "model": name, "op_class": query["op_class"].to_numpy(),
                        "ape": 100 * np.abs(pred / query["time_ms"].to_numpy() - 1),
                    }))
    scores = pd.concat(pieces, ignore_index=True)
    per_pair = scores.groupby(["model", "reference", "target", "op_class"])["ape"].mean().unstack("op_class")
    per_pair["all"] = scores.groupby(["model", "reference", "target"])["ape"].mean()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 200)
    print("MAPE (%) per op class, one reference board -> one target board (every call measured on both)")
    print(per_pair.round(2).to_string())
    print()
    print("Mean over the 20 (reference, target) pairs of the per-pair MAPE (%); Conv over the 12 pairs without the "
          "A100 (no A100 conv rows)")
    print(per_pair.groupby(level="model").mean().round(2).to_string())
    print()
    print(f"(reference, target, call) triples scored per model, summed over the 20 pairs: "
          f"{int((scores['model'] == 'learned').sum())}; training cap {args.cap} rows per "
          f"(board, op, split); {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
