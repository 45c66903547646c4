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

from perfml.learned.tiers import CALIBRATED_TIER, calibration_runs, data_corpus, is_calibration_run


def training_runtimes(data_home=None, source: str | None = None) -> pd.DataFrame:
    """Runtime rows (default GPU configuration) of every kernel, measured time in ``measured_ms``."""
    from perfml.datasets import load_runtimes
    from perfml.errors import PerfmlError

    rt = load_runtimes(data_home, source=source)
    rt = rt[rt["gpu_config"].fillna("default") == "default"]
    rt = rt.assign(measured_ms=rt["time_ms_mean"]).reset_index(drop=True)
    if rt.empty:
        raise PerfmlError(f"no runtimes of source {source!r} in the default GPU configuration; "
                          "choose a source of runtimes.csv.gz (its `source` column; the data home's README lists them)")
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


#: ``source`` of the training rows of a board measured with this project's tools
#: (:func:`measured_board_rows`): never one of the published corpora's sources
MEASURED_SOURCE = "perfml-measured"


def measured_board_rows(folder, *, registry=None) -> dict[str, pd.DataFrame]:
    """Training rows of a board measured with this project's tools (``sweeps/results/<board>/``).

    The folder is what ``experiments/measure_board_on_device.sh`` writes: a sweep result set
    (:mod:`perfml.measure.store`) whose application kernels of the nine described apps
    become ``described`` rows (:func:`perfml.measure.runtime_rows.application_runtime_rows`:
    the app's name, ``N`` as ``input_size``, the launch, the median CUDA-event time as
    ``measured_ms``; a launch two specs measured counts once, the latest), and an operator
    table ``dlops_torch.csv`` (``experiments/measure_dlops_torch.py``, NeuSight's protocol)
    whose calls become ``dlops`` rows. ``source`` is :data:`MEASURED_SOURCE` on every row.
    Either part may be missing, not both.

    These are measurements of another software stack than the corpora's (CUDA events
    around CuPy or PyTorch 2.11 calls, against nvprof kernel durations and PyTorch 2.1): a
    board's launch floor, in particular, is the host's and the stack's.

    Raises
    ------
    DatasetSchemaError
        The folder holds neither part, an operator table names several boards or lacks
        columns, or a part's board is not in the registry (``UnknownBoardError``).
    """
    from pathlib import Path

    import numpy as np

    from perfml.apps import get_app, list_apps
    from perfml.boards import resolve_board_name
    from perfml.errors import DatasetSchemaError
    from perfml.measure.runtime_rows import application_runtime_rows

    from perfml.learned.queries import LAUNCH_COLUMNS

    folder = Path(folder)
    out: dict[str, pd.DataFrame] = {}
    launch = list(LAUNCH_COLUMNS)
    if (folder / "manifest.json").is_file():
        apps = application_runtime_rows(folder, registry=registry)
        apps = apps[apps["app_id"].isin(list_apps())].drop_duplicates(["app_id", "input_size", *launch], keep="last")
        if len(apps):
            described = {a: get_app(a) for a in apps["app_id"].unique()}
            out["described"] = pd.DataFrame({
                "source": MEASURED_SOURCE,
                "board": apps["board"].to_numpy(),
                "app": apps["app_id"].map(lambda a: described[a].app).to_numpy(),
                "variant": apps["app_id"].map(lambda a: described[a].variant).to_numpy(),
                "app_id": apps["app_id"].to_numpy(),
                "gpu_config": "default",
                "input_size": apps["input_size"].astype(float).to_numpy(),
                "input_size_2": np.nan,
                **{c: apps[c].astype(float).to_numpy() for c in launch},
                "measured_ms": apps["time_ms"].astype(float).to_numpy(),
            })
    table = folder / "dlops_torch.csv"
    if table.is_file():
        ops = pd.read_csv(table)
        missing = [c for c in ("board", "op", "time_ms") if c not in ops.columns]
        if missing:
            raise DatasetSchemaError(f"{table}: missing column(s) {', '.join(missing)}; it is the output of "
                                     "experiments/measure_dlops_torch.py")
        boards = sorted(set(ops["board"].astype(str)))
        if len(boards) != 1:
            raise DatasetSchemaError(f"{table}: expected the calls of one board, found {boards}")
        board = resolve_board_name(boards[0], registry=registry)
        # every row checked here, by file, row and column, as a --reference row is (op, dimensions,
        # dtype, memory, measured time, roofline): the operator model's own checks cannot name the file
        from perfml._csv_header import read_text_csv
        from perfml.learned.operator_queries import check_operator_reference

        checked = check_operator_reference(read_text_csv(table), str(table))
        for d in ("B", "M", "N", "K", "H"):
            if d in checked.columns:
                ops[d] = checked[d].astype("Int64").array
        ops["time_ms"] = checked["time_ms"].to_numpy(dtype=float)
        out["dlops"] = ops.assign(source=MEASURED_SOURCE, board=board, measured_ms=ops["time_ms"].astype(float))
    if not out:
        raise DatasetSchemaError(f"{folder}: neither a sweep result set (manifest.json) with application kernels nor "
                                 "an operator table (dlops_torch.csv); give a folder written by "
                                 "experiments/measure_board_on_device.sh")
    return out


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


