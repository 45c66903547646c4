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
from perfml.errors import InvalidValueError, PerfmlError, ResultSchemaError

_JSON_KIND = {Mapping: "object", list: "array", str: "string"}

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
            raise InvalidValueError(
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
        """Rebuild a characterization from :meth:`to_dict` output, checking every field.

        Raises
        ------
        ResultSchemaError
            Wrong format or version, or a field of the wrong shape or type.
        InvalidValueError
            A function whose knots or relative performances are out of range.
        """
        if not isinstance(data, Mapping):
            raise ResultSchemaError(
                f"a characterization is a JSON object, found {type(data).__name__}; "
                "write one with `perfml characterize RESULTS --out FILE`"
            )
        if data.get("format") != CHARACTERIZATION_FORMAT:
            raise ResultSchemaError(
                f"expected a {CHARACTERIZATION_FORMAT!r} document, found format "
                f"{data.get('format')!r}; write one with `perfml characterize RESULTS --out FILE`"
            )
        if data.get("version") != CHARACTERIZATION_VERSION:
            raise ResultSchemaError(
                f"unknown characterization version {data.get('version')!r}; this perfml reads "
                f"version {CHARACTERIZATION_VERSION}. Upgrade perfml or re-run `perfml characterize`"
            )
        for key, kind in (("functions", Mapping), ("summary", list), ("device", Mapping), ("board", str)):
            if key not in data or not isinstance(data[key], kind):
                raise ResultSchemaError(
                    f"characterization field {key!r} must be a JSON {_JSON_KIND[kind]}, found "
                    f"{type(data.get(key)).__name__}; re-run `perfml characterize RESULTS --out FILE`"
                )
        functions = {}
        for name, fn in data["functions"].items():
            try:
                if not isinstance(fn, Mapping):
                    raise TypeError(f"expected an object, found {type(fn).__name__}")
                functions[name] = CharacterizationFunction.from_dict(fn)
            except (KeyError, TypeError, ValueError) as exc:
                if isinstance(exc, PerfmlError):
                    raise
                raise ResultSchemaError(
                    f"characterization function {name!r} is malformed ({exc!r}); it needs "
                    "'name', 'x' and 'y' (lists of numbers of equal length)"
                ) from None
        summary = []
        for item in data["summary"]:
            try:
                summary.append(ClassSummary.from_dict(item))
            except (TypeError, ValueError, AttributeError) as exc:
                raise ResultSchemaError(f"characterization summary entry is malformed ({exc!r})") from None
        return cls(
            board=data["board"],
            functions=functions,
            summary=tuple(summary),
            source=str(data.get("source", "")),
            synthetic=bool(data.get("synthetic", False)),
            device=dict(data["device"]),
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
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json())
        return path
