"""The optimization criteria of the fine-grained model, each a value in [0, 1].

Reference: seed 000, "A Fine-grained Performance Model for GPU Architectures",
Section IV (criteria A-H) and Section V (ARITHTHR). 1 is the best value, 0 the worst.

Two layers, split by criterion family:

* pure formulas (``hostsync``, ``devicesync``, ``divergence``, ...), one per equation,
  taking plain numbers, so each can be checked by hand;
* one ``*_criterion(ctx)`` per criterion, reading the terms of one ``profiles_nca`` row
  through :mod:`perfml.diagnosis.metrics`; :func:`evaluate_criteria` runs them all and
  returns every criterion with its status: ``ok``, ``unsupported`` (the profiles of this
  compute capability do not hold a needed term; never reported as 0 or 1), ``missing``
  (the row has an empty value where the compute capability should have one; only with
  ``strict=False``) or ``not_applicable`` (e.g. SHMEMEFFICIENCY of a kernel that does not
  use shared memory).

Modules
-------
* ``_characterization`` -- F_* functions (Sec. III-B) and what a board must provide;
* ``_common`` -- :class:`Criterion`, :class:`CriteriaReport`, the profile-row context;
* ``_sync`` -- HOSTSYNC (IV-A), DEVICESYNC (IV-B);
* ``_divergence`` -- DIVERGENCE (IV-C);
* ``_load_balance`` -- LOADBALANC_WARP (IV-D), LOADBALANC_SM (IV-E);
* ``_memory_access`` -- L1/L2 granularity (IV-F), SHMEMEFFICIENCY (IV-G);
* ``_throughput`` -- MEMTHR, THROUGHPUT/OCCUPANCY (IV-H), ARITHTHR (V);
* ``_evaluate`` -- :func:`evaluate_criteria`.

Interpretations where the printed equation cannot be used literally are stated in the
docstring of the function concerned (L1/L2 granularity and shared-memory efficiency are
written as a ratio >= 1 in the paper although the criteria are defined in [0, 1]).
"""

from perfml.diagnosis.criteria._characterization import (
    BoardLike,
    CharacterizationLike,
    IdentityCharacterization,
    characterization_label,
    default_characterization,
)
from perfml.diagnosis.criteria._common import CriteriaReport, Criterion
from perfml.diagnosis.criteria._divergence import divergence
from perfml.diagnosis.criteria._evaluate import CRITERIA, evaluate_criteria
from perfml.diagnosis.criteria._load_balance import (
    loadbalanc_sm,
    loadbalanc_sm_from_totals,
    loadbalanc_warp,
)
from perfml.diagnosis.criteria._memory_access import (
    L1_LINE_BYTES,
    L2_SECTOR_BYTES,
    l1_granularity,
    l2_granularity,
    shmem_efficiency,
)
from perfml.diagnosis.criteria._sync import devicesync, hostsync
from perfml.diagnosis.criteria._throughput import (
    DRAM_TRANSACTION_BYTES,
    FLOPS_PER_CORE_CYCLE,
    MEMTHR_SATURATED,
    ariththr,
    memthr,
    throughput_occupancy,
)

__all__ = [
    "CRITERIA",
    "DRAM_TRANSACTION_BYTES",
    "FLOPS_PER_CORE_CYCLE",
    "L1_LINE_BYTES",
    "L2_SECTOR_BYTES",
    "BoardLike",
    "CharacterizationLike",
    "Criterion",
    "CriteriaReport",
    "IdentityCharacterization",
    "MEMTHR_SATURATED",
    "ariththr",
    "characterization_label",
    "default_characterization",
    "devicesync",
    "divergence",
    "evaluate_criteria",
    "hostsync",
    "l1_granularity",
    "l2_granularity",
    "loadbalanc_sm",
    "loadbalanc_sm_from_totals",
    "loadbalanc_warp",
    "memthr",
    "shmem_efficiency",
    "throughput_occupancy",
]
