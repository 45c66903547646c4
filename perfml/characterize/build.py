"""Build a :class:`~perfml.characterize.Characterization` from sweep results.

Each characterization function comes from one dynamic microbenchmark family
(:data:`DEFAULT_SOURCES`): its swept parameter is turned into the criterion's intensity
by an expression, its performance is read from the result rows, and the samples go
through :func:`~perfml.characterize.functions.sample_quantize_interpolate`. The per-class
summaries come from the static families (:func:`~perfml.characterize.summary.summarize_results`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfml.characterize.characterization import Characterization
from perfml.characterize.functions import CharacterizationFunction, sample_quantize_interpolate
from perfml.characterize.summary import summarize_results
from perfml.errors import PerfmlError

__all__ = ["CALIBRATION_SPEC", "DEFAULT_SOURCES", "FunctionSource", "characterize_frame", "characterize_results",
           "with_calibrated_tier"]


@dataclass(frozen=True)
class FunctionSource:
    """Which microbenchmark feeds a characterization function, and how.

    Parameters
    ----------
    function : str
        ``divergence``, ``shmem``, ``dram_thr`` or ``arith_thr``.
    family : str
        Dynamic kernel family whose sweep gives the samples.
    intensity : str
        Sidecar-style expression (``perfml._expr``, sidecar dialect) of the criterion intensity
        over the point's parameters.
    normalize : bool
        Divide the intensity by its largest value over the family's rows (so the largest
        swept point is intensity 1).
    where : str
        Optional expression over the parameters selecting rows (e.g. a variant).
    performance : str
        ``"inv_time"`` (1 / median time: the same work at every point) or a throughput
        column of the result rows (``bytes_per_s``, ``instructions_per_s``, ``flops_per_s``).
    """

    function: str
    family: str
    intensity: str
    normalize: bool = False
    where: str = ""
    performance: str = "inv_time"


#: where each function of seed 000 Section III-B comes from (families of seed 001 Table 2,
#: ``kernels/<family>.toml``)
DEFAULT_SOURCES: tuple[FunctionSource, ...] = (
    # lanes split into groups of GROUP_SIZE taking their own path, same per-thread work:
    # 32 / GROUP_SIZE paths per warp, #ExeInstructions / #PotExeInstructions = GROUP_SIZE / 32
    FunctionSource("divergence", "divergence", "GROUP_SIZE / 32"),
    # WAYS-way bank conflicts, same accesses: transactions per access = 1 / WAYS
    FunctionSource("shmem", "bank_conflicts", "1 / WAYS"),
    # DRAM stream with WARPS warps per SM on SM_PCT % of the SMs: data in flight
    FunctionSource("dram_thr", "occupancy", "WARPS * SM_PCT", normalize=True,
                   where="OP == 1", performance="bytes_per_s"),
    # FFMA chains with WARPS warps per SM on SM_PCT % of the SMs: arithmetic parallelism
    FunctionSource("arith_thr", "occupancy", "WARPS * SM_PCT", normalize=True,
                   where="OP == 0", performance="instructions_per_s"),
)


def _samples(frame, source: FunctionSource):
    """(intensity, performance) arrays of one source's rows, or ``None`` without rows."""
    import numpy as np

    from perfml._expr import evaluate_sidecar as evaluate

    rows = frame[frame["family"] == source.family]
    params = [json.loads(p) for p in rows["params_json"]]
    if source.where:
        keep = [bool(evaluate(source.where, p)) for p in params]
        rows = rows[keep]
        params = [p for p, k in zip(params, keep) if k]
    if len(rows) == 0:
        return None
    if source.performance == "inv_time":
        _check_same_work(rows, params, source)
    x = np.array([float(evaluate(source.intensity, p)) for p in params])
    if source.normalize:
        x = x / x.max()
    if source.performance == "inv_time":
        y = 1.0 / rows["time_median_s"].to_numpy(dtype=float)
    else:
        y = rows[source.performance].to_numpy(dtype=float)
    return x, y


def _check_same_work(rows, params, source: FunctionSource) -> None:
    """Refuse rows of a ``1 / time`` source whose parameters outside the intensity differ.

    Performance ``1 / time`` compares rows that do the same work: a spec of the user's on a
    shipped family with another REPS or WORK joined the shipped rows and moved the function
    (F_divergence(0.5) 0.520 -> 0.694) without a word.
    """
    from perfml._expr import names_in_sidecar
    from perfml.errors import ResultSchemaError

    swept = names_in_sidecar(source.intensity) | (names_in_sidecar(source.where) if source.where else set())
    for name in sorted({k for p in params for k in p} - swept):
        values = sorted({repr(p.get(name)) for p in params})
        if len(values) > 1:
            specs = sorted(set(map(str, rows["spec"]))) if "spec" in rows else []
            raise ResultSchemaError(
                f"the rows of kernel family {source.family!r} (F_{source.function}) were measured with {name} = "
                f"{', '.join(values)} (specs {', '.join(specs)}); the function compares 1/time at the same work: "
                "characterize a result set of one setting (measure the other spec into another --out)")


