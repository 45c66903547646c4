"""The ``spec`` tier: what the board registry says a board can do at most.

Every value is derived from registry fields by the formulas of :mod:`perfml.boards`
(:func:`~perfml.boards.peak_flops`, :func:`~perfml.boards.peak_bandwidth`) or read from
one field; its ``source`` names the fields and the registry's own source for them. A
field the registry leaves empty gives no value (never a guess). Spec values are upper
bounds (``bound = "upper"``).
"""

from __future__ import annotations

from typing import Any

from perfml.characterize.values import CharacterizedValue
from perfml.errors import MissingBoardParameterError

__all__ = ["rate_equivalents", "spec_values"]

#: bytes one shared-memory bank serves per cycle (32-bit banks)
_BANK_WIDTH_BYTES = 4

#: quantity -> (precision of peak_flops, registry field of the per-SM pipe width)
_FLOP_PIPES = {
    "fp32_throughput": ("fp32", "fp32_cores_per_sm"),
    "fp64_throughput": ("fp64", "fp64_units_per_sm"),
    "fp16_throughput": ("fp16", "fp16_units_per_sm"),
}


def _cite(board: Any, *fields: str) -> str:
    parts = []
    for name in fields:
        src = board.value_source(name) if hasattr(board, "value_source") else None
        parts.append(f"{name} ({src})" if src else name)
    return f"registry {board.name}: " + ", ".join(parts)


def _value(board, quantity, value, unit, formula, fields) -> CharacterizedValue:
    return CharacterizedValue(
        quantity=quantity,
        value=float(value),
        unit=unit,
        tier="spec",
        bound="upper",
        source=f"registry {board.name}: {formula}",
        provenance={"board": board.name, "formula": formula, "fields": _cite(board, *fields)},
    )


def spec_values(board: Any) -> tuple[CharacterizedValue, ...]:
    """The ``spec`` tier of ``board`` (a :class:`perfml.boards.Board`).

    * ``dram_bandwidth`` [B/s]: :func:`perfml.boards.peak_bandwidth` (``memory_bandwidth_gbs``,
      or ``2 x memory_clock_mhz x bus_width_bits / 8``);
    * ``fp32/fp64/fp16_throughput`` [FLOP/s]: :func:`perfml.boards.peak_flops`
      (``sms x units_per_sm x boost_clock_mhz x 2``, an FMA counts 2, CUDA C Programming
      Guide throughput table) and [instructions/cycle/SM]: the pipe width field;
    * ``sfu_throughput`` [instructions/cycle/SM]: ``sfu_per_sm``, and [instructions/s]:
      ``sms x sfu_per_sm x boost_clock_mhz``;
    * ``shared_bandwidth`` [B/cycle/SM]: ``shared_banks x 4`` (32-bit banks).
    """
    from perfml import boards

    out: list[CharacterizedValue] = []
    try:
        bandwidth = boards.peak_bandwidth(board)
    except MissingBoardParameterError:
        pass
    else:
        if board.memory_bandwidth_gbs is not None:
            formula, fields = "memory_bandwidth_gbs x 1e9", ("memory_bandwidth_gbs",)
        else:
            formula, fields = "2 x memory_clock_mhz x 1e6 x bus_width_bits / 8", ("memory_clock_mhz", "bus_width_bits")
        out.append(_value(board, "dram_bandwidth", bandwidth, "B/s", formula, fields))
    for quantity, (precision, pipe) in _FLOP_PIPES.items():
        try:
            flops = boards.peak_flops(board, precision)
        except MissingBoardParameterError:
            flops = None
        if flops:
            out.append(_value(board, quantity, flops, "FLOP/s", f"sms x {pipe} x boost_clock_mhz x 1e6 x 2",
                              ("sms", pipe, "boost_clock_mhz")))
        width = getattr(board, pipe, None)
        if width:
            out.append(_value(board, quantity, width, "instructions/cycle/SM", pipe, (pipe,)))
    if board.sfu_per_sm:
        out.append(_value(board, "sfu_throughput", board.sfu_per_sm, "instructions/cycle/SM", "sfu_per_sm", ("sfu_per_sm",)))
        if board.sms and board.boost_clock_mhz:
            out.append(_value(board, "sfu_throughput", board.sms * board.sfu_per_sm * board.boost_clock_mhz * 1e6,
                              "instructions/s", "sms x sfu_per_sm x boost_clock_mhz x 1e6",
                              ("sms", "sfu_per_sm", "boost_clock_mhz")))
    if board.shared_banks:
        out.append(_value(board, "shared_bandwidth", board.shared_banks * _BANK_WIDTH_BYTES, "B/cycle/SM",
                          "shared_banks x 4 bytes", ("shared_banks",)))
    return tuple(out)


#: per-SM-per-cycle unit -> the per-second unit of the same count (x sms x boost clock)
_PER_SECOND = {"instructions/cycle/SM": "instructions/s", "B/cycle/SM": "B/s"}


def rate_equivalents(board: Any, specs) -> tuple[CharacterizedValue, ...]:
    """The per-cycle-per-SM values of ``specs`` (the board's spec tier) restated per second:
    ``x sms x boost_clock_mhz x 1e6``.

    Not part of the spec tier a characterization shows: they let the physical limits
    (:func:`perfml.characterize.limits.check_physical_limits`) hold an achieved rate given
    per second against a pipe width the registry gives per cycle (an FP32 rate of 1e15
    instructions/s, 30x an H100's, met no specification of its dimension and was used as
    it was). Only this direction: an SM pipe (and shared memory) runs on the SM clock, so
    the boost clock bounds its rate per second; DRAM runs on its own clock, and its bytes per
    SM cycle grow as the SM clock falls during a measurement, so the datasheet's bytes per
    second give no bound per SM cycle. Empty where the registry lacks the SM count or the
    boost clock.
    """
    if not getattr(board, "sms", None) or not getattr(board, "boost_clock_mhz", None):
        return ()
    scale = board.sms * board.boost_clock_mhz * 1e6  # SM cycles per second
    out = []
    for spec in specs:
        unit = _PER_SECOND.get(spec.unit)
        if unit is None or any(o.quantity == spec.quantity and o.unit == unit for o in specs):
            continue  # not per cycle, or the registry states it per second already
        formula = f"{spec.provenance.get('formula', spec.source)} x sms x boost_clock_mhz x 1e6"
        out.append(_value(board, spec.quantity, spec.value * scale, unit, formula, ("sms", "boost_clock_mhz")))
    return tuple(out)
