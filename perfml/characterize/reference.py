"""Reference characterizations transcribed from the papers, for boards we cannot run.

``reference_characterization("GTX-980")`` loads ``perfml/data/seed001_gtx980.toml``
(seed 001 Tables 3 and 4, with the seed file's line numbers) into the same
:class:`~perfml.characterize.Characterization` a measured sweep gives. The paper shows
its dynamic results only as figures (Figs. 4-6), without numbers, so the four
characterization functions of such a reference are the identity; the summaries carry the
achieved throughput per cycle per SM, its fraction of the specification, power, energy
and energy per instruction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from perfml.characterize.characterization import Characterization
from perfml.characterize.summary import ClassSummary
from perfml._files import read_versioned
from perfml.errors import ResultSchemaError, UnknownBoardError

__all__ = ["REFERENCE_FILES", "reference_boards", "reference_characterization", "reference_table"]

#: board name -> data file in ``perfml/data``
REFERENCE_FILES: Mapping[str, str] = {"GTX-980": "seed001_gtx980.toml"}

_SUPPORTED_VERSION = 1
_FORMAT = "perfml-reference-characterization"

#: seed 001 Table 1 component of each reference class / level
_COMPONENTS = {
    "int32_simple": "ALU",
    "int32_complex": "ALU",
    "int32_popc": "ALU",
    "int32_shift": "ALU",
    "int32_bitop": "ALU",
    "int32_rem": "ALU",
    "int64_simple": "ALU",
    "fp32_simple": "FPU",
    "fp32_special": "SFU",
    "fp64_simple": "DFU",
    "dram": "DRAM",
    "l2": "L2",
    "shared": "L1/Shared mem.",
    "constant": "Constant mem.",
}


def _normalize(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def reference_boards() -> tuple[str, ...]:
    """Boards that have a reference characterization."""
    return tuple(REFERENCE_FILES)


def reference_table(board: str) -> dict[str, Any]:
    """The raw reference data of ``board`` (the parsed TOML)."""
    wanted = _normalize(board)
    for name, filename in REFERENCE_FILES.items():
        if _normalize(name) == wanted:
            return read_versioned(resources.files("perfml").joinpath("data", filename),
                                  _FORMAT, (_SUPPORTED_VERSION,), error=ResultSchemaError)
    raise UnknownBoardError(
        f"no reference characterization for board {board!r}; known: "
        f"{', '.join(REFERENCE_FILES)}. Measure it with `perfml sweep run` and "
        "`perfml characterize`"
    )


def _summary(name: str, kind: str, unit: str, entry: Mapping[str, Any], where: str) -> ClassSummary:
    real = entry.get("real_per_cycle_per_sm")
    spec = entry.get("spec_per_cycle_per_sm")
    return ClassSummary(
        name=name,
        kind=kind,
        unit=unit,
        component=_COMPONENTS.get(name, ""),
        achieved_per_cycle_per_sm=None if real is None else float(real),
        spec_per_cycle_per_sm=None if spec is None else float(spec),
        fraction_of_spec=(float(real) / float(spec)) if (real is not None and spec) else None,
        avg_power_w=entry.get("avg_power_w"),
        max_power_w=entry.get("max_power_w"),
        energy_j=entry.get("energy_j"),
        nj_per_op=entry.get("nj_per_op"),
        n_points=0,
        source=f"{where}: {entry.get('label', name)}",
    )


def reference_characterization(board: str) -> Characterization:
    """The characterization of ``board`` transcribed from a paper.

    Raises
    ------
    UnknownBoardError
        No reference data exists for ``board``.
    """
    data = reference_table(board)
    src = data["source_file"]
    t3, t4 = data["table3"], data["table4"]
    summary = [
        _summary(name, "instruction", t3["unit_per_cycle"], entry,
                 f"seed {src} Table 3 (line {t3['caption_line']})")
        for name, entry in t3["classes"].items()
    ] + [
        _summary(name, "memory", t4["unit_per_cycle"], entry,
                 f"seed {src} Table 4 (line {t4['caption_line']})")
        for name, entry in t4["levels"].items()
    ]
    return Characterization(
        board=data["board"],
        summary=tuple(summary),
        source=data["source"],
        synthetic=False,
        device={"name": data["board"], "reference": True},
    )
