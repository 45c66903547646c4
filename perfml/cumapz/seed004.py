"""Validation of CuMAPz on the motivating example and the transpose of seed 004.

Kim & Shrivastava (2011), Sec. 3, Tables I-III: measured times on a Tesla C1060 of
the kernel of Figs. 1-2 and its variants; :func:`validate_seed004` computes MPE for
each shipped variant description and reports the Spearman rank correlation between
MPE and measured performance (1 / time). Sec. 6.1, Transpose: :func:`transpose_sequence`
computes MPE along naive -> coalesced -> padded -> diagonal -> diagonal unpadded and
checks each step against the direction the paper reports. The model is not adjusted
per variant; disagreements are listed, not hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from perfml.cumapz.device import CumapzDevice
from perfml.cumapz.examples import resolve_description
from perfml.cumapz.mpe import CumapzResult, analyze
from perfml._files import read_versioned
from perfml.errors import DatasetSchemaError

__all__ = [
    "SEED004_SCHEMA",
    "load_seed004_tables",
    "primary_times",
    "validate_seed004",
    "transpose_sequence",
    "TRANSPOSE_STEPS",
]

SEED004_SCHEMA = "perfml-seed-table"

#: (description, direction of performance versus the previous step, what the paper says)
TRANSPOSE_STEPS: tuple[tuple[str, str | None, str], ...] = (
    ("transpose_1_naive", None, "starting point: strided global writes"),
    ("transpose_2_coalesced", "up",
     "uncoalesced accesses substituted with coalesced ones using shared memory (Sec. 6.1)"),
    ("transpose_3_padded", "up",
     "bank conflicts removed by padding; 'does not bring much performance improvement' "
     "because of channel skew (Sec. 6.1)"),
    ("transpose_4_diagonal", "up", "channel skew removed by diagonal block ordering (Sec. 6.1)"),
    ("transpose_5_diagonal_unpadded", "down",
     "padding rolled back: 'bank conflict appears again at the last step' (Sec. 6.1, Fig. 8d)"),
)


def load_seed004_tables() -> dict[str, Any]:
    """Read ``perfml/data/seed004_tables.toml`` (measured times with seed line numbers)."""
    return read_versioned(resources.files("perfml") / "data" / "seed004_tables.toml",
                          SEED004_SCHEMA, (1,), error=DatasetSchemaError)


def primary_times(data: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """One measured cell per variant description (the cells marked ``primary``)."""
    data = data or load_seed004_tables()
    out: dict[str, dict[str, Any]] = {}
    for cell in data["time"]:
        if cell["primary"]:
            if cell["variant"] in out:
                raise DatasetSchemaError(f"two primary cells for variant {cell['variant']!r}")
            out[cell["variant"]] = cell
    return out


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


@dataclass(frozen=True)
class VariantRow:
    """One variant: its measured cell and its CuMAPz result."""

    variant: str
    table: str
    line: int
    time_ms: float
    result: CumapzResult

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "variant": self.variant,
            "table": self.table,
            "seed_line": self.line,
            "time_ms": self.time_ms,
            "performance_per_s": 1000.0 / self.time_ms,
            "mpe": r.mpe,
            "data_reuse": r.data_reuse,
            "lat_hiding": r.lat_hiding,
            "bw_util": r.bw_util,
            "ch_skew": r.ch_skew,
            "shm_eff": r.shm_eff,
            "branch_eff": r.branch_eff,
        }


def _discordant(rows: list[VariantRow]) -> list[dict[str, Any]]:
    """Pairs whose MPE order contradicts the measured order (MPE ties are listed too)."""
    bad = []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            faster, slower = (a, b) if a.time_ms < b.time_ms else (b, a)
            if faster.time_ms == slower.time_ms:
                continue
            if faster.result.mpe <= slower.result.mpe:
                bad.append({
                    "faster": faster.variant, "faster_ms": faster.time_ms, "faster_mpe": faster.result.mpe,
                    "slower": slower.variant, "slower_ms": slower.time_ms, "slower_mpe": slower.result.mpe,
                    "tie": bool(np.isclose(faster.result.mpe, slower.result.mpe)),
                })
    return bad


def _with_params(descriptions: list, params: dict[str, int] | None) -> list:
    """Each description with the ``--set`` values of its own parameters; a name none of them has is refused."""
    from perfml.errors import KernelDescriptionError

    if not params:
        return descriptions
    known = set().union(*(d.params for d in descriptions))
    unknown = sorted(set(params) - known)
    if unknown:
        raise KernelDescriptionError(
            f"--set {', '.join(unknown)}: no description of this validation has such a parameter; "
            f"their parameters are {', '.join(sorted(known)) or '(none)'}")
    return [d.with_params({k: v for k, v in params.items() if k in d.params}) for d in descriptions]


def validate_seed004(
    device: CumapzDevice,
    *,
    no_buffer_policy: str = "literal",
    params: dict[str, int] | None = None,
    max_accesses: int | None = None,
) -> dict[str, Any]:
    """MPE of every seed 004 variant and its rank correlation with 1 / measured time.

    Returns a JSON-ready dict: per-variant rows, ``spearman`` over all variants,
    ``spearman_shared_only`` over the variants that use shared memory (the only kind
    the paper's validation models), Pearson for reference, and the discordant pairs.
    """
    cells = primary_times()
    ordered = sorted(cells.items(), key=lambda kv: kv[1]["time_ms"])
    descriptions = _with_params([resolve_description(variant) for variant, _ in ordered], params)
    rows = []
    for (variant, cell), desc in zip(ordered, descriptions):
        rows.append(VariantRow(variant, cell["table"], cell["line"], cell["time_ms"],
                               analyze(desc, device, no_buffer_policy=no_buffer_policy,
                                       max_accesses=max_accesses)))
    mpe = np.array([r.result.mpe for r in rows])
    perf = np.array([1.0 / r.time_ms for r in rows])
    shared = np.array(["noshm" not in r.variant for r in rows])
    return {
        "board": device.board,
        "no_buffer_policy": no_buffer_policy,
        "n_variants": len(rows),
        "spearman": _spearman(mpe, perf),
        "spearman_shared_only": _spearman(mpe[shared], perf[shared]),
        "pearson": _pearson(mpe, perf),
        "variants": [r.to_dict() for r in rows],
        "discordant_pairs": _discordant(rows),
        "source": "times: perfml/data/seed004_tables.toml (seed 004 Tables I-III)",
    }


def transpose_sequence(
    device: CumapzDevice,
    *,
    no_buffer_policy: str = "literal",
    params: dict[str, int] | None = None,
    max_accesses: int | None = None,
) -> dict[str, Any]:
    """MPE along the Sec. 6.1 transpose sequence, each step checked against the paper."""
    steps = []
    prev: float | None = None
    descriptions = _with_params([resolve_description(name) for name, _, _ in TRANSPOSE_STEPS], params)
    for (name, direction, why), desc in zip(TRANSPOSE_STEPS, descriptions):
        r = analyze(desc, device, no_buffer_policy=no_buffer_policy, max_accesses=max_accesses)
        moved = None if prev is None else ("up" if r.mpe > prev else "down" if r.mpe < prev else "flat")
        steps.append({
            "description": name,
            "mpe": r.mpe,
            "data_reuse": r.data_reuse,
            "lat_hiding": r.lat_hiding,
            "bw_util": r.bw_util,
            "ch_skew": r.ch_skew,
            "shm_eff": r.shm_eff,
            "branch_eff": r.branch_eff,
            "paper_direction": direction,
            "mpe_direction": moved,
            "agrees": None if direction is None else moved == direction,
            "paper_says": why,
        })
        prev = r.mpe
    return {
        "board": device.board,
        "no_buffer_policy": no_buffer_policy,
        "steps": steps,
        "all_agree": all(s["agrees"] for s in steps if s["agrees"] is not None),
    }
