"""A measured board in training: does the H100 carry the model to the H200 (and back)?

The boards of the corpora are 2012-2021. This project measured two Hopper boards itself
(``sweeps/results/H100-SXM``, ``sweeps/results/H200``: the same 2,955 operator calls and
the same application kernels, same software). ``perfml train --measured DIR`` adds such a
board's rows to training (:func:`perfml.learned.training.measured_board_rows`). Here, for
each of the two boards as the target:

* ``corpora only``: ``perfml train --corpus described --corpus dlops --no-calibrated-tier``
  (the corpora's boards only), then ``perfml predict`` of the target, spec-only;
* ``+ <other board>``: the same with ``--measured sweeps/results/<other board>``.

Scored on the target's measurements (as ``experiments/measured_board_check.py`` does: the
operator calls but ``add``, the applications spec's kernels but ``vectorAdd``), MAPE per
op class and for calls of >= 0.05 ms, with the 90 % interval's coverage. Nothing of the
target enters training. Asserts nothing.

Usage: PYTHONPATH=. python experiments/measured_sibling.py [--workdir DIR] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from perfml.experiments.cli_steps import load_script, run_perfml

HERE = Path(__file__).resolve().parent.parent
MEASURED = HERE / "sweeps" / "results"
BOARDS = ("H100-SXM", "H200")


def _check_module():
    """experiments/measured_board_check.py, for its query rows and scoring (one definition)."""
    return load_script(HERE / "experiments" / "measured_board_check.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=None, help="keep the models, queries and predictions here")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()

    from perfml.datasets import find_data_home

    check = _check_module()
    home = str(find_data_home(args.data_home))
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir) if args.workdir else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        train = ["train", "--corpus", "described", "--corpus", "dlops", "--no-calibrated-tier", "--seed", "0",
                 "--n-jobs", "2", "--overwrite", "--data-home", home]
        models = {"corpora only": work / "model_corpora"}
        run_perfml([*train, "--out", str(models["corpora only"])], last_lines=12)
        for board in BOARDS:
            models[f"+ {board}"] = work / f"model_plus_{board}"
            run_perfml([*train, "--out", str(models[f"+ {board}"]), "--measured", str(MEASURED / board)],
                       last_lines=12)
        lines = []
        for target in BOARDS:
            other = next(b for b in BOARDS if b != target)
            ops = check.operator_rows(MEASURED / target / "dlops_torch.csv")
            op_q = ops[ops["op"] != "add"].reset_index(drop=True)
            apps = check.applications_spec_rows(MEASURED / target, target)
            app_q = apps[apps["app_id"] != "vectorAdd"].reset_index(drop=True)
            op_q[["board", "op", *check.DIMS, "config_id"]].to_csv(work / f"op_queries_{target}.csv", index=False)
            app_q.drop(columns=["time_ms"]).to_csv(work / f"app_queries_{target}.csv", index=False)
            for label in ("corpora only", f"+ {other}"):
                for corpus, q in (("op", op_q), ("app", app_q)):
                    out = work / f"predicted_{target}_{corpus}_{label.replace(' ', '_').replace('+', 'plus')}.csv"
                    run_perfml(["predict", "--model", str(models[label]), "--queries",
                                str(work / f"{corpus}_queries_{target}.csv"), "--output", str(out), "--overwrite",
                                "--data-home", home], last_lines=2)
                    frame = pd.read_csv(out, low_memory=False)
                    y = q["time_ms"].to_numpy(dtype=float)
                    groups = (q["op"].map(check.op_class) if corpus == "op" else q["app_id"]).to_numpy(dtype=object)
                    lines.append(f"== target {target}, {'operators' if corpus == 'op' else 'applications'}, "
                                 f"trained on {label}")
                    lines += check.score(label, y, frame, groups)
                    lines.append("")
    header = (f"{'model':<26} {'class / application':<44} {'rows':>5} {'MAPE %':>8} {'MdAPE %':>8} "
              f"{'0.8-1.2%':>8} {'cover %':>8} {'width':>7}")
    print()
    print(header)
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
