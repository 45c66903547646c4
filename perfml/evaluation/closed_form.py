"""Score the closed-form models on the measured runtimes they can describe.

A closed-form model describes a runtime row when the app has a kernel description
(the ``[model]`` table of its sidecar in ``perfml/kernels/cuda``) and the board has the constants the model needs. The BSP
model must be fitted (lambda), so it is scored out of sample by default: lambda is
fitted on the other input sizes of the same (board, app) (``protocol="size-cv"``, a
scikit-learn ``GroupKFold`` over input sizes); ``"reference-board"`` fits one lambda
per app on GTX-680 and predicts every board (seed 003's scenario); ``"in-sample"``
fits and scores on the same rows (what seed 003's Figure 7 reports). Every protocol is a
splitter of :mod:`perfml.evaluation.protocols` and goes through the one harness.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.apps import list_apps
from perfml.errors import PerfmlError
from perfml.evaluation.metrics import score_table
from perfml.evaluation.protocols import PROTOCOLS as ALL_PROTOCOLS

MODELS = ("bsp", "hongkim", "roofline")
#: Every protocol of the one registry, :mod:`perfml.evaluation.protocols`.
PROTOCOLS = ALL_PROTOCOLS


def describable_runtimes(data_home=None, source: str | None = None, board: str | None = None, app_id: str | None = None) -> pd.DataFrame:
    """Runtime rows of the described apps (default GPU configuration), measured time in ``measured_ms``.

    The measured time is ``time_ms_mean`` (seed 003 reports means of repeated runs).
    """
    from perfml.datasets import load_runtimes

    rt = load_runtimes(data_home, source=source)
    rt = rt[rt["app_id"].isin(list_apps()) & (rt["gpu_config"].fillna("default") == "default")]
    if board is not None:
        from perfml.boards import resolve_board_name

        name = resolve_board_name(board)
        if name not in set(rt["board"]):
            raise PerfmlError(f"no runtimes for board {name!r} in the selection; boards there: {', '.join(sorted(rt['board'].unique()))}")
        rt = rt[rt["board"] == name]
    if app_id is not None:
        from perfml.apps import get_app

        get_app(app_id)  # raises UnknownAppError with close names
        if app_id not in set(rt["app_id"]):
            raise PerfmlError(f"no runtimes for app {app_id!r} in the selection; apps there: {', '.join(sorted(rt['app_id'].unique()))}")
        rt = rt[rt["app_id"] == app_id]
    rt = rt.assign(measured_ms=rt["time_ms_mean"]).reset_index(drop=True)
    if rt.empty:
        # the message named --board/--app, which not every caller has; the usual cause is a source
        # whose kernels have no description (Rodinia's), which no filter widens
        every = load_runtimes(data_home)
        sources = sorted(set(every.loc[every["app_id"].isin(list_apps()), "source"].dropna()))
        raise PerfmlError(f"no runtimes of a described kernel ({', '.join(list_apps())}) in source {source!r}; the "
                          f"closed-form models need a description: choose a source that ran them ({', '.join(sources)})"
                          if source is not None else "no runtimes of a described kernel match the selection")
    return rt


def closed_form_estimator(model: str, protocol: str = "size-cv", data_home=None):
    """The regressor ``perfml evaluate --model`` scores: BSP, roofline or Hong & Kim on runtime rows.

    Under ``reference-board`` the BSP lambda is one per app shared by every board
    (seed 003's "same lambda for all Kepler boards"); otherwise one per (board, app).
    """
    if model == "roofline":
        from perfml.closed_form.roofline import RooflineModel

        return RooflineModel()
    if model == "hongkim":
        from perfml.closed_form.hongkim_runtime import HongKimRuntimeModel

        return HongKimRuntimeModel(data_home=data_home)
    from perfml.closed_form.bsp import BSPModel

    if protocol == "reference-board":
        return BSPModel(group_by=("app_id",), data_home=data_home)
    return BSPModel(data_home=data_home)


def predict_closed_form(model: str, runtimes: pd.DataFrame, protocol: str = "size-cv", data_home=None,
                        reference_board: str = "GTX-680") -> np.ndarray:
    """Predictions (ms) of one closed-form model for the rows of ``runtimes`` the protocol holds out.

    Goes through the one harness (:func:`perfml.evaluation.cross_val_predictions`). The
    roofline and Hong & Kim learn nothing from measured times, so their prediction of a row
    is the same under every protocol; the protocol still decides *which* rows are scored
    (``newest-board`` holds out the newest boards only), so that models evaluated side by
    side are scored on the same rows. NaN for a row the protocol does not hold out (and for
    one the model cannot predict).
    """
    from perfml.evaluation.harness import cross_val_predictions

    if model not in MODELS:
        raise PerfmlError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    if protocol not in PROTOCOLS:
        raise PerfmlError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    y = runtimes["measured_ms"].to_numpy(dtype=float)
    estimator = closed_form_estimator(model, protocol, data_home)
    frame = runtimes.reset_index(drop=True)
    pred = cross_val_predictions(estimator, frame, y, protocol, reference_board=reference_board)
    return pred["predicted_ms"].reindex(frame.index).to_numpy(dtype=float)


def held_out_rows(runtimes: pd.DataFrame, protocol: str, reference_board: str = "GTX-680") -> np.ndarray:
    """Per row of ``runtimes``, whether ``protocol`` holds it out (scores it) in some fold."""
    from perfml.evaluation.protocols import get_protocol

    frame = runtimes.reset_index(drop=True)
    splitter = get_protocol(protocol, reference_board=reference_board)
    groups = splitter.groups_of(frame) if hasattr(splitter, "groups_of") else None
    held = np.zeros(len(frame), dtype=bool)
    y = frame["measured_ms"].to_numpy(dtype=float)
    for _, test in splitter.split(frame, y, groups):
        held[np.asarray(test)] = True
    return held


def evaluate_closed_form(model: str, data_home=None, source=None, protocol="size-cv", board=None, app_id=None) -> dict[str, pd.DataFrame]:
    """Overall, per-board and per-app scores (MAPE, median APE, within 0.8-1.2, Spearman).

    Rows a model cannot predict (NaN, e.g. Hong & Kim on a board missing a field) are
    left out of the scores and counted in ``overall["n_unpredicted"]``.
    """
    from perfml.datasets import as_data_home

    data_home = as_data_home(data_home, what="evaluate_closed_form")
    rt = describable_runtimes(data_home, source=source, board=board, app_id=app_id)
    pred = predict_closed_form(model, rt, protocol=protocol, data_home=data_home)
    # only the rows the protocol holds out are scored; of those, a row the model cannot predict
    # is counted (n_unpredicted), not scored
    frame = rt.assign(predicted_ms=pred)[held_out_rows(rt, protocol)]
    scored = frame[np.isfinite(frame["predicted_ms"]) & (frame["predicted_ms"] > 0)]
    overall = score_table(scored).assign(n_unpredicted=len(frame) - len(scored))
    frame = scored
    return {
        "predictions": frame,
        "overall": overall,
        "per_board": score_table(frame, by=["board"]),
        "per_app": score_table(frame, by=["app_id"]),
    }
