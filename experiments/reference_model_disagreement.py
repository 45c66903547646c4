"""How far the shipped model's prediction of a run is from a real measurement on a board it never trained on.

``perfml predict --reference`` warns about a reference row more than
``perfml.learned.bundle.REFERENCE_MODEL_DISAGREE_WARN`` x from the model's own prediction
of the same run on the same board (a unit slip is 1000x). This prints, per measured board
of ``sweeps/results/`` (the H100 SXM and the H200: this project's own measurements, no
training board) and per corpus, the ratio max(measured / predicted, predicted / measured)
over the board's rows taken as reference rows: the median, the 99th percentile, the
largest, and how many rows the warning would name. Rows whose run the training data
measured on that board are compared with that measurement instead, and are left out here.

    python experiments/reference_model_disagreement.py [--model models/default]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args(argv)

    from perfml.datasets import DataHome, find_data_home
    from perfml.learned.bundle import REFERENCE_MODEL_DISAGREE_WARN, load_predictor, reference_model_times
    from perfml.learned.training import measured_board_rows

    bundle = load_predictor(args.model, data_home=DataHome(find_data_home(args.data_home)))
    print(f"model {args.model}; warning above {REFERENCE_MODEL_DISAGREE_WARN:g}x")
    print(f"{'board':10s} {'corpus':10s} {'rows':>6s} {'compared':>8s} {'median':>7s} {'p99':>7s} {'max':>7s} {'warned':>6s}")
    for folder in sorted(p for p in (ROOT / "sweeps" / "results").iterdir() if (p / "manifest.json").is_file()):
        for corpus, rows in measured_board_rows(folder).items():
            ref = rows.drop(columns=["time_ms"], errors="ignore").rename(columns={"measured_ms": "time_ms"})
            keep = ["board", "app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"] \
                if corpus != "dlops" else ["board", "op", "B", "M", "N", "K", "H"]
            ref = ref[[c for c in keep if c in ref.columns] + ["time_ms"]].reset_index(drop=True)
            model_ms = reference_model_times(bundle, ref, corpus == "dlops")
            times = ref["time_ms"].to_numpy(dtype=float)
            apart = np.maximum(times / model_ms, model_ms / times)
            apart = apart[np.isfinite(apart)]
            if not len(apart):
                print(f"{folder.name:10s} {corpus:10s} {len(ref):6d} {0:8d}   (every run measured by the training data, "
                      "or none the model answers)")
                continue
            print(f"{folder.name:10s} {corpus:10s} {len(ref):6d} {len(apart):8d} {np.median(apart):7.2f} "
                  f"{np.quantile(apart, 0.99):7.2f} {apart.max():7.2f} {int((apart > REFERENCE_MODEL_DISAGREE_WARN).sum()):6d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
