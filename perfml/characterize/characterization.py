"""The characterization of one board: four functions, per-class summaries and tiered values.

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

Besides the functions, a characterization holds :class:`~perfml.characterize.values.CharacterizedValue`
numbers (achieved bandwidths, throughputs, latencies, launch overhead), each with its tier
(``spec``, ``published``, ``measured``, ``calibrated``), unit and source;
:meth:`Characterization.best` picks one per quantity.

File format
-----------
JSON, ``"format": "perfml-board-characterization"``, ``"version": 1``: ``board``,
``source``, ``synthetic``, ``device``, ``functions`` (name -> knots), ``summary`` (per
class), ``values`` (list of characterized values), ``warnings`` (list of strings) and
``provenance`` (how the file was made: command, data file and sha256, date), and optionally
``stream_curve`` (the board's streaming time per byte count,
:class:`~perfml.characterize.stream_curve.StreamCurve`; a file without it has no curve, and a
reader that predates it ignores it). Files of the
earlier format ``"perfml-characterization"`` version 1 (functions and summary only) are
read as well (no values). Loading validates every field; see :meth:`Characterization.from_dict`.
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
from perfml.characterize.limits import check_physical_limits, check_stream_curve
from perfml.characterize.stream_curve import StreamCurve
from perfml.characterize.summary import ClassSummary
from perfml.characterize.values import TIER_PREFERENCE, CharacterizedValue, _plain
from perfml.errors import InvalidValueError, PerfmlError, ResultSchemaError

_JSON_KIND = {Mapping: "object", list: "array", str: "string"}

__all__ = [
    "BoardCharacterization",
    "CHARACTERIZATION_FORMAT",
    "CHARACTERIZATION_VERSION",
    "LEGACY_FORMAT",
    "Characterization",
]

CHARACTERIZATION_FORMAT = "perfml-board-characterization"
CHARACTERIZATION_VERSION = 1
#: the format written before tiered values existed (functions and summary only); still read
LEGACY_FORMAT = "perfml-characterization"
LEGACY_VERSION = 1


def _l2_bytes(board: str) -> float | None:
    """The registry's L2 size of ``board`` (None for a board it does not know or whose L2 it lacks)."""
    from perfml.boards import get_board
    from perfml.errors import UnknownBoardError

    try:
        return getattr(get_board(board), "l2_bytes", None) or None
    except UnknownBoardError:
        return None


def _flag(value: Any, field_name: str) -> bool:
    """A true/false field of the file (``"false"``, a text, is refused: ``bool("false")`` is True)."""
    if not isinstance(value, bool):
        raise ResultSchemaError(f"characterization field {field_name!r} must be true or false, found {value!r}; "
                                "rebuild the file with `perfml characterize`")
    return value


