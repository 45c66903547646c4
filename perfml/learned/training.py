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


def with_sweep_rows(rt: pd.DataFrame, sweeps=(), *, registry=None, allow_synthetic: bool = False) -> pd.DataFrame:
    """``rt`` plus the microbenchmark rows of recorded sweep result sets (issue 11 §2).

    Each set's rows (:func:`perfml.measure.runtime_rows.sweep_runtime_rows`: kernel name as
    ``app_id``, threads as ``input_size``, the sidecar's work in ``work_flops`` /
    ``work_dram_bytes``) are appended, so they enter training like any other kernel of
    their board.

    Raises
    ------
    SyntheticSweepError
        A set created as synthetic, unless ``allow_synthetic`` (tests).
    """
    from perfml.errors import SyntheticSweepError
    from perfml.measure.runtime_rows import sweep_runtime_rows

    parts = [rt]
    for path in sweeps:
        rows = sweep_runtime_rows(path, registry=registry)
        if not allow_synthetic and len(rows) and rows["synthetic"].any():
            raise SyntheticSweepError(
                f"sweep {path}: its timings are synthetic (made up by a test backend), not measurements; "
                "train only on sweeps recorded by `perfml sweep run` on a GPU"
            )
        parts.append(rows)
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else rt


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
