"""Characterized values: one number about a board, with its unit, tier and source.

A board characterization (issue 11 §1) holds, per *quantity* (achieved DRAM bandwidth,
FP32 throughput, L2 latency, launch floor, ...), any number of values, each from one of
four *tiers*:

``spec``
    derived from the board registry (:mod:`perfml.boards`); the source names the
    registry fields, e.g. ``registry GTX-980: sms x fp32_cores_per_sm x boost_clock_mhz x 2``.
``published``
    a microbenchmark result of a cited study; the provenance names the paper, the table
    and the line of the seed text (``../shared/seeds/``) it was transcribed from.
``measured``
    from ``perfml characterize RESULTS`` of a sweep measured on the board.
``calibrated``
    inferred from measured runtimes of kernels whose work is known
    (``perfml characterize --from-runtimes FILE``); the provenance names the file, its
    sha256, the filters, the rows used and the statistic.

Units are explicit and restricted to :data:`UNITS`; a value is stored in the unit its
source gives (a table is transcribed, not converted) and :meth:`CharacterizedValue.to_unit`
converts between units of the same dimension (``GB/s`` -> ``B/s``, ``us`` -> ``s``).
Per-cycle-per-SM units are a dimension of their own: converting them to per-second
figures needs a clock, which is a modelling choice left to the consumer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from perfml.errors import InvalidValueError, ResultSchemaError

__all__ = [
    "BOUNDS",
    "QUANTITIES",
    "TIERS",
    "TIER_PREFERENCE",
    "UNITS",
    "CharacterizedValue",
    "Quantity",
]

#: the four tiers, in the order they are listed in a file
TIERS = ("spec", "published", "measured", "calibrated")

#: which tier a consumer should prefer when a quantity has several values: what was
#: observed on the board first, the datasheet last
TIER_PREFERENCE = ("measured", "calibrated", "published", "spec")

#: how a value relates to what the board can do: ``upper`` (a datasheet peak, never
#: exceeded), ``estimate`` (the achieved peak), ``lower`` (a rate some kernel reached,
#: so the board can do at least this much)
BOUNDS = ("estimate", "upper", "lower")

#: unit -> (dimension, factor to the dimension's base unit)
UNITS: Mapping[str, tuple[str, float]] = MappingProxyType(
    {
        "B/s": ("bandwidth", 1.0),
        "GB/s": ("bandwidth", 1e9),
        "B/cycle/SM": ("bandwidth per cycle per SM", 1.0),
        "transactions/cycle/SM": ("transactions per cycle per SM", 1.0),
        "FLOP/s": ("flop rate", 1.0),
        "GFLOP/s": ("flop rate", 1e9),
        "instructions/s": ("instruction rate", 1.0),
        "instructions/cycle/SM": ("instructions per cycle per SM", 1.0),
        "cycles": ("cycles", 1.0),
        "s": ("time", 1.0),
        "ms": ("time", 1e-3),
        "us": ("time", 1e-6),
    }
)


@dataclass(frozen=True)
class Quantity:
    """One characterized quantity: its meaning, the units it may be given in, and its class."""

    name: str
    description: str
    units: tuple[str, ...]
    kind: str  # "bandwidth", "throughput", "latency" or "overhead"


def _q(name: str, description: str, units: tuple[str, ...], kind: str) -> tuple[str, Quantity]:
    return name, Quantity(name, description, units, kind)


_BANDWIDTH = ("B/s", "GB/s", "B/cycle/SM", "transactions/cycle/SM")
_FLOPS = ("FLOP/s", "GFLOP/s", "instructions/s", "instructions/cycle/SM")
_OPS = ("instructions/s", "instructions/cycle/SM")
_LATENCY = ("cycles", "s", "ms", "us")

#: every quantity a characterization may hold (issue 11 §1), by name
QUANTITIES: Mapping[str, Quantity] = MappingProxyType(
    dict(
        [
            _q("dram_bandwidth", "achieved DRAM bandwidth", _BANDWIDTH, "bandwidth"),
            _q("l2_bandwidth", "achieved L2 bandwidth", _BANDWIDTH, "bandwidth"),
            _q("shared_bandwidth", "achieved shared-memory bandwidth", _BANDWIDTH, "bandwidth"),
            _q("constant_bandwidth", "achieved constant-memory bandwidth", _BANDWIDTH, "bandwidth"),
            _q(
                "global_memory_throughput",
                "global-memory throughput an application reached (profiler gld+gst throughput)",
                _BANDWIDTH,
                "bandwidth",
            ),
            _q("fp32_throughput", "FP32 arithmetic throughput (add, sub, mul, fma)", _FLOPS, "throughput"),
            _q("fp64_throughput", "FP64 arithmetic throughput", _FLOPS, "throughput"),
            _q("fp16_throughput", "FP16 (non-tensor) arithmetic throughput", _FLOPS, "throughput"),
            _q("int32_throughput", "INT32 simple (add, sub) throughput", _OPS, "throughput"),
            _q("int32_complex_throughput", "INT32 mul / mad throughput", _OPS, "throughput"),
            _q("int32_popc_throughput", "INT32 population count throughput", _OPS, "throughput"),
            _q("int32_shift_throughput", "INT32 shift throughput", _OPS, "throughput"),
            _q("int32_bitop_throughput", "INT32 bit operations (clz, brev, bfi, bfe) throughput", _OPS, "throughput"),
            _q("int32_rem_throughput", "INT32 remainder throughput", _OPS, "throughput"),
            _q("int64_throughput", "INT64 simple (add, sub) throughput", _OPS, "throughput"),
            _q("sfu_throughput", "special functions (sin, cos, exp, rsqrt, rcp, log) throughput", _OPS, "throughput"),
            _q("l1_latency", "L1 load-to-use latency", _LATENCY, "latency"),
            _q("l2_latency", "L2 load-to-use latency", _LATENCY, "latency"),
            _q("dram_latency", "DRAM load-to-use latency", _LATENCY, "latency"),
            _q("shared_latency", "shared-memory load-to-use latency", _LATENCY, "latency"),
            _q(
                "launch_overhead",
                "fixed time of one kernel call (launch floor): the time of a call doing almost no work",
                ("s", "ms", "us"),
                "overhead",
            ),
        ]
    )
)

#: provenance keys a ``published`` value must carry (the citation)
PUBLISHED_KEYS = ("paper", "seed_file", "table", "line")


def _finite_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultSchemaError(f"{what} must be a number, found {value!r}; fix the characterization file")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidValueError(f"{what} must be finite, found {value!r}; fix or rebuild the characterization")
    return number


@dataclass(frozen=True)
class CharacterizedValue:
    """One number about a board, with unit, tier, source and provenance.

    Parameters
    ----------
    quantity : str
        A key of :data:`QUANTITIES`.
    value : float
        Finite and strictly positive (a latency, a bandwidth, a rate or an overhead is
        never zero or negative).
    unit : str
        One of the quantity's units (:data:`UNITS`).
    tier : str
        One of :data:`TIERS`.
    source : str
        One-line citation (registry fields, paper and table, result set, runtimes file).
    bound : str
        One of :data:`BOUNDS`.
    provenance : mapping
        Structured details (for ``published``: paper, seed_file, table, line, column;
        for ``calibrated``: file, sha256, filters, n_rows, statistic, rows).
    warnings : tuple of str
        Explicit warnings attached when the value was built or checked (e.g. achieved
        above the specification but within the tolerance).

    Raises
    ------
    InvalidValueError
        Unknown quantity, unit, tier or bound; a non-finite or non-positive value; a
        ``published`` value without its citation.
    """

    quantity: str
    value: float
    unit: str
    tier: str
    source: str
    bound: str = "estimate"
    provenance: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.quantity not in QUANTITIES:
            raise InvalidValueError(
                f"unknown characterized quantity {self.quantity!r}; expected one of {sorted(QUANTITIES)}"
            )
        spec = QUANTITIES[self.quantity]
        if self.unit not in spec.units:
            raise InvalidValueError(
                f"{self.quantity}: unit {self.unit!r} is not one of {list(spec.units)}; "
                "give the value in one of them"
            )
        if self.tier not in TIERS:
            raise InvalidValueError(f"{self.quantity}: unknown tier {self.tier!r}; expected one of {list(TIERS)}")
        if self.bound not in BOUNDS:
            raise InvalidValueError(f"{self.quantity}: unknown bound {self.bound!r}; expected one of {list(BOUNDS)}")
        number = _finite_number(self.value, f"{self.quantity} ({self.tier})")
        if number <= 0:
            what = "latency" if spec.kind == "latency" else spec.kind
            article = "an" if what[0] in "aeiou" else "a"
            raise _physical_error(
                f"{self.quantity} ({self.tier}) = {number:g} {self.unit}: {article} {what} must be positive; "
                "the source or the calibration rows are wrong, fix them and rebuild the characterization"
            )
        if not isinstance(self.source, str) or not self.source.strip():
            raise InvalidValueError(f"{self.quantity} ({self.tier}): every value needs a source, found none")
        if self.tier == "published":
            missing = [k for k in PUBLISHED_KEYS if not self.provenance.get(k)]
            if missing:
                raise InvalidValueError(
                    f"{self.quantity}: a published value must cite {', '.join(PUBLISHED_KEYS)}; "
                    f"missing {', '.join(missing)}"
                )
        object.__setattr__(self, "value", number)
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))
        object.__setattr__(self, "warnings", tuple(str(w) for w in self.warnings))

    @property
    def dimension(self) -> str:
        """The unit's dimension (values of one dimension are comparable)."""
        return UNITS[self.unit][0]

    def to_unit(self, unit: str) -> float:
        """The value in ``unit`` (same dimension only).

        Raises
        ------
        InvalidValueError
            ``unit`` is unknown or of another dimension (e.g. per-cycle-per-SM to per-second).
        """
        if unit not in UNITS or UNITS[unit][0] != self.dimension:
            raise InvalidValueError(
                f"{self.quantity}: cannot convert {self.unit!r} to {unit!r} (dimensions "
                f"{self.dimension!r} and {UNITS.get(unit, ('unknown',))[0]!r}); pick a unit of the same dimension"
            )
        return self.value * UNITS[self.unit][1] / UNITS[unit][1]

    def with_warnings(self, *warnings: str) -> CharacterizedValue:
        """A copy with ``warnings`` appended."""
        from dataclasses import replace

        return replace(self, warnings=self.warnings + tuple(warnings))

    def to_dict(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity,
            "value": self.value,
            "unit": self.unit,
            "tier": self.tier,
            "bound": self.bound,
            "source": self.source,
            "provenance": _plain(self.provenance),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Any) -> CharacterizedValue:
        """Rebuild from :meth:`to_dict` output, with typed errors for any malformed field."""
        if not isinstance(data, Mapping):
            raise ResultSchemaError(
                f"a characterized value is a JSON object, found {type(data).__name__}; "
                "rebuild the file with `perfml characterize`"
            )
        for key, kind in (("quantity", str), ("unit", str), ("tier", str), ("source", str)):
            if not isinstance(data.get(key), kind):
                raise ResultSchemaError(
                    f"characterized value field {key!r} must be a string, found {data.get(key)!r}"
                )
        provenance = data.get("provenance", {})
        warnings = data.get("warnings", [])
        if not isinstance(provenance, Mapping) or not isinstance(warnings, list):
            raise ResultSchemaError(
                "characterized value: 'provenance' must be an object and 'warnings' a list"
            )
        bound = data.get("bound", "estimate")
        if not isinstance(bound, str):
            raise ResultSchemaError(f"characterized value field 'bound' must be a string, found {bound!r}")
        return cls(
            quantity=data["quantity"],
            value=_finite_number(data.get("value"), f"{data['quantity']} value"),
            unit=data["unit"],
            tier=data["tier"],
            source=data["source"],
            bound=bound,
            provenance=dict(provenance),
            warnings=tuple(str(w) for w in warnings),
        )


def _physical_error(message: str) -> Exception:
    from perfml.errors import PhysicalLimitError

    return PhysicalLimitError(message)


def _plain(value: Any) -> Any:
    """JSON-ready copy of nested mappings / sequences (MappingProxyType is not JSON)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    return value
