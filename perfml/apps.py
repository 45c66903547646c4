"""Kernel descriptions of the applications: launch configuration and work per thread.

The descriptions live in ``perfml/data/apps.toml`` (read its header for the meaning
of every field). They are what the closed-form models and the learned predictor use
as per-app work counts, so nothing about an app's work is ever inferred from the
runtime being predicted.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from perfml._expr import ExpressionError, evaluate
from perfml._files import read_versioned
from perfml.errors import KernelDescriptionError, UnknownAppError

WORK_FIELDS = ("flops", "int_ops", "gld", "gst", "sld", "sst", "elem_bytes", "dram_bytes_total")
BSP_FIELDS = ("comp_cycles", "ld_global", "st_global", "ld_shared", "st_shared")


@dataclass(frozen=True)
class AppDescription:
    """One application kernel: identity, default launch, real work and BSP counts."""

    app_id: str
    app: str
    variant: str
    label: str
    paper: str
    launch: dict[str, Any]
    work: dict[str, Any]
    bsp: dict[str, Any]

    def launch_dims(self, n, block_x=None, block_y=None, grid_x=None, grid_y=None):
        """Block and grid dimensions for size(s) ``n``; explicit values win over the defaults.

        Missing (NaN) explicit values fall back to the description's default launch.
        Returns arrays ``(block_x, block_y, grid_x, grid_y)`` broadcast to ``n``.
        """
        n = np.asarray(n, dtype=float)

        def pick(given, default, env):
            base = np.broadcast_to(np.asarray(evaluate(default, env), dtype=float), n.shape)
            if given is None:
                return base.copy()
            given = np.broadcast_to(np.asarray(given, dtype=float), n.shape)
            return np.where(np.isfinite(given) & (given > 0), given, base)

        bx = pick(block_x, self.launch["block_x"], {"N": n})
        by = pick(block_y, self.launch["block_y"], {"N": n})
        env = {"N": n, "bx": bx, "by": by}
        gx = pick(grid_x, self.launch["grid_x"], env)
        gy = pick(grid_y, self.launch["grid_y"], env)
        return bx, by, gx, gy

    def threads(self, n, **launch) -> np.ndarray:
        """Total threads of the launch for size(s) ``n``."""
        bx, by, gx, gy = self.launch_dims(n, **launch)
        return bx * by * gx * gy

    def _env(self, n, launch):
        n = np.asarray(n, dtype=float)
        bx, by, gx, gy = self.launch_dims(n, **launch)
        return {"N": n, "bx": bx, "by": by, "threads": bx * by * gx * gy}

    def work_per_thread(self, n, **launch) -> dict[str, np.ndarray]:
        """The ``[work]`` counts per thread (and ``threads``) for size(s) ``n``."""
        env = self._env(n, launch)
        out = {"threads": env["threads"]}
        for key in WORK_FIELDS:
            out[key] = self._eval(self.work[key], env, "work", key)
        return out

    def bsp_counts(self, n, **launch) -> dict[str, np.ndarray]:
        """The ``[bsp]`` counts per thread (and ``threads``) for size(s) ``n``."""
        env = self._env(n, launch)
        out = {"threads": env["threads"]}
        for key in BSP_FIELDS:
            out[key] = self._eval(self.bsp[key], env, "bsp", key)
        return out

    def _eval(self, expr, env, section, key):
        try:
            value = evaluate(expr, env)
        except ExpressionError as exc:
            raise KernelDescriptionError(
                f"apps.toml [{self.app_id}.{section}] {key} = {expr!r}: {exc}; fix the expression"
            ) from None
        return np.broadcast_to(np.asarray(value, dtype=float), np.shape(env["N"])).copy()


@functools.lru_cache(maxsize=1)
def _load() -> dict[str, AppDescription]:
    raw = read_versioned(resources.files("perfml").joinpath("data/apps.toml"), "perfml-apps", (1,),
                         error=KernelDescriptionError)
    apps = {}
    for app_id, entry in raw.items():
        if app_id in ("format", "version"):
            continue
        for section, fields in (("work", WORK_FIELDS), ("bsp", BSP_FIELDS + ("uses_shared",))):
            missing = [f for f in fields if f not in entry.get(section, {})]
            if missing:
                raise KernelDescriptionError(
                    f"apps.toml [{app_id}.{section}] lacks {', '.join(missing)}; add them (see the file header)"
                )
        apps[app_id] = AppDescription(
            app_id=app_id,
            app=entry["app"],
            variant=entry["variant"],
            label=entry["label"],
            paper=entry["paper"],
            launch=dict(entry["launch"]),
            work=dict(entry["work"]),
            bsp=dict(entry["bsp"]),
        )
    return apps


def list_apps() -> list[str]:
    """The app ids that have a kernel description."""
    return list(_load())


def get_app(app_id: str) -> AppDescription:
    """The description of ``app_id``.

    Raises
    ------
    UnknownAppError
        If no description exists; the message lists the closest ids.
    """
    apps = _load()
    if app_id in apps:
        return apps[app_id]
    close = difflib.get_close_matches(str(app_id), list(apps), n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise UnknownAppError(
        f"no kernel description for app {app_id!r}; {hint}described apps: {', '.join(apps)} "
        "(add one to perfml/data/apps.toml to model a new kernel)"
    )
