"""A calibration made only of small calls: how far the calibrated tier's answers are from the measurements.

The calibration is the board's element-wise ``add`` calls that move fewer than
``--max-bytes`` bytes (``sweeps/results/<board>/dlops_torch.csv``, this project's own
measurements: the H100 SXM and the H200, no training board); below a few MB they all sit at
the launch floor, so the streaming curve built from them never reaches DRAM. The queries
are every other operator call of that file. Printed: per op class, the median of
predicted / measured, the MAPE, and the share of calls inside the 90 % interval.

    python experiments/small_call_calibration.py [--board H100-SXM] [--max-bytes 2e6] [--model models/default]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="H100-SXM")
    parser.add_argument("--max-bytes", type=float, default=2e6)
    parser.add_argument("--model", default=str(ROOT / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args(argv)

    import pandas as pd

    from perfml.cli import main as perfml
    from perfml.operators import OP_CLASS, operator_work

    calls = pd.read_csv(ROOT / "sweeps" / "results" / args.board / "dlops_torch.csv")
    adds = calls[calls["op"] == "add"]
    small = adds[operator_work(adds)["bytes"].to_numpy() < args.max_bytes]
    queries = calls[calls["op"] != "add"].reset_index(drop=True)
    print(f"{args.board}: calibration of {len(small)} add calls under {args.max_bytes:.3g} bytes "
          f"({small['time_ms'].min():.4g}-{small['time_ms'].max():.4g} ms); {len(queries)} other operator calls")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small[["board", "op", "B", "H", "time_ms"]].to_csv(tmp / "adds.csv", index=False)
        queries[["board", "op", "B", "M", "N", "K", "H"]].to_csv(tmp / "q.csv", index=False)
        argv = ["--quiet", "predict", "--model", args.model, "--queries", str(tmp / "q.csv"), "--output",
                str(tmp / "p.csv"), "--calibration", str(tmp / "adds.csv")]
        if args.data_home:
            argv += ["--data-home", args.data_home]
        status = perfml(argv)
        if status != 0:
            return status
        out = pd.read_csv(tmp / "p.csv")
    measured = queries["time_ms"].to_numpy(dtype=float)
    ratio = out["predicted_ms"].to_numpy(dtype=float) / measured
    inside = (out["lower_ms"].to_numpy() <= measured) & (measured <= out["upper_ms"].to_numpy())
    classes = queries["op"].map(dict(OP_CLASS)).fillna("other").to_numpy()
    print(f"{'class':8s} {'calls':>6s} {'median pred/meas':>17s} {'MAPE %':>8s} {'in 90% interval':>16s}")
    for name in ["all", *sorted(set(classes))]:
        pick = np.ones(len(ratio), dtype=bool) if name == "all" else classes == name
        print(f"{name:8s} {int(pick.sum()):6d} {np.median(ratio[pick]):17.2f} "
              f"{100 * np.mean(np.abs(ratio[pick] - 1)):8.1f} {100 * inside[pick].mean():15.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
