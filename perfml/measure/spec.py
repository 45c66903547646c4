"""Sweep specifications (``perfml/data/sweeps/*.toml`` and the user's own) and their plans.

A spec names kernel families of the catalog (``kernels/*.toml``, see
``kernels/SIDECAR.md``), the parameter grid and launch configs to run each with, how
often to repeat a point, and a time budget::

    version = 1
    name = "static-arith"
    description = "peak throughput per instruction class (seed 001 Table 1)"
    repetitions = 20         # timed repetitions per point
    warmup = 3               # untimed launches first (discarded)
    time_budget_s = 60       # wall time the whole spec may take on one board
    cv_threshold = 0.05      # a point whose coefficient of variation exceeds this is noisy
    max_point_s = 2.0        # cap on the time spent timing one point (optional)

    [[families]]
    name = "fp32_simple"                 # a family of the catalog
    variants = ["fma"]                   # optional: some of its variants (default: all)
    params = { ITERS = [128, 256] }      # optional grid of -D constants; lists are
                                         # crossed. Omitted: the family's own [sweep]
                                         # (dynamic families) or its defaults
    launch = [{ blocks_per_sm = 4 }, { blocks_per_sm = 8, block = 128 }]
                                         # optional launch configs: explicit `block`,
                                         # `grid`, `blocks_per_sm`, `shared_bytes`;
                                         # any other key is a parameter override

A point is (kernel variant, parameter values, launch config); the family's sidecar turns
it into CUDA dimensions (``KernelFamily.launch(params, sms)``) unless the config gives
them. Parameters are resolved against the sidecar (defaults filled in, unknown names
refused), so a point's :attr:`Launch.key` is canonical.

:func:`plan_spec` expands a spec into :class:`PlannedPoint` s with an estimated time:
per point, (warm-up + repetitions) launches, each a roofline lower bound of the family's
work (flops, bytes, target instructions) against the board registry's peaks, plus host
costs (compilation once per compiled variant, buffer set-up and validation per point).
:attr:`SweepPlan.worst_case_s` bounds it with every point hitting ``max_point_s``.

Planning is bounded: :func:`count_points` multiplies the grid sizes without expanding
anything, and a spec above ``max_points`` (default :data:`DEFAULT_MAX_POINTS`, the
command line's ``--max-points``) is refused with :class:`~perfml.errors.SweepTooLargeError`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml._files import parse_table
from perfml.measure.backend import Launch
from perfml.errors import SweepSpecError, SweepTooLargeError

__all__ = [
    "DEFAULT_MAX_POINTS",
    "FamilyRun",
    "PlannedPoint",
    "count_points",
    "SweepPlan",
    "SweepSpec",
    "default_spec_paths",
    "load_spec",
    "load_specs",
    "plan_spec",
    "plan_specs",
    "work_per_thread",
    "work_totals",
]

SPEC_VERSION = 1
#: most points one spec may expand to unless the caller raises it (``--max-points``)
DEFAULT_MAX_POINTS = 10_000

# Host-side costs used by the time estimate (software overheads, not hardware specs):
#: NVRTC compilation of one compiled variant (CuPy caches it afterwards)
COMPILE_S = 0.5
#: allocation, initialisation and validation of one point's buffers, benchmark set-up
POINT_OVERHEAD_S = 0.03
#: the shortest a launch takes end to end (launch latency, event records)
MIN_LAUNCH_S = 5e-6
#: host-side handling of argument buffers (initialise, copy in, read back, validate)
HOST_BYTES_PER_S = 1e9
#: planning guess for one dependent global load (pointer chase), in SM cycles
DEPENDENT_ACCESS_CYCLES = 800

_TOP_KEYS = {
    "version",
    "name",
    "description",
    "repetitions",
    "warmup",
    "time_budget_s",
    "cv_threshold",
    "max_point_s",
    "families",
}
_FAMILY_KEYS = {"name", "params", "launch", "variants"}
_DIM_KEYS = {"block", "grid", "blocks_per_sm", "shared_bytes"}


@dataclass(frozen=True)
class FamilyRun:
    """One ``[[families]]`` entry: a family, its parameter grid and launch configs."""

    name: str
    params: Mapping[str, tuple[Any, ...]] | None = None
    launch: tuple[Mapping[str, Any], ...] = ()
    variants: tuple[str, ...] | None = None

    def points(self, family: Any) -> list[tuple[Any, dict[str, Any], dict[str, Any]]]:
        """``(kernel, parameter point, launch config)`` triples of this entry.

        Each of the family's kernels (variants; restricted to :attr:`variants` when given)
        is crossed with the spec's parameter grid, or else with the family's own
        ``[sweep]``, and with each launch config.
        """
        kernels = list(family.kernels())
        if self.variants is not None:
            by_variant = {k.variant: k for k in kernels}
            missing = [v for v in self.variants if v not in by_variant]
            if missing:
                named = sorted(v for v in by_variant if v)
                raise SweepSpecError(
                    f"family {self.name!r} has no variant(s) {missing}; "
                    + (f"it has {named}" if named else "it has no variants: leave `variants` out of its entry")
                )
            kernels = [by_variant[v] for v in self.variants]
        if self.params is not None:
            keys = sorted(self.params)
            grid = [dict(zip(keys, c)) for c in itertools.product(*(self.params[k] for k in keys))]
        elif getattr(family, "sweep", None) is not None:
            swept = list(family.sweep.grid)
            grid = [{k: p[k] for k in swept} for p in family.sweep_points()]
        else:
            grid = [{}]
        # a variant is named by the parameters it fixes: a spec that sets one of them ran OP = 0 (an add)
        # under the name and target of fp32_simple.fma
        variants = getattr(family, "variants", None) or {}
        for kernel in kernels:
            fixed = dict(variants[kernel.variant].params) if kernel.variant in variants else {}
            clash = sorted(k for k in fixed if any(k in point and point[k] != fixed[k] for point in grid))
            if clash:
                raise SweepSpecError(
                    f"family {self.name!r}: variant {kernel.variant!r} is defined by "
                    f"{', '.join(f'{k} = {fixed[k]}' for k in clash)}, which the spec's params change; leave "
                    f"{', '.join(clash)} out of params, or choose the variant that has the value you want")
        configs = [dict(c) for c in self.launch] or [{}]
        return [
            (kernel, {**dict(kernel.params), **point}, cfg)
            for kernel in kernels
            for point in grid
            for cfg in configs
        ]


@dataclass(frozen=True)
class SweepSpec:
    """A parsed, validated sweep specification (see the module docstring)."""

    name: str
    families: tuple[FamilyRun, ...]
    repetitions: int = 10
    warmup: int = 2
    time_budget_s: float = 60.0
    cv_threshold: float = 0.05
    max_point_s: float = math.inf
    description: str = ""
    path: Path | None = None


@dataclass(frozen=True)
class PlannedPoint:
    """One launch a sweep will measure, with its estimated wall time."""

    spec: str
    launch: Launch
    kernel: str = ""
    target: str = ""
    kind: str = ""
    component: str = ""
    work: Mapping[str, float | None] = field(default_factory=dict)
    work_per_thread: Mapping[str, float] = field(default_factory=dict)
    estimated_s: float = 0.0
    host_s: float = POINT_OVERHEAD_S
    compile_key: str = ""


@dataclass(frozen=True)
class SweepPlan:
    """The points of one spec and the estimate of its wall time."""

    spec: SweepSpec
    points: tuple[PlannedPoint, ...]
    estimated_s: float

    @property
    def over_budget(self) -> bool:
        return self.estimated_s > self.spec.time_budget_s

    @property
    def worst_case_s(self) -> float:
        """Upper bound when every point runs into ``max_point_s`` (inf without a cap).

        The estimate is a roofline lower bound from registry peaks; instruction classes
        far below the FP32 rate (integer remainder, FP64 on consumer boards) take longer,
        and ``max_point_s`` and the runner's time budget are what bound them.
        """
        compiles = len({p.compile_key for p in self.points})
        return compiles * COMPILE_S + sum(p.host_s + self.spec.max_point_s for p in self.points)


# -- loading ------------------------------------------------------------------------------


def _err(path: str, msg: str) -> SweepSpecError:
    return SweepSpecError(f"{path}: {msg}")


def _as_grid(where: str, value: Any) -> Mapping[str, tuple[Any, ...]]:
    if not isinstance(value, Mapping):
        raise _err(where, f"expected a table of parameter values, found {value!r}")
    if not value:  # planned the family's defaults alone, where a missing `params` plans its own [sweep]
        raise _err(where, "`params` is empty, so the family would run at its defaults alone; name the values to "
                          "sweep, or leave the key out for the family's own sweep")
    grid: dict[str, tuple[Any, ...]] = {}
    for key, values in value.items():
        seq = tuple(values) if isinstance(values, list) else (values,)
        if not seq:
            raise _err(where, f"parameter {key!r} has an empty list of values")
        grid[str(key)] = seq
    return MappingProxyType(grid)


def _whole(where: str, key: str, value: Any, low: int) -> int:
    """A launch dimension: a whole number >= ``low`` (TOML ``32.5`` or ``true`` was truncated
    to 32 or 1 before; an integral float such as ``256.0`` is taken as 256)."""
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or number != int(number) or number < low:
        raise _err(where, f"{key} must be a whole number >= {low}, found {value!r}")
    return int(number)


def _launch_table(where: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One ``launch`` config, checked: only the keys of :data:`_DIM_KEYS` (a misspelt key was
    ignored, so the sidecar's own launch ran instead), each a whole number; ``block`` and
    ``grid`` one number or a list of one to three."""
    unknown = set(cfg) - _DIM_KEYS
    if unknown:
        raise _err(where, f"unknown key(s) {sorted(unknown)}; a launch config has some of {sorted(_DIM_KEYS)}")
    if "grid" in cfg and "blocks_per_sm" in cfg:  # the grid won and blocks_per_sm was ignored
        raise _err(where, "give `grid` or `blocks_per_sm`, not both (each sets the grid)")
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key in ("block", "grid"):
            dims = value if isinstance(value, list) else [value]
            if not 1 <= len(dims) <= 3:
                raise _err(where, f"{key} must be one number or a list of 1 to 3 (x, y, z), found {value!r}")
            out[key] = [_whole(where, key, d, 1) for d in dims]
        else:
            out[key] = _whole(where, key, value, 0 if key == "shared_bytes" else 1)
    return out


