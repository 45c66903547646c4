"""``perfml experiment run --dask``: the folds on a Dask cluster give the local figures (issue 13).

A ``dask.distributed.LocalCluster`` of two worker processes on 127.0.0.1 runs the
folds of a small leave-one-board-out experiment (three boards, two apps of
shared/datasets; BSP, roofline and a small xgboost hybrid); every predicted time and
every score equals the local run's, to the last digit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from conftest import needs_data_home

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

_SPEC = (
    'name = "lab_dask"\ndescription = "lab: folds on a Dask cluster"\nprotocol = "leave-one-board-out"\n'
    '[data]\nsource = "gpuperfpredict-nca"\nboards = ["GTX-680", "Tesla-K40", "GTX-980"]\napps = ["vectorAdd", "matMul_gpu"]\n'
    '[[models]]\nname = "hybrid_xgboost"\nkind = "learned"\nlearner = "xgboost"\nparams = { n_estimators = 30, max_depth = 3 }\n'
    '[[models]]\nname = "bsp"\nkind = "closed_form"\nmodel = "bsp"\n'
    '[[models]]\nname = "roofline"\nkind = "closed_form"\nmodel = "roofline"\n'
)


@needs_data_home()
def test_folds_on_a_local_dask_cluster_equal_the_local_run(tmp_path, monkeypatch, capsys):
    distributed = pytest.importorskip("dask.distributed", reason="needs dask[distributed]: pip install -e '.[lab]'")
    from perfml.cli import main

    monkeypatch.chdir(tmp_path)
    # the worker processes import the perfml under test
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    spec = tmp_path / "lab_dask.toml"
    spec.write_text(_SPEC)
    assert main(["experiment", "run", str(spec), "--no-track", "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, death_timeout=60) as cluster, \
            distributed.Client(cluster, timeout=60) as client, distributed.get_task_stream(client) as stream:
        assert main(["experiment", "run", str(spec), "--no-track", "--json", "--dask", cluster.scheduler_address]) == 0
        remote = json.loads(capsys.readouterr().out)
    workers = {task["worker"] for task in stream.data}
    assert len(stream.data) >= 3 and workers, "the folds did not run on the cluster"
    for key in ("summary", "per_board", "per_app"):
        a, b = pd.DataFrame(local[key]), pd.DataFrame(remote[key])
        drop = [c for c in ("cv_seconds",) if c in a]
        pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop), check_exact=True)


@needs_data_home()
def test_an_unreachable_scheduler_is_a_typed_error(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    from lab_fixtures import free_port
    from perfml.cli import main

    spec = tmp_path / "lab_dask.toml"
    spec.write_text(_SPEC)
    assert main(["experiment", "run", str(spec), "--no-track", "--dask", f"tcp://127.0.0.1:{free_port()}"]) == 2
    err = capsys.readouterr().err
    assert "Dask scheduler" in err and len(err.strip().splitlines()) == 1


def test_a_server_that_never_answers_is_refused_after_the_timeout():
    # a port of another service that accepts the connection and never writes: Dask's
    # Client(timeout=) bounds the connection, not the handshake read, and --dask hung
    pytest.importorskip("dask.distributed")
    import socket
    import threading

    from perfml.errors import ClusterUnavailableError
    from perfml.experiments.cluster import dask_folds

    server = socket.create_server(("127.0.0.1", 0))
    accepted, raised = [], []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()

    def connect() -> None:
        try:
            with dask_folds(f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=2):
                pass
        except Exception as exc:  # noqa: BLE001 - checked below
            raised.append(exc)

    probe = threading.Thread(target=connect, daemon=True)  # so that a hang fails the test, not the run
    probe.start()
    probe.join(120)
    server.close()
    assert not probe.is_alive(), "--dask still waits for a server that never answers"
    assert accepted, "the probe never connected: the test did not exercise a silent server"
    assert len(raised) == 1 and isinstance(raised[0], ClusterUnavailableError), raised
    assert "does not answer" in str(raised[0])