def characterize_frame(
    frame,
    *,
    board: Any = None,
    board_name: str = "",
    sources: Sequence[FunctionSource] = DEFAULT_SOURCES,
    source: str = "",
    device: Mapping[str, Any] | None = None,
    synthetic: bool = False,
) -> Characterization:
    """Characterize from result rows (a DataFrame of :mod:`perfml.measure.store` rows).

    Noisy rows take part in the functions (the per-level median absorbs them) but are
    excluded from the summaries unless a class has nothing else. The summaries become
    ``measured`` values (:func:`~perfml.characterize.measured.measured_values`), checked
    against the ``spec`` tier of ``board`` when one is given.
    """
    functions: dict[str, CharacterizationFunction] = {}
    for src in sources:
        got = _samples(frame, src)
        if got is None:
            continue
        try:
            functions[src.function] = sample_quantize_interpolate(
                src.function,
                *got,
                source=f"family {src.family}, intensity {src.intensity}, performance {src.performance}",
            )
        except ValueError as exc:
            raise PerfmlError(
                f"cannot build F_{src.function} from family {src.family!r}: {exc}"
            ) from None
    if device is None and len(frame):
        first = frame.iloc[0]
        device = {
            k: (first[k].item() if hasattr(first[k], "item") else first[k])
            for k in ("device_name", "compute_capability", "sms", "driver_version")
            if k in frame.columns
        }
    name = board_name or (str((device or {}).get("device_name", "")) or "unknown")
    summary = summarize_results(frame, board=board)
    from perfml.characterize.measured import l2_resident_dram_chases, measured_values
    from perfml.characterize.spec import spec_values

    l2_bytes, l2_warnings = _l2_size(board, device or {})
    values = (spec_values(board) if board is not None else ()) + measured_values(
        summary, source or "sweep", l2_bytes=l2_bytes)
    return Characterization(
        warnings=tuple(l2_warnings) + tuple(l2_resident_dram_chases(summary, l2_bytes)),
        board=name,
        functions=functions,
        summary=summary,
        source=source,
        synthetic=synthetic,
        device=device or {},
        values=values,
    )


def _l2_size(board: Any, device: Mapping[str, Any]) -> tuple[float | None, list[str]]:
    """The L2 size (bytes) that decides whether a DRAM chase is L2-resident, and warnings.

    The device's own report (``l2_cache_bytes`` of the result set's device, the driver's
    cudaDevAttrL2CacheSize) when it was recorded, else the registry's. A registry figure
    that disagrees with the device is named: the registry entry is what needs a fix.
    """
    registry = getattr(board, "l2_bytes", None)
    reported = device.get("l2_cache_bytes")
    if not reported:
        return registry, []
    warnings = []
    if registry and abs(float(registry) / float(reported) - 1.0) > 0.01:
        warnings.append(f"the device reports an L2 of {int(reported)} bytes, the registry entry of "
                        f"{getattr(board, 'name', 'the board')} {int(registry)}: the device's figure is used "
                        "here; correct the registry's l2_bytes (with its source)")
    return float(reported), warnings


def _lookup_board(name: str | None, device_name: str) -> tuple[Any, str]:
    """The registry board (or ``None``) and its name: the registry's own name where it has the board
    (``' h100-sxm '`` and the device name "NVIDIA H100 80GB HBM3" were written as given)."""
    try:
        from perfml import boards
    except ImportError:
        return None, name or device_name
    for candidate in ([name] if name else [device_name]):
        try:
            found = boards.get_board(candidate.strip())
            return found, found.name
        except PerfmlError:
            if name:
                raise
    return None, device_name


