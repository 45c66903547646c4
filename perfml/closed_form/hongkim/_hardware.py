"""Hardware parameters of the MWP/CWP model: :class:`HongKimHardware` and its data.

The numbers of the paper's boards (GTX 280, 8800 GT) and the latencies
:meth:`HongKimHardware.from_board` falls back on live in
``perfml/data/hongkim_hardware.toml``, each with its source; this module reads them.

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", Proc. 36th International Symposium on Computer
   Architecture (ISCA), pp. 152-163, 2009.
.. [2] H. Kim, "Performance Analysis Models and Tools" (slides), seed 002 of perfml
   (``../shared/seeds/002_018e9370bc0d26c6.txt``).
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Mapping

from perfml.closed_form._data_files import read_packaged_toml, sourced_values
from perfml.errors import DatasetSchemaError, MissingBoardParameterError

__all__ = ["HARDWARE_FIELDS", "HongKimHardware", "PaperBoard", "paper_board", "paper_boards"]

_FILE = "hongkim_hardware.toml"
#: Numeric fields of :class:`HongKimHardware`, as the data file names them.
HARDWARE_FIELDS: tuple[str, ...] = (
    "mem_ld", "departure_del_uncoal", "departure_del_coal", "mem_bandwidth_gbs", "freq_ghz",
    "n_sm", "issue_cycles", "load_bytes_per_warp", "threads_per_warp",
)
_LATENCY_FIELDS = ("mem_ld", "departure_del_uncoal", "departure_del_coal")


@dataclass(frozen=True)
class PaperBoard:
    """One board of ``hongkim_hardware.toml``: values, their sources and verified flags."""

    name: str
    values: Mapping[str, float]
    sources: Mapping[str, str]
    verified: Mapping[str, bool]
    source: str


@functools.lru_cache(maxsize=1)
def _read() -> tuple[dict[str, PaperBoard], str]:
    doc = read_packaged_toml(_FILE, format="perfml-hongkim-hardware", version=1)
    boards = {}
    for name, table in doc.get("boards", {}).items():
        values, sources = sourced_values(table, where=f"{_FILE} [boards.{name!r}]",
                                         fields=HARDWARE_FIELDS)
        boards[name] = PaperBoard(
            name=name,
            values=MappingProxyType(values),
            sources=MappingProxyType(sources),
            verified=MappingProxyType({k: bool(table[k].get("verified", False))
                                       for k in HARDWARE_FIELDS}),
            source=str(table.get("source", "")),
        )
    default = doc.get("latency_defaults", {}).get("board")
    if default not in boards:
        raise DatasetSchemaError(
            f"{_FILE}: [latency_defaults] board must name one of {sorted(boards)}, found "
            f"{default!r}; fix the data file."
        )
    return boards, default


def paper_boards() -> tuple[str, ...]:
    """Names of the boards in ``perfml/data/hongkim_hardware.toml``."""
    return tuple(_read()[0])


def paper_board(name: str) -> PaperBoard:
    """Values, sources and verified flags of one board of the data file.

    Raises
    ------
    DatasetSchemaError
        If the data file has no such board.
    """
    boards = _read()[0]
    if name not in boards:
        raise DatasetSchemaError(
            f"{_FILE} has no board {name!r}; known: {sorted(boards)}."
        )
    return boards[name]


def _default_latencies() -> dict[str, float]:
    boards, default = _read()
    return {k: boards[default].values[k] for k in _LATENCY_FIELDS}


def _from_data(name: str, overrides: Mapping[str, Any]) -> "HongKimHardware":
    board = paper_board(name)
    values: dict[str, Any] = dict(board.values)
    for integer in ("n_sm", "threads_per_warp"):
        values[integer] = int(values[integer])
    for real in set(HARDWARE_FIELDS) - {"n_sm", "threads_per_warp"}:
        values[real] = float(values[real])
    values.update(name=name, source=board.source)
    values.update(overrides)
    return HongKimHardware(**values)


@dataclass(frozen=True)
class HongKimHardware:
    """Hardware parameters of the MWP/CWP model for one board.

    Parameters
    ----------
    mem_ld : float
        ``Mem_LD``: DRAM access latency of one memory warp instruction, in SM cycles.
    departure_del_uncoal : float
        ``Departure_del_uncoal``: cycles between two memory transactions of an uncoalesced
        warp instruction.
    departure_del_coal : float
        ``Departure_del_coal``: cycles between two coalesced warp memory requests.
    mem_bandwidth_gbs : float
        ``Mem_Bandwidth``: peak DRAM bandwidth, GB/s.
    freq_ghz : float
        ``Freq``: SM (shader) clock in GHz; also converts cycles to time.
    n_sm : int
        ``#SM``: streaming multiprocessors.
    issue_cycles : float, default 4
        ``#Issue_cycles``: cycles to issue one warp instruction (32 threads on 8 SPs of a
        GT200/G80 SM = 4 cycles, as in the paper).
    load_bytes_per_warp : float, default 128
        ``Load_bytes_per_warp``: bytes one warp memory instruction moves (32 threads x 4 B).
    threads_per_warp : int, default 32
        ``#Threads_per_warp``.
    name : str, default ""
        Board name, for messages.
    source : str, default ""
        Where the numbers came from.

    Notes
    -----
    Only ``mem_bandwidth_gbs``, ``freq_ghz``, ``n_sm`` and ``threads_per_warp`` are board
    specifications (see :meth:`from_board`); the latencies and departure delays are
    measured with microbenchmarks (as the paper did) and must be given for each board.
    :meth:`gtx280` and :meth:`geforce_8800gt` build the values the paper used from
    ``perfml/data/hongkim_hardware.toml``, where each number carries its source (and is
    marked unverified: the repository's seed 002 holds the slides, not the paper's tables).
    """

    mem_ld: float
    departure_del_uncoal: float
    departure_del_coal: float
    mem_bandwidth_gbs: float
    freq_ghz: float
    n_sm: int
    issue_cycles: float = 4.0
    load_bytes_per_warp: float = 128.0
    threads_per_warp: int = 32
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name in ("name", "source"):
                continue
            value = getattr(self, f.name)
            if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise MissingBoardParameterError(
                    f"HongKimHardware{self._label()}: {f.name} must be a number, found "
                    f"{value!r}; pass {f.name}=... explicitly."
                )
            if not math.isfinite(value) or value <= 0:
                raise ValueError(
                    f"HongKimHardware{self._label()}: {f.name} must be finite and > 0, "
                    f"found {value!r}."
                )

    def _label(self) -> str:
        return f" ({self.name})" if self.name else ""

    @classmethod
    def gtx280(cls, **overrides: Any) -> "HongKimHardware":
        """GeForce GTX 280 as parameterized in the paper.

        The ``"GTX-280"`` table of ``perfml/data/hongkim_hardware.toml``: 30 SMs,
        1.3 GHz processor clock, 141.7 GB/s (the paper's GPU specification table);
        Mem_LD = 450 cycles, Departure_del_uncoal = 40, Departure_del_coal = 4 cycles
        (the paper's model parameter table, from microbenchmarks). Not in the seeds:
        marked unverified there. Keyword arguments override fields.
        """
        return _from_data("GTX-280", overrides)

    @classmethod
    def geforce_8800gt(cls, **overrides: Any) -> "HongKimHardware":
        """GeForce 8800 GT as parameterized in the paper.

        The ``"8800GT"`` table of ``perfml/data/hongkim_hardware.toml``: 14 SMs,
        1.5 GHz processor clock, 57.6 GB/s; Mem_LD = 420 cycles, Departure_del_uncoal
        = 10, Departure_del_coal = 4 cycles (unverified, as above). Keyword arguments
        override fields.
        """
        return _from_data("8800GT", overrides)

    @classmethod
    def from_board(
        cls,
        board: Any,
        *,
        mem_ld: float | None = None,
        departure_del_uncoal: float | None = None,
        departure_del_coal: float | None = None,
        **overrides: Any,
    ) -> "HongKimHardware":
        """Build the parameters of a perfml board.

        Takes ``n_sm`` from ``board.sms``, ``freq_ghz`` from ``board.boost_clock_mhz`` (or
        ``board.base_clock_mhz`` when no boost clock is known), ``mem_bandwidth_gbs`` from
        ``board.memory_bandwidth_gbs`` and ``threads_per_warp`` from ``board.warp_size``.
        Any object with these attributes works (e.g. a ``perfml.boards`` board).

        Parameters
        ----------
        board : object
            Board with the attributes above.
        mem_ld, departure_del_uncoal, departure_del_coal : float, optional
            Latency parameters, which no spec sheet gives. When None, those of the
            board named by ``[latency_defaults]`` in ``perfml/data/hongkim_hardware.toml``:
            the paper's GTX 280 values (450, 40, 4 cycles; Hong & Kim 2009, see
            :meth:`gtx280`). Measure the board's own values for anything newer.
        **overrides
            Any other :class:`HongKimHardware` field; an override also fills a board
            attribute that is missing.

        Raises
        ------
        MissingBoardParameterError
            If the board leaves a needed attribute empty (None) and no override is given.
        """
        name = str(getattr(board, "name", "") or overrides.get("name", "") or "")
        taken: dict[str, Any] = {}
        clock = getattr(board, "boost_clock_mhz", None)
        if clock is None:
            clock = getattr(board, "base_clock_mhz", None)
        from_spec = {
            "n_sm": (getattr(board, "sms", None), "sms"),
            "freq_ghz": (None if clock is None else clock / 1000.0,
                         "boost_clock_mhz or base_clock_mhz"),
            "mem_bandwidth_gbs": (getattr(board, "memory_bandwidth_gbs", None),
                                  "memory_bandwidth_gbs"),
            "threads_per_warp": (getattr(board, "warp_size", None), "warp_size"),
        }
        for field_name, (value, attribute) in from_spec.items():
            if field_name in overrides:
                continue
            if value is None:
                raise MissingBoardParameterError(
                    f"board {name or board!r}: the Hong & Kim model needs {attribute}, which "
                    f"the board leaves empty; fill it in the board registry or pass "
                    f"{field_name}=... to HongKimHardware.from_board."
                )
            taken[field_name] = value
        for integer in ("n_sm", "threads_per_warp"):
            if integer in taken:
                taken[integer] = int(taken[integer])
        latencies = _default_latencies()
        given = {"mem_ld": mem_ld, "departure_del_uncoal": departure_del_uncoal,
                 "departure_del_coal": departure_del_coal}
        latencies.update({k: v for k, v in given.items() if v is not None})
        values = dict(
            **latencies,
            name=name,
            source=(f"board registry ({name}); latencies passed to from_board, else those of "
                    "hongkim_hardware.toml [latency_defaults]"),
        )
        values.update(taken)
        values.update(overrides)
        return cls(**values)
