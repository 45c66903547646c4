"""perfml against a real MLflow tracking server on a real PostgreSQL (issue 13).

The server and the database are the throw-away ones of :mod:`lab_fixtures`
(127.0.0.1 only); nothing here is mocked.
"""

from __future__ import annotations

import os

import pytest

from lab_fixtures import mlflow_server, postgres, tracking_uri  # noqa: F401 - fixtures

from conftest import needs_data_home

pytestmark = pytest.mark.slow


def test_the_cluster_takes_the_password_from_pgpass_only(postgres):
    import psycopg

    name = postgres.new_database("probe")
    with psycopg.connect(host=postgres.host, port=postgres.port, dbname=name, user=postgres.user, connect_timeout=10) as conn:
        assert conn.execute("select current_user").fetchone()[0] == postgres.user
    saved = os.environ.pop("PGPASSFILE")
    try:  # without the pgpass file the role cannot log in: the password is really required
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(host=postgres.host, port=postgres.port, dbname=name, user=postgres.user,
                            connect_timeout=10, passfile="/nonexistent")
    finally:
        os.environ["PGPASSFILE"] = saved
    assert postgres.pgpass.stat().st_mode & 0o077 == 0


def test_the_mlflow_server_answers_on_loopback(mlflow_server):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.uri)
    exp = client.create_experiment("lab-probe")
    run = client.create_run(exp)
    client.log_metric(run.info.run_id, "m", 1.5)
    assert client.get_run(run.info.run_id).data.metrics == {"m": 1.5}


_SPEC = (
    'name = "{name}"\ndescription = "lab: three boards, two apps, through a tracking server"\n'
    'protocol = "leave-one-board-out"\n'
    '[data]\nsource = "gpuperfpredict-nca"\nboards = ["GTX-680", "Tesla-K40", "GTX-980"]\napps = ["vectorAdd", "matMul_gpu"]\n'
    '[[models]]\nname = "hybrid_xgboost"\nkind = "learned"\nlearner = "xgboost"\nparams = {{ n_estimators = 30, max_depth = 3 }}\n'
    '[[models]]\nname = "bsp"\nkind = "closed_form"\nmodel = "bsp"\n'
    '[[models]]\nname = "roofline"\nkind = "closed_form"\nmodel = "roofline"\n'
)


@needs_data_home()
def test_an_experiment_logged_through_the_server_reads_back(mlflow_server, tmp_path, monkeypatch, capsys):
    """Runs, metrics, artifacts and the registered model come back through MlflowClient."""
    import json

    import mlflow
    import pandas as pd
    from mlflow.tracking import MlflowClient

    from perfml.cli import main

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "lab_small.toml"
    spec.write_text(_SPEC.format(name="lab_small"))
    with tracking_uri(mlflow_server.uri):
        assert main(["experiment", "run", str(spec), "--json"]) == 0
        summary = pd.DataFrame(json.loads(capsys.readouterr().out)["summary"]).set_index("model")
        assert main(["report", "--experiment", "lab_small", "--json"]) == 0
        reported = pd.DataFrame(json.loads(capsys.readouterr().out)["lab_small"]).set_index("model")
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "mlruns").exists()  # nothing local

    client = MlflowClient(tracking_uri=mlflow_server.uri)
    exp = client.get_experiment_by_name("lab_small")
    runs = client.search_runs([exp.experiment_id])
    assert all(r.info.status == "FINISHED" for r in runs)
    parent = [r for r in runs if r.data.tags.get("perfml.kind") == "experiment"]
    children = {r.data.tags["perfml.model"]: r for r in runs if "perfml.model" in r.data.tags}
    assert len(parent) == 1 and set(children) == {"hybrid_xgboost", "bsp", "roofline"}
    for name, run in children.items():
        assert run.data.tags["mlflow.parentRunId"] == parent[0].info.run_id
        assert run.data.metrics["mape"] == pytest.approx(summary.loc[name, "mape"], rel=1e-12)
        assert run.data.metrics["mape"] == pytest.approx(reported.loc[name, "mape"], rel=1e-12)
        assert {f"mape/board/{b}" for b in ("GTX-680", "Tesla-K40", "GTX-980")} <= set(run.data.metrics)
    # artifacts went to the server's artifacts destination and come back
    child = children["hybrid_xgboost"]
    assert {"predictions.csv", "predicted_vs_measured.png", "perfml_model"} <= {
        a.path for a in client.list_artifacts(child.info.run_id)}
    preds = pd.read_csv(client.download_artifacts(child.info.run_id, "predictions.csv", str(tmp_path)))
    assert len(preds) == summary.loc["hybrid_xgboost", "n"] + summary.loc["hybrid_xgboost", "n_unpredicted"]
    assert any(mlflow_server.artifacts.rglob("predictions.csv"))
    # the registered model is the booster of the learned run, and it loads
    versions = client.search_model_versions("name = 'perfml-lab_small'")
    assert len(versions) == 1 and versions[0].run_id == child.info.run_id
    import mlflow.xgboost

    with tracking_uri(mlflow_server.uri):
        booster = mlflow.xgboost.load_model(f"models:/perfml-lab_small/{versions[0].version}")
    assert booster.get_booster().num_boosted_rounds() == 30


