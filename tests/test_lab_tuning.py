"""Shared tuning on a real PostgreSQL study (issue 13): several workers, a killed worker.

Every worker is a real ``python -m perfml tune`` process on the throw-away cluster of
:mod:`lab_fixtures`; the storage URL carries no password (libpq reads it from
``PGPASSFILE``). Trials tune the SVR learner on one app's runtimes of
shared/datasets (gpuperfpredict NCA), a few seconds each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab_fixtures import postgres  # noqa: F401 - fixture

from conftest import needs_data_home

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PERFML_TUNE_STORAGE", None)
    return env


def _tune(*args):
    return [sys.executable, "-m", "perfml", "--quiet", "tune", "--learner", "svr", "--no-mlflow", *args]


def _trials(url, study):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return sorted(optuna.load_study(study_name=study, storage=url).trials, key=lambda t: t.number)


@needs_data_home()
def test_four_workers_share_one_postgresql_study(postgres, tmp_path):
    url = postgres.url(postgres.new_database("optuna"))
    proc = subprocess.run(_tune("--app", "subSeqMax", "--n-trials", "1", "--n-workers", "4", "--storage", url,
                                "--study", "four", "--json"),
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [w["exit_code"] for w in out["workers"]] == [0, 0, 0, 0]
    trials = _trials(url, "four")
    assert [t.number for t in trials] == list(range(4))  # unique numbers, 4 workers x 1 trial
    assert out["n_trials"] == 4 and sum(out["states"].values()) == 4
    assert {t.state.name for t in trials} <= {"COMPLETE", "PRUNED"}
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 4  # distinct seeds, distinct draws
    assert not list(tmp_path.iterdir())  # no local optuna.db / mlflow.db


@needs_data_home()
def test_a_second_run_of_several_workers_draws_new_parameters(tmp_path):
    """--n-workers without --worker-id numbered its workers from 0 on every run: a resumed study (or a
    second host) repeated the first run's parameters, trial for trial."""
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    for _ in range(2):
        proc = subprocess.run(_tune("--app", "subSeqMax", "--target", "log", "--n-trials", "1", "--n-workers", "2",
                                    "--storage", url, "--study", "again"),
                              cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=400)
        assert proc.returncode == 0, proc.stderr
    trials = _trials(url, "again")
    assert len(trials) == 4 and len({tuple(sorted(t.params.items())) for t in trials}) == 4


