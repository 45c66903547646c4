"""Prediction intervals: split conformal on log-ratio residuals, calibrated across boards.

Why this construction
---------------------
A runtime prediction is wrong by a *factor*, not by a number of milliseconds (a 10 %
error on a 1 µs kernel and on a 1 s kernel are the same kind of error), so the
nonconformity score of a row is the absolute log ratio

.. math:: s_i = |\\log(\\hat T_i / T_i)|,

and an interval of half-width ``q`` in log space is ``[\\hat T e^{-q}, \\hat T e^{q}]``.

The question a user asks is about a board the model was *not* trained on, so the scores
must come from predictions for boards the predictor had not seen: ``perfml train``
computes leave-one-board-out out-of-fold predictions of the training data (each board
predicted by the same configuration fitted on the other boards, with the shrinkage of the
full fit) and keeps the scores. The half-width at level ``1 - alpha`` is the split-conformal
quantile (Vovk, Gammerman & Shafer, *Algorithmic Learning in a Random World*, 2005;
Lei, G'Sell, Rinaldo, Tibshirani & Wasserman, "Distribution-free predictive inference for
regression", JASA 113 (2018), eq. 4 / Algorithm 2):

.. math:: q_{1-\\alpha} = s_{(k)},\\quad k = \\lceil (n + 1)(1 - \\alpha) \\rceil,

the ``k``-th smallest of the ``n`` calibration scores (``q = +inf`` when ``k > n``).
Its coverage guarantee, ``P(s_{n+1} <= q) >= 1 - alpha``, holds when the calibration
scores and the new row's score are exchangeable. Here that is an *assumption*: rows of one
board are not independent, and a new board (a newer architecture especially) need not
behave like one of the training boards. The coverage actually achieved on held-out boards is
measured, not assumed (:func:`held_out_board_coverage`).

Quantiles are kept per kernel group: ``described`` (kernels with a description in
the ``[model]`` tables of the kernel sidecars) and ``undescribed`` (kernels known only from measurements, e.g. Rodinia),
whose errors differ several-fold, and, for the deep-learning operators, one group per op
class (:data:`perfml.operators.OP_CLASSES`: BMM, FC, EW, Softmax, LN, Conv); a group with
no calibration row uses ``all``. They are
stored in the model's manifest (hashed with it) at every level of :data:`LEVELS`.

Extrapolation rule: a row flagged ``extrapolated`` (input size outside the training range
of its kernel, or a kernel with no recorded range) gets **twice** the log half-width
(:data:`EXTRAPOLATION_WIDENING`): the calibration rows say nothing about such rows, and
doubling the log-width squares the ratio (a +-20 % band becomes about -36 %/+44 %). This
factor is a convention, not a calibrated figure. A row whose board lies beyond every
training board's figures is flagged too but keeps its interval
(:mod:`perfml.learned.board_range` says why).

Unmeasured launches: a row at a block shape no training board measured for its kernel
(:func:`perfml.learned.queries.unmeasured_launches`) is answered from the kernel's nearest
measured launch, and misses several times more than a measured one. The doubling covered
74.01 % of such held-out rows at the nominal 90 % (40.07 % without it;
``experiments/results/unseen_launch_coverage.txt``, the recording at 70b8960). Where the
training rows allow it, ``perfml train`` therefore calibrates these rows on their own: the
scores of out-of-fold predictions under the protocol that asks exactly that question
(:class:`~perfml.evaluation.protocols.LeaveOneBoardAndBlockSizeOut`: an unseen board *and* a
block size no training row has; :func:`launch_oof_predictions`) give the split-conformal
half-widths of the manifest's ``unmeasured_launch`` entry (:func:`calibrate_unmeasured_launch`),
pooled and per kernel, with the coverage they achieve on held-out boards beside them. Such a
row gets the larger of its kernel's (else the pooled) half-width and its group's; a model
without the entry (no kernel measured at two block sizes, or saved before it) keeps the
doubling there.

Boards of an architecture the model never saw: leave-one-board-out scores come from boards
whose architecture other training boards share, so they say nothing of a board of a new
architecture (an H100 for a model trained on 2012-2016 boards), whose kernels can behave
differently as a whole. The calibrated 90 % interval of ``models/default`` covered 21.4 % of
an H100's application kernels at the spec-only tier and 30.4 % at the calibrated one
(``experiments/results/kernel_duration_check.txt``, kernel-duration timing, the recording at
2f50b75). Where the training boards span two architectures or more, ``perfml train``
therefore also calibrates such rows on their own, under the protocol that asks that
question (:class:`~perfml.evaluation.protocols.LeaveOneArchitectureOut`: each architecture
predicted from the others; :func:`architecture_oof_predictions`): the split-conformal
half-widths of the manifest's ``unseen_architecture`` entry, per group as above
(:func:`calibrate_unseen_architecture`), with the coverage they achieve on each held-out
architecture beside them. A row whose board's architecture is none of the training
boards' gets the larger of that half-width and its group's (a model without the entry
keeps its group's), unless it was carried from the user's reference measured on a board of
its own architecture: that is a transfer within the architecture, which the
leave-one-board-out scores describe (:func:`perfml.learned.board_range.unseen_architecture_flags`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perfml.errors import ModelFormatError

#: Nominal levels stored per model: 0.50, 0.51, ..., 0.99.
LEVELS = tuple(round(0.50 + 0.01 * i, 2) for i in range(50))
#: Log half-width multiplier for rows flagged ``extrapolated``.
EXTRAPOLATION_WIDENING = 2.0
GROUPS = ("described", "undescribed", "all")
#: every group name a calibration may hold: the two kernel groups, the operator classes, ``all``
ALL_GROUPS = ("described", "undescribed", "BMM", "FC", "EW", "Softmax", "LN", "Conv", "all")
METHOD = "split-conformal |log(pred/measured)|, leave-one-board-out out-of-fold"


def kernel_group(app_ids) -> np.ndarray:
    """``"described"`` or ``"undescribed"`` per app id."""
    from perfml.apps import list_apps

    described = set(list_apps())
    return np.array(["described" if str(a) in described else "undescribed" for a in app_ids], dtype=object)


def conformal_quantile(scores, level: float) -> float:
    """The split-conformal quantile ``s_(ceil((n+1) level))`` of ``scores`` (inf when beyond n).

    Lei et al., JASA 2018, Algorithm 2 (split conformal), with ``level = 1 - alpha``.
    """
    s = np.sort(np.asarray(scores, dtype=float))
    n = len(s)
    k = math.ceil((n + 1) * level - 1e-9)
    if n == 0 or k > n:
        return math.inf
    return float(s[k - 1])


def board_oof_predictions(model, X: pd.DataFrame, y, *, progress=None) -> np.ndarray:
    """Leave-one-board-out out-of-fold predictions of ``model``'s configuration on (X, y).

    Each board is predicted by an unfitted clone fitted on the other boards only, so every
    choice the fit makes from data is made without the held-out board, as it is for a board
    never seen. That includes a :class:`~perfml.learned.regressors.RuntimeRegressor`'s
    ``shrinkage="auto"`` (its inner board-grouped cross-validation runs again in each fold).
    Reusing the full fit's ``shrinkage_`` instead was cheaper but let the held-out board's
    rows choose how much of the learned residual to trust, so neither the scores nor the
    intervals calibrated on them were those of an unseen board: ``perfml train`` reported
    10.84 % for the described apps (nested: 11.41 %; the folds choose 0.0-0.3, median 0.1,
    the full fit 0.3) and 19.41 % for the undescribed kernels (nested: 18.55 %;
    ``experiments/results/train_default.txt`` has both recordings).
    """
    from sklearn.base import clone

    y = np.asarray(y, dtype=float)
    boards = X["board"].astype(str).to_numpy()
    oof = np.full(len(X), np.nan)
    for board in sorted(set(boards)):
        test = boards == board
        est = clone(model)
        est.fit(X[~test].reset_index(drop=True), y[~test])
        oof[test] = est.predict(X[test].reset_index(drop=True))
        if progress is not None:
            progress(board)
    return oof


def launch_oof_predictions(model, X: pd.DataFrame, y, *, progress=None) -> np.ndarray:
    """Out-of-fold predictions of ``model``'s configuration at launches its fold never saw (NaN elsewhere).

    The folds are :class:`~perfml.evaluation.protocols.LeaveOneBoardAndBlockSizeOut`'s: fold
    (board b, block size s) fits an unfitted clone on the other boards' rows of any other
    block size and predicts b's rows at s whose kernel has a training run of another
    block size. A row no fold tests (its kernel was run at one block size only, or it has
    no launch) stays NaN. ``progress(i)`` is called after fold ``i``.
    """
    from sklearn.base import clone

    from perfml.evaluation.protocols import LeaveOneBoardAndBlockSizeOut

    y = np.asarray(y, dtype=float)
    oof = np.full(len(X), np.nan)
    for i, (train, test) in enumerate(LeaveOneBoardAndBlockSizeOut().split(X)):
        est = clone(model)
        est.fit(X.iloc[train].reset_index(drop=True), y[train])
        oof[test] = est.predict(X.iloc[test].reset_index(drop=True))
        if progress is not None:
            progress(i)
    return oof


def architecture_oof_predictions(model, X: pd.DataFrame, y, *, registry=None, progress=None) -> np.ndarray:
    """Out-of-fold predictions of ``model``'s configuration, each architecture predicted from the others.

    The folds are :class:`~perfml.evaluation.protocols.LeaveOneArchitectureOut`'s (the
    boards' architectures from the registry): fold ``a`` fits an unfitted clone on the rows
    of every board of another architecture and predicts the rows of ``a``'s boards.
    ``progress(architecture)`` is called after each fold. Needs boards of two architectures
    or more (the protocol's error otherwise).
    """
    from sklearn.base import clone

    from perfml.evaluation.protocols import LeaveOneArchitectureOut

    y = np.asarray(y, dtype=float)
    protocol = LeaveOneArchitectureOut(registry=registry)
    names = protocol.groups_of(X)
    oof = np.full(len(X), np.nan)
    for train, test in protocol.split(X):
        est = clone(model)
        est.fit(X.iloc[train].reset_index(drop=True), y[train])
        oof[test] = est.predict(X.iloc[test].reset_index(drop=True))
        if progress is not None:
            progress(str(names[test[0]]))
    return oof


#: the protocol whose out-of-fold scores calibrate the rows of a board of an unseen architecture
UNSEEN_ARCHITECTURE_PROTOCOL = "leave-one-architecture-out"


def calibrate_unseen_architecture(pred, measured, architectures, groups, boards, level: float = 0.90) -> dict | None:
    """The manifest's ``unseen_architecture`` entry from :func:`architecture_oof_predictions` (None without any row).

    Split-conformal half-widths of ``|log(pred/measured)|`` at every level of :data:`LEVELS`
    per group (``groups``: the interval groups of :func:`calibrate`) and pooled (``all``),
    as the main calibration has them. Beside them, the evidence: the rows' MAPE and share
    within [0.8, 1.2], and at ``level`` the share of each architecture's rows inside the
    interval calibrated on the *other* architectures' rows (the group's own half-width
    where they give one, else the pooled one), overall and per architecture, with the mean
    relative width. Rows with a NaN prediction are left out.
    """
    pred = np.asarray(pred, dtype=float)
    measured = np.asarray(measured, dtype=float)
    ok = np.isfinite(pred)
    if not ok.any():
        return None
    arch = np.asarray(architectures, dtype=object)[ok].astype(str)
    grp = np.asarray(groups, dtype=object)[ok].astype(str)
    scores = log_scores(pred[ok], measured[ok])
    ape = np.abs(pred[ok] / measured[ok] - 1.0)
    table = {"all": {"n": int(ok.sum()), "log_halfwidth": _half_widths(scores)}}
    for g in sorted(set(grp)):
        table[g] = {"n": int((grp == g).sum()), "log_halfwidth": _half_widths(scores[grp == g])}
    # each architecture held out in turn, as held_out_board_coverage holds out boards
    held = held_out_board_coverage(pred[ok], measured[ok], arch, level, kernels=grp)
    return {"protocol": UNSEEN_ARCHITECTURE_PROTOCOL, "n": int(ok.sum()), "architectures": sorted(set(arch)),
            "boards": sorted(set(np.asarray(boards, dtype=object)[ok].astype(str))), "groups": table,
            "mape": float(100 * ape.mean()), "in_band": float(100 * np.mean(ape <= 0.2)),
            "held_out_architecture": {"level": level, "coverage": held["coverage"],
                                      "mean_relative_width": held["mean_relative_width"],
                                      "per_architecture": held["per_board"]}}


def log_scores(pred, measured) -> np.ndarray:
    """``|log(pred / measured)|`` per row."""
    return np.abs(np.log(np.asarray(pred, dtype=float) / np.asarray(measured, dtype=float)))


def _half_widths(scores) -> list:
    """The conformal quantile of ``scores`` at every level of :data:`LEVELS` (None where it is unbounded)."""
    return [x if math.isfinite(x) else None for x in (conformal_quantile(scores, lv) for lv in LEVELS)]


def calibrate(scores, groups, boards) -> dict:
    """The manifest entry: method, levels and per-group conformal quantiles of ``scores``.

    ``groups`` names each row's group (one of :data:`ALL_GROUPS` other than ``all``);
    the ``all`` group pools every row.
    """
    scores = np.asarray(scores, dtype=float)
    groups = np.asarray(groups, dtype=object)
    unknown = sorted(set(map(str, groups)) - set(ALL_GROUPS[:-1]))
    if unknown:
        raise ValueError(f"calibration group {unknown[0]!r} is not one of {ALL_GROUPS[:-1]}")
    ok = np.isfinite(scores)
    table = {}
    for g in ALL_GROUPS:
        mask = ok & ((groups == g) if g != "all" else True)
        if not mask.any():
            continue
        table[g] = {"n": int(mask.sum()), "boards": sorted(set(np.asarray(boards, dtype=object)[mask].astype(str))),
                    "log_halfwidth": _half_widths(scores[mask])}
    return {"method": METHOD, "levels": list(LEVELS), "extrapolation_widening": EXTRAPOLATION_WIDENING, "groups": table}


#: the protocol whose out-of-fold scores calibrate the rows at an unmeasured launch
UNMEASURED_LAUNCH_PROTOCOL = "leave-one-board-and-block-size-out"


def calibrate_unmeasured_launch(pred, measured, boards, kernels=None, level: float = 0.90) -> dict | None:
    """The manifest's ``unmeasured_launch`` entry from :func:`launch_oof_predictions` (None without any row).

    Split-conformal half-widths of the scores ``|log(pred/measured)|`` at every level of
    :data:`LEVELS`, as :func:`calibrate`: pooled over every row, and per kernel (``kernels``,
    e.g. the app ids) under ``"kernels"``. A launch costs kernels very differently (on the
    nine apps' held-out boards one pooled 90 % interval covered vectorAdd's rows 100 % and
    matrix_sum_normal's 77.4 %, per kernel 88.7 % and 86.9 %;
    ``experiments/results/unseen_launch_coverage.txt``): a row of a kernel with its own
    half-width takes it, any other the pooled one (group-conditional conformal prediction,
    the "Mondrian" conformal predictors of Vovk, Gammerman & Shafer 2005).

    Beside them, the evidence a user can check: the rows' MAPE and share within [0.8, 1.2]
    of the measurement, and at ``level`` the share of each board's rows inside the interval
    calibrated on the *other* boards' rows (kernel's own where it has one there, else
    pooled), overall and per kernel, with its mean relative width. ``perfml predict`` gives
    such a row the larger of this half-width and its group's, so its coverage is at least
    this one. Rows with a NaN prediction (no fold tested them) are left out.
    """
    pred = np.asarray(pred, dtype=float)
    measured = np.asarray(measured, dtype=float)
    boards = np.asarray(boards, dtype=object).astype(str)
    ok = np.isfinite(pred)
    if not ok.any():
        return None
    scores = log_scores(pred[ok], measured[ok])
    ape = np.abs(pred[ok] / measured[ok] - 1.0)
    names = None if kernels is None else np.asarray(kernels, dtype=object)[ok].astype(str)
    entry = {"protocol": UNMEASURED_LAUNCH_PROTOCOL, "n": int(ok.sum()), "boards": sorted(set(boards[ok])),
             "log_halfwidth": _half_widths(scores),
             "mape": float(100 * ape.mean()), "in_band": float(100 * np.mean(ape <= 0.2))}
    if names is not None:
        entry["kernels"] = {k: {"n": int((names == k).sum()), "log_halfwidth": _half_widths(scores[names == k])}
                            for k in sorted(set(names))}
    held = held_out_board_coverage(pred[ok], measured[ok], boards[ok], level, kernels=names)
    entry["held_out_board"] = {"level": level, "coverage": held["coverage"],
                               "mean_relative_width": held["mean_relative_width"],
                               "per_kernel": held.get("per_kernel", {})}
    return entry


def check_level(level) -> float:
    """``level`` as one of :data:`LEVELS` (a typed error otherwise)."""
    from perfml.errors import IntervalLevelError

    try:
        lv = float(level)
    except (TypeError, ValueError):
        lv = math.nan
    # 1e-6, not 1e-9: a float32 0.9 (numpy, torch) is 0.899999976, which read as no level at all
    match = [x for x in LEVELS if math.isfinite(lv) and not isinstance(level, bool) and abs(x - lv) < 1e-6]
    if not match:
        raise IntervalLevelError(f"--level {level!r}: expected a nominal level in [0.50, 0.99] in steps of 0.01 (e.g. 0.90); "
                                 "give such a level")
    return match[0]


def check_calibration(entry, where) -> dict:
    """Schema check of the manifest's ``intervals`` entry (ModelFormatError naming the key)."""
    def bad(what):
        return ModelFormatError(f"{where}: intervals {what}; retrain it with `perfml train --out DIR`")

    if not isinstance(entry, dict) or entry.get("levels") != list(LEVELS) or not isinstance(entry.get("groups"), dict):
        raise bad("must record the levels 0.50..0.99 and a 'groups' table")
    w = entry.get("extrapolation_widening")
    if not (isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 1):
        raise bad(f"extrapolation_widening must be a finite number >= 1, found {w!r}")
    if "all" not in entry["groups"]:
        raise bad("lack the 'all' group")
    for g, t in entry["groups"].items():
        if g not in ALL_GROUPS or not _half_widths_ok(t):
            raise bad(f"group {g!r} must hold {len(LEVELS)} non-negative, non-decreasing log half-widths")
    launch = entry.get("unmeasured_launch")
    if launch is not None:
        kernels = launch.get("kernels", {}) if isinstance(launch, dict) else None
        if not _half_widths_ok(launch) or not isinstance(kernels, dict) or not all(
                _half_widths_ok(t) for t in kernels.values()):
            raise bad(f"unmeasured_launch (and each of its kernels) must hold {len(LEVELS)} non-negative, "
                      "non-decreasing log half-widths")
    unseen = entry.get("unseen_architecture")
    if unseen is not None:
        table = unseen.get("groups") if isinstance(unseen, dict) else None
        if not isinstance(table, dict) or "all" not in table or not all(
                g in ALL_GROUPS and _half_widths_ok(t) for g, t in table.items()):
            raise bad(f"unseen_architecture must hold an 'all' group and, per group, {len(LEVELS)} non-negative, "
                      "non-decreasing log half-widths")
    return entry


