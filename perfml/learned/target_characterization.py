"""Hand a target board's characterization to a fitted predictor (issue 11 §3, calibrated tier).

``perfml predict --characterization FILE`` (a file of ``perfml characterize``) or
``--calibration FILE`` (runtime rows of any kernel on the target board with their times,
turned into the calibrated tier by :func:`perfml.characterize.calibrate_from_rows`):
nothing else of the target board enters the prediction.

A calibrated-tier sub-model (:data:`perfml.learned.tiers.CALIBRATED_TIER`, e.g. a
bundle's ``dlops-calibrated``) was trained on boards characterized from one kind of run
(the operators: element-wise ``add`` calls; the nine apps: ``vectorAdd`` runs); its manifest's ``calibration`` entry names
them, and the target is calibrated from the same runs of the file only, so that the model
sees a characterization of the kind it learned from. Other sub-models calibrate from every
row of the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from perfml.errors import CalibrationDataError, InvalidValueError
from perfml.learned.tiers import calibration_runs, is_calibration_run

__all__ = ["TargetFirst", "calibrate_target", "use_target", "use_target_characterization"]


def _one_board(boards: Iterable[str]) -> str:
    from perfml.boards import resolve_board_name
    from perfml.errors import UnknownBoardError

    def canonical(name: str) -> str:  # one board however it is spelled ("GeForce GTX 980", "gtx980")
        try:
            return resolve_board_name(name)
        except UnknownBoardError:
            return name

    boards = sorted({canonical(str(b)) for b in boards})
    if len(boards) != 1:
        raise InvalidValueError(
            f"--calibration calibrates one target board, but the queries name {len(boards)} boards "
            f"({', '.join(boards[:5])}); split the queries per board"
        )
    return boards[0]


def calibrate_target(path, boards: Iterable[str], *, kernels: tuple[str, tuple[str, ...]] | None = None, frame=None):
    """The calibrated characterization of the one board of ``boards``, from the rows of ``path``.

    ``kernels``: ``(column, names)``: calibrate from the runs of those kernels only (a
    calibrated-tier sub-model's ``calibration`` entry). ``frame``: the file's rows, already
    read.

    Raises
    ------
    InvalidValueError
        The queries name more than one board (a calibration file is of one target board).
    CalibrationDataError
        The file has no usable rows of that board, or none of ``kernels``
        (:mod:`perfml.characterize.calibrate`).
    """
    from perfml.characterize import calibrate_from_rows
    from perfml.characterize.calibrate import check_kernel_names, read_runtime_rows

    board = _one_board(boards)
    rows = read_runtime_rows(path) if frame is None else frame
    check_kernel_names(rows, path)  # before the rows are narrowed to the calibration kernels' names
    command = f"perfml predict --calibration {path}"
    if kernels is not None:
        column, names = kernels
        if not is_calibration_run(rows, column, names).any():
            what = ", ".join(names)
            dims = "board, op, B, H and time_ms" if column == "op" else "board, app_id, input_size and time_ms"
            raise CalibrationDataError(
                f"--calibration {path}: no run of {what} (column {column}); the calibrated sub-model was trained on "
                f"boards characterized from their {what} runs, so the target's must be too: include runs of "
                f"{what} measured on {board} (columns {dims}) at several sizes"
            )
        rows = calibration_runs(rows, column, names)
        command += f" ({', '.join(names)} runs)"
    return calibrate_from_rows(rows, board, file=path, command=command)


class TargetFirst:
    """Board -> characterization: the given one for the target board, the model's own for the others.

    A model's ``characterizations`` keep answering for the training boards (a mapping, a
    callable, or None: the committed ones, :func:`perfml.characterize.board_characterization`)
    while the target board gets the file the user gave.
    """

    def __init__(self, target, others=None):
        self.target = target
        self.others = others

    def __call__(self, board: str):
        from perfml.boards import same_board
        from perfml.characterize import board_characterization
        from perfml.closed_form._characterized import characterization_for

        if same_board(board, self.target.board):
            return self.target
        return characterization_for(board, board_characterization if self.others is None else self.others)


def _achieved_quantities(characterization) -> set[tuple[str, str]]:
    """``(quantity, tier)`` of every achieved (not datasheet) value of ``characterization``."""
    from perfml.closed_form._characterized import ACHIEVED_TIERS

    return {(v.quantity, v.tier) for v in characterization.values if v.tier in ACHIEVED_TIERS}


def as_trained(characterization, trained: Mapping) -> tuple[object, list[tuple[str, str]], bool]:
    """``characterization`` reduced to what the model's training characterizations held.

    A value of a quantity and tier that no training board had (the FP32 rate a naive matMul
    reached, a microbenchmark's DRAM bandwidth where training saw only that of ``add``
    calls), or a streaming curve where no training board had one, would reach the features
    on a scale the model never learned; the training boards' features read the datasheet
    there. Seen on the H100: a characterization that carried the naive matMuls' calibrated
    8.1 TFLOP/s put the GEMMs at about 5x their times (commit 273601d's recording in
    ``experiments/results/measured_board_check_H100-SXM.txt``). The datasheet values
    (``spec``) all stay. Returns the reduced characterization, the ``(quantity, tier)``
    dropped, and whether the curve was dropped.
    """
    from dataclasses import replace

    from perfml.closed_form._characterized import ACHIEVED_TIERS

    known = set.union(*(_achieved_quantities(ch) for ch in trained.values()))
    kept = tuple(v for v in characterization.values if v.tier not in ACHIEVED_TIERS or (v.quantity, v.tier) in known)
    dropped = sorted(_achieved_quantities(characterization) - known)
    curve_dropped = characterization.stream_curve is not None and not any(
        getattr(ch, "stream_curve", None) is not None for ch in trained.values())
    if not dropped and not curve_dropped:
        return characterization, [], False
    return (replace(characterization, values=kept, stream_curve=None if curve_dropped else characterization.stream_curve),
            dropped, curve_dropped)


def _launch_timing(characterization) -> str | None:
    """How the rows of a characterization's calibrated launch floor were timed (its provenance)."""
    floor = characterization.best("launch_overhead", "ms", tiers=("calibrated",))
    return None if floor is None else floor.provenance.get("timing")


