"""Hyper-parameter tuning of the learned regressors with Optuna.

Each trial scores a parameter set with *group-aware* cross-validation on the training
rows (:class:`sklearn.model_selection.GroupKFold` over boards, so a fold never sees the
boards it is scored on), reports the running MAPE after every fold so that Optuna's
pruner can stop bad trials early, and is reproducible (TPE sampler with a fixed seed).
Studies live in an RDB storage: SQLite by default, any SQLAlchemy URL otherwise, so
several processes or hosts can work on one study.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

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
):
    """Tune ``estimator`` (a :class:`~perfml.learned.RuntimeRegressor`) and return the study.

    The objective is the MAPE of out-of-fold predictions, folds grouped by board. With
    ``mlflow_tracking_uri`` (or ``"default"`` for MLflow's default store) every trial is
    recorded through ``optuna_integration.MLflowCallback``.
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

    study = optuna.create_study(
        study_name=study_name,
        storage=storage,
        load_if_exists=True,
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=random_state),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0),
    )
    callbacks = []
    if mlflow_tracking_uri is not None:
        from optuna_integration.mlflow import MLflowCallback

        uri = None if mlflow_tracking_uri == "default" else mlflow_tracking_uri
        callbacks.append(MLflowCallback(tracking_uri=uri, metric_name="cv_mape", mlflow_kwargs={"nested": True}))
    study.optimize(objective, n_trials=n_trials, timeout=timeout, callbacks=callbacks, gc_after_trial=True)
    return study
