"""Saving and loading a trained predictor in a safe, versioned directory format.

A model directory holds:

* ``perfml-model.json``: format name and version, the regressor's parameters, the
  feature names, the training boards and apps, library versions;
* ``booster.json``: the xgboost booster in xgboost's own JSON format;
* ``features/*.parquet``: the fitted feature tables (cross-fitted offsets, registers,
  profile counters of the training boards).

Nothing is pickled, so loading a model directory never executes code from it. Only
the ``xgboost`` learner can be saved (scikit-learn estimators have no safe format).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from perfml.errors import ModelFormatError, ResultFileExistsError

FORMAT = "perfml-model"
VERSION = 1
_META = "perfml-model.json"
_BOOSTER = "booster.json"


def save_model(model, path, *, overwrite: bool = False, extra: dict | None = None) -> Path:
    """Write a fitted :class:`~perfml.learned.RuntimeRegressor` (xgboost learner) to ``path``.

    Raises
    ------
    ResultFileExistsError
        If ``path`` exists and ``overwrite`` is False.
    ModelFormatError
        If the model's learner cannot be saved safely.
    """
    import sklearn
    import xgboost

    from perfml import __version__

    path = Path(path)
    if model.learner != "xgboost":
        raise ModelFormatError(
            f"only xgboost models can be saved safely (got learner={model.learner!r}); train with learner='xgboost'"
        )
    if path.exists() and not overwrite:
        raise ResultFileExistsError(f"{path} exists; choose another --out directory or pass --overwrite to replace it")
    meta_features, tables = model.features_.get_state()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "regressor_params": model.get_params(deep=False) | {"data_home": None},
        "feature_names": list(model.feature_names_),
        "shrinkage": float(model.shrinkage_),
        "features": meta_features,
        "versions": {"perfml": __version__, "xgboost": xgboost.__version__, "scikit-learn": sklearn.__version__},
        **(extra or {}),
    }
    staging = Path(tempfile.mkdtemp(prefix=".perfml-model-", dir=path.parent if path.parent.exists() else None))
    try:
        model.model_.save_model(str(staging / _BOOSTER))
        (staging / "features").mkdir()
        for name, table in tables.items():
            table.to_parquet(staging / "features" / f"{name}.parquet", index=False)
        (staging / _META).write_text(json.dumps(meta, indent=2, default=str))
        os.chmod(staging, 0o755)  # mkdtemp creates it private
        if path.exists():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, path)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return path


def load_model(path, *, data_home=None):
    """Load a model directory written by :func:`save_model`.

    Raises
    ------
    ModelFormatError
        If the directory is missing, of another format or version, or incomplete.
    """
    from xgboost import XGBRegressor

    from perfml.learned.features import FeatureBuilder
    from perfml.learned.regressors import RuntimeRegressor

    path = Path(path)
    meta_path = path / _META
    if not meta_path.is_file():
        raise ModelFormatError(f"{path} is not a perfml model directory (no {_META}); train one with `perfml train --out DIR`")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"{meta_path} is not valid JSON ({exc.msg}); re-create the model with `perfml train`") from None
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ModelFormatError(
            f"{meta_path}: format {meta.get('format')!r} version {meta.get('version')!r} is not supported "
            f"(this perfml reads {FORMAT!r} version {VERSION}); re-train with this version"
        )
    booster = path / _BOOSTER
    if not booster.is_file():
        raise ModelFormatError(f"{path} lacks {_BOOSTER}; the directory is incomplete, re-create it with `perfml train`")
    tables = {p.stem: pd.read_parquet(p) for p in sorted((path / "features").glob("*.parquet"))}
    model = RuntimeRegressor(**{**meta["regressor_params"], "data_home": data_home})
    model.features_ = FeatureBuilder.from_state(meta["features"], tables, data_home=data_home)
    model.feature_names_ = list(meta["feature_names"])
    model.shrinkage_ = float(meta["shrinkage"])
    model.model_ = XGBRegressor()
    model.model_.load_model(str(booster))
    model.n_features_in_ = None
    model.metadata_ = meta
    return model
