"""Scoring of runtime predictions."""

from perfml.evaluation.metrics import BAND, ape, mape, median_ape, score_table, spearman, summarize, within_band

__all__ = ["BAND", "ape", "mape", "median_ape", "score_table", "spearman", "summarize", "within_band"]