def characterize_results(
    path: str | os.PathLike[str],
    *,
    board: str | None = None,
    sources: Sequence[FunctionSource] = DEFAULT_SOURCES,
    allow_incomplete: bool = False,
) -> Characterization:
    """Characterize the result set at ``path``.

    Parameters
    ----------
    path : path-like
        A result set directory written by ``perfml sweep run``.
    board : str, optional
        Registry name of the measured board, for the fraction of the specification
        achieved; by default the device name is tried in the registry.
    allow_incomplete : bool, default False
        Characterize a set whose sweeps left planned points unmeasured
        (:meth:`~perfml.measure.store.ResultSet.missing_points`); refused otherwise.
    """
    from perfml.measure.store import ResultSet

    rs = ResultSet.open(path)
    if board is not None:
        from perfml.boards import check_board_is_device

        check_board_is_device(board, rs.device.name, f"the result set {path}")
    missing = rs.missing_points()
    if missing and not allow_incomplete:
        # each function is normalized by the largest intensity measured: a sweep its time budget
        # stopped gave other curves (F_DRAMThr(0.125) 0.147 instead of 0.683) without a word
        from perfml.errors import ResultSchemaError

        listed = ", ".join(f"{spec} ({n} point(s))" for spec, n in sorted(missing.items()))
        raise ResultSchemaError(
            f"the result set {path} lacks planned points of {listed}: their sweep stopped (time budget, "
            "interrupt) or the points failed; finish it with `perfml sweep run SPEC --out "
            f"{path} --resume`, or pass --allow-incomplete to characterize what was measured")
    frame = rs.read()  # checked: one device, each point once, measured values only
    reg_board, name = _lookup_board(board, rs.device.name)
    try:
        measured = characterize_frame(
            frame,
            board=reg_board,
            board_name=name,
            sources=sources,
            source=str(Path(path)),
            device=rs.device.to_dict(),
            synthetic=rs.synthetic,
        )
        return with_calibrated_tier(measured, rs, board=name if reg_board is not None else None, frame=frame)
    except PerfmlError as exc:  # a value's own message names neither the set nor that it was edited
        if str(path) in str(exc):
            raise
        raise type(exc)(f"characterizing the result set {path}: {exc} (the set's rows give this: was it edited? "
                        "re-measure it with `perfml sweep run`)") from None


#: the spec whose runs calibrate a board (``perfml/data/sweeps/calibration.toml``: vectorAdd over sizes)
CALIBRATION_SPEC = "calibration"


def with_calibrated_tier(measured: Characterization, rs, *, board: str | None, frame=None) -> Characterization:
    """``measured`` plus the calibrated tier of the set's ``calibration`` spec runs.

    The runs of the :data:`CALIBRATION_SPEC` spec (vectorAdd from 12 kB to 1.6 GB, work
    known) calibrate the board as ``perfml characterize --from-runtimes`` does
    (:func:`~perfml.characterize.calibrate.calibrate_from_rows`): the streaming curve, the
    launch floor and the achieved DRAM bandwidth are added as ``calibrated`` values. The
    microbenchmarks' ``measured`` values stay first in
    :data:`~perfml.characterize.values.TIER_PREFERENCE`, so the calibrated tier adds what
    they do not give (the curve, the launch floor); without it, a measured characterization
    sent users to time the calibration kernel they had already timed. The ``applications``
    spec's kernels stay out: they are what a characterization is checked against
    (``experiments/measured_board_check.py``), not an input to it.

    Left as ``measured`` (with a warning saying why) when the set is synthetic (no
    measurement to calibrate from), its device is not in the registry (``board`` None), or
    its calibration runs give no calibrated value or an unphysical one (above 1.5x the
    specification: :class:`~perfml.errors.PhysicalLimitError`); unchanged when it holds no
    calibration run. ``frame`` is the set's rows when the caller has read them already.
    """
    from dataclasses import replace

    from perfml.characterize.calibrate import calibrate_from_rows
    from perfml.errors import CalibrationDataError, PhysicalLimitError
    from perfml.measure.runtime_rows import application_runtime_rows

    frame = rs.read() if frame is None else frame
    if len(frame) == 0 or not (frame["spec"].astype(str) == CALIBRATION_SPEC).any():
        return measured
    why = None
    if rs.synthetic:
        why = "the set is synthetic (no measurement to calibrate from)"
    elif board is None:
        why = f"its device {rs.device.name!r} is not in the registry (pass --board)"
    if why is not None:
        return measured.with_values(warnings=(f"calibrated tier not built from the calibration runs: {why}",))
    command = f"perfml characterize {rs.path}"
    try:
        rows = application_runtime_rows(rs, board=board)
        calibrated = calibrate_from_rows(rows[rows["spec"] == CALIBRATION_SPEC], board, file=rs.path, command=command)
    except (CalibrationDataError, PhysicalLimitError) as exc:
        # the microbenchmarks' tier stands on its own: an unusable or unphysical calibration is
        # left out, by name, and `--from-runtimes RESULTS` raises the same error with its detail
        return measured.with_values(warnings=(f"calibrated tier not built from the calibration runs: {exc}",))
    added = tuple(v for v in calibrated.values if v.tier == "calibrated")
    # "<quantity> not calibrated: ..." of a quantity the microbenchmarks measured is no news
    # (the calibration spec times vectorAdd only, so it never gives an FP32 rate)
    have = {v.quantity for v in measured.values if v.tier == "measured"}
    warnings = tuple(f"calibrated tier: {w}" for w in calibrated.warnings
                     if not any(w.startswith(f"{q} not calibrated") for q in have))
    provenance = {**measured.provenance, "calibrated_tier": dict(calibrated.provenance)}
    return replace(measured.with_values(*added, warnings=warnings), provenance=provenance,
                   stream_curve=calibrated.stream_curve)
