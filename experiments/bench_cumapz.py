"""Time the CuMAPz emulator on the 2048x2048 matrix transpose descriptions.

Kim & Shrivastava (2011), Sec. 7: the original C implementation took "about two
minutes for 4096x4096 arrays"; perfml's NumPy emulator must analyse the 2048x2048
transpose (Table IV) in seconds. Prints one line per description (best and median of
``--repeat`` runs, wall-clock seconds) and the threads emulated.

Usage: python experiments/bench_cumapz.py [--repeat 3] [--board Tesla-C1060]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from perfml.boards import get_board
from perfml.cumapz import analyze, device_from_board, resolve_description
from perfml.cumapz.seed004 import TRANSPOSE_STEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--board", default="Tesla-C1060")
    args = parser.parse_args()
    device = device_from_board(get_board(args.board))
    print(f"# CuMAPz emulator timing, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"{'description':32s} {'threads':>10s} {'accesses':>10s} {'best_s':>8s} {'median_s':>9s}  mpe")
    for name, _, _ in TRANSPOSE_STEPS:
        desc = resolve_description(name)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = analyze(desc, device)
            times.append(time.perf_counter() - t0)
        c = result.counts
        threads = c["grid"][0] * c["grid"][1] * c["block"][0] * c["block"][1]
        accesses = c["n_global_accesses"] + c["n_buffered_accesses"]
        print(f"{name:32s} {threads:10d} {accesses:10d} {min(times):8.2f} "
              f"{statistics.median(times):9.2f}  {result.mpe:.4g}")


if __name__ == "__main__":
    main()
