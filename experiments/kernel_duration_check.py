"""The H100's application kernels timed as the corpus was (kernel durations) and as sweeps were (CUDA events).

``models/default`` learned the nine applications from nvprof kernel durations (the data
home's ``runtimes.csv``); perfml's sweeps timed the Hopper boards between CUDA events, which
add the host's launch and event overhead (about 11 us on an H100 machine,
``experiments/results/event_overhead.txt``). ``perfml sweep run --timing kernel-duration``
reads each kernel's duration from CUPTI's activity records, the timing nvprof reports.

``sweeps/results/archive/H100-SXM-kernel-duration`` and ``...-kernel-duration-events`` are
the ``calibration`` and ``applications`` specs measured both ways, one after the other, on
one H100 machine (``bash experiments/kernel_duration_on_device.sh H100-SXM OUT``). This
prints:

1. the two timings of each launch side by side (the calibration spec's vectorAdd, 12 kB to
   1.6 GB; the applications spec, per application): the events' excess, and how noisy
   each timing is (coefficient of variation of the repetitions);
2. ``models/default``'s predictions of the applications spec's kernels but vectorAdd, as
   ``experiments/measured_board_check.py`` scores them (its ``score``), each tier against
   the times of the same timing: ``spec-only`` (the registry alone) and ``calibrated``
   (``--calibration`` with that set's ``calibration`` spec rows: vectorAdd over 18 sizes).

Nothing is fitted here. Usage: PYTHONPATH=. python experiments/kernel_duration_check.py
[--durations DIR] [--events DIR] [--model DIR] [--data-home DIR] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.experiments.cli_steps import load_script, run_perfml

HERE = Path(__file__).resolve().parent.parent
ARCHIVE = HERE / "sweeps" / "results" / "archive"
TIMINGS = ("kernel-duration", "cuda-events")


def _check_module():
    """experiments/measured_board_check.py, for its scoring (one definition)."""
    return load_script(HERE / "experiments" / "measured_board_check.py")


def both_timings(durations: Path, events: Path) -> pd.DataFrame:
    """Per launch measured in both sets: spec, kernel, N, median times (ms) and repetition CVs."""
    from perfml.measure.store import ResultSet

    sets = {t: ResultSet.open(p) for t, p in zip(TIMINGS, (durations, events))}
    for timing, rs in sets.items():
        if rs.timing != timing:
            raise SystemExit(f"{rs.path} was timed with {rs.timing}, expected {timing}")
    if sets[TIMINGS[0]].device.uuid != sets[TIMINGS[1]].device.uuid:
        raise SystemExit("the two sets come from different devices: compare timings on one machine only")
    frames = []
    for timing, rs in sets.items():
        raw = rs.read()
        frames.append(pd.DataFrame({
            "spec": raw["spec"].astype(str), "launch_key": raw["launch_key"].astype(str),
            "kernel": raw["family"].astype(str),
            "N": raw["params_json"].map(lambda s: json.loads(s).get("N", np.nan)).astype(float),
            f"{timing}_ms": raw["time_median_s"].astype(float) * 1e3,
            f"{timing}_cv": raw["time_std_s"].astype(float) / raw["time_mean_s"].astype(float),
        }))
    both = frames[0].merge(frames[1].drop(columns=["kernel", "N"]), on=["spec", "launch_key"], validate="one_to_one")
    both["excess_us"] = (both["cuda-events_ms"] - both["kernel-duration_ms"]) * 1e3
    return both.sort_values(["spec", "kernel", "N"]).reset_index(drop=True)


def timing_lines(both: pd.DataFrame) -> list[str]:
    cal = both[both["spec"] == "calibration"]
    lines = [f"calibration spec (vectorAdd, 256 threads per block), {len(cal)} sizes:",
             f"  {'N':>10} {'kernel ms':>10} {'events ms':>10} {'excess us':>10} {'CV kernel':>10} {'CV events':>10}"]
    for r in cal.to_dict("records"):
        lines.append(f"  {int(r['N']):>10} {r['kernel-duration_ms']:>10.5f} {r['cuda-events_ms']:>10.5f} "
                     f"{r['excess_us']:>10.2f} {r['kernel-duration_cv']:>10.4f} {r['cuda-events_cv']:>10.4f}")
    lines.append("")
    lines.append(f"  {'spec / application':<48} {'runs':>5} {'excess us: median':>18} {'(range)':>17} "
                 f"{'CV kernel':>10} {'CV events':>10}")
    for (spec, kernel), g in [(("calibration", "vectorAdd"), cal),
                              *[((s, k), g) for (s, k), g in both[both["spec"] == "applications"].groupby(
                                  ["spec", "kernel"])]]:
        lines.append(f"  {spec + ' / ' + kernel:<48} {len(g):>5} {g['excess_us'].median():>18.2f} "
                     f"({g['excess_us'].min():>6.2f} .. {g['excess_us'].max():>6.2f}) "
                     f"{g['kernel-duration_cv'].median():>10.4f} {g['cuda-events_cv'].median():>10.4f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations", type=Path, default=ARCHIVE / "H100-SXM-kernel-duration")
    parser.add_argument("--events", type=Path, default=ARCHIVE / "H100-SXM-kernel-duration-events")
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--workdir", default=None, help="keep the query, calibration and prediction files here")
    args = parser.parse_args()

    from perfml.datasets import find_data_home
    from perfml.measure.runtime_rows import application_runtime_rows

    check = _check_module()
    home = str(find_data_home(args.data_home))
    both = both_timings(args.durations, args.events)
    from perfml.boards import resolve_board_name
    from perfml.measure.store import ResultSet

    board = resolve_board_name(ResultSet.open(args.durations).device.name)
    for line in timing_lines(both):
        print(line)
    print()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir) if args.workdir else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        scored = []
        for timing, folder in zip(TIMINGS, (args.durations, args.events)):
            rows = application_runtime_rows(folder, board=board)  # with its source: how the rows were timed
            apps = rows[(rows["spec"] == "applications") & (rows["app_id"] != "vectorAdd")].reset_index(drop=True)
            queries = work / f"app_queries_{timing}.csv"
            apps.drop(columns=["time_ms", "spec", "source"]).to_csv(queries, index=False)
            calibration = work / f"calibration_{timing}.csv"
            rows[rows["spec"] == "calibration"].drop(columns=["spec", "point_id"]).to_csv(calibration, index=False)
            for tier, extra in (("spec-only", []), ("calibrated", ["--calibration", str(calibration)])):
                out = work / f"predicted_{timing}_{tier}.csv"
                run_perfml(["predict", "--model", args.model, "--queries", str(queries), "--output", str(out),
                            "--overwrite", "--data-home", home, *extra], last_lines=6)
                scored.append((f"{timing}: {tier}", apps, pd.read_csv(out, low_memory=False)))
    fastest = min(json.loads((Path(args.model) / sub / "perfml-model.json").read_text())["training"]["min_time_ms"]
                  for sub in ("described", "described-calibrated"))
    print(f"\nruns faster than the nine applications' fastest training call ({fastest:.6g} ms), with each "
          "tier's prediction (ms):")
    for timing in TIMINGS:
        named = {name: frame for name, _, frame in scored if name.startswith(timing)}
        apps = next(a for name, a, _ in scored if name.startswith(timing))
        fast = np.flatnonzero(apps["time_ms"].to_numpy(dtype=float) < fastest)
        print(f"  {timing}: {len(fast)} of {len(apps)} runs")
        for i in fast:
            r = apps.iloc[i]
            preds = "  ".join(f"{name.split(': ')[1]} {frame['predicted_ms'].iat[i]:.6f}" for name, frame in named.items())
            print(f"    {r['app_id']:<22} N={int(r['input_size']):>8} block {int(r['block_x'])}x{int(r['block_y'])}  "
                  f"measured {r['time_ms']:.6f}  {preds}")
    print(f"\n{args.model} on {board}'s application kernels but vectorAdd, each scored on its own timing's times")
    print(f"\n{'timing: tier':<30} {'class / application':<40} {'rows':>5} {'MAPE %':>8} {'MdAPE %':>8} "
          f"{'0.8-1.2%':>8} {'cover %':>8} {'width':>7}")
    for name, apps, frame in scored:
        y = apps["time_ms"].to_numpy(dtype=float)
        for line in check.score(name, y, frame, apps["app_id"].to_numpy(dtype=object)):
            print(line)
        print()


if __name__ == "__main__":
    main()
