"""Validation of estimator parameters, in ``fit`` (scikit-learn's convention), with a typed error."""

from __future__ import annotations

import math

import numpy as np

from perfml.errors import EstimatorParameterError


def check_choice(who: str, name: str, value, choices) -> None:
    """``value`` must be one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise EstimatorParameterError(f"{who}: {name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def check_optional_positive(who: str, name: str, value) -> None:
    """``value`` must be None or a finite number > 0."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise EstimatorParameterError(f"{who}: {name} must be a finite number > 0 or None, got {value!r}")


def check_bool(who: str, name: str, value) -> None:
    """``value`` must be a bool."""
    if not isinstance(value, bool):
        raise EstimatorParameterError(f"{who}: {name} must be True or False, got {value!r}")


def check_bool_or_auto(who: str, name: str, value) -> None:
    """``value`` must be a bool or the string ``"auto"`` (decided at fit time by inner cross-validation)."""
    if not (isinstance(value, bool) or value == "auto"):
        raise EstimatorParameterError(f"{who}: {name} must be True, False or 'auto', got {value!r}")


def check_fraction(who: str, name: str, value) -> float:
    """``value`` must be a finite number in [0, 1]; returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise EstimatorParameterError(f"{who}: {name} must be a number in [0, 1], got {value!r}")
    return float(value)


def check_str_tuple(who: str, name: str, value) -> None:
    """``value`` must be a sequence (not a bare string) of strings."""
    if isinstance(value, str) or not hasattr(value, "__iter__") or not all(isinstance(v, str) for v in value):
        raise EstimatorParameterError(f"{who}: {name} must be a tuple of column names (strings), got {value!r}")


def check_positive_int(who: str, name: str, value, minimum: int = 1) -> None:
    """``value`` must be an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise EstimatorParameterError(f"{who}: {name} must be an integer >= {minimum}, got {value!r}")
