"""A board no training row comes from, measured: how good are perfml's predictions for it?

Every training board of ``models/default`` is from 2012-2021 (the Amaris boards, P4 to
A100). ``sweeps/results/<board>/`` holds what this project measured itself on a board
(each folder's README: machine, commands, logs; ``experiments/measure_board_on_device.sh``
makes one): an NVIDIA H100 80GB HBM3 (``H100-SXM``, 2026-11-25) and an NVIDIA H200
(``H200``, 2026-11-26). Each holds:

* ``dlops_torch.csv``: 2,955 deep-learning operator calls timed with NeuSight's protocol
  (``experiments/measure_dlops_torch.py``; the same dims on every board, from
  ``dlops_runtimes.csv``);
* the sweep result set: among its points, the nine applications' kernels (spec
  ``applications``: vectorAdd, dotProd, subSeqMax, four matMul, two matrix_sum), timed
  through CuPy, and the microbenchmarks whose characterization is ``characterization.json``
  (the ``measured`` tier).

Predicted through the command line as a user would, with the committed model, scored
against those measurements, per op class and per application:

* ``spec-only``: the board known only by its registry entry;
* ``calibrated``: ``--calibration`` with the board's own ``add`` calls (operators) or
  the applications spec's ``vectorAdd`` runs (applications), issue 11's protocol;
* ``calibrated-sweep`` (applications, where the set holds the ``calibration`` spec's
  points): ``--calibration`` with the result folder itself, so its vectorAdd runs of both
  specs (issue 11's "short sweep on the target": 18 sizes from 12 kB to 1.6 GB);
* ``measured-char``: ``--characterization characterization.json`` (``perfml characterize``
  of the folder: the microbenchmarks' measured tier and the calibrated tier of the
  ``calibration`` spec's vectorAdd runs; nothing of the scored kernels);
* ``reference-<corpus board>`` (operators only; ``--corpus-reference``, default the
  A100-PCIe-40GB): ``--reference`` with the corpus' time of the same call on that board
  (the Habitat setting: measured on the GPU one has);
* ``calibrated-sweep-repeat`` and ``repeat-sweep-char`` (``--calibration-repeat DIR``: a
  second run of the ``calibration`` spec on another machine of the same board model): the
  ``calibrated-sweep`` and ``measured-char`` tiers with that run instead (``--calibration
  DIR``; ``--characterization`` of its ``perfml characterize``), and the two runs' streaming
  curves and predictions side by side: how much a calibrated prediction depends on which
  calibration run it was given;
* ``reference-<measured board>`` (``--measured-reference DIR``, operators and
  applications): ``--reference`` with another board's measurements made by this project,
  same calls, same host software: "I measured my kernels on the GPU I have (an H100); how
  long will they take on the one I am thinking of (an H200)?"
* ``reference-<measured board>+profile`` (``--measured-reference-profile FILE``,
  applications): the same, plus ``--profile`` with an Nsight Compute export of the
  reference board's application kernels (``sweeps/results/H100-SXM/ncu/``, made by
  ``experiments/profile_app_kernels_on_device.sh``), narrowed to the reference's kernels.

The calibration kernels (``add``, ``vectorAdd``) are left out of every tier's score, so
each tier is scored on the same rows. Scores are printed for every row, and apart for
calls of at least 0.05 ms, where the launch floor (a property of the host, driver and
framework, not of the GPU) no longer dominates. With ``--repeat DIR`` (a second
measurement of the same board model) the run-to-run spread of the measurements themselves
is printed too: the floor under any prediction error.

Last, the closed-form models on every application-kernel run (they fit nothing on
runtimes): Hong & Kim with the paper's GTX 280 latencies against Hong & Kim with the
board's measured characterization (``hardware="characterized"``: DRAM latency and
bandwidth from the sweep), and the roofline with datasheet against measured peaks (a lower
bound, not a predictor: its error is how far the kernels are from their roofs).

This is a check, run once per board: nothing in perfml was fitted or tuned on these rows.

With ``--tracking-uri URI`` each (corpus, tier) is also logged as an MLflow run of the
experiment ``measured_board_check`` (metrics ``mape``, ``mdape``, ``in_band``,
``coverage``, ``width`` for every row, per class or application, and for calls of >=
0.05 ms; tags with the board, the model, the measurements and the tier), so the tiers sit
side by side in the MLflow UI.

Usage: PYTHONPATH=. python experiments/measured_board_check.py --board BOARD [--results DIR]
       [--repeat DIR] [--corpus-reference BOARD] [--measured-reference DIR]
       [--measured-reference-profile FILE] [--calibration-repeat DIR] [--model DIR] [--data-home DIR] [--workdir DIR] [--tracking-uri URI]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.experiments.cli_steps import run_perfml

HERE = Path(__file__).resolve().parent.parent
MEASURED = HERE / "sweeps" / "results"
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


def application_rows(results: Path, board: str) -> pd.DataFrame:
    """The applications' kernels of the sweep, as runtimes.csv query rows + time_ms
    (:func:`perfml.measure.runtime_rows.application_runtime_rows`, without its ``source``)."""
    from perfml.measure.runtime_rows import application_runtime_rows

    return application_runtime_rows(results, board=board).drop(columns=["source"])


def applications_spec_rows(results: Path, board: str) -> pd.DataFrame:
    """The kernels the ``applications`` spec measured (the scored set; the ``calibration``
    spec's vectorAdd runs, where the set has them, calibrate only)."""
    rows = application_rows(results, board)
    return rows[rows["spec"] == "applications"].drop(columns=["spec"]).reset_index(drop=True)


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
        lines.append(f"{name:<26} {g:<44} {int(m.sum()):>5} {100 * ape.mean():>8.2f} {100 * np.median(ape):>8.2f} "
                     f"{100 * np.mean(ape <= 0.2):>8.1f} {100 * cover:>8.1f} {width:>7.2f}")
    return lines


def repeatability(results: Path, repeat: Path) -> list[str]:
    """|this run / the repeat - 1| for the operator calls (all, by duration, per op class) and the
    application kernels (means, medians)."""
    from perfml.measure.store import ResultSet

    lines = []
    a, b = operator_rows(results / "dlops_torch.csv"), operator_rows(repeat / "dlops_torch.csv")
    m = a.merge(b, on="config_id", suffixes=("", "_2"))
    dev = np.abs(m["time_ms"] / m["time_ms_2"] - 1.0)
    classes = m["op"].map(op_class)
    large = (m["time_ms"] >= LARGE_MS).to_numpy()
    for g in ["all", f">= {LARGE_MS} ms", f"< {LARGE_MS} ms", *sorted(classes.unique())]:
        sel = {"all": np.ones(len(m), dtype=bool), f">= {LARGE_MS} ms": large,
               f"< {LARGE_MS} ms": ~large}.get(g, (classes == g).to_numpy())
        lines.append(f"operators {g:<10} {int(sel.sum()):>5}  mean {100 * dev[sel].mean():6.2f} %  median "
                     f"{100 * np.median(dev[sel]):6.2f} %")
    fa, fb = ResultSet.open(results).read(), ResultSet.open(repeat).read()
    fm = fa.merge(fb, on="point_id", suffixes=("", "_2"))
    apps = fm[fm["kind"].astype(str) == "application"]
    d = np.abs(apps["time_median_s"] / apps["time_median_s_2"] - 1.0)
    lines.append(f"applications    {len(apps):>5}  mean {100 * d.mean():6.2f} %  median {100 * np.median(d):6.2f} %")
    return lines


def log_runs(uri: str, logged: dict, *, model: str, board: str, results: Path) -> None:
    """One MLflow run per (corpus, tier) in the experiment ``measured_board_check``."""
    import mlflow

    from perfml._mlflow import check_reachable, configure_http

    configure_http()
    check_reachable(uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("measured_board_check")
    for (corpus_name, tier), metrics in logged.items():
        with mlflow.start_run(run_name=f"{board}-{corpus_name}-{tier}"):
            mlflow.set_tags({"board": board, "corpus": "dlops" if corpus_name == "op" else "applications",
                             "tier": tier, "model": str(model), "measurements": str(results),
                             "measured_by": f"perfml ({results / 'README.md'})"})
            mlflow.log_metrics({k: float(v) for k, v in metrics.items()})
    print(f"logged {len(logged)} runs to {uri} (experiment measured_board_check)")


def closed_form_lines(apps: pd.DataFrame, data_home, *, board: str, results: Path) -> list[str]:
    """Hong & Kim and roofline, paper/spec against the measured characterization, on the app runs."""
    from perfml.characterize import board_characterization, load_characterization
    from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel
    from perfml.closed_form.roofline import RooflineModel

    measured = load_characterization(results / "characterization.json", board=board)
    chs = {board: board_characterization(board, extra=(measured,))}
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


def _as_is(queries: pd.DataFrame, reference: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The reference's time of each query row, as the prediction (no interval)."""
    times = queries[keys].merge(reference[[*keys, "time_ms"]].drop_duplicates(keys), on=keys, how="left")["time_ms"]
    return pd.DataFrame({"predicted_ms": times.to_numpy(dtype=float), "lower_ms": np.nan, "upper_ms": np.nan})


def narrow_profile(path: Path, kernels: set[str], out: Path) -> int:
    """Copy the ``ncu --csv`` details export ``path`` to ``out`` with only the launches of
    ``kernels`` (``--profile`` refuses a profiled kernel that no reference row names, as a
    user would narrow it with ``ncu --kernel-name``); return the number of launches kept."""
    import csv

    with path.open(newline="") as fh:
        lines = [line for line in fh if not line.startswith("==")]
    reader = csv.DictReader(lines)
    if reader.fieldnames is None or "Kernel Name" not in reader.fieldnames or "Metric Name" not in reader.fieldnames:
        raise SystemExit(f"{path}: not an ncu --csv details export (no Kernel Name / Metric Name columns)")
    rows = [r for r in reader if r["Kernel Name"] in kernels]
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=reader.fieldnames, quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    return len({r["ID"] for r in rows})


def calibration_repeat_lines(results: Path, repeat: Path, board: str, predicted: dict) -> list[str]:
    """The two runs' calibrated tiers (``perfml characterize`` of each folder: its ``calibration``
    spec runs) and how far the predictions made with each lie apart."""
    from perfml.characterize import characterize_results

    a, b = characterize_results(results, board=board), characterize_results(repeat, board=board)
    lines = []
    for quantity, unit, scale, shown in (("dram_bandwidth", "B/s", 1e-12, "TB/s"), ("launch_overhead", "ms", 1e3, "us")):
        va, vb = a.value(quantity, unit, tiers=("calibrated",)), b.value(quantity, unit, tiers=("calibrated",))
        if va is not None and vb is not None:
            lines.append(f"calibrated {quantity:<16} {va * scale:9.4g} vs {vb * scale:9.4g} {shown}  (ratio {vb / va:.3f})")
    if a.stream_curve is not None and b.stream_curve is not None:
        knots = np.array(sorted(set(a.stream_curve.bytes) & set(b.stream_curve.bytes)))
        ratio = b.stream_curve.time_s(knots) / a.stream_curve.time_s(knots)
        lines.append(f"streaming curve, {len(knots)} shared sizes: time ratio median {np.median(ratio):.3f}, "
                     f"range {ratio.min():.3f} .. {ratio.max():.3f}")
    for corpus_name, first, second in (("app", "calibrated-sweep", "calibrated-sweep-repeat"),
                                       ("op", "measured-char", "repeat-sweep-char"),
                                       ("app", "measured-char", "repeat-sweep-char")):
        if (corpus_name, first) in predicted and (corpus_name, second) in predicted:
            r = (predicted[(corpus_name, second)]["predicted_ms"].to_numpy(dtype=float)
                 / predicted[(corpus_name, first)]["predicted_ms"].to_numpy(dtype=float))
            dev = np.abs(r - 1) * 100
            lines.append(f"{corpus_name} predictions, {second} / {first}: |ratio - 1| median {np.median(dev):.2f} %, "
                         f"max {dev.max():.2f} % over {len(r)} rows")
    return lines


def measured_board(results: Path) -> str:
    """The registry name a measured result folder was recorded for (the board of its operator
    table, checked to be one: :func:`perfml.learned.training.measured_board_rows`)."""
    from perfml.learned.training import measured_board_rows

    rows = measured_board_rows(results)
    if "dlops" not in rows:
        raise SystemExit(f"{results}: no dlops_torch.csv; the check scores a board's operator calls and kernels")
    return str(rows["dlops"]["board"].iat[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", required=True, help="registry name of the measured board (e.g. H100-SXM, H200)")
    parser.add_argument("--results", type=Path, default=None, help="its result folder (default: sweeps/results/BOARD)")
    parser.add_argument("--repeat", type=Path, default=None,
                        help="a second measurement of the same board model: print the run-to-run spread")
    parser.add_argument("--corpus-reference", default="A100-PCIe-40GB",
                        help="corpus board whose time of the same operator call is a reference tier")
    parser.add_argument("--measured-reference", type=Path, default=None,
                        help="another board's result folder (this project's measurements): a reference tier")
    parser.add_argument("--measured-reference-profile", type=Path, default=None,
                        help="an `ncu --csv` export of the --measured-reference board's application kernels: "
                             "a reference tier with --profile")
    parser.add_argument("--calibration-repeat", type=Path, default=None,
                        help="a second run of the calibration spec on the same board model (a result folder with "
                             "its characterization.json): calibrated tiers from it, and its curve beside this one's")
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--workdir", default=None, help="keep the query and prediction files here")
    parser.add_argument("--tracking-uri", default=None, help="also log every (corpus, tier) as an MLflow run here")
    args = parser.parse_args()

    from perfml.datasets import find_data_home, load_dlops_runtimes

    board = args.board
    results = args.results or MEASURED / board
    found = measured_board(results)
    if found != board:
        raise SystemExit(f"{results} holds measurements of {found}, not {board}")
    home = str(find_data_home(args.data_home))
    ops = operator_rows(results / "dlops_torch.csv")
    apps = applications_spec_rows(results, board)
    swept = (application_rows(results, board)["spec"] == "calibration").sum()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.workdir) if args.workdir else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        op_queries = ops[ops["op"] != "add"].reset_index(drop=True)
        op_queries[["board", "op", *DIMS, "config_id"]].to_csv(work / "op_queries.csv", index=False)
        ops[ops["op"] == "add"][["board", "op", "B", "H", "time_ms"]].to_csv(work / "op_adds.csv", index=False)
        corpus = load_dlops_runtimes(home, boards=args.corpus_reference)
        keyed = corpus.assign(**{d: corpus[d].astype("Int64") for d in DIMS})
        ref = op_queries.merge(keyed[["op", *DIMS, "time_ms"]].drop_duplicates(["op", *DIMS]),
                               on=["op", *DIMS], suffixes=("", "_ref"))
        ref = ref[["op", *DIMS, "time_ms_ref"]].rename(columns={"time_ms_ref": "time_ms"})
        ref.insert(0, "board", args.corpus_reference)
        ref.to_csv(work / "op_reference.csv", index=False)
        app_queries = apps[apps["app_id"] != "vectorAdd"].reset_index(drop=True)
        app_queries.drop(columns=["time_ms"]).to_csv(work / "app_queries.csv", index=False)
        apps[apps["app_id"] == "vectorAdd"].drop(columns=["point_id"]).to_csv(work / "app_vectoradds.csv", index=False)
        print(f"{board}: {len(op_queries)} operator calls (every op but add; {len(ops) - len(op_queries)} add "
              f"calls calibrate), {len(app_queries)} application kernel runs (every app but vectorAdd; "
              f"{len(apps) - len(app_queries)} vectorAdd runs calibrate); {args.corpus_reference} reference "
              f"time for {len(ref)} of the operator calls")
        char = str(results / "characterization.json")
        plans = [
            ("op", "spec-only", []),
            ("op", "calibrated", ["--calibration", str(work / "op_adds.csv")]),
            ("op", "measured-char", ["--characterization", char]),
            ("op", f"reference-{args.corpus_reference}", ["--reference", str(work / "op_reference.csv")]),
            ("app", "spec-only", []),
            ("app", "calibrated", ["--calibration", str(work / "app_vectoradds.csv")]),
            ("app", "measured-char", ["--characterization", char]),
        ]
        if swept:  # the result folder itself: its vectorAdd runs of both specs (issue 11 §3's short sweep)
            plans.append(("app", "calibrated-sweep", ["--calibration", str(results)]))
        if args.calibration_repeat is not None:
            from perfml.boards import resolve_board_name
            from perfml.measure.store import ResultSet

            repeat_board = resolve_board_name(ResultSet.open(args.calibration_repeat).device.name)
            if repeat_board != board:
                raise SystemExit(f"--calibration-repeat {args.calibration_repeat} is a run of {repeat_board}, not {board}")
            repeat_char = str(args.calibration_repeat / "characterization.json")
            plans += [("app", "calibrated-sweep-repeat", ["--calibration", str(args.calibration_repeat)]),
                      ("op", "repeat-sweep-char", ["--characterization", repeat_char]),
                      ("app", "repeat-sweep-char", ["--characterization", repeat_char])]
        if args.measured_reference is not None:
            other = measured_board(args.measured_reference)
            if other == board:
                raise SystemExit(f"--measured-reference {args.measured_reference} is the same board as --board")
            their_ops = operator_rows(args.measured_reference / "dlops_torch.csv")
            mine = op_queries[["op", *DIMS]]
            their_ops = their_ops.merge(mine, on=["op", *DIMS])[["board", "op", *DIMS, "time_ms"]]
            their_ops.to_csv(work / "op_measured_reference.csv", index=False)
            their_apps = applications_spec_rows(args.measured_reference, other)
            their_apps = their_apps[their_apps["app_id"] != "vectorAdd"].drop(columns=["point_id"])
            their_apps.to_csv(work / "app_measured_reference.csv", index=False)
            print(f"{other} (measured by perfml, {args.measured_reference}) reference time for "
                  f"{len(their_ops)} of the operator calls and {len(their_apps)} application kernel runs")
            plans += [
                ("op", f"reference-{other}", ["--reference", str(work / "op_measured_reference.csv")]),
                ("app", f"reference-{other}", ["--reference", str(work / "app_measured_reference.csv")]),
            ]
            if args.measured_reference_profile is not None:
                profile = work / "app_measured_reference_profile.csv"
                kept = narrow_profile(args.measured_reference_profile, set(their_apps["app_id"]), profile)
                print(f"{args.measured_reference_profile}: {kept} profiled launches of the reference's kernels")
                plans.append(("app", f"reference-{other}+profile",
                              ["--reference", str(work / "app_measured_reference.csv"), "--profile", str(profile)]))
        elif args.measured_reference_profile is not None:
            raise SystemExit("--measured-reference-profile needs --measured-reference (the profiled board's times)")
        print()
        predicted = {}
        for corpus_name, tier, extra in plans:
            out = work / f"predicted_{corpus_name}_{tier}.csv"
            run_perfml(["predict", "--model", args.model, "--queries", str(work / f"{corpus_name}_queries.csv"),
                        "--output", str(out), "--overwrite", "--data-home", home, *extra], last_lines=6)
            predicted[(corpus_name, tier)] = pd.read_csv(out, low_memory=False)
        if args.measured_reference is not None:
            # the naive answer beside it: the other board's time as it is (no board ratio)
            from perfml.learned.queries import LAUNCH_COLUMNS

            predicted[("op", f"same-time-as-{other}")] = _as_is(op_queries, their_ops, ["op", *DIMS])
            predicted[("app", f"same-time-as-{other}")] = _as_is(app_queries, their_apps,
                                                                  ["app_id", "input_size", *LAUNCH_COLUMNS])
    header = (f"\n{'tier':<26} {'class / application':<44} {'rows':>5} {'MAPE %':>8} {'MdAPE %':>8} "
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
    if args.measured_reference is not None:
        print(f"board ratio {board} / {other}, median over the calls of >= {LARGE_MS} ms: the model's "
              f"(reference tier's prediction / {other}'s time) against the measured one:")
        for corpus_name, y, groups in (("op", y_op, op_groups), ("app", y_app, app_groups)):
            theirs = predicted[(corpus_name, f"same-time-as-{other}")]["predicted_ms"].to_numpy(dtype=float)
            ours = predicted[(corpus_name, f"reference-{other}")]["predicted_ms"].to_numpy(dtype=float)
            for g in sorted(set(groups)):
                m = (groups == g) & (y >= LARGE_MS) & np.isfinite(theirs)
                if m.any():
                    print(f"  {g:<34} {int(m.sum()):>5}  model {np.median(ours[m] / theirs[m]):6.3f}  "
                          f"measured {np.median(y[m] / theirs[m]):6.3f}")
        print()
    if args.calibration_repeat is not None:
        print(f"two calibration runs ({results}, {args.calibration_repeat}):")
        for line in calibration_repeat_lines(results, args.calibration_repeat, board, predicted):
            print(f"  {line}")
        print()
    if args.tracking_uri:
        log_runs(args.tracking_uri, logged, model=args.model, board=board, results=results)
    print("closed-form models on every application-kernel run (vectorAdd included: they fit nothing):")
    for line in closed_form_lines(apps, home, board=board, results=results):
        print(f"  {line}")
    if args.repeat is not None:
        print()
        print(f"run-to-run spread of the measurements (this run vs {args.repeat}):")
        for line in repeatability(results, args.repeat):
            print(f"  {line}")


if __name__ == "__main__":
    main()
