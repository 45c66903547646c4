"""Run an experiment definition: every model under one protocol, side by side, in MLflow.

For each model the runner computes out-of-fold predictions under the experiment's
protocol (the one harness, :func:`perfml.evaluation.cross_val_predictions`), scores them overall, per board
and per app, and logs to MLflow (its default local SQLite store unless
``MLFLOW_TRACKING_URI`` says otherwise): parameters, metrics, the predictions, the
seed 003 style T_k/T_m box plots, predicted vs measured, residuals, feature
importances, and, for learned xgboost models, the model refitted on all rows with its
signature. The best learned model is registered in the MLflow model registry.
"""

from __future__ import annotations

import contextlib

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel  # noqa: F401  (former home, kept as alias)
from perfml.errors import ExperimentSpecError
from perfml.evaluation.metrics import score_table, summarize
from perfml.experiments.spec import ExperimentSpec, ModelSpec

REGISTERED_MODEL_PREFIX = "perfml"


def build_estimator(model: ModelSpec, data_home=None, storage=None, random_state: int = 0, registry=None,
                    characterizations=None, corpus: str = "runtimes", n_jobs: int | None = None):
    """The scikit-learn regressor on runtime rows an experiment's model entry describes.

    ``data_home`` (a :class:`perfml.datasets.DataHome`) and ``registry`` (a
    :class:`perfml.boards.Registry`, default registry when None) are handed to it, and
    ``characterizations`` (board -> Characterization) to a model that uses them
    (``characterized = true``, or the learned ``characterization`` / ``closed_form_peaks`` features).
    ``corpus="dlops"``: a model on operator rows (:mod:`perfml.experiments.dlops`).
    ``n_jobs``: threads of a learned model's learner (None: the estimator's default, 2 for
    :class:`~perfml.learned.regressors.RuntimeRegressor`, 1 for the operator models); a
    closed form has none. xgboost's ``hist`` trees do not depend on it.
    """
    if corpus == "dlops":
        from perfml.experiments.dlops import build_operator_estimator

        return build_operator_estimator(model, random_state, registry,
                                        characterizations if model.uses_characterization else None,
                                        **({"n_jobs": n_jobs} if n_jobs else {}))
    if model.kind == "closed_form":
        extra = {"characterizations": characterizations} if model.characterized else {}
        if model.model == "bsp":
            from perfml.closed_form.bsp import BSPModel

            return BSPModel(data_home=data_home, registry=registry,
                            **(extra and {**extra, "latencies": "characterized"}))
        if model.model == "roofline":
            from perfml.closed_form.roofline import RooflineModel

            return RooflineModel(registry=registry, **(extra and {**extra, "peaks": "characterized"}))
        return HongKimRuntimeModel(data_home=data_home, **(extra and {**extra, "hardware": "characterized"}))
    from perfml.learned.regressors import RuntimeRegressor

    feats = dict(model.features)
    subset = feats.pop("subset", None)
    est = RuntimeRegressor(
        learner=model.learner,
        target=model.target,
        learner_params=dict(model.params) or None,
        feature_subset=tuple(subset) if subset else None,
        baseline=model.baseline,
        shrinkage=model.shrinkage,
        random_state=random_state,
        data_home=data_home,
        registry=registry,
        **({"characterizations": characterizations} if model.uses_characterization else {}),
        **({"n_jobs": n_jobs} if n_jobs else {}),
        **feats,
    )
    if model.tune:
        from perfml.learned.tuned import TunedRegressor

        return TunedRegressor(
            est,
            n_trials=int(model.tune.get("n_trials", 10)),
            n_splits=int(model.tune.get("n_splits", 3)),
            storage=storage,
            study_prefix=f"{model.name}",
            random_state=random_state,
        )
    return est


