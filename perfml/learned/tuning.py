"""Hyper-parameter tuning of the learned regressors with Optuna.

Each trial scores a parameter set with *group-aware* cross-validation on the training
rows (:class:`sklearn.model_selection.GroupKFold` over boards, so a fold never sees the
boards it is scored on), reports the running MAPE after every fold so that Optuna's
pruner can stop bad trials early, and is reproducible (TPE sampler with a fixed seed).
Studies live in an RDB storage: SQLite by default, any SQLAlchemy URL otherwise, so
several processes or hosts can work on one study.

Several workers on one study (:func:`make_storage`, :func:`open_study`):

* creating the schema and the study is safe when workers start at the same moment on
  a new database (the creation race is retried; the loser loads the study);
* each worker's sampler has its own seed (:func:`worker_seed`): the worker that creates
  the study uses ``random_state`` itself, so a single run stays reproducible, and a
  worker that joins an existing study (a second process, or a resumed run) derives its
  seed from ``random_state`` and its process id, or from an explicit ``worker_id``;
* RDB storages record a heartbeat of every running trial; when a worker dies, the next
  trial started by any worker marks its trial FAILED once the heartbeat is older than
  the grace period, and retries its parameters (Optuna's ``fail_stale_trials`` and
  ``RetryHeartbeatStaleTrialCallback``);
* SQLite connections wait up to ``lock_timeout`` seconds for a lock instead of failing
  with "database is locked".
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import random
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

from perfml.errors import StudyError
from perfml.evaluation.metrics import mape

#: Search spaces per learner: name -> (kind, low, high[, log]).
SEARCH_SPACES = {
    "xgboost": {
        "n_estimators": ("int", 200, 1200),
        "learning_rate": ("float", 0.01, 0.2, True),
        "max_depth": ("int", 3, 10),
        "subsample": ("float", 0.5, 1.0),
        "colsample_bytree": ("float", 0.4, 1.0),
        "min_child_weight": ("float", 0.5, 20.0, True),
        "reg_lambda": ("float", 1e-3, 10.0, True),
    },
    "hgb": {
        "max_iter": ("int", 200, 1200),
        "learning_rate": ("float", 0.01, 0.2, True),
        "max_leaf_nodes": ("int", 8, 128, True),
        "min_samples_leaf": ("int", 2, 60, True),
        "l2_regularization": ("float", 1e-4, 10.0, True),
    },
    "random_forest": {
        "n_estimators": ("int", 100, 600),
        "min_samples_leaf": ("int", 1, 20, True),
        "max_features": ("float", 0.2, 1.0),
    },
    "svr": {"C": ("float", 0.1, 300.0, True), "epsilon": ("float", 1e-3, 0.3, True)},
}


def default_storage(directory) -> str:
    """SQLite storage URL of a study database inside ``directory``."""
    path = Path(directory).resolve() / "optuna.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def suggest(trial, learner: str) -> dict:
    """Draw one parameter set of ``learner`` from :data:`SEARCH_SPACES`."""
    params = {}
    for name, spec in SEARCH_SPACES[learner].items():
        kind, low, high = spec[:3]
        log = bool(spec[3]) if len(spec) > 3 else False
        if kind == "int":
            params[name] = trial.suggest_int(name, low, high, log=log)
        else:
            params[name] = trial.suggest_float(name, low, high, log=log)
    return params


def worker_seed(random_state: int, worker_id: int) -> int:
    """Seed of one worker's sampler: ``random_state`` for worker 0, a derived one otherwise.

    The derivation is :class:`numpy.random.SeedSequence` over ``(random_state,
    worker_id)``, so distinct workers draw distinct parameters and each is reproducible
    given its id.
    """
    if worker_id == 0:
        return int(random_state)
    return int(np.random.SeedSequence([int(random_state) & 0xFFFFFFFF, int(worker_id) & 0xFFFFFFFF]).generate_state(1)[0])


def _retrying(what: str, url: str, action, attempts: int = 8):
    """Run ``action()``, retrying the races of workers that create one database at once."""
    import sqlalchemy.exc

    for attempt in range(attempts):
        try:
            return action()
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError) as exc:
            if attempt == attempts - 1:
                from perfml._secrets import mask_credentials

                raise StudyError(
                    f"could not {what} in {mask_credentials(url)} after {attempts} attempts ({str(exc).splitlines()[0]}); "
                    "check that the storage is writable and not locked by another program"
                ) from exc
            time.sleep(0.05 * (attempt + 1) + random.random() * 0.1)


def make_storage(url: str, *, heartbeat_interval: int = 30, grace_period: int | None = None,
                 lock_timeout: float = 60.0, max_retry: int | None = 3):
    """An Optuna RDB storage for workers that share a study.

    Parameters
    ----------
    url : str
        SQLAlchemy URL (``sqlite:///path/optuna.db``, ``postgresql://...``).
    heartbeat_interval : int
        Seconds between the heartbeats a running trial records.
    grace_period : int, optional
        A running trial whose last heartbeat is older than this is marked FAILED
        (default: twice ``heartbeat_interval``).
    lock_timeout : float
        Seconds a SQLite connection waits for a lock held by another worker.
    max_retry : int or None
        How often the parameters of a trial whose worker died are tried again.
    """
    import optuna
    from optuna import storages

    from perfml._mlflow import local_store_path, refuse_nul

    refuse_nul(url, "--storage", StudyError, "give a file (sqlite:///optuna.db) or a server URL")
    if url.startswith("sqlite:") and local_store_path(url) is None:  # the rule the tracking URIs follow
        raise StudyError(f"--storage {url} is an in-memory SQLite database: it keeps no study and no other worker can "
                         "share it; give a file (sqlite:///optuna.db) or a server URL")
    if url.startswith("sqlite:"):
        folder = Path(local_store_path(url)).parent
        if not folder.is_dir():
            raise StudyError(f"the folder {folder} of the study database {url} does not exist; create it or pass another --storage")
        _check_sqlite_is_optunas(Path(local_store_path(url)), url)
    else:
        _check_database_is_optunas(url)
    retry_cls = getattr(storages, "RetryHeartbeatStaleTrialCallback", None) or storages.RetryFailedTrialCallback
    params = inspect.signature(storages.RDBStorage).parameters
    callback_arg = "heartbeat_stale_trial_callback" if "heartbeat_stale_trial_callback" in params else "failed_trial_callback"
    engine_kwargs = {"connect_args": {"timeout": lock_timeout}} if url.startswith("sqlite") else {"pool_pre_ping": True}

    def build():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.simplefilter("ignore", FutureWarning)
            try:
                return storages.RDBStorage(
                    url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval,
                    grace_period=grace_period or 2 * heartbeat_interval, **{callback_arg: retry_cls(max_retry=max_retry)},
                )
            except ImportError as exc:  # SQLAlchemy has no driver module for the URL's database
                from perfml._secrets import mask_credentials

                raise StudyError(
                    f"--storage {mask_credentials(url)}: the Python driver for this database is not installed "
                    f"({mask_credentials(str(exc).splitlines()[0])}); install it (e.g. psycopg for postgresql, "
                    "pymysql for mysql+pymysql) or use sqlite:///optuna.db") from None

    return _retrying("create the study database", url, build)


#: tables of an Optuna RDB storage (any of them marks the file as Optuna's)
_OPTUNA_TABLES = frozenset({"studies", "trials", "version_info", "study_directions"})


def _check_sqlite_is_optunas(path: Path, url: str) -> None:
    """Refuse a SQLite file that holds another program's tables (an MLflow store, say).

    Optuna creates its tables in any database it is given: ``--storage sqlite:///mlflow.db``
    (an easy slip) added a dozen tables to the MLflow store and then failed with an internal
    error; another application's file got them silently. A new or empty file, or Optuna's
    own, is used.
    """
    from perfml._mlflow import sqlite_tables

    if path.is_dir():
        raise StudyError(f"--storage {url} names a folder, {path}; give a file (sqlite:///{path}/optuna.db)")
    if not path.is_file() or path.stat().st_size == 0:
        return
    tables = sqlite_tables(str(path))
    if tables is None:
        raise StudyError(f"--storage {url}: {path} is not a SQLite database; give an Optuna study database "
                         "or a new file")
    _refuse_unless_optunas(tables, f"--storage {url}: {path}", "give a file of its own, e.g. sqlite:///optuna.db")


def _refuse_unless_optunas(tables: set[str], subject: str, advice: str) -> None:
    """Raise :class:`StudyError` if ``tables`` (of a database that holds some) are not Optuna's."""
    from perfml._mlflow import MLFLOW_TABLES

    if tables and not tables & _OPTUNA_TABLES:
        whose = "an MLflow tracking store" if MLFLOW_TABLES - {"alembic_version"} <= tables else "another program's database"
        raise StudyError(f"{subject} is {whose} (tables {', '.join(sorted(tables)[:6])}); Optuna would add its tables "
                         f"to it: {advice}")


def _check_database_is_optunas(url: str) -> None:
    """:func:`_check_sqlite_is_optunas` for a database server (``postgresql://...``): Optuna added
    its tables to the MLflow database it was pointed at, then failed with an internal error."""
    from perfml._mlflow import database_tables

    _refuse_unless_optunas(database_tables(url, StudyError, "--storage"), f"--storage {url}",
                           "give a database of its own (the lab setup's perfml_optuna)")


def claim_worker_id(storage, study_name: str, worker_id: int | None = None, *, url: str | None = None) -> int:
    """Create ``study_name`` in ``storage`` if it is not there, and return the id that seeds this
    worker's sampler (:func:`worker_seed`): ``worker_id`` when given, else 0 for the process
    that created the study and the process id for every other one (a resumed study, a second
    host or a second ``--n-workers`` run draws new parameters, not the first run's again).
    """
    import optuna

    url = url or str(getattr(storage, "url", "memory"))  # for messages (get_storage's cache wrapper has none)
    storage = optuna.storages.get_storage(storage)

    def create() -> bool:
        try:
            storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], study_name)
            return True
        except optuna.exceptions.DuplicatedStudyError:
            return False

    created = _retrying(f"create the study {study_name!r}", url, create)
    if worker_id is not None:
        return worker_id
    return 0 if created else os.getpid()


