"""A backend that serves recorded sweep results instead of running kernels.

Everything above the backend seam (sweep runner, result sets, characterization, CLI)
runs unchanged on a machine without a GPU: ``perfml sweep run SPEC --backend replay
--replay RESULTS``. A launch is looked up by :attr:`Launch.key` (family, parameters,
grid, block, dynamic shared memory); repetition counts do not take part in the lookup,
and the recorded repetition times are served as they were measured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfml.measure.backend import Backend, DeviceInfo, Launch, Measurement
from perfml.errors import ReplayMissError

__all__ = ["ReplayBackend", "ReplayMissError"]

_ATTRIBUTE_COLUMNS = (
    "num_regs",
    "shared_size_bytes",
    "local_size_bytes",
    "const_size_bytes",
    "max_threads_per_block",
)


def _optional(value: Any, kind: type) -> Any:
    """``kind(value)``, or ``None`` for a Parquet null (None, NaN, NA)."""
    import pandas as pd

    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):  # array-like values are never null here
        pass
    return kind(value)


class ReplayBackend(Backend):
    """Serve measurements from a recorded result set directory.

    Parameters
    ----------
    path : path-like
        A result set written by ``perfml sweep run`` (see :mod:`perfml.measure.store`).

    Attributes
    ----------
    synthetic : bool
        Whether the recording is synthetic (generated, not measured); results produced
        from it inherit the flag.
    timing : str
        How the recording was timed (:data:`perfml.measure.kernel_timing.TIMINGS`);
        results produced from it inherit it.
    """

    name = "replay"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from perfml.measure.store import ResultSet

        self.path = Path(path)
        self._set = ResultSet.open(self.path)
        self.synthetic = self._set.synthetic
        self.timing = self._set.timing  # the recorded times are served as they were timed
        # per kernel family, the fingerprints (sidecar and CUDA source) it was recorded with
        self.recorded_kernels: dict[str, set[str]] = {}
        for plan in self._set.plans().values():
            for family, fingerprint in plan["kernels"].items():
                self.recorded_kernels.setdefault(family, set()).add(fingerprint)
        frame = self._set.read()
        self._rows: dict[str, Mapping[str, Any]] = {}
        # the latest recording of a launch wins (parts are appended in time order)
        for row in frame.to_dict("records"):
            self._rows[row["launch_key"]] = row

    def __len__(self) -> int:
        return len(self._rows)

    def launches(self) -> list[Launch]:
        """Every recorded launch, with its recorded repetition and warm-up counts."""
        return [_launch_from_row(row) for row in self._rows.values()]

    def device_info(self) -> DeviceInfo:
        info = self._set.device.to_dict()
        info["backend"] = self.name
        return DeviceInfo.from_dict(info)

    def check_replayable(self, launches, kernels: Mapping[str, str]) -> None:
        """Refuse, before anything is written, a sweep this recording cannot serve as it is.

        ``kernels``: per family, the fingerprint of the kernel the sweep runs now. A family
        recorded with another one (its sidecar or CUDA source edited since) was served the
        old kernel's times as the new one's. ``launches``: the points to serve; the first
        without a recording is refused (a miss found midway left a half-written set).
        """
        for family, fingerprint in sorted(kernels.items()):
            known = self.recorded_kernels.get(family)
            if known and fingerprint not in known:
                raise ReplayMissError(
                    f"{self.path} holds the times of another version of kernel {family} (its sidecar or CUDA source "
                    "changed since they were recorded): replayed, they would be served as this version's; restore "
                    "the kernel as it was, or record the changed one on a GPU")
        for launch in launches:
            if launch.key not in self._rows:
                raise self._miss(launch)

    def _miss(self, launch: Launch) -> ReplayMissError:
        return ReplayMissError(
            f"no recorded measurement of {launch.family} with params {launch.params_json}, "
            f"grid {launch.grid}, block {launch.block} in {self.path}; record it on a GPU "
            "with `perfml sweep run SPEC --backend cupy --resume --out "
            f"{self.path}` or replay a result set that holds it"
        )

    def run(self, launch: Launch) -> Measurement:
        row = self._rows.get(launch.key)
        if row is None:
            raise self._miss(launch)
        attrs = {
            col: int(row[col]) for col in _ATTRIBUTE_COLUMNS if _optional(row.get(col), int) is not None
        }
        return Measurement(
            launch=launch,
            times_s=tuple(float(t) for t in row["times_s"]),
            cycles=_optional(row.get("cycles"), int),
            sm_clock_mhz=_optional(row.get("sm_clock_mhz"), float),
            mem_clock_mhz=_optional(row.get("mem_clock_mhz"), float),
            energy_j=_optional(row.get("energy_j"), float),
            kernel_attributes=attrs,
            validated=bool(row.get("validated", False)),
        )


def _launch_from_row(row: Mapping[str, Any]) -> Launch:
    return Launch(
        family=row["family"],
        params=json.loads(row["params_json"]),
        grid=(int(row["grid_x"]), int(row["grid_y"]), int(row["grid_z"])),
        block=(int(row["block_x"]), int(row["block_y"]), int(row["block_z"])),
        shared_mem=int(row["shared_mem_bytes"]),
        repetitions=int(row["n"]),
        warmup=int(row["warmup"]),
    )
