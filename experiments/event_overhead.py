"""Both timings of one board: CUDA-event times of a sweep against the kernels' own durations.

A perfml sweep times each launch between CUDA events (``cupyx.profiler.benchmark``); the
corpus' application runtimes, which ``models/default`` learned from, are nvprof kernel
durations. A launch floor calibrated from the one is not the other's
(:func:`perfml.characterize.calibrate.launch_timing`; ``perfml predict`` warns when they
differ). This script puts the two timings of the same launches side by side: the
``calibration`` spec (vectorAdd, 12 kB to 1.6 GB) measured by ``perfml sweep run`` and, on
the same machine, profiled by Nsight Compute (``gpu__time_duration.sum``;
``SPEC=calibration bash experiments/profile_app_kernels_on_device.sh BOARD OUT``).

Usage: PYTHONPATH=. python experiments/event_overhead.py [FOLDER]
       (default sweeps/results/archive/H100-SXM-calibration-run3: the result set, and the
       export in its ncu/calibration_raw.csv)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent
DEFAULT = HERE / "sweeps" / "results" / "archive" / "H100-SXM-calibration-run3"
#: Nsight Compute's duration units -> milliseconds
UNITS_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}


def kernel_durations(raw_csv: Path) -> pd.Series:
    """Median ``gpu__time_duration.sum`` (ms) per grid size of an ``ncu --csv --page raw`` export."""
    raw = pd.read_csv(raw_csv, low_memory=False)
    unit = str(raw.iloc[0]["gpu__time_duration.sum"]).strip()
    if unit not in UNITS_MS:
        raise SystemExit(f"{raw_csv}: gpu__time_duration.sum in unit {unit!r}, expected one of {sorted(UNITS_MS)}")
    rows = raw.iloc[1:]
    grid = rows["Grid Size"].str.extract(r"\((\d+)", expand=False).astype(int)
    ms = pd.to_numeric(rows["gpu__time_duration.sum"].astype(str).str.replace(",", ""), errors="raise") * UNITS_MS[unit]
    return ms.groupby(grid.to_numpy()).median()


def side_by_side(folder: Path) -> pd.DataFrame:
    """Per launch of the calibration spec: its CUDA-event time and its kernel duration (ms)."""
    from perfml.measure.runtime_rows import application_runtime_rows

    events = application_runtime_rows(folder)
    events = events[events["spec"] == "calibration"]
    durations = kernel_durations(folder / "ncu" / "calibration_raw.csv")
    table = pd.DataFrame({"N": events["input_size"].to_numpy(), "grid_x": events["grid_x"].to_numpy(),
                          "events_ms": events["time_ms"].to_numpy()})
    table["kernel_ms"] = table["grid_x"].map(durations)
    if table["kernel_ms"].isna().any():
        raise SystemExit(f"{folder}: launches without a profiled duration (grid sizes "
                         f"{sorted(table.loc[table['kernel_ms'].isna(), 'grid_x'])})")
    return table.sort_values("N").reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT)
    args = parser.parse_args()
    table = side_by_side(args.folder)
    diff_us = (table["events_ms"] - table["kernel_ms"]) * 1e3
    print(f"{args.folder}: {len(table)} launches of the calibration spec, CUDA events vs Nsight Compute")
    print(f"{'N':>10} {'bytes':>12} {'events us':>10} {'kernel us':>10} {'diff us':>8} {'ratio':>6}")
    for (_, row), diff in zip(table.iterrows(), diff_us):
        print(f"{int(row['N']):>10} {12 * int(row['N']):>12} {row['events_ms'] * 1e3:10.3f} {row['kernel_ms'] * 1e3:10.3f} "
              f"{diff:8.3f} {row['events_ms'] / row['kernel_ms']:6.3f}")
    print(f"events - kernel: median {np.median(diff_us):.2f} us, range {diff_us.min():.2f} .. {diff_us.max():.2f} us")
    print(f"smallest launch: events {table['events_ms'].iloc[0] * 1e3:.2f} us, kernel {table['kernel_ms'].iloc[0] * 1e3:.2f} us")


if __name__ == "__main__":
    main()
