"""Accuracy metrics of runtime predictions, overall and per group.

The band criterion is seed 003's: a prediction is good when ``T_k / T_m`` lies in
[0.8, 1.2] (Section VI, Figures 6-8).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

BAND = (0.8, 1.2)


def _arrays(predicted, measured):
    p = np.asarray(predicted, dtype=float).ravel()
    m = np.asarray(measured, dtype=float).ravel()
    if p.shape != m.shape:
        raise ValueError(f"predicted has {p.size} values, measured {m.size}")
    return p, m


def ape(predicted, measured) -> np.ndarray:
    """Absolute percentage errors ``100 |p - m| / m``."""
    p, m = _arrays(predicted, measured)
    return 100.0 * np.abs(p - m) / m


def mape(predicted, measured) -> float:
    """Mean absolute percentage error, in percent."""
    return float(np.mean(ape(predicted, measured)))


def median_ape(predicted, measured) -> float:
    """Median absolute percentage error, in percent."""
    return float(np.median(ape(predicted, measured)))


def within_band(predicted, measured, band: tuple[float, float] = BAND) -> float:
    """Share of predictions with ``band[0] <= p / m <= band[1]`` (seed 003's criterion)."""
    p, m = _arrays(predicted, measured)
    ratio = p / m
    return float(np.mean((ratio >= band[0]) & (ratio <= band[1])))


def spearman(predicted, measured) -> float:
    """Spearman rank correlation (NaN with fewer than 3 points or constant input)."""
    p, m = _arrays(predicted, measured)
    if p.size < 3 or np.all(p == p[0]) or np.all(m == m[0]):
        return float("nan")
    return float(spearmanr(p, m).statistic)


def summarize(predicted, measured) -> dict[str, float]:
    """All metrics of one set of predictions."""
    p, m = _arrays(predicted, measured)
    return {
        "n": int(p.size),
        "mape": mape(p, m),
        "median_ape": median_ape(p, m),
        "within_band": within_band(p, m),
        "spearman": spearman(p, m),
    }


def score_table(frame: pd.DataFrame, by: Sequence[str] = (), predicted="predicted_ms", measured="measured_ms") -> pd.DataFrame:
    """Metrics per group of ``frame`` (one row per group), or one row overall when ``by`` is empty."""
    if not by:
        return pd.DataFrame([summarize(frame[predicted], frame[measured])])
    rows = []
    for key, part in frame.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), **summarize(part[predicted], part[measured])})
    return pd.DataFrame(rows)
