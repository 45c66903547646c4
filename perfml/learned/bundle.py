"""A model directory with one sub-model per corpus, and the row-by-row routing of queries to them.

Why one model per corpus
------------------------
One regressor with one shrinkage for the nine described applications and the Rodinia
kernels together is worse on both than a model per corpus (closing note of issue 10: the
joint model's 90 % interval covered 86.8 % of held-out-board rows of the nine apps, the
per-corpus models 89.2 % and 89.0 %): the transfer baseline, the residual's shrinkage and
the interval width all differ several-fold between kernels with a description and kernels
known only from measurements. The deep-learning operators (NeuSight corpus) are yet
another population, on other boards, with their own features. So a model directory holds:

``described``
    the Amaris kernels with a description (the nine applications of the kernel sidecars),
    a :class:`~perfml.learned.regressors.RuntimeRegressor`;
``undescribed``
    the Amaris kernels known only from measurements (Rodinia, and any kernel the user
    gives through ``--reference``), a ``RuntimeRegressor``;
``dlops``
    the deep-learning operators, an operator regressor (``perfml.learned.operators``);
``dlops-calibrated``, ``described-calibrated`` (optional)
    the same corpora at the calibrated tier (issue 11 §3): a model with the
    characterization features, every training board characterized from its own ``add``
    calls (operators) or ``vectorAdd`` runs (nine apps; :data:`perfml.learned.tiers.CALIBRATED_TIER`).
    Each answers its rows only when the target board's calibration is given (``perfml
    predict --calibration`` or ``--characterization``); without one the spec-only
    sub-model answers.

Each sub-model is a version-2 model directory of its own (:mod:`perfml.learned.persistence`)
with its own interval calibration (leave-one-board-out split conformal, per kernel group
or op class, :mod:`perfml.learned.intervals`) in its hashed manifest. The top manifest
(``perfml-model.json``, format ``perfml-model`` version 3) names the sub-models and holds
the sha256 of every file of the tree, sub-manifests included, and of itself. A version-2
directory (one model for every Amaris kernel) is read as a bundle of that one model.

Routing (:func:`predict_any`): a query row with a non-empty ``op`` goes to ``dlops`` (to
``dlops-calibrated`` when the bundle's ``tier`` is ``"calibrated"`` and it has one); one
with a non-empty ``app_id`` to ``described`` when the kernel has a description, else to
``undescribed`` (the other Amaris sub-model when the bundle lacks the preferred one). A row
with both or neither is refused naming the row. The output keeps the input's rows in
order and every input column unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.errors import (DatasetSchemaError, InvalidValueError, ModelFormatError, PerfmlError, QueryValidationError,
                           UnsupportedQueryError)
from perfml.learned.persistence import BUNDLE_VERSION, _META, _RETRAIN, _bad, write_manifest
from perfml.learned.tiers import CALIBRATED_TIER, calibration_entry, data_corpus

__all__ = [
    "CORPORA",
    "SUB_MODELS",
    "ModelBundle",
    "load_predictor",
    "predict_any",
    "read_reference_any",
    "save_bundle",
]

#: data corpora (``perfml train --corpus``), in the order they are trained and reported
CORPORA = ("described", "undescribed", "dlops")
#: sub-model names a bundle may hold: a model per corpus, and the calibrated-tier ones
SUB_MODELS = CORPORA + tuple(CALIBRATED_TIER)
CORPUS_TITLES = {
    "described": "Amaris kernels with a description (nine apps)",
    "undescribed": "Amaris kernels known only from measurements (Rodinia, --reference kernels)",
    "dlops": "deep-learning operators (NeuSight)",
    "dlops-calibrated": "deep-learning operators (NeuSight), calibrated tier: takes the target's add calls",
    "described-calibrated": "Amaris kernels with a description (nine apps), calibrated tier: takes the target's vectorAdd runs",
    "amaris": "every Amaris kernel (one joint model, version-2 directory)",
}
_KINDS = ("runtime-regressor", "operator-regressor")
_REQUIRED = {"format": str, "version": int, "created": str, "corpora": dict, "versions": dict, "files": dict,
             "manifest_sha256": str}
#: routing preference per kind of row: the first sub-model the bundle has answers
_ROUTES = {"described": ("described", "amaris", "undescribed"),
           "undescribed": ("undescribed", "amaris", "described"),
           "dlops": ("dlops",)}


@dataclass
class ModelBundle:
    """Fitted sub-models by name, the top manifest they were loaded with, and the tier asked for.

    ``tier`` is ``"spec"`` (the target board known by its registry entry) or
    ``"calibrated"`` (its characterization was given to the sub-models,
    :func:`perfml.learned.target_characterization.use_target`): then a corpus with a
    calibrated-tier sub-model is answered by that one, and ``target_board`` names the
    board it was calibrated for: the sub-models now hold that board's characterization, so
    :func:`predict_any` refuses rows of any other board (a calibrated model asked about a
    board known only by its registry entry misses by far more than the spec-only one).
    """

    models: dict
    metadata_: dict = field(default_factory=dict)
    tier: str = "spec"
    target_board: str | None = None

    def name_for(self, route: str) -> str | None:
        """The name of the sub-model answering rows of ``route`` (described, undescribed or dlops), or None."""
        names = _ROUTES[route]
        if self.tier == "calibrated":
            names = tuple(n for n in CALIBRATED_TIER if data_corpus(n) == route) + names
        return next((name for name in names if name in self.models), None)

    def model_for(self, route: str):
        """The sub-model answering rows of ``route`` (described, undescribed or dlops), or None."""
        name = self.name_for(route)
        return None if name is None else self.models[name]

    @property
    def amaris_models(self) -> list:
        """The sub-models that answer Amaris rows (RuntimeRegressors)."""
        return [m for n, m in self.models.items() if data_corpus(n) in ("described", "undescribed", "amaris")]


def _kind(model) -> str:
    from perfml.learned.regressors import RuntimeRegressor

    return "runtime-regressor" if isinstance(model, RuntimeRegressor) else "operator-regressor"


# -- saving ----------------------------------------------------------------------------------
def _check_fitted(model, what: str) -> None:
    """Raise :class:`~perfml.errors.ModelFormatError` if ``model`` is not a fitted estimator (its
    write failed half-way and was blamed on the disk)."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
    except (NotFittedError, TypeError):
        raise ModelFormatError(f"{what} ({type(model).__name__}) is not a fitted estimator: nothing to save; "
                               "call fit(X, y) first") from None


