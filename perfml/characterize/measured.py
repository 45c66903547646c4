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

__all__ = ["COMPONENT_QUANTITY", "FAMILY_QUANTITY", "measured_values"]

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


def measured_values(summary: Iterable[ClassSummary], source: str) -> tuple[CharacterizedValue, ...]:
    """Measured values of the summaries that map to a quantity (others are skipped).

    Parameters
    ----------
    summary : iterable of ClassSummary
        Per-class summaries of one result set.
    source : str
        The result set it was measured in (path), for the values' source.
    """
    out: list[CharacterizedValue] = []
    for s in summary:
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
