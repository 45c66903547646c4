"""The characterization of one board: four functions and per-class summaries.

This is the API the fine-grained criteria model (:mod:`perfml.diagnosis`) consumes::

    from perfml.characterize import load_characterization
    ch = load_characterization("h100.characterization.json")
    ch.f_shmem(1 / 4)        # relative performance with 4-way bank conflicts

    Characterization.identity()            # 1 everywhere: no device knowledge
    reference_characterization("GTX-980")  # seed 001 Tables 3 and 4

Every ``f_*`` method follows the convention of :mod:`perfml.characterize.functions`:
intensity in [0, 1] (1 is the criterion's best value) to relative performance in [0, 1].
A function the data could not build (no dynamic sweep for it) is the identity, and
:meth:`Characterization.has_function` says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml.characterize.functions import FUNCTION_NAMES, CharacterizationFunction
from perfml.characterize.summary import ClassSummary
from perfml._files import check_versioned, read_versioned, write_json
from perfml.errors import ResultSchemaError

__all__ = [
    "CHARACTERIZATION_FORMAT",
    "CHARACTERIZATION_VERSION",
    "Characterization",
    "load_characterization",
]

CHARACTERIZATION_FORMAT = "perfml-characterization"
CHARACTERIZATION_VERSION = 1


@dataclass(frozen=True)
class Characterization:
    """Characterization functions and achieved peaks of one board.

    Parameters
    ----------
    board : str
        Board (or device) name.
    functions : mapping of str to CharacterizationFunction
        Keyed by :data:`~perfml.characterize.functions.FUNCTION_NAMES`; missing ones are
        the identity.
    summary : tuple of ClassSummary
        Achieved peak per instruction class and memory level.
    source : str
        Where it came from (result set path, or a paper table).
    synthetic : bool
        Built from synthetic (generated) data; never true for a measured board.
    device : mapping
        Device metadata of the result set it was built from.
    """

    board: str = "identity"
    functions: Mapping[str, CharacterizationFunction] = field(default_factory=dict)
    summary: tuple[ClassSummary, ...] = ()
    source: str = "identity"
    synthetic: bool = False
    device: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.functions) - set(FUNCTION_NAMES)
        if unknown:
            raise ValueError(
                f"unknown characterization function(s) {sorted(unknown)}; "
                f"expected some of {list(FUNCTION_NAMES)}"
            )
        full = {
            name: self.functions.get(name) or CharacterizationFunction.identity(name)
            for name in FUNCTION_NAMES
        }
        object.__setattr__(self, "functions", MappingProxyType(full))
        object.__setattr__(self, "summary", tuple(self.summary))
        object.__setattr__(self, "device", MappingProxyType(dict(self.device)))

    # -- the API the criteria model uses -------------------------------------------
    @classmethod
    def identity(cls) -> Characterization:
        """Every function is 1 everywhere: no device-specific weighting."""
        return cls()

    def f_divergence(self, x: float) -> float:
        """F_Divergence at warp-path coherence ``x`` (1 = no divergence)."""
        return self.functions["divergence"](x)

    def f_shmem(self, x: float) -> float:
        """F_SHMEM at shared transactions per access ``x`` (1 = no bank conflicts)."""
        return self.functions["shmem"](x)

    def f_dram_thr(self, x: float) -> float:
        """F_DRAMThr at DRAM load ``x`` (warps streaming, as a share of the most swept)."""
        return self.functions["dram_thr"](x)

    def f_arith_thr(self, x: float) -> float:
        """F_ARITHThr at arithmetic load ``x`` (warps computing, as a share of the most swept)."""
        return self.functions["arith_thr"](x)

    def has_function(self, name: str) -> bool:
        """Whether ``name`` was built from data (rather than left as the identity)."""
        return self.functions[name].n_samples > 0

    def summary_for(self, name: str) -> ClassSummary | None:
        """The summary of one instruction class or memory level, if present."""
        return next((s for s in self.summary if s.name == name), None)

    # -- files ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": CHARACTERIZATION_FORMAT,
            "version": CHARACTERIZATION_VERSION,
            "board": self.board,
            "source": self.source,
            "synthetic": self.synthetic,
            "device": dict(self.device),
            "functions": {n: f.to_dict() for n, f in self.functions.items()},
            "summary": [s.to_dict() for s in self.summary],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Characterization:
        check_versioned(data, "characterization", CHARACTERIZATION_FORMAT,
                        (CHARACTERIZATION_VERSION,), error=ResultSchemaError,
                        label="characterization")
        return cls(
            board=str(data.get("board", "")),
            functions={
                n: CharacterizationFunction.from_dict(f) for n, f in data.get("functions", {}).items()
            },
            summary=tuple(ClassSummary.from_dict(s) for s in data.get("summary", [])),
            source=str(data.get("source", "")),
            synthetic=bool(data.get("synthetic", False)),
            device=dict(data.get("device", {})),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write as JSON; refuses to replace an existing file unless ``overwrite``."""
        from perfml.errors import ResultFileExistsError

        path = Path(path)
        if path.exists() and not overwrite:
            raise ResultFileExistsError(
                f"{path} exists; choose another --out file or remove it first"
            )
        data = self.to_dict()
        return write_json(path, data, data.pop("format"), data.pop("version"), overwrite=True,
                          error=ResultSchemaError)


def load_characterization(path: str | os.PathLike[str]) -> Characterization:
    """Read a characterization written by ``perfml characterize RESULTS --out FILE``.

    A result set directory is also accepted: it is characterized on the fly.
    """
    path = Path(path)
    if path.is_dir():
        from perfml.characterize.build import characterize_results

        return characterize_results(path)
    if not path.exists():
        raise ResultSchemaError(
            f"{path} does not exist; write it with `perfml characterize RESULTS --out {path}`"
        )
    data = read_versioned(path, CHARACTERIZATION_FORMAT, (CHARACTERIZATION_VERSION,),
                          error=ResultSchemaError, syntax="json", label="characterization")
    return Characterization.from_dict(data)
