"""Typical BSP communication latencies of seed 003, read from ``perfml/data/bsp_latencies.toml``.

Seed 003 (Section IV, text after eq. 5, line 151; Section VI, line 306) gives 5 cycles
for shared memory and L1, 500 for global memory and 250 for L2. They are the latencies
of a board with no row in ``bsp_inputs.csv`` (:func:`perfml.closed_form._bsp_constants.
registry_constants`).
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Mapping

from perfml.closed_form._data_files import read_packaged_toml, sourced_values

__all__ = ["LATENCY_LEVELS", "paper_latencies", "paper_latency_sources"]

_FILE = "bsp_latencies.toml"
#: Memory levels of seed 003 eqs. 4-5: g_SM, g_GM, g_L1, g_L2.
LATENCY_LEVELS: tuple[str, ...] = ("shared", "global", "l1", "l2")


@functools.lru_cache(maxsize=1)
def _read() -> tuple[Mapping[str, float], Mapping[str, str]]:
    doc = read_packaged_toml(_FILE, format="perfml-bsp-latencies", version=1)
    values, sources = sourced_values(doc.get("latencies", {}), where=f"{_FILE} [latencies]",
                                     fields=LATENCY_LEVELS)
    return (MappingProxyType({k: float(v) for k, v in values.items()}),
            MappingProxyType(sources))


def paper_latencies() -> Mapping[str, float]:
    """Latency in cycles per level (``shared``, ``global``, ``l1``, ``l2``), read-only."""
    return _read()[0]


def paper_latency_sources() -> Mapping[str, str]:
    """Where each latency of :func:`paper_latencies` is stated in seed 003."""
    return _read()[1]
