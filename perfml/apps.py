"""Kernel descriptions of the applications: launch configuration and work per thread.

Each application kernel describes itself once, in the ``[model]`` table of its sidecar
``perfml/kernels/cuda/<app_id>.toml`` (identity, default launch, the real work per
thread ``[model.work]`` and the BSP counting convention ``[model.bsp]``; see
``perfml/kernels/cuda/SIDECAR.md``, "[model]", for every field). This module reads those
tables through :mod:`importlib.resources`, without the kernel catalog. They are what the
closed-form models and the learned predictor use as per-app work counts, so nothing
about an app's work is ever inferred from the runtime being predicted.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from perfml._files import parse_table
from perfml._expr import ExpressionError, evaluate
from perfml.errors import InvalidValueError, KernelDescriptionError, UnknownAppError

__all__ = ["BSP_FIELDS", "LAUNCH_FIELDS", "WORK_FIELDS", "AppDescription", "get_app", "list_apps"]

#: Sidecar schema versions whose ``[model]`` table this module reads.
SIDECAR_SCHEMA_VERSIONS = (1,)
LAUNCH_FIELDS = ("block_x", "block_y", "grid_x", "grid_y")
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
    #: (name, dtype, elements expression) of every buffer argument of the sidecar's ``[[args]]``
    buffers: tuple[tuple[str, str, str], ...] = ()

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
        bad = ~(np.isfinite(n) & (n > 0))
        if bad.any():  # else a sidecar expression failed on it and the message blamed the sidecar
            first = n.flat[int(np.flatnonzero(bad.ravel())[0])]
            raise InvalidValueError(f"{self.app_id}: the problem size N must be a positive finite number, got {first:g}; "
                                    "give the size the runs use (input_size of runtimes.csv)")
        bx, by, gx, gy = self.launch_dims(n, **launch)
        return {"N": n, "bx": bx, "by": by, "threads": bx * by * gx * gy}

    def footprint_bytes(self, n, **launch) -> np.ndarray:
        """Bytes of device memory the kernel's buffers hold for size(s) ``n``.

        The sum over the sidecar's buffer arguments (``[[args]]``, ``kind = "buffer"``) of
        ``elements x`` the size of their ``dtype``; ``elements`` is an expression of ``N``,
        ``threads`` and ``blocks`` of the launch. NaN when the sidecar lists no buffer.
        """
        env = self._env(n, launch)
        bx, by, gx, gy = self.launch_dims(n, **launch)
        env["blocks"] = gx * gy
        if not self.buffers:
            return np.full(np.shape(env["N"]), np.nan)
        total = np.zeros(np.shape(env["N"]))
        for name, dtype, elements in self.buffers:
            total = total + self._eval(elements, env, "args", name) * np.dtype(dtype).itemsize
        return total

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
                f"kernels/cuda/{self.app_id}.toml [model.{section}] {key} = {expr!r}: {exc}; "
                "fix the expression"
            ) from None
        return np.broadcast_to(np.asarray(value, dtype=float), np.shape(env["N"])).copy()


def _kernel_sidecars():
    """The ``*.toml`` files of the package's kernels directory, by name."""
    folder = resources.files("perfml") / "kernels" / "cuda"
    return sorted((f for f in folder.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name)


def _description(name: str, doc: dict[str, Any]) -> AppDescription:
    """The :class:`AppDescription` of the ``[model]`` table of sidecar ``name``."""
    where = f"kernels/cuda/{name}"
    version = doc.get("schema_version", 1)
    if version not in SIDECAR_SCHEMA_VERSIONS:
        raise KernelDescriptionError(
            f"{where}: schema_version {version!r} is not one of {SIDECAR_SCHEMA_VERSIONS}; "
            "update perfml or the sidecar"
        )
    model = doc["model"]
    if not isinstance(model, dict):
        raise KernelDescriptionError(f"{where}: [model] must be a table, found {model!r}")
    missing = [k for k in ("app_id", "app", "variant", "label", "paper") if k not in model]
    if missing:
        raise KernelDescriptionError(
            f"{where} [model] lacks {', '.join(missing)}; add them (see kernels/cuda/SIDECAR.md)"
        )
    for section, fields in (("launch", LAUNCH_FIELDS), ("work", WORK_FIELDS),
                            ("bsp", BSP_FIELDS + ("uses_shared",))):
        missing = [f for f in fields if f not in model.get(section, {})]
        if missing:
            raise KernelDescriptionError(
                f"{where} [model.{section}] lacks {', '.join(missing)}; add them "
                "(see kernels/cuda/SIDECAR.md)"
            )
    buffers = []
    for arg in doc.get("args", ()):
        if isinstance(arg, dict) and arg.get("kind") == "buffer":
            try:
                np.dtype(str(arg.get("dtype")))
            except TypeError:
                raise KernelDescriptionError(f"{where} [[args]] {arg.get('name')!r}: dtype {arg.get('dtype')!r} is not a "
                                             "numpy dtype name; use e.g. float32 or int32") from None
            buffers.append((str(arg.get("name")), str(arg["dtype"]), str(arg.get("elements"))))
    return AppDescription(
        app_id=str(model["app_id"]),
        app=model["app"],
        variant=model["variant"],
        label=model["label"],
        paper=model["paper"],
        launch=dict(model["launch"]),
        work=dict(model["work"]),
        bsp=dict(model["bsp"]),
        buffers=tuple(buffers),
    )


@functools.lru_cache(maxsize=1)
def _load() -> dict[str, AppDescription]:
    apps: dict[str, AppDescription] = {}
    for sidecar in _kernel_sidecars():
        doc = parse_table(sidecar.read_text(encoding="utf-8"), f"kernels/cuda/{sidecar.name}", "toml",
                          "kernel sidecar", KernelDescriptionError)
        if "model" not in doc:
            continue  # a microbenchmark, not an application kernel
        app = _description(sidecar.name, doc)
        if app.app_id in apps:
            raise KernelDescriptionError(
                f"kernels/cuda/{sidecar.name}: [model] app_id {app.app_id!r} is already described "
                "by another sidecar; each app_id must have one description"
            )
        apps[app.app_id] = app
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
    # difflib is quadratic in the id's length; one over 5x the longest id cannot reach the 0.4 cutoff
    longest = max(map(len, apps), default=0)
    close = difflib.get_close_matches(str(app_id), list(apps), n=3, cutoff=0.4) if len(str(app_id)) <= 5 * longest else []
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise UnknownAppError(
        f"no kernel description for app {app_id!r}; {hint}described apps: {', '.join(apps)} "
        "(add a [model] table to its sidecar in perfml/kernels/cuda to model a new kernel)"
    )
