"""The BSP-based model of seed 003 as a scikit-learn regressor; fitting it fits lambda.

References
----------
M. Amaris, D. Cordeiro, A. Goldman, R. Y. de Camargo, "A simple BSP-based model to
predict execution time in GPU applications", IEEE HiPC 2015, pp. 285-294
(``shared/seeds/003_*.txt``), Section IV, equations 3-5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from perfml._grouping import group_positions
from perfml.apps import get_app
from perfml.errors import DatasetSchemaError
from perfml.closed_form._bsp_constants import DEFAULT_SOURCES, BSPConstants, ConstantsTable
from perfml.closed_form._inputs import LAUNCH_COLUMNS, check_frame, check_target, plain_value

_REQUIRED = ("board", "app_id", "input_size")
LATENCIES = ("paper", "characterized")
#: BSPConstants latency field -> characterized quantity (seed 003 eqs. 4-5: g_GM, g_L2, g_L1, g_SM)
_LATENCY_QUANTITIES = {"lat_global": "dram_latency", "lat_l2": "l2_latency", "lat_l1": "l1_latency",
                       "lat_shared": "shared_latency"}


def bsp_cycles_per_thread(counts: dict, constants: BSPConstants, n: np.ndarray) -> dict:
    """Comp, Comm_GM and Comm_SM per thread in cycles (seed 003 eqs. 4 and 5).

    ``Comm_SM = (ld_0 + st_0) g_SM`` (eq. 4) and
    ``Comm_GM = (ld_1 + st_1 - L1 - L2) g_GM + L1 g_L1 + L2 g_L2`` (eq. 5), with the
    cache hits ``L1 = f_L1 ld_1`` and ``L2 = f_L2 ld_1`` (fractions of the global reads,
    as in the BSPGPU scripts). GTX-295 scripts divide the communication terms by
    constants (``comm_gm_divisor`` / ``comm_sm_divisor``), kept for fidelity.
    """
    env = {"N": np.asarray(n, dtype=float), "threads": counts["threads"]}
    comp = constants.comp(env)
    if comp is None:
        comp = counts["comp_cycles"]
    ld1, st1 = counts["ld_global"], counts["st_global"]
    l1 = constants.l1_fraction(n) * ld1
    l2 = constants.l2_frac * ld1
    comm_gm = (ld1 + st1 - l1 - l2) * constants.lat_global + l1 * constants.lat_l1 + l2 * constants.lat_l2
    uses_shared = counts["uses_shared"] if constants.uses_shared is None else constants.uses_shared
    comm_sm = (counts["ld_shared"] + counts["st_shared"]) * constants.lat_shared if uses_shared else 0.0 * comp
    return {
        "comp": np.broadcast_to(comp, np.shape(n)).astype(float),
        "comm_gm": comm_gm / constants.comm_gm_divisor,
        "comm_sm": np.asarray(comm_sm, dtype=float) / constants.comm_sm_divisor,
    }


def bsp_time_ms(threads, cycles: dict, constants: BSPConstants, lam=1.0) -> np.ndarray:
    """Seed 003 eq. 3: ``T_k = t (Comp + Comm_GM + Comm_SM) / (R P lambda)``, in ms.

    ``R`` is the clock rate (``clock_mhz * 1e6`` Hz) and ``P`` the number of cores.
    """
    total = cycles["comp"] + cycles["comm_gm"] + cycles["comm_sm"]
    return 1e3 * np.asarray(threads, dtype=float) * total / (constants.clock_mhz * 1e6 * constants.cores * lam)


class BSPModel(RegressorMixin, BaseEstimator):
    """BSP model of GPU kernel time with lambda fitted from measured runtimes.

    ``T_k = t (Comp + Comm_GM + Comm_SM) / (R P lambda)`` (seed 003, eqs. 3-5). The work
    counts per thread (Comp, ld/st to global and shared memory) come from the kernel
    description of the app (the ``[model]`` table of its sidecar in ``perfml/kernels/cuda``); the constants (cores P, clock R,
    latencies g, L1/L2 hit fractions) from ``bsp_inputs.csv`` of the data home for the
    boards and apps the upstream scripts cover, else from the board registry. Fitting
    estimates lambda = T_k(lambda=1) / T_measured per group, robustly over input sizes:
    the ratios are first reduced per input size (median over repeated rows) and then
    across sizes (``aggregate``).

    Parameters
    ----------
    group_by : tuple of str, default=("board", "app_id")
        Columns of X that index lambda. ``("app_id",)`` fits one lambda per app shared
        by all boards (seed 003's "same lambda for all Kepler boards"), ``()`` a single
        lambda.
    aggregate : {"median", "geomean"}, default="median"
        How per-size lambdas are combined into one.
    constants_sources : tuple of str
        ``model_source`` values of ``bsp_inputs.csv`` to take constants from, in order.
    unseen : {"fallback", "error"}, default="fallback"
        For a row whose group was not fitted: "fallback" uses the app's lambda
        (geometric mean over the fitted groups of that app), then the overall one;
        "error" raises.
    data_home : DataHome or path-like, optional
        Where ``bsp_inputs.csv`` is read from (a :class:`perfml.datasets.DataHome` reads it
        once; a path is wrapped in one). Required by ``fit``: None raises
        :class:`perfml.errors.DataHomeError` (nothing below the CLI searches for it).
    registry : perfml.boards.Registry, optional
        Board registry for the cores and clock of boards without ``bsp_inputs`` rows
        (the default registry when None).
    latencies : {"paper", "characterized"}, default="paper"
        ``"paper"``: the latencies g of ``bsp_inputs.csv`` or seed 003's typical ones
        (500 / 250 / 5 cycles). ``"characterized"``: each of ``g_GM``, ``g_L2``, ``g_L1``,
        ``g_SM`` is replaced by the board's ``dram_latency``, ``l2_latency``,
        ``l1_latency``, ``shared_latency`` in cycles (measured, calibrated or published
        tier) where its characterization has it, and kept otherwise. The committed
        calibrated characterizations hold no latency (runtimes of vectorAdd and matMul
        give bandwidth and throughput, not latency), so with them the model falls back
        to the paper's latencies; :meth:`latency_tiers` says which were replaced.
    characterizations : None, mapping or callable, optional
        Board -> :class:`~perfml.characterize.Characterization` or a callable
        such as :func:`perfml.characterize.board_characterization` (see
        :mod:`perfml.closed_form._characterized`); required with ``latencies="characterized"``.

    Attributes
    ----------
    lambda_ : pandas.Series or float
        Fitted lambda per group (a float when ``group_by`` is empty).
    n_sizes_ : pandas.Series or int
        Number of distinct input sizes behind each lambda.
    app_lambda_ : pandas.Series
        Geometric mean of the fitted lambdas of each app (used for unseen boards).
    global_lambda_ : float
        Geometric mean of all fitted lambdas.
    constants_ : ConstantsTable
        The constants lookup used.

    References
    ----------
    Amaris et al., HiPC 2015 (seed 003), eqs. 3-5 and Table II.
    """

    def __init__(
        self,
        *,
        group_by: Sequence[str] = ("board", "app_id"),
        aggregate: str = "median",
        constants_sources: Sequence[str] = DEFAULT_SOURCES,
        unseen: str = "fallback",
        data_home=None,
        registry=None,
        latencies: str = "paper",
        characterizations=None,
    ):
        self.latencies = latencies
        self.characterizations = characterizations
        self.group_by = group_by
        self.aggregate = aggregate
        self.constants_sources = constants_sources
        self.unseen = unseen
        self.data_home = data_home
        self.registry = registry

    # -- model time with lambda = 1 -------------------------------------------------
    def _constants_table(self) -> ConstantsTable:
        from perfml.datasets import load_bsp_inputs

        if not self.constants_sources:  # registry constants only (the learned features' case): nothing to read
            return ConstantsTable(None, sources=(), registry=self.registry)
        return ConstantsTable(load_bsp_inputs(self.data_home), sources=tuple(self.constants_sources), registry=self.registry)

    def model_terms(self, X) -> pd.DataFrame:
        """Threads, Comp, Comm_GM, Comm_SM (cycles per thread) and T_k with lambda=1 (ms) per row."""
        X = check_frame(X, _REQUIRED, "BSPModel")
        table = getattr(self, "constants_", None) or self._constants_table()
        columns = ["threads", "comp", "comm_gm", "comm_sm", "t1_ms"]
        values = np.full((len(X), len(columns)), np.nan)
        # columns read once as arrays and written by position; the counts depend on the kernel, its
        # sizes and launch only, so they are evaluated once per kernel, then split by board
        sizes = X["input_size"].to_numpy(dtype=float)
        launches = {c: X[c].to_numpy(dtype=float) for c in LAUNCH_COLUMNS if c in X}
        boards = X["board"].to_numpy(dtype=object)
        for app_id, app_pos in group_positions(X["app_id"]).items():
            app = get_app(app_id)
            counts = app.bsp_counts(sizes[app_pos], **{c: v[app_pos] for c, v in launches.items()})
            for board, local in group_positions(boards[app_pos]).items():
                pos = app_pos[local]
                constants = table.get(board, app_id)
                if self.latencies == "characterized":
                    constants = self._characterized(board, constants)
                part = {key: value[local] for key, value in counts.items()}
                part["uses_shared"] = bool(app.bsp["uses_shared"])
                cycles = bsp_cycles_per_thread(part, constants, sizes[pos])
                values[pos, 0] = part["threads"]
                for j, key in enumerate(("comp", "comm_gm", "comm_sm"), start=1):
                    values[pos, j] = cycles[key]
                values[pos, 4] = bsp_time_ms(part["threads"], cycles, constants)
        return pd.DataFrame(values, index=X.index, columns=columns)

    def latency_tiers(self, board: str) -> dict[str, str]:
        """Per BSP latency (``lat_global``, ``lat_l2``, ``lat_l1``, ``lat_shared``) the tier it comes from on ``board``.

        "paper" for every latency unless ``latencies="characterized"``: with the paper's
        latencies a characterization is not read, whatever it holds.
        """
        from perfml.closed_form._characterized import ACHIEVED_TIERS, characterization_for

        if self.latencies != "characterized":
            return dict.fromkeys(_LATENCY_QUANTITIES, "paper")
        ch = characterization_for(board, self.characterizations)
        tiers = {}
        for field, quantity in _LATENCY_QUANTITIES.items():
            chosen = None if ch is None else ch.best(quantity, "cycles", tiers=ACHIEVED_TIERS)
            tiers[field] = "paper" if chosen is None else chosen.tier
        return tiers

    def _characterized(self, board: str, constants: BSPConstants) -> BSPConstants:
        """``constants`` with the board's characterized latencies (cycles) where it has them."""
        from dataclasses import replace

        from perfml.closed_form._characterized import ACHIEVED_TIERS, characterization_for

        ch = characterization_for(board, self.characterizations)
        if ch is None:
            return constants
        found = {field: ch.value(quantity, "cycles", tiers=ACHIEVED_TIERS)
                 for field, quantity in _LATENCY_QUANTITIES.items()}
        return replace(constants, **{k: float(v) for k, v in found.items() if v is not None})

    # -- scikit-learn API -------------------------------------------------------------
    def fit(self, X, y):
        """Fit lambda per group from measured times ``y`` (milliseconds)."""
        from perfml.closed_form._params import check_choice, check_str_tuple
        from perfml.datasets import check_data_home

        check_data_home(self.data_home, "BSPModel.fit")
        check_choice("BSPModel", "aggregate", self.aggregate, ("median", "geomean"))
        check_choice("BSPModel", "unseen", self.unseen, ("fallback", "error"))
        check_str_tuple("BSPModel", "group_by", self.group_by)
        check_str_tuple("BSPModel", "constants_sources", self.constants_sources)
        check_choice("BSPModel", "latencies", self.latencies, LATENCIES)
        from perfml.closed_form._characterized import check_characterizations

        check_characterizations("BSPModel", self.characterizations, required=self.latencies == "characterized")
        group_by = tuple(self.group_by)
        X = check_frame(X, _REQUIRED + group_by, "BSPModel")
        y = check_target(y, len(X), "BSPModel")
        self.constants_ = self._constants_table()
        t1 = self.model_terms(X)["t1_ms"].to_numpy(dtype=float)
        ratios = pd.DataFrame({"ratio": t1 / y, "input_size": X["input_size"].to_numpy()}, index=X.index)
        for col in group_by:
            ratios[col] = X[col].to_numpy()
        keys = list(group_by)
        per_size = ratios.groupby(keys + ["input_size"], sort=True)["ratio"].median().reset_index()
        if keys:
            grouped = per_size.groupby(keys, sort=True)["ratio"]
            self.lambda_ = grouped.agg(self._reduce)
            self.n_sizes_ = grouped.size()
        else:
            self.lambda_ = float(self._reduce(per_size["ratio"]))
            self.n_sizes_ = int(len(per_size))
        lambdas = pd.Series(np.atleast_1d(self.lambda_), dtype=float)
        self.global_lambda_ = float(np.exp(np.mean(np.log(lambdas))))
        app_ratios = pd.DataFrame({"app_id": X["app_id"].to_numpy(), "ratio": t1 / y, "input_size": X["input_size"].to_numpy()})
        if "app_id" in keys:
            lam = self.lambda_.reset_index() if isinstance(self.lambda_, pd.Series) else None
            self.app_lambda_ = lam.groupby("app_id")["ratio"].agg(lambda v: float(np.exp(np.mean(np.log(v)))))
        else:
            per = app_ratios.groupby(["app_id", "input_size"])["ratio"].median().reset_index()
            self.app_lambda_ = per.groupby("app_id")["ratio"].agg(self._reduce)
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return self

    def _reduce(self, values) -> float:
        values = np.asarray(values, dtype=float)
        if self.aggregate == "median":
            return float(np.median(values))
        return float(np.exp(np.mean(np.log(values))))

    def lambda_for(self, X) -> np.ndarray:
        """The lambda each row of X is predicted with (fitted, or the fallback)."""
        check_is_fitted(self, "lambda_")
        X = check_frame(X, _REQUIRED, "BSPModel")
        group_by = tuple(self.group_by)
        if not group_by:
            return np.full(len(X), float(self.lambda_))
        missing = [c for c in group_by if c not in X.columns]
        if missing:
            raise DatasetSchemaError(f"BSPModel: X lacks column(s) {missing} that lambda is grouped by")
        keys = list(zip(*[X[c].to_numpy() for c in group_by])) if len(group_by) > 1 else list(X[group_by[0]].to_numpy())
        lam = np.empty(len(X))
        for i, (key, app_id) in enumerate(zip(keys, X["app_id"].to_numpy())):
            if key in self.lambda_.index:
                lam[i] = self.lambda_.loc[key]
            elif self.unseen == "error":
                from perfml.errors import UnsupportedQueryError

                group = ", ".join(f"{c} {plain_value(v)}" for c, v in zip(group_by, np.atleast_1d(np.asarray(key, dtype=object))))
                raise UnsupportedQueryError(
                    f"BSPModel: row {i + 1} ({group}) has no lambda: the model was fitted on no runtime of that "
                    "group; fit it on runtimes of that group, or use unseen='fallback' (the app's or the global lambda)"
                )
            elif app_id in self.app_lambda_.index:
                lam[i] = self.app_lambda_.loc[app_id]
            else:
                lam[i] = self.global_lambda_
        return lam

    def predict(self, X) -> np.ndarray:
        """Predicted kernel time in milliseconds."""
        check_is_fitted(self, "lambda_")
        X = check_frame(X, _REQUIRED, "BSPModel")
        t1 = self.model_terms(X)["t1_ms"].to_numpy(dtype=float)
        return t1 / self.lambda_for(X)
