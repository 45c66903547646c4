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

import pandas as pd

from perfml.errors import ExperimentAbortedError, PerfmlError, TrackingStoreError

from perfml._mlflow import (  # noqa: F401 - re-exported: the tracking API lives here
    CONNECT_TIMEOUT,
    HTTP_DEFAULTS,
    check_reachable,
    check_store_exists,
    configure_http,
    local_store_path,
    refusal_fix,
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
    if read_only:  # first: a store that is not there has nothing to read, whatever else is wrong with its path
        check_store_exists(uri, "nothing to report", "run `perfml experiment run FILE` first, "
                           "or set MLFLOW_TRACKING_URI to the store your experiments were logged to")
    check_reachable(uri)
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "creating tables" chatter on stderr
    return MlflowClient(tracking_uri=uri)


#: tag of a parent run that ran only some models of its experiment (``perfml experiment run --model``)
SUBSET_TAG = "perfml.models_subset"


def latest_summaries(experiment: str | None = None) -> dict[str, pd.DataFrame]:
    """The side-by-side table of the latest run of each perfml experiment (or of ``experiment``).

    The latest run of all the experiment's models, where there is one: a later run of some of
    them (``--model``) is shown only when no full run exists.

    For comparisons it is the run's ``summary.csv``; for the seed 003 Table II
    experiment, its ``table2_script.csv``.

    Raises
    ------
    PerfmlError
        If MLflow holds no such experiment or no finished run of it.
    TrackingStoreError
        If the store does not exist (it is not created) or its server does not answer.
    """
    client, runs = _latest_runs(experiment)
    out = {}
    for name, run in runs.items():
        artifact = "summary.csv" if run.data.tags.get("perfml.kind") == "experiment" else "table2_script.csv"
        out[name] = _artifact_table(client, name, run, artifact)
    return out


def _artifact_table(client, experiment: str, run, artifact: str) -> pd.DataFrame:
    """The CSV artifact ``artifact`` of ``run``, or :class:`TrackingStoreError` naming the run and
    the artifact (a downloaded copy lives in a temporary folder gone before the message is read)."""
    from mlflow.exceptions import MlflowException

    where = f"artifact {artifact!r} of run {run.info.run_id} (experiment {experiment!r})"
    fix = "re-run the experiment (`perfml experiment run`) to log it again"
    try:
        local = client.download_artifacts(run.info.run_id, artifact)
    except (OSError, MlflowException) as exc:
        raise TrackingStoreError(f"{where} cannot be read ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); {fix}") from None
    try:
        table = pd.read_csv(local)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TrackingStoreError(f"{where} is not a readable CSV table ({type(exc).__name__}); {fix}") from None
    # the report reads these columns by name: without them it ended in an internal KeyError
    missing = [c for c in _ARTIFACT_COLUMNS.get(artifact, ()) if c not in table.columns]
    if missing:
        raise TrackingStoreError(f"{where} lacks column(s) {', '.join(missing)} (perfml writes "
                                 f"{', '.join(_ARTIFACT_COLUMNS[artifact])}); {fix}")
    return table


#: the columns of a run's artifact tables that `perfml report` reads
_ARTIFACT_COLUMNS = {"summary.csv": ("model", "mape"), "per_board.csv": ("board", "model", "mape")}


def latest_per_board(experiment: str | None = None) -> dict[str, pd.DataFrame]:
    """The per-board table (``per_board.csv``) of the latest run of each comparison (see :func:`latest_summaries`)."""
    client, runs = _latest_runs(experiment)
    return {name: _artifact_table(client, name, run, "per_board.csv")
            for name, run in runs.items() if run.data.tags.get("perfml.kind") == "experiment"}


def _latest_runs(experiment: str | None):
    """(client, {experiment name: its latest finished perfml parent run})."""
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
        # the latest run of every model: a later `--model` subset run does not hide it
        whole = [r for r in runs if SUBSET_TAG not in r.data.tags]
        if whole or runs:
            out[exp.name] = (whole or runs)[0]
    if not out:
        raise PerfmlError(f"no finished perfml experiment runs in MLflow ({mlflow.get_tracking_uri()}); run `perfml experiment run FILE` first")
    return client, out


#: Seconds an experiment whose tracking server failed waits for it to answer again, to
#: mark its unfinished runs FAILED (``failed_runs_marked(..., recovery_wait_s=...)``; the
#: CLI passes ``$PERFML_TRACKING_RECOVERY_S``).
RECOVERY_WAIT_S = 60.0


def _is_tracking_failure(exc: BaseException) -> bool:
    """Whether ``exc`` comes from MLflow or its HTTP client (a store that failed), not from perfml's work."""
    if isinstance(exc, TrackingStoreError):
        return True
    for e in (exc, exc.__cause__, exc.__context__):
        if e is not None and type(e).__module__.split(".")[0] in ("mlflow", "requests", "urllib3"):
            return True
    return False


def _mark_failed(parents: list[str], wait_s: float) -> tuple[list[str], str]:
    """Mark FAILED every RUNNING run in ``parents`` and their children; (the marked ids, the problem if any)."""
    import time as _time

    import mlflow
    from mlflow.tracking import MlflowClient

    while mlflow.active_run() is not None:  # mlflow pops the run before telling the server: the stack empties
        try:
            mlflow.end_run(status="FAILED")
        except Exception:  # noqa: BLE001 - the server may be down; the runs are marked below
            pass
    uri = tracking_uri()
    deadline = _time.monotonic() + wait_s
    problem = ""
    while True:
        try:
            client = MlflowClient(tracking_uri=uri)
            marked = []
            for parent_id in parents:
                parent = client.get_run(parent_id)
                runs = [parent, *client.search_runs(
                    [parent.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent_id}'", max_results=10000)]
                for run in runs:
                    if run.info.status == "RUNNING":
                        client.set_terminated(run.info.run_id, "FAILED")
                        marked.append(run.info.run_id)
            return marked, ""
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if _time.monotonic() >= deadline:
                return [], problem
            _time.sleep(1.0)


class failed_runs_marked:  # noqa: N801 - used as a context manager, named for what it ensures
    """Context manager: when the block raises, no run it started is left RUNNING.

    The runner appends the id of every top-level run it starts to :attr:`parents`. If
    the block raises, every run on MLflow's active-run stack is ended, and every
    RUNNING run among the parents and their nested runs is marked FAILED, waiting up to
    ``recovery_wait_s`` seconds (default :data:`RECOVERY_WAIT_S`) for a
    tracking server that went away to answer again. A failure of the tracking store
    itself becomes a typed :class:`~perfml.errors.ExperimentAbortedError` saying which
    runs were marked, or which could not be and how to mark them; any other exception
    is re-raised as it was.
    """

    def __init__(self, experiment: str, recovery_wait_s: float | None = None):
        self.experiment = experiment
        self.recovery_wait_s = RECOVERY_WAIT_S if recovery_wait_s is None else float(recovery_wait_s)
        self.parents: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or not self.parents:
            if exc is not None and _is_tracking_failure(exc):
                raise ExperimentAbortedError(
                    f"MLflow tracking store {tracking_uri()} failed while starting experiment {self.experiment!r} "
                    f"({_first_line(exc)}); no run was started: "
                    f"{refusal_fix(exc) or 'check the server'} and run the experiment again"
                ) from exc
            return False
        wait_s = self.recovery_wait_s
        marked, problem = _mark_failed(self.parents, wait_s)
        if not _is_tracking_failure(exc):
            return False
        if problem:
            raise ExperimentAbortedError(
                f"MLflow tracking server {tracking_uri()} failed during experiment {self.experiment!r} "
                f"({_first_line(exc)}) and did not answer again within {wait_s:g} s ({problem}); run(s) "
                f"{', '.join(self.parents)} and their nested runs may still show RUNNING: mark them with "
                "MlflowClient().set_terminated(run_id, 'FAILED') once it answers, then run the experiment again"
            ) from exc
        raise ExperimentAbortedError(
            f"MLflow tracking server {tracking_uri()} failed during experiment {self.experiment!r} "
            f"({_first_line(exc)}); {len(marked)} unfinished run(s) marked FAILED: run the experiment again"
        ) from exc


def _first_line(exc: BaseException) -> str:
    from perfml._secrets import mask_credentials

    text = str(exc).strip().splitlines()
    return mask_credentials(f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__)[:300]
