"""Time ``perfml characterize --from-runtimes`` per board (issue 11 §4: under 1 s per board).

Prints, per data file, the time to read it once (the columns a calibration uses), then per
board of the file the time of the calibration itself (best and median of ``--repeat``
runs, wall-clock seconds) and what it inferred. Asserts nothing.

Usage: python experiments/bench_characterize.py [--repeat 3] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from perfml.characterize.calibrate import calibrate_from_rows, read_runtime_rows

#: data file -> (source filter, boards): the boards of both corpora
CORPORA = {
    "runtimes.csv.gz": ("gpuperfpredict-nca", ("GTX-680", "GTX-750", "GTX-970", "GTX-980", "GTX-Titan",
                                              "GTX-Titan-Black", "Quadro-K5200", "Tesla-K20", "Tesla-K40")),
    "dlops_runtimes.csv.gz": (None, ("Tesla-P4", "Tesla-P100-PCIe", "Tesla-V100-PCIe-32GB", "Tesla-T4",
                                     "A100-PCIe-40GB")),
}


def _timed(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def main() -> None:
    from perfml.datasets import find_data_home

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    home = find_data_home(args.data_home)  # an entry point: resolves the data home itself
    print(f"# perfml characterize --from-runtimes timing, {platform.machine()}, {os.cpu_count()} CPUs visible, "
          f"best/median of {args.repeat}")
    for name, (source, boards) in CORPORA.items():
        path = home / name
        best, median, rows = _timed(lambda: read_runtime_rows(path), args.repeat)
        print(f"read {name}: {len(rows)} rows, best {best:.3f} s, median {median:.3f} s")
        for board in boards:
            best, median, ch = _timed(lambda: calibrate_from_rows(rows, board, file=path, source=source), args.repeat)
            got = {v.quantity: v for v in ch.values if v.tier == "calibrated"}
            bw, fp, lo = (got.get(q) for q in ("dram_bandwidth", "fp32_throughput", "launch_overhead"))
            print(
                f"  {board:22s} calibrate best {best:.3f} s, median {median:.3f} s | "
                f"DRAM {bw.value / 1e9:7.1f} GB/s (n={bw.provenance['n_rows']}) | "
                f"FP32 {fp.value / 1e9:8.1f} GFLOP/s (n={fp.provenance['n_rows']}) | "
                f"floor {lo.value * 1e3:5.1f} us (n={lo.provenance['n_rows']})"
            )


if __name__ == "__main__":
    main()