def open_study(storage, study_name: str, *, random_state: int = 0, worker_id: int | None = None, pruner=None):
    """Create ``study_name`` in ``storage``, or load it when another worker created it first.

    The sampler is TPE seeded by :func:`worker_seed`: with ``worker_id`` None, worker 0
    is the process that created the study and every other worker uses its process id.
    ``storage`` is None (in memory), a URL (made by :func:`make_storage`) or a storage.
    """
    import optuna

    if isinstance(storage, str):
        storage = make_storage(storage)
    url = str(getattr(storage, "url", "memory"))
    storage = optuna.storages.get_storage(storage)  # once: get_storage(None) is a new in-memory storage each time
    worker = claim_worker_id(storage, study_name, worker_id, url=url)
    study = optuna.load_study(
        study_name=study_name, storage=storage,
        sampler=optuna.samplers.TPESampler(seed=worker_seed(random_state, worker)),
        pruner=pruner or optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0),
    )
    if study.directions != [optuna.study.StudyDirection.MINIMIZE]:
        from perfml._secrets import mask_credentials

        what = ("maximizes" if study.directions == [optuna.study.StudyDirection.MAXIMIZE]
                else f"has {len(study.directions)} objectives")  # study.direction raised RuntimeError (internal error)
        raise StudyError(f"study {study_name!r} in {mask_credentials(url)} {what}; perfml minimizes one objective, "
                         "MAPE: choose another --study-name")
    return study


