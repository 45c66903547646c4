"""The seams of the criteria model: characterization functions and what it needs of a board.

Characterization functions F_Divergence, F_SHMEM, F_DRAMThr, F_ARITHThr (seed 000,
Sec. III-B) come from an object with methods ``f_divergence(x)``, ``f_shmem(x)``,
``f_dram_thr(x)``, ``f_arith_thr(x)`` (e.g. :class:`perfml.characterize.Characterization`);
without one the identity (F = 1) is used and :func:`characterization_label` says so.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BoardLike",
    "CharacterizationLike",
    "IdentityCharacterization",
    "characterization_label",
    "default_characterization",
]

@runtime_checkable
class CharacterizationLike(Protocol):
    """Characterization functions of Sec. III-B (device-specific weights)."""

    def f_divergence(self, x: float) -> float: ...
    def f_shmem(self, x: float) -> float: ...
    def f_dram_thr(self, x: float) -> float: ...
    def f_arith_thr(self, x: float) -> float: ...


class BoardLike(Protocol):
    """What the criteria need of a board: a :class:`perfml.boards.Board` satisfies it.

    Fields used: ``sms``, ``warp_size``, ``max_warps_per_sm``, ``fp32_cores_per_sm``,
    ``boost_clock_mhz``, ``memory_bandwidth_gbs`` and the occupancy-calculator limits
    read by :func:`perfml.boards.occupancy`.
    """

    name: str

    def require(self, field_name: str, *, needed_for: str | None = None) -> Any: ...


class IdentityCharacterization:
    """F = 1 everywhere: no microbenchmark characterization applied."""

    is_identity = True

    def f_divergence(self, x: float) -> float:  # noqa: D102
        return 1.0

    def f_shmem(self, x: float) -> float:  # noqa: D102
        return 1.0

    def f_dram_thr(self, x: float) -> float:  # noqa: D102
        return 1.0

    def f_arith_thr(self, x: float) -> float:  # noqa: D102
        return 1.0


def default_characterization() -> CharacterizationLike:
    """``perfml.characterize.Characterization.identity()`` if present, else F = 1."""
    try:
        from perfml.characterize import Characterization  # type: ignore[import-not-found]

        return Characterization.identity()
    except (ImportError, AttributeError):
        return IdentityCharacterization()


def characterization_label(char: CharacterizationLike) -> str:
    """Plain words saying which characterization weights the criteria.

    The identity is recognised by ``is_identity`` or by all four functions returning 1
    on a few probe points.
    """
    probes = (0.1, 0.5, 1.0)
    is_identity = bool(getattr(char, "is_identity", False)) or all(
        math.isclose(float(f(x)), 1.0)
        for f in (char.f_divergence, char.f_shmem, char.f_dram_thr, char.f_arith_thr)
        for x in probes
    )
    name = getattr(char, "board", None) or getattr(char, "name", None) or type(char).__name__
    source = getattr(char, "source", None)
    given = not getattr(char, "is_identity", False) and name not in ("identity", "IdentityCharacterization")
    if is_identity and given:  # a file was read, but its functions are all 1: say so, not "none applied"
        return (
            f"the characterization of {name}" + (f" ({source})" if source else "") + " was read; its "
            "functions are F_Divergence = F_SHMEM = F_DRAMThr = F_ARITHThr = 1 (no sweep of the board "
            "measured them), and the criteria read only these functions, not its rates or latencies: "
            "characterize the board from its sweeps (perfml characterize RESULT_DIR) for measured ones"
        )
    if is_identity:
        return (
            "identity (F_Divergence = F_SHMEM = F_DRAMThr = F_ARITHThr = 1): no microbenchmark "
            "characterization of this board applied"
        )
    return f"characterization functions of {name}" + (f" ({source})" if source else "")
