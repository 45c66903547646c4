"""The worked table of seed 002 (Hong & Kim slides), read from ``perfml/data``.

The rows live in one place, ``perfml/data/hongkim_worked_table.toml``, each with the
line of ``../shared/seeds/002_018e9370bc0d26c6.txt`` it was copied from.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from perfml._files import read_versioned
from perfml.errors import DatasetSchemaError

__all__ = ["WorkedTableRow", "load_hongkim_worked_table"]

_FILE = "hongkim_worked_table.toml"
_FORMAT = "perfml-reference-table"
_VERSION = 1


@dataclass(frozen=True)
class WorkedTableRow:
    """One row of the seed 002 table "Previous Performance Tuning Example" (line 311).

    Attributes
    ----------
    name : str
        "Name of program" column.
    line : int
        Line of the row in ``002_018e9370bc0d26c6.txt``.
    threads_per_block, blocks : int
        Launch configuration.
    total_insts : int
        "Number of Instructions": dynamic instructions per thread, i.e. per warp.
    coal_mem_insts, uncoal_mem_insts : int
        Coalesced / uncoalesced global memory instructions per warp.
    occupancy : float
        "Occupancy" column, as printed.
    mwp_peak_bw, mwp, cwp, model_cpi : float
        The model outputs printed in the table.
    estimated_gflops : float
        "Estimated Performance (Gflops/s)" column (not reproducible: the flop counts
        are not in the table).
    """

    name: str
    line: int
    threads_per_block: int
    blocks: int
    total_insts: int
    coal_mem_insts: int
    uncoal_mem_insts: int
    occupancy: float
    mwp_peak_bw: float
    mwp: float
    cwp: float
    model_cpi: float
    estimated_gflops: float


def load_hongkim_worked_table() -> list[WorkedTableRow]:
    """Return the rows of the seed 002 worked table, in the order of the slide.

    Returns
    -------
    list of WorkedTableRow

    Raises
    ------
    DatasetSchemaError
        If the packaged TOML has an unknown format or version, or a row lacks a column.
    """
    doc = read_versioned(resources.files("perfml").joinpath("data", _FILE), _FORMAT, (_VERSION,),
                         error=DatasetSchemaError)
    fields = WorkedTableRow.__dataclass_fields__
    rows = []
    for i, raw in enumerate(doc.get("rows", [])):
        missing = sorted(set(fields) - set(raw))
        unknown = sorted(set(raw) - set(fields))
        if missing or unknown:
            raise DatasetSchemaError(
                f"{_FILE}: row {i} ({raw.get('name', '?')}) has missing columns {missing} "
                f"and unknown columns {unknown}; expected exactly {sorted(fields)}."
            )
        rows.append(WorkedTableRow(**raw))
    return rows
