"""Saving and loading a fitted :class:`~perfml.learned.operators.OperatorRegressor` (a bundle's ``dlops`` sub-model).

The directory has the layout of a version-2 model directory (:mod:`perfml.learned.persistence`):

* ``perfml-model.json``: format ``perfml-model`` version 2, ``"estimator":
  "OperatorRegressor"``, its JSON-able parameters, the feature names, the training boards,
  the training ranges (:func:`perfml.learned.operator_queries.operator_training_ranges`),
  the interval calibration, library versions, the sha256 of every file and of itself;
* ``launch_floor`` (in the manifest): the operators' launch floors in ms learned from the
  training rows (:mod:`perfml.learned.operator_model._floor`), part of every base time of a
  spec-only model (``launch_floor`` true, ``characterization`` false);
* ``booster.json``: the xgboost booster in xgboost's own JSON format;
* ``features/transfer.parquet``: the transfer table (mean residual per call and training
  board), when the model has the transfer group;
* ``features/measured.parquet``: the measured time of every training call on each board
  that ran it (median log ms), which answers a query of that call on that board (a model
  saved before it has none, and answers such a query with the model);
* ``characterizations/NN.json``: a model fitted with a mapping of ``characterizations``
  (the calibrated tier, :data:`perfml.learned.tiers.CALIBRATED_TIER`) keeps each
  board's characterization in its own file format (``perfml characterize``'s JSON), the
  manifest's ``characterizations`` mapping each board to its file. At prediction time
  only the query board's characterization is read (the transfer table holds the training
  boards' residuals already); the files record what the model was trained with, and let a
  query on a training board without a target file use the one it was trained with. The
  optional ``calibration`` entry (``{"column": "op", "kernels": ["add"]}``) names the runs
  a target's ``--calibration`` file must hold.

Nothing is pickled. A model fitted with a callable ``characterizations`` or a custom
``registry`` cannot be saved (neither has a safe file form here): train it with the
defaults (the committed characterizations, the shipped registry) or a mapping.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from perfml.errors import ModelFormatError, PerfmlError
from perfml.learned.persistence import _RETRAIN, _bad

__all__ = ["load_operator_model", "write_operator_model_files"]

ESTIMATOR = "OperatorRegressor"
_BOOSTER = "booster.json"
_TRANSFER = "features/transfer.parquet"
#: the measured time of every training (call, board), median log ms (a model saved before it has none)
_MEASURED = "features/measured.parquet"
_PARAMS = ("characterization", "transfer", "tiles", "wave_base", "launch_floor", "board_identity", "monotone",
           "random_state", "n_jobs", "learner_params")
_REQUIRED = {"format": str, "version": int, "estimator": str, "created": str, "regressor_params": dict,
             "feature_names": list, "train_boards": list, "training": dict, "versions": dict, "files": dict,
             "manifest_sha256": str}


def write_operator_model_files(model, directory, *, extra: dict | None = None, training_rows=None) -> dict:
    """Write a fitted operator model into the existing, empty ``directory``; return its manifest.

    Raises
    ------
    ModelFormatError
        The model is not fitted, or was fitted with a registry or characterizations
        that have no safe file form.
    """
    import sklearn
    import xgboost

    from perfml import __version__
    from perfml.learned.operator_queries import operator_training_ranges
    from perfml.learned.persistence import FORMAT, VERSION, write_characterization_files, write_manifest

    if not hasattr(model, "model_"):
        raise ModelFormatError("the operator model is not fitted; fit it before saving")
    if model.registry is not None:
        raise ModelFormatError("an operator model fitted with an explicit registry cannot be saved safely; train it "
                               "with registry=None (the shipped registry)")
    if getattr(model, "no_transfer_model_", None) is not None:
        raise ModelFormatError("an operator model fitted with transfer='auto' that kept two boosters (the op classes "
                               "disagreed) has no file form yet; train it with transfer=True or transfer=False")
    directory = Path(directory)
    params = {k: getattr(model, k) for k in _PARAMS}
    params["board_identity"] = bool(model.board_identity_)  # "auto" as decided
    meta = {
        "format": FORMAT, "version": VERSION, "estimator": ESTIMATOR,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "regressor_params": params, "feature_names": list(model.feature_names_),
        "train_boards": list(model.train_boards_), "n_features_in": int(model.n_features_in_),
        "use_transfer": bool(model.use_transfer_),  # transfer="auto" decides it at fit time
        # the operators' launch floors learned from the training rows (part of every spec-only base time)
        **({"launch_floor": model.floor_.to_dict()} if getattr(model, "floor_", None) is not None else {}),
        "training": operator_training_ranges(training_rows) if training_rows is not None else {},
        "versions": {"perfml": __version__, "xgboost": xgboost.__version__, "scikit-learn": sklearn.__version__},
        **(extra or {}),
    }
    if model.characterizations is not None:  # one JSON file per board (a callable is refused there)
        meta["characterizations"] = write_characterization_files(directory, model.characterizations)
    booster = model.model_.get_booster().copy()
    booster.feature_names = None  # the manifest holds the names; xgboost refuses some characters
    booster.save_model(str(directory / _BOOSTER))
    for name, table in ((_TRANSFER, getattr(model.transfer_, "table_", None)),
                        (_MEASURED, getattr(getattr(model, "measured_", None), "table_", None))):
        if table is not None:
            (directory / "features").mkdir(exist_ok=True)
            frame = table.reset_index()
            frame.columns = ["key", *map(str, table.columns)]
            frame.to_parquet(directory / name, index=False)
    return write_manifest(directory, meta)


def load_operator_model(path, *, data_home=None):
    """Load an operator model directory written by :func:`write_operator_model_files`.

    Raises
    ------
    ModelFormatError
        Missing or changed files, a manifest that fails its schema or hash, or a booster
        that does not match the feature names.
    """
    from xgboost import XGBRegressor

    from perfml.learned.intervals import check_calibration
    from perfml.learned.operator_model._transfer import MeasuredCalls, TransferTable
    from perfml.learned.operators import OperatorRegressor
    from perfml.learned.persistence import (
        FORMAT,
        VERSION,
        check_required,
        read_calibration_entry,
        read_characterization_files,
        read_manifest_json,
        verify_tree,
    )

    path = Path(path)
    meta_path, meta = read_manifest_json(path)
    if meta.get("format") != FORMAT or meta.get("version") != VERSION or meta.get("estimator") != ESTIMATOR:
        raise _bad(meta_path, f"expected format {FORMAT!r} version {VERSION} of an {ESTIMATOR}")
    check_required(meta, meta_path, _REQUIRED)
    verify_tree(path, meta["files"])
    if _BOOSTER not in meta["files"]:
        raise ModelFormatError(f"{path} lacks {_BOOSTER}; {_RETRAIN}")
    names = meta["feature_names"]
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise _bad(meta_path, "'feature_names' must be a non-empty list of distinct non-empty strings")
    if meta.get("intervals") is not None:
        check_calibration(meta["intervals"], str(meta_path))
    params = meta["regressor_params"]
    unknown = sorted(set(params) - set(_PARAMS))
    if unknown:
        raise _bad(meta_path, f"regressor_params holds unknown parameter {unknown[0]!r}")
    missing = [k for k in _PARAMS if k not in params]
    if missing:  # a default changed since: rebuilding from today's defaults would build other features
        raise _bad(meta_path, f"regressor_params lacks {', '.join(missing)} (saved by an older perfml)")
    characterizations = read_characterization_files(path, meta, meta_path)
    read_calibration_entry(meta, meta_path)  # checked now, not at the first --calibration
    try:
        model = OperatorRegressor(**params, characterizations=characterizations, data_home=data_home)
        model._check_params()
    except PerfmlError as exc:
        raise _bad(meta_path, f"its parameters cannot rebuild the model ({exc})") from None
    except TypeError as exc:
        raise _bad(meta_path, f"its parameters cannot rebuild the model ({exc})") from None
    model.model_ = XGBRegressor()
    try:
        model.model_.load_model(str(path / _BOOSTER))
    except Exception as exc:  # xgboost.core.XGBoostError and friends
        raise ModelFormatError(f"{path / _BOOSTER} cannot be read by xgboost ({exc.__class__.__name__}); {_RETRAIN}") from None
    if model.model_.get_booster().num_features() != len(names):
        raise _bad(meta_path, f"lists {len(names)} features but the booster has {model.model_.get_booster().num_features()}")
    model.feature_names_ = list(names)
    model.train_boards_ = list(meta["train_boards"])
    model.n_features_in_ = int(meta.get("n_features_in", 0)) or None
    use_transfer = meta.get("use_transfer", params.get("transfer"))
    if not isinstance(use_transfer, bool):
        raise _bad(meta_path, f"'use_transfer' must be true or false, found {use_transfer!r}")
    model.use_transfer_ = use_transfer
    model.board_identity_ = bool(model.board_identity)
    model.board_identity_selection_ = None
    model.transfer_selection_ = model.transfer_classes_ = model.no_transfer_model_ = None
    model.floor_ = None
    if model.launch_floor and not model.characterization:
        from perfml.learned.operator_model._floor import LaunchFloor

        if "launch_floor" not in meta:
            raise _bad(meta_path, "has launch_floor set but no 'launch_floor' entry (the floors it was trained with)")
        model.floor_ = LaunchFloor.from_dict(meta["launch_floor"], str(meta_path))
    model.transfer_ = None
    if use_transfer:
        if _TRANSFER not in meta["files"]:
            raise ModelFormatError(f"{path / _TRANSFER} is missing from the model directory; {_RETRAIN}")
        model.transfer_ = TransferTable()
        model.transfer_.table_ = _read_call_table(path, _TRANSFER, meta_path)
    model.measured_ = None
    if _MEASURED in meta["files"]:
        model.measured_ = MeasuredCalls()
        model.measured_.table_ = _read_call_table(path, _MEASURED, meta_path)
    model.metadata_ = meta
    return model


def _read_call_table(path: Path, name: str, meta_path) -> pd.DataFrame:
    """A calls x boards table (``key`` column, then one column per board) of the model directory."""
    try:
        frame = pd.read_parquet(path / name)
    except Exception as exc:  # pyarrow raises several unrelated types on a bad file
        raise ModelFormatError(f"{path / name} cannot be read as Parquet ({exc.__class__.__name__}); {_RETRAIN}") from None
    if list(frame.columns[:1]) != ["key"]:
        raise _bad(meta_path, f"{name} must start with a 'key' column")
    table = frame.set_index("key")
    table.columns.name = "board"
    return table.astype(float)