def experiment_data(spec: ExperimentSpec, data_home=None) -> pd.DataFrame:
    """The runtime rows an experiment uses (default GPU configuration; described apps unless ``undescribed``)."""
    from perfml.evaluation.closed_form import describable_runtimes

    data = spec.data
    if spec.corpus == "dlops":
        from perfml.experiments.dlops import operator_data

        return operator_data(spec, data_home)
    if data.get("undescribed"):
        # Kernels without a description (e.g. Rodinia) too: only the learned models and
        # the transfer baseline can predict them.
        from perfml.datasets import load_runtimes

        with _source_named_by(spec, "data", "source"):
            rt = load_runtimes(data_home, source=data.get("source"))
        rt = rt[rt["gpu_config"].fillna("default") == "default"]
        rt = rt.assign(measured_ms=rt["time_ms_mean"])
    else:
        with _source_named_by(spec, "data", "source"):
            rt = describable_runtimes(data_home, source=data.get("source"))
    for key, column in (("boards", "board"), ("apps", "app_id")):
        if data.get(key):
            _check_named_rows(spec, key, data[key], rt[column])
            rt = rt[rt[column].isin(data[key])]
    if data.get("block_sizes"):
        rt = rt[(rt["block_x"] * rt["block_y"].fillna(1)).isin(data["block_sizes"])]
    return rt.reset_index(drop=True)


@contextlib.contextmanager
def _source_named_by(spec: ExperimentSpec, table: str, key: str):
    """An unknown source is the experiment file's error: named with its path, table and key
    (the loader's message named only "runtimes")."""
    from perfml.errors import ExperimentSpecError, UnknownSourceError

    try:
        yield
    except UnknownSourceError as exc:
        raise ExperimentSpecError(f"{spec.path}: [{table}] {key}: {exc}") from None


def _check_named_rows(spec: ExperimentSpec, key: str, names, present: pd.Series) -> None:
    """Refuse a ``[data]`` board or app that no row of the source holds: it was dropped silently,
    so a misspelt app ("VECTORADD") left the experiment scoring the others alone."""
    import difflib

    from perfml.errors import ExperimentSpecError

    held = sorted(present.astype(str).unique())
    for name in names:
        if name not in held:
            close = difflib.get_close_matches(name, held, n=3, cutoff=0.5) or [
                h for h in held if h.lower() == str(name).lower()]
            hint = f"closest: {', '.join(close)}" if close else f"it holds: {', '.join(held[:20])}"
            source = spec.data.get("source") or "the data home"
            raise ExperimentSpecError(f"experiment {spec.name!r}: [data] {key} names {name!r}, which no row of {source} "
                                      f"holds ({hint}); names are case-sensitive")


def calibration_rows(spec: ExperimentSpec, rt: pd.DataFrame, data_home=None) -> pd.DataFrame:
    """The runs that calibrate the boards of ``rt`` (empty for the spec-only tier).

    The rows of the calibration kernels (:func:`calibration_kernels`: ``calibration_apps``,
    default ``["vectorAdd"]``; dlops ``calibration_ops``, default ``["add"]``) on the boards of
    ``rt``: from ``rt`` itself, or, with ``calibration_source``, from that source of
    ``runtimes.csv`` (default GPU configuration), e.g. the Rodinia boards' vectorAdd runs
    of the nine-app source.

    Raises
    ------
    CalibrationDataError
        A board of ``rt`` without any calibration run (the message names every such board).
    """
    column, apps = calibration_kernels(spec)
    if not apps:
        return rt.iloc[:0]
    source = spec.characterization.get("calibration_source")
    if source is None:
        pool = rt
    else:
        from perfml.datasets import load_runtimes

        with _source_named_by(spec, "characterization", "calibration_source"):
            pool = load_runtimes(data_home, source=source)
        pool = pool[pool["gpu_config"].fillna("default") == "default"]
    pool = pool[pool[column].isin(apps) & pool["board"].isin(rt["board"].unique())]
    missing = sorted(set(rt["board"]) - set(pool["board"]))
    if missing:
        from perfml.errors import CalibrationDataError

        where = f"source {source!r}" if source else "the experiment's rows"
        raise CalibrationDataError(
            f"experiment {spec.name}: no {', '.join(apps)} run of board(s) {', '.join(missing)} in {where}; "
            "choose other calibration_apps / calibration_source or drop those boards with [data] boards"
        )
    return pool


