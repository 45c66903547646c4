"""Where each term of the fine-grained criteria comes from in an nvprof profile.

The criteria of Section IV of the fine-grained model (seed 000, "A Fine-grained
Performance Model for GPU Architectures") are written in terms of profiler events and
metrics. This module is the single place that says which ``profiles_nca`` column feeds
which term, per compute capability (the nvprof metric and event sets differ between
3.0, 3.5, 5.0 and 5.2; see ``shared/datasets/README.md``, section *profiles_nca*).
Columns are named as in that table: ``m.<nvprof metric description>`` and
``e.<nvprof event name>``.

Mapping (a term is the *sum* of its columns; ``-`` = the profiles of that compute
capability do not hold it, so every criterion that needs it is *unsupported* there):

=========================  ==========================================================  ============================================================  ================================
term                       CC 3.0 / 3.5 (Kepler)                                       CC 5.0 / 5.2 (Maxwell)                                        used by (seed 000)
=========================  ==========================================================  ============================================================  ================================
stall_sync_pct             3.0: ``-``; 3.5: ``m.Issue Stall Reasons (Synchronization)``  ``m.Issue Stall Reasons (Synchronization)``                    DEVICESYNC, Sec. IV-B; Sec. V
thread_inst_executed       3.0: ``-``; 3.5: ``e.thread_inst_executed``                 ``e.thread_inst_executed``                                    DIVERGENCE, Sec. IV-C
inst_executed              ``e.inst_executed``                                         ``e.inst_executed``                                           DIVERGENCE, Sec. IV-C
active_warps               ``e.active_warps``                                          ``e.active_warps``                                            LOADBALANC_WARP (IV-D), Sec. V
active_cycles              ``e.active_cycles``                                         ``e.active_cycles``                                           LOADBALANC_WARP/SM (IV-D, IV-E)
elapsed_cycles_sm          ``e.elapsed_cycles_sm``                                     ``e.elapsed_cycles_sm``                                       LOADBALANC_SM, MEMTHR, ARITHTHR
requested_global_bytes     ``e.gld_inst_{8,16,32,64,128}bit`` x size +                 same                                                          L1/L2_GRANULARITY, Sec. IV-F
                           ``e.gst_inst_{8,16,32,64,128}bit`` x size
l1_transactions            ``m.Global Load Transactions`` +                            ``-`` (Maxwell counts 32-byte sectors only)                  L1_GRANULARITY, Sec. IV-F
                           ``m.Global Store Transactions``
l2_transactions            ``m.L2 Read Transactions (L1 read requests)`` +             ``m.L2 Transactions (Texture Reads)`` +                       L2_GRANULARITY, Sec. IV-F
                           ``m.L2 Write Transactions (L1 write requests)``             ``m.L2 Transactions (Texture Writes)``
shared_requests            ``e.shared_load`` + ``e.shared_store``                      ``e.shared_load`` + ``e.shared_store``                        SHMEMEFFICIENCY, Sec. IV-G
shared_transactions        ``e.l1_shared_load_transactions`` +                         ``e.shared_ld_transactions`` + ``e.shared_st_transactions``   SHMEMEFFICIENCY, Sec. IV-G
                           ``e.l1_shared_store_transactions``
dram_transactions          ``m.Device Memory Read Transactions`` +                     same                                                          MEMTHR, Sec. IV-H
                           ``m.Device Memory Write Transactions``
flop_sp                    ``m.Floating Point Operations(Single Precision)``            same                                                          ARITHTHR, Sec. V
l1_utilization             ``m.L1/Shared Memory Utilization`` (0-10)                   ``m.Unified Cache Utilization`` (0-10)                        L1%, Sec. V
l2_utilization             ``m.L2 Cache Utilization`` (0-10)                           ``m.L2 Cache Utilization`` (0-10)                             L2%, Sec. V
shmem_utilization          ``m.L1/Shared Memory Utilization`` (0-10)                   ``m.Shared Memory Utilization`` (0-10)                        ShMem%, Sec. V
=========================  ==========================================================  ============================================================  ================================

Launch terms (``block_x*block_y*block_z``, ``grid_x*grid_y*grid_z``,
``registers_per_thread``, ``static_smem_bytes``) come from the kernel trace joined into
every profile row.

Notes on the choices (checked on ``profiles_nca.csv.gz``, block_16, N = 1024):

* Kepler ``m.Global Load Transactions`` counts one transaction per 128-byte line
  touched (matrix_sum_coalesced: 2 per warp request for two 64-byte half rows), whereas
  ``m.L2 Read Transactions (L1 read requests)`` counts 32-byte sectors (4 per request).
  These are the 128-byte and 32-byte granularities of Sec. IV-F.
* Maxwell's ``m.Global Load Transactions`` counts 32-byte units (8 per request in the
  same case) and no 128-byte line count is exposed, so L1_GRANULARITY is unsupported on
  CC 5.x.
* ``m.Device Memory Read/Write Throughput`` are not used: the curated table keeps the
  number without nvprof's unit (GB/s and MB/s are mixed), so throughput is recomputed
  from 32-byte DRAM transactions and ``e.elapsed_cycles_sm``.
* Host-side kernel start times (HOSTSYNC, Sec. IV-A) are in no profile table: HOSTSYNC
  is unsupported everywhere. Per-SM active cycles (LOADBALANC_SM, Sec. IV-E) are not
  either: events are summed over SMs, so LOADBALANC_SM is approximated (see
  :mod:`perfml.diagnosis.criteria`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from perfml.errors import DatasetSchemaError, MissingMetricError

__all__ = [
    "KNOWN_COMPUTE_CAPABILITIES",
    "MetricTerm",
    "TERMS",
    "cc_key",
    "term_columns",
    "term_value",
]

KNOWN_COMPUTE_CAPABILITIES = ("3.0", "3.5", "5.0", "5.2")

_KEPLER = ("3.0", "3.5")
_MAXWELL = ("5.0", "5.2")

#: global load/store instruction events and their access size in bytes (Sec. IV-F, size_T)
_GLOBAL_INST_SIZES = {8: 1, 16: 2, 32: 4, 64: 8, 128: 16}


@dataclass(frozen=True)
class MetricTerm:
    """One term of a criterion formula and the profile columns that give it.

    Attributes
    ----------
    name : str
        Term name used by the criteria.
    description : str
        What the term means, in the paper's words.
    columns : Mapping[str, tuple[str, ...]]
        Per compute capability, the columns summed into the term; an empty tuple means
        that compute capability's profiles do not hold the term.
    weights : Mapping[str, float]
        Optional multiplier per column (e.g. access size in bytes); default 1.
    nvprof_hint : str
        What to collect with nvprof when the column is missing.
    """

    name: str
    description: str
    columns: Mapping[str, tuple[str, ...]]
    nvprof_hint: str
    weights: Mapping[str, float] | None = None

    def supported(self, cc: str) -> bool:
        """Whether profiles of compute capability ``cc`` hold this term."""
        return bool(self.columns.get(cc))


def _all(*cols: str) -> dict[str, tuple[str, ...]]:
    return {cc: tuple(cols) for cc in KNOWN_COMPUTE_CAPABILITIES}


def _split(kepler: tuple[str, ...], maxwell: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {**{cc: kepler for cc in _KEPLER}, **{cc: maxwell for cc in _MAXWELL}}


def _requested_bytes_columns() -> tuple[tuple[str, ...], dict[str, float]]:
    cols: list[str] = []
    weights: dict[str, float] = {}
    for kind in ("gld", "gst"):
        for bits, size in _GLOBAL_INST_SIZES.items():
            col = f"e.{kind}_inst_{bits}bit"
            cols.append(col)
            weights[col] = float(size)
    return tuple(cols), weights


_REQ_COLS, _REQ_WEIGHTS = _requested_bytes_columns()

TERMS: dict[str, MetricTerm] = {
    t.name: t
    for t in (
        MetricTerm(
            "stall_sync_pct",
            "percentage of issue stalls due to synchronization (StallSync)",
            {"3.0": (), "3.5": ("m.Issue Stall Reasons (Synchronization)",),
             **{cc: ("m.Issue Stall Reasons (Synchronization)",) for cc in _MAXWELL}},
            "nvprof --metrics stall_sync",
        ),
        MetricTerm(
            "thread_inst_executed",
            "instructions executed by the active threads (#ExeInstructions)",
            {"3.0": (), "3.5": ("e.thread_inst_executed",),
             **{cc: ("e.thread_inst_executed",) for cc in _MAXWELL}},
            "nvprof --events thread_inst_executed",
        ),
        MetricTerm(
            "inst_executed",
            "warp-level instructions executed",
            _all("e.inst_executed"),
            "nvprof --events inst_executed",
        ),
        MetricTerm(
            "active_warps",
            "active warps summed over active cycles and SMs (TotActiveWarps)",
            _all("e.active_warps"),
            "nvprof --events active_warps",
        ),
        MetricTerm(
            "active_cycles",
            "cycles with at least one active warp, summed over SMs (TotActiveCycles)",
            _all("e.active_cycles"),
            "nvprof --events active_cycles",
        ),
        MetricTerm(
            "elapsed_cycles_sm",
            "elapsed clock cycles summed over SMs (CLK_cycles x |SM|)",
            _all("e.elapsed_cycles_sm"),
            "nvprof --events elapsed_cycles_sm",
        ),
        MetricTerm(
            "requested_global_bytes",
            "bytes requested by global load/store instructions (sum_T |Mem_instr_T| size_T)",
            _all(*_REQ_COLS),
            "nvprof --events gld_inst_8bit,...,gld_inst_128bit,gst_inst_8bit,...,gst_inst_128bit",
            _REQ_WEIGHTS,
        ),
        MetricTerm(
            "l1_transactions",
            "128-byte L1 global load/store transactions (#L1_transactions)",
            _split(("m.Global Load Transactions", "m.Global Store Transactions"), ()),
            "nvprof --metrics gld_transactions,gst_transactions",
        ),
        MetricTerm(
            "l2_transactions",
            "32-byte L2 transactions serving L1 (or texture/unified cache) reads and writes",
            _split(
                ("m.L2 Read Transactions (L1 read requests)",
                 "m.L2 Write Transactions (L1 write requests)"),
                ("m.L2 Transactions (Texture Reads)", "m.L2 Transactions (Texture Writes)"),
            ),
            "nvprof --metrics l2_l1_read_transactions,l2_l1_write_transactions "
            "(CC 3.x) or l2_tex_read_transactions,l2_tex_write_transactions (CC 5.x)",
        ),
        MetricTerm(
            "shared_requests",
            "shared-memory load/store instructions, warp level (#SharedLoadTrans + #SharedStoreTrans)",
            _all("e.shared_load", "e.shared_store"),
            "nvprof --events shared_load,shared_store",
        ),
        MetricTerm(
            "shared_transactions",
            "shared-memory transactions incl. bank-conflict replays (#SharedLoadAcc + #SharedStoreAcc)",
            _split(
                ("e.l1_shared_load_transactions", "e.l1_shared_store_transactions"),
                ("e.shared_ld_transactions", "e.shared_st_transactions"),
            ),
            "nvprof --events l1_shared_load_transactions,l1_shared_store_transactions (CC 3.x) "
            "or shared_ld_transactions,shared_st_transactions (CC 5.x)",
        ),
        MetricTerm(
            "dram_transactions",
            "32-byte device-memory read and write transactions",
            _all("m.Device Memory Read Transactions", "m.Device Memory Write Transactions"),
            "nvprof --metrics dram_read_transactions,dram_write_transactions",
        ),
        MetricTerm(
            "flop_sp",
            "single-precision floating-point operations (FMA = 2)",
            _all("m.Floating Point Operations(Single Precision)"),
            "nvprof --metrics flop_count_sp",
        ),
        MetricTerm(
            "l1_utilization",
            "L1 utilization level 0-10 (L1%)",
            _split(("m.L1/Shared Memory Utilization",), ("m.Unified Cache Utilization",)),
            "nvprof --metrics l1_shared_utilization (CC 3.x) or tex_utilization (CC 5.x)",
        ),
        MetricTerm(
            "l2_utilization",
            "L2 utilization level 0-10 (L2%)",
            _all("m.L2 Cache Utilization"),
            "nvprof --metrics l2_utilization",
        ),
        MetricTerm(
            "shmem_utilization",
            "shared-memory utilization level 0-10 (ShMem%)",
            _split(("m.L1/Shared Memory Utilization",), ("m.Shared Memory Utilization",)),
            "nvprof --metrics l1_shared_utilization (CC 3.x) or shared_utilization (CC 5.x)",
        ),
    )
}


def cc_key(compute_capability: object) -> str:
    """Normalise a compute capability (``3.5``, ``"3.5"``, ``35``) to ``"3.5"``.

    Raises
    ------
    DatasetSchemaError
        If it is not one of the compute capabilities whose metric sets are mapped.
    """
    try:
        value = float(compute_capability)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = math.nan
    if value >= 10:  # "35" style
        value = value / 10
    key = f"{value:.1f}" if not math.isnan(value) else str(compute_capability)
    if key not in KNOWN_COMPUTE_CAPABILITIES:
        raise DatasetSchemaError(
            f"no nvprof metric mapping for compute capability {key} (the profile row's compute_capability); "
            f"mapped: {', '.join(KNOWN_COMPUTE_CAPABILITIES)} "
            "(extend perfml.diagnosis.metrics.TERMS for a new metric set)"
        )
    return key


def term_columns(term: str, cc: str) -> tuple[str, ...]:
    """Columns that give ``term`` on compute capability ``cc`` (empty: unsupported)."""
    return TERMS[term].columns.get(cc, ())


def term_value(row: pd.Series | Mapping[str, object], term: str, cc: str, *, board: str) -> float:
    """Value of ``term`` in one profile row: the (weighted) sum of its columns.

    Parameters
    ----------
    row : pandas.Series or mapping
        One row of a ``profiles_nca``-shaped table.
    term : str
        A key of :data:`TERMS`.
    cc : str
        Compute capability key (see :func:`cc_key`).
    board : str
        Board name, for the error message.

    Raises
    ------
    MissingMetricError
        If a column the term needs on this compute capability is absent or empty.
        Terms that the compute capability does not support at all must be checked
        with :meth:`MetricTerm.supported` first (they are *unsupported*, not missing).
    """
    spec = TERMS[term]
    cols = spec.columns.get(cc, ())
    if not cols:
        raise MissingMetricError(
            f"term {term!r} is not available in compute-capability {cc} profiles "
            f"(board {board}); the criterion that needs it is unsupported there"
        )
    total = 0.0
    for col in cols:
        value = row.get(col) if hasattr(row, "get") else None
        if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value):
            raise MissingMetricError(
                f"profile of board {board} (compute capability {cc}) lacks {col!r}, needed for "
                f"{spec.description}; re-profile the kernel with `{spec.nvprof_hint}`, "
                "or evaluate with strict=False (CLI: --allow-missing) to get the criteria that do "
                "not need it"
            )
        weight = 1.0 if spec.weights is None else spec.weights.get(col, 1.0)
        total += float(value) * weight
    return total
