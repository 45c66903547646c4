"""The deep-learning operator corpus (NeuSight, ``dlops_runtimes.csv``) in experiments.

``[data] corpus = "dlops"`` makes :func:`perfml.experiments.runner.run_experiment` run on
operator rows: this module loads them (:func:`operator_data`), builds the models of the
experiment file (:func:`build_operator_estimator`: a learned entry is an
:class:`~perfml.learned.operators.OperatorRegressor`, or with ``shrinkage = 0.0`` the
transfer baseline :class:`~perfml.learned.operators.OperatorTransferBaseline`; the
closed-form entry is :class:`~perfml.closed_form.operator_roofline.OperatorRooflineModel`)
and scores them per op class next to NeuSight's published errors
(:func:`operator_tables`).

How the comparison with NeuSight's published errors is made (README of the data home,
"dlops_published_errors"): NeuSight's per-operator table (``summary/perop.csv``) is, per
op class, the mean over DL-model runs of ``|sum predicted - sum measured| / sum measured``
over all graph nodes of that class in one run; *out of distribution* = a GPU held out of
training (H100, L4, A100-80GB) or a held-out DL model. The per-node rows behind it are not
in the data home, so it cannot be recomputed here. The closest statistic on the rows we
have, reported in ``neusight_comparison``: on the held-out boards' rows of NeuSight's own
``test`` split (its LLM-shaped operator calls, each configuration once), per op class,
``sum_ape`` = the APE of the summed predicted vs summed measured latency of a held-out
board, averaged over the held-out boards (a board plays the role of a run), beside the
per-row MAPE of the same rows. Conv (no NeuSight predictor) is reported apart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml.evaluation.metrics import score_table

__all__ = ["CAP_COLUMNS", "GROUP_COLUMN", "build_operator_estimator", "neusight_comparison", "operator_data", "operator_tables"]

#: per-class scores are grouped by this column of the operator rows
GROUP_COLUMN = "op_class"
#: groups within which ``max_train_rows_per_group`` caps the training rows
CAP_COLUMNS = ("board", "op", "split")
#: NeuSight's op classes, in the order of its table (conv is reported apart)
NEUSIGHT_CLASSES = ("BMM", "FC", "EW", "Softmax", "LN")


def operator_data(spec, data_home) -> pd.DataFrame:
    """The operator rows of an experiment, with ``measured_ms`` and ``op_class``."""
    from perfml.datasets import load_dlops_runtimes
    from perfml.operators import operator_work

    data = spec.data
    rt = load_dlops_runtimes(data_home, boards=data.get("boards"), ops=data.get("ops"), split=data.get("split"))
    rt = rt.assign(measured_ms=rt["time_ms"].to_numpy(dtype=float))
    rt["op_class"] = operator_work(rt)["op_class"].astype(str).to_numpy()
    return rt.reset_index(drop=True)


def _bool_or_auto(features, key: str, default: bool):
    """An experiment feature that is a bool or "auto" (the spec has checked which)."""
    value = features.get(key, default)
    return value if value == "auto" else bool(value)


def build_operator_estimator(model, random_state: int = 0, registry=None, characterizations=None, n_jobs: int = 1):
    """The regressor on operator rows an experiment's model entry describes."""
    if model.kind == "closed_form":
        from perfml.closed_form.operator_roofline import OperatorRooflineModel

        if model.characterized:
            return OperatorRooflineModel(peaks="characterized", characterizations=characterizations, registry=registry)
        return OperatorRooflineModel(registry=registry)
    from perfml.learned.operators import OperatorRegressor, OperatorTransferBaseline

    if model.shrinkage == 0:
        return OperatorTransferBaseline(registry=registry)
    features = dict(model.features)
    return OperatorRegressor(
        registry=registry,
        characterization=bool(features.get("characterization", False)),
        characterizations=characterizations if features.get("characterization") else None,
        transfer=_bool_or_auto(features, "transfer", True),
        tiles=bool(features.get("tiles", True)),
        wave_base=bool(features.get("wave_base", False)),
        launch_floor=bool(features.get("launch_floor", True)),
        board_identity=_bool_or_auto(features, "board_identity", False),
        random_state=random_state,
        n_jobs=n_jobs,
        learner_params=dict(model.params) or None,
    )


def _sum_ape(part: pd.DataFrame) -> float:
    return float(100.0 * abs(part["predicted_ms"].sum() - part["measured_ms"].sum()) / part["measured_ms"].sum())


def neusight_comparison(scored: dict[str, pd.DataFrame], published: pd.DataFrame | None) -> pd.DataFrame:
    """Per model and op class: MAPE and sum-APE on the held-out boards' ``test``-split rows (module docstring)."""
    rows = []
    for model, frame in scored.items():
        test = frame[frame["split"].astype(str) == "test"] if "split" in frame.columns else frame.iloc[:0]
        for cls in (*NEUSIGHT_CLASSES, "Conv"):
            part = test[test[GROUP_COLUMN] == cls]
            if part.empty:
                continue
            per_board = [_sum_ape(p) for _, p in part.groupby("board")]
            rows.append({
                "model": model, "op_class": cls, "rows": "held-out boards, NeuSight test split", "n": len(part),
                "n_boards": len(per_board), "mape": float(np.mean(100 * np.abs(part["predicted_ms"] / part["measured_ms"] - 1))),
                "sum_ape": float(np.mean(per_board)),
            })
    if published is not None and not published.empty:
        for rec in published.to_dict("records"):
            rows.append({
                "model": f"published:{rec['method']} ({rec['distribution']})", "op_class": rec["op_class"],
                "rows": "NeuSight perop.csv: mean over DL-model runs of the APE of per-class summed latency",
                "n": int(rec["n"]), "n_boards": np.nan, "mape": np.nan, "sum_ape": float(rec["mean_abs_pct_error"]),
            })
    return pd.DataFrame(rows)


def operator_tables(scored: dict[str, pd.DataFrame], published: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """The per-class tables of a dlops experiment: ``per_class``, ``per_class_split``, ``neusight_comparison``."""
    per_class = pd.concat([score_table(f, by=[GROUP_COLUMN]).assign(model=m) for m, f in scored.items()], ignore_index=True)
    per_split = pd.concat(
        [score_table(f, by=["split", GROUP_COLUMN]).assign(model=m) for m, f in scored.items() if "split" in f.columns],
        ignore_index=True,
    )
    return {
        "per_class": per_class,
        "per_class_split": per_split,
        "neusight_comparison": neusight_comparison(scored, published),
    }


def published_neusight(spec, data_home) -> pd.DataFrame | None:
    """NeuSight's published per-op-class errors (``published_table`` level) for the methods of ``[published]``."""
    if not spec.published:
        return None
    from perfml.datasets import load_dlops_published_errors

    table = load_dlops_published_errors(data_home, level="published_table")
    methods = spec.published.get("methods", ["neusight"])
    return table[table["method"].isin(methods)].reset_index(drop=True)
