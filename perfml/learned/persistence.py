"""Saving and loading a trained predictor in a safe, versioned, checksummed directory.

A model directory holds:

* ``perfml-model.json`` (the manifest): format name and version, the regressor's
  parameters, the feature names, the shrinkage, the training boards, apps and input-size
  ranges, library versions, the sha256 of every other file of the directory, and
  ``manifest_sha256``, a hash of the manifest's own content;
* ``booster.json``: the xgboost booster in xgboost's own JSON format (with the feature
  names, checked against the manifest's at load);
* ``features/*.parquet``: the fitted feature tables (cross-fitted offsets, registers,
  profile counters of the training boards);
* optional extra files given at save time (e.g. ``MODEL_CARD.md``), hashed like the rest.

Nothing is pickled, so loading never executes code from the directory. Loading checks
the manifest's schema and values (types, ranges, required keys, format and version) and
every file's hash: a changed, missing or extra file is a
:class:`~perfml.errors.ModelFormatError` naming the file. Only the ``xgboost`` learner can
be saved (scikit-learn estimators have no safe format).

``--overwrite`` replaces only a directory that is a perfml model directory (its manifest
names this format and it holds no file perfml did not write); anything else is refused
(:mod:`perfml._safe_output`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from perfml._files import parse_table
from perfml.errors import ModelFormatError, PerfmlError

FORMAT = "perfml-model"
VERSION = 2
#: version of the multi-corpus bundle's top manifest (:mod:`perfml.learned.bundle`); its
#: sub-models are version-2 directories
BUNDLE_VERSION = 3
_META = "perfml-model.json"
_BOOSTER = "booster.json"
_FEATURES = "features"
_RETRAIN = "retrain it with `perfml train --out DIR` or restore the directory from a copy"
_REQUIRED = {
    "format": str, "version": int, "created": str, "regressor_params": dict, "feature_names": list,
    "shrinkage": float, "features": dict, "versions": dict, "training": dict, "files": dict, "manifest_sha256": str,
}


# -- hashing ---------------------------------------------------------------------------------
def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_digest(meta: dict) -> str:
    """sha256 of the manifest's canonical JSON, without the ``manifest_sha256`` key itself."""
    body = {k: v for k, v in meta.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, allow_nan=False, default=str).encode()).hexdigest()


def _directory_files(path: Path) -> tuple[list[str], list[str]]:
    """Relative paths of the regular files under ``path`` (manifest excluded), and of anything else."""
    files, odd = [], []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            odd.append(rel)
        elif p.is_file() and rel != _META:
            files.append(rel)
    return files, odd