def _half_widths_ok(table) -> bool:
    """Is ``table['log_halfwidth']`` one non-negative finite (or None) value per level, non-decreasing?"""
    hw = table.get("log_halfwidth") if isinstance(table, dict) else None
    return isinstance(hw, list) and len(hw) == len(LEVELS) and all(
        x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0) for x in hw
    ) and not any(a is not None and b is not None and b < a for a, b in zip(hw, hw[1:]))


def interval_bounds(pred, app_ids, extrapolated, calibration: dict, level: float, *, groups=None,
                    unmeasured_launch=None, unseen_architecture=None) -> tuple[np.ndarray, np.ndarray]:
    """``lower_ms``, ``upper_ms`` per row (``pred * exp(-+q)``, q doubled for extrapolated rows).

    The row's group is its kernel group (:func:`kernel_group` of ``app_ids``) unless
    ``groups`` gives it (e.g. the op class of operator rows). ``unmeasured_launch`` marks
    the rows at a block shape no training board measured for their kernel: with the
    calibration's ``unmeasured_launch`` entry their q is the larger of its half-width (the
    kernel's own, else the pooled one) and the group's; without it (or where it holds too
    few rows for the level) they are widened as ``extrapolated`` rows are. A row that is
    both takes the larger q, widened. ``unseen_architecture`` marks the rows whose board is of
    an architecture none of the training boards has: with the calibration's
    ``unseen_architecture`` entry their q is at least its half-width (the group's own, else
    the pooled one); without it, or where it holds too few rows for the level, unchanged.
    """
    from perfml.errors import IntervalLevelError

    i = LEVELS.index(level)
    groups = kernel_group(app_ids) if groups is None else np.asarray(groups, dtype=object)
    table = calibration["groups"]
    pooled = table["all"]["log_halfwidth"][i]
    half = np.empty(len(pred))
    for j, g in enumerate(groups):
        q = (table.get(g) or table["all"])["log_halfwidth"][i]
        if q is None:  # the group held too few rows for this level: the pooled rows' half-width
            q = pooled
        if q is None:
            raise IntervalLevelError(
                f"--level {level:.2f}: the model's interval calibration holds {table['all']['n']} held-out rows, "
                f"too few for a {level:.0%} split-conformal interval (it needs at least {math.ceil(level / (1 - level))}); "
                "give a lower --level, or retrain on more rows")
        half[j] = q
    if unseen_architecture is not None:
        _raise_to_architecture_half_width(half, np.asarray(unseen_architecture, dtype=bool), groups,
                                          calibration.get("unseen_architecture"), i)
    widen = np.asarray(extrapolated, dtype=bool).copy()
    if unmeasured_launch is not None:
        widen |= _raise_to_launch_half_width(half, np.asarray(unmeasured_launch, dtype=bool), app_ids,
                                             calibration.get("unmeasured_launch"), i)
    half = np.where(widen, half * float(calibration["extrapolation_widening"]), half)
    pred = np.asarray(pred, dtype=float)
    with np.errstate(over="ignore"):
        return pred * np.exp(-half), pred * np.exp(half)