# -- every corpus: one sub-model each (perfml.learned.bundle) ---------------------------------
#: the source of the deep-learning operator corpus (dlops_runtimes.csv.gz)
DLOPS_SOURCE = "neusight-2025"


def operator_training_rows(data_home=None, *, max_rows: int | None = None, random_state: int = 0) -> pd.DataFrame:
    """Operator rows of ``dlops_runtimes.csv.gz`` (both NeuSight splits), measured time in ``measured_ms``.

    With ``max_rows``, a subsample of about that many rows drawn with ``random_state``,
    stratified by (board, op): every (board, op) keeps the same share of its rows, rounded
    down, and at least one, so each op class stays on every board (the floor of one row
    can take the total a little above ``max_rows``). Training on 2 cores with all 267k
    rows (and one more fit per board for the calibration) is slow; the subsample is the
    documented way to bound it, and the model card says when it was used.
    """
    import numpy as np

    from perfml.datasets import load_dlops_runtimes
    from perfml.errors import InvalidValueError

    rt = load_dlops_runtimes(data_home)
    rt = rt.assign(measured_ms=rt["time_ms"].astype(float))
    if max_rows is not None:
        if max_rows < 1:
            raise InvalidValueError(f"--dlops-rows must be a positive number of rows, found {max_rows}; give e.g. 40000")
        if max_rows < len(rt):
            share = max_rows / len(rt)
            rng = np.random.default_rng(random_state)
            keep = np.zeros(len(rt), dtype=bool)
            for _, idx in rt.groupby(["board", "op"], sort=True).indices.items():
                k = max(1, int(share * len(idx)))
                keep[rng.choice(idx, size=min(k, len(idx)), replace=False)] = True
            rt = rt[keep]
    return rt.reset_index(drop=True)


