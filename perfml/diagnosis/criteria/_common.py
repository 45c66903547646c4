"""What every criterion family shares: the result types and the view of one profile row.

:class:`Criterion` and :class:`CriteriaReport` are the results; :class:`ProfileContext`
reads the terms of one ``profiles_nca`` row through :mod:`perfml.diagnosis.metrics`
and turns an unsupported term or a missing value into a :class:`Criterion` status
(seed 000, Sec. IV: a criterion the profiles cannot give is never reported as 0 or 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from perfml.diagnosis import metrics as M
from perfml.diagnosis._occupancy import Residency
from perfml.diagnosis.criteria._characterization import BoardLike, CharacterizationLike
from perfml.errors import MissingMetricError

__all__ = ["CriteriaReport", "Criterion", "ProfileContext", "clip01"]


def clip01(x: float) -> float:
    """``x`` clipped to [0, 1], the range of every criterion."""
    return min(1.0, max(0.0, x))


@dataclass(frozen=True)
class Criterion:
    """One criterion of one kernel profile.

    ``value`` is in [0, 1] when ``status == "ok"``, else ``None``; ``note`` says why a
    criterion is unsupported / not applicable, or how an approximation was made.
    """

    name: str
    value: float | None
    status: str = "ok"
    note: str = ""
    approximate: bool = False

    @property
    def ok(self) -> bool:
        """Whether the criterion has a value."""
        return self.status == "ok"


@dataclass(frozen=True)
class CriteriaReport:
    """All criteria of one profile row, plus the shares the potential speedups need."""

    board: str
    compute_capability: str
    criteria: Mapping[str, Criterion]
    #: L1%, L2%, ShMem% of Sec. V (nvprof utilization level / 10), None if unsupported
    shares: Mapping[str, float | None] = field(default_factory=dict)
    #: StallSync (fraction) and the average fraction of warp slots active, Sec. V
    stall_sync: float | None = None
    warp_activity: float | None = None
    residency: Residency | None = None
    characterization: str = ""

    def value(self, name: str) -> float | None:
        """Value of a criterion, ``None`` when it has none."""
        return self.criteria[name].value


#: Terms the criteria divide by: a row must hold a positive value.
POSITIVE_TERMS = frozenset({"elapsed_cycles_sm"})


@dataclass(frozen=True)
class ProfileContext:
    """One profile row on one board: its terms, the board's numbers, the weights.

    Attributes
    ----------
    row : mapping
        The ``profiles_nca`` row.
    board : BoardLike
    board_name, cc : str
        Board name (for messages) and compute-capability key of the row.
    char : CharacterizationLike
        Characterization functions (F = 1 for the identity).
    strict : bool
        Raise on an empty needed value instead of reporting ``missing``.
    warp_size, sms, clock_mhz, peak_bw_gbs, fp32_cores_per_sm
        Board numbers the criteria use (``boost_clock_mhz``, ``memory_bandwidth_gbs``).
    residency_of : callable
        ``residency_of(row, board)`` gives the theoretical residency of the row's launch;
        called once, the first time :attr:`residency` is read.
    """

    row: Any
    board: BoardLike
    board_name: str
    cc: str
    char: CharacterizationLike
    strict: bool
    warp_size: int
    sms: int
    clock_mhz: float
    peak_bw_gbs: float
    fp32_cores_per_sm: int
    residency_of: Callable[[Any, BoardLike], Residency]

    @cached_property
    def residency(self) -> Residency:
        """Theoretical residency of the row's launch on the board (computed once)."""
        return self.residency_of(self.row, self.board)

    def term(self, name: str) -> float:
        """Value of a formula term of :data:`perfml.diagnosis.metrics.TERMS` in this row.

        A term every criterion divides by (:data:`POSITIVE_TERMS`: the kernel's elapsed
        cycles) must be positive: a profile row with 0 elapsed cycles is refused, naming the
        row, instead of failing with a division by zero.
        """
        value = M.term_value(self.row, name, self.cc, board=self.board_name)
        if name in POSITIVE_TERMS and not value > 0:
            from perfml.errors import DatasetSchemaError

            what = ", ".join(f"{k} {self.row.get(k)}" for k in ("app_id", "input_size") if k in self.row)
            raise DatasetSchemaError(
                f"profile of board {self.board_name} ({what}): {M.TERMS[name].description} is {value!r}; a kernel "
                "runs for at least one cycle: fix or drop the row of the profile table")
        return value

    def supported(self, name: str) -> bool:
        """Whether profiles of this compute capability hold the term."""
        return M.TERMS[name].supported(self.cc)

    def unsupported(self, criterion: str, *terms: str) -> Criterion:
        """The criterion, marked unsupported, naming the terms this compute capability lacks."""
        missing = [t for t in terms if not M.TERMS[t].supported(self.cc)]
        return Criterion(
            criterion,
            None,
            "unsupported",
            f"compute-capability {self.cc} profiles hold no "
            f"{', '.join(M.TERMS[t].description for t in missing)}",
        )

    def guarded(self, criterion: str, compute: Callable[[], Criterion]) -> Criterion:
        """``compute()``, or (``strict=False``) a ``missing`` criterion on an empty value."""
        try:
            return compute()
        except MissingMetricError as exc:
            if self.strict:
                raise
            return Criterion(criterion, None, "missing", str(exc))

    def optional(self, compute: Callable[[], float]) -> float | None:
        """``compute()``, or (``strict=False``) None when a needed value is empty."""
        try:
            return compute()
        except MissingMetricError:
            if self.strict:
                raise
            return None
