"""``perfml experiment run FILE``: run an experiment definition and print the side-by-side table."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

experiment_app = typer.Typer(help="Run experiment definitions (experiments/*.toml).", no_args_is_help=True)

_COLUMNS = ["model", "kind", "n", "mape", "median_ape", "within_band", "spearman", "n_unpredicted", "cv_seconds"]


RECOVERY_ENV = "PERFML_TRACKING_RECOVERY_S"


def _recovery_wait_s() -> float | None:
    """``$PERFML_TRACKING_RECOVERY_S`` (seconds, 0 to 3600), read here in the CLI; None for the library default."""
    import math
    import os

    from perfml.errors import PerfmlError

    raw = os.environ.get(RECOVERY_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 3600):
        raise PerfmlError(f"${RECOVERY_ENV} must be a number of seconds from 0 to 3600, found {raw!r}; fix or unset it")
    return value


@experiment_app.command("run")
def run(
    file: Path = typer.Argument(..., help="Experiment TOML, e.g. experiments/unseen_boards.toml."),
    data_home: Optional[Path] = typer.Option(None, "--data-home", help="Directory with the shared datasets tables."),
    storage: Optional[str] = typer.Option(None, "--storage", help="Optuna storage URL for models with `tune` (default: in memory). A re-run resumes each fold's "
                                         "study up to the file's tune.n_trials and no further, so its figures repeat."),
    no_track: bool = typer.Option(False, "--no-track", help="Do not log to MLflow."),
    model: Optional[list[str]] = typer.Option(None, "--model", help="Run only these models of the file (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
    dask: Optional[str] = typer.Option(None, "--dask", help="Run the folds on this Dask scheduler, e.g. tcp://127.0.0.1:8786 (joblib's Dask backend; same results as a local run)."),
    n_jobs: Optional[int] = typer.Option(None, "--n-jobs", min=1, max=256, help="Threads of each learned model's learner (default: the model's own, 2 for the application models, 1 for the operator models; same trees at any count)."),
) -> None:
    """Run one experiment; log it to MLflow (default local SQLite store, MLFLOW_TRACKING_URI overrides)."""
    from perfml.cli._home import entry_data_home
    from perfml.errors import PerfmlError
    from perfml.experiments.spec import load_experiment

    if dask is not None:  # before any work: a malformed address failed after the 40 s wait
        from perfml.experiments.cluster import check_address

        check_address(dask)
    spec = load_experiment(file)
    if spec.kind == "bsp_table2":  # it runs the paper's Table II from its own runs: no model, fold or study
        given = [name for name, value in (("--model", model), ("--storage", storage), ("--dask", dask),
                                          ("--n-jobs", n_jobs)) if value is not None]
        if given:
            raise PerfmlError(f"{file}: a kind = \"bsp_table2\" experiment fits seed 003's lambda table, with no "
                              f"[[models]], folds or tuning: {given[0]} would change nothing; remove it")
    if storage is not None and any(m.tune for m in spec.models if model is None or m.name in model):
        # checked before the MLflow run is started: a bad URL left one FAILED run behind
        from perfml.learned.tuning import make_storage

        make_storage(storage)
    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    recovery_wait_s = _recovery_wait_s()
    if not no_track:  # bounded waits, and a server that does not answer is refused before any work
        from perfml._mlflow import check_reachable, configure_http, tracking_uri

        configure_http()
        check_reachable(tracking_uri())
    if spec.kind == "bsp_table2":
        from perfml.experiments.runner import run_table2_experiment

        tables = run_table2_experiment(spec, data_home=data_home, track=not no_track, recovery_wait_s=recovery_wait_s)
        if as_json:
            from perfml.cli._output import frame_records, print_json

            print_json({k: frame_records(v) for k, v in tables.items()})
            return
        from perfml.cli._output import print_table

        for name, table in tables.items():
            if name.startswith("table2_"):
                covered = table[table["covered"]]
                print_table(table.drop(columns=["runs"]), title=f"Seed 003 Table II vs lambda fitted on {name[7:]} runs")
                typer.echo(f"{int(covered['within_tolerance'].sum())}/{len(covered)} covered cells within 10% "
                           f"(max |diff| {covered['rel_diff'].abs().max():.1%})")
        print_table(tables["bands"], title="Share of T_k/T_m within [0.8, 1.2]")
        return
    from perfml._progress import progress
    from perfml.cli import quiet_requested
    from perfml.experiments.runner import run_experiment

    n_models = len([m for m in spec.models if model is None or m.name in model])
    with progress(f"{spec.name}: {spec.protocol}", total=n_models, quiet=quiet_requested() or as_json) as advance:
        started = []

        def on_model(message: str) -> None:
            # the runner reports each model as it starts: count the previous one as done
            advance(f"[{spec.name}] {message}", step=1 if started else 0)
            started.append(message)

        import contextlib

        from perfml.experiments.cluster import dask_folds

        with dask_folds(dask) if dask else contextlib.nullcontext():
            result = run_experiment(spec, data_home=data_home, track=not no_track, storage=storage, models=model,
                                    progress=on_model, recovery_wait_s=recovery_wait_s, n_jobs=n_jobs)
        advance(step=1 if started else 0)
    if as_json:
        from perfml.cli._output import frame_records, print_json

        print_json({"experiment": spec.name, "protocol": spec.protocol, "summary": frame_records(result.summary),
                    "per_board": frame_records(result.per_board), "per_app": frame_records(result.per_app),
                    **{name: frame_records(table) for name, table in result.tables.items()}})
        return
    from perfml.cli._output import print_table

    cols = [c for c in _COLUMNS if c in result.summary.columns]
    print_table(result.summary[cols], title=f"{spec.name}: {spec.protocol} (MAPE and median APE in %, within_band = share in [0.8, 1.2])")
    pivot = result.per_board.pivot(index="board", columns="model", values="mape").reset_index()
    print_table(pivot, title=f"{spec.name}: MAPE (%) per board")
    if "per_class" in result.tables:
        _print_operator_tables(spec, result, print_table)


def _print_operator_tables(spec, result, print_table) -> None:
    """dlops corpus: MAPE per op class (all scored rows and per NeuSight split) and the NeuSight comparison."""
    per_class = result.tables["per_class"].pivot(index="op_class", columns="model", values="mape").reset_index()
    print_table(per_class, title=f"{spec.name}: MAPE (%) per op class, every scored held-out row (Conv: no NeuSight predictor)")
    split = result.tables["per_class_split"]
    if not split.empty:
        pivot = split.pivot(index=["split", "op_class"], columns="model", values="mape").reset_index()
        print_table(pivot, title=f"{spec.name}: MAPE (%) per NeuSight split and op class")
    comparison = result.tables["neusight_comparison"]
    if not comparison.empty:
        table = comparison.pivot_table(index="model", columns="op_class", values="sum_ape", sort=False)
        table = table.reindex(columns=[c for c in ("BMM", "FC", "EW", "Softmax", "LN", "Conv") if c in table.columns])
        print_table(table.reset_index(), title=(
            f"{spec.name}: NeuSight-style error (%) per op class. Ours: APE of the summed latency of a held-out "
            "board's NeuSight test-split rows, mean over the held-out boards. published:* = NeuSight perop.csv "
            "(mean over DL-model runs of the APE of per-class summed latency; in = training GPU and model, "
            "out = held-out GPU or model); not the same rows"))


def register(app: typer.Typer) -> None:
    app.add_typer(experiment_app, name="experiment")