def corpus_rows(data_home=None, *, sources=None, corpora=None, dlops_max_rows: int | None = None,
                random_state: int = 0, exclude_boards=(), measured=()) -> dict[str, pd.DataFrame]:
    """Training rows per corpus (``described``, ``undescribed``, ``dlops``) of the data home.

    Parameters
    ----------
    sources : iterable of str, optional
        Keep only these sources: sources of ``runtimes.csv.gz`` (its ``source`` column)
        and :data:`DLOPS_SOURCE` for the operators. Default: every source.
    corpora : iterable of str, optional
        Keep only these corpora. Default: all three.
    dlops_max_rows : int, optional
        Subsample the operator rows (:func:`operator_training_rows`).
    exclude_boards : iterable of str
        Boards (registry names or aliases) whose rows are left out of every corpus: a
        model for which they are unseen (``perfml train --exclude-board``), to check a
        prediction for a board against its measurements.
    measured : iterable of dict
        Rows of boards measured with this project's tools (:func:`measured_board_rows`,
        ``perfml train --measured``), appended to the corpora of the same name that the
        selection keeps (``exclude_boards`` applies to them too).

    Raises
    ------
    InvalidValueError
        For an unknown source or corpus, or when nothing is left to train on.
    """
    from perfml.datasets import load_runtimes
    from perfml.errors import InvalidValueError
    from perfml.learned.bundle import CORPORA
    from perfml.learned.intervals import kernel_group

    corpora = tuple(corpora) if corpora else CORPORA
    bad = [c for c in corpora if c not in CORPORA]
    if bad:
        raise InvalidValueError(f"--corpus {bad[0]!r} is not a corpus; choose among {', '.join(CORPORA)}")
    known = sorted(set(load_runtimes(data_home)["source"].astype(str))) + [DLOPS_SOURCE]
    sources = tuple(sources) if sources else tuple(known)
    bad = [s for s in sources if s not in known]
    if bad:
        raise InvalidValueError(f"--source {bad[0]!r} is not a source of the data home; choose among {', '.join(known)}")
    out: dict[str, pd.DataFrame] = {}
    amaris = [s for s in sources if s != DLOPS_SOURCE]
    if amaris and ({"described", "undescribed"} & set(corpora)):
        rt = training_runtimes(data_home)
        rt = rt[rt["source"].astype(str).isin(amaris)].reset_index(drop=True)
        groups = kernel_group(rt["app_id"])
        for g in ("described", "undescribed"):
            part = rt[groups == g].reset_index(drop=True)
            if g in corpora and len(part):
                out[g] = part
    if DLOPS_SOURCE in sources and "dlops" in corpora:
        out["dlops"] = operator_training_rows(data_home, max_rows=dlops_max_rows, random_state=random_state)
    for parts in measured:
        for name, extra in parts.items():
            if name in out:  # a corpus --corpus / --source left out stays out
                out[name] = pd.concat([out[name], extra], ignore_index=True)
    out = _without_boards(out, exclude_boards)
    if not out:
        raise InvalidValueError(f"no training rows for corpora {', '.join(corpora)} in sources {', '.join(sources)}; "
                                "choose a source that holds the corpus (neusight-2025 for dlops)")
    return out


# -- the calibrated tier (issue 11 §3): a sub-model that takes the target's calibration -------
def calibration_mask(name: str, rows: pd.DataFrame):
    """Per row of ``rows``: is it a run of the sub-model's calibration kernels (all False for a spec-tier one)?"""
    import numpy as np

    if name not in CALIBRATED_TIER:
        return np.zeros(len(rows), dtype=bool)
    return is_calibration_run(rows, *CALIBRATED_TIER[name][1:])


