"""``OperatorRegressor``: runtime of a deep-learning operator call on a board, learned on top of its roofline.

The model predicts a call's time as its roofline lower bound times a learned factor:

    T = max(T_base * exp(f(x)), T_bound),  T_bound = max(FLOPs / peak FP32, bytes / peak bandwidth)

with ``T_base = T_floor(op) + T_bound`` (spec peaks; ``T_floor`` the operator's launch
floor learned from the training boards' work-free calls,
:mod:`~perfml.learned.operator_model._floor`: latency plus work at the roof, so that a
call smaller than any trained on is predicted at the floor, not at its nanosecond
bound), or with ``characterization=True`` the roofline of the board's achieved peaks
(``max(T_achieved, T_bound)``), whose memory roof is the board's streaming curve where its
characterization has one (:mod:`perfml.characterize.stream_curve`: the time the board's
element-wise ``add`` took for the same number of bytes, so that L2-resident,
latency-bound and launch-bound sizes are carried as measured, not through one bandwidth
figure),

and ``f`` (gradient-boosted trees, xgboost ``hist``) is fitted to the residual
``r = log(T / T_base)`` (spec-only: over the floor plus the bound; with
``characterization=True``: against the roofline of the board's *achieved* peaks, never
below the spec one). For a call well above its floor ``exp(-r)`` is the share of the bounding roof the call achieved:
NeuSight [1]_ predicts exactly such a utilization (per tile and wave, Section 4, latency =
work / (peak x utilization)) rather than the time itself, so that what is learned is
bounded and carries across GPUs while the peaks carry the scale. Here the learner sees
the call's work and shape, where the work and the board meet (footprint against L2,
intensity against the ridge point, outputs per SM, the roofline times), the tiles and
waves of the call on the board (NeuSight Section 4, :mod:`~perfml.learned.operator_model._tiles`),
optionally the board's characterization (achieved bandwidth, FP32 and launch floor;
issue 11) and the same call's residual on the other training boards (Habitat-style
transfer [2]_).

Why no board-identity features by default (``board_identity=False``): the raw board
figures (log peak FP32, bandwidth, ridge point, SMs, L2, clock) take five distinct
values in the corpus, so a tree splitting on them learns each training board apart and
sends a board never seen down the branch of whichever training board lies on the same
side of a threshold: a nearest-board lookup on one figure. Without them the residual is
a function of relative quantities (work against the board's roofline, L2 and SM count),
which is what carries across GPUs (NeuSight's per-tile utilization argument). Measured
under leave-one-board-out (experiments/dlops_unseen_boards.toml, no transfer group):
MAPE 27.4% with the board figures, 23.4% without (the figures of
experiments/results/dlops_unseen_boards.txt come from the default).

The characterization's board-level figures (``char_log_dram_bandwidth``,
``char_log_fp32_throughput``, their ratios to the datasheet, ``char_log_launch_floor_ms``:
one value per board, :data:`~perfml.learned.operator_model._features.BOARD_LEVEL_CHAR`)
are board figures of the same kind and follow the same switch. What the characterization
says about a *row* stays: its base time (the achieved-peak roofline, memory roof from the
streaming curve), ``char_log_bound_ms`` and ``char_log_floor_over_bound``. Measured at the
calibrated tier under leave-one-board-out (experiments/dlops_unseen_boards_calibrated.toml,
streaming curve): MAPE 20.86% with the board-level ``char_*`` figures, 17.85% without
(BMM 31.6 -> 24.2, Conv 33.7 -> 30.9, LN 17.8 -> 16.2, EW 5.4 -> 5.0, Softmax 8.6 -> 9.2).

Why the residual and not log T: on a board never seen, a tree cannot extrapolate a time
(its leaves hold the training boards' values), but a residual is a fraction of peak,
whose range on a new board is close to the training boards'; and the final ``max(., T_bound)``
makes the prediction never beat the board's roofline (issue 10 §2).

Monotone constraints (where physically right, with the row's spec bound held fixed):
more achieved bandwidth or FP32 never slows a call; a higher launch floor or a slower
achieved roofline never speeds it up (:data:`~perfml.learned.operator_model._features.MONOTONE`).

References
----------
.. [1] S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep Learning
   Training and Inference" (NeuSight), ASPLOS 2025, doi:10.1145/3669940.3707265.
.. [2] G. X. Yu, Y. Gao, P. Golikov, G. Pekhimenko, "Habitat: A Runtime-Based
   Computational Performance Predictor for Deep Neural Network Training", USENIX ATC 2021.
.. [3] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from perfml.errors import DatasetSchemaError, EstimatorParameterError
from perfml.closed_form._inputs import check_target
from perfml.learned.operator_model._features import (
    BOARD_LEVEL_CHAR,
    MONOTONE,
    characterization_block,
    held_intensity_over_ridge,
    operator_feature_frame,
)
from perfml.operators import OP_CLASS
from perfml.learned.operator_model._floor import LaunchFloor
from perfml.learned.operator_model._tiles import tile_block, wave_quantized_base
from perfml.learned.operator_model._transfer import MeasuredCalls, TransferTable, call_keys

__all__ = ["DEFAULT_LEARNER_PARAMS", "OperatorRegressor", "OperatorTransferBaseline", "check_operator_rows"]

#: xgboost hyper-parameters (over which ``learner_params`` go). Chosen before any held-out
#: board was scored, not tuned on one: depth 6 for the op x shape x board interactions,
#: 400 rounds at rate 0.05, row and column subsampling and min_child_weight 5 against
#: memorizing single boards.
DEFAULT_LEARNER_PARAMS = {
    "n_estimators": 400,
    "learning_rate": 0.05,
    "max_depth": 6,
    "subsample": 0.8,
    "colsample_bytree": 0.8,
    "min_child_weight": 5.0,
    "reg_lambda": 1.0,
}
_REQUIRED = ("board", "op")
#: ``transfer="auto"``: at most this many operator calls (each on every training board) in the inner CV
SELECTION_MAX_CALLS = 6000


def check_operator_rows(X, who: str) -> pd.DataFrame:
    """X must be a DataFrame of operator rows with ``board`` and ``op`` columns (dims are checked by the work model)."""
    # not closed_form._inputs.check_frame: operator rows' input_size is conv's image size, empty on other ops
    if not isinstance(X, pd.DataFrame):
        raise DatasetSchemaError(
            f"{who} takes a pandas DataFrame of operator rows (columns board, op and the dims B, M, N, K, H "
            f"or the conv dims), got {type(X).__name__}"
        )
    from perfml.closed_form._inputs import check_column_names, check_launch_columns

    check_column_names(X, who)
    missing = [c for c in _REQUIRED if c not in X.columns]
    if missing:
        raise DatasetSchemaError(
            f"{who}: X lacks column(s) {', '.join(missing)}; add them (see the columns of dlops_runtimes.csv)"
        )
    if X["board"].isna().any():
        position = int(np.flatnonzero(X["board"].isna().to_numpy())[0])
        raise DatasetSchemaError(f"{who}: row {position + 1}: column 'board' is empty; name the board")
    _refuse_dims_the_op_does_not_read(X, who)
    # the launch columns are carried, not read; a value CUDA does not run is refused as perfml predict refuses it
    check_launch_columns(X, who)
    return X


def _refuse_dims_the_op_does_not_read(X: pd.DataFrame, who: str) -> None:
    """A dimension given as True (a boolean column: the work model read it as 1), or given to
    an op that does not take it (``add`` with ``M``: it entered the dimension features and
    moved the prediction), is refused as ``perfml predict`` refuses it."""
    from perfml.closed_form._inputs import boolean_cells, plain_value
    from perfml.datasets import DLOPS_OP_DIMS
    from perfml.learned.operator_queries import OPERATOR_DIM_COLUMNS, _takes

    codes, names = pd.factorize(X["op"].astype(str).str.strip().to_numpy(dtype=object))
    ops = np.asarray(names, dtype=object)[codes]
    for column in OPERATOR_DIM_COLUMNS:
        if column not in X.columns:
            continue
        cells = X[column]
        given = cells.notna().to_numpy(dtype=bool)
        boolean = given & boolean_cells(cells)
        # the columns perfml predict lets each op have; an unknown op is the work model's to refuse
        takes = np.array([op not in DLOPS_OP_DIMS or column in _takes(op) for op in names], dtype=bool)[codes]
        bad = np.flatnonzero(boolean | (given & ~takes))
        if bad.size:
            i = int(bad[0])
            if boolean[i]:
                raise DatasetSchemaError(f"{who}: row {i + 1}, column {column}: {plain_value(cells.iloc[i])!r} is no dimension; "
                                         "give a whole number")
            raise DatasetSchemaError(f"{who}: row {i + 1}, column {column}: op {ops[i]} takes "
                                     f"{', '.join(_takes(ops[i]))}, not {column} (found {plain_value(cells.iloc[i])!r}); "
                                     "leave the cell empty, or name the op whose shape this is")


class OperatorRegressor(RegressorMixin, BaseEstimator):
    """Predict the time (ms) of a deep-learning operator call on a board (see the module docstring).

    Parameters
    ----------
    data_home : DataHome or path-like, optional
        Not read by the model (every input is in X, the registry and the
        characterizations); accepted so callers treat every perfml regressor alike.
    registry : perfml.boards.Registry, optional
        Where boards are looked up (the default registry when None).
    characterization : bool, default=False
        Add the ``char_*`` group: each board's achieved DRAM bandwidth, FP32 rate and
        launch floor (``characterizations``), and take the achieved-peak roofline (memory
        roof: the board's streaming curve where it has one) as the base time.
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization`; None: the committed
        ones (:func:`perfml.characterize.board_characterization`). Under a held-out-board
        protocol the target's must come from its calibration rows only.
    transfer : bool or "auto", default=True
        Add the ``xfer_*`` group: the residual of the same call on the other training
        boards (:mod:`perfml.learned.operator_model._transfer`). ``"auto"``: decided per
        op class by an inner leave-one-board-out over the training boards
        (``_select_transfer``); where the classes disagree two models are fitted (with
        and without the group) and each row is predicted by its class's.
    tiles : bool, default=True
        Add the tile / wave group (:mod:`perfml.learned.operator_model._tiles`): nominal
        GEMM tiles and waves on the board's SMs, rows per SM and the softmax kernel
        switch for row reductions. Needs only the dims and the registry.
    wave_base : bool, default=False
        Base time of GEMM rows = the wave-quantized compute time of a nominal 128 x 64
        tile (:func:`~perfml.learned.operator_model._tiles.wave_quantized_base`) instead
        of the roofline bound.
    launch_floor : bool, default=True
        Base time ``T_floor(op) + T_bound`` with the operators' launch floors learned from
        the training rows (:mod:`~perfml.learned.operator_model._floor`), and the feature
        ``fit_log_bound_over_floor``; False: the bound alone. Not used with
        ``characterization``: the achieved-peak base time's streaming curve carries the
        board's own floor, measured on its ``add`` calls (a board whose characterization
        has neither a curve nor a ``launch_overhead`` is charged the training boards'
        median launch overhead:
        :func:`~perfml.learned.operator_model._features.characterization_block`).
    board_identity : bool or "auto", default=False
        Add the raw board figures (``board_*``, and with ``characterization`` the
        board-level ``char_*`` figures); see the module docstring for why not.
        ``"auto"``: decided by an inner leave-one-board-out over the training boards
        (``_select_board_identity``, overall MAPE on the same sample of calls as the
        transfer selection), so the choice is made per model and tier without looking at
        a held-out board.
    monotone : bool, default=True
        Monotone constraints on the characterization features.
    random_state : int, default=0
    n_jobs : int, default=1
        Threads of xgboost.
    learner_params : dict, optional
        xgboost parameters over :data:`DEFAULT_LEARNER_PARAMS`.

    Attributes
    ----------
    model_ : xgboost.XGBRegressor
    feature_names_ : list of str
    transfer_ : TransferTable or None
    floor_ : LaunchFloor or None
        The operators' launch floors (``launch_floor=True``).
    train_boards_ : list of str
    use_transfer_ : bool
        Whether the main model has the transfer group.
    board_identity_ : bool
        Whether the model has the raw board figures (``board_identity`` resolved).
    board_identity_selection_ : dict or None
        ``board_identity="auto"``: the inner cross-validation's MAPEs and choice.
    transfer_selection_ : dict or None
        ``transfer="auto"``: the inner cross-validation's per-class MAPEs and choice.
    transfer_classes_ : list of str or None
        ``transfer="auto"``: op classes predicted with the transfer group.
    no_transfer_model_ : OperatorRegressor or None
        ``transfer="auto"`` with mixed classes: the model without the group.

    Raises
    ------
    EstimatorParameterError
        (in ``fit``) a parameter of the wrong type or value.
    DatasetSchemaError
        X is not a DataFrame with ``board`` and ``op``, or y is not positive finite ms.
    OperatorWorkError
        Unknown operator, or a dimension the operator needs is missing or not positive.
    UnknownBoardError
        A board is not in the registry.

    Examples
    --------
    >>> from perfml.learned.operators import OperatorRegressor  # doctest: +SKIP
    >>> model = OperatorRegressor(n_jobs=1).fit(rows, rows["time_ms"])  # doctest: +SKIP
    >>> model.predict(queries)  # ms, never below the roofline bound  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        data_home=None,
        registry=None,
        characterization: bool = False,
        characterizations=None,
        transfer: bool | str = True,
        tiles: bool = True,
        wave_base: bool = False,
        launch_floor: bool = True,
        board_identity: bool = False,
        monotone: bool = True,
        random_state: int = 0,
        n_jobs: int = 1,
        learner_params: dict | None = None,
    ):
        self.data_home = data_home
        self.registry = registry
        self.characterization = characterization
        self.characterizations = characterizations
        self.transfer = transfer
        self.tiles = tiles
        self.wave_base = wave_base
        self.launch_floor = launch_floor
        self.board_identity = board_identity
        self.monotone = monotone
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.learner_params = learner_params

    # -- parameters ------------------------------------------------------------------
    def _check_params(self) -> None:
        from perfml.closed_form._characterized import check_characterizations
        from perfml.closed_form._params import check_bool, check_bool_or_auto, check_positive_int

        who = "OperatorRegressor"
        for name in ("characterization", "tiles", "wave_base", "launch_floor", "monotone"):
            check_bool(who, name, getattr(self, name))
        check_bool_or_auto(who, "board_identity", self.board_identity)
        check_bool_or_auto(who, "transfer", self.transfer)
        check_characterizations(who, self.characterizations)
        check_positive_int(who, "n_jobs", self.n_jobs)
        if isinstance(self.random_state, bool) or not isinstance(self.random_state, (int, np.integer)):
            raise EstimatorParameterError(f"{who}: random_state must be an integer, got {self.random_state!r}")
        if self.learner_params is not None:
            if not isinstance(self.learner_params, dict):
                raise EstimatorParameterError(
                    f"{who}: learner_params must be a dict of xgboost parameters or None, got "
                    f"{type(self.learner_params).__name__}"
                )
            from perfml.learned.xgboost_params import check_xgboost_params

            check_xgboost_params(who, self.learner_params)

    # -- features --------------------------------------------------------------------
    def _own_features(self, X: pd.DataFrame, work=None) -> tuple[list[pd.DataFrame], np.ndarray, np.ndarray]:
        """(feature blocks without transfer, spec roofline bound in ms, base time in ms) of every row.

        ``work``: ``operator_feature_frame(X, self.registry)`` when the caller has it already.
        """
        frame, bound = work if work is not None else operator_feature_frame(X, self.registry)
        if getattr(self, "train_boards_", None) and "fit_log_intensity_over_ridge" in frame:
            frame = frame.assign(fit_log_intensity_over_ridge=held_intensity_over_ridge(
                frame, X, self.train_boards_, self.registry))
        parts = [frame if self.board_identity_ else frame.drop(columns=[c for c in frame.columns if c.startswith("board_")])]
        base = bound
        if self.tiles or self.wave_base:
            tiles = tile_block(X, frame)
            if self.tiles:
                parts.append(tiles)
            if self.wave_base:
                base = wave_quantized_base(frame, tiles, bound)
        floor = getattr(self, "floor_", None)
        if floor is not None and not self.characterization:
            floor_ms = floor.floor_ms(X["op"])
            with np.errstate(divide="ignore", invalid="ignore"):
                over = np.where(floor_ms > 0, np.log(bound / np.where(floor_ms > 0, floor_ms, 1.0)), np.nan)
            parts.append(pd.DataFrame({"fit_log_bound_over_floor": over}, index=X.index))
            base = base + floor_ms  # latency plus work at the roof (Hockney; _floor)
        if self.characterization:
            # the training boards' launch overhead stands in for a board whose characterization has none
            char = characterization_block(X, frame, bound, self.characterizations, self._training_launch_overhead_ms())
            # the roofline with the achieved peaks (never below the spec one); its streaming
            # curve carries the board's own floor (launch_floor is not used here)
            base = np.fmax(np.exp(char["char_log_bound_ms"].to_numpy()), bound)
            parts.append(char)
        return parts, bound, base

    def _training_launch_overhead_ms(self):
        """Median ``launch_overhead`` (ms) of the training boards' characterizations; None if none gives one.

        The quantity a target's characterization lacks when it comes from microbenchmark
        sweeps (a calibrated one has it from its ``add`` calls, as the training boards' do):
        a board never seen is charged the training boards' median, as the spec-only tier's
        floors are (:mod:`~perfml.learned.operator_model._floor`).
        """
        from perfml.learned.features.characterization import resolve_characterization

        values = []
        for board in getattr(self, "train_boards_", ()):
            found = resolve_characterization(board, self.characterizations)
            value = None if found is None else found.value("launch_overhead", "ms")
            if value is not None and np.isfinite(value) and value > 0:
                values.append(float(value))
        return float(np.median(values)) if values else None

    def _features(self, X: pd.DataFrame, own=None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """(features, spec roofline bound in ms, base time in ms) of every row.

        ``own``: ``self._own_features(X)`` when the caller has it already.
        """
        parts, bound, base = own if own is not None else self._own_features(X)
        parts = list(parts)
        if self.use_transfer_:
            parts.append(self.transfer_.features(call_keys(X), X["board"]))
        return pd.concat(parts, axis=1), bound, base

    def fit(self, X, y):
        """Fit the residual ``log(y / T_base)`` of operator rows X (times y in ms)."""
        self._check_params()
        X = check_operator_rows(X, "OperatorRegressor")
        y = check_target(y, len(X), "OperatorRegressor")
        self.train_boards_ = sorted(map(str, X["board"].unique()))
        self.no_transfer_model_ = None
        self.board_identity_selection_ = None
        if self.board_identity == "auto":
            self.board_identity_selection_ = self._select_board_identity(X, y)
            self.board_identity_ = self.board_identity_selection_["use_board_identity"]
        else:
            self.board_identity_ = bool(self.board_identity)
        if self.transfer != "auto":
            self.transfer_selection_ = None
            self.transfer_classes_ = None
            self.use_transfer_ = bool(self.transfer)
            self._fit_fixed(X, y)
        else:
            self.transfer_selection_ = self._select_transfer(X, y)
            classes = set(X["op"].astype(str).map(OP_CLASS).dropna().unique())
            self.transfer_classes_ = sorted(c for c in classes if self.transfer_selection_["use_transfer"].get(c, True))
            self.use_transfer_ = bool(self.transfer_classes_)
            self._fit_fixed(X, y)
            if self.use_transfer_ and set(self.transfer_classes_) != classes:
                self.no_transfer_model_ = clone(self).set_params(
                    transfer=False, board_identity=self.board_identity_)._fit_fixed_params(X, y)
        self.measured_ = MeasuredCalls().fit(call_keys(X), X["board"], np.log(y))
        return self

    def measured_ms(self, X) -> np.ndarray:
        """Per row, the time (ms) its own board took for its call (op and dimensions) in the
        training rows, the median of the repeats in log; NaN where that board did not run it
        (or the model predates the record). The features of a training board's row leave that
        board out (the transfer group), so the model never reads this measurement."""
        check_is_fitted(self, "model_")
        X = check_operator_rows(X, "OperatorRegressor")
        measured = getattr(self, "measured_", None)
        if measured is None:
            return np.full(len(X), np.nan)
        return measured.measured_ms(call_keys(X), X["board"])

    def _inner_sample(self, X: pd.DataFrame, y: np.ndarray):
        """The inner selections' rows: a fixed-seed sample of at most :data:`SELECTION_MAX_CALLS`
        operator calls, the same calls on every board (the transfer group sees what it sees
        under the outer protocol)."""
        keys = call_keys(X)
        unique = pd.Index(keys.unique())
        rng = np.random.default_rng(int(self.random_state))
        keep = unique[rng.permutation(len(unique))[:SELECTION_MAX_CALLS]]
        mask = keys.isin(keep).to_numpy()
        return X[mask], y[mask]

    def _select_board_identity(self, X: pd.DataFrame, y: np.ndarray) -> dict:
        """Inner leave-one-board-out on the training boards: with or without the raw board figures.

        Each training board in turn is held out; both variants (with the model's own
        transfer setting, "auto" read as True) are fitted on the other training boards'
        sampled calls and scored by MAPE on the held-out one; the figures are kept if their
        mean MAPE over the held-out boards is lower. Only training rows are read. Fewer
        than 3 training boards: without them (the documented default).

        Returns
        -------
        dict
            ``use_board_identity`` (bool), ``mape_with`` / ``mape_without`` (mean inner MAPE
            in %), ``reason``.
        """
        boards = np.asarray(sorted(map(str, X["board"].unique())))
        if len(boards) < 3:
            return {"use_board_identity": False, "reason": "fewer than 3 training boards", "mape_with": None,
                    "mape_without": None}
        Xs, ys = self._inner_sample(X, y)
        board_of = Xs["board"].astype(str).to_numpy()
        transfer = True if self.transfer == "auto" else bool(self.transfer)
        scores: dict[bool, list[float]] = {True: [], False: []}
        for held in boards:
            train, test = board_of != held, board_of == held
            if not test.any() or len(np.unique(board_of[train])) < 2:
                continue
            for variant in (True, False):
                model = clone(self).set_params(transfer=transfer, board_identity=variant)
                model._fit_fixed_params(Xs[train], ys[train])
                scores[variant].append(float(np.mean(np.abs(model.predict(Xs[test]) / ys[test] - 1.0))) * 100.0)
        with_b, without_b = float(np.mean(scores[True])), float(np.mean(scores[False]))
        return {"use_board_identity": bool(with_b < without_b), "reason": "inner leave-one-board-out MAPE",
                "mape_with": with_b, "mape_without": without_b}

    def _select_transfer(self, X: pd.DataFrame, y: np.ndarray) -> dict:
        """Inner leave-one-board-out on the training boards: with or without the transfer group, per op class.

        Each training board in turn is held out; both variants are fitted on the other
        training boards (a fixed-seed sample of at most :data:`SELECTION_MAX_CALLS` operator
        calls, the same calls on every board, so the transfer group sees what it sees under
        the outer protocol) and scored by MAPE per op class on the held-out training board.
        An op class keeps the transfer group where its mean inner MAPE with it is not
        larger than without. Only training rows are read: a held-out board of an outer
        protocol never takes part. Needs at least 3 training boards (2 to fit on, so that
        the transfer group exists, and 1 to score); with fewer the group is kept.

        Returns
        -------
        dict
            ``use_transfer`` (op class -> bool), ``mape_with`` / ``mape_without`` (op class ->
            mean inner MAPE in %), ``reason``.
        """
        boards = np.asarray(sorted(map(str, X["board"].unique())))
        if len(boards) < 3:
            return {"use_transfer": {}, "reason": "fewer than 3 training boards", "mape_with": {}, "mape_without": {}}
        Xs, ys = self._inner_sample(X, y)
        board_of = Xs["board"].astype(str).to_numpy()
        class_of = Xs["op"].astype(str).map(OP_CLASS).to_numpy()
        scores: dict[bool, list[pd.Series]] = {True: [], False: []}
        for held in boards:
            train, test = board_of != held, board_of == held
            if not test.any() or len(np.unique(board_of[train])) < 2:
                continue
            for variant in (True, False):
                model = clone(self).set_params(transfer=variant, board_identity=self.board_identity_)
                model._fit_fixed_params(Xs[train], ys[train])
                ape = 100.0 * np.abs(model.predict(Xs[test]) / ys[test] - 1.0)
                scores[variant].append(pd.Series(ape).groupby(class_of[test]).mean())
        with_t = pd.concat(scores[True], axis=1).mean(axis=1)
        without_t = pd.concat(scores[False], axis=1).mean(axis=1)
        return {"use_transfer": {c: bool(with_t[c] <= without_t[c]) for c in with_t.index},
                "reason": "inner leave-one-board-out MAPE per op class",
                "mape_with": {c: float(v) for c, v in with_t.items()},
                "mape_without": {c: float(v) for c, v in without_t.items()}}

    def _fit_fixed_params(self, X: pd.DataFrame, y: np.ndarray) -> "OperatorRegressor":
        """Fit with ``transfer`` and ``board_identity`` as given (both booleans)."""
        self.train_boards_ = sorted(map(str, X["board"].unique()))
        self.board_identity_ = bool(self.board_identity)
        self.board_identity_selection_ = None
        self.use_transfer_ = bool(self.transfer)
        self.transfer_selection_ = None
        self.transfer_classes_ = None
        self.no_transfer_model_ = None
        return self._fit_fixed(X, y)

    def _fit_fixed(self, X: pd.DataFrame, y: np.ndarray) -> "OperatorRegressor":
        self.floor_ = None
        work = operator_feature_frame(X, self.registry)  # once per fit: the floor, the base and the features read it
        if self.launch_floor and not self.characterization:
            self.floor_ = LaunchFloor().fit(X["op"], X["board"], y, work[1])
        own = self._own_features(X, work)
        self.transfer_ = TransferTable().fit(call_keys(X), X["board"], np.log(y), np.log(own[2])) if self.use_transfer_ else None
        F, _, base = self._features(X, own)
        if not self.board_identity_:
            # one value per board: identities with few boards, like board_* (module docstring);
            # predict() reindexes to feature_names_, so a model saved with them keeps them
            F = F.drop(columns=[c for c in BOARD_LEVEL_CHAR if c in F.columns])
        residual = np.log(y / base)
        self.feature_names_ = list(F.columns)
        monotone = [MONOTONE.get(c, 0) if self.monotone else 0 for c in self.feature_names_]
        from xgboost import XGBRegressor

        self.model_ = XGBRegressor(
            **{**DEFAULT_LEARNER_PARAMS, **(self.learner_params or {})},
            monotone_constraints=tuple(monotone),
            tree_method="hist",
            random_state=int(self.random_state),
            n_jobs=int(self.n_jobs),
        )
        self.model_.fit(F.to_numpy(dtype=float), residual)
        self.n_features_in_ = X.shape[1]
        return self

    def predict_bound(self, X) -> np.ndarray:
        """The roofline lower bound (ms) of every row, with the registry's peaks."""
        X = check_operator_rows(X, "OperatorRegressor")
        return operator_feature_frame(X, self.registry)[1]

    def predict(self, X) -> np.ndarray:
        """Predicted time in ms (never below the row's roofline bound)."""
        check_is_fitted(self, "model_")
        X = check_operator_rows(X, "OperatorRegressor")
        F, bound, base = self._features(X)
        F = F.reindex(columns=self.feature_names_)
        residual = self.model_.predict(F.to_numpy(dtype=float))
        pred = np.maximum(base * np.exp(residual), bound)
        if self.no_transfer_model_ is not None:  # transfer="auto": classes the inner CV kept without it
            other = ~X["op"].astype(str).map(OP_CLASS).isin(self.transfer_classes_).to_numpy()
            if other.any():
                pred[other] = self.no_transfer_model_.predict(X[other])
        return pred

    def feature_importances(self) -> pd.Series:
        """Gain importance per feature, largest first."""
        check_is_fitted(self, "model_")
        return pd.Series(self.model_.feature_importances_, index=self.feature_names_).sort_values(ascending=False)


class OperatorTransferBaseline(RegressorMixin, BaseEstimator):
    """The transfer baseline: the same call on the training boards, scaled by the roofline ratio.

    ``T_target = T_bound,target * exp(mean_b r_b)`` with ``r_b = log(T_b / T_bound,b)`` over
    the training boards that measured the same ``op`` and dimensions: the geometric mean
    of ``T_b * T_bound,target / T_bound,b`` (Habitat's scaling by hardware ratios [2]_ of
    the module docstring, here the ratio of roofline bounds). A call no training board
    measured gets the median residual of its operator over the training rows
    (``fallback_``). Learns nothing else; never below the bound.

    Parameters
    ----------
    registry : perfml.boards.Registry, optional
    """

    def __init__(self, *, registry=None):
        self.registry = registry

    def fit(self, X, y):
        X = check_operator_rows(X, "OperatorTransferBaseline")
        y = check_target(y, len(X), "OperatorTransferBaseline")
        _, bound = operator_feature_frame(X, self.registry)
        residual = np.log(y / bound)
        self.transfer_ = TransferTable().fit(call_keys(X), X["board"], np.log(y), np.log(bound))
        self.fallback_ = pd.Series(residual, index=X.index).groupby(X["op"].astype(str).to_numpy()).median().to_dict()
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "transfer_")
        X = check_operator_rows(X, "OperatorTransferBaseline")
        _, bound = operator_feature_frame(X, self.registry)
        # every measurement of the call on another board counts (a query's own board is not in the table under LOBO)
        values = self.transfer_.features(call_keys(X), X["board"])["xfer_resid_mean"].to_numpy()
        fallback = X["op"].astype(str).map(self.fallback_).to_numpy(dtype=float)
        residual = np.where(np.isfinite(values), values, fallback)
        residual = np.where(np.isfinite(residual), residual, 0.0)
        return bound * np.exp(np.maximum(residual, 0.0))
