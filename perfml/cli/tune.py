"""``perfml tune``: tune a learner with Optuna, alone or as one of several workers.

Several ``perfml tune`` processes given the same ``--storage`` and ``--study`` (alias
``--study-name``) share one study, on one host or many (a PostgreSQL URL such as
``postgresql+psycopg://perfml@dbhost/optuna``, its password from ``PGPASSFILE`` or
``PGPASSWORD``): see :mod:`perfml.learned.tuning` for how the study is created safely,
how each worker gets its own seed (``--worker-id``) and how trials of a dead worker are
marked failed and retried (a heartbeat every ``--heartbeat-interval`` seconds; a trial
silent for ``--grace-period`` seconds is failed). ``--n-workers N`` starts N worker
processes of this same command on this host (worker ids ``--worker-id`` to
``--worker-id + N - 1``) and reports the study when all have finished. The storage URL
reaches the workers through ``PERFML_TUNE_STORAGE``, not their command lines, and every
message masks its password.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import typer

from perfml.errors import PerfmlError

DataHome = typer.Option(None, "--data-home", help="Directory with the shared datasets tables (default: $PERFML_DATA_HOME or ../shared/datasets).")

_LEARNERS = ("xgboost", "hgb", "random_forest", "svr")
_TARGETS = ("residual", "log")
#: MLflow's limit on an experiment name, which the study name becomes
_MAX_STUDY_NAME = 500


def tune_command(
    learner: str = typer.Option("xgboost", "--learner", help="xgboost | hgb | random_forest | svr"),
    target: str = typer.Option("residual", "--target", help="residual | log"),
    data_home: Optional[Path] = DataHome,
    source: Optional[str] = typer.Option("gpuperfpredict-nca", "--source"),
    board: Optional[str] = typer.Option(None, "--board", help="Tune on the runtimes of this board only."),
    app: Optional[str] = typer.Option(None, "--app", help="Tune on the runtimes of this app_id only."),
    n_trials: int = typer.Option(20, "--n-trials", min=1, max=1000, help="Trials this worker runs, 1 to 1000 (the bound of experiment files' tune.n_trials)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=1.0, help="Stop starting trials after this many seconds."),
    storage: Optional[str] = typer.Option(None, "--storage", envvar="PERFML_TUNE_STORAGE", help="Optuna RDB URL, e.g. postgresql+psycopg://user@host/db with the password in PGPASSFILE (default: sqlite:///optuna.db in the current directory; also PERFML_TUNE_STORAGE)."),
    study_name: str = typer.Option("perfml-tune", "--study", "--study-name", help="Name of the study the workers share."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Seed of the worker that creates the study (0 to 2**32 - 1); other workers derive theirs from it."),
    worker_id: Optional[int] = typer.Option(None, "--worker-id", min=0, help="Seed this worker as worker N (default: 0 if it creates the study, else its process id)."),
    n_workers: int = typer.Option(1, "--n-workers", min=1, max=64, help="Start this many worker processes on the study (each runs --n-trials)."),
    n_jobs: Optional[int] = typer.Option(None, "--n-jobs", min=1, max=256, help="Threads of each worker's learner (default: 2 for one worker; with --n-workers N, this host's cores divided among the N)."),
    heartbeat_interval: int = typer.Option(30, "--heartbeat-interval", min=1, max=3600, envvar="PERFML_TUNE_HEARTBEAT", help="Seconds between the heartbeats of a running trial."),
    grace_period: Optional[int] = typer.Option(None, "--grace-period", min=1, max=86400, envvar="PERFML_TUNE_GRACE_PERIOD", help="A trial without a heartbeat for this long is marked FAILED and retried (default: twice --heartbeat-interval)."),
    mlflow_track: bool = typer.Option(True, "--mlflow/--no-mlflow", help="Record trials in MLflow (optuna_integration.MLflowCallback)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Tune a learner with Optuna (TPE, median pruning, folds grouped by board); resumable through --storage."""
    from perfml._progress import progress
    from perfml.cli import quiet_requested
    from perfml.evaluation.closed_form import describable_runtimes
    from perfml.learned.regressors import RuntimeRegressor
    from perfml.learned.tuning import default_storage, make_storage, tune

    if learner not in _LEARNERS:
        raise PerfmlError(f"--learner must be one of {', '.join(_LEARNERS)}, found {learner!r}")
    if target not in _TARGETS:
        raise PerfmlError(f"--target must be one of {', '.join(_TARGETS)}, found {target!r}")
    # the study's name is also its MLflow experiment's: checked before any trial is run and stored
    if not study_name.strip() or len(study_name) > _MAX_STUDY_NAME or not study_name.isprintable():
        raise PerfmlError(f"--study must be a printable name of 1 to {_MAX_STUDY_NAME} characters (it names the Optuna study "
                          f"and its MLflow experiment), found {study_name[:80]!r}{'...' if len(study_name) > 80 else ''}")
    if study_name.strip() == "Default":  # MLflow's own experiment, which `perfml report` leaves out: the study vanished
        raise PerfmlError("--study 'Default' is MLflow's own experiment, which `perfml report` leaves out; choose another name")
    if storage is not None and not storage.strip():
        raise PerfmlError("--storage is empty; give a storage URL (e.g. sqlite:///optuna.db) or leave the option out")
    if mlflow_track:  # a store that cannot be used is refused before any work (the study in --storage included)
        from perfml._mlflow import check_reachable, configure_http, tracking_uri

        configure_http()
        check_reachable(tracking_uri())
    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    rt = describable_runtimes(data_home, source=source, board=board, app_id=app)
    if rt["board"].nunique() < 2:
        raise PerfmlError(
            f"tuning scores folds grouped by board and needs runtimes of at least 2 boards; the selection has "
            f"{rt['board'].nunique()} ({len(rt)} rows): drop --board or choose another --source/--app"
        )
    if grace_period is not None and grace_period <= heartbeat_interval:
        raise PerfmlError(f"--grace-period must exceed --heartbeat-interval ({heartbeat_interval} s), found {grace_period}: "
                          "a live trial would be failed between two heartbeats")
    url = storage or default_storage(".")
    rdb = make_storage(url, heartbeat_interval=heartbeat_interval, grace_period=grace_period)
    if n_workers > 1:
        from perfml.cli._workers import run_workers, threads_per_worker
        from perfml.learned.tuning import claim_worker_id, open_study

        argv = ["tune", "--learner", learner, "--target", target, "--n-trials", str(n_trials), "--study", study_name,
                "--seed", str(seed), "--heartbeat-interval", str(heartbeat_interval),
                "--n-jobs", str(n_jobs or threads_per_worker(n_workers)),
                "--mlflow" if mlflow_track else "--no-mlflow"]
        argv += [a for flag, v in (("--data-home", data_home.path), ("--source", source), ("--board", board), ("--app", app),
                                   ("--timeout", timeout), ("--grace-period", grace_period)) if v is not None for a in (flag, str(v))]
        first = claim_worker_id(rdb, study_name, worker_id)  # the workers are numbered on from it, as one worker is
        reports = run_workers(argv, n_workers, first_worker_id=first, storage_url=url)
        study = open_study(rdb, study_name, random_state=seed, worker_id=first)
    else:
        from perfml.learned.tuned import data_digest

        est = RuntimeRegressor(learner=learner, target=target, data_home=data_home, random_state=seed,
                               **({"n_jobs": n_jobs} if n_jobs else {}))
        with progress(f"tuning {learner}", total=n_trials, quiet=quiet_requested() or as_json) as advance:
            study = tune(est, rt, rt["measured_ms"], n_trials=n_trials, storage=rdb,
                         study_name=study_name, random_state=seed, mlflow_tracking_uri="default" if mlflow_track else None,
                         timeout=timeout, worker_id=worker_id, progress=advance,
                         # the rows themselves: a --data-home with other times resumed the study, and a
                         # trial scored on other data could become its best
                         context={"source": source, "board": board, "app": app,
                                  "data": data_digest(rt, rt["measured_ms"])})
        reports = None
    finished = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not finished:
        raise PerfmlError(f"no trial of study {study_name!r} finished (all pruned or failed); run more --n-trials")
    result = {"study": study_name, "best_value_mape": study.best_value, "best_params": study.best_params,
              "n_trials": len(study.trials),
              "states": dict(sorted(Counter(t.state.name for t in study.trials).items()))}
    if reports is not None:
        result["workers"] = reports
    if as_json:
        from perfml.cli._output import print_json

        print_json(result)
    else:
        typer.echo(f"best inner-CV MAPE {study.best_value:.2f}% with {study.best_params}")


def register(app: typer.Typer) -> None:
    app.command("tune")(tune_command)