def _timing_warnings(characterization, trained: Mapping, where) -> list[str]:
    """One warning when the target's launch floor was timed otherwise than every training board's.

    A floor from nvprof kernel durations holds no launch latency; one between CUDA events
    holds some, a framework call's more (:func:`perfml.characterize.calibrate.launch_timing`):
    e.g. a perfml sweep's vectorAdd floor, between events, given to the nine apps' calibrated
    sub-model, whose training boards' floors are nvprof durations.
    """
    from perfml.characterize.calibrate import timing_kind

    target = _launch_timing(characterization)
    known = {t for t in map(_launch_timing, trained.values()) if t is not None}
    kinds = {timing_kind(t) for t in known}  # nvprof's and CUPTI's kernel durations are one timing
    if target is None or not known or timing_kind(target) in kinds:
        return []
    fix = ""
    if kinds == {"kernel duration"}:  # a sweep can be timed as the training boards were
        fix = ("; time the calibration as they were: `perfml sweep run calibration --timing kernel-duration "
               "--out DIR` (needs cupti-python)")
    return [f"{where}: its launch floor was timed as '{target}', the training boards' as "
            f"'{'; '.join(sorted(known))}': the smallest calls' predictions carry the difference{fix}"]


def _curve_warnings(characterization, where) -> list[str]:
    """Where the target's streaming curve cannot carry the board's memory system.

    Between two knots a curve interpolates a power law, so a gap of more than
    :data:`~perfml.characterize.limits.L2_FACTOR` in bytes around the board's L2 size can
    skip the whole step from L2-resident to DRAM-bound (the working sets
    [L2 / L2_FACTOR, L2 x L2_FACTOR]). Measured: the T4 calibrated from 10 random ``add``
    calls (no call between 1.9 and 21.9 MB, around its 4 MiB L2) missed the element-wise
    calls by 20.25 %, from 30 by 4.62 %, from all 1,807 by 4.57 %
    (``experiments/results/calibrated_cli_calibration_rows_Tesla-T4.txt``). A curve that
    ends below L2_FACTOR x L2 has no DRAM-bound call: a larger call is charged its largest
    one's time plus the further bytes at the board's DRAM bandwidth, the datasheet's where no
    call calibrated it (:meth:`~perfml.characterize.stream_curve.StreamCurve.time_s`).
    """
    from perfml.characterize.limits import L2_FACTOR

    curve = characterization.stream_curve
    if curve is None:
        return [f"{where} has no streaming curve: time the calibration kernel at a few dozen sizes, from a few kB "
                "(launch-bound) to several times the board's L2"]
    l2 = characterization.registry_l2_bytes
    lo, hi = (l2 / L2_FACTOR, l2 * L2_FACTOR) if l2 else (0.0, np.inf)
    knots = np.asarray(curve.bytes, dtype=float)
    out = []
    for a, b in zip(knots[:-1], knots[1:]):
        if b / a > L2_FACTOR and b > lo and a < hi:
            around = f" around the board's {l2 / 2**20:.3g} MiB L2" if l2 else ""
            out.append(f"{where}: no call between {a:.3g} and {b:.3g} bytes (a factor of {b / a:.3g}){around}, so "
                       f"the time in between is interpolated across the step from L2 to DRAM: time {curve.kernel} calls "
                       f"at sizes in between (at most a factor of {L2_FACTOR:g} apart)")
            break
    if l2 and knots[-1] < hi:
        out.append(f"{where}: its largest call moves {knots[-1]:.3g} bytes, under {L2_FACTOR:g} x the L2 "
                   f"({hi:.3g} bytes), so a larger call is charged its time plus the further bytes at the board's "
                   f"DRAM bandwidth, the datasheet's where no call calibrated it: time {curve.kernel} calls of several "
                   "times the L2 to measure it")
    return out + _curve_rate_warnings(characterization, where)