@needs_data_home()
def test_a_server_restart_mid_experiment_leaves_no_run_running(postgres, tmp_path):
    """Fault: the tracking server is stopped while an experiment logs, and started again 6 s later.

    The experiment either resumes (MLflow's client retries; exit 0, every run FINISHED) or
    stops with a typed one-line error (exit 2, ExperimentAbortedError) after marking its
    unfinished runs FAILED once the server answers again. Never a run left RUNNING.
    """
    import subprocess
    import sys
    import time
    from pathlib import Path

    from mlflow.tracking import MlflowClient

    from lab_fixtures import MlflowServer

    server = MlflowServer(postgres.url(postgres.new_database("mlflow_fault")), tmp_path / "artifacts", tmp_path / "server.log")
    server.start()
    try:
        models = "".join(f'[[models]]\nname = "{m}_{i}"\nkind = "closed_form"\nmodel = "{m}"\n'
                         for i in range(4) for m in ("bsp", "roofline"))
        spec = tmp_path / "lab_fault.toml"
        spec.write_text(_SPEC.format(name="lab_fault").split("[[models]]")[0] + models)
        root = Path(__file__).resolve().parents[1]
        env = dict(os.environ, MLFLOW_TRACKING_URI=server.uri, PERFML_TRACKING_RECOVERY_S="60",
                   PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen([sys.executable, "-m", "perfml", "--quiet", "experiment", "run", str(spec), "--json"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            client = MlflowClient(tracking_uri=server.uri)
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and proc.poll() is None:
                exp = client.get_experiment_by_name("lab_fault")
                if exp is not None and any("perfml.model" in r.data.tags for r in client.search_runs([exp.experiment_id])):
                    break
                time.sleep(0.2)
            assert proc.poll() is None, f"the experiment ended before the fault: {proc.stderr.read()[-2000:]}"
            server.stop()  # mid-experiment: a model run has started
            time.sleep(6)
            server.start()
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        runs = client.search_runs([client.get_experiment_by_name("lab_fault").experiment_id])
        states = {r.info.run_id: r.info.status for r in runs}
        assert "RUNNING" not in states.values(), states
        print(f"\nfault outcome: exit {proc.returncode}; runs {sorted(states.values())}; stderr: {err.strip()}")
        if proc.returncode == 0:  # resumed
            assert set(states.values()) == {"FINISHED"} and len(states) == 9
        else:
            assert proc.returncode == 2, err
            last = err.strip().splitlines()[-1]  # above it: MLflow's own INFO lines
            assert last.startswith("error: MLflow tracking server") and "marked FAILED" in last and "Traceback" not in err
            parent = [r for r in runs if r.data.tags.get("perfml.kind") == "experiment"]
            assert [p.info.status for p in parent] == ["FAILED"]
    finally:
        server.stop()


def test_a_database_store_is_read_before_anything_is_written_to_it(tmp_path):
    """The guard of a database server store (check_database_store, tuning's) reads its tables through
    SQLAlchemy, as it does a PostgreSQL one; here on SQLite files, which every machine has."""
    import sqlite3

    from perfml._mlflow import check_database_store, database_tables
    from perfml.errors import StudyError, TrackingStoreError
    from perfml.learned.tuning import _check_database_is_optunas

    optuna_like, mlflow_like = tmp_path / "optuna.db", tmp_path / "mlflow.db"
    for path, tables in ((optuna_like, ("studies", "trials", "alembic_version")), (mlflow_like, ("experiments", "runs", "alembic_version"))):
        with sqlite3.connect(path) as connection:
            for table in tables:
                connection.execute(f"create table {table} (id integer)")
    assert database_tables(f"sqlite:///{optuna_like}", TrackingStoreError, "x") == {"studies", "trials", "alembic_version"}
    with pytest.raises(TrackingStoreError, match="is another program's database"):
        check_database_store(f"sqlite:///{optuna_like}")
    check_database_store(f"sqlite:///{mlflow_like}")  # MLflow's own: used
    with pytest.raises(StudyError, match="is an MLflow tracking store"):
        _check_database_is_optunas(f"sqlite:///{mlflow_like}")
    _check_database_is_optunas(f"sqlite:///{optuna_like}")  # Optuna's own: used
    with pytest.raises(TrackingStoreError, match="driver for this database is not installed|could not open the database"):
        database_tables("mysql://u:pw@127.0.0.1:1/x", TrackingStoreError, "MLflow tracking store", timeout=1)