def calibrated_characterizations(spec: ExperimentSpec, rt: pd.DataFrame, data_home=None) -> dict | None:
    """Per board of ``rt``, the calibrated tier of issue 11 §3 (None for the spec-only tier).

    Each board's characterization is :func:`perfml.characterize.calibrate_from_rows` of
    that board's calibration runs only (:func:`calibration_rows`): under a held-out-board
    protocol the held-out board contributes nothing but those runs, and the runner keeps
    them out of the score.
    """
    if spec.characterization.get("tier") != "calibrated":
        return None
    from perfml.characterize import calibrate_from_rows
    from perfml.learned.tiers import calibration_runs

    column, kernels = calibration_kernels(spec)
    calibration = calibration_runs(calibration_rows(spec, rt, data_home), column, kernels)
    source = spec.characterization.get("calibration_source")
    command = (f"experiment {spec.name}: calibrate_from_rows on the {', '.join(kernels)} rows of each board"
               + (f" (source {source})" if source else ""))
    return {board: calibrate_from_rows(calibration, board, command=command) for board in sorted(rt["board"].unique())}


def calibration_kernels(spec: ExperimentSpec) -> tuple[str, list[str]]:
    """(kernel column, kernels) whose runs calibrate a board (no kernels for the spec-only tier)."""
    column = "op" if spec.corpus == "dlops" else "app_id"
    if spec.characterization.get("tier") != "calibrated":
        return column, []
    if spec.corpus == "dlops":
        return column, list(spec.characterization.get("calibration_ops", ["add"]))
    return column, list(spec.characterization.get("calibration_apps", ["vectorAdd"]))


def calibration_apps(spec: ExperimentSpec) -> list[str]:
    """The kernels whose runs calibrate a board (none for the spec-only tier)."""
    return calibration_kernels(spec)[1]


def group_column(spec: ExperimentSpec) -> str:
    """The column per-kernel scores are grouped by: ``app_id``, or ``op_class`` for the dlops corpus."""
    from perfml.experiments.dlops import GROUP_COLUMN

    return GROUP_COLUMN if spec.corpus == "dlops" else "app_id"


def experiment_splitter(spec: ExperimentSpec, random_state: int = 0):
    """The protocol's splitter, capped to ``max_train_rows_per_group`` training rows per group when asked."""
    from perfml.evaluation.protocols import CappedTrainSplit, get_protocol

    splitter = get_protocol(spec.protocol)
    cap = spec.data.get("max_train_rows_per_group")
    if cap is None:
        return splitter
    if spec.corpus == "dlops":  # the same calls are kept on every board (the transfer features need them)
        from perfml.experiments.dlops import CAP_COLUMNS
        from perfml.learned.operator_model._transfer import KEY_COLUMNS

        return CappedTrainSplit(splitter, int(cap), CAP_COLUMNS, random_state=random_state,
                                same_rows_by=KEY_COLUMNS)
    return CappedTrainSplit(splitter, int(cap), ("board", "app_id"), random_state=random_state)


def scored_mask(spec: ExperimentSpec, rt: pd.DataFrame) -> np.ndarray:
    """Which rows of ``rt`` are scored: all but the calibration runs (they fed the characterization).

    With a ``calibration_source`` other than the scored rows' own, the calibration runs are
    not among ``rt`` and every row is scored.
    """
    source = spec.characterization.get("calibration_source")
    if source is not None and source != spec.data.get("source"):
        return np.ones(len(rt), dtype=bool)
    column, kernels = calibration_kernels(spec)
    return ~rt[column].isin(kernels).to_numpy()