def calibrated_tier_rows(name: str, rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``(rows of the boards that have calibration runs, the boards left out)`` for a calibrated-tier sub-model.

    A board without any run of the calibration kernels cannot be characterized as a
    target is, so its rows do not train the calibrated tier.
    """
    has = rows.loc[calibration_mask(name, rows), "board"].astype(str).unique()
    keep = rows["board"].astype(str).isin(has).to_numpy()
    return rows[keep].reset_index(drop=True), sorted(set(rows["board"].astype(str)) - set(has))


def training_characterizations(name: str, rows: pd.DataFrame) -> dict:
    """Per training board with calibration runs, its calibrated tier from those runs only.

    The same construction as a target's ``perfml predict --calibration`` (and the
    experiments' ``[characterization] tier = "calibrated"``): the training boards are
    characterized exactly as a target board will be, so the model learns from
    characterizations of the kind it is given.

    Raises
    ------
    CalibrationDataError
        A training board whose calibration runs cannot calibrate it (too few rows or sizes).
    """
    from perfml.characterize import calibrate_from_rows
    from perfml.errors import CalibrationDataError

    _, column, kernels = CALIBRATED_TIER[name]
    calibration = calibration_runs(rows, column, kernels)
    command = f"perfml train: calibrate_from_rows on the {', '.join(kernels)} runs of each training board"
    out = {}
    for board in sorted(calibration["board"].astype(str).unique()):
        try:
            out[board] = calibrate_from_rows(calibration, board, command=command)
        except CalibrationDataError as exc:
            raise CalibrationDataError(
                f"the calibrated-tier sub-model {name} characterizes each training board from its "
                f"{', '.join(kernels)} runs, and board {board} cannot be: {exc}; train on more rows "
                "(a larger --dlops-rows) or leave the calibrated tier out (--no-calibrated-tier)") from None
    return out


def _without_boards(rows: dict[str, pd.DataFrame], boards) -> dict[str, pd.DataFrame]:
    """``rows`` without the rows of ``boards``; a board in no corpus is refused (a typo would exclude nothing)."""
    from perfml.boards import same_board
    from perfml.errors import InvalidValueError

    boards = list(boards or ())
    if not boards:
        return rows
    present = sorted({str(b) for part in rows.values() for b in part["board"].astype(str).unique()})
    for board in boards:
        if not any(same_board(board, name) for name in present):
            raise InvalidValueError(f"--exclude-board {board!r}: no training row is of that board; choose among "
                                    f"{', '.join(present)}")
    out = {}
    for name, part in rows.items():
        names = part["board"].astype(str)
        drop = names.isin([n for n in names.unique() if any(same_board(b, n) for b in boards)])
        if (~drop).any():
            out[name] = part[~drop].reset_index(drop=True)
    if not out:
        raise InvalidValueError(f"--exclude-board left no training rows: the excluded boards ({', '.join(boards)}) "
                                "were every board of the chosen sources and corpora; exclude fewer boards")
    return out


def calibration_groups(corpus: str, rows: pd.DataFrame):
    """The interval group of each training row: kernel group (Amaris) or op class (operators)."""
    corpus = data_corpus(corpus)
    if corpus == "dlops":
        from perfml.operators import OP_CLASS

        return rows["op"].astype(str).map(dict(OP_CLASS)).to_numpy(dtype=object)
    from perfml.learned.intervals import kernel_group

    return kernel_group(rows["app_id"])


#: wave scaling per Amaris sub-model when ``perfml train`` is not told (``--wave-scaling``):
#: on for the kernels known only by measurements, off for the nine described apps (see
#: :func:`make_corpus_model`)
DEFAULT_WAVE_SCALING = {"described": False, "undescribed": True}


def make_corpus_model(corpus: str, *, data_home=None, random_state: int = 0, n_jobs: int | None = None,
                      wave_scaling=None, characterizations=None, shrinkage="auto"):
    """The unfitted default estimator of a corpus.

    Amaris corpora: :class:`~perfml.learned.regressors.RuntimeRegressor` (transfer baseline
    plus xgboost residual, its defaults, as :func:`fit_default`). Operators:
    :class:`perfml.learned.operators.OperatorRegressor` with its defaults.

    Both Amaris sub-models use the issue-limited compute rate (``compute_rate="issue"``,
    :func:`perfml.boards.issue_limited_flops`) and keep the learned residual with ``shrinkage="auto"`` (inner
    board-grouped cross-validation decides how much of it to trust). Under leave-one-board-out
    with the issue-limited rate it adds little on the NCA runs of the nine apps
    (hybrid_xgboost_issue 10.90 % vs transfer_only_issue 10.97 %,
    ``experiments/results/unseen_boards_issue.txt``) and more on the Rodinia kernels
    (20.06 % vs 21.69 %, ``experiments/results/rodinia_unseen_boards_issue.txt``).

    ``wave_scaling`` (Amaris sub-models only; ``perfml train --wave-scaling``): None takes
    :data:`DEFAULT_WAVE_SCALING`, on (``True``) for the undescribed sub-model and off for
    the described one. Forced on, the Rodinia experiment's leave-one-board-out goes from
    20.06 % to 15.53 % (``experiments/results/rodinia_unseen_boards_waves.txt``) and the
    undescribed sub-model's from 19.77 % to 19.41 % (within 0.8-1.2 of the
    measurement: 57.9 % -> 66.1 %; its 90 % interval 35 % wider, covering 88.0 %), while the described one
    gets worse (10.84 % -> 11.68 %; ``experiments/results/train_wave_scaling_default.txt``).
    ``"auto"`` is no way to choose: ``perfml train``'s own leave-one-board-out got worse with
    it on both (``experiments/results/train_wave_scaling.txt``: described 11.00 % -> 12.44 %,
    undescribed 19.77 % -> 22.03 % with 90 % interval coverage 82.4 %).

    ``shrinkage`` (Amaris sub-models only): the share of the learned residual, "auto" (the
    default: inner board-grouped cross-validation) or a number in [0, 1]; 0 is the transfer
    baseline alone (``experiments/learned_vs_transfer.py --sub-models``).
    """
    if corpus in ("dlops", "dlops-calibrated"):
        from perfml.learned.operators import OperatorRegressor

        if not (isinstance(shrinkage, str) and shrinkage == "auto"):
            from perfml.errors import InvalidValueError

            raise InvalidValueError(f"{corpus}: the operator model has no residual shrinkage (got {shrinkage!r}); "
                                    "give shrinkage only for the described / undescribed sub-models")

        # the calibrated tier: the char_* group and the achieved-peak base time (streaming
        # curve), each training board characterized from its own add calls
        tier = {"characterization": True, "characterizations": characterizations} if corpus != "dlops" else {}
        return OperatorRegressor(data_home=data_home, random_state=random_state, **tier,
                                 **({"n_jobs": int(n_jobs)} if n_jobs is not None else {}))
    from perfml.learned.regressors import RuntimeRegressor

    tier = {}
    if corpus in CALIBRATED_TIER:
        # the characterization features and the achieved-peak closed forms (streaming curve),
        # as hybrid_xgboost_characterized_issue_blend of experiments/unseen_boards_calibrated.toml.
        # The blended transfer carries a run by (compute ratio)^w x (bandwidth ratio)^(1-w),
        # w per app: with the achieved bandwidths it misses less than the one closed form per
        # app (leave-one-board-out 10.48 % -> 10.18 %, GTX-750 24.51 -> 21.37 %), with datasheet
        # bandwidths more (spec-only transfer 10.94 % -> 11.59 %), so only this tier has it
        # (experiments/results/unseen_boards_calibrated_blend.txt).
        tier = {"characterization": True, "closed_form_peaks": "characterized", "characterizations": characterizations,
                "baseline": "blend"}
        corpus = data_corpus(corpus)

    # the issue-limited compute rate carries simple kernels across architectures (Kepler's
    # 192-core SMX issues 128 lanes per clock without dual issue): leave-one-board-out MAPE
    # nine apps 11.93 % -> 10.90 %, Rodinia 24.53 % -> 20.06 %; leave-one-architecture-out
    # nine apps 64.1 % -> 39.0 %, Rodinia 56.0 % -> 27.8 % (experiments/results/*_issue.txt)
    if wave_scaling is None:
        wave_scaling = DEFAULT_WAVE_SCALING.get(corpus, False)
    return RuntimeRegressor(learner="xgboost", target="residual", data_home=data_home, compute_rate="issue",
                            wave_scaling=wave_scaling, shrinkage=shrinkage, **tier)


def fit_corpus(corpus: str, rows: pd.DataFrame, *, data_home=None, calibrate: bool = True, progress=None,
               random_state: int = 0, n_jobs: int | None = None, estimator=None, wave_scaling=None,
               shrinkage="auto", launch_progress=None, architecture_progress=None):
    """Fit one corpus's model; with ``calibrate``, its leave-one-board-out interval calibration too.

    Returns ``(model, calibration, oof)`` as :func:`fit_default` (calibration and oof None
    with fewer than three boards). ``estimator`` replaces the default one (tests);
    ``wave_scaling`` and ``shrinkage`` are :func:`make_corpus_model`'s. ``progress(board)``
    follows the leave-one-board-out folds, ``launch_progress(i)`` the launch folds
    (:func:`launch_fold_count` of them).

    A calibrated-tier sub-model (:data:`CALIBRATED_TIER`) characterizes every training
    board from its calibration runs (:func:`training_characterizations`); under the
    leave-one-board-out calibration the held-out board's characterization is likewise its
    own calibration runs only (the calibrated tier's protocol). Those runs fed the
    characterization, so they are not scored: the interval calibration leaves them out,
    and their out-of-fold predictions are NaN (:func:`corpus_figures` skips them).

    A runtime sub-model whose kernels were run at several block sizes also calibrates the
    interval of a launch no training board measured (the calibration's ``unmeasured_launch``
    entry, :func:`perfml.learned.intervals.calibrate_unmeasured_launch`), from out-of-fold
    predictions with the board *and* the block size held out
    (:func:`perfml.learned.intervals.launch_oof_predictions`).

    A sub-model whose boards span two architectures or more also calibrates the interval of a
    board of an architecture it never saw (the ``unseen_architecture`` entry,
    :func:`perfml.learned.intervals.calibrate_unseen_architecture`), from out-of-fold
    predictions with each architecture held out
    (:func:`perfml.learned.intervals.architecture_oof_predictions`;
    ``architecture_progress(architecture)`` follows those folds, :func:`architecture_fold_count`).
    """
    import numpy as np

    from perfml.learned.intervals import (architecture_oof_predictions, board_oof_predictions,
                                          calibrate as make_calibration, calibrate_unmeasured_launch,
                                          calibrate_unseen_architecture, launch_oof_predictions, log_scores)

    y = rows["measured_ms"].to_numpy(dtype=float)
    characterizations = None
    if corpus in CALIBRATED_TIER:
        lacking = calibrated_tier_rows(corpus, rows)[1]
        if lacking:
            from perfml.errors import InvalidValueError

            raise InvalidValueError(f"{corpus}: boards {', '.join(lacking)} have no calibration runs "
                                    f"({', '.join(CALIBRATED_TIER[corpus][2])}); keep only the rows of "
                                    "calibrated_tier_rows()")
        if estimator is None:  # a given estimator carries its own
            characterizations = training_characterizations(corpus, rows)
    est = estimator if estimator is not None else make_corpus_model(corpus, data_home=data_home,
                                                                   random_state=random_state, n_jobs=n_jobs,
                                                                   wave_scaling=wave_scaling,
                                                                   characterizations=characterizations,
                                                                   shrinkage=shrinkage)
    model = est.fit(rows, y)
    if not calibrate or rows["board"].nunique() < 3:
        return model, None, None
    oof = board_oof_predictions(model, rows, y, progress=progress)
    scored = ~calibration_mask(corpus, rows)
    oof[~scored] = np.nan
    calibration = make_calibration(log_scores(oof[scored], y[scored]), calibration_groups(corpus, rows)[scored],
                                   rows["board"].to_numpy()[scored])
    if launch_fold_count(corpus, rows) and hasattr(model, "unmeasured_launch_estimator"):  # the count CLI progress shows
        launch = launch_oof_predictions(model.unmeasured_launch_estimator(), rows, y, progress=launch_progress)
        launch[~scored] = np.nan
        entry = calibrate_unmeasured_launch(launch, y, rows["board"].to_numpy(), rows["app_id"].to_numpy())
        if entry is not None:
            calibration["unmeasured_launch"] = entry
    if architecture_fold_count(rows):
        arch_oof = architecture_oof_predictions(model, rows, y, progress=architecture_progress)
        arch_oof[~scored] = np.nan
        entry = calibrate_unseen_architecture(arch_oof, y, _architectures(rows), calibration_groups(corpus, rows),
                                              rows["board"].to_numpy())
        if entry is not None:
            calibration["unseen_architecture"] = entry
    return model, calibration, oof


def _architectures(rows: pd.DataFrame):
    """The registry architecture of each row's board."""
    from perfml.evaluation.protocols import LeaveOneArchitectureOut

    return LeaveOneArchitectureOut().groups_of(rows)


def architecture_fold_count(rows: pd.DataFrame) -> int:
    """How many architecture folds :func:`fit_corpus` runs for the unseen-architecture calibration (0: one architecture)."""
    if rows["board"].nunique() < 3:
        return 0
    n = len(set(_architectures(rows)))
    return n if n >= 2 else 0


def launch_fold_count(corpus: str, rows: pd.DataFrame) -> int:
    """How many (board, block size) folds :func:`fit_corpus` runs for the unmeasured-launch calibration."""
    from perfml.evaluation.protocols import LeaveOneBoardAndBlockSizeOut

    if data_corpus(corpus) == "dlops" or "block_x" not in rows.columns or rows["board"].nunique() < 3:
        return 0
    return LeaveOneBoardAndBlockSizeOut().get_n_splits(rows)


def corpus_figures(corpus: str, rows: pd.DataFrame, oof, level: float = 0.90) -> list[dict]:
    """Leave-one-board-out figures of a corpus, overall and per interval group.

    Each entry: ``group``, ``rows``, ``mape`` (%), ``in_band`` (% of rows within
    [0.8, 1.2] of the measurement), ``coverage`` (% of held-out-board rows inside the
    ``level`` interval calibrated on the other boards, :func:`held_out_board_coverage`),
    ``mean_relative_width`` (None where a held-out board's interval is unbounded: the other
    boards hold too few of the group's rows for the level). Rows whose out-of-fold prediction is NaN (a calibrated
    tier's calibration runs, :func:`fit_corpus`) are not scored.
    """
    import numpy as np

    from perfml.learned.intervals import held_out_board_coverage

    oof = np.asarray(oof, dtype=float)
    scored = ~np.isnan(oof)  # a calibrated tier's calibration runs are not scored (fit_corpus)
    rows, oof = rows[scored], oof[scored]
    y = rows["measured_ms"].to_numpy(dtype=float)
    groups = calibration_groups(corpus, rows)
    boards = rows["board"].astype(str).to_numpy()
    ape = np.abs(oof / y - 1.0)
    out = []
    for g in dict.fromkeys(groups):
        m = groups == g
        cov = held_out_board_coverage(oof[m], y[m], boards[m], level)
        out.append({"group": str(g), "rows": int(m.sum()), "mape": float(100 * ape[m].mean()),
                    "in_band": float(100 * np.mean(ape[m] <= 0.2)), "coverage": float(100 * cov["coverage"]),
                    "mean_relative_width": cov["mean_relative_width"]})  # None: unbounded (too few rows)
    n = float(sum(e["rows"] for e in out))
    widths = [e["mean_relative_width"] for e in out]
    overall = {"group": "all", "rows": len(rows), "mape": float(100 * ape.mean()), "in_band": float(100 * np.mean(ape <= 0.2)),
               # each row is covered by its own group's interval (as at prediction time): weight the groups by rows
               "coverage": sum(e["coverage"] * e["rows"] for e in out) / n,
               "mean_relative_width": None if None in widths else sum(w * e["rows"] for w, e in zip(widths, out)) / n}
    return [overall] + (out if len(out) > 1 else [])
