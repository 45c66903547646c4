"""A regressor that tunes its own hyper-parameters on the data it is fitted on.

Wrapping the learned regressor this way makes tuning *nested* under any evaluation
protocol: in leave-one-board-out, each outer fold tunes on its training boards only
(inner folds grouped by board), so the held-out board never influences the choice.
"""

from __future__ import annotations

import hashlib

from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted


class TunedRegressor(RegressorMixin, BaseEstimator):
    """Tune ``estimator``'s ``learner_params`` with Optuna in ``fit``, then refit the best.

    Parameters
    ----------
    estimator : RuntimeRegressor
    n_trials : int
        Trials (complete or pruned) the study holds after ``fit``: a fit that resumes a study
        runs only the missing ones, and none in a study that has them, so that a re-run with
        the same ``storage`` gives the first run's parameters and figures (each re-run of an
        experiment added ``n_trials`` more, seeded by its process id: in a helper's probe one
        file gave 56.28 %, then 53.61 % against one storage).
    n_splits : int
        Inner GroupKFold splits (grouped by board).
    storage : str, optional
        Optuna RDB storage URL (default: in-memory).
    study_prefix : str
        Study names are ``<prefix>-<hash of the training rows and the estimator's
        configuration>``, so a re-run with the same storage resumes the same studies, and
        another experiment's rows or another configuration (baseline, features, fixed
        parameters) never resumes them (the name hashed only the boards and the row count:
        two apps of as many rows on the same boards shared a study, and one's best
        parameters were chosen on the other's data). The study records both digests
        (:func:`perfml.learned.tuning.bind_study`).
    random_state : int
    mlflow_tracking_uri : str, optional
        Record every trial in MLflow (``"default"`` for MLflow's default store).

    Attributes
    ----------
    best_params_ : dict
    best_value_ : float
        Inner cross-validated MAPE of the best trial.
    estimator_ : RuntimeRegressor
        Refitted on all the rows given to ``fit``.
    """

    def __init__(self, estimator=None, *, n_trials: int = 10, n_splits: int = 3, storage=None,
                 study_prefix: str = "perfml", random_state: int = 0, mlflow_tracking_uri=None):
        self.estimator = estimator
        self.n_trials = n_trials
        self.n_splits = n_splits
        self.storage = storage
        self.study_prefix = study_prefix
        self.random_state = random_state
        self.mlflow_tracking_uri = mlflow_tracking_uri

    def fit(self, X, y):
        """Tune on (X, y) with inner folds grouped by board, then refit the best parameters on all rows."""
        from perfml.closed_form._inputs import check_frame, check_target
        from perfml.closed_form._params import check_positive_int
        from perfml.errors import EstimatorParameterError
        from perfml.learned.tuning import tune

        if self.estimator is None or not hasattr(self.estimator, "set_params"):
            raise EstimatorParameterError(f"TunedRegressor: estimator must be a RuntimeRegressor, got {self.estimator!r}")
        check_positive_int("TunedRegressor", "n_trials", self.n_trials)
        check_positive_int("TunedRegressor", "n_splits", self.n_splits, minimum=2)
        X = check_frame(X, ("board", "app_id", "input_size"), "TunedRegressor")
        check_target(y, len(X), "TunedRegressor")

        data, config = data_digest(X, y), _config_digest(self.estimator)
        study = tune(
            self.estimator, X, y, n_trials=self.n_trials, n_splits=self.n_splits, storage=self.storage,
            study_name=f"{self.study_prefix}-{hashlib.sha1(f'{data}|{config}'.encode()).hexdigest()[:10]}",
            random_state=self.random_state, mlflow_tracking_uri=self.mlflow_tracking_uri,
            context={"data": data, "estimator": config}, total=True,
        )
        self.best_params_ = dict(study.best_params)
        self.best_value_ = float(study.best_value)
        self.estimator_ = clone(self.estimator).set_params(learner_params=self.best_params_).fit(X, y)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Predicted runtime (ms) of the refitted best estimator."""
        check_is_fitted(self, "estimator_")
        return self.estimator_.predict(X)


def data_digest(X, y) -> str:
    """sha1 of the rows' identity (board, kernel, size, launch) and measured times, in order."""
    import numpy as np
    import pandas as pd

    columns = [c for c in ("board", "app_id", "op", "input_size", "input_size_2", "block_x", "block_y", "grid_x",
                           "grid_y", "B", "M", "N", "K", "H") if c in X.columns]
    rows = pd.util.hash_pandas_object(X[columns].astype(str), index=False).to_numpy()
    digest = hashlib.sha1(rows.tobytes())
    digest.update(np.asarray(y, dtype=float).tobytes())
    return digest.hexdigest()[:16]


def _config_digest(estimator) -> str:
    """sha1 of the estimator's parameters other than the tuned ``learner_params`` (the data home aside)."""
    params = {k: v for k, v in estimator.get_params(deep=False).items()
              if k not in ("learner_params", "data_home", "registry", "n_jobs")}
    return hashlib.sha1(repr(sorted((k, repr(v)) for k, v in params.items())).encode()).hexdigest()[:16]
