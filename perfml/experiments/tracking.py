"""Talking to MLflow: bounded network waits, and reading experiment results back.

Two rules for every use of MLflow in perfml:

* **Network stores time out.** :func:`configure_http` sets MLflow's HTTP request
  timeout, retry count and back-off (``MLFLOW_HTTP_REQUEST_TIMEOUT``,
  ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``,
  ``MLFLOW_HTTP_REQUEST_BACKOFF_JITTER``; MLflow's own defaults, 120 s and 7 retries
  with a factor-2 back-off, wait minutes for a server that does not answer) unless the
  user set them, and :func:`check_reachable` refuses an ``http(s)`` URI whose server
  does not accept a connection within :data:`CONNECT_TIMEOUT` seconds, with a typed
  :class:`~perfml.errors.TrackingStoreError` naming the URI and the fix.
* **Reading creates nothing.** :func:`tracking_client` with ``read_only=True`` refuses a
  local store (``sqlite:///...``, ``file:...`` or MLflow's default ``mlflow.db`` in the
  working directory) that does not exist, instead of letting MLflow create an empty one.
"""

from __future__ import annotations

import os

import pandas as pd

from perfml.errors import PerfmlError, TrackingStoreError

from perfml._mlflow import (  # noqa: F401 - re-exported: the tracking API lives here
    CONNECT_TIMEOUT,
    HTTP_DEFAULTS,
    check_reachable,
    configure_http,
    local_store_path,
    tracking_uri,
)


def tracking_client(*, read_only: bool = False):
    """An :class:`mlflow.tracking.MlflowClient` whose store answers (and, read-only, exists).

    Raises
    ------
    TrackingStoreError
        If the server does not answer, or (``read_only``) the local store does not exist.
    """
    configure_http()
    import logging

    from mlflow.tracking import MlflowClient

    uri = tracking_uri()
    check_reachable(uri)
    path = local_store_path(uri)
    if read_only and path is not None and not os.path.exists(path):
        raise TrackingStoreError(
            f"no MLflow store at {path} ({uri}): nothing to report; run `perfml experiment run FILE` first, "
            "or set MLFLOW_TRACKING_URI to the store your experiments were logged to"
        )
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "creating tables" chatter on stderr
    return MlflowClient(tracking_uri=uri)


def latest_summaries(experiment: str | None = None) -> dict[str, pd.DataFrame]:
    """The side-by-side table of the latest run of each perfml experiment (or of ``experiment``).

    For comparisons it is the run's ``summary.csv``; for the seed 003 Table II
    experiment, its ``table2_script.csv``.

    Raises
    ------
    PerfmlError
        If MLflow holds no such experiment or no finished run of it.
    TrackingStoreError
        If the store does not exist (it is not created) or its server does not answer.
    """
    import mlflow

    client = tracking_client(read_only=True)
    if experiment is not None:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            names = sorted(e.name for e in client.search_experiments())
            raise PerfmlError(
                f"MLflow ({mlflow.get_tracking_uri()}) has no experiment {experiment!r}; known: {', '.join(names) or 'none'}; "
                "run `perfml experiment run experiments/<name>.toml` first"
            )
        experiments = [found]
    else:
        experiments = [e for e in client.search_experiments() if e.name != "Default"]
    out = {}
    for exp in experiments:
        runs = client.search_runs(
            [exp.experiment_id], filter_string="attributes.status = 'FINISHED'", order_by=["attributes.start_time DESC"]
        )
        runs = [r for r in runs if r.data.tags.get("perfml.kind") in ("experiment", "bsp_table2")]
        if not runs:
            continue
        run = runs[0]
        artifact = "summary.csv" if run.data.tags.get("perfml.kind") == "experiment" else "table2_script.csv"
        out[exp.name] = pd.read_csv(client.download_artifacts(run.info.run_id, artifact))
    if not out:
        raise PerfmlError(f"no finished perfml experiment runs in MLflow ({mlflow.get_tracking_uri()}); run `perfml experiment run FILE` first")
    return out