def launch_extent(X: pd.DataFrame) -> pd.DataFrame:
    """Per row, the launch's ``threads_per_block`` and ``blocks`` (NaN where the row gives no launch)."""
    def product(columns):  # on arrays: a one-row query passes here too
        out = np.ones(len(X))
        given = np.zeros(len(X), dtype=bool)
        for c in columns:
            if c in X.columns:
                v = pd.to_numeric(X[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                given |= ~np.isnan(v)
                out *= np.where(np.isnan(v), 1.0, v)
        return np.where(given, out, np.nan)

    return pd.DataFrame({"threads_per_block": product(("block_x", "block_y", "block_z")),
                         "blocks": product(("grid_x", "grid_y", "grid_z"))}, index=X.index)


def training_ranges(X: pd.DataFrame) -> dict:
    """What the training rows cover: boards, apps, the input-size range per app and, where
    the rows give launches, the range of threads per block and of blocks per app.

    Saved in the manifest so that :mod:`perfml.learned.queries` can flag queries beyond
    the training range (``extrapolated`` column) instead of answering with false confidence.
    A launch matters as much as the size: a kernel known only from measurements is
    predicted from its training launches, and a grid 10^5 times larger was answered with
    a year's runtime and no flag. Where the rows carry their times (``measured_ms``), the
    fastest of them is kept too (``min_time_ms``): the least a query is predicted at.
    """
    sizes = pd.to_numeric(X["input_size"], errors="coerce")
    apps = X["app_id"].astype(str)
    per_app = {str(app): [float(s.min()), float(s.max())] for app, s in sizes.groupby(apps)}
    launch: dict = {}
    extent = launch_extent(X)
    for column in extent.columns:
        for app, v in extent[column].groupby(apps):
            v = v.dropna()
            if len(v):
                launch.setdefault(str(app), {})[column] = [float(v.min()), float(v.max())]
    out = {"rows": int(len(X)), "boards": sorted(map(str, X["board"].unique())),
           "apps": sorted(per_app), "input_size": per_app, "launch": launch}
    if "measured_ms" in X.columns:  # the fastest call: the floor of every query (perfml.learned.queries.call_floor_ms)
        times = pd.to_numeric(X["measured_ms"], errors="coerce").to_numpy(dtype=float)
        times = times[np.isfinite(times) & (times > 0)]
        if times.size:
            out["min_time_ms"] = float(times.min())
    return out


# -- saving ----------------------------------------------------------------------------------
def save_model(model, path, *, overwrite: bool = False, extra: dict | None = None, training_rows=None,
               extra_files: dict[str, str] | None = None) -> Path:
    """Write a fitted :class:`~perfml.learned.RuntimeRegressor` (xgboost learner) to ``path``.

    Parameters
    ----------
    model : RuntimeRegressor
        Fitted, with ``learner="xgboost"``.
    path : path-like
        The model directory to create.
    overwrite : bool
        Replace ``path`` if it is a perfml model directory (never anything else).
    extra : dict, optional
        JSON-able entries added to the manifest (e.g. the training source).
    training_rows : DataFrame, optional
        The rows the model was fitted on; their boards, apps and input-size ranges are
        recorded (:func:`training_ranges`). Without them every prediction is flagged as
        extrapolated (the range is unknown).
    extra_files : dict of str to str, optional
        Text files written beside the model (``{"MODEL_CARD.md": text}``), hashed too.

    Raises
    ------
    ResultFileExistsError
        If ``path`` exists and ``overwrite`` is False.
    UnsafeOutputError
        If ``path`` exists and is not a perfml model directory.
    ModelFormatError
        If the model's learner cannot be saved safely.
    """
    from perfml._safe_output import make_staging_directory, replace_directory

    path = Path(path)
    if model.learner != "xgboost":
        raise ModelFormatError(
            f"only xgboost models can be saved safely (got learner={model.learner!r}); train with learner='xgboost'"
        )
    if not hasattr(model, "model_"):  # an unfitted model failed mid-write, blamed on the disk
        raise ModelFormatError(f"{type(model).__name__} is not fitted: nothing to save to {path}; call fit(X, y) first")
    reserved = {_META, _BOOSTER}
    for name in extra_files or {}:
        if name in reserved or "/" in name or name.startswith(".") or not name:
            raise ModelFormatError(f"extra file name {name!r} is not allowed; use a plain file name other than {sorted(reserved)}")
    # Refuse early (before the costly writes) what replace_directory would refuse anyway.
    replace_directory_check(path, overwrite=overwrite)
    staging = make_staging_directory(path)
    try:
        write_model_files(model, staging, extra=extra, training_rows=training_rows, extra_files=extra_files)
    except BaseException as exc:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError) or (isinstance(exc, Exception) and not isinstance(exc, PerfmlError)):
            # disk full, read-only file system; xgboost and pyarrow wrap these in their own types
            from perfml.errors import OutputWriteError

            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc.__class__.__name__
            raise OutputWriteError(f"cannot write the model to {path} ({reason}); nothing was written: "
                                   "free space or choose another --out") from None
        raise
    return replace_directory(staging, path, overwrite=overwrite, is_own=why_not_model_directory, what="perfml model directory")


def write_model_files(model, directory, *, extra: dict | None = None, training_rows=None,
                      extra_files: dict[str, str] | None = None) -> dict:
    """Write the files of a version-2 model directory into the existing, empty ``directory``.

    The parts of :func:`save_model` that do not stage or replace: the booster, the
    feature tables, the extra files and the manifest (returned). Used by
    :func:`save_model` and by the multi-corpus bundle (:mod:`perfml.learned.bundle`), whose
    sub-models are such directories.
    """
    import sklearn
    import xgboost

    from perfml import __version__

    if model.learner != "xgboost":
        raise ModelFormatError(
            f"only xgboost models can be saved safely (got learner={model.learner!r}); train with learner='xgboost'"
        )
    staging = Path(directory)
    meta_features, tables = model.features_.get_state()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        # characterizations go to files of their own (below), never into the JSON of the parameters
        "regressor_params": model.get_params(deep=False) | {"data_home": None, "characterizations": None},
        "feature_names": list(model.feature_names_),
        "shrinkage": float(model.shrinkage_),
        "features": meta_features,
        "versions": {"perfml": __version__, "xgboost": xgboost.__version__, "scikit-learn": sklearn.__version__},
        "training": training_ranges(training_rows) if training_rows is not None else {},
        **(extra or {}),
    }
    booster = model.model_.get_booster().copy()
    try:  # recorded in booster.json, checked against the manifest at load
        booster.feature_names = list(model.feature_names_)
    except ValueError:  # a name xgboost does not accept ('[', ']', '<'): the manifest hash still guards the order
        booster.feature_names = None
    booster.save_model(str(staging / _BOOSTER))
    (staging / _FEATURES).mkdir()
    for name, table in tables.items():
        table.to_parquet(staging / _FEATURES / f"{name}.parquet", index=False)
    for name, text in (extra_files or {}).items():
        (staging / name).write_text(text)
    if model.characterizations is not None:
        meta["characterizations"] = write_characterization_files(staging, model.characterizations)
    return write_manifest(staging, meta)


