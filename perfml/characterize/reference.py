"""The ``published`` tier: characterizations transcribed from papers, for boards we cannot run.

``reference_characterization("GTX-980")`` loads ``perfml/data/seed001_gtx980.toml``
(seed 001 Tables 3-6, with the seed file's line numbers) into the same
:class:`~perfml.characterize.Characterization` a measured sweep gives;
``reference_characterization("GTX-660")`` loads ``seed001_gtx660.toml`` (the GTX660
columns of Tables 5 and 6: the paper does not report that board's static results). The
paper shows its dynamic results only as figures (Figs. 4-6), without numbers, so the four
characterization functions of such a reference are the identity.

What a reference holds:

* ``summary``: per Table 3 / 4 column, the achieved throughput per cycle per SM, its
  fraction of the specification, power, energy and energy per instruction;
* ``values`` (tier ``published``): the "Real Throughput" of every Table 3 / 4 column as
  the quantity it measures, in the table's unit (operations, resp. memory transactions,
  per cycle per SM), citing paper, table and seed line; the paper's "Spec." figure goes
  into the provenance (``paper_spec``) and bounds the value
  (:mod:`perfml.characterize.limits`); and, from Tables 5 / 6, the largest global-memory
  throughput the profiler reported for an application on the board (``bound = "lower"``:
  the board reaches at least that much).

Only values of tables present in ``../shared/seeds`` are transcribed; nothing from memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from perfml.characterize.characterization import Characterization
from perfml.characterize.summary import ClassSummary
from perfml._files import read_versioned
from perfml.characterize.values import CharacterizedValue
from perfml.errors import ResultSchemaError, UnknownBoardError

__all__ = ["REFERENCE_FILES", "reference_boards", "reference_characterization", "reference_table"]

#: board name -> data file in ``perfml/data``
REFERENCE_FILES: Mapping[str, str] = {"GTX-980": "seed001_gtx980.toml", "GTX-660": "seed001_gtx660.toml"}

#: the paper the seed 001 files transcribe
SEED001_PAPER = (
    "Power-aware Performance Tuning of GPU Applications Through Microbenchmarking (seed 001)"
)
_UNIT = {"table3": "instructions/cycle/SM", "table4": "transactions/cycle/SM"}

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


def _table_values(data: Mapping[str, Any], key: str, entries_key: str, table: str) -> list[CharacterizedValue]:
    """Published values of the "Real Throughput" row of Table 3 (``key = "table3"``) or 4."""
    t = data.get(key)
    if not t:
        return []
    out = []
    for name, entry in t[entries_key].items():
        real = entry.get("real_per_cycle_per_sm")
        if real is None or "quantity" not in entry:
            continue
        provenance = {
            "paper": SEED001_PAPER,
            "seed_file": data["source_file"],
            "table": table,
            "line": t["real_line"],
            "caption_line": t["caption_line"],
            "column": entry.get("label", name),
            "row": "Real Throughput",
        }
        if entry.get("spec_per_cycle_per_sm") is not None:
            provenance["paper_spec"] = float(entry["spec_per_cycle_per_sm"])
            provenance["paper_spec_line"] = t.get("spec_line")
        out.append(
            CharacterizedValue(
                quantity=entry["quantity"],
                value=float(real),
                unit=_UNIT[key],
                tier="published",
                source=f"seed 001 {table} (line {t['real_line']}), {entry.get('label', name)}",
                provenance=provenance,
            )
        )
    return out


def _throughput_value(data: Mapping[str, Any]) -> list[CharacterizedValue]:
    """The largest application global-memory throughput of Tables 5 / 6 (a lower bound)."""
    best = None
    for table, key in (("Table 5", "table5"), ("Table 6", "table6")):
        for row in data.get(key, {}).get("rows", []):
            gbs = row.get("gmem_throughput_gbs")
            if gbs is not None and (best is None or gbs > best[0]):
                best = (gbs, table, key, row)
    if best is None:
        return []
    gbs, table, key, row = best
    return [
        CharacterizedValue(
            quantity="global_memory_throughput",
            value=float(gbs),
            unit="GB/s",
            tier="published",
            bound="lower",
            source=f"seed 001 {table} (line {row['line']}), {data[key]['title']}: gmem_throughput of {row['version']}",
            provenance={
                "paper": SEED001_PAPER,
                "seed_file": data["source_file"],
                "table": table,
                "line": row["line"],
                "caption_line": data[key]["caption_line"],
                "column": "Profiler metrics and features",
                "row": f"branch {row['branch']} {row['version']}",
                "note": "profiler global-memory throughput an optimized application reached: the board "
                "sustains at least this much (the largest such figure of the table is kept)",
            },
        )
    ]


def reference_characterization(board: str) -> Characterization:
    """The characterization of ``board`` transcribed from a paper.

    Raises
    ------
    UnknownBoardError
        No reference data exists for ``board``.
    """
    data = reference_table(board)
    src = data["source_file"]
    summary: list[ClassSummary] = []
    if "table3" in data:
        t3 = data["table3"]
        summary += [
            _summary(name, "instruction", t3["unit_per_cycle"], entry,
                     f"seed {src} Table 3 (line {t3['caption_line']})")
            for name, entry in t3["classes"].items()
        ]
    if "table4" in data:
        t4 = data["table4"]
        summary += [
            _summary(name, "memory", t4["unit_per_cycle"], entry,
                     f"seed {src} Table 4 (line {t4['caption_line']})")
            for name, entry in t4["levels"].items()
        ]
    values = (
        _table_values(data, "table3", "classes", "Table 3")
        + _table_values(data, "table4", "levels", "Table 4")
        + _throughput_value(data)
    )
    return Characterization(
        board=data["board"],
        summary=tuple(summary),
        source=data["source"],
        synthetic=False,
        device={"name": data["board"], "reference": True},
        values=tuple(values),
    )
