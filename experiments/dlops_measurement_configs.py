"""Choose the operator configurations to measure on a board absent from the dlops corpus.

Writes the configuration file ``experiments/measure_dlops_torch.py`` reads: the dims
(``op, B, M, N, K, H``) of NeuSight's own configurations, so a board measured with them
can be compared row for row with the corpus' boards. Only dims are written, never a
measured time. The choice is seeded and bounded in cost:

* configurations whose latency on the corpus' newest board (A100-PCIe-40GB) is at most
  ``--max-ms`` (the timing of one configuration takes 25 calls);
* a seeded sample of each op's configurations in each of NeuSight's splits (``test``: the
  larger, LLM-like shapes; ``train``): ``--per-op`` per element-wise / ln / softmax op,
  ``--per-gemm`` per bmm / linear (fewer when fewer pass the cost bound).

    python experiments/dlops_measurement_configs.py --out CONFIGS.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.datasets import DataHome, find_data_home, load_dlops_runtimes

ANCHOR_BOARD = "A100-PCIe-40GB"
DIMS = ["B", "M", "N", "K", "H"]
GEMM = {"bmm", "linear"}


def choose_configs(runtimes: pd.DataFrame, *, max_ms: float, per_op: int, per_gemm: int,
                   seed: int) -> pd.DataFrame:
    rows = runtimes[(runtimes["board"] == ANCHOR_BOARD) & (runtimes["op"] != "conv")
                    & (runtimes["time_ms"] <= max_ms)]
    rng = np.random.default_rng(seed)
    parts = []
    for (op, split), group in rows.groupby(["op", "split"], sort=True):
        n = per_gemm if op in GEMM else per_op
        parts.append(group.sample(min(n, len(group)), random_state=int(rng.integers(2**31))))
    chosen = pd.concat(parts).drop_duplicates(subset=["op", *DIMS])
    out = chosen[["op", *DIMS, "split", "upstream_path", "upstream_row"]].copy()
    for d in DIMS:
        out[d] = out[d].astype("Int64")
    out.insert(0, "config_id", [f"c{i:05d}" for i in range(len(out))])
    return out.rename(columns={"split": "neusight_split"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--max-ms", type=float, default=20.0)
    parser.add_argument("--per-op", type=int, default=100)
    parser.add_argument("--per-gemm", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--data-home", default=None, help="default: $PERFML_DATA_HOME or ../shared/datasets")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists; choose another --out (files are never overwritten)")
    configs = choose_configs(load_dlops_runtimes(DataHome(find_data_home(args.data_home))), max_ms=args.max_ms, per_op=args.per_op,
                             per_gemm=args.per_gemm, seed=args.seed)
    configs.to_csv(args.out, index=False)
    print(f"{len(configs)} configurations written to {args.out}:",
          configs["op"].value_counts().sort_index().to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main())