#: the largest ``time_budget_s`` (a year): 1e308 was taken, and printed as a 309-digit number
#: of seconds in the plan; a budget beyond any sweep's run is no budget (``max_point_s`` takes inf)
MAX_BUDGET_S = 365 * 86400

#: the most launches per point a spec may ask for (``repetitions``, ``warmup``): the result
#: schema stores them as 32-bit integers (a larger warmup failed when the part was written)
MAX_LAUNCHES = 2**31 - 1


def _number(where: str, data: Mapping[str, Any], key: str, default: float, kind: type,
            *, allow_zero: bool = False, allow_inf: bool = False, maximum: float = math.inf) -> Any:
    """``data[key]`` (or ``default``) checked to be a positive number of type ``kind``.

    TOML has ``nan`` and ``inf``: NaN is never a number here (it compared as neither too
    small nor too large, so a NaN budget or noise threshold silently disabled its check),
    and ``inf`` only where it means "no limit" (``allow_inf``).
    """
    value = data.get(key, default)
    ok_type = isinstance(value, int) if kind is int else isinstance(value, (int, float))
    bad = isinstance(value, bool) or not ok_type
    if not bad:
        bad = math.isnan(value) or value < 0 or (value == 0 and not allow_zero) or (math.isinf(value) and not allow_inf)
    if bad:
        need = "an integer" if kind is int else "a finite number" if not allow_inf else "a number (or inf: no limit)"
        bound = ">= 0" if allow_zero else "> 0"
        raise _err(where, f"{key} must be {need} {bound}, found {value!r}")
    if value > maximum:
        raise _err(where, f"{key} must be at most {maximum:g}, found {value!r}")
    return kind(value)


