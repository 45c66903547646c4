"""Twin check of the fine-grained criteria model (seed 000), as a Markdown table.

Usage::

    python experiments/criteria_twins.py [--data-home DIR] [--cases-csv FILE]

Same computation as ``perfml diagnose twins`` (:func:`perfml.diagnosis.twin_check`):
for each twin pair (uncoalesced -> coalesced) and board, (a) whether the targeted
criterion is better for the optimized twin, and (b) the potential speedup predicted for
the unoptimized twin against the speedup the optimized twin achieved (runtimes.csv.gz,
gpuperfpredict-nca, 16x16 blocks), medians over input sizes.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from perfml.diagnosis import twin_check, twin_summary

COLUMNS = (
    "pair", "board", "cc", "n_sizes", "criterion", "crit_unopt", "crit_opt",
    "a_L2_GRANULARITY", "a_L1_GRANULARITY", "a_SHMEMEFFICIENCY", "n_predicted",
    "predicted_potential", "predicted_targeted", "inverse_targeted", "measured_speedup", "ratio",
    "bound", "kernel_matched",
)


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--cases-csv", default=None, help="write the per-size cases here (must not exist)")
    args = parser.parse_args(argv)
    if args.cases_csv and Path(args.cases_csv).exists():
        parser.error(f"{args.cases_csv} exists; choose a new file")
    from perfml.datasets import DataHome, find_data_home

    home = DataHome(find_data_home(args.data_home))  # an entry point: resolves the data home itself
    cases, table = twin_check(home)
    if args.cases_csv:
        cases.to_csv(args.cases_csv, index=False)
    cols = [c for c in COLUMNS if c in table.columns]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in table.to_dict(orient="records"):
        print("| " + " | ".join(_cell(row.get(c)) for c in cols) + " |")
    print()
    for key, value in twin_summary(table).items():
        print(f"- {key}: {_cell(value) if isinstance(value, float) else value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
