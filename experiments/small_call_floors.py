"""The time of the smallest calls per board and operator (the launch floor each op shows).

A calibrated target (``perfml predict --calibration``) gives its launch floor through its
``add`` calls only; the model assumes the other ops' floors relate to it as on the
training boards. This prints, from ``dlops_runtimes.csv.gz``, the median time (ms) of the
calls with fewer than ``--max-elements`` elements (B x H) per board and op, and each op's
floor over the board's ``add`` floor, so a board where that relation breaks shows. Asserts
nothing.

Usage: python experiments/small_call_floors.py [--max-elements N] [--data-home DIR]
"""

from __future__ import annotations

import argparse

OPS = ["add", "mul", "addu", "relu", "gelu", "softmax", "ln"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-elements", type=int, default=20_000)
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    import pandas as pd

    from perfml.datasets import find_data_home, load_dlops_runtimes

    rt = load_dlops_runtimes(find_data_home(args.data_home))
    rt = rt[rt["op"].isin(OPS) & (rt["B"] * rt["H"] < args.max_elements)]
    floors = rt.pivot_table(index="board", columns="op", values="time_ms", aggfunc="median")[OPS]
    counts = rt.pivot_table(index="board", columns="op", values="time_ms", aggfunc="size")[OPS]
    pd.set_option("display.width", 200)
    print(f"median time (ms) of the calls with B x H < {args.max_elements} (dlops_runtimes.csv.gz)")
    print(floors.round(4).to_string())
    print("\ncalls behind each median")
    print(counts.to_string())
    print("\neach op's floor over the board's add floor")
    print(floors.div(floors["add"], axis=0).round(2).to_string())


if __name__ == "__main__":
    main()