def _curve_rate_warnings(characterization, where) -> list[str]:
    """:func:`perfml.characterize.limits.stream_curve_warnings` of the characterization's
    curve, against the registry's DRAM bandwidth of its board (the file's ``spec`` value for
    a board the registry does not know: a file's spec tier can be edited, and was, x10) and
    its own achieved one, each message prefixed by ``where``."""
    from perfml.characterize.limits import stream_curve_warnings

    spec = _registry_dram_spec(characterization) or characterization.best("dram_bandwidth", "B/s", tiers=("spec",))
    achieved = characterization.best("dram_bandwidth", "B/s", tiers=("measured", "calibrated", "published"),
                                     bounds=("estimate",))
    return [f"{where}: {message}" for message in stream_curve_warnings(
        characterization.stream_curve, characterization.registry_l2_bytes, spec, achieved)]


def _registry_dram_spec(characterization):
    """The registry's ``spec`` DRAM bandwidth [B/s] of the characterization's board, or None."""
    from perfml.characterize.characterization import _registry_spec_values

    return next((v for v in _registry_spec_values(characterization.board)
                 if v.quantity == "dram_bandwidth" and v.dimension == "bandwidth"), None)


def file_consistency_warnings(characterization, where) -> list[str]:
    """Warnings a characterization file earns from its values, whatever its own ``warnings`` say.

    A file's ``warnings`` are what its maker found; deleted, they were silent, and a file
    edited by hand (or relabelled to another board) had no check beyond the physical limits.
    Two are recomputed from the values, against the registry's entry of the file's board:

    * its ``spec`` tier disagrees with the registry's (another board's file relabelled: a
      T4 file named the V100 kept the T4's 320 GB/s; or the registry changed since);
    * a DRAM bandwidth calibrated or measured with a streaming kernel under
      :data:`~perfml.characterize.limits.WARN_STREAM_SHARE` x the specification (the
      calibration's own rule, :func:`perfml.characterize.calibrate.calibrate_from_rows`).
    """
    from perfml.characterize.calibrate import stream_share_warning
    from perfml.characterize.characterization import _registry_spec_values
    from perfml.characterize.limits import WARN_STREAM_SHARE

    registry = {(v.quantity, v.unit): v.value for v in _registry_spec_values(characterization.board)}
    out = []
    if registry:
        differ = [f"{v.quantity} {v.value:.4g} {v.unit} there, {registry[(v.quantity, v.unit)]:.4g} in the registry"
                  for v in characterization.values
                  if v.tier == "spec" and (v.quantity, v.unit) in registry
                  and not np.isclose(v.value, registry[(v.quantity, v.unit)], rtol=1e-6, atol=0.0)]
        if differ:
            out.append(f"{where}: its spec values are not the registry's for {characterization.board} "
                       f"({'; '.join(differ[:3])}{'; ...' if len(differ) > 3 else ''}): the file was made for another "
                       "board, or edited, or the registry changed since; characterize the board again")
    spec = _registry_dram_spec(characterization)
    for v in characterization.values:
        kernel = v.provenance.get("kernel") if isinstance(v.provenance, Mapping) else None
        if (spec is None or v.quantity != "dram_bandwidth" or v.tier not in ("calibrated", "measured")
                or v.bound != "estimate" or not kernel):
            continue
        share = v.to_unit("B/s") / spec.to_unit("B/s")
        if share < WARN_STREAM_SHARE:  # the calibration's own words, so that a file that kept them says it once
            out.append(stream_share_warning(str(kernel), share))
    return out