@needs_data_home()
def test_a_killed_worker_s_trial_ends_failed_and_the_study_finishes(postgres, tmp_path):
    import optuna

    url = postgres.url(postgres.new_database("optuna"))
    beat = ["--heartbeat-interval", "1", "--grace-period", "3"]
    victim = subprocess.Popen(_tune("--app", "vectorAdd", "--n-trials", "5", "--storage", url, "--study", "kill",
                                    "--worker-id", "1", *beat),
                              cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        running = []
        while not running and time.monotonic() < deadline and victim.poll() is None:
            time.sleep(0.2)
            try:
                # a trial that has drawn a parameter: its heartbeat thread runs (Optuna starts it before
                # the objective); killed earlier, between ask and the first heartbeat, it is never stale
                running = [t for t in _trials(url, "kill") if t.state.name == "RUNNING" and t.params]
            except KeyError:  # the study is not created yet
                pass
        assert running, f"no trial started within 180 s: {victim.stderr.read().decode()[-2000:] if victim.poll() is not None else ''}"
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(timeout=30)
    killed = running[0].number
    assert _trials(url, "kill")[killed].state.name == "RUNNING"  # killed mid-trial: nobody ended it
    time.sleep(4)  # past the grace period
    proc = subprocess.run(_tune("--app", "vectorAdd", "--n-trials", "2", "--storage", url, "--study", "kill",
                                "--worker-id", "2", "--json", *beat),
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    trials = _trials(url, "kill")
    assert trials[killed].state == optuna.trial.TrialState.FAIL
    assert not [t for t in trials if t.state.name == "RUNNING"]
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == killed]
    # its parameters were tried again: every parameter the killed trial had drawn is reused (it
    # may have been killed before drawing them all; the retry draws the rest)
    assert len(retried) == 1 and trials[killed].params
    assert retried[0].params.items() >= trials[killed].params.items()
    assert sum(t.state.name in ("COMPLETE", "PRUNED") for t in trials) == 2  # the second worker's trials


@needs_data_home()
def test_a_password_on_the_command_line_is_masked(postgres, tmp_path):
    secret = "Wr0ngPassw0rd-never-printed"
    url = f"postgresql+psycopg://{postgres.user}:{secret}@{postgres.host}:{postgres.port}/postgres"
    proc = subprocess.run(_tune("--app", "subSeqMax", "--n-trials", "1", "--storage", url, "--study", "masked"),
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert secret not in proc.stderr + proc.stdout
    assert f"{postgres.user}:***@" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _table_names(postgres, database):
    with postgres._connect(database) as connection:
        rows = connection.execute("select tablename from pg_tables where schemaname = 'public'").fetchall()
    return {row[0] for row in rows}


@needs_data_home()
def test_neither_store_writes_into_the_others_postgresql_database(postgres, tmp_path):
    """`tune --storage` on the MLflow database added Optuna's tables to it and crashed; `report`, which
    only reads, ran MLflow's migrations in the Optuna database. Both are refused, the databases unchanged."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna_db, mlflow_db = postgres.new_database("optuna"), postgres.new_database("mlflow")
    optuna.create_study(study_name="s", storage=postgres.url(optuna_db))
    with postgres._connect(mlflow_db) as connection:  # an MLflow store's marks, as MLflow's migrations leave them
        for table in ("experiments", "runs", "alembic_version"):
            connection.execute(f"create table {table} (id integer)")
    before = {db: _table_names(postgres, db) for db in (optuna_db, mlflow_db)}
    proc = subprocess.run(_tune("--app", "subSeqMax", "--n-trials", "1", "--storage", postgres.url(mlflow_db), "--study", "x"),
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is an MLflow tracking store" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "perfml", "--quiet", "report"], cwd=tmp_path,
                          env={**_env(), "MLFLOW_TRACKING_URI": postgres.url(optuna_db)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is another program's database" in proc.stderr, proc.stderr
    assert {db: _table_names(postgres, db) for db in (optuna_db, mlflow_db)} == before


def test_workers_divide_this_hosts_cores_among_them():
    from perfml.cli._workers import threads_per_worker

    assert threads_per_worker(4, cores=16) == 4
    assert threads_per_worker(3, cores=2) == 1  # never 0
    assert threads_per_worker(1, cores=2) == 2
    assert threads_per_worker(2) >= 1  # this host's own count


@needs_data_home()
def test_each_started_worker_is_given_its_share_of_the_cores(tmp_path, monkeypatch, capsys):
    """Each worker's xgboost used 2 threads whatever --n-workers was: 4 workers on a 2-core host
    ran 8 spinning threads (two 2-thread jobs on 2 cores took 4.2x the CPU time of one)."""
    import perfml.cli._workers as workers
    from perfml.cli import main
    from perfml.errors import StudyError

    from conftest import data_home_path

    seen = {}

    def capture(argv, n_workers, **kwargs):
        seen["argv"] = argv
        raise StudyError("stopped by the test")

    monkeypatch.setattr(workers, "run_workers", capture)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    base = ["tune", "--learner", "svr", "--no-mlflow", "--n-trials", "1", "--storage", f"sqlite:///{tmp_path}/o.db",
            "--data-home", str(data_home_path())]
    for extra, expected in (([], str(workers.threads_per_worker(3))), (["--n-jobs", "5"], "5")):
        assert main([*base, "--n-workers", "3", *extra]) == 2
        assert "stopped by the test" in capsys.readouterr().err
        argv = seen["argv"]
        assert argv[argv.index("--n-jobs") + 1] == expected