def parse_spec(data: Mapping[str, Any], *, where: str = "<spec>", path: Path | None = None) -> SweepSpec:
    """Validate a spec given as a mapping (the parsed TOML)."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise _err(where, f"unknown key(s) {sorted(unknown)}; expected some of {sorted(_TOP_KEYS)}")
    version = data.get("version", SPEC_VERSION)
    if type(version) is not int or version != SPEC_VERSION:  # true and 1.0 == 1 in Python: read as version 1
        raise _err(where, f"unknown spec version {version!r}; this perfml reads version {SPEC_VERSION}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _err(where, "expected a non-empty `name`")
    if not name.isprintable():  # it labels every row and every line printed: a newline garbled them
        raise _err(where, f"`name` {name!r} holds a control character (a newline, a tab); give a one-line name")
    families_raw = data.get("families")
    if not isinstance(families_raw, list) or not families_raw:
        raise _err(where, "expected at least one [[families]] entry")
    families = []
    for i, entry in enumerate(families_raw):
        here = f"{where} [[families]] #{i + 1}"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise _err(here, "expected a table with a string `name`")
        bad = set(entry) - _FAMILY_KEYS
        if bad:
            raise _err(here, f"unknown key(s) {sorted(bad)}; expected some of {sorted(_FAMILY_KEYS)}")
        params = _as_grid(here, entry["params"]) if "params" in entry else None
        launch_raw = entry.get("launch", [])
        if isinstance(launch_raw, Mapping):
            launch_raw = [launch_raw]
        if not isinstance(launch_raw, list) or not all(isinstance(c, Mapping) for c in launch_raw):
            raise _err(here, "`launch` must be a list of tables")
        launch = tuple(MappingProxyType(_launch_table(f"{here} launch #{j + 1}", c)) for j, c in enumerate(launch_raw))
        variants = entry.get("variants")
        if variants is not None and (
            not isinstance(variants, list) or not all(isinstance(v, str) for v in variants)
        ):
            raise _err(here, "`variants` must be a list of variant names")
        if variants == []:
            raise _err(here, "`variants` is empty, so the family plans no point; name some, or leave the key out "
                             "for all of them")
        families.append(
            FamilyRun(
                name=entry["name"],
                params=params,
                launch=launch,
                variants=None if variants is None else tuple(variants),
            )
        )
    description = data.get("description", "")
    if not isinstance(description, str):  # a table or a number was stored as its Python repr
        raise _err(where, f"`description` must be text, found {type(description).__name__} {str(description)[:60]!r}")
    budget = _number(where, data, "time_budget_s", 60.0, float, maximum=MAX_BUDGET_S)
    cv = _number(where, data, "cv_threshold", 0.05, float)
    if cv > 1:  # a percentage written as a fraction's value: 5 meant 5 %, and no point was ever noisy
        raise _err(where, f"cv_threshold is a fraction (0.05 is 5 %), found {cv:g} ({cv:.0%}); give a value up to 1")
    max_point = _number(where, data, "max_point_s", math.inf, float, allow_inf=True)
    return SweepSpec(
        name=name,
        families=tuple(families),
        repetitions=_number(where, data, "repetitions", 10, int, maximum=MAX_LAUNCHES),
        warmup=_number(where, data, "warmup", 2, int, allow_zero=True, maximum=MAX_LAUNCHES),
        time_budget_s=budget,
        cv_threshold=cv,
        max_point_s=max_point,
        description=description,
        path=path,
    )


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and validate one spec file."""
    from perfml._files import not_a_file

    path = Path(path)
    why = not_a_file(path)
    if why is not None and why != "does not exist":
        raise SweepSpecError(f"{path}: {why}; name a sweep spec file (TOML) or a directory of them")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SweepSpecError(f"{path}: no such sweep spec; the shipped specs are in perfml/data/sweeps (used when no spec is named)") from None
    except UnicodeDecodeError as exc:
        raise SweepSpecError(f"{path}: is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                             "save the sweep spec as UTF-8") from None
    data = parse_table(text, path, "toml", "sweep spec", SweepSpecError)
    return parse_spec(data, where=str(path), path=path)


def load_specs(paths: Iterable[str | os.PathLike[str]]) -> list[SweepSpec]:
    """Read specs; a directory stands for every ``*.toml`` in it, and a bare name that is no
    file (``calibration``) for the shipped spec of that name. Names must be unique."""
    specs: list[SweepSpec] = []
    for p in paths:
        p = _shipped_or_path(Path(p))
        files = sorted(p.glob("*.toml")) if p.is_dir() else [p]
        if p.is_dir() and not files:
            raise SweepSpecError(f"{p}: a directory without sweep specs (*.toml); name spec "
                                 "files, or a directory holding some")
        specs.extend(load_spec(f) for f in files)
    seen: dict[str, Path | None] = {}
    for spec in specs:
        if spec.name in seen:
            raise SweepSpecError(
                f"two specs are named {spec.name!r} ({seen[spec.name]} and {spec.path}); "
                "spec names identify rows in a result set and must be unique"
            )
        seen[spec.name] = spec.path
    return specs


def _shipped_or_path(p: Path) -> Path:
    """``p``, or the shipped spec it names when ``p`` is a bare name and no such file exists."""
    if p.exists() or p.suffix or len(p.parts) != 1:
        return p
    shipped = {s.stem: s for s in default_spec_paths()}
    if p.name in shipped:
        return shipped[p.name]
    # a shipped spec is also known by its `name` (static-arith, as `sweep plan` prints it; the
    # file is static_arith.toml)
    by_name = {load_spec(s).name: s for s in shipped.values()}
    if p.name in by_name:
        return by_name[p.name]
    known = sorted(set(shipped) | set(by_name))
    raise SweepSpecError(f"{p}: no such spec file, and no shipped spec of that name; name a spec file or one of "
                         f"the shipped specs: {', '.join(known)}")


def default_spec_paths() -> list[Path]:
    """The shipped specs: ``perfml/data/sweeps/*.toml`` (package data)."""
    from importlib import resources

    root = Path(str(resources.files("perfml") / "data" / "sweeps"))
    return sorted(root.glob("*.toml"))


# -- planning ------------------------------------------------------------------------------


def _dims(value: Any) -> tuple[int, ...]:
    return (int(value),) if isinstance(value, (int, float)) else tuple(int(v) for v in value)


def _launch_config(family: Any, params: Mapping[str, Any], cfg: Mapping[str, Any], sms: int):
    """The family's launch for ``params`` on ``sms`` SMs, with explicit dims of ``cfg`` applied."""
    from perfml.kernels.catalog import LaunchConfig

    base = family.launch(params, sms=sms)
    if not (set(cfg) & _DIM_KEYS):
        return base
    block = _dims(cfg["block"]) if "block" in cfg else base.block
    block = tuple(block) + (1,) * (3 - len(block))
    if "grid" in cfg:
        grid = _dims(cfg["grid"])
    elif "blocks_per_sm" in cfg:
        grid = (int(cfg["blocks_per_sm"]) * int(sms),)
    else:
        grid = base.grid
    grid = tuple(grid) + (1,) * (3 - len(grid))
    shared = int(cfg.get("shared_bytes", base.shared_bytes))
    return LaunchConfig(grid, block, shared)


def work_per_thread(family: Any, launch: Launch) -> dict[str, float]:
    """The sidecar's ``[work]`` section evaluated for one launch (per thread, every key)."""
    from perfml.kernels.catalog import LaunchConfig

    cfg = LaunchConfig(launch.grid, launch.block, launch.shared_mem)
    return {k: float(v) for k, v in family.work(dict(launch.params), cfg).items()}


def work_totals(per_thread: Mapping[str, float], threads: int) -> dict[str, float | None]:
    """Instructions, flops and bytes of one whole launch from the per-thread work.

    ``instructions`` is the sidecar's ``target_instructions``. ``bytes`` is its ``bytes``,
    or else the sum of its level-specific ``*_bytes`` keys (``constant_bytes``, ...).
    """
    level_bytes = [v for k, v in per_thread.items() if k.endswith("_bytes")]
    nbytes = per_thread.get("bytes")
    if nbytes is None and level_bytes:
        nbytes = sum(level_bytes)
    per = {
        "instructions": per_thread.get("target_instructions"),
        "flops": per_thread.get("flops"),
        "bytes": nbytes,
    }
    return {k: (None if v is None else float(v) * threads) for k, v in per.items()}


def buffer_bytes(family: Any, launch: Launch) -> int:
    """Bytes of all buffer arguments of one launch (what the host allocates and copies)."""
    import numpy as np

    from perfml.kernels.catalog import LaunchConfig

    cfg = LaunchConfig(launch.grid, launch.block, launch.shared_mem)
    params = dict(launch.params)
    return sum(
        family.buffer_elements(arg, params, cfg) * np.dtype(arg.dtype).itemsize
        for arg in family.args
        if arg.kind == "buffer"
    )


def _kernel_seconds(
    work: Mapping[str, float | None], per_thread: Mapping[str, float], board: Any
) -> float:
    """Estimated time of one launch on ``board``: the largest of a few lower bounds.

    The whole-device bound is the roofline of :func:`perfml.closed_form.roofline.roofline_time_ms`
    (Williams, Waterman & Patterson 2009, Section 2: time = max(ops / peak ops, bytes /
    peak bandwidth)) with the registry's FP32 peak and DRAM bandwidth; target
    instructions count two ops each (one per FP32 lane per cycle, an FMA being two
    flops). Two per-thread bounds follow: one instruction per cycle at the boost clock
    (issue), and for latency kernels ``hops`` x :data:`DEPENDENT_ACCESS_CYCLES`.
    """
    if board is None:
        return 1e-3
    from perfml import boards
    from perfml.closed_form.roofline import roofline_time_ms

    try:
        peak_fp32 = float(boards.peak_flops(board, "fp32"))
    except Exception:
        peak_fp32 = math.inf  # unknown peak: no compute bound
    try:
        peak_bw = float(boards.peak_bandwidth(board))
    except Exception:
        peak_bw = math.inf  # unknown bandwidth: no memory bound
    ops = max(work.get("flops") or 0.0, 2.0 * (work.get("instructions") or 0.0))
    t = max(MIN_LAUNCH_S, float(roofline_time_ms(ops, work.get("bytes") or 0.0, peak_fp32, peak_bw)) / 1e3)
    clock_hz = (getattr(board, "boost_clock_mhz", None) or 0) * 1e6
    if clock_hz:
        t = max(t, per_thread.get("target_instructions", 0.0) / clock_hz)
        t = max(t, per_thread.get("hops", 0.0) * DEPENDENT_ACCESS_CYCLES / clock_hz)
    return t


def count_points(spec: SweepSpec, catalog: Mapping[str, Any]) -> int:
    """Points ``spec`` expands to, counted from the grid sizes without expanding anything.

    Per ``[[families]]`` entry: kernels (chosen variants, or all) x parameter grid (the
    spec's, else the family's ``[sweep]``) x launch configs.
    """
    total = 0
    for run in spec.families:
        family = catalog.get(run.name)
        if family is None:
            known = ", ".join(sorted(catalog)) or "none"
            raise SweepSpecError(
                f"{spec.path or spec.name}: unknown kernel family {run.name!r}; known: {known}"
            )
        n_kernels = len(run.variants) if run.variants is not None else max(1, len(family.variants))
        if run.params is not None:
            grid = math.prod(len(v) for v in run.params.values())
        elif getattr(family, "sweep", None) is not None:
            grid = math.prod(len(v) for v in family.sweep.grid.values())
        else:
            grid = 1
        total += n_kernels * grid * max(1, len(run.launch))
    return total


def check_size(spec: SweepSpec, catalog: Mapping[str, Any], max_points: int) -> int:
    """:func:`count_points`, refused with :class:`~perfml.errors.SweepTooLargeError` above ``max_points``."""
    n_points = count_points(spec, catalog)
    if n_points > max_points:
        raise SweepTooLargeError(
            f"{spec.path or spec.name}: expands to {n_points} points, more than the limit of "
            f"{max_points}; shrink its parameter grids or raise the limit with --max-points "
            f"{n_points} (max_points= in Python)"
        )
    return n_points


def _board_limit_violation(lc, board) -> str | None:
    """What a launch asks beyond the planned board's own limits (registry), or None.

    :meth:`~perfml.kernels.launch.LaunchConfig.cuda_limit_violation` holds a launch to the
    limits of the newest compute capability; a board's own are lower: 512 threads per block
    and 16 KiB of shared memory on a GeForce 8800 GTX, a grid x of at most 65535 below
    compute capability 3.0 (CUDA C++ Programming Guide, "Technical Specifications per
    Compute Capability"). A figure the registry lacks is not checked.
    """
    threads = getattr(board, "max_threads_per_block", None)
    if threads and lc.threads_per_block > threads:
        return (f"block {lc.block} has {lc.threads_per_block} threads, more than the {board.name}'s "
                f"{threads} per block")
    shared_kb = getattr(board, "shared_mem_per_block_kb", None)
    if shared_kb and lc.shared_bytes > shared_kb * 1024:
        return (f"shared_bytes = {lc.shared_bytes} is more than the {board.name}'s {shared_kb} KiB "
                "per block")
    cc = str(getattr(board, "compute_capability", "") or "")
    if cc and int(cc.split(".")[0]) < 3 and lc.grid[0] > 65535:
        return f"grid x = {lc.grid[0]} is above 65535, the limit of compute capability {cc} ({board.name})"
    return None


def plan_spec(
    spec: SweepSpec,
    catalog: Mapping[str, Any],
    *,
    sms: int,
    board: Any = None,
    max_points: int = DEFAULT_MAX_POINTS,
) -> SweepPlan:
    """Expand a spec into launches on a device with ``sms`` SMs and estimate its time.

    Raises
    ------
    SweepTooLargeError
        The spec expands to more than ``max_points`` points (counted before expanding,
        by :func:`count_points`).
    """
    if isinstance(sms, bool) or not isinstance(sms, int) or sms < 1:
        raise SweepSpecError(f"sms must be a positive integer (the device's SM count), found {sms!r}")
    check_size(spec, catalog, max_points)
    points: list[PlannedPoint] = []
    compiled: set[str] = set()
    total = 0.0
    for run in spec.families:
        family = catalog.get(run.name)
        if family is None:
            known = ", ".join(sorted(catalog)) or "none"
            raise SweepSpecError(
                f"{spec.path or spec.name}: unknown kernel family {run.name!r}; known: {known}"
            )
        try:
            run_points = run.points(family)
        except SweepSpecError as exc:
            raise SweepSpecError(f"{spec.path or spec.name}: {exc}") from None
        for kernel, point, cfg in run_points:
            overrides = {k: v for k, v in cfg.items() if k not in _DIM_KEYS}
            try:
                params = family.resolve_params({**point, **overrides})
                lc = _launch_config(family, params, cfg, sms)
                problem = lc.cuda_limit_violation() or (_board_limit_violation(lc, board) if board is not None else None)
                if problem:
                    raise SweepSpecError(f"{problem}; change the launch or the parameters")
                launch = Launch(
                    family=run.name,
                    params=params,
                    grid=lc.grid,
                    block=lc.block,
                    shared_mem=lc.shared_bytes,
                    repetitions=spec.repetitions,
                    warmup=spec.warmup,
                    max_duration_s=spec.max_point_s,
                )
                per_thread = work_per_thread(family, launch)
                work = work_totals(per_thread, launch.threads)
                options = tuple(family.compile_options(params))
            except Exception as exc:  # bad parameter values for this family
                raise SweepSpecError(
                    f"{spec.path or spec.name}: family {run.name!r} cannot be launched with "
                    f"params {dict(point, **overrides)} and launch {dict(cfg)}: {exc}"
                ) from exc
            compile_key = f"{run.name}|{options}"
            needed = buffer_bytes(family, launch)
            memory = getattr(board, "global_mem_bytes", None) if board is not None else None
            if memory and needed > memory:
                raise SweepSpecError(
                    f"{spec.path or spec.name}: family {run.name!r} with params {dict(point, **overrides)} needs "
                    f"{needed:.4g} bytes of buffers, more than the {board.name}'s {memory:.4g}; choose smaller sizes")
            overhead = POINT_OVERHEAD_S + needed / HOST_BYTES_PER_S
            est = (spec.warmup + spec.repetitions) * _kernel_seconds(work, per_thread, board)
            est = overhead + min(est, spec.max_point_s)
            if compile_key not in compiled:
                compiled.add(compile_key)
                est += COMPILE_S
            total += est
            points.append(
                PlannedPoint(
                    spec=spec.name,
                    launch=launch,
                    kernel=kernel.name,
                    target=str(kernel.target),
                    kind=str(family.kind),
                    component=str(family.component),
                    work=MappingProxyType(work),
                    work_per_thread=MappingProxyType(per_thread),
                    estimated_s=est,
                    host_s=overhead,
                    compile_key=compile_key,
                )
            )
    keys = [p.launch.key for p in points]
    if len(set(keys)) != len(keys):
        seen: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key in seen:
                first = points[seen[key]].launch
                raise SweepSpecError(
                    f"{spec.path or spec.name}: family {first.family!r} plans the same launch twice (points "
                    f"{seen[key] + 1} and {i + 1}: params {first.params_json}, grid {first.grid}, block {first.block}); "
                    "a value repeated in the spec's params or the sidecar's [sweep] values, a family named in two "
                    "[[families]] entries, or a variant whose params equal another's makes it: remove the repeat")
            seen[key] = i
    return SweepPlan(spec=spec, points=tuple(points), estimated_s=total)


def plan_specs(
    specs: Sequence[SweepSpec],
    catalog: Mapping[str, Any],
    *,
    sms: int,
    board: Any = None,
    max_points: int = DEFAULT_MAX_POINTS,
) -> list[SweepPlan]:
    """:func:`plan_spec` for every spec; each is counted against ``max_points`` first."""
    for s in specs:  # refuse an oversized spec before planning any
        check_size(s, catalog, max_points)
    return [plan_spec(s, catalog, sms=sms, board=board, max_points=max_points) for s in specs]
