"""Does ``--profile`` change what perfml predicts for a user's own kernels?

The nine applications' kernels measured on the two Hopper boards (``sweeps/results/H100-SXM``,
``sweeps/results/H200``: spec ``applications``, vectorAdd left out as in
``experiments/measured_board_check.py``) are given as the user's *own* kernels: ``app_id``
renamed ``my_<app>`` (so ``models/default`` routes them to its ``undescribed`` sub-model,
which knows nothing of them), the profiled kernel named in a ``kernel_name`` column. For each
board as the reference, the other is predicted through the command line with
``--reference`` alone and with ``--profile`` (the reference board's Nsight Compute export,
``sweeps/results/<board>/ncu/apps_details.csv``, narrowed to the reference's kernels), and
scored against its measurements. Prints the MAPE of each (and of the carry by the profiled
roofline alone, which ``--profile`` averages with the model's), the share of the runs the
90 % interval holds and its median width (upper / lower), and the largest change a profile
made to one prediction. Measures; asserts nothing.

Usage: PYTHONPATH=. python experiments/profile_own_kernels_check.py [--model DIR] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.experiments.cli_steps import load_script, run_perfml

HERE = Path(__file__).resolve().parent.parent
PAIRS = (("H100-SXM", "H200"), ("H200", "H100-SXM"))


def _check_module():
    """experiments/measured_board_check.py, for its rows and profile narrowing (one definition)."""
    return load_script(HERE / "experiments" / "measured_board_check.py")


def own_kernel_rows(check, board: str) -> pd.DataFrame:
    """The board's application runs (but vectorAdd) as a user's own kernels: ``my_<app>``, ``kernel_name`` <app>."""
    rows = check.applications_spec_rows(HERE / "sweeps" / "results" / board, board)
    rows = rows[rows["app_id"] != "vectorAdd"].drop(columns=["point_id"]).reset_index(drop=True)
    return rows.assign(kernel_name=rows["app_id"], app_id="my_" + rows["app_id"])


def roofline_carry(reference: pd.DataFrame, target: pd.DataFrame, work: Path) -> np.ndarray:
    """Each target run as the reference time x the ratio of the profiled roofline on the two boards
    (:func:`perfml.closed_form.roofline.profiled_roofline_ratio` of the work the reference board's
    export counted): the carry ``--profile`` averages with the model's, alone, for comparison."""
    from perfml.closed_form.roofline import profiled_roofline_ratio
    from perfml.learned.profile_import import PROFILED_WORK, read_reference_profile, with_profiled_work
    from perfml.learned.queries import read_reference

    ref = read_reference(work / "reference.csv")
    ref = with_profiled_work(ref, read_reference_profile(work / "profile.csv", ref, work / "reference.csv"))
    keys = ["app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]
    numbers = {k: float for k in keys[1:]}
    at = target[keys].astype(numbers).merge(ref[keys + ["board", "time_ms", *PROFILED_WORK]].astype(numbers),
                                            on=keys, how="left")
    amounts = [at[c].to_numpy(dtype=float) for c in PROFILED_WORK]
    ratio = profiled_roofline_ratio(target["board"].to_numpy(), at["board"].to_numpy(), *amounts)
    return at["time_ms"].to_numpy(dtype=float) * ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    from perfml.datasets import find_data_home

    home = str(find_data_home(args.data_home))
    check = _check_module()
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for reference_board, target_board in PAIRS:
            reference, target = own_kernel_rows(check, reference_board), own_kernel_rows(check, target_board)
            reference.to_csv(work / "reference.csv", index=False)
            target.drop(columns=["time_ms"]).to_csv(work / "queries.csv", index=False)
            kept = check.narrow_profile(HERE / "sweeps" / "results" / reference_board / "ncu" / "apps_details.csv",
                                        set(reference["kernel_name"]), work / "profile.csv")
            print(f"{target_board} from {reference_board}: {len(target)} runs of {target['app_id'].nunique()} own "
                  f"kernels; profile: {kept} launches")
            predicted, intervals = {}, {}
            y = target["time_ms"].to_numpy(dtype=float)
            for tier, extra in (("--reference", []), ("--reference --profile", ["--profile", str(work / "profile.csv")])):
                out = work / "predicted.csv"
                run_perfml(["predict", "--model", args.model, "--queries", str(work / "queries.csv"), "--reference",
                            str(work / "reference.csv"), "--output", str(out), "--overwrite", "--data-home", home, *extra],
                           last_lines=3)
                written = pd.read_csv(out)
                predicted[tier] = written["predicted_ms"].to_numpy(dtype=float)
                lower, upper = written["lower_ms"].to_numpy(dtype=float), written["upper_ms"].to_numpy(dtype=float)
                intervals[tier] = (100 * np.mean((lower <= y) & (y <= upper)), np.median(upper / lower))
            predicted["profiled roofline alone"] = roofline_carry(reference, target, work)
            change = np.max(np.abs(predicted["--reference --profile"] / predicted["--reference"] - 1))
            for tier, p in predicted.items():
                results.append((f"{target_board} from {reference_board}", tier, 100 * np.mean(np.abs(p - y) / y)))
            results.append((f"{target_board} from {reference_board}", "largest change by the profile", 100 * change))
            for tier, (cover, width) in intervals.items():
                print(f"  {tier}: the 90 % interval holds {cover:.1f} % of the runs, median upper / lower {width:.2f}")
    print()
    for what, tier, value in results:
        print(f"{what:<24} {tier:<32} {value:8.4f} %")
    print()
    print(prof_splits(Path(args.model)))


def prof_splits(model: Path) -> str:
    """How often each Amaris sub-model's trees split on a profile counter (``prof_*``): why a
    profile can move a prediction little or not at all."""
    import xgboost

    parts = []
    for sub in ("described", "undescribed"):
        booster = xgboost.Booster()
        booster.load_model(model / sub / "booster.json")
        splits = booster.get_score(importance_type="weight")
        on_prof = sum(v for k, v in splits.items() if k.startswith("prof_"))
        parts.append(f"{sub}: {on_prof:.0f} of {sum(splits.values()):.0f} splits on prof_* features")
    return "tree splits: " + "; ".join(parts)


if __name__ == "__main__":
    main()
