"""How much does a reference prediction need the launch? (issue 10 §2: the launch is optional)

A user's own kernel (no description, never in training) with ``--reference`` times on one
board is carried to another board by the model's ratio between the two boards for that
run (:func:`perfml.learned.queries._reference_predictions`). The model reads the launch,
so a reference without launch columns has to assume one. This measures what that costs,
on the Rodinia kernels of ``runtimes.csv.gz`` disguised as unknown kernels (their
``app_id`` renamed, so neither their description nor their training runs are used):

* ``measured launch``: reference and queries carry the launch the run really had;
* ``nominal launch``: neither does, and the nominal launch perfml assumes is used
  (``perfml.learned.queries.NOMINAL_BLOCK`` threads per block, one thread per element of
  ``input_size``).

Per kernel, one run per (input size, input size 2) (its most frequent launch), the
reference board ``--reference-board`` (default GTX-980), scored on every other board that
ran the same run. Beside the model's ratio, three ratios of the boards' specifications
(no model): peak DRAM bandwidth, FP32 peak, and their geometric mean. Prints MAPE and the
share within [0.8, 1.2] per kernel and overall, and, for the measured launch, the share of
the query rows inside their nominal 90 % interval and its mean relative width (the interval
of a kernel of unknown work spans the compute and bandwidth ratios,
:func:`perfml.learned.queries._unknown_work_alternatives`); asserts nothing. ``--source``
picks the kernels (default the Rodinia kernels; ``gpuperfpredict-nca`` the nine applications').

Usage: PYTHONPATH=. python experiments/launch_free_reference.py [--model DIR] [--data-home DIR]
       [--reference-board B] [--max-runs N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent
LAUNCH = ["block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z"]
SIZES = ["input_size", "input_size_2"]


def runs_of(rt: pd.DataFrame, ref_board: str, max_runs: int, seed: int = 0) -> pd.DataFrame:
    """One launch per (kernel, sizes): the most frequent one; runs on the reference board and another."""
    rows = rt.dropna(subset=["block_x", "grid_x"]).copy()
    rows["input_size_2"] = rows["input_size_2"].fillna(0)
    for c in LAUNCH:
        rows[c] = rows[c].fillna(1).astype(int)
    key = ["app_id", *SIZES]
    common = rows.groupby([*key, *LAUNCH]).size().rename("n").reset_index()
    common = common.sort_values("n", ascending=False).drop_duplicates(key)
    rows = rows.merge(common[[*key, *LAUNCH]], on=[*key, *LAUNCH])
    has_ref = rows[rows["board"] == ref_board][key].drop_duplicates()
    rows = rows.merge(has_ref, on=key)
    rng = np.random.default_rng(seed)
    keep = []
    for _, g in rows.groupby("app_id"):
        runs = g[key].drop_duplicates()
        if len(runs) > max_runs:
            runs = runs.iloc[np.sort(rng.choice(len(runs), max_runs, replace=False))]
        keep.append(g.merge(runs, on=key))
    return pd.concat(keep, ignore_index=True)


def spec_ratio_predictions(queries: pd.DataFrame, ref_rows: pd.DataFrame, ref_board: str) -> dict:
    """The reference time times a ratio of the two boards' specifications (no model)."""
    from perfml.boards import get_board, peak_bandwidth, peak_flops

    def fp32(name):
        return peak_flops(get_board(name))

    def bw(name):
        return peak_bandwidth(get_board(name))

    t_ref = ref_rows.groupby(["app_id", *SIZES])["time_ms"].mean()
    t = np.array([t_ref.loc[tuple(k)] for k in queries[["app_id", *SIZES]].itertuples(index=False)], dtype=float)
    r_bw = np.array([bw(ref_board) / bw(b) for b in queries["board"]])
    r_fp = np.array([fp32(ref_board) / fp32(b) for b in queries["board"]])
    return {"DRAM-bandwidth ratio": t * r_bw, "FP32-peak ratio": t * r_fp, "geo-mean ratio": t * np.sqrt(r_bw * r_fp)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--reference-board", default="GTX-980")
    parser.add_argument("--max-runs", type=int, default=40, help="runs per kernel at most (seeded sample)")
    parser.add_argument("--source", default="gpuperfpredict-rodinia")
    args = parser.parse_args()

    from perfml.datasets import DataHome, find_data_home, load_runtimes
    from perfml.learned.bundle import load_predictor, predict_any
    from perfml.learned.queries import NOMINAL_BLOCK, check_reference

    home = DataHome(find_data_home(args.data_home))
    rt = load_runtimes(home)
    rt = rt[rt["source"] == args.source]
    runs = runs_of(rt, args.reference_board, args.max_runs)
    runs["app_id"] = "user_" + runs["app_id"].astype(str)  # unknown to the model: no description, no training runs
    runs["time_ms"] = runs["time_ms_mean"]
    bundle = load_predictor(args.model, data_home=home)
    ref_rows = runs[runs["board"] == args.reference_board]
    queries = runs[runs["board"] != args.reference_board].reset_index(drop=True)
    measured = queries["time_ms"].to_numpy(dtype=float)
    print(f"{runs['app_id'].nunique()} kernels, {len(ref_rows)} reference runs on {args.reference_board}, "
          f"{len(queries)} query rows on {queries['board'].nunique()} other boards; nominal block {NOMINAL_BLOCK}\n")
    results = {}
    for mode in ("measured launch", "nominal launch"):
        cols = ["board", "app_id", *SIZES] + (LAUNCH if mode == "measured launch" else [])
        ref = check_reference(ref_rows[cols + ["time_ms"]].reset_index(drop=True), "reference")
        out = predict_any(bundle, queries[cols].reset_index(drop=True), "queries", reference=(ref, None))
        assert (out["basis"] == "reference").all()
        results[mode] = out["predicted_ms"].to_numpy(dtype=float)
        if mode == "measured launch":  # the 90 % interval of a kernel known only from its reference
            lower, upper = out["lower_ms"].to_numpy(dtype=float), out["upper_ms"].to_numpy(dtype=float)
            inside = (measured >= lower) & (measured <= upper)
            print(f"measured launch: the nominal 90 % interval holds {100 * inside.mean():.1f} % of the query rows; "
                  f"mean relative width (upper - lower) / predicted {np.mean((upper - lower) / results[mode]):.3f}\n")
    results.update(spec_ratio_predictions(queries, ref_rows, args.reference_board))
    print(f"{'kernel':<32} {'rows':>5} " + " ".join(f"{m + ' MAPE %':>22} {'in band %':>9}" for m in results))
    kernels = queries["app_id"].to_numpy()
    for k in ["all", *sorted(set(kernels))]:
        m = np.ones(len(kernels), dtype=bool) if k == "all" else kernels == k
        cells = []
        for pred in results.values():
            ape = np.abs(pred[m] / measured[m] - 1)
            cells.append(f"{100 * ape.mean():>22.2f} {100 * np.mean(ape <= 0.2):>9.1f}")
        print(f"{k:<32} {int(m.sum()):>5} " + " ".join(cells))


if __name__ == "__main__":
    main()