def use_target_characterization(model, characterization, boards: Iterable[str], where: object,
                                part: str | None = None) -> list[str]:
    """Make ``model`` (a fitted :class:`~perfml.learned.regressors.RuntimeRegressor` or
    :class:`~perfml.learned.operators.OperatorRegressor`) use ``characterization`` for its board.

    The model's characterizations of other boards stay (:class:`TargetFirst`). Returns the
    warnings to show: the characterization's own (less those every training board's had
    too); one when the model was trained without the characterization features (then the
    file changes no prediction); those of its streaming curve (:func:`_curve_warnings`);
    one naming the achieved values (quantity and tier) and the curve the model's training
    characterizations lacked, which are not used (:func:`as_trained`).

    Raises
    ------
    CharacterizationBoardError
        A query's board is not the characterization's board.
    """
    from perfml.characterize import check_board

    for board in sorted(set(boards)):
        check_board(characterization, board, where)
    def own(characterizations):  # what the model was trained with, under an earlier target's file
        return characterizations.others if isinstance(characterizations, TargetFirst) else characterizations

    trained = own(model.characterizations)
    dropped, curve_dropped = [], False
    if isinstance(trained, Mapping) and trained:
        characterization, dropped, curve_dropped = as_trained(characterization, trained)
    # an operator model fitted with transfer="auto" may hold a second model for some op classes
    for part in (model, getattr(model, "no_transfer_model_", None)):
        if part is None:
            continue
        given = TargetFirst(characterization, own(part.characterizations))
        part.set_params(characterizations=given)
        if hasattr(part, "features_"):  # RuntimeRegressor: its fitted feature builder holds them too
            part.features_.characterizations = given
    warnings = [w for v in characterization.values for w in v.warnings] + list(characterization.warnings)
    if isinstance(trained, Mapping) and trained:
        # what every training board's calibration lacked too (e.g. no FP32 rate from add calls) is no news
        expected = set.intersection(*(set(ch.warnings) for ch in trained.values()))
        warnings = [w for w in warnings if w not in expected]
    if not (getattr(model, "characterization", False) or getattr(model, "closed_form_peaks", "spec") == "characterized"):
        whose = f"the sub-model answering {part}" if part else "the model"
        warnings.append(
            f"{whose} was trained without the characterization features, so {where} changes none of its "
            "predictions (they are spec-only; column tier); train one with characterization features to use it"
        )
        return warnings
    warnings += [w for w in file_consistency_warnings(characterization, where) if w not in warnings]
    warnings += _curve_warnings(characterization, where)
    if isinstance(trained, Mapping) and trained:
        warnings += _timing_warnings(characterization, trained, where)
    if characterization.synthetic:
        warnings.append(f"{where} is marked synthetic (generated, not measured): predictions made with it are not "
                        "about a real board")
    from perfml.learned.persistence import read_calibration_entry

    entry = read_calibration_entry(getattr(model, "metadata_", None) or {})
    curve = characterization.stream_curve
    if entry is not None and curve is not None and curve.kernel not in ("/".join(entry[1]), *entry[1]):
        warnings.append(
            f"{where}: its streaming curve was measured with {curve.kernel}, the training boards' with "
            f"{'/'.join(entry[1])}; two kernels move their bytes at different speeds, so the predictions may be off: "
            f"a curve of {'/'.join(entry[1])} matches the model's training")
    charged = getattr(model, "_training_launch_overhead_ms", None)  # an operator model's stand-in floor
    charged = charged() if callable(charged) else None
    if charged is not None and characterization.stream_curve is None and \
            characterization.value("launch_overhead", "ms") is None:
        warnings.append(
            f"{where} gives no launch overhead either, so operator calls are charged the training boards' median, "
            f"{charged:.4g} ms (the smallest calls of their hosts' framework), not this host's: a --calibration of "
            "add calls timed on this host gives its own"
        )
    if dropped or curve_dropped:
        named = [f"{q} ({tier})" for q, tier in dropped] + ["its streaming curve"] * curve_dropped
        warnings.append(
            f"{where} gives {', '.join(named)}, which no training board of the model had (they were characterized "
            "from their calibration runs only): not used, the model reads the datasheet there as it did in "
            "training; a --calibration file of the runs the model names matches its training"
        )
    return warnings


