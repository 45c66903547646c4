"""How many times its compulsory bytes a naive matMul moves through DRAM, board by board.

The nine applications' naive matMul kernels (``kernels/matMul_gpu*.cu``) re-read A and B
N times over. On the 2012-2016 boards of the corpus (L2 of 0.25-2 MB) the re-reads go to
DRAM; on a Hopper board (50-60 MB of L2) a working set of ``3 N^2 x 4`` bytes up to the
L2's size is read from DRAM once. That is the measured side of why ``models/default``,
trained on the old boards, puts the H100's and H200's naive matMuls at about twice their
times (``experiments/results/measured_board_check_H100-SXM.txt``: spec-only matMul_gpu
88.59 % MAPE).

Both sides are profiler counts of the same kernels, read through perfml's own mapping
(:func:`perfml.learned.profile_import.profiled_work`: DRAM bytes = 32 B x (read + write
sectors)):

* the old boards: nvprof's ``dram_read_transactions`` / ``dram_write_transactions`` of the
  corpus (``profiles_nca.csv.gz`` of the data home, Amaris et al.), median over the runs
  of a size; nvprof leaves the caches as the previous launch left them, so a working set
  that fits in the L2 can read nothing from DRAM (0.00);
* the Hopper boards: ``dram__sectors_read.sum`` / ``dram__sectors_write.sum`` of the
  Nsight Compute exports this project made (``sweeps/results/<board>/ncu/apps_details.csv``;
  ncu flushes the caches before each profiled launch).

The compulsory bytes are A and B read once and C written once, ``3 N^2 x 4``. A value
under 1 means some of them never reached DRAM during the kernel (C's lines still in the
L2 when it ended).

Usage: PYTHONPATH=. python experiments/matmul_dram_traffic.py [--data-home DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent
KERNELS = ("matMul_gpu", "matMul_gpu_uncoalesced", "matMul_gpu_sharedmem", "matMul_gpu_sharedmem_uncoalesced")
SIZES = (256, 512, 1024, 2048, 4096)
HOPPER = {"H100-SXM": HERE / "sweeps" / "results" / "H100-SXM" / "ncu" / "apps_details.csv",
          "H200": HERE / "sweeps" / "results" / "H200" / "ncu" / "apps_details.csv"}


def compulsory_bytes(n: np.ndarray) -> np.ndarray:
    """A and B read once, C written once: ``3 N^2`` float32 values."""
    return 3.0 * np.asarray(n, dtype=float) ** 2 * 4.0


def corpus_ratios(data_home) -> pd.DataFrame:
    """(board, app_id, input_size, ratio) of the corpus' profiles, median per size."""
    from perfml.learned.profile_import import profiled_work

    path = Path(data_home) / "profiles_nca.csv.gz"
    prof = pd.read_csv(path, low_memory=False)
    prof = prof[prof["app_id"].isin(KERNELS) & prof["input_size"].isin(SIZES)].reset_index(drop=True)
    dram = profiled_work(prof)["profiled_dram_bytes"].to_numpy(dtype=float)
    out = prof[["board", "app_id", "input_size"]].assign(ratio=dram / compulsory_bytes(prof["input_size"]))
    return out.groupby(["board", "app_id", "input_size"], as_index=False)["ratio"].median()


def hopper_ratios(board: str, path: Path) -> pd.DataFrame:
    """The same ratio from a Nsight Compute export; N from the FP32 FLOPs (2 N^3)."""
    from perfml.learned.profile_import import profiled_work, read_profile

    runs = read_profile(path)
    runs = runs[runs["app_id"].isin(KERNELS)].reset_index(drop=True)
    work = profiled_work(runs)
    n = np.round(np.cbrt(work["profiled_flops"].to_numpy(dtype=float) / 2.0))
    ratio = work["profiled_dram_bytes"].to_numpy(dtype=float) / compulsory_bytes(n)
    out = pd.DataFrame({"board": board, "app_id": runs["app_id"], "input_size": n.astype(int), "ratio": ratio})
    return out.groupby(["board", "app_id", "input_size"], as_index=False)["ratio"].median()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.boards import get_board
    from perfml.datasets import find_data_home

    home = find_data_home(args.data_home)
    table = pd.concat([corpus_ratios(home),
                       *(hopper_ratios(b, p) for b, p in HOPPER.items())], ignore_index=True)
    print("DRAM bytes moved / compulsory bytes (3 N^2 x 4), median over the runs of a size")
    for kernel in KERNELS:
        sub = table[table["app_id"] == kernel]
        wide = sub.pivot_table(index="board", columns="input_size", values="ratio", aggfunc="median")
        wide = wide.reindex(columns=[s for s in SIZES if s in wide.columns])
        l2 = {b: get_board(b).l2_bytes for b in wide.index}
        print(f"\n{kernel}")
        print(f"  {'board':<16} {'L2 MB':>6} " + " ".join(f"{'N=' + str(s):>8}" for s in wide.columns))
        for board, row in wide.iterrows():
            size = f"{l2[board] / 2**20:6.2f}" if l2[board] else f"{'?':>6}"
            print(f"  {board:<16} {size} " + " ".join(f"{v:8.2f}" for v in row.to_numpy()))
    print("\nworking set 3 N^2 x 4: " + ", ".join(f"N={s} {compulsory_bytes(s) / 2**20:.1f} MiB" for s in SIZES))
    hopper = table["board"].isin(list(HOPPER))
    print("range over the four kernels (min .. max of the medians):")
    for size in SIZES:
        old, new = table[~hopper & (table["input_size"] == size)], table[hopper & (table["input_size"] == size)]
        print(f"  N={size:<5} corpus boards ({old['board'].nunique()}) {old['ratio'].min():7.2f} .. "
              f"{old['ratio'].max():7.2f}   Hopper ({new['board'].nunique()}) {new['ratio'].min():6.2f} .. "
              f"{new['ratio'].max():6.2f}")


if __name__ == "__main__":
    main()