def write_manifest(directory, meta: dict) -> dict:
    """Record the sha256 of every file of ``directory`` in ``meta`` and write the manifest.

    Used by :func:`save_model` on a freshly written directory; returns the manifest written.
    """
    directory = Path(directory)
    files, odd = _directory_files(directory)
    if odd:
        raise ModelFormatError(f"{directory / odd[0]} is not a regular file; a model directory holds regular files only")
    meta = {**meta, "files": {rel: _sha256_file(directory / rel) for rel in files}}
    meta.pop("manifest_sha256", None)
    meta["manifest_sha256"] = _manifest_digest(meta)
    (directory / _META).write_text(json.dumps(meta, indent=2, allow_nan=False, default=str) + "\n")
    return meta


def replace_directory_check(path: Path, *, overwrite: bool) -> None:
    """Raise now if :func:`save_model` could not replace ``path`` (see :func:`why_not_model_directory`)."""
    import os
    import stat

    from perfml._safe_output import _protected
    from perfml.errors import ResultFileExistsError, UnsafeOutputError

    if not os.path.lexists(path):
        for parent in path.absolute().parents:
            if os.path.lexists(parent):
                if not parent.is_dir():
                    raise UnsafeOutputError(f"{parent} is not a directory, so {path} cannot be created; choose another --out")
                _check_writable(parent, path)
                break
        return
    _check_writable(path.absolute().parent, path)
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
        raise UnsafeOutputError(f"{path} is {'a symbolic link' if stat.S_ISLNK(mode) else 'not a directory'}; "
                                "perfml replaces only a perfml model directory: choose another --out")
    if not overwrite:
        raise ResultFileExistsError(f"{path} exists; choose another --out directory or pass --overwrite to replace it")
    why = _protected(path) or why_not_model_directory(path)
    if why:
        raise UnsafeOutputError(f"refusing to replace {path}: it is not a perfml model directory ({why}); "
                                "--overwrite replaces only a model directory perfml wrote: choose another --out")