#: what the rows of each route are, in a message
_ROUTE_ROWS = {"described": "kernels with a description (the nine applications)",
               "undescribed": "kernels known only from measurements (Rodinia, your --reference kernels)",
               "dlops": "deep-learning operator rows"}


def use_target(bundle, queries, where, *, characterization=None, calibration=None) -> list[str]:
    """Give the target board's characterization to every sub-model of ``bundle`` that answers ``queries``.

    ``characterization``: a file of ``perfml characterize``; ``calibration``: runtime rows
    measured on the target board. The bundle's tier becomes ``"calibrated"``, so a corpus
    with a calibrated-tier sub-model is answered by it (:meth:`ModelBundle.model_for`), and
    its ``target_board`` the characterized board: it answers no other board afterwards.
    Each sub-model with a ``calibration`` entry calibrates the target from those runs of
    the file only; the others from every row. Returns the warnings to show, once each.

    Raises
    ------
    InvalidValueError
        Both files, or the queries name more than one board.
    CalibrationDataError, CharacterizationBoardError, ResultSchemaError
        The file cannot calibrate or characterize the queries' board.
    """
    from perfml.learned.bundle import _routes
    from perfml.learned.persistence import read_calibration_entry

    if characterization is not None and calibration is not None:
        raise InvalidValueError("give --characterization or --calibration, not both (a calibration builds a characterization)")
    boards = queries["board"].astype(str) if "board" in queries else []
    bundle.tier = "calibrated"
    routes = _routes(queries, where)
    used: dict = {}  # id -> (sub-model, the routes it answers here)
    for route in ("described", "undescribed", "dlops"):
        model = bundle.model_for(route) if np.any(routes == route) else None
        if model is not None:
            used.setdefault(id(model), (model, []))[1].append(route)
    if characterization is not None:
        from perfml.characterize import load_characterization

        named = sorted(set(map(str, boards)))
        ch = load_characterization(characterization, board=named[0] if len(named) == 1 else None)
        file_where = str(characterization)
    else:
        from perfml.characterize.calibrate import read_runtime_rows

        rows = read_runtime_rows(calibration)
        by_kernels: dict = {}
    warnings: list[str] = []
    for model, answered in used.values():
        if characterization is None:
            kernels = read_calibration_entry(getattr(model, "metadata_", None) or {})
            if kernels not in by_kernels:
                by_kernels[kernels] = calibrate_target(calibration, boards, kernels=kernels, frame=rows)
            ch = by_kernels[kernels]
            file_where = f"the calibration of {calibration}" + (f" ({', '.join(kernels[1])} runs)" if kernels else "")
        rows_of = " and ".join(f"the {_ROUTE_ROWS[r]} ({int(np.sum(routes == r))} row(s))" for r in answered)
        warnings += use_target_characterization(model, ch, boards, file_where, part=rows_of)
    if used:
        bundle.target_board = ch.board  # predict_any answers this board only from now on
        if calibration is not None:
            from perfml.characterize.calibrate import repeat_spread_warning

            spread = repeat_spread_warning(rows, ch.board, f"--calibration {calibration}")
            warnings += [spread] if spread else []
            others = other_board_rows_warning(rows, ch.board, f"--calibration {calibration}")
            warnings += [others] if others else []
            entries = [read_calibration_entry(getattr(model, "metadata_", None) or {}) for model, _ in used.values()]
            unread = unread_kernel_rows_warning(rows, ch.board, entries, f"--calibration {calibration}")
            warnings += [unread] if unread else []
    return list(dict.fromkeys(warnings))


