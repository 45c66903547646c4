"""Learned runtime regressors: features -> gradient boosting (or a baseline) on log time.

:class:`RuntimeRegressor` is one scikit-learn regressor whose ``learner`` picks the
model and whose ``target`` picks what it learns:

* ``target="log"``: log(T_measured);
* ``target="residual"`` (the hybrid): log(T_measured / T_analytical), on top of the best
  closed-form model of the app (BSP of seed 003 or a roofline term, with lambda or
  efficiency cross-fitted on the other training boards; feature ``base_log_t``), so the
  learner only corrects what the closed-form model misses.

Learners: ``"xgboost"`` (:class:`xgboost.XGBRegressor`), ``"hgb"``
(:class:`sklearn.ensemble.HistGradientBoostingRegressor`), and the published baselines
of Amaris et al. (NCA 2016): ``"linear"``, ``"svr"``, ``"random_forest"``. Gradient
boosting gets monotone constraints on the work features (more work never means less
time, see :data:`perfml.learned.features.MONOTONE_INCREASING`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from perfml.errors import EstimatorParameterError
from perfml.learned.features import MONOTONE_INCREASING, FeatureBuilder
from perfml.closed_form._inputs import check_frame, check_target, checks_frames_once

LEARNERS = ("xgboost", "hgb", "linear", "svr", "random_forest")
TARGETS = ("log", "residual")
#: The closed-form baseline under a residual target (see ``baseline``).
BASELINES = ("best", "bsp", "transfer", "blend")
#: compute rate under the closed-form times (see RuntimeRegressor)
COMPUTE_RATES = ("cores", "issue")
#: How board specifications enter the features.
BOARD_FEATURES = ("both", "absolute", "relative")

_DEFAULTS: dict[str, dict[str, Any]] = {
    # Shallow, strongly regularized trees: with nine boards, deeper ones memorize boards
    # (leave-one-board-out MAPE 15% at depth 6 / 600 trees vs 13% here, before shrinkage).
    "xgboost": {"n_estimators": 200, "learning_rate": 0.05, "max_depth": 3, "subsample": 0.8, "colsample_bytree": 0.8, "min_child_weight": 20.0, "reg_lambda": 1.0},
    "hgb": {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 8, "min_samples_leaf": 50, "l2_regularization": 1.0},
    "linear": {},
    "svr": {"C": 10.0, "epsilon": 0.05, "gamma": "scale"},
    "random_forest": {"n_estimators": 300, "min_samples_leaf": 1, "max_features": 0.5},
}


def check_learner_params(who: str, learner: str, params: dict[str, Any]) -> None:
    """Raise :class:`~perfml.errors.EstimatorParameterError` for a ``learner_params`` entry the learner does not
    know, or a value it refuses (scikit-learn learners: these failed deep inside ``fit`` as a
    ``TypeError`` or scikit-learn's ``InvalidParameterError``; xgboost:
    :func:`perfml.learned.xgboost_params.check_xgboost_params`, one round on a synthetic frame)."""
    if learner == "xgboost":
        from perfml.learned.xgboost_params import check_xgboost_params

        check_xgboost_params(who, params)
        return
    try:
        estimator = make_learner(learner, params, [], 0, 1)
    except TypeError as exc:  # an unknown keyword of a scikit-learn learner
        raise EstimatorParameterError(f"{who}: learner_params {sorted(params)} are not all parameters of the "
                                      f"{learner} learner ({exc})") from None
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    if hasattr(final, "_validate_params"):  # scikit-learn's own check of each value, run at fit otherwise
        try:
            final._validate_params()
        except (TypeError, ValueError) as exc:
            raise EstimatorParameterError(f"{who}: learner_params: {exc}") from None


def make_learner(learner: str, params: dict[str, Any], monotone: list[int], random_state, n_jobs: int = 2):
    """Instantiate the underlying estimator (imports are lazy: xgboost loads only when used)."""
    params = {**_DEFAULTS[learner], **(params or {})}
    if learner == "xgboost":
        from xgboost import XGBRegressor

        return XGBRegressor(
            **params,
            monotone_constraints=tuple(monotone),
            tree_method="hist",
            random_state=random_state,
            n_jobs=n_jobs,
        )
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    if learner == "hgb":
        from sklearn.ensemble import HistGradientBoostingRegressor

        # scikit-learn's binning fails on a feature missing in every training row ("window
        # shape cannot be larger than input array shape"; e.g. a board figure the registry
        # leaves empty, when training on that one board): such a column is constant here
        return make_pipeline(EmptyColumnsAsZero(),
                             HistGradientBoostingRegressor(**params, monotonic_cst=monotone, random_state=random_state))
    from sklearn.preprocessing import StandardScaler

    if learner == "linear":
        from sklearn.linear_model import LinearRegression

        return make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), LinearRegression(**params))
    if learner == "svr":
        from sklearn.svm import SVR

        return make_pipeline(SimpleImputer(strategy="median"), StandardScaler(), SVR(**params))
    from sklearn.ensemble import RandomForestRegressor

    return make_pipeline(SimpleImputer(strategy="median"), RandomForestRegressor(**params, random_state=random_state, n_jobs=n_jobs))


class EmptyColumnsAsZero(TransformerMixin, BaseEstimator):
    """Set to 0 the columns that hold no value in any training row (all NaN), in training and
    in prediction alike; every other column, NaN included, passes unchanged. A column with no
    training value carries nothing a tree can split on, so the learner's answer is the same;
    it only spares learners that cannot bin an empty column."""

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=float)
        self.empty_ = np.flatnonzero(np.isnan(X).all(axis=0)) if len(X) else np.arange(X.shape[1])
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        check_is_fitted(self, "empty_")
        X = np.array(X, dtype=float)  # a copy: the caller's array is left as it was
        X[:, self.empty_] = 0.0
        return X


#: Below this many rows an xgboost prediction runs on one thread (waking a thread pool
#: costs more than the trees, and on a loaded machine far more).
SMALL_BATCH_ROWS = 1024


def learner_predict(model, F: np.ndarray, booster=None) -> np.ndarray:
    """``model.predict(F)``; for xgboost straight through the booster's ``inplace_predict``.

    Same trees, same iteration range and missing value as :meth:`xgboost.XGBRegressor.predict`
    (so the same numbers: the CPU predictor sums the trees of a row on one thread, whatever
    the thread count), without the wrapper's per-call global configuration context, which
    dominates the latency of a one-row prediction. ``booster``: the booster to use instead
    of ``model.get_booster()`` (e.g. a single-threaded copy).
    """
    get_booster = getattr(model, "get_booster", None)
    if get_booster is None:
        return model.predict(F)
    try:
        best = model.best_iteration
    except AttributeError:  # no early stopping: every tree
        best = None
    iteration_range = (0, best + 1) if best is not None else (0, 0)
    booster = get_booster() if booster is None else booster
    return booster.inplace_predict(F, iteration_range=iteration_range, missing=model.missing)


class RuntimeRegressor(RegressorMixin, BaseEstimator):
    """Predict kernel runtime (ms) from leakage-free features with a learned model.

    Parameters
    ----------
    learner : {"xgboost", "hgb", "linear", "svr", "random_forest"}
    target : {"log", "residual"}
        "residual" learns log(T / T_BSP) on top of the BSP model (the hybrid).
    learner_params : dict, optional
        Hyper-parameters passed to the learner (over perfml's defaults).
    analytical, profiles, app_identity : bool
        Feature groups (see :class:`perfml.learned.features.FeatureBuilder`).
    board_features : {"both", "absolute", "relative"}, default="relative"
        Board specifications as absolute values, relative to the training boards, or both.
    feature_subset : tuple of str, optional
        Keep only features whose name starts with one of these prefixes (e.g. the
        published baselines use ``("prof_", "board_", "desc_log_n")``).
    monotone : bool, default=True
        Monotone constraints on work features (gradient boosting only).
    shrinkage : "auto" or float in [0, 1], default="auto"
        Residual target only: the prediction is ``baseline + shrinkage x learned
        residual``; "auto" chooses it by inner cross-validation grouped by board.
    baseline : {"best", "bsp", "transfer", "blend"}, default="transfer"
        The closed-form model under the residual: the app's best one (``base_log_t``),
        always the BSP model (``bsp_log_tk``), the transfer of the same run from the
        other boards (``xfer_log_t``), or that transfer through a blend of the BSP and
        memory-roofline scalings with a per-app weight chosen by inner
        leave-one-board-out (``xfer_log_t_blend``, see
        :mod:`perfml.learned.features.closed_form`; the feature is added only then).
    random_state : int, default=0
    n_jobs : int, default=2
        Threads of the learner.
    data_home : DataHome or path-like, optional
        Where profiles and BSP constants are read from (a :class:`perfml.datasets.DataHome`
        reads each table once; a path is wrapped in one). Required by ``fit`` when
        ``analytical`` or ``profiles`` is on: None then raises
        :class:`perfml.errors.DataHomeError` (nothing below the CLI searches for it).
    registry : perfml.boards.Registry, optional
        The board registry features are built from (a user's own boards); the default
        registry when None.
    characterization : bool, default=False
        Add the ``char_*`` feature group (achieved DRAM bandwidth, FP32 throughput and
        launch floor of each board, :mod:`perfml.learned.features.characterization`).
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization` for that group and for
        ``closed_form_peaks="characterized"``; None: the committed ones.
    closed_form_peaks : {"spec", "characterized"}, default="spec"
        The roofline under the closed-form features with datasheet or achieved peaks.
    compute_rate : {"cores", "issue"}, default="cores"
        The compute rate under the BSP and compute-roofline times, and so under their
        transfer between boards: cores x clock, or the issue-limited rate (what an SM can
        issue without instruction-level parallelism, :func:`perfml.boards.issue_limited_flops`),
        which carries simple kernels across architectures (Kepler -> Maxwell).
    baseline_selection : {"spread", "transfer-cv"}, default="spread"
        How each app's closed-form baseline is chosen: least spread of its offsets across
        the training boards, or least error of its transfer in an inner
        leave-one-board-out over the training boards
        (:mod:`perfml.learned.features.closed_form`).
    wave_scaling : bool or "auto", default=False
        Make the wave-quantized time a candidate closed-form baseline (Habitat's wave
        scaling, Yu et al., USENIX ATC 2021, Sec. 4.1: time ~ ceil(blocks / (SMs x
        resident blocks per SM)) / clock, :func:`perfml.learned.features.closed_form.wave_logs`),
        for kernels launched with fewer blocks than fill the board, whose time does not
        shrink with more SMs. ``"auto"`` (residual target) keeps it only if the transfer
        baseline misses less with it in an inner cross-validation grouped by board on the
        training rows (as ``shrinkage="auto"``); with ``target="log"`` "auto" means False.
        Measured, "auto" is no reliable chooser: the baseline's inner error does not foresee
        the hybrid's (``perfml train --wave-scaling auto`` did worse than both True and
        False on the default corpora, ``experiments/results/train_wave_scaling.txt``).
    bound_floor : bool, default=True
        :meth:`predict` raises a prediction below the row's roofline lower bound to the
        bound, where the work is known. False only to reproduce a published method that has
        no such floor (the Amaris et al. baselines of ``experiments/amaris2016.toml``).

    Attributes
    ----------
    features_ : FeatureBuilder
    model_ : estimator
    feature_names_ : list of str
    shrinkage_ : float
        The share of the learned residual used (1 for ``target="log"``).
    wave_scaling_ : bool
        Whether the wave-quantized baseline is a candidate (``wave_scaling`` resolved).
    """

    def __init__(
        self,
        *,
        learner: str = "xgboost",
        target: str = "residual",
        learner_params: dict | None = None,
        analytical: bool = True,
        profiles: bool = True,
        app_identity: bool = True,
        board_features: str = "relative",
        feature_subset: tuple[str, ...] | None = None,
        monotone: bool = True,
        baseline: str = "transfer",
        shrinkage="auto",
        random_state: int = 0,
        n_jobs: int = 2,
        data_home=None,
        registry=None,
        characterization: bool = False,
        characterizations=None,
        closed_form_peaks: str = "spec",
        baseline_selection: str = "spread",
        compute_rate: str = "cores",
        wave_scaling=False,
        bound_floor: bool = True,
    ):
        self.bound_floor = bound_floor
        self.wave_scaling = wave_scaling
        self.compute_rate = compute_rate
        self.baseline_selection = baseline_selection
        self.characterization = characterization
        self.characterizations = characterizations
        self.closed_form_peaks = closed_form_peaks
        self.learner = learner
        self.target = target
        self.learner_params = learner_params
        self.analytical = analytical
        self.profiles = profiles
        self.app_identity = app_identity
        self.board_features = board_features
        self.feature_subset = feature_subset
        self.monotone = monotone
        self.baseline = baseline
        self.shrinkage = shrinkage
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.data_home = data_home
        self.registry = registry

    def _check_params(self) -> None:
        """Validate every parameter (scikit-learn validates in ``fit``, never in ``__init__``)."""
        from perfml.closed_form._params import check_bool, check_bool_or_auto, check_choice, check_fraction, check_str_tuple

        who = "RuntimeRegressor"
        check_choice(who, "learner", self.learner, LEARNERS)
        check_choice(who, "target", self.target, TARGETS)
        check_choice(who, "baseline", self.baseline, BASELINES)
        check_choice(who, "board_features", self.board_features, BOARD_FEATURES)
        check_choice(who, "closed_form_peaks", self.closed_form_peaks, ("spec", "characterized"))
        check_choice(who, "compute_rate", self.compute_rate, COMPUTE_RATES)
        from perfml.learned.features.closed_form import BASELINE_SELECTIONS

        check_choice(who, "baseline_selection", self.baseline_selection, BASELINE_SELECTIONS)
        from perfml.closed_form._characterized import check_characterizations

        check_characterizations(who, self.characterizations)
        for name in ("analytical", "profiles", "app_identity", "monotone", "characterization", "bound_floor"):
            check_bool(who, name, getattr(self, name))
        check_bool_or_auto(who, "wave_scaling", self.wave_scaling)
        if self.learner_params is not None and not isinstance(self.learner_params, dict):
            raise EstimatorParameterError(f"{who}: learner_params must be a dict or None, got {type(self.learner_params).__name__}")
        if isinstance(self.random_state, bool) or not (self.random_state is None or isinstance(
                self.random_state, (int, np.integer, np.random.RandomState))):
            raise EstimatorParameterError(f"{who}: random_state must be an int, a numpy RandomState or None, "
                                          f"got {self.random_state!r}")
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, (int, np.integer)) or self.n_jobs == 0:
            raise EstimatorParameterError(f"{who}: n_jobs must be a nonzero int (-1: every core), got {self.n_jobs!r}")
        if self.learner_params:
            check_learner_params(who, self.learner, self.learner_params)
        if self.feature_subset is not None:
            check_str_tuple(who, "feature_subset", self.feature_subset)
        if not (isinstance(self.shrinkage, str) and self.shrinkage == "auto"):
            if isinstance(self.shrinkage, str):
                raise EstimatorParameterError(f"{who}: shrinkage must be 'auto' or a number in [0, 1], got {self.shrinkage!r}")
            check_fraction(who, "shrinkage", self.shrinkage)
        if self.target == "residual" and not self.analytical:
            raise EstimatorParameterError(f"{who}: target='residual' needs analytical=True (it learns on top of the closed-form models)")

    def _select(self, F: pd.DataFrame) -> pd.DataFrame:
        if not self.feature_subset:
            return F
        keep = [c for c in F.columns if c.startswith(tuple(self.feature_subset))]
        if not keep:  # the learner would fail on zero columns, far from the cause
            prefixes = sorted({re.match(r"[^_=]*[_=]?", c).group(0) for c in F.columns})
            raise EstimatorParameterError(
                f"RuntimeRegressor: feature_subset {list(self.feature_subset)} matches none of the "
                f"{F.shape[1]} features; a prefix selects the features whose names start with it, e.g. "
                f"{', '.join(prefixes[:12])}")
        return F[keep]

    def _baseline(self, F: pd.DataFrame) -> np.ndarray:
        if self.target == "log":
            return np.zeros(len(F))
        column = {"best": "base_log_t", "bsp": "bsp_log_tk", "transfer": "xfer_log_t", "blend": "xfer_log_t_blend"}[self.baseline]
        base = F[column].to_numpy(dtype=float)
        # A row without a cross-fitted offset (an app seen on one board only) falls back to BSP T_1.
        return np.where(np.isfinite(base), base, F["bsp_log_t1"].to_numpy(dtype=float))

    def fit(self, X, y):
        """Fit features on the training rows, then the learner on their log times."""
        self._check_params()
        if self.analytical or self.profiles:
            from perfml.datasets import check_data_home

            check_data_home(self.data_home, "RuntimeRegressor.fit")
        X = check_frame(X, ("board", "app_id", "input_size"), "RuntimeRegressor")
        y = check_target(y, len(X), "RuntimeRegressor")
        # The row-wise feature blocks (launch, descriptors, board figures, closed-form times)
        # are built once here and sliced for the inner folds of the shrinkage search; with
        # wave_scaling="auto" they carry the wave time, which the choice needs.
        blocks = self._builder(False).row_blocks(X, waves=self.wave_scaling is not False)
        self.wave_scaling_ = self._choose_wave_scaling(X, y, blocks)
        self.features_ = self._builder(self.wave_scaling_).fit(X, y, blocks=blocks)
        F_all = self.features_.transform(X, blocks=blocks)
        F = self._select(F_all)
        self.feature_names_ = list(F.columns)
        monotone = [1 if (self.monotone and c in MONOTONE_INCREASING) else 0 for c in self.feature_names_]
        target = np.log(y) - self._baseline(F_all)
        self.shrinkage_ = self._choose_shrinkage(X, y, monotone, blocks) if self.target == "residual" else 1.0
        self.model_ = make_learner(self.learner, self.learner_params or {}, monotone, self.random_state, self.n_jobs)
        self.model_.fit(F.to_numpy(dtype=float), target)
        self.n_features_in_ = X.shape[1]
        return self

    def _builder(self, wave_scaling: bool) -> FeatureBuilder:
        """An unfitted feature builder with this regressor's feature options."""
        return FeatureBuilder(
            analytical=self.analytical, profiles=self.profiles, app_identity=self.app_identity,
            board_features=self.board_features, data_home=self.data_home, registry=self.registry,
            characterization=self.characterization, characterizations=self.characterizations,
            closed_form_peaks=self.closed_form_peaks, transfer_blend=self._transfer_blend(),
            baseline_selection=self.baseline_selection, compute_rate=self.compute_rate, wave_scaling=wave_scaling,
        )

    def _transfer_blend(self) -> bool:
        """Whether the closed-form group fits the blend weights (the blend is the residual's baseline)."""
        return self.target == "residual" and self.baseline == "blend"

    def _choose_wave_scaling(self, X, y, blocks) -> bool:
        """``wave_scaling`` resolved: True/False as given; "auto" by inner leave-one-board-out of the baseline.

        For each setting, the closed-form baseline under the residual (:meth:`_baseline`) is
        predicted for each training board from the other training boards and scored by its
        mean absolute percentage error; the wave-quantized candidate is kept only if it
        lowers that error. Fewer than three boards: False.
        """
        if not (isinstance(self.wave_scaling, str) and self.wave_scaling == "auto"):
            return bool(self.wave_scaling)
        groups = X["board"].to_numpy()
        n_groups = len(np.unique(groups))
        if self.target != "residual" or n_groups < 3:
            return False
        from sklearn.model_selection import LeaveOneGroupOut

        from perfml.learned.features.closed_form import ClosedFormFeatures

        errors = {}
        for setting in (False, True):
            oof = np.zeros(len(X))
            # leave one training board out, as a held-out board is predicted; the baseline
            # comes from the closed-form group alone (the other groups do not enter it)
            for train, test in LeaveOneGroupOut().split(X, y, groups):
                closed = ClosedFormFeatures(registry=self.registry, blend=self._transfer_blend(),
                                            baseline_selection=self.baseline_selection, waves=setting)
                part, rest = blocks.take(train), blocks.take(test)
                closed.fit(X.iloc[train], y[train], launch=part.launch, logs=part.logs)
                oof[test] = self._baseline(closed.transform(X.iloc[test], launch=rest.launch, logs=rest.logs))
            errors[setting] = float(np.mean(np.abs(np.exp(oof) / y - 1.0)))
        return errors[True] < errors[False]

    @checks_frames_once
    def predict(self, X) -> np.ndarray:
        """Predicted runtime in milliseconds, never below the row's roofline lower bound.

        The bound is :func:`perfml.closed_form.roofline.roofline_bound_ms` (Williams et al., CACM
        2009, eq. 1, with the board's peaks and the L2-resident share of the data), where the
        kernel's work is known (a described app); ``perfml predict`` applies the same bound
        and flags the rows it raised. Under leave-one-board-out on the nine apps it raises 1
        of 11,386 predictions; a model fitted on few boards and asked about a far faster one
        predicted well below it (``tests/test_learn.py``). ``bound_floor=False`` turns it off.

        Raises
        ------
        UnknownAppError
            A row's kernel was neither trained on nor described (``perfml.apps``): the model
            knows nothing of its work or its times, and the number it would give is no
            runtime (2e-8 ms for a misspelt name). Give such a kernel's measurements on
            another board to :func:`perfml.learned.queries.predict_queries` as a reference.
        """
        check_is_fitted(self, "model_")
        X = check_frame(X, ("board", "app_id", "input_size"), "RuntimeRegressor")
        from perfml.apps import list_apps

        known = set(map(str, self.features_.apps_)) | set(list_apps())
        unknown = ~X["app_id"].isin(known).to_numpy()
        if unknown.any():
            from perfml.errors import UnknownAppError

            i = int(np.flatnonzero(unknown)[0])
            raise UnknownAppError(
                f"RuntimeRegressor: row {i + 1} has app_id {X['app_id'].iloc[i]!r}, a kernel the model was not trained "
                f"on and that has no description (trained on: {', '.join(sorted(map(str, self.features_.apps_)))}); "
                "check the name, or predict it with perfml.learned.queries.predict_queries and a reference "
                "measurement of the kernel on another board"
            )
        pred = self._predict_checked(X)
        if not getattr(self, "bound_floor", True):  # a model saved before the parameter existed floors
            return pred
        from perfml.closed_form.roofline import roofline_bound_ms

        bound = roofline_bound_ms(X, self.registry)
        return np.where(np.isfinite(bound) & (pred < bound), bound, pred)

    @checks_frames_once
    def predict_transfer(self, X) -> np.ndarray:
        """:meth:`predict` for any kernel, known or not.

        For a kernel the model neither trained on nor has a description of, the value is
        meaningful only as a ratio between two boards at the same run (how
        :func:`perfml.learned.queries.predict_queries` carries a user's reference
        measurement to another board), never as a runtime.
        """
        check_is_fitted(self, "model_")
        return self._predict_checked(check_frame(X, ("board", "app_id", "input_size"), "RuntimeRegressor"))

    @checks_frames_once
    def measured_ms(self, X) -> np.ndarray:
        """Per row, the training measurement of its own run on its own board (ms), NaN where
        there is none (:meth:`perfml.learned.features.FeatureBuilder.measured_ms`)."""
        check_is_fitted(self, "model_")
        X = check_frame(X, ("board", "app_id", "input_size"), "RuntimeRegressor")
        from perfml.boards import get_board

        for board in X["board"].astype(str).unique():  # a misspelt board is refused, as predict refuses it, not NaN
            get_board(board, registry=self.registry)
        return self.features_.measured_ms(X)

    def _predict_checked(self, X) -> np.ndarray:
        """The predictions of rows already through :func:`check_frame` (checked once per call)."""
        F_all = self.features_.transform(X)
        F = F_all.reindex(columns=self.feature_names_)
        shrink = self._row_shrinkage(X)
        with np.errstate(over="ignore"):  # an overflow is inf, which callers refuse (it is no runtime)
            return np.exp(shrink * learner_predict(self.model_, F.to_numpy(dtype=float), self._booster_for(len(F)))
                          + self._baseline(F_all))

    def _row_shrinkage(self, X) -> np.ndarray:
        """The learned residual's weight per row: ``shrinkage_``, and 0 at a block shape no training run of the app has.

        The residual is trusted as much as inner leave-one-board-out says it helps, over
        launches the training boards measured. At a block shape none of them measured for
        the app (:func:`perfml.learned.launches.unmeasured_launch_mask`) it extrapolates in
        the launch features, and it added error there: on unseen boards, 32.63 % MAPE for the
        transfer baseline alone against 48.85 % with the residual when the block size was
        measured for no kernel (``experiments/results/unseen_launches.txt``, the recording at
        f2e026b) and 42.66 % when other kernels were measured at it
        (``experiments/results/unseen_kernel_launches.txt``, at bec1f42). Such a row is answered
        by the transfer baseline alone (both at 32.63 % since, the recordings at 70b8960).
        """
        shrink = np.full(len(X), float(getattr(self, "shrinkage_", 1.0)))
        if not self._residual_left_out_at_unmeasured_launches() or not np.any(shrink):
            return shrink
        from perfml.learned.launches import unmeasured_launch_mask

        return np.where(unmeasured_launch_mask(X, getattr(self.features_, "transfer_", None)), 0.0, shrink)

    def unmeasured_launch_estimator(self):
        """An unfitted clone that predicts as this configuration does at block shapes no training run of the app has.

        There the learned residual is left out over a transfer or blend baseline
        (:meth:`_row_shrinkage`), so the clone skips the inner search for its share
        (``shrinkage=0``): the same predictions on those rows for less work, which
        ``perfml train`` spends once per (board, block size) fold to calibrate their interval
        (:func:`perfml.learned.intervals.launch_oof_predictions`). Any other configuration is
        cloned as it is.
        """
        est = clone(self)
        if self._residual_left_out_at_unmeasured_launches():
            est.set_params(shrinkage=0.0)
        return est

    def _residual_left_out_at_unmeasured_launches(self) -> bool:
        """Whether :meth:`_row_shrinkage` drops the residual at an unmeasured block shape.

        Only over a transfer of the kernel's own measured runs: over a closed form alone
        (baseline "bsp" or "best") the residual is most of the prediction.
        """
        return self.target == "residual" and self.baseline in ("transfer", "blend")

    def _booster_for(self, n_rows: int):
        """A single-threaded copy of the xgboost booster for small batches (None: the model's own)."""
        if n_rows >= SMALL_BATCH_ROWS or not hasattr(self.model_, "get_booster"):
            return None
        cached = self.__dict__.get("_small_batch_booster")
        if cached is None or cached[0] is not self.model_:
            booster = self.model_.get_booster().copy()
            booster.set_param({"nthread": 1})
            cached = self._small_batch_booster = (self.model_, booster)
        return cached[1]

    _SHRINK_GRID = np.linspace(0.0, 1.0, 11)

    def _choose_shrinkage(self, X, y, monotone, blocks) -> float:
        """How much of the learned residual to add to the closed-form baseline.

        A float ``shrinkage`` is used as given. ``"auto"`` picks, from 0, 0.1, ..., 1,
        the factor with the lowest MAPE of out-of-fold predictions over folds grouped by
        board (the training boards only), so the learner is trusted exactly as much as
        it helps on boards it has not seen.
        """
        if not (isinstance(self.shrinkage, str) and self.shrinkage == "auto"):
            return float(self.shrinkage)  # checked in fit
        from sklearn.model_selection import GroupKFold

        groups = X["board"].to_numpy()
        n_groups = len(np.unique(groups))
        if n_groups < 3:
            return 1.0
        base_oof = np.zeros(len(X))
        resid_oof = np.zeros(len(X))
        for train, test in GroupKFold(n_splits=min(4, n_groups)).split(X, y, groups):
            fb = clone(self.features_)
            X_tr, X_te, b_tr, b_te = X.iloc[train], X.iloc[test], blocks.take(train), blocks.take(test)
            fb.fit(X_tr, y[train], blocks=b_tr)
            F_tr_all, F_te_all = fb.transform(X_tr, blocks=b_tr), fb.transform(X_te, blocks=b_te)
            F_tr = self._select(F_tr_all).reindex(columns=self.feature_names_)
            F_te = F_te_all.reindex(columns=self.feature_names_)
            learner = make_learner(self.learner, self.learner_params or {}, monotone, self.random_state, self.n_jobs)
            learner.fit(F_tr.to_numpy(dtype=float), np.log(y[train]) - self._baseline(F_tr_all))
            base_oof[test] = self._baseline(F_te_all)
            resid_oof[test] = learner_predict(learner, F_te.to_numpy(dtype=float))
        errors = [np.mean(np.abs(np.exp(base_oof + a * resid_oof) / y - 1.0)) for a in self._SHRINK_GRID]
        return float(self._SHRINK_GRID[int(np.argmin(errors))])

    def feature_importances(self) -> pd.Series:
        """Importance per feature (gain for xgboost, impurity for forests; empty otherwise)."""
        check_is_fitted(self, "model_")
        model = self.model_
        if hasattr(model, "steps"):
            model = model.steps[-1][1]
        values = getattr(model, "feature_importances_", None)
        if values is None:
            return pd.Series(dtype=float)
        return pd.Series(values, index=self.feature_names_).sort_values(ascending=False)