def _raise_to_entry_half_width(half: np.ndarray, rows: np.ndarray, keys, own: dict, pooled, i: int) -> np.ndarray:
    """Raise ``half`` in place, on ``rows``, to a calibration entry's half-width at level index ``i``: the row's
    key's own (``own``: key -> its ``log_halfwidth``) where it has one at that level, else ``pooled``'s.

    Returns the rows left unchanged: those whose own and pooled half-widths are None at that level.
    """
    left = np.zeros(len(half), dtype=bool)
    if not rows.any():
        return left
    at = np.flatnonzero(rows)
    names = pd.Series(np.asarray(keys, dtype=object)[at]).astype(str)
    q = pd.to_numeric(names.map({k: hw[i] for k, hw in own.items()}), errors="coerce").to_numpy(dtype=float)
    q = np.where(np.isnan(q), np.nan if pooled[i] is None else float(pooled[i]), q)  # None or absent: NaN
    found = ~np.isnan(q)
    half[at[found]] = np.maximum(half[at[found]], q[found])
    left[at[~found]] = True
    return left


def _raise_to_architecture_half_width(half: np.ndarray, rows: np.ndarray, groups, entry, i: int) -> None:
    """Raise ``half`` in place, on ``rows``, to the ``unseen_architecture`` entry's half-width at level index ``i``
    (the row's group's where the entry has it at that level, else the pooled one; none: unchanged)."""
    if entry is not None:
        own = {g: t["log_halfwidth"] for g, t in entry["groups"].items() if g != "all"}
        _raise_to_entry_half_width(half, rows, groups, own, entry["groups"]["all"]["log_halfwidth"], i)


