"""The ``measured`` tier: tiered values from the per-class summaries of a sweep.

:func:`~perfml.characterize.summary.summarize_results` gives, per static family, the best
throughput a sweep reached and, per latency kernel, its cycles per dependent access.
:func:`measured_values` turns them into :class:`~perfml.characterize.values.CharacterizedValue`
numbers of the quantity each family measures: the catalog's families by name
(:data:`FAMILY_QUANTITY`), any other family by its seed 001 Table 1 component
(:data:`COMPONENT_QUANTITY`; integer ``ALU`` families are too varied to map by component).
Latency kernels map by the memory level their kernel name carries (``l1``, ``l2``,
``dram``; ``latency_shared`` is the shared level).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from perfml.characterize.summary import ClassSummary
from perfml.characterize.values import CharacterizedValue

__all__ = ["COMPONENT_QUANTITY", "FAMILY_QUANTITY", "l2_resident_dram_chases", "measured_values"]

#: static families of perfml/kernels/cuda -> the quantity they measure
FAMILY_QUANTITY = {
    "dram": "dram_bandwidth",
    "l2_cache": "l2_bandwidth",
    "shared_mem": "shared_bandwidth",
    "constant_mem": "constant_bandwidth",
    "fp32_simple": "fp32_throughput",
    "fp64_simple": "fp64_throughput",
    "fp16x2_fma": "fp16_throughput",
    "sfu": "sfu_throughput",
    "int32_addsub": "int32_throughput",
    "int32_mul": "int32_complex_throughput",
    "int32_popc": "int32_popc_throughput",
    "int32_shift": "int32_shift_throughput",
    "int32_bitops": "int32_bitop_throughput",
    "int32_rem": "int32_rem_throughput",
    "int64_add": "int64_throughput",
}

#: seed 001 Table 1 component -> quantity, for families not in FAMILY_QUANTITY
COMPONENT_QUANTITY = {
    "dram": "dram_bandwidth",
    "l2": "l2_bandwidth",
    "l1/shared mem.": "shared_bandwidth",
    "shared memory": "shared_bandwidth",
    "constant mem.": "constant_bandwidth",
    "fpu": "fp32_throughput",
    "dfu": "fp64_throughput",
    "sfu": "sfu_throughput",
}

_LATENCY_LEVELS = (("shared", "shared_latency"), ("l1", "l1_latency"), ("l2", "l2_latency"), ("dram", "dram_latency"))


def _latency_quantity(name: str) -> str | None:
    tokens = set(re.split(r"[^a-z0-9]+", name.lower()))
    for level, quantity in _LATENCY_LEVELS:
        if level in tokens:
            return quantity
    return None


def _l2_resident_dram_chase(s: ClassSummary, l2_bytes: float | None) -> bool:
    """Whether ``s`` is a DRAM latency chase whose ring's lines fit in ``L2_FACTOR`` x the L2."""
    from perfml.characterize.limits import L2_FACTOR

    return bool(s.kind == "latency" and _latency_quantity(s.name) == "dram_latency" and l2_bytes
                and s.footprint_bytes is not None and s.footprint_bytes < L2_FACTOR * l2_bytes)


def l2_resident_dram_chases(summary: Iterable[ClassSummary], l2_bytes: float | None) -> list[str]:
    """Warnings for DRAM latency chases whose ring the board's L2 can hold.

    A chase meant for DRAM measures the L2 when the lines its ring touches fit in the L2
    (fewer than :data:`~perfml.characterize.limits.L2_FACTOR` x its size): on an H100-SXM
    (50 MB L2) the shipped ``latency_global.dram`` ring touches 16 MiB of lines and gave
    294 cycles, the L2's 284 (sweeps/results/H100-SXM). Such a chase gives no
    ``dram_latency``; the warning says why. Without the L2 size or the footprint, no guard.
    """
    from perfml.characterize.limits import L2_FACTOR

    out = []
    for s in summary:
        if _l2_resident_dram_chase(s, l2_bytes):
            out.append(
                f"{s.name}: its ring touches {s.footprint_bytes / 2**20:.3g} MiB of lines, less than "
                f"{L2_FACTOR} x this board's L2 ({l2_bytes / 2**20:.3g} MiB), so it measured a cache, not "
                f"DRAM ({s.latency_cycles:.4g} cycles per hop); no dram_latency was taken from it. "
                "Run the chase with a larger CHASE_ELEMS / STRIDE_ELEMS ring."
            )
    return out


def measured_values(summary: Iterable[ClassSummary], source: str, *,
                    l2_bytes: float | None = None) -> tuple[CharacterizedValue, ...]:
    """Measured values of the summaries that map to a quantity (others are skipped).

    Parameters
    ----------
    summary : iterable of ClassSummary
        Per-class summaries of one result set.
    source : str
        The result set it was measured in (path), for the values' source.
    l2_bytes : float, optional
        The board's L2 size: a DRAM latency chase whose ring fits in it gives no value
        (:func:`l2_resident_dram_chases`).
    """
    out: list[CharacterizedValue] = []
    for s in summary:
        if _l2_resident_dram_chase(s, l2_bytes):
            continue
        provenance = {"result_set": source, "family_or_kernel": s.name, "component": s.component,
                      "n_points": s.n_points, "statistic": "best of the sweep's quiet points"}
        if s.kind == "latency":
            quantity = _latency_quantity(s.name)
            if quantity and s.latency_cycles:
                out.append(CharacterizedValue(
                    quantity, s.latency_cycles, "cycles", "measured",
                    source=f"{source}: {s.source}",
                    provenance={**provenance, "statistic": "median clock64 cycles per dependent hop"},
                ))
            continue
        quantity = FAMILY_QUANTITY.get(s.name) or COMPONENT_QUANTITY.get(s.component.lower())
        if quantity is None:
            continue
        per_s_unit, per_cycle_unit = (
            ("B/s", "B/cycle/SM") if s.kind == "memory" else ("instructions/s", "instructions/cycle/SM")
        )
        for value, unit in ((s.achieved_per_s, per_s_unit), (s.achieved_per_cycle_per_sm, per_cycle_unit)):
            if value:
                out.append(CharacterizedValue(
                    quantity, value, unit, "measured", source=f"{source}: family {s.name} ({s.source})",
                    provenance=provenance,
                ))
    return tuple(out)