def _registry_spec_values(board: str) -> tuple:
    """The registry's ``spec`` tier of ``board`` in both time bases (empty for a board it does not know)."""
    from perfml.boards import get_board
    from perfml.characterize.spec import rate_equivalents, spec_values
    from perfml.errors import UnknownBoardError

    try:
        entry = get_board(board)
    except UnknownBoardError:
        return ()
    specs = tuple(spec_values(entry))
    return specs + rate_equivalents(entry, specs)  # per second and per cycle per SM: either unit is held


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
    values : tuple of CharacterizedValue
        Tiered numbers about the board; checked against the ``spec`` values among them
        (:func:`~perfml.characterize.limits.check_physical_limits`).
    warnings : tuple of str
        File-level warnings (e.g. a quantity the calibration rows could not give).
    provenance : mapping
        How the characterization was made (command, data file, sha256, date).
    stream_curve : StreamCurve, optional
        Time of a streaming kernel per byte count, measured at every size
        (:mod:`perfml.characterize.stream_curve`); None when the rows had too few sizes.
    """

    board: str = "identity"
    functions: Mapping[str, CharacterizationFunction] = field(default_factory=dict)
    summary: tuple[ClassSummary, ...] = ()
    source: str = "identity"
    synthetic: bool = False
    device: Mapping[str, Any] = field(default_factory=dict)
    values: tuple[CharacterizedValue, ...] = ()
    warnings: tuple[str, ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    stream_curve: StreamCurve | None = None

    def __post_init__(self) -> None:
        if self.stream_curve is not None and not isinstance(self.stream_curve, StreamCurve):
            raise InvalidValueError(
                f"Characterization.stream_curve must be a StreamCurve or None, got {type(self.stream_curve).__name__}"
            )
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
        values = tuple(self.values)
        if not all(isinstance(v, CharacterizedValue) for v in values):
            raise InvalidValueError("Characterization.values must hold CharacterizedValue objects")
        # the limits hold against the registry's specification too: a file without its spec
        # values, or with them inflated, had no limits at all (a T4 file with DRAM at 38x its
        # datasheet predicted add calls 50x too fast)
        # (each achieved value is held to every specification of its quantity, the file's and
        # the registry's; a note repeated word for word is added once)
        registry = _registry_spec_values(self.board)
        object.__setattr__(self, "values", check_physical_limits(values + registry)[:len(values)])
        if self.stream_curve is not None:
            check_stream_curve(self.stream_curve, values + registry, self.registry_l2_bytes)
        object.__setattr__(self, "warnings", tuple(str(w) for w in self.warnings))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    # -- an immutable value: copies are the object itself ----------------------------
    @property
    def registry_l2_bytes(self) -> float | None:
        """The registry's L2 size of the board (None for a board it does not know or whose L2 it lacks)."""
        return _l2_bytes(self.board)

    def __copy__(self) -> Characterization:
        return self

    def __deepcopy__(self, memo) -> Characterization:
        """The object itself: it is frozen (read-only mappings inside), so a model's
        ``characterizations`` parameter survives :func:`sklearn.base.clone`."""
        return self

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

    # -- tiered values ------------------------------------------------------------------
    def values_for(self, quantity: str, *, tier: str | None = None) -> tuple[CharacterizedValue, ...]:
        """Every value of ``quantity`` (optionally of one tier), in file order."""
        return tuple(v for v in self.values if v.quantity == quantity and (tier is None or v.tier == tier))

    def best(
        self,
        quantity: str,
        unit: str,
        *,
        tiers: tuple[str, ...] = TIER_PREFERENCE,
        bounds: tuple[str, ...] = ("estimate", "upper", "lower"),
    ) -> CharacterizedValue | None:
        """The preferred value of ``quantity`` expressible in ``unit``, or ``None``.

        Tiers are tried in the order of ``tiers`` (observed on the board first, the
        datasheet last: :data:`~perfml.characterize.values.TIER_PREFERENCE`); within a
        tier an ``estimate`` wins over a ``lower`` or ``upper`` bound, then file order.
        Only values of the same dimension as ``unit`` qualify (no clock is assumed to
        turn a per-cycle figure into a per-second one).
        """
        from perfml.characterize.values import UNITS

        if unit not in UNITS:
            raise InvalidValueError(f"unknown unit {unit!r}; expected one of {sorted(UNITS)}")
        dimension = UNITS[unit][0]
        for tier in tiers:
            for bound in bounds:
                for v in self.values:
                    if v.quantity == quantity and v.tier == tier and v.bound == bound and v.dimension == dimension:
                        return v
        return None

    def value(self, quantity: str, unit: str, **kwargs: Any) -> float | None:
        """:meth:`best` converted to ``unit`` (``None`` when no value qualifies)."""
        chosen = self.best(quantity, unit, **kwargs)
        return None if chosen is None else chosen.to_unit(unit)

    def with_values(self, *values: CharacterizedValue, warnings: tuple[str, ...] = ()) -> Characterization:
        """A copy with ``values`` (and file-level ``warnings``) added, checked again."""
        from dataclasses import replace

        return replace(self, values=self.values + tuple(values), warnings=self.warnings + tuple(warnings))

    # -- files ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {
            "format": CHARACTERIZATION_FORMAT,
            "version": CHARACTERIZATION_VERSION,
            "board": self.board,
            "source": self.source,
            "synthetic": self.synthetic,
            "device": dict(self.device),
            "functions": {n: f.to_dict() for n, f in self.functions.items()},
            "summary": [s.to_dict() for s in self.summary],
            "values": [v.to_dict() for v in self.values],
            "warnings": list(self.warnings),
            "provenance": _plain(self.provenance),
        }
        if self.stream_curve is not None:  # absent otherwise: files without a curve are as before
            out["stream_curve"] = self.stream_curve.to_dict()
        return out

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
        known = {CHARACTERIZATION_FORMAT: CHARACTERIZATION_VERSION, LEGACY_FORMAT: LEGACY_VERSION}
        if data.get("format") not in known:
            raise ResultSchemaError(
                f"expected a {CHARACTERIZATION_FORMAT!r} document, found format "
                f"{data.get('format')!r}; write one with `perfml characterize RESULTS --out FILE`"
            )
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version != known[data["format"]]:
            raise ResultSchemaError(
                f"unknown characterization version {data.get('version')!r}; this perfml reads "
                f"version {known[data['format']]} of {data['format']!r}. Upgrade perfml or re-run "
                "`perfml characterize`"
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
                if isinstance(exc, PerfmlError):  # a checked figure: its message names the entry and field
                    raise
                raise ResultSchemaError(f"characterization summary entry is malformed ({exc!r})") from None
        if data["format"] == CHARACTERIZATION_FORMAT and "values" not in data:
            # the writer always gives it (the legacy format predates it): a file without it was
            # cut or edited, and was read as "no achieved value", silently the spec tier
            raise ResultSchemaError(
                "characterization field 'values' is missing (every perfml-board-characterization has it, empty "
                "or not); rebuild the file with `perfml characterize`")
        raw_values = data.get("values", [])
        warnings = data.get("warnings", [])
        provenance = data.get("provenance", {})
        if not isinstance(raw_values, list) or not isinstance(warnings, list) or not isinstance(provenance, Mapping):
            raise ResultSchemaError(
                "characterization fields 'values' and 'warnings' must be JSON arrays and 'provenance' an "
                "object; rebuild the file with `perfml characterize`"
            )
        values = tuple(CharacterizedValue.from_dict(v) for v in raw_values)
        curve = data.get("stream_curve")
        return cls(
            board=data["board"],
            functions=functions,
            summary=tuple(summary),
            source=str(data.get("source", "")),
            synthetic=_flag(data.get("synthetic", False), "synthetic"),
            device=dict(data["device"]),
            values=values,
            warnings=tuple(str(w) for w in warnings),
            provenance=dict(provenance),
            stream_curve=None if curve is None else StreamCurve.from_dict(curve),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False, inputs=None) -> Path:
        """Write as JSON, atomically, to a regular file; never replaces one unless ``overwrite``.

        The checks and the write are :mod:`perfml._safe_output`'s (no device, link or
        directory is ever replaced; nothing is left half-written on failure).
        """
        from perfml._safe_output import check_output_path, write_text_atomic

        path = check_output_path(path, overwrite=overwrite, option="--out", inputs=inputs)
        text = self.to_json()  # serialize before touching the file: nothing half-written
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_text_atomic(path, text, overwrite=overwrite, option="--out")


#: the name issue 11 uses for a board's characterization file; one model, two names
BoardCharacterization = Characterization