#: the study's user attribute holding what it tunes (learner, target, data selection)
STUDY_CONTEXT_ATTR = "perfml_context"


#: context keys studies created before them lack (``data``: the digest of the tuned rows)
LATER_CONTEXT_KEYS = frozenset({"data"})


def bind_study(study, context: dict) -> None:
    """Record ``context`` in a new study, or refuse a study created for another one.

    Resuming a study with another learner mixed two search spaces in one TPE model and
    reported one learner's parameters as the best of another (``perfml tune --learner hgb``
    on an xgboost study). Studies created before the context was recorded take it on first use.
    """
    context = {k: (None if v is None else str(v)) for k, v in context.items()}
    recorded = study.user_attrs.get(STUDY_CONTEXT_ATTR)
    if recorded is None:
        _check_trials_are_perfmls(study, context.get("learner"))
        study.set_user_attr(STUDY_CONTEXT_ATTR, context)
        return
    # a key added to the context later (data) is compared only where the study recorded it
    differ = {k: (recorded.get(k), v) for k, v in context.items()
              if (k in recorded or k not in LATER_CONTEXT_KEYS) and recorded.get(k) != v}
    if differ:
        what = "; ".join(f"{k}: the study's {a!r}, this run's {b!r}" for k, (a, b) in differ.items())
        raise StudyError(f"study {study.study_name!r} was created to tune another configuration ({what}); "
                         "resume it with the same options, or name another --study")


def _check_trials_are_perfmls(study, learner: str | None) -> None:
    """A study without perfml's context is taken only if its trials drew ``learner``'s parameters.

    A study another program created was taken over: its parameter ``x`` came back as the svr
    learner's best ("MAPE 0.12 %"), or a clash of distributions wrote a failed trial into it.
    """
    space = SEARCH_SPACES.get(str(learner), {})
    foreign = sorted({name for trial in study.get_trials(deepcopy=False) for name in trial.params if name not in space})
    if foreign:
        raise StudyError(f"study {study.study_name!r} was not created by perfml tune: its trials draw "
                         f"{', '.join(foreign[:6])}, no parameter of the {learner} learner "
                         f"({', '.join(space) or 'none'}); name another --study (perfml leaves this one as it is)")


