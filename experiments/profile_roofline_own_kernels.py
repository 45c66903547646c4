"""Does a profile carry a user's own kernel to another board? The nine apps as own kernels, old boards.

The setting of ``perfml predict --reference R.csv --profile P`` for kernels perfml knows nothing
of: the nine applications' runs of the data home (``experiments/unseen_boards.toml``) renamed
``my_<app>`` (so ``models/default`` routes them to its ``undescribed`` sub-model, which has
neither their description nor their times), measured on one reference board and predicted on
every other board that measured the same run. The profile is the reference board's own nvprof
counters of each run (``profiles_nca``: the counters an nvprof export gives, read through
:func:`perfml.learned.profile_import.profiled_work`). Three carries of the reference time:

* ``model``: ``--reference`` alone (the model's ratio between the two boards);
* ``with profile``: ``--reference`` with the profiled work (the query path: the geometric mean
  of the model's carry and the profiled roofline's, :mod:`perfml.learned.queries`);
* ``roofline alone``: the reference time x the ratio of the profiled roofline
  (:func:`perfml.closed_form.roofline.profiled_roofline_ratio`) on the two boards, for context.

``models/default`` was trained on these boards (on other kernels, and on these kernels under
their own names, which the renaming hides): the board ratios it learned are not unseen-board
figures. What this measures is what the profile adds to a kernel the model does not know.
Prints MAPE, median APE and the share within 0.8-1.2 per reference board, per kernel and for
the same and across architectures. Measures; asserts nothing.

Usage: PYTHONPATH=. python experiments/profile_roofline_own_kernels.py [--model DIR] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RUN = ["app_id", "input_size", "block_x", "block_y", "grid_x", "grid_y"]
PROFILE_KEY = ["app_id", "input_size", "block_x", "block_y"]


def own_kernel_runs(data_home) -> pd.DataFrame:
    """Per board and run of the nine apps, the median measured time; ``app_id`` renamed ``my_<app>``."""
    from perfml.experiments.runner import experiment_data
    from perfml.experiments.spec import load_experiment

    rt = experiment_data(load_experiment(HERE / "unseen_boards.toml"), data_home)
    runs = rt.groupby(["board", *RUN], as_index=False)["measured_ms"].median()
    return runs.assign(app_id="my_" + runs["app_id"])


def reference_work(data_home, board: str) -> pd.DataFrame:
    """The profiled work of the board's runs (``profiles_nca``), keyed like the renamed runs."""
    from perfml.learned.profile_import import PROFILED_WORK, profiled_work

    prof = data_home.table("profiles_nca")
    prof = prof[prof["board"] == board]
    work = pd.concat([prof[PROFILE_KEY].reset_index(drop=True), profiled_work(prof).reset_index(drop=True)], axis=1)
    work = work.assign(app_id="my_" + work["app_id"], input_size=work["input_size"].astype(float))
    return work.groupby(PROFILE_KEY, as_index=False)[list(PROFILED_WORK)].median()


def carry_from(bundle, runs: pd.DataFrame, board: str, data_home) -> pd.DataFrame:
    """Every other board's runs of ``board``'s runs, predicted from ``board``'s times: the three carries."""
    from perfml.closed_form.roofline import profiled_roofline_ratio
    from perfml.learned.bundle import predict_any
    from perfml.learned.profile_import import PROFILED_WORK
    from perfml.learned.queries import check_reference

    reference = runs[runs["board"] == board].rename(columns={"measured_ms": "time_ms"}).reset_index(drop=True)
    queries = runs[runs["board"] != board].merge(reference[RUN], on=RUN).reset_index(drop=True)
    ref = check_reference(reference, f"{board} runs")
    profiled = ref.astype({"input_size": float}).merge(reference_work(data_home, board), on=PROFILE_KEY, how="left")
    ask = queries.drop(columns="measured_ms")
    model = predict_any(bundle, ask, "queries", reference=(ref, None), reference_where=board)["predicted_ms"]
    with_profile = predict_any(bundle, ask, "queries", reference=(profiled, None), reference_where=board)["predicted_ms"]
    at = queries.merge(profiled[RUN + ["time_ms", *PROFILED_WORK]], on=RUN, how="left")
    work = [at[c].to_numpy(dtype=float) for c in PROFILED_WORK]
    roofline = at["time_ms"] * profiled_roofline_ratio(at["board"].to_numpy(), np.full(len(at), board), *work)
    # "profiled": the profiled roofline can carry the run (a profile whose only count is a zero,
    # or whose roofs neither board has, leaves the run to the model, as the query path does)
    return queries.assign(reference=board, model=model.to_numpy(), with_profile=with_profile.to_numpy(),
                          roofline_alone=roofline.to_numpy(), profiled=np.isfinite(roofline.to_numpy()))


def scores(frame: pd.DataFrame, by=None) -> pd.DataFrame:
    """MAPE, median APE (%) and share within 0.8-1.2 (%) of each carry, optionally per group."""
    out = {}
    for carry in ("model", "with_profile", "roofline_alone"):
        ratio = frame[carry] / frame["measured_ms"]
        ape = 100 * (ratio - 1).abs()
        parts = pd.DataFrame({"ape": ape, "band": ratio.between(0.8, 1.2)})
        if by is not None:
            parts[by] = frame[by].to_numpy()
            grouped = parts.groupby(by)
            out[(carry, "mape")] = grouped["ape"].mean()
            out[(carry, "median")] = grouped["ape"].median()
            out[(carry, "in_band")] = 100 * grouped["band"].mean()
        else:
            out[(carry, "mape")] = pd.Series([ape.mean()], index=["all"])
            out[(carry, "median")] = pd.Series([ape.median()], index=["all"])
            out[(carry, "in_band")] = pd.Series([100 * parts["band"].mean()], index=["all"])
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE.parent / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    from perfml.boards import get_board
    from perfml.datasets import as_data_home, find_data_home
    from perfml.learned.bundle import load_predictor

    home = as_data_home(find_data_home(args.data_home), what="profile_roofline_own_kernels")
    bundle = load_predictor(Path(args.model), data_home=home)
    runs = own_kernel_runs(home)
    parts = []
    for board in sorted(runs["board"].unique()):
        t0 = time.perf_counter()
        part = carry_from(bundle, runs, board, home)
        parts.append(part)
        print(f"reference {board}: {len(part)} runs of other boards ({part['profiled'].mean():.1%} of them carried "
              f"by a profiled roofline too), {time.perf_counter() - t0:.0f} s", flush=True)
    table = pd.concat(parts, ignore_index=True)
    table = table[table["profiled"]]  # the comparison is on the runs the profiled roofline can carry
    arch = {b: str(get_board(b).architecture) for b in set(table["board"]) | set(table["reference"])}
    table["pair"] = np.where(table["board"].map(arch) == table["reference"].map(arch), "same architecture",
                             "across architectures")
    pd.set_option("display.width", 250)
    print(f"\n{len(table)} carried runs (the profiled roofline carries them); MAPE and median APE in %, "
          "in_band = % within 0.8-1.2")
    print(scores(table).round(2).to_string())
    print("\nper reference board")
    print(scores(table, "reference").round(2).to_string())
    print("\nper kernel")
    print(scores(table, "app_id").round(2).to_string())
    print("\nsame / across architectures")
    print(scores(table, "pair").round(2).to_string())


if __name__ == "__main__":
    main()
