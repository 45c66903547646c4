"""Spec-only and calibrated tiers side by side (issue 11 §3), from an experiment's tables.

The runner writes, per model, its ``tier`` (``"spec"`` or ``"calibrated"``: whether it
reads board characterizations) and its ``family`` (its name without the tier suffix, so
``hybrid_xgboost`` and ``hybrid_xgboost_characterized`` are one family). These functions
set the two tiers of each family side by side: one row per family (:func:`tier_table`)
and one row per board (:func:`per_board_tiers`). Tables written before the runner
recorded tiers (no ``tier`` column) give None.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["TIERS", "per_board_tiers", "tier_table"]

#: the tiers, in the order they are shown
TIERS = ("spec", "calibrated")


def tier_table(summary: pd.DataFrame) -> pd.DataFrame | None:
    """One row per model family: ``n``, ``mape_<tier>`` and ``within_band_<tier>`` for each tier.

    A family without a model of some tier has NaN there. None unless ``summary`` holds models
    of both tiers (``perfml report`` printed the table, its calibrated columns empty, for an
    experiment of spec-only models); None too without a ``tier`` column.
    """
    if not _both_tiers(summary):
        return None
    rows = summary[summary["tier"].isin(TIERS)]
    family = _families(rows)
    wide = rows.assign(family=family).pivot_table(index="family", columns="tier", values=["mape", "within_band"],
                                                  aggfunc="first", sort=False)
    out = pd.DataFrame(index=wide.index)
    for metric in ("mape", "within_band"):
        for tier in TIERS:
            out[f"{metric}_{tier}"] = wide[(metric, tier)] if (metric, tier) in wide.columns else float("nan")
    order = list(dict.fromkeys(family))
    return out.reindex(order).reset_index()


def per_board_tiers(per_board: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame | None:
    """MAPE per board, one column ``<family>/<tier>`` per model (None unless ``summary`` has both tiers)."""
    if not _both_tiers(summary) or per_board.empty:
        return None
    rows = summary[summary["tier"].isin(TIERS)]
    label = dict(zip(rows["model"], _families(rows) + "/" + rows["tier"].astype(str)))
    part = per_board[per_board["model"].isin(label)].assign(column=lambda f: f["model"].map(label))
    wide = part.pivot_table(index="board", columns="column", values="mape", aggfunc="first")
    return wide[[c for c in dict.fromkeys(label.values()) if c in wide.columns]].reset_index()


def _both_tiers(summary: pd.DataFrame) -> bool:
    """Whether ``summary`` has a model of each tier of :data:`TIERS`."""
    return "tier" in summary.columns and set(TIERS) <= set(summary["tier"].astype(str))


def _families(rows: pd.DataFrame) -> pd.Series:
    """Each row's family, the model's name where it has none, or where two models of one family
    share a tier (``x_characterized`` and ``x_calibrated``): the table holds one cell per family
    and tier, and the second model's figures were dropped without a word."""
    models = rows["model"].astype(str)
    family = rows["family"].where(rows["family"].notna(), models).astype(str) if "family" in rows.columns else models
    shared = pd.Series(list(zip(family, rows["tier"])), index=rows.index).duplicated(keep=False)
    return family.where(~shared, models)
