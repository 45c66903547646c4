"""Physical limits of characterized values (issue 11 §5).

An achieved value (tiers ``published``, ``measured``, ``calibrated``) is compared with
the specification of the same quantity in the same dimension: the ``spec`` values of the
characterization, and a paper's own "Spec." figure carried in a published value's
provenance (``paper_spec``, same unit as the value). Policy, documented here and in the
file's warnings:

* above :data:`MAX_OVER_SPEC` (1.5) x the specification: refused with
  :class:`~perfml.errors.PhysicalLimitError` (no caching or clock boost explains it; the
  work count, the unit or the board is wrong);
* above :data:`WARN_OVER_SPEC` (1.05) x the specification: kept, with an explicit warning
  in the value (e.g. an L2-resident working set, or a factory-overclocked card);
* below :data:`WARN_UNDER_SPEC` (0.01) x the specification: kept, with an explicit warning.
  Slower is always possible, so it is no error, but no committed characterization comes
  near it (the lowest is the GTX-Titan's FP32 rate from a hand-written matMul, 0.055 x;
  DRAM bandwidths are 0.60-0.90 x; tests/test_characterization_files.py): at 1 % the
  likely cause is times in seconds or microseconds where milliseconds were expected, or
  work counted for the wrong size;
* below :data:`MIN_UNDER_SPEC` (0.001) x the specification: refused. A thousandth is the
  signature of a unit slip (times in microseconds or seconds read as milliseconds give
  exactly 1/1000 of the true rate), and a characterization that slow would carry every
  prediction made with it a thousandfold (a ``--calibration`` file in microseconds
  predicted vectorAdd at 1166 ms instead of 1.17 ms, with only a warning);
* non-positive or non-finite values never get this far: :class:`CharacterizedValue`
  refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from perfml.characterize.values import CharacterizedValue
#: the longest and the shortest single kernel call accepted as a measurement (ms): 1e9 ms
#: (about 11.6 days: a longer value is a wrong column or unit, and the cap keeps every ratio
#: perfml forms from a measured time far from floating-point overflow) and 5e-4 ms (half a
#: microsecond: a launch alone takes microseconds, the shortest time of the data home is
#: 3.2 us, so a shorter value is a unit slip or a placeholder; for a kernel of known work
#: the roofline check is stricter still). One pair of limits for the data home's tables
#: and for every file a user gives.
from perfml.datasets import MAX_KERNEL_MS as MAX_MEASURED_MS
from perfml.datasets import MIN_KERNEL_MS as MIN_MEASURED_MS
from perfml.errors import PhysicalLimitError

__all__ = [
    "L2_FACTOR",
    "MAX_OVER_SPEC",
    "MIN_UNDER_SPEC",
    "WARN_OVER_SPEC",
    "WARN_UNDER_SPEC",
    "check_physical_limits",
    "BAD_MEASURED_TIME",
    "MAX_MEASURED_MS",
    "MIN_MEASURED_MS",
    "check_stream_curve",
    "stream_curve_warnings",
    "first_bad_measured_time",
    "first_unphysical_time",
    "unphysical_time_message",
    "valid_measured_time",
    "WARN_STREAM_SHARE",
]

#: an achieved value above this multiple of the specification is refused
MAX_OVER_SPEC = 1.5
#: an achieved value above this multiple of the specification carries a warning
WARN_OVER_SPEC = 1.05
#: an achieved value below this multiple of the specification carries a warning (a unit slip?)
WARN_UNDER_SPEC = 0.01
#: an achieved value below this multiple of the specification is refused (a unit slip: x 1/1000)
MIN_UNDER_SPEC = 0.001
#: a streaming kernel's DRAM rate below this share of the specification is told (times x10?): it
#: reaches 0.6-0.9x on every board of the data home (a calibrated dram_bandwidth, a streaming curve)
WARN_STREAM_SHARE = 0.2
#: working sets of at least this multiple of the board's L2 measure the DRAM, not the L2
L2_FACTOR = 4


def _references(value: CharacterizedValue, specs: list[CharacterizedValue]) -> list[tuple[float, str]]:
    """(specification in the value's unit, where it comes from) for one achieved value."""
    refs = [
        (spec.to_unit(value.unit), spec.source)
        for spec in specs
        if spec.quantity == value.quantity and spec.dimension == value.dimension
    ]
    paper_spec = value.provenance.get("paper_spec")
    if isinstance(paper_spec, (int, float)) and paper_spec > 0:
        refs.append((float(paper_spec), f"the paper's Spec. figure ({value.provenance.get('table', '')})"))
    return refs


def check_physical_limits(values: Iterable[CharacterizedValue]) -> tuple[CharacterizedValue, ...]:
    """Check every achieved value against the specifications among ``values``.

    Returns
    -------
    tuple of CharacterizedValue
        The values, those between 1.05x and 1.5x of a specification, or below 0.01x, with a
        warning added (once: a value that already carries the warning is not warned twice).

    Raises
    ------
    PhysicalLimitError
        An achieved value above 1.5 x its specification or below 0.001 x, a latency or launch overhead
        beyond :data:`MAX_LATENCY_CYCLES`, :data:`MAX_LATENCY_S` or :data:`MAX_OVERHEAD_S`, or a latency
        under :data:`MIN_LATENCY_CYCLES` or :data:`MIN_LATENCY_S`.
    """
    values = list(values)
    specs = [v for v in values if v.tier == "spec"]
    out = []
    for value in values:
        _check_ceiling(value)
        if value.tier == "spec":
            out.append(value)
            continue
        for spec, where in _references(value, specs):
            ratio = value.value / spec
            if ratio > MAX_OVER_SPEC:
                raise PhysicalLimitError(
                    f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is {ratio:.2f}x the "
                    f"specification {spec:.4g} {value.unit} from {where}; more than {MAX_OVER_SPEC}x is not "
                    "physical: check the work counts, the time unit and the board of the rows "
                    f"({value.source})"
                )
            if ratio < MIN_UNDER_SPEC:
                raise PhysicalLimitError(
                    f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is {ratio:.2g}x the "
                    f"specification {spec:.4g} {value.unit} from {where}; below {MIN_UNDER_SPEC:g}x no working board "
                    "runs: check the time unit of the rows (milliseconds, not microseconds or seconds), the work "
                    f"counts and the board ({value.source})"
                )
            note = None
            if ratio > WARN_OVER_SPEC:
                note = (
                    f"achieved {ratio:.2f}x the specification ({spec:.4g} {value.unit}, {where}): "
                    "cache-resident data or a higher clock than specified"
                )
            elif ratio < WARN_UNDER_SPEC:
                note = (
                    f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is {ratio:.2g}x the "
                    f"specification {spec:.4g} {value.unit} from {where}, far below any working board's: check the "
                    "time unit of the rows (milliseconds, not seconds or microseconds), the work counts and the board"
                )
            if note is not None and note not in value.warnings:
                value = value.with_warnings(note)
        out.append(value)
    return tuple(out)


#: latencies and the launch overhead have no specification to compare with; these ceilings
#: are far above any GPU's and only catch a wrong unit or a corrupt file: the slowest memory
#: level, DRAM, answers in under 1,000 cycles on every board perfml knows (H200: 657,
#: sweeps/results/H200), and a kernel launch takes microseconds, not seconds
MAX_LATENCY_CYCLES = 1e5
#: a memory latency in time: 1 ms (DRAM answers in about 0.5 us)
MAX_LATENCY_S = 1e-3
#: a launch overhead: 1 ms (a call doing almost no work takes 3-45 us in the data home, CUDA
#: events around a PyTorch call included; 5 us written as ms is 5 ms, and predicted every
#: operator call at 6.6 ms or more). Below it: :data:`MIN_MEASURED_MS`, as for a measured time.
MAX_OVERHEAD_S = 1e-3
#: the floor of a memory latency: no memory level answers in under one cycle (the fastest, shared
#: memory, takes about 20-30: sweeps/results/H200), nor in under 0.1 ns (a cycle at 10 GHz). A
#: latency of 0.01 cycles was taken as it was and fitted the BSP lambda of matMul_gpu 1,000x low
MIN_LATENCY_CYCLES = 1.0
#: :data:`MIN_LATENCY_CYCLES` for a latency given in time
MIN_LATENCY_S = 1e-10
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def _check_ceiling(value: CharacterizedValue) -> None:
    from perfml.characterize.values import QUANTITIES

    kind = QUANTITIES[value.quantity].kind
    if kind not in ("latency", "overhead"):
        return
    if kind == "latency":
        cycles = value.unit == "cycles"
        short = value.value < MIN_LATENCY_CYCLES if cycles else value.value * _SECONDS[value.unit] < MIN_LATENCY_S
        if short:
            floor = f"{MIN_LATENCY_CYCLES:g} cycle" if cycles else f"{MIN_LATENCY_S:g} s"
            raise PhysicalLimitError(
                f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is shorter than any memory level "
                f"answers (at least {floor}): check the unit and the source of the value ({value.source})")
    if value.unit == "cycles":
        over, limit = value.value > MAX_LATENCY_CYCLES, f"{MAX_LATENCY_CYCLES:.0e} cycles"
    else:
        ceiling = MAX_LATENCY_S if kind == "latency" else MAX_OVERHEAD_S
        seconds = value.value * _SECONDS[value.unit]
        over, limit = seconds > ceiling, f"{ceiling:g} s"
        if kind == "overhead" and seconds < MIN_MEASURED_MS * 1e-3:
            raise PhysicalLimitError(
                f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is shorter than any kernel call "
                f"({MIN_MEASURED_MS * 1e3:g} us at least): check the unit and the source of the value ({value.source})")
    if over:
        raise PhysicalLimitError(
            f"{value.quantity} ({value.tier}) = {value.value:.4g} {value.unit} is beyond any GPU's (at most {limit}): "
            f"check the unit and the source of the value ({value.source})")


def check_stream_curve(curve, values: Iterable[CharacterizedValue], l2_bytes: float | None) -> None:
    """A streaming curve's knots must be measured times, and its DRAM-sized knots achieved bandwidths.

    Every knot's time is held to the range of a measured time (:func:`valid_measured_time`:
    a knot of 1e300 s predicted a matMul at 4.9e62 ms). Knots of at least :data:`L2_FACTOR`
    x ``l2_bytes`` (every knot when the L2 size is unknown) are DRAM-bound: their bytes /
    time is an achieved DRAM bandwidth, held to the same limits as a ``dram_bandwidth``
    value, above (1.5 x the specification) and, where the L2 size is known, below (0.001 x:
    a curve written in ms instead of s carried every prediction a thousandfold). Smaller
    knots may legitimately run from the L2 faster than the DRAM peak, and launch-bound ones
    far slower than it.

    Raises
    ------
    PhysicalLimitError
        A knot time out of range, or a DRAM-sized knot above 1.5 x or below 0.001 x the
        ``spec`` DRAM bandwidth among ``values``.
    """
    # vectorized: a curve has a knot per distinct size of the calibration rows (the A100's 1,814
    # add calls, checked on every calibrated query); the message names the first bad knot, as
    # the loop did
    all_bytes = np.asarray(curve.bytes, dtype=float)
    all_seconds = np.asarray(curve.seconds, dtype=float)
    bad = np.flatnonzero(~valid_measured_time(all_seconds * 1e3))
    if bad.size:
        nbytes, seconds = all_bytes[bad[0]], all_seconds[bad[0]]
        raise PhysicalLimitError(
            f"stream curve ({curve.kernel}): {nbytes:.4g} bytes in {seconds:.4g} s; {BAD_MEASURED_TIME} "
            f"(the curve holds seconds: check its unit) ({curve.source})")
    specs = [v.to_unit("B/s") for v in values if v.tier == "spec" and v.quantity == "dram_bandwidth"
             and v.dimension == "bandwidth"]
    if not specs:
        return
    spec = min(specs)
    floor = L2_FACTOR * l2_bytes if l2_bytes else 0.0
    rate = all_bytes / all_seconds  # the times are valid: finite and positive
    dram = all_bytes >= floor
    under = dram & (rate < MIN_UNDER_SPEC * spec) if l2_bytes else np.zeros(len(rate), dtype=bool)
    over = dram & (rate > MAX_OVER_SPEC * spec)
    bad = np.flatnonzero(under | over)
    if not bad.size:
        return
    i = bad[0]
    nbytes, seconds = all_bytes[i], all_seconds[i]
    if under[i]:
        raise PhysicalLimitError(
            f"stream curve ({curve.kernel}): {nbytes:.4g} bytes in {seconds:.4g} s is {nbytes / seconds:.4g} B/s, "
            f"{nbytes / seconds / spec:.2g}x the DRAM specification {spec:.4g} B/s; below {MIN_UNDER_SPEC:g}x no "
            "working board streams: check the time unit (ms in the rows, s in the curve) and the byte counts "
            f"({curve.source})")
    raise PhysicalLimitError(
        f"stream curve ({curve.kernel}): {nbytes:.4g} bytes in {seconds:.4g} s is {nbytes / seconds:.4g} B/s, "
        f"{nbytes / seconds / spec:.2f}x the DRAM specification {spec:.4g} B/s; more than {MAX_OVER_SPEC}x "
        "is not physical for a working set this large: check the byte counts, the time unit (ms in the "
        f"rows, s in the curve) and the board ({curve.source})"
    )


#: the curve's DRAM-bound rate and the characterization's own achieved DRAM bandwidth
#: disagreeing by more than this factor (either way) get a warning: both come from the
#: board's largest calls
CURVE_BANDWIDTH_AGREEMENT = 2.0


def stream_curve_warnings(curve, l2_bytes: float | None, spec: CharacterizedValue | None,
                          achieved: CharacterizedValue | None) -> list[str]:
    """Warnings for a streaming curve within :func:`check_stream_curve`'s limits whose
    DRAM-bound knots stream implausibly slowly, or disagree with the achieved DRAM bandwidth.

    A curve carries every memory-bound prediction made with it (a T4 file whose curve was
    100x too slow predicted its bmm calls 100x slower, with no warning: only a rate under
    :data:`MIN_UNDER_SPEC` x the specification is refused). As for a calibrated DRAM
    bandwidth, a median DRAM-bound rate (knots of at least :data:`L2_FACTOR` x ``l2_bytes``)
    under :data:`WARN_STREAM_SHARE` x ``spec`` is kept with a warning (under the 0.01x of any
    achieved value before: a curve edited to 0.028x the A100's bandwidth, its times x30,
    passed without a word); so is one more than
    :data:`CURVE_BANDWIDTH_AGREEMENT` x from ``achieved`` (the characterization's own
    ``dram_bandwidth``: a calibration gives both from the same largest calls; no committed
    characterization gets either warning, ``tests/test_characterization_files.py``).
    ``spec`` and ``achieved`` are ``dram_bandwidth`` values, either may be None. The
    messages start with what they are about ("its streaming curve's ..."): the caller says whose.
    """
    knots = np.asarray(curve.bytes, dtype=float)
    dram = knots >= (L2_FACTOR * l2_bytes if l2_bytes else 0.0)
    if not dram.any():
        return []
    rate = float(np.median(knots[dram] / np.asarray(curve.seconds, dtype=float)[dram]))
    out = []
    if spec is not None and rate < WARN_STREAM_SHARE * spec.to_unit("B/s"):
        out.append(f"its streaming curve's DRAM-bound calls move {rate / 1e9:.4g} GB/s, "
                   f"{rate / spec.to_unit('B/s'):.2g}x the board's specified {spec.to_unit('B/s') / 1e9:.4g} GB/s; a "
                   f"streaming kernel reaches 0.6-0.9x on every board of the data home, and every memory-bound "
                   "prediction scales with it: check the curve's time unit (seconds) and byte counts")
    if achieved is not None:
        ratio = rate / achieved.to_unit("B/s")
        if not 1 / CURVE_BANDWIDTH_AGREEMENT <= ratio <= CURVE_BANDWIDTH_AGREEMENT:
            out.append(f"its streaming curve's DRAM-bound calls move {rate / 1e9:.4g} GB/s, {ratio:.3g}x its "
                       f"own {achieved.tier} dram_bandwidth ({achieved.to_unit('B/s') / 1e9:.4g} GB/s); the two should "
                       "agree (both come from the board's largest calls): the file was edited or mixes two boards' "
                       "results, and predictions follow the curve")
    return out


def valid_measured_time(time_ms) -> np.ndarray:
    """Per row, whether a measured time (ms) can be one: finite, within
    [:data:`MIN_MEASURED_MS`, :data:`MAX_MEASURED_MS`].

    One rule for every file of measurements a user gives (``--reference``,
    ``--calibration``, ``perfml characterize --from-runtimes``).
    """
    time_ms = np.asarray(time_ms, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(time_ms) & (time_ms >= MIN_MEASURED_MS) & (time_ms <= MAX_MEASURED_MS)


def first_bad_measured_time(time_ms) -> int | None:
    """The first row that fails :func:`valid_measured_time`, or None."""
    hits = np.flatnonzero(~valid_measured_time(time_ms))
    return int(hits[0]) if len(hits) else None


#: what a bad measured time is told (the caller names the file, row and column first)
BAD_MEASURED_TIME = (f"expected a measured time in ms, finite, between {MIN_MEASURED_MS:g} "
                     f"({MIN_MEASURED_MS * 1e3:g} us: no kernel call is shorter) and {MAX_MEASURED_MS:.0e}")


def first_unphysical_time(time_ms, bound_ms) -> int | None:
    """The first row measured faster than physics allows, or None.

    ``bound_ms`` is each row's lower bound on its own board: its roofline at the registry's
    peak FP32 rate and DRAM bandwidth, with up to the board's L2 of its bytes served from a
    warm cache (NaN where the work or the peaks are unknown: not checked). A measured time
    below ``bound_ms / MAX_OVER_SPEC`` means an achieved rate above 1.5 x the specification,
    which :func:`check_physical_limits` refuses for a characterized value and no clock boost
    or cache explains: the time unit, the board or the dimensions of the row are wrong.
    """
    time_ms = np.asarray(time_ms, dtype=float)
    bound_ms = np.asarray(bound_ms, dtype=float)
    with np.errstate(invalid="ignore"):
        bad = np.isfinite(bound_ms) & (bound_ms > 0) & (time_ms * MAX_OVER_SPEC < bound_ms)
    hits = np.flatnonzero(bad)
    return int(hits[0]) if len(hits) else None


def unphysical_time_message(time_ms: float, bound_ms: float, board: str) -> str:
    """The explanation of a :func:`first_unphysical_time` row (the caller names the file and row)."""
    return (f"{time_ms:.4g} ms is {bound_ms / time_ms:.3g}x faster than board {board} can do this work "
            f"(lower bound {bound_ms:.4g} ms: its roofline at the registry's peak FP32 rate and DRAM bandwidth, "
            f"the L2's worth of bytes served from cache; more than {MAX_OVER_SPEC}x beyond it is not physical); "
            "check the time unit (milliseconds, not microseconds or seconds), the board and the dimensions of the row")