def save_bundle(parts: dict, path, *, overwrite: bool = False, extra: dict | None = None,
                extra_files: dict[str, str] | None = None) -> Path:
    """Write a bundle: one sub-directory per corpus and the top manifest, atomically.

    Parameters
    ----------
    parts : dict
        ``{name: (model, training_rows, manifest_extra)}``; ``name`` one of
        :data:`SUB_MODELS`; ``manifest_extra`` (e.g. ``{"intervals": ...}``) goes into the
        sub-model's manifest.
    path : path-like
        The model directory to create.
    overwrite : bool
        Replace ``path`` if it is a perfml model directory (never anything else).
    extra : dict, optional
        JSON-able entries of the top manifest (training sources, fit time, figures).
    extra_files : dict of str to str, optional
        Text files of the top directory (``{"MODEL_CARD.md": text}``), hashed too.

    Raises
    ------
    ModelFormatError
        For an unknown corpus name, no sub-model, or a bad extra file name.
    ResultFileExistsError, UnsafeOutputError
        As :func:`perfml.learned.persistence.save_model`.
    """
    import sklearn

    from perfml import __version__
    from perfml._safe_output import make_staging_directory, replace_directory
    from perfml.learned.persistence import replace_directory_check, why_not_model_directory

    path = Path(path)
    unknown = [c for c in parts if c not in SUB_MODELS]
    if unknown or not parts:
        raise ModelFormatError(f"a bundle holds sub-models named {', '.join(SUB_MODELS)}, found {sorted(parts) or 'none'}; "
                               "train at least one corpus")
    for name, part in parts.items():
        if not (isinstance(part, tuple) and len(part) == 3):
            raise ModelFormatError(f"parts[{name!r}] must be a tuple (model, training_rows, manifest_extra), got "
                                   f"{type(part).__name__}")
        _check_fitted(part[0], f"sub-model {name!r}")
    for name in extra_files or {}:
        if name == _META or name in SUB_MODELS or "/" in name or name.startswith(".") or not name:
            raise ModelFormatError(f"extra file name {name!r} is not allowed; use a plain file name other than "
                                   f"{_META} and the corpus names")
    replace_directory_check(path, overwrite=overwrite)
    staging = make_staging_directory(path)
    try:
        corpora = {}
        for corpus in SUB_MODELS:
            if corpus not in parts:
                continue
            model, rows, sub_extra = parts[corpus]
            sub = staging / corpus
            sub.mkdir()
            kind = _kind(model)
            sub_extra = {**(sub_extra or {}), "corpus": corpus}
            if corpus in CALIBRATED_TIER:  # the runs a target's --calibration must hold
                sub_extra["calibration"] = calibration_entry(corpus)
            if kind == "runtime-regressor":
                from perfml.learned.persistence import write_model_files

                meta = write_model_files(model, sub, extra=sub_extra, training_rows=rows)
            else:
                from perfml.learned.operator_persistence import write_operator_model_files

                meta = write_operator_model_files(model, sub, extra=sub_extra, training_rows=rows)
            corpora[corpus] = {"directory": corpus, "kind": kind, "title": CORPUS_TITLES[corpus],
                               "rows": int(len(rows)) if rows is not None else None,
                               "boards": list((meta.get("training") or {}).get("boards") or [])}
        for name, text in (extra_files or {}).items():
            (staging / name).write_text(text)
        import xgboost

        top = {"format": "perfml-model", "version": BUNDLE_VERSION,
               "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "corpora": corpora,
               "versions": {"perfml": __version__, "xgboost": xgboost.__version__, "scikit-learn": sklearn.__version__},
               **(extra or {})}
        write_manifest(staging, top)
    except BaseException as exc:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError) or (isinstance(exc, Exception) and not isinstance(exc, PerfmlError)):
            from perfml.errors import OutputWriteError

            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{exc.__class__.__name__}: {exc}"
            raise OutputWriteError(f"cannot write the model to {path} ({reason}); nothing was written: "
                                   "free space or choose another --out") from None
        raise
    return replace_directory(staging, path, overwrite=overwrite, is_own=why_not_model_directory, what="perfml model directory")