def tune(
    estimator,
    X: pd.DataFrame,
    y,
    *,
    n_trials: int = 20,
    n_splits: int = 3,
    storage: str | None = None,
    study_name: str = "perfml",
    random_state: int = 0,
    mlflow_tracking_uri: str | None = None,
    timeout: float | None = None,
    worker_id: int | None = None,
    progress=None,
    context: dict | None = None,
    total: bool = False,
):
    """Tune ``estimator`` (a :class:`~perfml.learned.RuntimeRegressor`) and return the study.

    The objective is the MAPE of out-of-fold predictions, folds grouped by board. With
    ``mlflow_tracking_uri`` (or ``"default"`` for MLflow's default store) every trial is
    recorded through ``optuna_integration.MLflowCallback``.

    ``storage`` is a URL (see :func:`make_storage`), an Optuna storage or None (in
    memory); ``worker_id`` seeds this worker's sampler (see :func:`open_study`);
    ``progress(message)`` is called after every trial. ``context`` (e.g. the data
    selection) joins the learner and target in the study's identity (:func:`bind_study`):
    a study created for one is refused for another.

    ``n_trials`` is the number of trials this call runs (``perfml tune``: this worker's), or
    with ``total`` the number of trials that ran to a result (complete or pruned) the study
    holds when the call returns: only the missing ones run, none in a study that has them
    (an experiment's ``tune.n_trials``, whose figures must not depend on how often the file
    ran against its ``--storage``).
    """
    import optuna

    y = np.asarray(y, dtype=float)
    groups = X["board"].to_numpy()
    folds = list(GroupKFold(n_splits=min(n_splits, len(np.unique(groups)))).split(X, y, groups))
    learner = estimator.learner

    def objective(trial):
        params = suggest(trial, learner)
        errors, n = [], 0
        for i, (train, test) in enumerate(folds):
            model = clone(estimator).set_params(learner_params=params).fit(X.iloc[train], y[train])
            pred = model.predict(X.iloc[test])
            errors.append(mape(pred, y[test]) * len(test))
            n += len(test)
            trial.report(sum(errors) / n, step=i)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return sum(errors) / n

    study = open_study(storage, study_name, random_state=random_state, worker_id=worker_id)
    bind_study(study, {"learner": learner, "target": getattr(estimator, "target", None), **(context or {})})
    callbacks = []
    if mlflow_tracking_uri is not None:
        from optuna_integration.mlflow import MLflowCallback

        from perfml._mlflow import check_reachable, configure_http, tracking_uri

        configure_http()
        uri = None if mlflow_tracking_uri == "default" else mlflow_tracking_uri
        check_reachable(uri or tracking_uri())
        callbacks.append(MLflowCallback(tracking_uri=uri, metric_name="cv_mape", mlflow_kwargs={"nested": True}))
    if progress is not None:
        def report_progress(study, trial) -> None:
            done = [t.value for t in study.trials if t.state.name == "COMPLETE" and t.value is not None]
            best = f"; best {min(done):.2f}%" if done else ""
            progress(f"trial {trial.number} {trial.state.name.lower()}{best}")

        callbacks.append(report_progress)
    if total:  # failed trials (an error, a dead worker) are not counted: they are run again
        done = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        n_trials -= len(study.get_trials(deepcopy=False, states=done))
        if n_trials <= 0:
            return study
    with _failed_trials_without_traceback():
        study.optimize(objective, n_trials=n_trials, timeout=timeout, callbacks=callbacks, gc_after_trial=True)
    return study


class _NoTraceback(logging.Filter):
    """Drops the traceback Optuna attaches to its "Trial N failed" warning; keeps the line."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


@contextlib.contextmanager
def _failed_trials_without_traceback():
    """While Optuna optimizes, its warning about a failed trial comes without a traceback.

    Optuna logs the traceback of whatever stopped a trial (Ctrl-C included) and then
    re-raises it; perfml reports that error itself (``perfml tune``: ``interrupted``, or
    the typed error's message), so the traceback only buried the message.
    """
    # on the handlers: a logger's own filters do not see the records of its children
    # (Optuna logs from optuna.study._optimize through the handler of "optuna")
    handlers = list(logging.getLogger("optuna").handlers)
    quiet = _NoTraceback()
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)
