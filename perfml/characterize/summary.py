"""Per-board summaries: achieved peak per instruction class and memory level.

From the *static* microbenchmarks of a sweep (seed 001 Table 1: one family per
instruction class or memory level, run at full load) the summary keeps, per family, the
best throughput achieved over its sweep points and, where the board registry gives the
matching specification, the fraction of it achieved, as seed 001 Tables 3 and 4 compare
"Real" with "Spec." throughput (../shared/seeds/001_37d900892b579193.txt lines 164-187).

Units: instruction classes in instructions per cycle per SM (and instructions/s); memory
levels in bytes per cycle per SM (and bytes/s). Seed 001 Table 4 counts transactions,
not bytes, so the GTX 980 reference summary keeps its own unit in :attr:`ClassSummary.unit`.

Specifications come from the registry fields, per seed 001 Table 1 component:
``FPU`` -> ``fp32_cores_per_sm``, ``DFU`` -> ``fp64_units_per_sm``, ``SFU`` ->
``sfu_per_sm`` (instructions per cycle per SM); ``DRAM`` -> :func:`perfml.boards.peak_bandwidth`;
shared memory -> ``shared_banks`` x 4 bytes per cycle per SM. Integer (``ALU``) classes,
L2 and constant memory have no registry figure, so no fraction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["ClassSummary", "is_memory_component", "summarize_results", "unsteady_median"]

_INSTRUCTION_SPEC_FIELD = {"FPU": "fp32_cores_per_sm", "DFU": "fp64_units_per_sm", "SFU": "sfu_per_sm"}
_MEMORY_WORDS = ("dram", "l2", "l1", "shared", "constant", "texture", "global", "memory", "mem.")
#: bytes one shared-memory bank serves per cycle
_BANK_WIDTH_BYTES = 4


def is_memory_component(component: str) -> bool:
    """Whether a seed 001 component name (``DRAM``, ``L2``, ``L1/Shared mem.``, ...) is a memory level."""
    lowered = component.lower()
    return any(word in lowered for word in _MEMORY_WORDS)


@dataclass(frozen=True)
class ClassSummary:
    """Achieved peak of one instruction class or memory level on one board.

    ``fraction_of_spec`` is achieved over the specification (registry figure, or the
    paper's "Spec." row); ``None`` where no specification exists (e.g. integer
    remainder, which has no hardware unit: seed 001 line 160).
    """

    name: str
    kind: str  # "instruction", "memory" or "latency"
    unit: str
    component: str = ""
    achieved_per_cycle_per_sm: float | None = None
    achieved_per_s: float | None = None
    spec_per_cycle_per_sm: float | None = None
    spec_per_s: float | None = None
    fraction_of_spec: float | None = None
    avg_power_w: float | None = None
    max_power_w: float | None = None
    energy_j: float | None = None
    nj_per_op: float | None = None
    latency_cycles: float | None = None
    #: latency kernels: bytes of distinct 128-byte lines one launch's ring touches (None: unknown)
    footprint_bytes: float | None = None
    n_points: int = 0
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClassSummary:
        """An entry as read from a characterization file, its figures checked as every entry's are
        (:meth:`__post_init__`; a file is user input).

        Raises
        ------
        InvalidValueError
            A rate, specification, latency or footprint that is not a finite number > 0; a
            power or energy that is not a finite number >= 0; ``n_points`` not a whole number
            >= 0; a latency under one cycle, or an achieved rate above 1.5x its specification
            (issue 11 §5: values outside physical limits are refused, never used).
        """
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def __post_init__(self) -> None:
        # checked when made, not only when read back: a file perfml writes is one it can read
        self._check()

    def _check(self) -> None:
        from perfml.characterize.limits import MAX_OVER_SPEC, MIN_LATENCY_CYCLES
        from perfml.errors import InvalidValueError

        def refuse(field: str, expected: str) -> None:
            raise InvalidValueError(f"characterization summary entry {self.name!r}: {field} = {getattr(self, field)!r}; "
                                    f"expected {expected}; check the sweep's points of this class, or rebuild the file with "
                                    "`perfml characterize`")

        for field, low, strict in _CHECKED_FIGURES:
            value = getattr(self, field)
            if value is None:
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value < low or (strict and value == low):
                refuse(field, f"a finite number {'>' if strict else '>='} {low:g}, or null")
        if not isinstance(self.n_points, int) or isinstance(self.n_points, bool) or self.n_points < 0:
            refuse("n_points", "a whole number >= 0")
        # the limits of the characterized values (perfml.characterize.limits), here on the summary's figures
        if self.latency_cycles is not None and self.latency_cycles < MIN_LATENCY_CYCLES:
            refuse("latency_cycles", "at least one cycle (no memory access completes in less)")
        if self.fraction_of_spec is not None and self.fraction_of_spec > MAX_OVER_SPEC:
            refuse("fraction_of_spec", f"at most {MAX_OVER_SPEC:g} (an achieved rate above {MAX_OVER_SPEC:g}x the "
                                       "specification is a measurement or unit error)")


#: (field, lower limit, limit excluded) of the figures :meth:`ClassSummary.from_dict` checks
_CHECKED_FIGURES = (
    ("achieved_per_cycle_per_sm", 0.0, True), ("achieved_per_s", 0.0, True), ("spec_per_cycle_per_sm", 0.0, True),
    ("spec_per_s", 0.0, True), ("fraction_of_spec", 0.0, True), ("latency_cycles", 0.0, True),
    ("footprint_bytes", 0.0, True), ("avg_power_w", 0.0, False), ("max_power_w", 0.0, False),
    ("energy_j", 0.0, False), ("nj_per_op", 0.0, False),
)


def _numbers(values):
    import pandas as pd

    values = pd.to_numeric(values, errors="coerce").dropna()
    return values[values > 0]


def unsteady_median(frame):
    """Whether each point's median time is unsteady: the spread of its repetitions, robustly
    measured (interquartile range / 1.349, the normal-consistent estimate of the standard
    deviation, over the median), exceeds the point's ``cv_threshold``.

    Not the stored ``noisy`` flag (standard deviation over mean, the spec's definition and
    the runner's warning): one slow repetition in twenty lifts that above 5 % while leaving
    the median, which the summary uses, where it was. An H200 repeat run lost its
    ``dram.load`` point so (CV 0.063, median the first run's) and its DRAM bandwidth fell to
    the store kernel's (``sweeps/results/archive/H200-run3``). Rows without their
    repetitions (``times_s``) keep the stored flag.
    """
    import numpy as np
    import pandas as pd

    def spread(times) -> float:
        times = np.asarray(times if times is not None else [], dtype=float)
        times = times[np.isfinite(times)]
        if len(times) < 2 or np.median(times) <= 0:
            return float("nan")
        q1, q3 = np.percentile(times, [25, 75])
        return float((q3 - q1) / 1.349 / np.median(times))

    stored = frame["noisy"].astype(bool)
    if "times_s" not in frame.columns or "cv_threshold" not in frame.columns:
        return stored
    robust = frame["times_s"].map(spread)
    threshold = pd.to_numeric(frame["cv_threshold"], errors="coerce")
    return robust.gt(threshold).where(robust.notna() & threshold.notna(), stored).astype(bool)


def _best(values) -> float | None:
    values = _numbers(values)
    return float(values.max()) if len(values) else None


def _median(values) -> float | None:
    values = _numbers(values)
    return float(values.median()) if len(values) else None


def _spec(board: Any, component: str, memory: bool) -> tuple[float | None, float | None]:
    """(per cycle per SM, per second) specification of a component, where the registry has one."""
    if board is None:
        return None, None
    from perfml import boards

    sms, clock = getattr(board, "sms", None), getattr(board, "boost_clock_mhz", None)
    per_cycle: float | None = None
    per_s: float | None = None
    try:
        if memory:
            lowered = component.lower()
            if "dram" in lowered or "global" in lowered:
                per_s = float(boards.peak_bandwidth(board))
                if sms and clock:
                    per_cycle = per_s / (sms * clock * 1e6)
            elif "shared" in lowered and getattr(board, "shared_banks", None):
                per_cycle = float(board.shared_banks * _BANK_WIDTH_BYTES)
        else:
            field = _INSTRUCTION_SPEC_FIELD.get(component.upper())
            if field and getattr(board, field, None):
                per_cycle = float(getattr(board, field))
        if per_cycle is not None and per_s is None and sms and clock:
            per_s = per_cycle * sms * clock * 1e6
    except Exception:  # the registry leaves a needed number empty
        return None, None
    return per_cycle, per_s


def summarize_results(frame, board: Any = None) -> tuple[ClassSummary, ...]:
    """Summaries of the static families in a result frame, one per family.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of a result set (:meth:`perfml.measure.store.ResultSet.read`).
    board : Board, optional
        Registry entry of the measured board, for the specification and
        ``fraction_of_spec``; without it only achieved values are reported.

    Points whose median time is unsteady (:func:`unsteady_median`) are left out of a class
    unless every point of it is so. The fraction
    compares per-cycle figures (measured SM clock) for instruction classes and shared
    memory, and bytes/s for DRAM.
    """
    if frame is None or len(frame) == 0:
        return ()
    static = frame[frame["kind"].astype(str).str.lower() == "static"]
    out: list[ClassSummary] = []
    for family, group in static.groupby("family", sort=True):
        quiet = group[~unsteady_median(group)]
        group = quiet if len(quiet) else group
        component = str(group["component"].iloc[0])
        memory = is_memory_component(component)
        clock_mhz = group["sm_clock_mhz"].fillna(group["max_sm_clock_mhz"]).astype(float)
        cycles_sms = group["time_median_s"] * clock_mhz * 1e6 * group["sms"].astype(float)
        if memory:
            per_s = _best(group["bytes_per_s"])
            per_cycle = _best(group["bytes"] / cycles_sms)
            count = group["bytes"]
            unit = "bytes per cycle per SM"
        else:
            count = unit_instructions(group)
            per_s = _best(count / group["time_median_s"])
            per_cycle = _best(count / cycles_sms)
            unit = "instructions per cycle per SM"
        spec_cycle, spec_s = _spec(board, component, memory)
        if memory and spec_s is not None and "shared" not in component.lower():
            fraction = per_s / spec_s if per_s is not None else None
        else:
            fraction = per_cycle / spec_cycle if (per_cycle is not None and spec_cycle) else None
        energy = group["energy_j"]
        out.append(
            ClassSummary(
                name=str(family),
                kind="memory" if memory else "instruction",
                unit=unit,
                component=component,
                achieved_per_cycle_per_sm=per_cycle,
                achieved_per_s=per_s,
                spec_per_cycle_per_sm=spec_cycle,
                spec_per_s=spec_s,
                fraction_of_spec=fraction,
                avg_power_w=_median(group["power_w"]),
                max_power_w=_best(group["power_w"]),
                energy_j=_median(energy),
                nj_per_op=_median(energy / (count * group["n"]) * 1e9),
                n_points=len(group),
                source="kernels " + ", ".join(sorted(map(str, group["kernel"].unique()))),
            )
        )
    out.extend(_latencies(frame))
    return tuple(out)


def unit_instructions(group):
    """Instructions the measured unit executed per launch, one value per row.

    A sidecar's ``target_instructions`` counts its target class, which can span two units:
    ``sin.approx`` is FMUL.RZ (FMA pipe) + MUFU.SIN (SFU), two instructions of which one
    is the SFU's. Such a sidecar declares ``unit_instructions`` in ``[work]`` (per
    thread); the summary then counts those (x ``threads``), so the SFU's rate is not
    doubled by the FMULs (measured on an H100-SXM, sweeps/results/H100-SXM: 1.98x the
    SFU specification with the pair counted, 0.99x with MUFU only). Other rows keep the
    recorded ``instructions``.
    """
    import json

    import pandas as pd

    declared = group["work_json"].map(lambda w: json.loads(w or "{}").get("unit_instructions"))
    declared = pd.to_numeric(declared, errors="coerce") * group["threads"].astype(float)
    return declared.where(declared.notna(), group["instructions"].astype(float))


#: bytes of one cache line of the L2 (every NVIDIA GPU since Fermi)
LINE_BYTES = 128


def _chase_footprint_bytes(family_name: str, params_json: str | None) -> float | None:
    """Distinct 128-byte lines a pointer-chase ring touches, in bytes (None where unknown).

    A chase buffer (``init = "chase"`` or ``"chase_random"``) of ``elements`` with hops ``stride`` elements
    apart has ``elements / stride`` hops on its ring, one line each; the kernel walks the
    whole ring before timing, so those lines are what a cache must hold for the timed
    hops to hit it. Read from the shipped kernel catalog and the row's parameters.
    """
    import json

    from perfml.errors import PerfmlError
    from perfml.kernels.catalog import load_catalog
    from perfml.kernels.launch import LaunchConfig

    try:
        family = load_catalog().get(family_name)
        if family is None:
            return None
        params = json.loads(params_json or "{}")
        if not isinstance(params, dict):
            return None
        launch = LaunchConfig((1, 1, 1), (1, 1, 1))
        names = family.expression_names(params, launch)
        for arg in family.args:
            if arg.kind == "buffer" and arg.init in ("chase", "chase_random"):
                elements = family.buffer_elements(arg, params, launch)
                stride = family.evaluate(arg.stride, names, f"args.{arg.name}.stride")
                return float(elements / max(1, min(stride, elements)) * LINE_BYTES)
    except (PerfmlError, ValueError, TypeError):
        # parameters that are not a JSON object of numbers, or a sidecar expression they do
        # not satisfy (a foreign parameter set): the footprint is unknown, so no guard; a
        # bug in the catalog itself (any other exception) is not hidden
        return None
    return None


def _latencies(frame) -> list[ClassSummary]:
    """Load-to-use latency per latency kernel: ``clock64`` cycles over dependent hops.

    A latency kernel (one thread chasing a pointer ring) writes the cycles of its timed
    chase to its ``cycles`` buffer; its ``[work]`` section gives the hops per thread.
    """
    import json

    import pandas as pd

    rows = frame[frame["kind"].astype(str).str.lower() == "latency"]
    out = []
    for kernel, group in rows.groupby("kernel", sort=True):
        hops = group["work_json"].map(lambda w: json.loads(w or "{}").get("hops"))
        per_hop = pd.to_numeric(group["cycles"], errors="coerce") / pd.to_numeric(hops, errors="coerce")
        footprint = _chase_footprint_bytes(str(group["family"].iloc[0]), group["params_json"].iloc[0]) \
            if "params_json" in group.columns else None
        out.append(
            ClassSummary(
                name=str(kernel),
                kind="latency",
                unit="cycles per dependent access",
                component=str(group["component"].iloc[0]),
                latency_cycles=_median(per_hop),
                footprint_bytes=footprint,
                n_points=len(group),
                source=f"kernel {kernel}: clock64 cycles / hops",
            )
        )
    return out
