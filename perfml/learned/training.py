"""What ``perfml train`` fits: the default predictor on every kernel of runtimes.csv.gz, with intervals.

The training rows are every runtime of the data home's ``runtimes.csv.gz`` measured in the
default GPU configuration: the nine described applications (sources ``gpuperfpredict-nca``
and ``BSPGPU``) *and* the kernels without a description (source ``gpuperfpredict-rodinia``),
which the transfer baseline and the learned features handle (see
``experiments/rodinia_unseen_boards.toml``). ``source`` narrows the rows to one source.
The deep-learning operator corpus (``dlops_runtimes.csv.gz``) is not part of this model.
"""

from __future__ import annotations

import pandas as pd


def training_runtimes(data_home=None, source: str | None = None) -> pd.DataFrame:
    """Runtime rows (default GPU configuration) of every kernel, measured time in ``measured_ms``."""
    from perfml.datasets import load_runtimes
    from perfml.errors import PerfmlError

    rt = load_runtimes(data_home, source=source)
    rt = rt[rt["gpu_config"].fillna("default") == "default"]
    rt = rt.assign(measured_ms=rt["time_ms_mean"]).reset_index(drop=True)
    if rt.empty:
        raise PerfmlError(f"no runtimes of source {source!r} in the default GPU configuration; "
                          "choose a source of runtimes.csv.gz (`perfml data list`)")
    return rt


def fit_default(rt: pd.DataFrame, *, data_home=None, calibrate: bool = True, progress=None):
    """Fit the default regressor on ``rt``; with ``calibrate``, the interval calibration too.

    Returns
    -------
    model : RuntimeRegressor
    calibration : dict or None
        The manifest's ``intervals`` entry (:func:`perfml.learned.intervals.calibrate`) from
        leave-one-board-out out-of-fold predictions of ``rt``.
    oof : ndarray or None
        Those out-of-fold predictions (ms), aligned with ``rt``.
    """
    from perfml.learned.intervals import board_oof_predictions, calibrate as make_calibration, kernel_group, log_scores
    from perfml.learned.regressors import RuntimeRegressor

    y = rt["measured_ms"].to_numpy(dtype=float)
    model = RuntimeRegressor(learner="xgboost", target="residual", data_home=data_home).fit(rt, y)
    if not calibrate or rt["board"].nunique() < 3:
        return model, None, None
    oof = board_oof_predictions(model, rt, y, progress=progress)
    calibration = make_calibration(log_scores(oof, y), kernel_group(rt["app_id"]), rt["board"].to_numpy())
    return model, calibration, oof
