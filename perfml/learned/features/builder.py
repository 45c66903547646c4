"""The feature builder: one transformer per group, combined in a fixed column order.

Column order (unchanged since the single-class builder): ``board_*`` (absolute), ``desc_*``,
``rel_*`` (relative), the closed-form group (``bsp_*``, ``roof_*``, ``base_log_t``,
``xfer_*``), ``occ_*``, ``prof_*``, then one ``app=<id>`` indicator per training app.

The groups that learn nothing (launch, descriptors, absolute board figures, closed-form
times) depend on a row alone; :class:`RowBlocks` computes them once for a table of rows,
and any subset of those rows (the folds of an inner cross-validation) takes its slice
instead of building them again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from perfml.closed_form._inputs import check_frame, check_target, checks_frames_once
from perfml.learned.features._common import MEASURED_LOG_MS, REQUIRED, RUN_KEY, WORK_COLUMNS, second_size
from perfml.learned.features.boards import BoardFeatures
from perfml.learned.features.characterization import CharacterizationFeatures
from perfml.learned.features.closed_form import ClosedFormFeatures, closed_form_logs
from perfml.learned.features.descriptors import descriptor_features
from perfml.learned.features.launch import launch_frame
from perfml.learned.features.occupancy import OccupancyFeatures
from perfml.learned.features.profiles import ProfileFeatures


def _closed_form_rows(X: pd.DataFrame, launch: pd.DataFrame) -> pd.DataFrame:
    """What the closed-form logs read of X: identity, launch, and the work columns X has."""
    work = [c for c in WORK_COLUMNS if c in X.columns]
    return pd.concat([X[["board", "app_id", "input_size", *work]], launch], axis=1)


@dataclass(frozen=True)
class RowBlocks:
    """The row-wise feature blocks of a table of rows (nothing learned, nothing measured).

    Attributes
    ----------
    launch : DataFrame
        Block and grid dims (the launch group).
    descriptors : DataFrame
        ``desc_*``.
    absolute : DataFrame
        ``board_*``.
    logs : DataFrame or None
        log T of the closed-form models with unit efficiency (None without the closed-form group).
    """

    launch: pd.DataFrame
    descriptors: pd.DataFrame
    absolute: pd.DataFrame
    logs: pd.DataFrame | None

    @classmethod
    def build(cls, X: pd.DataFrame, *, analytical: bool = True, data_home=None, registry=None,
              peaks: str = "spec", characterizations=None, compute_rate: str = "cores",
              waves: bool = False) -> "RowBlocks":
        """Compute every row-wise block of ``X`` once (``peaks``, ``waves``: see :func:`closed_form_logs`)."""
        launch = launch_frame(X)
        absolute = BoardFeatures(registry=registry).absolute(X)
        logs = None
        if analytical:
            logs = closed_form_logs(_closed_form_rows(X, launch), data_home=data_home, registry=registry, peaks=peaks,
                                    characterizations=characterizations, compute_rate=compute_rate, waves=waves)
        return cls(launch, descriptor_features(X, launch), absolute, logs)

    def take(self, positions) -> "RowBlocks":
        """The blocks of the rows at ``positions`` (as ``X.iloc[positions]``)."""
        pick = lambda frame: None if frame is None else frame.iloc[positions]  # noqa: E731
        return RowBlocks(pick(self.launch), pick(self.descriptors), pick(self.absolute), pick(self.logs))


class FeatureBuilder(TransformerMixin, BaseEstimator):
    """Build the learned predictor's features from one transformer per group.

    Groups: launch (:func:`~perfml.learned.features.launch.launch_frame`), descriptors
    (:func:`~perfml.learned.features.descriptors.descriptor_features`), boards
    (:class:`~perfml.learned.features.boards.BoardFeatures`), closed-form and transfer
    (:class:`~perfml.learned.features.closed_form.ClosedFormFeatures`), occupancy
    (:class:`~perfml.learned.features.occupancy.OccupancyFeatures`), profiles
    (:class:`~perfml.learned.features.profiles.ProfileFeatures`), app identity.
    All times and counts enter as natural logs. ``fit`` only stores what it learned
    from the training rows; ``transform`` never reads a runtime.

    Parameters
    ----------
    analytical : bool, default=True
        Add the closed-form (``bsp_*``, ``roof_*``, ``base_log_t``, ``xfer_*``) and
        occupancy (``occ_*``) groups.
    profiles : bool, default=True
        Add the ``prof_*`` group (profiles of the app on the *other* training boards).
    app_identity : bool, default=True
        Add one indicator column per app seen in training (``app=<id>``); turn it off
        for leave-one-app-out, where the app is by definition unseen.
    board_features : {"both", "absolute", "relative"}, default="both"
        ``board_*`` absolute specifications, ``rel_*`` specifications relative to the
        other training boards (log differences), or both.
    data_home : DataHome or path-like, optional
        Where profiles and BSP constants are read from.
    registry : perfml.boards.Registry, optional
        Where boards are looked up (the default registry when None).
    characterization : bool, default=False
        Add the ``char_*`` group (:class:`~perfml.learned.features.characterization.CharacterizationFeatures`:
        achieved DRAM bandwidth, FP32 throughput and launch floor of the row's board),
        after the profile group.
    characterizations : None, mapping or callable, optional
        Where the ``char_*`` group takes each board's characterization from (None: the
        committed ones). Not saved with the model: a reloaded builder uses the committed ones.
    closed_form_peaks : {"spec", "characterized"}, default="spec"
        Peaks of the roofline times of the closed-form group (``roof_*``): the datasheet's,
        or the boards' achieved ones from ``characterizations``.
    transfer_blend : bool, default=False
        Add ``xfer_log_t_blend`` to the closed-form group (after ``xfer_log_t``): the
        blend of the BSP and memory-roofline transfers with a per-app weight chosen by
        inner leave-one-board-out (:class:`ClosedFormFeatures` ``blend``).
    compute_rate : {"cores", "issue"}, default="cores"
        The compute rate under the BSP and compute-roofline times (and so under their
        transfers between boards): cores x clock, or the issue-limited rate
        (:func:`perfml.boards.issue_limited_flops`, :func:`closed_form_logs`).
    baseline_selection : {"spread", "transfer-cv"}, default="spread"
        How the closed-form group chooses each app's baseline
        (:class:`~perfml.learned.features.closed_form.ClosedFormFeatures`).
    wave_scaling : bool, default=False
        Make the wave-quantized time a candidate baseline of the closed-form group
        (:func:`~perfml.learned.features.closed_form.wave_logs`, ClosedFormFeatures ``waves``).

    Attributes
    ----------
    train_boards_ : list of str
    offsets_, transfer_, baseline_choice_ :
        The closed-form group's fitted state (see :class:`ClosedFormFeatures`).
    registers_ : pandas.DataFrame
        The occupancy group's fitted state.
    profile_values_ : pandas.DataFrame
        The profile group's fitted state.
    apps_ : list of str
    feature_names_ : list of str
    """

    def __init__(self, *, analytical: bool = True, profiles: bool = True, app_identity: bool = True,
                 board_features: str = "both", data_home=None, registry=None, characterization: bool = False,
                 characterizations=None, closed_form_peaks: str = "spec", transfer_blend: bool = False,
                 baseline_selection: str = "spread", compute_rate: str = "cores", wave_scaling: bool = False):
        self.wave_scaling = wave_scaling
        self.compute_rate = compute_rate
        self.transfer_blend = transfer_blend
        self.baseline_selection = baseline_selection
        self.closed_form_peaks = closed_form_peaks
        self.characterization = characterization
        self.characterizations = characterizations
        self.analytical = analytical
        self.profiles = profiles
        self.app_identity = app_identity
        self.board_features = board_features
        self.data_home = data_home
        self.registry = registry

    def _characterizations(self):
        """Where board characterizations come from: the given ones, else (a board they lack, or
        none given) the committed ones (:func:`perfml.characterize.board_characterization`)."""
        from perfml.characterize import board_characterization
        from perfml.closed_form._characterized import characterization_for

        given = self.characterizations
        if given is None:
            return board_characterization
        return lambda board: characterization_for(board, given) or board_characterization(board)

    # -- the groups, built from this builder's fitted state ---------------------------------
    def _cache(self, group: str) -> dict:
        """A group's lookups derived from the fitted state (medians per board, ...), kept between
        transforms so that prediction does not recompute them; emptied by ``fit`` and ``from_state``."""
        caches = self.__dict__.get("_group_caches")
        if caches is None:
            caches = self._group_caches = {}
        return caches.setdefault(group, {})

    def _boards(self) -> BoardFeatures:
        group = BoardFeatures(mode=self.board_features, registry=self.registry)
        group.train_boards_ = self.train_boards_
        group._lookup_cache = self._cache("boards")
        return group

    def _closed_form(self) -> ClosedFormFeatures:
        group = ClosedFormFeatures(registry=self.registry, blend=self.transfer_blend,
                                   baseline_selection=self.baseline_selection, waves=self.wave_scaling)
        group.train_boards_ = self.train_boards_
        group.offsets_, group.transfer_, group.baseline_choice_ = self.offsets_, self.transfer_, self.baseline_choice_
        if self.transfer_blend:
            group.blend_weights_ = self.blend_weights_
        group._lookup_cache = self._cache("closed_form")
        return group

    def _occupancy(self) -> OccupancyFeatures:
        group = OccupancyFeatures(registry=self.registry)
        group.registers_ = self.registers_
        group._lookup_cache = self._cache("occupancy")
        return group

    def _profiles(self) -> ProfileFeatures:
        group = ProfileFeatures(data_home=self.data_home, registry=self.registry)
        group.profile_values_ = self.profile_values_
        group._lookup_cache = self._cache("profiles")
        return group

    def row_blocks(self, X: pd.DataFrame, *, waves: bool | None = None) -> RowBlocks:
        """The row-wise blocks of X (compute once, then pass to ``fit`` / ``transform``).

        ``waves``: compute the wave-quantized time too (default: when ``wave_scaling`` is on).
        """
        X = check_frame(X, REQUIRED, "FeatureBuilder")
        return RowBlocks.build(X, analytical=self.analytical, data_home=self.data_home, registry=self.registry,
                               peaks=self.closed_form_peaks, characterizations=self._characterizations(),
                               compute_rate=self.compute_rate,
                               waves=bool(self.wave_scaling) if waves is None else waves)

    def fit(self, X, y, *, blocks: RowBlocks | None = None):
        """Learn, from the training rows only, what the features of any row need.

        ``blocks`` (optional) are X's :class:`RowBlocks`, when the caller already has them.
        """
        X = check_frame(X, REQUIRED, "FeatureBuilder")
        y = check_target(y, len(X), "FeatureBuilder")
        self._group_caches = {}  # lookups of a previous fit are stale
        self.train_boards_ = sorted(X["board"].unique())
        self.apps_ = sorted(X["app_id"].unique())
        if self.analytical:
            launch = launch_frame(X) if blocks is None else blocks.launch
            logs = blocks.logs if blocks is not None and blocks.logs is not None else closed_form_logs(
                _closed_form_rows(X, launch), data_home=self.data_home, registry=self.registry,
                peaks=self.closed_form_peaks, characterizations=self._characterizations(),
                compute_rate=self.compute_rate, waves=bool(self.wave_scaling))
            closed = ClosedFormFeatures(registry=self.registry, blend=self.transfer_blend,
                                        baseline_selection=self.baseline_selection,
                                        waves=self.wave_scaling).fit(X, y, launch=launch, logs=logs)
            self.offsets_, self.transfer_, self.baseline_choice_ = closed.offsets_, closed.transfer_, closed.baseline_choice_
            if self.transfer_blend:
                self.blend_weights_ = closed.blend_weights_
            self.registers_ = OccupancyFeatures(registry=self.registry).fit(X, launch=launch).registers_
        if self.profiles:
            self.profile_values_ = ProfileFeatures(data_home=self.data_home, registry=self.registry).fit(X).profile_values_
        # The names as the training rows get them: the column set of a group depends on its rows
        # (the descriptors' work columns exist only where a described kernel is), so one row of
        # each board and kernel, not the first row alone (an undescribed kernel first dropped the
        # work columns the regressor was trained on, and its saved model could not be loaded).
        first = np.flatnonzero(~X.duplicated(["board", "app_id"]).to_numpy())
        sample = None if blocks is None else blocks.take(first)  # the rows' blocks: nothing built again
        self.feature_names_ = list(self.transform(X.iloc[first], blocks=sample).columns)
        return self

    # -- persistence (plain tables, never pickles) --------------------------------------
    _STATE_TABLES = ("offsets_", "transfer_", "registers_", "profile_values_", "blend_weights_")

    def get_state(self) -> tuple[dict, dict[str, pd.DataFrame]]:
        """The fitted state as JSON-able metadata plus named tables (for Parquet)."""
        check_is_fitted(self, "train_boards_")
        meta = {
            "params": self.get_params(deep=False) | {"data_home": None, "registry": None, "characterizations": None},
            "train_boards": list(self.train_boards_),
            "apps": list(self.apps_),
            "feature_names": list(self.feature_names_),
            "baseline_choice": dict(getattr(self, "baseline_choice_", {})),
        }
        tables = {name.rstrip("_"): getattr(self, name) for name in self._STATE_TABLES if hasattr(self, name)}
        return meta, tables

    @classmethod
    def from_state(cls, meta: dict, tables: dict[str, pd.DataFrame], data_home=None, registry=None) -> "FeatureBuilder":
        """Rebuild a fitted FeatureBuilder from :meth:`get_state`'s output."""
        params = {k: v for k, v in meta["params"].items() if k != "registry"}
        builder = cls(**{**params, "data_home": data_home, "registry": registry})
        builder.train_boards_ = list(meta["train_boards"])
        builder.apps_ = list(meta["apps"])
        builder.feature_names_ = list(meta["feature_names"])
        builder._group_caches = {}
        if builder.analytical:
            builder.baseline_choice_ = dict(meta["baseline_choice"])
        for name in cls._STATE_TABLES:
            key = name.rstrip("_")
            if key in tables:
                setattr(builder, name, tables[key])
        return builder

    def measured_ms(self, X) -> np.ndarray:
        """Per row of X, the time (ms) its own board took for its run in the training rows, NaN
        where that board did not run it (or the model predates the record).

        A run is the kernel, its sizes and its launch (the description's default where the row
        gives none), as the transfer features match it (:data:`RUN_KEY`); the time is the median
        of its repeats, taken in log (:attr:`ClosedFormFeatures.transfer_`). The features of a
        training board's row leave its own board out (cross-fitted), so that a training row
        sees what an unseen board's row sees: they never read this measurement. ``X`` has the
        columns of :data:`REQUIRED` (checked by the caller).
        """
        out = np.full(len(X), np.nan)
        table = getattr(self, "transfer_", None)
        if table is None or MEASURED_LOG_MS not in table.columns:
            return out
        # a kernel no training run measured has no time to look up; nor has a kernel without a description
        # whose row gives no launch (its run is its launch): launch_frame refused such a --reference row
        mine = np.flatnonzero(X["board"].astype(str).isin(self.train_boards_).to_numpy()
                              & X["app_id"].astype(str).isin(table["app_id"].astype(str).unique()).to_numpy()
                              & _launch_known(X))
        if not mine.size:  # no row of a training board (the common query): nothing to look up
            return out
        X = X.iloc[mine]
        launch = launch_frame(X)
        sizes = np.column_stack([X["input_size"].to_numpy(dtype=float), second_size(X),
                                 *(launch[c].to_numpy(dtype=float) for c in RUN_KEY[3:])])
        for (board, app), rows in X.groupby([X["board"].astype(str), X["app_id"].astype(str)], sort=False).indices.items():
            runs = self._measured_runs(board, app)
            out[mine[rows]] = [runs.get(tuple(key), np.nan) for key in sizes[rows].tolist()]
        return np.exp(out)

    def _measured_runs(self, board: str, app: str) -> dict:
        """The training runs of ``app`` on ``board``: (sizes and launch, as :data:`RUN_KEY`) -> measured
        log ms; built the first time a query asks, and kept."""
        cache = self._cache("measured")
        if "groups" not in cache:  # the table's rows per (board, app), once
            table = self.transfer_
            cache["groups"] = table.groupby([table["board"].astype(str), table["app_id"].astype(str)]).indices
            cache["keys"] = table[RUN_KEY[1:]].to_numpy(dtype=float)
            cache["values"] = table[MEASURED_LOG_MS].to_numpy(dtype=float)
        if (board, app) not in cache:
            rows = cache["groups"].get((board, app), [])
            cache[(board, app)] = dict(zip(map(tuple, cache["keys"][rows].tolist()), cache["values"][rows].tolist()))
        return cache[(board, app)]

    @checks_frames_once
    def transform(self, X, *, blocks: RowBlocks | None = None) -> pd.DataFrame:
        """Features of the rows of X (a DataFrame with board, app_id, input_size, launch).

        ``blocks`` (optional) are X's :class:`RowBlocks`, when the caller already has them.
        """
        check_is_fitted(self, "train_boards_")
        X = check_frame(X, REQUIRED, "FeatureBuilder")
        if blocks is None:
            blocks = self.row_blocks(X)
        parts = [blocks.descriptors]
        boards = self._boards()
        if self.board_features in ("absolute", "both"):
            parts.insert(0, blocks.absolute)
        if self.board_features in ("relative", "both"):
            parts.append(boards.relative(X, blocks.absolute))
        if self.analytical:
            parts.append(self._closed_form().transform(X, launch=blocks.launch, logs=blocks.logs))
            parts.append(self._occupancy().transform(X, launch=blocks.launch))
        if self.profiles:
            parts.append(self._profiles().transform(X, launch=blocks.launch))
        if self.characterization:
            parts.append(CharacterizationFeatures(characterizations=self._characterizations()).fit(X).transform(X))
        if self.app_identity:
            apps = X["app_id"].to_numpy(dtype=object)[:, None]  # one comparison for every app, not a Series per app
            parts.append(pd.DataFrame((apps == np.asarray(self.apps_, dtype=object)[None, :]).astype(float),
                                      index=X.index, columns=[f"app={a}" for a in self.apps_]))
        return pd.concat(parts, axis=1).astype(float)


def _launch_known(X: pd.DataFrame) -> np.ndarray:
    """Per row: is its launch known (a described kernel's default, or the row's own block_x and grid_x)?"""
    from perfml.learned.features._common import described

    given = np.ones(len(X), dtype=bool)
    for column in ("block_x", "grid_x"):
        given &= np.isfinite(X[column].to_numpy(dtype=float)) if column in X.columns else False
    apps = X["app_id"].astype(str)
    return given | apps.map({a: described(a) for a in apps.unique()}).to_numpy(dtype=bool)