def _check_writable(folder: Path, path: Path) -> None:
    """Raise now if no directory can be created in ``folder`` (read-only, no permission).

    Tried, not asked (``os.access`` says yes to root, and not to a read-only mount): a
    ``train --out`` in a read-only folder failed only after the whole training.
    """
    import tempfile

    from perfml.errors import UnsafeOutputError

    try:
        probe = tempfile.mkdtemp(prefix=".perfml-write-check-", dir=folder)
    except OSError as exc:
        raise UnsafeOutputError(f"{path} cannot be written: no directory can be created in {folder} "
                                f"({exc.strerror}); choose another --out") from None
    os.rmdir(probe)


def why_not_model_directory(path) -> str | None:
    """None if ``path`` is a perfml model directory that may be replaced, else why not.

    A model directory has a manifest naming format ``perfml-model`` and holds only the
    files its manifest lists (version 1 directories: the booster, the manifest and
    ``features/*.parquet``), so replacing it destroys nothing perfml did not write.
    """
    path = Path(path)
    meta_path = path / _META
    if meta_path.is_symlink() or not meta_path.is_file():
        return f"it has no {_META}"
    try:
        meta = parse_table(meta_path.read_text(encoding="utf-8"), meta_path, "json", "perfml-model manifest", ModelFormatError,
                           non_finite=True)
    except (OSError, UnicodeDecodeError, ModelFormatError):
        return f"its {_META} is not valid JSON"
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return f"its {_META} does not name format {FORMAT!r}"
    files, odd = _directory_files(path)
    if odd:
        return f"it holds {odd[0]}, which is not a regular file"
    if meta.get("version") == 1:
        known = {_BOOSTER} | {f for f in files if f.startswith(f"{_FEATURES}/") and f.endswith(".parquet")}
    else:
        known = set(meta.get("files") or {}) if isinstance(meta.get("files"), dict) else set()
    foreign = [f for f in files if f not in known]
    if foreign:
        return f"it holds {foreign[0]}, which perfml did not write"
    return None