def check_selection(spec: ExperimentSpec, rt: pd.DataFrame, y, random_state: int = 0) -> None:
    """Refuse a ``[data]`` selection that leaves the protocol nothing to do, before any model runs.

    No rows at all (an app, board or block size the source does not hold), or rows the
    protocol cannot split (leave-one-board-out over one board) were internal errors deep in
    scikit-learn's splitters. Raises :class:`~perfml.errors.ExperimentSpecError` naming
    the selection and the fix.
    """
    from perfml.errors import ExperimentSpecError

    selection = ", ".join(f"{k} = {v!r}" for k, v in spec.data.items()) or "the whole source"
    if len(rt) == 0:
        raise ExperimentSpecError(f"experiment {spec.name!r}: [data] ({selection}) selects no rows; name a source, "
                                  "boards, apps and block sizes the data home holds (its README lists the sources and "
                                  "boards of each table)")
    try:
        n_splits = sum(1 for _ in experiment_splitter(spec, random_state).split(rt, y))
    except ValueError as exc:
        n_splits, why = 0, f": {exc}"
    else:
        why = ""
    if n_splits == 0:
        noun, column, fix = _HELD_OUT.get(spec.protocol, _HELD_OUT["leave-one-board-out"])
        if column not in rt:  # an operator corpus names its kernels by op
            noun, column, fix = _HELD_OUT["leave-one-board-out"]
        raise ExperimentSpecError(
            f"experiment {spec.name!r}: protocol {spec.protocol!r} finds no split of the {len(rt)} rows of [data] "
            f"({selection}; {rt[column].nunique()} {noun}(s)){why}; select rows of more {noun}s ({fix})")


#: What a protocol holds out (noun, column, why), for the fix of a selection it cannot split.
_HELD_OUT = {
    "leave-one-board-out": ("board", "board", "a held-out board needs others to train on"),
    "leave-one-app-out": ("app", "app_id", "a held-out app needs others to train on"),
    "size-extrapolation": ("size", "input_size", "each app is trained on its smaller sizes and predicts its larger ones"),
    "size-cv": ("size", "input_size", "the folds are grouped by input size"),
}


@dataclass
class ExperimentResult:
    """Side-by-side scores of an experiment's models."""

    name: str
    summary: pd.DataFrame
    per_board: pd.DataFrame
    per_app: pd.DataFrame
    predictions: pd.DataFrame
    #: corpus-specific tables (dlops: per_class, per_class_split, neusight_comparison)
    tables: dict = field(default_factory=dict)


def run_experiment(
    spec: ExperimentSpec,
    *,
    data_home=None,
    track: bool = True,
    storage: str | None = None,
    random_state: int = 0,
    models: list[str] | None = None,
    progress=None,
    recovery_wait_s: float | None = None,
    n_jobs: int | None = None,
) -> ExperimentResult:
    """Run ``spec`` (a comparison) and return the side-by-side table (and log it to MLflow).

    ``n_jobs``: threads of each learned model's learner (:func:`build_estimator`; None: the
    models' defaults). The folds run one after the other unless a joblib backend is active.

    ``recovery_wait_s``: how long to wait for a tracking server that failed mid-run to
    answer again, to mark the unfinished runs FAILED (default
    :data:`perfml.experiments.tracking.RECOVERY_WAIT_S`; the CLI passes
    ``$PERFML_TRACKING_RECOVERY_S``).
    """
    from perfml.datasets import as_data_home
    from perfml.experiments.tracking import failed_runs_marked

    data_home = as_data_home(data_home, what="run_experiment")  # one DataHome for every model: tables read once
    rt = experiment_data(spec, data_home)
    y = rt["measured_ms"].to_numpy(dtype=float)
    check_selection(spec, rt, y, random_state)
    unknown = sorted(set(models or ()) - {m.name for m in spec.models})
    if unknown:  # a misspelt --model ran nothing ("No objects to concatenate") or was skipped silently
        raise ExperimentSpecError(f"experiment {spec.name!r} has no model {', '.join(map(repr, unknown))}; "
                                  f"choose among {', '.join(m.name for m in spec.models)} (its [[models]] names)")
    selected = [m for m in spec.models if models is None or m.name in models]
    characterizations = calibrated_characterizations(spec, rt, data_home)
    # the calibrated tier: a board's calibration runs feed its characterization, so they are never scored
    excluded = ~scored_mask(spec, rt)
    with failed_runs_marked(spec.name, recovery_wait_s) as guard:  # on failure no run is left RUNNING
        return _run_models(spec, rt, y, selected, data_home, storage, random_state, track, progress, guard,
                           characterizations, excluded, n_jobs)