def _raise_to_launch_half_width(half: np.ndarray, launch: np.ndarray, app_ids, entry, i: int) -> np.ndarray:
    """Raise ``half`` in place, on the ``launch`` rows, to the entry's half-width at level index ``i``.

    The row's kernel's own half-width where the entry has one at that level, else the
    pooled one. Returns the launch rows left to the extrapolation rule: every one without
    an entry, or whose pooled half-width is None at that level.
    """
    if entry is None or not launch.any():
        return launch
    own = {k: t["log_halfwidth"] for k, t in (entry.get("kernels") or {}).items()}
    keys = app_ids if app_ids is not None else [""] * len(half)
    return _raise_to_entry_half_width(half, launch, keys, own, entry["log_halfwidth"], i)


def held_out_board_coverage(pred, measured, boards, level: float = 0.90, *, kernels=None) -> dict:
    """Coverage and mean relative width of the level interval, each board held out in turn.

    For board ``b`` the half-width is the conformal quantile of the scores of the *other*
    boards' out-of-fold predictions; the rows of ``b`` (predicted by a model not fitted on
    ``b``) count as covered when ``|log(pred/measured)| <= q``. Returns the overall
    coverage, the per-board coverage, and the mean of ``(upper - lower) / pred`` (None when
    some board's interval is unbounded: the other boards hold too few rows for the level).

    With ``kernels`` (a name per row), a row's half-width is that of the other boards' rows
    of its kernel where they give one at the level, else the pooled one (the rule of
    :func:`calibrate_unmeasured_launch`), and the coverage per kernel is returned too.
    """
    scores = log_scores(pred, measured)
    boards = np.asarray(boards, dtype=object).astype(str)
    names = None if kernels is None else np.asarray(kernels, dtype=object).astype(str)
    half = np.full(len(scores), math.inf)
    for b in sorted(set(boards)):
        test = boards == b
        half[test] = conformal_quantile(scores[~test], level)
        for k in (sorted(set(names[test])) if names is not None else ()):
            own = conformal_quantile(scores[~test & (names == k)], level)
            if math.isfinite(own):
                half[test & (names == k)] = own
    covered = scores <= half
    mean_width = float(np.mean(np.exp(half) - np.exp(-half)))
    out = {"coverage": float(covered.mean()), "mean_relative_width": mean_width if math.isfinite(mean_width) else None,
           "per_board": {b: float(covered[boards == b].mean()) for b in sorted(set(boards))}, "rows": int(len(scores))}
    if names is not None:
        out["per_kernel"] = {k: float(covered[names == k].mean()) for k in sorted(set(names))}
    return out