# -- loading ---------------------------------------------------------------------------------
def _non_finite(obj, key="manifest"):
    """(key, value) of the first NaN or infinity in a parsed JSON document, else None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return key, obj
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        found = _non_finite(v, k if isinstance(obj, dict) and key == "manifest" else f"{key}.{k}")
        if found is not None:
            return found
    return None


def _bad(meta_path: Path, what: str) -> ModelFormatError:
    return ModelFormatError(f"{meta_path}: {what}; {_RETRAIN}")


def read_manifest_json(path) -> tuple[Path, dict]:
    """``(manifest path, parsed manifest)`` of the model directory ``path``, unchecked but for its form.

    Used by every kind of model directory (one model, operator model, bundle).

    Raises
    ------
    ModelFormatError
        No manifest, not UTF-8, not JSON, not a JSON object, or a NaN / infinity in it.
    """
    path = Path(path)
    meta_path = path / _META
    if not path.exists():
        raise ModelFormatError(f"{path} does not exist; give a model directory written by `perfml train --out DIR` "
                               "(perfml ships models/default)")
    if not meta_path.is_file():
        raise ModelFormatError(f"{path} is not a perfml model directory (no {_META}); train one with `perfml train --out DIR`")
    try:
        text = meta_path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _bad(meta_path, "is not UTF-8 text") from None
    try:
        meta = parse_table(text, meta_path, "json", "perfml-model manifest", ModelFormatError,
                           non_finite=True)  # _non_finite below names the field
    except ModelFormatError as exc:
        raise ModelFormatError(f"{exc}; or re-create the model with `perfml train`") from None
    where = _non_finite(meta)
    if where is not None:
        raise _bad(meta_path, f"{where[0]!r} holds {where[1]!r}, not a finite number")
    return meta_path, meta


def check_required(meta: dict, meta_path: Path, required: dict) -> None:
    """The keys and types of ``required`` (``{key: type}``), the manifest's own digest, and paths inside the directory.

    Raises
    ------
    ModelFormatError
        Naming the key and what is expected.
    """
    for key, kind in required.items():
        if key not in meta:
            raise _bad(meta_path, f"required key {key!r} is missing")
        value = meta[key]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise _bad(meta_path, f"{key!r} must be a {kind.__name__}, found {type(value).__name__} {value!r:.60}")
    if meta["manifest_sha256"] != _manifest_digest(meta):
        raise _bad(meta_path, "the manifest was changed after saving (manifest_sha256 does not match its content)")
    for rel, digest in meta["files"].items():
        if not (isinstance(rel, str) and isinstance(digest, str) and len(digest) == 64):
            raise _bad(meta_path, f"files[{rel!r}] must map a relative path to a sha256 hex digest")
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise _bad(meta_path, f"files[{rel!r}] is not a path inside the model directory")


def check_manifest(meta, meta_path: Path) -> dict:
    """Check the manifest's schema and values; return it.

    Raises
    ------
    ModelFormatError
        Naming the key and what is expected.
    """
    from perfml.learned.regressors import TARGETS

    if not isinstance(meta, dict):
        raise _bad(meta_path, f"expected a JSON object, found {type(meta).__name__}")
    if meta.get("format") == FORMAT and meta.get("version") == BUNDLE_VERSION:
        raise ModelFormatError(
            f"{meta_path}: a multi-corpus model bundle (version {BUNDLE_VERSION}), not a single model; load it with "
            "perfml.learned.bundle.load_predictor (as `perfml predict` does)"
        )
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ModelFormatError(
            f"{meta_path}: format {meta.get('format')!r} version {meta.get('version')!r} is not supported "
            f"(this perfml reads {FORMAT!r} version {VERSION}); re-train with this version"
        )
    check_required(meta, meta_path, _REQUIRED)
    shrink = meta["shrinkage"]
    if not (math.isfinite(shrink) and 0.0 <= shrink <= 1.0):
        raise _bad(meta_path, f"'shrinkage' must be a finite number in [0, 1], found {shrink!r}")
    params = meta["regressor_params"]
    if params.get("learner") != "xgboost":
        raise _bad(meta_path, f"regressor_params.learner must be 'xgboost', found {params.get('learner')!r}")
    if params.get("target") not in TARGETS:
        raise _bad(meta_path, f"regressor_params.target must be one of {TARGETS}, found {params.get('target')!r}")
    names = meta["feature_names"]
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise _bad(meta_path, "'feature_names' must be a non-empty list of distinct non-empty strings")
    built = meta["features"].get("feature_names")  # the feature builder's own list, when its state records one
    if isinstance(built, list) and [n for n in built if n in set(names)] != names:
        raise _bad(meta_path, "'feature_names' are not the features' own names in their order (shuffled or edited)")
    ranges = meta["training"].get("input_size", {})
    if not isinstance(ranges, dict) or not all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in v)
        and v[0] <= v[1] for v in ranges.values()
    ):
        raise _bad(meta_path, "training.input_size must map each app to [min, max], finite and positive")
    fastest = meta["training"].get("min_time_ms", 1.0)  # absent in models saved before it was recorded
    if not (isinstance(fastest, (int, float)) and not isinstance(fastest, bool) and math.isfinite(fastest) and fastest > 0):
        raise _bad(meta_path, f"training.min_time_ms must be a finite positive time (ms), found {fastest!r}")
    launch = meta["training"].get("launch", {})  # absent in models saved before it was recorded
    if not isinstance(launch, dict) or not all(
        isinstance(per, dict) and set(per) <= {"threads_per_block", "blocks"} and all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in v)
            and v[0] <= v[1] for v in per.values())
        for per in launch.values()
    ):
        raise _bad(meta_path, "training.launch must map each app to {threads_per_block, blocks: [min, max]}, finite and positive")
    return meta


def verify_files(path: Path, meta: dict) -> None:
    """Every file of the directory is listed in the manifest with the hash it had at save time."""
    listed = meta["files"]
    verify_tree(path, listed)
    if _BOOSTER not in listed:
        raise ModelFormatError(f"{path} lacks {_BOOSTER}; {_RETRAIN}")


def verify_tree(path: Path, listed: dict) -> None:
    """Every regular file under ``path`` (manifest excluded) is in ``listed`` with its sha256, and nothing else is there.

    Shared by the multi-corpus bundle (:mod:`perfml.learned.bundle`) and the operator
    sub-model (:mod:`perfml.learned.operator_persistence`).
    """
    path = Path(path)
    files, odd = _directory_files(path)
    if odd:
        raise ModelFormatError(f"{path / odd[0]} is not a regular file (a link or a special file); {_RETRAIN}")
    for rel in sorted(listed):
        if rel not in files:
            raise ModelFormatError(f"{path / rel} is missing from the model directory; {_RETRAIN}")
        if _sha256_file(path / rel) != listed[rel]:
            raise ModelFormatError(f"{path / rel} was changed after saving (sha256 differs from the manifest); {_RETRAIN}")
    extra = [f for f in files if f not in listed]
    if extra:
        raise ModelFormatError(f"{path / extra[0]} is not part of the saved model (not in the manifest); remove it, or {_RETRAIN}")


def read_manifest(path) -> dict:
    """The checked manifest of the model directory ``path`` (files verified against their hashes)."""
    path = Path(path)
    meta_path, meta = read_manifest_json(path)
    meta = check_manifest(meta, meta_path)
    verify_files(path, meta)
    return meta


def load_model(path, *, data_home=None):
    """Load a model directory written by :func:`save_model`.

    Raises
    ------
    ModelFormatError
        If the directory is missing, of another format or version, its manifest fails
        the schema check, or any file is changed, missing or extra.
    """
    from xgboost import XGBRegressor

    from perfml.learned.features import FeatureBuilder
    from perfml.learned.regressors import RuntimeRegressor

    path = Path(path)
    meta = read_manifest(path)
    meta_path = path / _META
    tables = {}
    for rel in sorted(meta["files"]):
        if rel.startswith(f"{_FEATURES}/") and rel.endswith(".parquet"):
            try:
                tables[Path(rel).stem] = pd.read_parquet(path / rel)
            except Exception as exc:  # pyarrow raises several unrelated types on a bad file
                raise ModelFormatError(f"{path / rel} cannot be read as Parquet ({exc.__class__.__name__}); {_RETRAIN}") from None
    characterizations = read_characterization_files(path, meta, meta_path)
    read_calibration_entry(meta, meta_path)  # checked now, not at the first --calibration
    try:
        model = RuntimeRegressor(**{**meta["regressor_params"], "data_home": data_home,
                                    "characterizations": characterizations})
        model.features_ = FeatureBuilder.from_state(meta["features"], tables, data_home=data_home)
        model.features_.characterizations = characterizations
    except PerfmlError:
        raise
    except (TypeError, KeyError, ValueError) as exc:
        raise _bad(meta_path, f"its parameters cannot rebuild the model ({exc.__class__.__name__}: {exc})") from None
    model.feature_names_ = list(meta["feature_names"])
    model.shrinkage_ = float(meta["shrinkage"])
    model.model_ = XGBRegressor()
    try:
        model.model_.load_model(str(path / _BOOSTER))
    except Exception as exc:  # xgboost.core.XGBoostError and friends
        raise ModelFormatError(f"{path / _BOOSTER} cannot be read by xgboost ({exc.__class__.__name__}); {_RETRAIN}") from None
    booster = model.model_.get_booster()
    if booster.num_features() != len(model.feature_names_):
        raise _bad(meta_path, f"lists {len(model.feature_names_)} features but the booster has {booster.num_features()}")
    if booster.feature_names is not None and list(booster.feature_names) != model.feature_names_:
        raise _bad(meta_path, "its feature_names differ from the booster's (shuffled or edited)")
    booster.feature_names = None  # predictions are made from arrays in manifest order
    model.n_features_in_ = None
    model.metadata_ = meta
    return model


# -- characterizations a model was trained with (the calibrated tier) --------------------------
_CHARACTERIZATIONS = "characterizations"


def write_characterization_files(directory, characterizations) -> dict[str, str]:
    """Write each board's characterization as ``characterizations/NN.json`` (``perfml characterize``'s
    own JSON format) under ``directory``; return the manifest entry board -> file.

    Raises
    ------
    ModelFormatError
        ``characterizations`` is not a mapping (a callable has no file form).
    """
    from collections.abc import Mapping

    if not isinstance(characterizations, Mapping):
        raise ModelFormatError("a model fitted with a callable of characterizations cannot be saved safely; train it "
                               "with characterizations=None (the committed ones) or a mapping board -> Characterization")
    folder = Path(directory) / _CHARACTERIZATIONS
    folder.mkdir()
    files = {}
    for i, (board, characterization) in enumerate(sorted(characterizations.items())):
        rel = f"{_CHARACTERIZATIONS}/{i:02d}.json"
        (Path(directory) / rel).write_text(characterization.to_json(), encoding="utf-8")
        files[str(board)] = rel
    return files


def read_characterization_files(path, meta: dict, meta_path) -> dict | None:
    """The characterizations a model directory's manifest lists (None when it lists none).

    Raises
    ------
    ModelFormatError
        A malformed entry, a file not among the hashed ones, a file that is no
        characterization, or one of another board than its key.
    """
    import json

    from perfml.boards import same_board
    from perfml.characterize import Characterization

    listed = meta.get("characterizations")
    if listed is None:
        return None
    if not isinstance(listed, dict) or not listed or not all(
            isinstance(k, str) and isinstance(v, str) and v.startswith(f"{_CHARACTERIZATIONS}/") for k, v in listed.items()):
        raise _bad(meta_path, f"'characterizations' must map board names to files under {_CHARACTERIZATIONS}/")
    out = {}
    for board, rel in listed.items():
        if rel not in meta["files"]:
            raise ModelFormatError(f"{Path(path) / rel} is not among the model's files; {_RETRAIN}")
        try:
            characterization = Characterization.from_dict(json.loads((Path(path) / rel).read_text(encoding="utf-8")))
        except (ValueError, PerfmlError) as exc:  # json.JSONDecodeError is a ValueError
            raise ModelFormatError(f"{Path(path) / rel} is not a readable characterization ({exc}); {_RETRAIN}") from None
        if not same_board(characterization.board, board):
            raise _bad(meta_path, f"characterizations[{board!r}] holds a characterization of {characterization.board!r}")
        out[board] = characterization
    return out


def read_calibration_entry(meta: dict, meta_path="the model manifest") -> tuple[str, tuple[str, ...]] | None:
    """``(kernel column, kernels)`` whose runs a target's ``--calibration`` must hold, or None (any runs).

    From the manifest's optional ``calibration`` entry, written for a calibrated-tier
    sub-model (:func:`perfml.learned.tiers.calibration_entry`).

    Raises
    ------
    ModelFormatError
        A malformed entry.
    """
    entry = meta.get("calibration")
    if entry is None:
        return None
    if (not isinstance(entry, dict) or entry.get("column") not in ("op", "app_id")
            or not isinstance(entry.get("kernels"), list) or not entry["kernels"]
            or not all(isinstance(k, str) and k for k in entry["kernels"])):
        raise _bad(meta_path, "'calibration' must give a column (op or app_id) and a non-empty list of kernels")
    return entry["column"], tuple(entry["kernels"])