def unread_kernel_rows_warning(rows, board: str, entries, where: str) -> str | None:
    """The warning for the target board's rows of kernels no sub-model calibrates from (None when none).

    ``entries``: per sub-model answering the queries, its calibration entry ``(column,
    kernels)`` (None: it calibrates from every row, so every row is read). A calibrated-tier
    sub-model reads the runs of its calibration kernels only (its training boards were
    characterized from those), so a file's bmm or matMul rows changed nothing, without a word.
    """
    from perfml.characterize.calibrate import of_board

    if not len(rows) or "board" not in rows.columns or any(entry is None for entry in entries):
        return None
    target = rows[of_board(rows["board"].astype(str), board)]
    read = np.zeros(len(target), dtype=bool)
    for column, kernels in entries:
        read |= is_calibration_run(target, column, kernels)
    if read.all():
        return None
    unread = target[~read]
    labels = pd.Series([""] * len(unread), index=unread.index, dtype=object)
    for column in ("app_id", "op"):  # a row names its kernel in one of them
        if column in unread.columns:
            named = unread[column].notna() & (unread[column].astype(str).str.strip() != "")
            labels[named] = unread.loc[named, column].astype(str)
    counts = labels.value_counts()
    shown = ", ".join(f"{kernel or '(unnamed)'} ({n})" for kernel, n in counts.head(5).items())
    runs = " and ".join(sorted({", ".join(kernels) for _, kernels in entries}))
    return (f"{where}: {len(unread)} of its rows of {board} are of kernels the calibration does not read "
            f"({shown}{', ...' if len(counts) > 5 else ''}) and change no prediction: the model's calibrated tier "
            f"is calibrated from {runs} runs only, as its training boards were")


def other_board_rows_warning(rows, board: str, where: str) -> str | None:
    """The warning for rows of ``rows`` measured on boards other than ``board`` (None when none).

    A calibration uses the target's rows only (:func:`~perfml.characterize.calibrate.calibrate_from_rows`),
    so rows of another board in a ``--calibration`` file (a mixed-up file, a misspelt board)
    are left out: said, with how many and which boards, rather than dropped silently.
    """
    from perfml.characterize.calibrate import of_board

    if "board" not in rows.columns or not len(rows):
        return None
    names = rows["board"].astype(str)
    other = names[~of_board(names, board)]
    if not len(other):
        return None
    shown = ", ".join(sorted(other.unique())[:5]) + (", ..." if other.nunique() > 5 else "")
    return (f"{where}: {len(other)} of its {len(rows)} rows are of other boards ({shown}) and were left out: a "
            f"calibration uses the rows of the target board ({board}) only; remove them, or check the board names")
