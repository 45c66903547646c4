"""perfml against a real MLflow tracking server on a real PostgreSQL (issue 13).

The server and the database are the throw-away ones of :mod:`lab_fixtures`
(127.0.0.1 only); nothing here is mocked.
"""

from __future__ import annotations

import os

import pytest

from lab_fixtures import mlflow_server, postgres, tracking_uri  # noqa: F401 - fixtures

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
