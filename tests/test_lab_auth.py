"""perfml against a tracking server with MLflow's basic-auth app (docs/lab_setup.md, "Shared use").

A real ``mlflow server --app-name basic-auth`` on 127.0.0.1 (SQLite stores, so no
PostgreSQL is needed): the doc's configuration, with the static secret key MLflow
requires for it. A refused login and a missing permission each come back as a typed
error (exit 2) that says which setting to change; an authorized user reads the runs.
"""

from __future__ import annotations

import secrets

import pytest

from lab_fixtures import MlflowServer, tracking_uri

from conftest import needs_data_home

pytestmark = pytest.mark.slow

pytest.importorskip("flask_wtf", reason="MLflow's basic-auth app needs mlflow[auth] (the lab and test extras install it)")

ADMIN = "admin"


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow-auth")
    admin_password = secrets.token_urlsafe(16)
    config = folder / "basic_auth.ini"
    config.write_text(
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = sqlite:///{folder / 'auth.db'}\n"
        f"admin_username = {ADMIN}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
    )
    env = {"MLFLOW_AUTH_CONFIG_PATH": str(config), "MLFLOW_AUTH_ADMIN_PASSWORD": admin_password,
           "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets.token_hex(32)}
    server = MlflowServer(f"sqlite:///{folder / 'mlflow.db'}", folder / "artifacts", folder / "server.log",
                          app_name="basic-auth", env=env)
    server.start()
    server.admin_password = admin_password
    try:
        yield server
    finally:
        server.stop()


def _as(monkeypatch, user: str | None, password: str | None) -> None:
    for name, value in (("MLFLOW_TRACKING_USERNAME", user), ("MLFLOW_TRACKING_PASSWORD", password)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


_SPEC = (
    'name = "{name}"\ndescription = "lab: a server with logins"\nprotocol = "leave-one-board-out"\n'
    '[data]\nsource = "gpuperfpredict-nca"\nboards = ["GTX-680", "Tesla-K40", "GTX-980"]\napps = ["vectorAdd"]\n'
    '[[models]]\nname = "roofline"\nkind = "closed_form"\nmodel = "roofline"\n'
)


@needs_data_home()
def test_a_login_or_permission_the_server_refuses_is_a_typed_error_that_names_the_fix(auth_server, tmp_path,
                                                                                      monkeypatch, capsys):
    from mlflow.server import get_app_client

    from perfml.cli import main

    monkeypatch.chdir(tmp_path)
    reader_password = secrets.token_urlsafe(16)
    with tracking_uri(auth_server.uri):
        _as(monkeypatch, ADMIN, auth_server.admin_password)
        get_app_client("basic-auth", tracking_uri=auth_server.uri).create_user(username="reader", password=reader_password)
        spec = tmp_path / "lab_auth.toml"
        spec.write_text(_SPEC.format(name="lab_auth"))
        assert main(["experiment", "run", str(spec)]) == 0, capsys.readouterr().err  # the admin's runs
        capsys.readouterr()

        _as(monkeypatch, None, None)  # no login at all
        assert main(["report", "--experiment", "lab_auth"]) == 2
        err = capsys.readouterr().err
        assert "MLFLOW_TRACKING_USERNAME" in err and "MLFLOW_TRACKING_PASSWORD" in err and "Traceback" not in err

        _as(monkeypatch, "reader", reader_password + "x")  # a wrong password
        assert main(["report", "--experiment", "lab_auth"]) == 2
        assert "asks for a login" in capsys.readouterr().err

        _as(monkeypatch, "reader", reader_password)  # READ (the server's default): reads, may not log
        assert main(["report", "--experiment", "lab_auth"]) == 0
        assert "roofline" in capsys.readouterr().out
        assert main(["experiment", "run", str(spec)]) == 2
        err = capsys.readouterr().err
        assert "may not do this" in err and "EDIT or MANAGE" in err and "Traceback" not in err
        own = tmp_path / "lab_auth_reader.toml"  # the other way out the message names
        own.write_text(_SPEC.format(name="lab_auth_reader"))
        assert main(["experiment", "run", str(own)]) == 0, capsys.readouterr().err
        assert not (tmp_path / "mlflow.db").exists()  # nothing fell back to a local store