def _refuse_diverged(spec, model, pred, counted) -> None:
    """Stop when a model predicts longer than any kernel runs (or overflows): its MAPE would be a
    meaningless 1e273 %. A NaN prediction stays what it was, a row the model cannot predict."""
    from perfml.datasets import MAX_KERNEL_MS
    from perfml.errors import ModelDivergedError

    p = pred["predicted_ms"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        diverged = np.flatnonzero(counted & (np.isinf(p) | (p > MAX_KERNEL_MS)))
    if not len(diverged):
        return
    row = pred.iloc[int(diverged[0])]
    where = ", ".join(f"{k} {row[k]}" for k in ("board", "app_id", "op", "input_size") if k in pred.columns and pd.notna(row[k]))
    cap = spec.data.get("max_train_rows_per_group")
    hint = f" (max_train_rows_per_group = {cap})" if cap else ""
    raise ModelDivergedError(
        f"experiment {spec.name!r}, model {model.name!r}: {len(diverged)} held-out prediction(s) longer than any kernel "
        f"runs ({MAX_KERNEL_MS:g} ms), e.g. {p[diverged[0]]:.3g} ms for {where}: the learner extrapolates far beyond "
        f"its training rows{hint}; give it more training rows, fewer features or another learner")


def _run_models(spec, rt, y, selected, data_home, storage, random_state, track, progress, guard,
                characterizations, excluded, n_jobs=None) -> ExperimentResult:
    """The fold loop of :func:`run_experiment` over ``selected`` models; logs as it goes."""
    from perfml.evaluation.harness import cross_val_predictions

    rows, per_board, per_app, preds, scored_by_model = [], [], [], [], {}
    group = group_column(spec)
    splitter = experiment_splitter(spec, random_state)
    mlflow, parent = _start_parent(spec, rt, track, guard.parents)
    for model in selected:
        if progress:
            progress(f"{model.name}: {spec.protocol} over {len(rt)} rows")
        est = build_estimator(model, data_home, storage, random_state, characterizations=characterizations,
                              corpus=spec.corpus, n_jobs=n_jobs)
        t0 = time.perf_counter()
        pred = cross_val_predictions(est, rt, y, splitter)
        seconds = time.perf_counter() - t0
        pred["model"] = model.name
        predicted = (np.isfinite(pred["predicted_ms"]) & (pred["predicted_ms"] > 0)).to_numpy()
        counted = ~excluded[pred.index]
        _refuse_diverged(spec, model, pred, counted)
        scored = pred[predicted & counted]
        if scored.empty:  # no score to give (the per-board table and the plots divided by zero)
            raise ExperimentSpecError(
                f"experiment {spec.name!r}, model {model.name!r}: predicts none of the {int(counted.sum())} selected rows "
                "(a closed form describes only the kernels it has a description of); select rows it describes "
                "(e.g. drop [data] undescribed = true) or remove the model")
        summary = {"model": model.name, "kind": model.kind, "tier": model.tier, "family": model.family, **summarize(scored["predicted_ms"], scored["measured_ms"]),
                   "n_unpredicted": int((counted & ~predicted).sum()), "cv_seconds": seconds}
        rows.append(summary)
        pb = score_table(scored, by=["board"]).assign(model=model.name)
        pa = score_table(scored, by=[group]).assign(model=model.name)
        per_board.append(pb)
        per_app.append(pa)
        preds.append(pred)
        scored_by_model[model.name] = scored
        if mlflow is not None:
            _log_model_run(mlflow, spec, model, est, rt, y, summary, pb, pa, scored, group, splitter)
    summary_frame = pd.DataFrame(rows)
    tables = {}
    if spec.corpus == "dlops":
        from perfml.experiments.dlops import operator_tables, published_neusight

        tables = operator_tables(scored_by_model, published_neusight(spec, data_home))
    elif spec.published:
        from perfml.experiments.published import published_summary

        pub = published_summary(spec.published.get("suite", "NCA"), spec.published.get("methods"), data_home)
        summary_frame = pd.concat([summary_frame, pub], ignore_index=True)
    result = ExperimentResult(
        spec.name,
        summary_frame,
        pd.concat(per_board, ignore_index=True),
        pd.concat(per_app, ignore_index=True),
        pd.concat(preds),
        tables,
    )
    if mlflow is not None:
        _log_summary(mlflow, spec, result)
        mlflow.end_run()
    return result


def parent_run_name(experiment: str) -> str:
    """The name of an experiment's parent run: the experiment, the local time to the second,
    the host (its first label) and the process id. Two runs of one file started within a
    second (two processes, or two hosts of a lab sharing a server) had one name, and could
    be told apart only by their run ids (helper probe)."""
    import os
    import socket

    host = socket.gethostname().split(".")[0] or "host"
    return f"{experiment}-{time.strftime('%Y%m%d-%H%M%S')}-{host}-{os.getpid()}"


def _start_parent(spec: ExperimentSpec, rt: pd.DataFrame, track: bool, started: list[str]):
    if not track:
        return None, None
    import mlflow

    mlflow.set_experiment(spec.name)
    parent = mlflow.start_run(run_name=parent_run_name(spec.name))
    started.append(parent.info.run_id)
    mlflow.set_tags({"perfml.experiment": spec.name, "perfml.kind": "experiment", "perfml.spec": spec.path})
    kernel = "op" if spec.corpus == "dlops" else "app_id"
    mlflow.log_params({
        "protocol": spec.protocol,
        "data": json.dumps(spec.data, sort_keys=True),
        "n_rows": len(rt),
        "boards": ",".join(sorted(rt["board"].unique())),
        "apps": ",".join(sorted(rt[kernel].astype(str).unique())),
        "characterization": json.dumps(spec.characterization, sort_keys=True),
    })
    mlflow.log_text(Path(spec.path).read_text(), "experiment.toml")
    return mlflow, parent


def _metric_key(*parts: str) -> str:
    return "/".join(str(p).replace("=", "_") for p in parts)


def _log_model_run(mlflow, spec, model: ModelSpec, est, rt, y, summary, pb, pa, scored, group="app_id", splitter=None):
    from perfml.experiments import plots

    with mlflow.start_run(run_name=model.name, nested=True):
        mlflow.set_tags({"perfml.experiment": spec.name, "perfml.model": model.name, "perfml.kind": model.kind,
                         "perfml.tier": model.tier, "perfml.family": model.family})
        params = {"kind": model.kind, "tier": model.tier, "learner": model.learner or "", "target": model.target if model.kind == "learned" else "",
                  "closed_form": model.model or "", "protocol": spec.protocol, "features": json.dumps(model.features),
                  "tune": json.dumps(model.tune)}
        params.update({f"param.{k}": v for k, v in (est.get_params(deep=False) if model.kind == "closed_form" else {}).items()
                       if isinstance(v, (int, float, str, bool, tuple))})
        params.update({f"learner.{k}": v for k, v in (model.params or {}).items()})
        mlflow.log_params(params)
        mlflow.log_metrics({k: float(summary[k]) for k in ("mape", "median_ape", "within_band", "spearman", "cv_seconds")
                            if np.isfinite(summary[k])} | {"n": summary["n"]})
        for frame, key in ((pb, "board"), (pa, group)):
            for rec in frame.to_dict("records"):
                for metric in ("mape", "median_ape", "within_band"):
                    if np.isfinite(rec[metric]):
                        mlflow.log_metric(_metric_key(metric, key, rec[key]), float(rec[metric]))
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            scored.to_csv(tmp / "predictions.csv", index=False)
            plotted = scored if "app_id" in scored.columns else scored.assign(app_id=scored[group])
            plots.ratio_boxplots(plotted, tmp / "tk_over_tm_per_board.png", f"{model.name}: T_k/T_m per board ({spec.protocol})")
            plots.predicted_vs_measured(plotted, tmp / "predicted_vs_measured.png", model.name)
            plots.residual_histogram(plotted, tmp / "residuals.png", model.name)
            if spec.corpus == "dlops":
                _log_operator_model(mlflow, model, est, rt, y, splitter, tmp)
            elif model.kind == "learned":
                final = est.fit(rt, y)
                reg = getattr(final, "estimator_", final)
                imp = reg.feature_importances()
                if len(imp):
                    imp.to_csv(tmp / "feature_importances.csv", header=["importance"])
                    plots.feature_importances(imp, tmp / "feature_importances.png", f"{model.name}: feature importances")
                if reg.learner == "xgboost":
                    _log_xgboost_model(mlflow, reg, rt, tmp)
            mlflow.log_artifacts(str(tmp))


def _log_operator_model(mlflow, model: ModelSpec, est, rt, y, splitter, tmp: Path):
    """dlops corpus: refit a learned OperatorRegressor on every (capped) row; log its importances and booster."""
    if model.kind != "learned" or not hasattr(est, "learner_params"):
        return
    keep = splitter.kept(rt) if hasattr(splitter, "kept") else np.ones(len(rt), dtype=bool)
    final = est.fit(rt[keep], y[keep])
    from perfml.experiments import plots

    # What an "auto" feature group resolved to on every row, so a reader of the run sees it
    selections = {name: getattr(final, attr, None)
                  for name, attr in (("transfer", "transfer_selection_"), ("board_identity", "board_identity_selection_"))}
    selections = {name: value for name, value in selections.items() if value is not None}
    if selections:
        (tmp / "auto_selection.json").write_text(json.dumps(selections, indent=2, default=str))
        if getattr(final, "transfer_classes_", None) is not None:
            mlflow.set_tag("perfml.transfer_classes", ",".join(final.transfer_classes_) or "none")

    imp = final.feature_importances()
    imp.to_csv(tmp / "feature_importances.csv", header=["importance"])
    plots.feature_importances(imp, tmp / "feature_importances.png", f"{model.name}: feature importances")
    final.model_.save_model(str(tmp / "booster.json"))


def _log_xgboost_model(mlflow, reg, rt, tmp: Path):
    """Log the fitted booster (xgboost JSON) with its signature, plus perfml's model directory."""
    import mlflow.xgboost
    from mlflow.models import infer_signature

    from perfml.learned.persistence import save_model

    features = reg.features_.transform(rt.head(200)).reindex(columns=reg.feature_names_)
    signature = infer_signature(features, reg.model_.predict(features.to_numpy(dtype=float)))
    mlflow.xgboost.log_model(reg.model_, name="booster", signature=signature, model_format="json",
                             input_example=features.head(3))
    save_model(reg, tmp / "perfml_model")


def _log_summary(mlflow, spec: ExperimentSpec, result: ExperimentResult):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        result.summary.to_csv(tmp / "summary.csv", index=False)
        result.per_board.to_csv(tmp / "per_board.csv", index=False)
        result.per_app.to_csv(tmp / "per_app.csv", index=False)
        for name, table in result.tables.items():
            table.to_csv(tmp / f"{name}.csv", index=False)
        mlflow.log_artifacts(str(tmp))
    if "per_class" in result.tables:
        for rec in result.tables["per_class"].to_dict("records"):
            if np.isfinite(rec["mape"]):
                mlflow.log_metric(_metric_key("mape", rec["model"], "op_class", rec["op_class"]), float(rec["mape"]))
        for rec in result.tables["neusight_comparison"].to_dict("records"):
            if not str(rec["model"]).startswith("published:") and np.isfinite(rec["sum_ape"]):
                mlflow.log_metric(_metric_key("neusight_sum_ape", rec["model"], rec["op_class"]), float(rec["sum_ape"]))
    for rec in result.summary[result.summary["kind"] != "published"].to_dict("records"):
        if np.isfinite(rec["mape"]):
            mlflow.log_metric(_metric_key("mape", rec["model"]), float(rec["mape"]))
            mlflow.log_metric(_metric_key("within_band", rec["model"]), float(rec["within_band"]))
    ran = set(result.summary.loc[result.summary["kind"] != "published", "model"])
    if ran != {m.name for m in spec.models}:
        # a --model subset: tagged, and never the registered model of the experiment (a subset of
        # one bad model became the latest registry version) nor, where a full run exists, the
        # run `perfml report` shows (perfml.experiments.tracking._latest_runs)
        from perfml.experiments.tracking import SUBSET_TAG

        mlflow.set_tag(SUBSET_TAG, ",".join(sorted(ran)))
        return
    if spec.corpus == "dlops":  # its boosters are logged as booster.json artifacts, not as MLflow models
        return
    learned = result.summary[result.summary["kind"] == "learned"]
    xgb = [m.name for m in spec.models if m.kind == "learned" and m.learner == "xgboost" and m.register]
    learned = learned[learned["model"].isin(xgb)]
    if learned.empty:
        return
    best = learned.sort_values("mape").iloc[0]["model"]
    client = mlflow.tracking.MlflowClient()
    runs = client.search_runs(
        [mlflow.active_run().info.experiment_id],
        filter_string=f"tags.perfml.model = '{best}' and tags.`mlflow.parentRunId` = '{mlflow.active_run().info.run_id}'",
    )
    if runs:
        mlflow.set_tag("perfml.best_model", best)
        mlflow.register_model(f"runs:/{runs[0].info.run_id}/booster", f"{REGISTERED_MODEL_PREFIX}-{spec.name}")


def run_table2_experiment(spec: ExperimentSpec, *, data_home=None, track: bool = True,
                          recovery_wait_s: float | None = None) -> dict[str, pd.DataFrame]:
    """The ``bsp_table2`` kind: seed 003 Table II per set of runs, and the band shares (``recovery_wait_s``: see :func:`run_experiment`)."""
    from perfml.experiments.bsp_table2 import band_shares, reproduce_table2

    runs = spec.table2.get("runs", ["script"])
    tables = {f"table2_{r}": reproduce_table2(r, data_home) for r in runs}
    tables["bands"] = band_shares(data_home, reference_board=spec.table2.get("reference_board", "GTX-680"))
    if track:
        import mlflow

        from perfml.experiments.tracking import failed_runs_marked

        mlflow.set_experiment(spec.name)
        with failed_runs_marked(spec.name, recovery_wait_s) as guard, \
                mlflow.start_run(run_name=parent_run_name(spec.name)) as run:
            guard.parents.append(run.info.run_id)
            mlflow.set_tags({"perfml.experiment": spec.name, "perfml.kind": "bsp_table2"})
            mlflow.log_params({"runs": ",".join(runs), "reference_board": spec.table2.get("reference_board", "GTX-680")})
            for name, table in tables.items():
                if name.startswith("table2_"):
                    covered = table[table["covered"]]
                    mlflow.log_metric(f"{name}/cells_within_10pct", float(covered["within_tolerance"].sum()))
                    mlflow.log_metric(f"{name}/cells_covered", float(len(covered)))
                    mlflow.log_metric(f"{name}/max_abs_rel_diff", float(covered["rel_diff"].abs().max()))
            mlflow.log_metric("bands/per_board_mean", float(tables["bands"]["within_band_per_board"].mean()))
            mlflow.log_metric("bands/reference_mean", float(tables["bands"]["within_band_reference"].mean()))
            with tempfile.TemporaryDirectory() as tmp:
                for name, table in tables.items():
                    table.to_csv(Path(tmp) / f"{name}.csv", index=False)
                mlflow.log_artifacts(tmp)
    return tables
