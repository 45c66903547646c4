"""How close the GEMM calls of the operator corpus come to each board's datasheet FP32 rate.

For ``bmm`` and ``linear`` (FLOPs = 2 x B x M x N x K, ``perfml.operators``), per board:
the median of FLOPs / time over the calls in the top ``--top`` share of FLOPs, as a
fraction of the registry's peak FP32 rate (cores x boost clock x 2), and the kernels
cuBLAS launched for them (``kernel_name`` of ``dlops_runtimes.csv.gz``, most frequent
first). A board whose large calls reach a low fraction, or whose ``linear`` calls run other
kernels than its ``bmm`` calls, is one whose GEMM time an ``add`` calibration cannot carry.
Asserts nothing.

Usage: python experiments/gemm_efficiency.py [--top 0.2] [--data-home DIR]
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=float, default=0.2, help="share of the calls with the most FLOPs (per op)")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.boards import get_board
    from perfml.boards._derived import peak_flops
    from perfml.datasets import find_data_home, load_dlops_runtimes

    rt = load_dlops_runtimes(find_data_home(args.data_home))
    print(f"GEMM calls of dlops_runtimes.csv.gz: median FLOPs/time over the top {args.top:.0%} FLOPs per op, "
          "as a fraction of the registry's peak FP32 rate")
    print(f"{'board':<22} {'op':<7} {'calls':>6} {'TFLOP/s':>8} {'of peak':>8}  kernels (most frequent first)")
    for op in ("bmm", "linear"):
        part = rt[rt["op"] == op].assign(flops=lambda d: 2.0 * d["B"] * d["M"] * d["N"] * d["K"])
        top = part[part["flops"] >= part["flops"].quantile(1.0 - args.top)]
        for board, rows in top.groupby("board"):
            rate = float((rows["flops"] / (rows["time_ms"] * 1e-3)).median())
            peak = peak_flops(get_board(str(board)))
            kernels = rows["kernel_name"].astype(str).value_counts().head(2)
            names = ", ".join(f"{name} ({count})" for name, count in kernels.items())
            print(f"{board:<22} {op:<7} {len(rows):>6} {rate / 1e12:>8.2f} {rate / peak:>8.2f}  {names}")


if __name__ == "__main__":
    main()