# -- loading ---------------------------------------------------------------------------------
def _check_top_manifest(meta: dict, meta_path: Path) -> dict:
    from perfml.learned.persistence import check_required

    check_required(meta, meta_path, _REQUIRED)
    corpora = meta["corpora"]
    if not corpora or any(c not in SUB_MODELS for c in corpora):
        raise _bad(meta_path, f"'corpora' must name sub-models among {', '.join(SUB_MODELS)}, found {sorted(corpora)}")
    for name, entry in corpora.items():
        if not isinstance(entry, dict) or entry.get("directory") != name or entry.get("kind") not in _KINDS:
            raise _bad(meta_path, f"corpora[{name!r}] must give directory {name!r} and a kind among {_KINDS}")
    return meta


def _verify_tree(path: Path, meta: dict) -> None:
    from perfml.learned.persistence import verify_tree

    verify_tree(path, meta["files"])
    for name in meta["corpora"]:
        if f"{name}/{_META}" not in meta["files"]:
            raise ModelFormatError(f"{path / name} lacks its {_META}; {_RETRAIN}")


def load_predictor(path, *, data_home=None) -> ModelBundle:
    """Load a model directory: a version-3 bundle, or a version-2 single model as a one-model bundle.

    Raises
    ------
    ModelFormatError
        If the directory is missing, of another format or version, its manifest fails the
        schema check, or any file of the tree is changed, missing or extra.
    """
    from perfml.learned.persistence import FORMAT, VERSION, load_model, read_manifest_json

    path = Path(path)
    _refuse_a_bundles_sub_model(path)
    meta_path, meta = read_manifest_json(path)
    if meta.get("format") != FORMAT:
        raise ModelFormatError(f"{meta_path}: format {meta.get('format')!r} is not {FORMAT!r}; give a directory written by `perfml train`")
    if meta.get("version") == VERSION:  # one joint model for every Amaris kernel
        model = load_model(path, data_home=data_home)
        return ModelBundle({"amaris": model}, {"format": FORMAT, "version": VERSION, "corpora": {"amaris": {}}})
    if meta.get("version") != BUNDLE_VERSION:
        raise ModelFormatError(
            f"{meta_path}: format {FORMAT!r} version {meta.get('version')!r} is not supported (this perfml reads "
            f"versions {VERSION} and {BUNDLE_VERSION}); re-train with `perfml train --out DIR`"
        )
    meta = _check_top_manifest(meta, meta_path)
    _verify_tree(path, meta)
    models = {}
    for name, entry in meta["corpora"].items():
        sub = path / entry["directory"]
        if entry["kind"] == "runtime-regressor":
            models[name] = load_model(sub, data_home=data_home)
        else:
            from perfml.learned.operator_persistence import load_operator_model

            models[name] = load_operator_model(sub, data_home=data_home)
    return ModelBundle(models, meta)


