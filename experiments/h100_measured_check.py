"""A board no training row comes from, measured: how good are perfml's H100 predictions?

Every training board of ``models/default`` is from 2012-2021 (the Amaris boards, P4 to
A100). ``sweeps/results/H100-SXM/`` holds what this project measured itself on an
NVIDIA H100 80GB HBM3 (SXM) on 2026-11-25 (its README: machine, commands, logs):

* ``dlops_torch.csv``: 2,955 deep-learning operator calls timed with NeuSight's protocol
  (``experiments/measure_dlops_torch.py``; dims from ``dlops_runtimes.csv``);
* the sweep result set: among its points, the nine applications' kernels (spec
  ``applications``: vectorAdd, dotProd, subSeqMax, four matMul, two matrix_sum), timed
  through CuPy, and the microbenchmarks whose characterization is ``characterization.json``
  (the ``measured`` tier).

Predicted through the command line as a user would, with the committed model, scored
against those measurements, per op class and per application:

* ``spec-only``: the H100 known only by its registry entry;
* ``calibrated``: ``--calibration`` with the H100's own ``add`` calls (operators) or
  ``vectorAdd`` runs (applications), issue 11's protocol;
* ``measured-char``: ``--characterization characterization.json`` (the microbenchmark
  sweep's characterization, nothing of the scored kernels);
* ``reference-A100`` (operators only): ``--reference`` with the corpus' A100-PCIe-40GB
  time of the same call (the Habitat setting: measured on the GPU one has).

The calibration kernels (``add``, ``vectorAdd``) are left out of every tier's score, so
each tier is scored on the same rows. Scores are printed for every row, and apart for
calls of at least 0.05 ms, where the launch floor (a property of the host, driver and
framework, not of the GPU) no longer dominates. Also printed: the run-to-run spread of the
measurements themselves (a second, earlier measurement on another H100 of the same model,
``sweeps/results/archive/H100-SXM-run2``), the floor under any prediction error.

Last, the closed-form models on all 65 application-kernel runs (they fit nothing on
runtimes): Hong & Kim with the paper's GTX 280 latencies against Hong & Kim with the H100's
measured characterization (``hardware="characterized"``: DRAM latency and bandwidth from the
sweep), and the roofline with datasheet against measured peaks (a lower bound, not a
predictor: its error is how far the kernels are from their roofs).

This is a check, run once: nothing in perfml was fitted or tuned on these rows.

With ``--tracking-uri URI`` each (corpus, tier) is also logged as an MLflow run of the
experiment ``h100_measured_check`` (metrics ``mape``, ``mdape``, ``in_band``, ``coverage``,
``width`` for every row, per class or application, and for calls of >= 0.05 ms; tags with
the board, the model, the measurements and the tier), so the tiers sit side by side in the
MLflow UI.

Usage: PYTHONPATH=. python experiments/h100_measured_check.py [--model DIR] [--data-home DIR]
       [--workdir DIR] [--tracking-uri URI]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.experiments.cli_steps import run_perfml

HERE = Path(__file__).resolve().parent.parent
RESULTS = HERE / "sweeps" / "results" / "H100-SXM"
REPEAT = HERE / "sweeps" / "results" / "archive" / "H100-SXM-run2"
BOARD = "H100-SXM"
REFERENCE_BOARD = "A100-PCIe-40GB"
DIMS = ["B", "M", "N", "K", "H"]
#: calls shorter than this are dominated by the launch floor (host, driver and framework
#: overheads: 0.014 ms for the shortest H100 call here, 0.024 ms on every corpus board) and
#: by event-timing overhead for the CuPy-timed application kernels; scored apart
LARGE_MS = 0.05


def operator_rows(path: Path) -> pd.DataFrame:
    ops = pd.read_csv(path)
    for d in DIMS:
        ops[d] = ops[d].astype("Int64")
    return ops


def application_rows(results: Path) -> pd.DataFrame:
    """The nine applications' kernels of the sweep, as runtimes.csv query rows + time_ms.

    Not :func:`perfml.measure.runtime_rows.sweep_runtime_rows`: that names a microbenchmark
    row ``family.variant`` with its thread count as ``input_size`` (its sidecar's work is
    per thread), while the nine applications' rows of runtimes.csv give the problem size
    ``N`` under the app's own name, which is what the model was trained on.
    """
    from perfml.measure.store import ResultSet

    frame = ResultSet.open(results).read()
    apps = frame[frame["kind"].astype(str) == "application"].copy()
    params = apps["params_json"].map(json.loads)
    out = pd.DataFrame({
        "board": BOARD,
        "app_id": apps["family"].astype(str).to_numpy(),
        "input_size": params.map(lambda p: int(p["N"])).to_numpy(),
        **{c: apps[c].astype(int).to_numpy() for c in
           ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")},
        "point_id": apps["point_id"].to_numpy(),
        "time_ms": (apps["time_median_s"].astype(float) * 1e3).to_numpy(),
    })
    return out.reset_index(drop=True)


def op_class(op: str) -> str:
    from perfml.operators import OP_CLASS

    return OP_CLASS[op]


def _metric_key(group: str) -> str:
    """An MLflow metric-name suffix for a score group (letters, digits, '_', '.', '-')."""
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", group.replace(">=", "ge").replace("<", "lt")).strip("_")


def score(name: str, measured: np.ndarray, frame: pd.DataFrame, groups: np.ndarray,
          metrics: dict | None = None) -> list[str]:
    pred = frame["predicted_ms"].to_numpy(dtype=float)
    lo, hi = frame["lower_ms"].to_numpy(dtype=float), frame["upper_ms"].to_numpy(dtype=float)
    lines = []
    masks = {"all": np.ones(len(measured), dtype=bool),
             f"all, measured >= {LARGE_MS} ms": measured >= LARGE_MS,
             f"all, measured < {LARGE_MS} ms": measured < LARGE_MS}
    masks.update({g: groups == g for g in sorted(set(groups))})
    masks.update({f"{g}, >= {LARGE_MS} ms": (groups == g) & (measured >= LARGE_MS) for g in sorted(set(groups))})
    for g, m in masks.items():
        if not m.any():
            continue
        ape = np.abs(pred[m] / measured[m] - 1.0)
        cover = np.mean((lo[m] <= measured[m]) & (measured[m] <= hi[m]))
        width = np.mean((hi[m] - lo[m]) / pred[m])
        if metrics is not None:
            key = _metric_key(g)
            metrics.update({f"mape.{key}": 100 * ape.mean(), f"mdape.{key}": 100 * np.median(ape),
                            f"in_band.{key}": 100 * np.mean(ape <= 0.2), f"coverage.{key}": 100 * cover,
                            f"width.{key}": width, f"rows.{key}": int(m.sum())})
        lines.append(f"{name:<15} {g:<44} {int(m.sum()):>5} {100 * ape.mean():>8.2f} {100 * np.median(ape):>8.2f} "
                     f"{100 * np.mean(ape <= 0.2):>8.1f} {100 * cover:>8.1f} {width:>7.2f}")
    return lines


def repeatability(results: Path, repeat: Path) -> list[str]:
    """|run 3 / run 2 - 1| per op class and for the application kernels (medians, means)."""
    from perfml.measure.store import ResultSet

    lines = []
    a, b = operator_rows(results / "dlops_torch.csv"), operator_rows(repeat / "dlops_torch.csv")
    m = a.merge(b, on="config_id", suffixes=("", "_2"))
    dev = np.abs(m["time_ms"] / m["time_ms_2"] - 1.0)
    classes = m["op"].map(op_class)
    for g in ["all", *sorted(classes.unique())]:
        sel = np.ones(len(m), dtype=bool) if g == "all" else (classes == g).to_numpy()
        lines.append(f"operators {g:<10} {int(sel.sum()):>5}  mean {100 * dev[sel].mean():6.2f} %  median "
                     f"{100 * np.median(dev[sel]):6.2f} %")
    fa, fb = ResultSet.open(results).read(), ResultSet.open(repeat).read()
    fm = fa.merge(fb, on="point_id", suffixes=("", "_2"))
    apps = fm[fm["kind"].astype(str) == "application"]
    d = np.abs(apps["time_median_s"] / apps["time_median_s_2"] - 1.0)
    lines.append(f"applications    {len(apps):>5}  mean {100 * d.mean():6.2f} %  median {100 * np.median(d):6.2f} %")
    return lines


def log_runs(uri: str, logged: dict, *, model: str) -> None:
    """One MLflow run per (corpus, tier) in the experiment ``h100_measured_check``."""
    import mlflow

    from perfml._mlflow import check_reachable, configure_http

    configure_http()
    check_reachable(uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("h100_measured_check")
    for (corpus_name, tier), metrics in logged.items():
        with mlflow.start_run(run_name=f"{corpus_name}-{tier}"):
            mlflow.set_tags({"board": BOARD, "corpus": "dlops" if corpus_name == "op" else "applications",
                             "tier": tier, "model": str(model), "measurements": str(RESULTS.relative_to(HERE)),
                             "measured_by": "perfml (sweeps/results/H100-SXM/README.md)"})
            mlflow.log_metrics({k: float(v) for k, v in metrics.items()})
    print(f"logged {len(logged)} runs to {uri} (experiment h100_measured_check)")


def closed_form_lines(apps: pd.DataFrame, data_home) -> list[str]:
    """Hong & Kim and roofline, paper/spec against the measured characterization, on the app runs."""
    from perfml.characterize import board_characterization, load_characterization
    from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
    from perfml.closed_form.roofline import RooflineModel

    measured = load_characterization(RESULTS / "characterization.json", board=BOARD)
    chs = {BOARD: board_characterization(BOARD, extra=(measured,))}
    rows = apps.assign(input_size_2=np.nan)
    y = rows["time_ms"].to_numpy(dtype=float)
    models = {
        "Hong & Kim, paper (GTX 280) latencies": HongKimRuntimeModel(data_home=data_home),
        "Hong & Kim, measured characterization": HongKimRuntimeModel(
            data_home=data_home, hardware="characterized", characterizations=chs),
        "roofline, datasheet peaks": RooflineModel(),
        "roofline, measured peaks": RooflineModel(peaks="characterized", characterizations=chs),
    }
    large = y >= LARGE_MS
    lines = [f"{'closed-form model':<40} {'rows':>5} {'MAPE %':>9} {'MAPE >= ' + str(LARGE_MS) + ' ms %':>18} "
             f"{'in 0.8-1.2 %':>13}"]
    for name, model in models.items():
        pred = np.asarray(model.fit(rows, y).predict(rows), dtype=float)
        ape = np.abs(pred / y - 1.0)
        lines.append(f"{name:<40} {len(y):>5} {100 * ape.mean():>9.2f} {100 * ape[large].mean():>18.2f} "
                     f"{100 * np.mean(ape <= 0.2):>13.1f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--workdir", default=None, help="keep the query and prediction files here")
    parser.add_argument("--tracking-uri", default=None, help="also log every (corpus, tier) as an MLflow run here")
    args = parser.parse_args()

    from perfml.datasets import find_data_home, load_dlops_runtimes

    home = str(find_data_home(args.data_home))
    ops = operator_rows(RESULTS / "dlops_torch.csv")
    apps = application_rows(RESULTS)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir) if args.workdir else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        op_queries = ops[ops["op"] != "add"].reset_index(drop=True)
        op_queries[["board", "op", *DIMS, "config_id"]].to_csv(work / "op_queries.csv", index=False)
        ops[ops["op"] == "add"][["board", "op", "B", "H", "time_ms"]].to_csv(work / "op_adds.csv", index=False)
        corpus = load_dlops_runtimes(home, boards=REFERENCE_BOARD)
        keyed = corpus.assign(**{d: corpus[d].astype("Int64") for d in DIMS})
        ref = op_queries.merge(keyed[["op", *DIMS, "time_ms"]].drop_duplicates(["op", *DIMS]),
                               on=["op", *DIMS], suffixes=("", "_ref"))
        ref = ref[["op", *DIMS, "time_ms_ref"]].rename(columns={"time_ms_ref": "time_ms"})
        ref.insert(0, "board", REFERENCE_BOARD)
        ref.to_csv(work / "op_reference.csv", index=False)
        app_queries = apps[apps["app_id"] != "vectorAdd"].reset_index(drop=True)
        app_queries.drop(columns=["time_ms"]).to_csv(work / "app_queries.csv", index=False)
        apps[apps["app_id"] == "vectorAdd"].drop(columns=["point_id"]).to_csv(work / "app_vectoradds.csv", index=False)
        print(f"H100-SXM: {len(op_queries)} operator calls (every op but add; {len(ops) - len(op_queries)} add "
              f"calls calibrate), {len(app_queries)} application kernel runs (every app but vectorAdd; "
              f"{len(apps) - len(app_queries)} vectorAdd runs calibrate); A100 reference time for "
              f"{len(ref)} of the operator calls\n")
        char = str(RESULTS / "characterization.json")
        plans = [
            ("op", "spec-only", []),
            ("op", "calibrated", ["--calibration", str(work / "op_adds.csv")]),
            ("op", "measured-char", ["--characterization", char]),
            ("op", "reference-A100", ["--reference", str(work / "op_reference.csv")]),
            ("app", "spec-only", []),
            ("app", "calibrated", ["--calibration", str(work / "app_vectoradds.csv")]),
            ("app", "measured-char", ["--characterization", char]),
        ]
        predicted = {}
        for corpus_name, tier, extra in plans:
            out = work / f"predicted_{corpus_name}_{tier}.csv"
            run_perfml(["predict", "--model", args.model, "--queries", str(work / f"{corpus_name}_queries.csv"),
                        "--output", str(out), "--overwrite", "--data-home", home, *extra], last_lines=6)
            predicted[(corpus_name, tier)] = pd.read_csv(out, low_memory=False)
    header = (f"\n{'tier':<15} {'class / application':<44} {'rows':>5} {'MAPE %':>8} {'MdAPE %':>8} "
              f"{'0.8-1.2%':>8} {'cover %':>8} {'width':>7}")
    print(header)
    y_op = op_queries["time_ms"].to_numpy(dtype=float)
    op_groups = op_queries["op"].map(op_class).to_numpy(dtype=object)
    y_app = app_queries["time_ms"].to_numpy(dtype=float)
    app_groups = app_queries["app_id"].to_numpy(dtype=object)
    logged = {}
    for (corpus_name, tier), frame in predicted.items():
        metrics: dict = {}
        if corpus_name == "op":
            lines = score(tier, y_op, frame, op_groups, metrics)
        else:
            lines = score(tier, y_app, frame, app_groups, metrics)
        logged[(corpus_name, tier)] = metrics
        for line in lines:
            print(line)
        print()
    if args.tracking_uri:
        log_runs(args.tracking_uri, logged, model=args.model)
    print("closed-form models on every application-kernel run (vectorAdd included: they fit nothing):")
    for line in closed_form_lines(apps, home):
        print(f"  {line}")
    print()
    print("run-to-run spread of the measurements (this run vs an earlier one on another H100-SXM):")
    for line in repeatability(RESULTS, REPEAT):
        print(f"  {line}")


if __name__ == "__main__":
    main()