def _refuse_a_bundles_sub_model(path: Path) -> None:
    """Refuse a directory that is one sub-model of the bundle around it (``models/default/dlops``).

    Loaded alone it failed on a key only the bundle's manifest gives ("'shrinkage' is
    missing; retrain"), or answered without the bundle's routing and calibrated tier.
    """
    from perfml.learned.persistence import FORMAT

    parent_manifest = path.resolve().parent / "perfml-model.json"
    if not parent_manifest.is_file():
        return
    try:
        parent = json.loads(parent_manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # not a bundle's manifest perfml can read: nothing to say about it
    if not isinstance(parent, dict) or parent.get("format") != FORMAT or parent.get("version") != BUNDLE_VERSION:
        return
    corpora = parent.get("corpora")
    names = [name for name, entry in (corpora.items() if isinstance(corpora, dict) else ())
             if isinstance(entry, dict) and entry.get("directory") == path.resolve().name]
    if names:
        raise ModelFormatError(
            f"{path} is the sub-model {names[0]!r} of the model directory {path.resolve().parent}; pass that "
            f"directory as --model (it routes each row to its sub-model)"
        )


# -- routing ---------------------------------------------------------------------------------
def _filled(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    text = frame[column].astype(str).str.strip()
    return (~frame[column].isna() & (text != "")).to_numpy()


def _routes(frame: pd.DataFrame, where, *, what: str = "query", error=QueryValidationError) -> np.ndarray:
    """Per row: "dlops", "described" or "undescribed"; raise for a row naming both kinds of kernel or none."""
    from perfml.apps import list_apps
    from perfml.learned.queries import _at

    if "op" not in frame.columns and "app_id" not in frame.columns:
        from perfml.closed_form._inputs import near_misses

        raise DatasetSchemaError(
            f"{where}: no app_id or op column{near_misses(['app_id', 'op'], frame.columns)}; a {what} row names its "
            "kernel by app_id (the columns of runtimes.csv: "
            "board, app_id, input_size) or by op (the columns of dlops_runtimes.csv: board, op and its dimensions)"
        )
    has_op, has_app = _filled(frame, "op"), _filled(frame, "app_id")
    both = np.flatnonzero(has_op & has_app)
    if both.size:
        i = int(both[0])
        raise error(f"{_at(where, i)}, column op: the row names both an operator ({frame['op'].iloc[i]!r}) and an "
                    f"application kernel ({frame['app_id'].iloc[i]!r}); leave one of op / app_id empty")
    neither = np.flatnonzero(~has_op & ~has_app)
    if neither.size and len(frame):
        i = int(neither[0])
        col = "app_id" if "app_id" in frame.columns else "op"
        raise error(f"{_at(where, i)}, column {col}: the row names no kernel, found ''; give app_id (an application "
                    "kernel) or op (a deep-learning operator)")
    described = set(list_apps())
    app = frame["app_id"].astype(str).str.strip() if "app_id" in frame.columns else pd.Series([""] * len(frame))
    return np.where(has_op, "dlops", np.where(app.isin(described).to_numpy(), "described", "undescribed")).astype(object)


def read_reference_any(path) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """Read a ``--reference`` CSV holding application rows, operator rows or both; check each part.

    Returns ``(application_reference, operator_reference)`` (None for an absent part), as
    :func:`perfml.learned.queries.check_reference` and
    :func:`perfml.learned.operator_queries.check_operator_reference` return them; errors
    name the row of the file.
    """
    from perfml.errors import ReferenceValidationError
    from perfml._csv_header import file_rows
    from perfml.learned.operator_queries import check_operator_reference
    from perfml.learned.queries import RowNames, check_reference, read_query_csv

    frame = read_query_csv(path, "reference file")
    where = file_rows(f"--reference {path}", frame)  # rows named by the lines they are on
    if len(frame) == 0:
        raise ReferenceValidationError(f"{where}: no rows; add at least one measurement under the header")
    try:
        routes = _routes(frame, where, what="reference", error=ReferenceValidationError)
    except DatasetSchemaError as exc:
        if isinstance(exc, ReferenceValidationError):
            raise
        raise ReferenceValidationError(str(exc)) from None
    ops = np.flatnonzero(routes == "dlops")
    apps = np.flatnonzero(routes != "dlops")
    app_ref = op_ref = None
    if apps.size:
        part = frame.iloc[apps].reset_index(drop=True)
        app_ref = check_reference(part, where if not ops.size else RowNames(where, apps))
        app_ref.attrs["file_rows"] = [int(i) for i in apps]  # to name the file's rows in later messages
        app_ref.attrs["record_lines"] = frame.attrs.get("record_lines")
    if ops.size:
        part = frame.iloc[ops].reset_index(drop=True)
        op_ref = check_operator_reference(part, where if not apps.size else RowNames(where, ops))
        op_ref.attrs["file_rows"] = [int(i) for i in ops]
        op_ref.attrs["record_lines"] = frame.attrs.get("record_lines")
    return app_ref, op_ref


def reference_repeat_warnings(references, where: str) -> list[str]:
    """One line per run measured more than once on one board whose times disagree by more than
    :data:`perfml.characterize.calibrate.REPEAT_SPREAD_WARN`x (the prediction uses their
    geometric mean, which is then a guess; the user should know).

    ``references``: the parts :func:`read_reference_any` returns (None parts skipped). Rows are
    repeats where the lookup merges them (:func:`_merged_repeats`): same board, kernel and
    sizes (an empty second size or operator dimension as the lookup reads it), and launches
    that agree on every column both give (:func:`~perfml.learned.queries.launches_agree`: an
    empty cell constrains nothing). Grouped on their raw cells, ``block_y`` 1 and an empty
    ``block_y`` (or ``dtype`` float32 and an empty one) were two runs, and a 100x repeat was
    averaged without a word.
    """
    lines = []
    for ref in references:
        if ref is None or len(ref) < 2:
            continue
        file_rows = ref.attrs.get("file_rows") or list(range(len(ref)))
        times = ref["time_ms"].to_numpy(dtype=float)
        for pos in _merged_repeats(ref, times):
            low, high = times[pos].min(), times[pos].max()
            rows = ", ".join(str(file_rows[i] + 1) for i in pos)
            lines.append(f"{where}: rows {rows} measure the same run on {ref['board'].iat[pos[0]]} at "
                         f"{low:.4g} to {high:.4g} ms ({high / low:.3g}x apart); "
                         "perfml uses their geometric mean: check the rows (unit, board, sizes, launch)")
    return lines


def reference_unasked_warnings(references, queries: pd.DataFrame, where: str) -> list[str]:
    """One line per part of ``references`` (:func:`read_reference_any`) with kernels no query row names.

    A reference answers the queries of its own kernel: a kernel spelt otherwise in the two
    files (``vectoradd`` and ``vectorAdd``) left its rows unused, and the queries answered
    from the training boards (basis ``training-boards``), without a word. The line names the
    kernels, their rows and, where a query's kernel differs only in case, spaces or ``-`` /
    ``_``, that kernel.
    """
    lines = []
    for ref, column in zip(references, ("app_id", "op")):
        if ref is None or not len(ref) or column not in ref.columns:
            continue
        asked = set(queries[column].dropna().astype(str).str.strip()) if column in queries.columns else set()
        kernels = ref[column].astype(str).str.strip()
        unasked = [k for k in dict.fromkeys(kernels) if k not in asked]
        if not unasked:
            continue
        file_rows = ref.attrs.get("file_rows") or list(range(len(ref)))

        def loose(name: str) -> str:
            return name.lower().replace("-", "").replace("_", "").replace(" ", "")

        shown = []
        for kernel in unasked[:5]:
            rows = [file_rows[i] + 1 for i in np.flatnonzero((kernels == kernel).to_numpy())]
            close = [a for a in asked if loose(a) == loose(kernel)]
            shown.append(f"{kernel} (row{'s' if len(rows) > 1 else ''} {', '.join(map(str, rows[:3]))}"
                         f"{', ...' if len(rows) > 3 else ''}{f'; the queries name {close[0]}' if close else ''})")
        lines.append(f"{where}: kernel(s) {', '.join(shown)}{', ...' if len(unasked) > 5 else ''} are named by no query "
                     f"row and not used; a reference answers the queries of the same {column} (names are exact)")
    return lines


def _merged_repeats(ref: pd.DataFrame, times: np.ndarray) -> list[np.ndarray]:
    """The positions of reference rows the lookup merges for one query whose times are more than
    :data:`~perfml.characterize.calibrate.REPEAT_SPREAD_WARN` x apart, one array per run."""
    from perfml.characterize.calibrate import REPEAT_SPREAD_WARN
    from perfml.learned.operator_queries import _run_keys
    from perfml.learned.queries import LAUNCH_COLUMNS, launches_agree

    if "op" in ref.columns:
        run = _run_keys(ref)
    else:
        second = ref["input_size_2"].to_numpy(dtype=float) if "input_size_2" in ref.columns else np.zeros(len(ref))
        run = (ref["app_id"].astype(str) + "|" + ref["input_size"].map("{:.0f}".format)
               + "|" + pd.Series(np.nan_to_num(second, nan=0.0), index=ref.index).map("{:.0f}".format))
    run = ref["board"].astype(str) + "|" + run
    launch = ref[[c for c in LAUNCH_COLUMNS if c in ref.columns]].to_numpy(dtype=float)
    found = []
    for positions in pd.Series(np.arange(len(ref))).groupby(run.to_numpy(), sort=False).indices.values():
        if len(positions) < 2:
            continue
        far = np.zeros(len(positions), dtype=bool)
        for k, i in enumerate(positions[:-1]):  # each row against the later ones whose launch agrees
            later = positions[k + 1:]
            agree = launches_agree(launch[later], launch[i])
            apart = np.maximum(times[later] / times[i], times[i] / times[later]) > REPEAT_SPREAD_WARN
            hit = agree & apart
            if hit.any():
                far[k] = True
                far[k + 1:] |= hit
        if far.any():
            found.append(np.asarray(positions)[far])
    return found


#: a --reference time more than this factor from the training data's measurement of the same run
#: on the same board is warned about (two hosts' timings of one kernel differ by launch overhead
#: and clocks, a few times for the shortest calls; a factor of ten is a unit slip or another run)
REFERENCE_DISAGREE_WARN = 10.0


#: a --reference time more than this factor from the model's own prediction of the run on its
#: board is warned about: wider than the data's factor, as the model misses by more than a second
#: measurement does (experiments/reference_model_disagreement.py prints its misses on the
#: operator recordings of the H100 and H200, boards it never trained on); a unit slip is 1000x
REFERENCE_MODEL_DISAGREE_WARN = 30.0


def reference_measured_warnings(bundle: ModelBundle, references, where: str) -> list[str]:
    """One line per part of ``references`` (:func:`read_reference_any`) with rows whose time is more
    than :data:`REFERENCE_DISAGREE_WARN` x from the model's training measurement of the same run
    on the same board (``measured_ms`` of the sub-models: a data home's time), and one per part
    with rows more than :data:`REFERENCE_MODEL_DISAGREE_WARN` x from the model's own prediction
    of a run no training board measured, for a kernel whose work the model knows
    (:func:`reference_model_times`).

    Such a reference is used as given (the user's measurement comes first, issue 10 section
    2) and carries every prediction made from it: a vectorAdd of 1048576 on the GTX-680 at
    500 ms, thousands of times the data home's time, carried the GTX-980's prediction as
    far, silently (``tests/test_cli_hostile.py`` warns on it); an ``add`` on the T4 given in
    microseconds (26 for 0.026 ms) carried the A100's 1000x, and no training run had that size.
    """
    measured_lines, model_lines = [], []
    for ref, ops in zip(references, (False, True)):  # (application rows, operator rows)
        if ref is None or not len(ref):
            continue
        measured = _training_measurements(bundle, ref, ops)
        measured_lines += _far_from(ref, ops, measured, REFERENCE_DISAGREE_WARN, where,
                                    "the training data's measurement", "measured", "")
        model_lines += _far_from(ref, ops, reference_model_times(bundle, ref, ops, measured=measured),
                                 REFERENCE_MODEL_DISAGREE_WARN, where, "the model's prediction", "predicted",
                                 ", or give your own kernel a name of its own")
    return measured_lines + model_lines


def _far_from(ref: pd.DataFrame, ops: bool, other_ms: np.ndarray, factor: float, where: str, what: str, word: str,
              fix: str) -> list[str]:
    """The line naming the rows of ``ref`` whose time is more than ``factor`` x from ``other_ms`` (NaN: no
    comparison), the farthest first; empty when none is."""
    times = ref["time_ms"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        apart = np.maximum(times / other_ms, other_ms / times)
    far = np.flatnonzero(np.isfinite(apart) & (apart > factor))
    if not len(far):
        return []
    file_rows = ref.attrs.get("file_rows") or list(range(len(ref)))
    worst = int(far[np.argmax(apart[far])])
    kernel = ref["op" if ops else "app_id"].iat[worst]
    return [f"{where}: {len(far)} row(s) differ by more than {factor:g}x from {what} of the same run on the same "
            f"board, the most row {file_rows[worst] + 1} ({kernel} on {ref['board'].iat[worst]}: {times[worst]:.4g} ms, "
            f"{word} {other_ms[worst]:.4g} ms, {apart[worst]:.3g}x apart); predictions carry your times: check their "
            f"unit (ms), board, sizes and launch{fix}"]


def reference_model_times(bundle: ModelBundle, ref: pd.DataFrame, ops: bool, *, measured=None) -> np.ndarray:
    """Per reference row, the model's prediction of its run on its board (ms), NaN where the
    training data measured the run there (:func:`reference_measured_warnings` compares those with it), where
    the model does not know the kernel's work (an app it neither trained on nor has a
    description of: a kernel known from the reference alone), or where the model cannot answer
    the row (then the reference's own checks and the prediction say why)."""
    from perfml.apps import list_apps
    from perfml.datasets import DLOPS_OP_DIMS

    out = np.full(len(ref), np.nan)
    if measured is None:  # the training data's times of the rows (:func:`_training_measurements`), if the caller has them
        measured = _training_measurements(bundle, ref, ops)
    if ops:
        known = ref["op"].astype(str).str.strip().isin(set(DLOPS_OP_DIMS)).to_numpy()
    else:
        trained = set()
        for model in bundle.amaris_models:
            runs = getattr(getattr(model, "features_", None), "transfer_", None)
            if runs is not None:
                trained |= set(runs["app_id"].astype(str))
        known = ref["app_id"].astype(str).str.strip().isin(trained | set(list_apps())).to_numpy()
    rows = np.flatnonzero(known & np.isnan(measured))
    if not len(rows):
        return out
    queries = ref.iloc[rows].drop(columns=["time_ms"]).reset_index(drop=True)
    queries.attrs = {}
    try:
        answered = predict_any(bundle, queries, "--reference")
    except PerfmlError:
        return out
    out[rows] = answered["predicted_ms"].to_numpy(dtype=float)
    return out


def _training_measurements(bundle: ModelBundle, ref: pd.DataFrame, ops: bool) -> np.ndarray:
    """Per reference row (operator rows with ``ops``), the training data's time of its run on its board (ms), NaN where none."""
    models = [bundle.model_for("dlops")] if ops else bundle.amaris_models
    models = [m for m in models if m is not None and hasattr(m, "measured_ms")]
    measured = np.full(len(ref), np.nan)
    for model in models:  # the first sub-model that measured the run
        missing = np.isnan(measured)
        if missing.any():
            measured[missing] = np.asarray(model.measured_ms(ref.iloc[np.flatnonzero(missing)]), dtype=float)
    return measured


def _reference_names(reference, reference_where):
    """``reference_where`` naming the rows of a reference part by their rows in the whole file."""
    from perfml._csv_header import FileRows
    from perfml.learned.queries import RowNames

    rows = reference.attrs.get("file_rows") if reference is not None else None
    lines = reference.attrs.get("record_lines") if reference is not None else None
    if lines and not callable(reference_where):
        reference_where = FileRows(str(reference_where), lines)
    return RowNames(reference_where, rows) if rows is not None else reference_where


def _check_target_board(bundle: ModelBundle, original: pd.DataFrame, where) -> None:
    """A bundle calibrated for one board (``use_target``) answers rows of that board only."""
    if bundle.tier != "calibrated" or bundle.target_board is None or "board" not in original.columns:
        return
    from perfml.boards import same_board
    from perfml.learned.queries import _at

    seen: dict[str, bool] = {}
    for i, name in enumerate(original["board"].astype(str).str.strip()):
        if name not in seen:
            seen[name] = same_board(name, bundle.target_board)
        if not seen[name]:
            raise QueryValidationError(
                f"{_at(where, i)}, column board: this model was calibrated for {bundle.target_board} (--calibration / "
                f"--characterization, use_target), found {name!r}; ask about other boards with the model loaded "
                "afresh (load_predictor), or calibrate it for that board"
            )


def predict_any(bundle: ModelBundle, original: pd.DataFrame, where, *, reference=None,
                reference_where: str = "--reference", level: float = 0.90) -> pd.DataFrame:
    """The queries as given plus ``predicted_ms``, ``lower_ms``, ``upper_ms``, ``basis``, flags and ``tier``, row for row.

    ``tier`` names the tier of the sub-model that answered the row: ``spec`` (the board
    known by its registry entry) or ``calibrated`` (a calibrated-tier sub-model, after
    :func:`perfml.learned.target_characterization.use_target`).

    Parameters
    ----------
    bundle : ModelBundle
        From :func:`load_predictor`.
    original : DataFrame
        The query CSV as read (:func:`perfml.learned.queries.read_query_csv`).
    where : str
        The query file's name, for messages.
    reference : tuple, optional
        ``(application_reference, operator_reference)`` from :func:`read_reference_any`.
    reference_where : str
        The reference file's name, for messages.
    level : float
        Nominal level of the intervals.

    Raises
    ------
    UnsupportedQueryError
        A row's kernel kind has no sub-model in the bundle, or the kernel is unknown.
    QueryValidationError, ReferenceValidationError, DatasetSchemaError
        A bad row, naming file, row, column and fix (nothing is predicted).
    """
    from perfml.learned.intervals import check_level
    from perfml.learned.operator_queries import predict_operator_queries
    from perfml.learned.queries import OUTPUT_COLUMNS, RowNames, predict_queries

    level = check_level(level)
    if not isinstance(original, pd.DataFrame):
        raise QueryValidationError(f"{where}: expected a pandas DataFrame of query rows (columns board, app_id or op, "
                                   f"and the size), got {type(original).__name__}; build one with pandas.DataFrame(...) "
                                   "or read the CSV with perfml.learned.queries.read_query_csv")
    from perfml.closed_form._inputs import check_column_names

    check_column_names(original, str(where), QueryValidationError)
    if len(original) == 0:
        raise QueryValidationError(f"{where}: no query rows; add at least one row under the header")
    routes = _routes(original, where)
    _check_target_board(bundle, original, where)
    if reference is not None and not (isinstance(reference, tuple) and len(reference) == 2):
        # a DataFrame was unpacked as the pair: Python's "too many values to unpack"
        raise InvalidValueError(f"reference: expected the pair (application rows, operator rows) that "
                                f"read_reference_any(path) returns, got {type(reference).__name__}; read the "
                                "reference CSV with perfml.learned.bundle.read_reference_any")
    app_ref, op_ref = reference if reference is not None else (None, None)
    if "tier" in original.columns:
        raise QueryValidationError(f"{where}: column 'tier' is an output column (the tier of the sub-model that "
                                   "answered the row: spec or calibrated); rename or drop it")
    parts = []
    tiers = np.empty(len(original), dtype=object)
    for route in ("described", "undescribed", "dlops"):
        idx = np.flatnonzero(routes == route)
        if not idx.size:
            continue
        name = bundle.name_for(route)
        model = None if name is None else bundle.models[name]
        tiers[idx] = "calibrated" if name in CALIBRATED_TIER else "spec"
        i = int(idx[0])
        if model is None:
            from perfml.learned.queries import _at

            trained = ", ".join(sorted(bundle.models)) or "none"
            raise UnsupportedQueryError(
                f"{_at(where, i)}: the model has no sub-model for {CORPUS_TITLES[route]} (it holds: {trained}); "
                "train one with `perfml train --out DIR` on every corpus (the default) or with the matching --source"
            )
        names = where if idx.size == len(original) else RowNames(where, idx)
        frame = original.iloc[idx].reset_index(drop=True)
        if route == "dlops":
            out = predict_operator_queries(model, frame, names, reference=op_ref, level=level,
                                           reference_where=_reference_names(op_ref, reference_where))
        else:
            out = predict_queries(model, frame, names, reference=app_ref, level=level,
                                  reference_where=_reference_names(app_ref, reference_where))
        parts.append((idx, out))
    if len(parts) == 1:  # the sub-model answered a renumbered copy: give the rows back the caller's index
        return _with_warnings(bundle, parts[0][1].assign(tier=tiers).set_axis(original.index))
    result = original.copy()
    for column in OUTPUT_COLUMNS:
        values = np.empty(len(original), dtype=object)
        for idx, out in parts:
            values[idx] = out[column].to_numpy(dtype=object)
        series = pd.Series(values, index=original.index)
        if column in ("predicted_ms", "lower_ms", "upper_ms"):
            series = series.astype(float)
        elif column in ("clamped_to_bound", "extrapolated"):
            series = series.astype(bool)
        result[column] = series
    result["tier"] = tiers
    return _with_warnings(bundle, result)


def _with_warnings(bundle: ModelBundle, result: pd.DataFrame) -> pd.DataFrame:
    """``result`` with ``attrs["warnings"]``: what the answers need said beside them, for API
    callers as `perfml predict` prints it (the launch floor of spec-only operator rows,
    :func:`perfml.learned.operator_queries.host_floor_note`)."""
    from perfml.learned.operator_queries import host_floor_note

    operators = bundle.model_for("dlops")
    note = host_floor_note(operators, result) if operators is not None else None
    result.attrs["warnings"] = [note] if note else []
    return result


def replace_card(path, text: str, *, data_home=None) -> dict:
    """Write ``text`` as the bundle's ``MODEL_CARD.md`` and re-hash the top manifest.

    The card quotes the figures ``perfml train`` printed, so it is written after training.
    The bundle is verified first (every file against the manifest); only the card and
    the top manifest change, the sub-models are untouched. Returns the new manifest.

    Raises
    ------
    ModelFormatError
        If ``path`` is not a valid version-3 bundle.
    """
    path = Path(path)
    bundle = load_predictor(path, data_home=data_home)
    meta = bundle.metadata_
    if meta.get("version") != BUNDLE_VERSION:
        raise ModelFormatError(f"{path}: not a multi-corpus bundle (version {meta.get('version')}); "
                               "give a directory written by this perfml's `perfml train`")
    (path / "MODEL_CARD.md").write_text(text)
    body = {k: v for k, v in meta.items() if k not in ("files", "manifest_sha256")}
    return write_manifest(path, body)
