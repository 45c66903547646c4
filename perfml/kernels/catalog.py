"""The kernel catalog: CUDA sources in ``kernels/`` described by TOML sidecars.

Every microbenchmark or application kernel lives in ``kernels/<family>.cu`` next to a
sidecar ``kernels/<family>.toml`` that declares its parameters (compile-time
constants passed as ``-DNAME=value``), the instruction class or memory level it
exercises, its launch configuration, its arguments and how its output is validated.
The schema is documented in ``kernels/SIDECAR.md``; this module parses and checks it.

The catalog is data, in the spirit of BabelStream/mixbench: the driver (a backend in
:mod:`perfml.measure`) reads a :class:`KernelFamily`, compiles ``source_path`` with
:meth:`KernelFamily.compile_options`, launches ``entry`` with :meth:`KernelFamily.launch`
and builds its arguments from :attr:`KernelFamily.args`.

Examples
--------
>>> from perfml.kernels.catalog import load_catalog
>>> fam = load_catalog()["fp32_simple"]                     # doctest: +SKIP
>>> fam.compile_options({"ITERS": 512})                     # doctest: +SKIP
('-std=c++17', '-DCHAINS=4', '-DITERS=512', '-DOP=2', '-DREPS=64')
"""

from __future__ import annotations

import itertools
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml.errors import KernelSidecarError, UnknownKernelError
from perfml._expr import ExpressionError
from perfml._expr import evaluate_sidecar as evaluate, names_in_sidecar as names_in

__all__ = [
    "SCHEMA_VERSION",
    "KINDS",
    "KernelSidecarError",
    "UnknownKernelError",
    "Param",
    "Variant",
    "Sweep",
    "ArgSpec",
    "Validation",
    "LaunchSpec",
    "LaunchConfig",
    "KernelSpec",
    "KernelFamily",
    "default_kernels_dir",
    "load_family",
    "load_catalog",
    "get_family",
    "get_kernel",
    "iter_kernels",
]

#: version of the sidecar schema this module reads
SCHEMA_VERSION = 1
#: allowed values of ``kind``
KINDS = ("static", "dynamic", "latency", "application")
#: allowed ``dtype`` values of arguments (numpy names)
DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64")
#: allowed ``init`` values of buffer arguments
INITS = ("zeros", "ones", "fill", "arange", "random", "random_int", "chase")
#: allowed ``validation.kind`` values
VALIDATIONS = ("untouched", "equals", "reference", "finite", "none")
#: environment variable that overrides the kernels directory
KERNELS_DIR_ENV = "PERFML_KERNELS_DIR"

_TOP_KEYS = {
    "schema_version", "name", "kind", "source", "entry", "component", "target", "target_note",
    "description", "archs", "options", "params", "variants", "sweep", "work", "launch", "args",
    "validation", "references", "purity_region",
}
#: allowed ``purity_region`` values (see kernels/SIDECAR.md, "Purity")
REGIONS = ("loop", "target_loop", "kernel")
_PARAM_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LAUNCH_NAMES = ("sms", "threads", "blocks", "threads_per_block", "warps",
                 "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
_ARCH_RE = re.compile(r"^sm_\d{2,3}[a-z]?$")


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Param:
    """A compile-time constant of a family (``-DNAME=value``)."""

    name: str
    default: int
    description: str = ""
    define: bool = True  # False: launch/argument-only, not passed as -D (e.g. an input size)


@dataclass(frozen=True)
class Variant:
    """A named parameter set of a family; each variant is one kernel of the catalog."""

    name: str
    params: Mapping[str, int]
    target: str
    description: str = ""


@dataclass(frozen=True)
class Sweep:
    """The intensity sweep of a dynamic family: the cartesian product of ``grid``."""

    grid: Mapping[str, tuple[int, ...]]

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(self.grid)


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument, in call order."""

    name: str
    kind: str  # "buffer" | "scalar"
    dtype: str
    elements: str | int | None = None  # buffers: expression over params and launch names
    value: str | int | float | None = None  # scalars: number or expression
    init: str = "zeros"  # buffers: see INITS
    init_value: str | int | float | None = None  # "fill": the value; "random_int": high bound
    stride: str | int | None = None  # "chase": distance in elements to the next hop
    output: bool = False  # read back after the launch (validated or returned)


@dataclass(frozen=True)
class Validation:
    """How the output of a launch is checked before a measurement is accepted."""

    kind: str  # see VALIDATIONS
    buffer: str | None = None
    expected: str | int | float | None = None  # "equals"
    reference: str | None = None  # "reference": function name in perfml.kernels.reference
    rtol: float = 1e-5
    atol: float = 0.0


@dataclass(frozen=True)
class LaunchSpec:
    """Launch configuration as written in the sidecar (expressions)."""

    block: tuple[str | int, str | int, str | int]
    blocks: tuple[str | int, str | int, str | int] | None = None
    blocks_per_sm: str | int | None = None
    shared_bytes: str | int = 0


@dataclass(frozen=True)
class LaunchConfig:
    """A resolved launch: grid and block dimensions and dynamic shared memory."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def threads(self) -> int:
        return self.blocks * self.threads_per_block

    def names(self) -> dict[str, int]:
        """The launch names available to sidecar expressions (``sms`` excluded)."""
        return {
            "threads": self.threads,
            "blocks": self.blocks,
            "threads_per_block": self.threads_per_block,
            "warps": self.blocks * math.ceil(self.threads_per_block / 32),
            "grid_x": self.grid[0],
            "grid_y": self.grid[1],
            "grid_z": self.grid[2],
            "block_x": self.block[0],
            "block_y": self.block[1],
            "block_z": self.block[2],
        }


@dataclass(frozen=True)
class KernelSpec:
    """One compilable kernel: a family with a variant's parameters applied."""

    name: str
    family: KernelFamily
    variant: str | None
    params: Mapping[str, int]
    target: str

    def compile_options(self, params: Mapping[str, int] | None = None) -> tuple[str, ...]:
        merged = dict(self.params)
        merged.update(params or {})
        return self.family.compile_options(merged)


@dataclass(frozen=True)
class KernelFamily:
    """A kernel family: one ``.cu`` source and its sidecar.

    Attributes mirror the sidecar keys documented in ``kernels/SIDECAR.md``.
    """

    name: str
    kind: str
    source: str
    entry: str
    component: str
    target: str
    description: str
    archs: tuple[str, ...]
    params: Mapping[str, Param]
    launch_spec: LaunchSpec
    args: tuple[ArgSpec, ...]
    validation: Validation
    sidecar_path: Path
    target_note: str = ""
    options: tuple[str, ...] = ()
    variants: Mapping[str, Variant] = field(default_factory=lambda: MappingProxyType({}))
    sweep: Sweep | None = None
    work_spec: Mapping[str, str | int | float] = field(
        default_factory=lambda: MappingProxyType({})
    )
    references: tuple[str, ...] = ()
    purity_region: str = "loop"

    # -- files
    @property
    def source_path(self) -> Path:
        """Absolute path of the CUDA source."""
        return self.sidecar_path.parent / self.source

    def read_source(self) -> str:
        return self.source_path.read_text(encoding="utf-8")

    # -- parameters
    def default_params(self) -> dict[str, int]:
        """Default value of every parameter."""
        return {name: p.default for name, p in self.params.items()}

    def resolve_params(self, params: Mapping[str, int] | None = None) -> dict[str, int]:
        """Defaults overridden by ``params``; unknown names and non-integers are refused."""
        merged = self.default_params()
        for name, value in (params or {}).items():
            if name not in self.params:
                raise KernelSidecarError(
                    f"{self.name}: unknown parameter {name!r}; expected one of "
                    f"{', '.join(sorted(self.params)) or '(none)'} (declared in "
                    f"{self.sidecar_path} [params])"
                )
            if isinstance(value, bool) or not isinstance(value, int):
                try:
                    as_int = int(value)
                except (TypeError, ValueError):
                    as_int = None
                if as_int is None or as_int != value:
                    raise KernelSidecarError(
                        f"{self.name}: parameter {name} must be an integer, found {value!r}"
                    )
                value = as_int
            merged[name] = int(value)
        return merged

    def compile_options(self, params: Mapping[str, int] | None = None) -> tuple[str, ...]:
        """Options for nvcc/NVRTC: ``-std=c++17``, sidecar ``options`` and sorted ``-D``s.

        The architecture is not included; the compiler or backend adds it. The tuple is
        deterministic, so it can serve as (part of) a cache key.
        """
        resolved = self.resolve_params(params)
        defines = tuple(
            f"-D{name}={value}" for name, value in sorted(resolved.items())
            if self.params[name].define
        )
        return ("-std=c++17", *self.options, *defines)

    # -- kernels (variants)
    def kernels(self) -> list[KernelSpec]:
        """One :class:`KernelSpec` per variant, or a single one named after the family."""
        if not self.variants:
            return [KernelSpec(self.name, self, None, MappingProxyType(self.default_params()),
                               self.target)]
        out = []
        for vname, var in self.variants.items():
            params = MappingProxyType(self.resolve_params(var.params))
            out.append(KernelSpec(f"{self.name}.{vname}", self, vname, params, var.target))
        return out

    def sweep_kernels(self) -> list[KernelSpec]:
        """Every variant at every sweep point, named ``kernel[P=v,...]``; :meth:`kernels`
        if the family has no sweep. Points differing only in launch-only parameters
        (``define = false``) compile to the same code and are listed once."""
        if self.sweep is None:
            return self.kernels()
        out, seen = [], set()
        for k in self.kernels():
            for point in self.sweep_points():
                params = dict(k.params)
                params.update({p: point[p] for p in self.sweep.grid})
                key = (k.name, self.compile_options(params))
                if key in seen:
                    continue
                seen.add(key)
                label = ",".join(f"{p}={point[p]}" for p in self.sweep.grid
                                 if self.params[p].define)
                name = f"{k.name}[{label}]" if label else k.name
                out.append(KernelSpec(name, self, k.variant, MappingProxyType(params), k.target))
        return out

    # -- sweep
    def sweep_points(self) -> list[dict[str, int]]:
        """Full parameter sets of the sweep (defaults overridden); ``[defaults]`` if none."""
        if self.sweep is None:
            return [self.default_params()]
        names = list(self.sweep.grid)
        points = []
        for combo in itertools.product(*(self.sweep.grid[n] for n in names)):
            points.append(self.resolve_params(dict(zip(names, combo))))
        return points

    # -- launch
    def _names(self, params: Mapping[str, int] | None, **extra: int) -> dict[str, int]:
        names: dict[str, Any] = self.resolve_params(params)
        names.update(extra)
        return names

    def _int(self, expr: str | int, names: Mapping[str, Any], key: str) -> int:
        try:
            value = evaluate(expr, names)
        except ExpressionError as exc:
            raise KernelSidecarError(f"{self.sidecar_path}: {key}: {exc}") from exc
        if value != int(value) or value < 0:
            raise KernelSidecarError(
                f"{self.sidecar_path}: {key} = {expr!r} gives {value}, expected a non-negative "
                f"integer; wrap it in ceil() or int()"
            )
        return int(value)

    def block(self, params: Mapping[str, int] | None = None) -> tuple[int, int, int]:
        """Block dimensions."""
        names = self._names(params)
        dims = tuple(self._int(e, names, "launch.block") for e in self.launch_spec.block)
        return dims  # type: ignore[return-value]

    def grid(self, params: Mapping[str, int] | None = None, sms: int = 1) -> tuple[int, int, int]:
        """Grid dimensions; ``blocks_per_sm * sms`` blocks unless ``blocks`` is given."""
        block = self.block(params)
        names = self._names(params, sms=sms, threads_per_block=block[0] * block[1] * block[2])
        if self.launch_spec.blocks is not None:
            dims = tuple(self._int(e, names, "launch.blocks") for e in self.launch_spec.blocks)
            return dims  # type: ignore[return-value]
        per_sm = self._int(self.launch_spec.blocks_per_sm or 1, names, "launch.blocks_per_sm")
        return (max(1, per_sm * sms), 1, 1)

    def launch(self, params: Mapping[str, int] | None = None, sms: int = 1) -> LaunchConfig:
        """Resolved :class:`LaunchConfig` for a device with ``sms`` multiprocessors."""
        grid = self.grid(params, sms)
        block = self.block(params)
        cfg = LaunchConfig(grid, block, 0)
        names = self._names(params, sms=sms, **cfg.names())
        shared = self._int(self.launch_spec.shared_bytes, names, "launch.shared_bytes")
        return LaunchConfig(grid, block, shared)

    def expression_names(
        self, params: Mapping[str, int] | None, launch: LaunchConfig, sms: int | None = None
    ) -> dict[str, Any]:
        """Everything a sidecar expression may refer to for this launch."""
        names = self._names(params, **launch.names())
        if sms is not None:
            names["sms"] = sms
        return names

    # -- arguments and work
    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise KernelSidecarError(f"{self.sidecar_path}: no argument named {name!r}")

    def buffer_elements(
        self, arg: ArgSpec | str, params: Mapping[str, int] | None, launch: LaunchConfig
    ) -> int:
        """Number of elements of a buffer argument for this launch."""
        spec = self.arg(arg) if isinstance(arg, str) else arg
        if spec.kind != "buffer" or spec.elements is None:
            raise KernelSidecarError(f"{self.sidecar_path}: argument {spec.name!r} is not a buffer")
        return self._int(spec.elements, self.expression_names(params, launch),
                         f"args.{spec.name}.elements")

    def scalar_value(
        self, arg: ArgSpec | str, params: Mapping[str, int] | None, launch: LaunchConfig
    ) -> int | float:
        """Value of a scalar argument for this launch."""
        spec = self.arg(arg) if isinstance(arg, str) else arg
        if spec.kind != "scalar":
            raise KernelSidecarError(f"{self.sidecar_path}: argument {spec.name!r} is not a scalar")
        try:
            value = evaluate(spec.value if spec.value is not None else 0,
                             self.expression_names(params, launch))
        except ExpressionError as exc:
            raise KernelSidecarError(f"{self.sidecar_path}: args.{spec.name}.value: {exc}") from exc
        return float(value) if spec.dtype.startswith("float") else int(value)

    def work(self, params: Mapping[str, int] | None, launch: LaunchConfig) -> dict[str, float]:
        """Per-thread work of one launch (``[work]`` expressions evaluated)."""
        names = self.expression_names(params, launch)
        out = {}
        for key, expr in self.work_spec.items():
            try:
                out[key] = float(evaluate(expr, names))
            except ExpressionError as exc:
                raise KernelSidecarError(f"{self.sidecar_path}: work.{key}: {exc}") from exc
        return out


# --------------------------------------------------------------------------- parsing


def _fail(path: Path, key: str, problem: str, fix: str) -> KernelSidecarError:
    return KernelSidecarError(f"{path}: {key}: {problem}; {fix}")


def _expect(table: Mapping[str, Any], key: str, types: type | tuple[type, ...], path: Path,
            where: str = "", required: bool = True, default: Any = None) -> Any:
    full = f"{where}{key}"
    if key not in table:
        if required:
            raise _fail(path, full, "missing", f"add `{key} = ...` (see kernels/SIDECAR.md)")
        return default
    value = table[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise _fail(path, full, f"expected {types}, found a boolean", "fix the value")
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise _fail(path, full, f"expected {names}, found {type(value).__name__} {value!r}",
                    "fix the value (see kernels/SIDECAR.md)")
    return value


def _check_expr(expr: Any, allowed: set[str], path: Path, key: str) -> None:
    if isinstance(expr, bool) or not isinstance(expr, (str, int, float)):
        raise _fail(path, key, f"expected a number or an expression string, found {expr!r}",
                    'write e.g. 1024 or "ITERS*8"')
    try:
        unknown = names_in(expr) - allowed
    except ExpressionError as exc:
        raise _fail(path, key, str(exc), "fix the expression") from exc
    if unknown:
        raise _fail(path, key, f"unknown name(s) {', '.join(sorted(unknown))} in {expr!r}",
                    f"declare them under [params] or use one of {', '.join(_LAUNCH_NAMES)}")


def _dims(value: Any, path: Path, key: str, allowed: set[str]) -> tuple[Any, Any, Any]:
    items = list(value) if isinstance(value, list) else [value]
    if not 1 <= len(items) <= 3:
        raise _fail(path, key, f"expected 1 to 3 dimensions, found {len(items)}",
                    "write a number, an expression or a list [x, y, z]")
    for item in items:
        _check_expr(item, allowed, path, key)
    while len(items) < 3:
        items.append(1)
    return tuple(items)  # type: ignore[return-value]


def load_family(sidecar: Path) -> KernelFamily:
    """Parse and check one sidecar.

    Raises
    ------
    KernelSidecarError
        Naming the file, the key and the fix, if anything is malformed.
    """
    path = Path(sidecar)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise KernelSidecarError(f"{path}: not valid TOML ({exc}); fix the syntax") from exc
    except OSError as exc:
        raise KernelSidecarError(f"{path}: cannot read sidecar ({exc})") from exc

    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise _fail(path, ", ".join(sorted(unknown)), "unknown key(s)",
                    f"remove them or use one of {', '.join(sorted(_TOP_KEYS))}")
    version = _expect(data, "schema_version", int, path, required=False, default=SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise _fail(path, "schema_version", f"found {version}, this perfml reads {SCHEMA_VERSION}",
                    "upgrade perfml or rewrite the sidecar")

    name = _expect(data, "name", str, path)
    if name != path.stem:
        raise _fail(path, "name", f"{name!r} differs from the file stem {path.stem!r}",
                    f'set name = "{path.stem}" or rename the file')
    kind = _expect(data, "kind", str, path)
    if kind not in KINDS:
        raise _fail(path, "kind", f"{kind!r} is not a kind", f"use one of {', '.join(KINDS)}")
    source = _expect(data, "source", str, path)
    source_path = path.parent / source
    if not source_path.is_file():
        raise _fail(path, "source", f"{source_path} does not exist", "create it or fix the name")
    entry = _expect(data, "entry", str, path)
    text = source_path.read_text(encoding="utf-8")
    if not re.search(r'extern\s+"C"\s+__global__\s+(?:[\w:]+\s+|__launch_bounds__\([^)]*\)\s+)*'
                     + re.escape(entry) + r"\s*\(", text):
        raise _fail(path, "entry", f'no `extern "C" __global__ void {entry}(` in {source}',
                    "declare the kernel extern \"C\" or fix the entry name")
    component = _expect(data, "component", str, path)
    target = _expect(data, "target", str, path)
    description = _expect(data, "description", str, path)
    target_note = _expect(data, "target_note", str, path, required=False, default="")
    archs = _expect(data, "archs", list, path)
    for arch in archs:
        if not isinstance(arch, str) or not _ARCH_RE.match(arch):
            raise _fail(path, "archs", f"{arch!r} is not an architecture", 'write e.g. "sm_90"')
    options = _expect(data, "options", list, path, required=False, default=[])
    for opt in options:
        if not isinstance(opt, str) or not opt.startswith("-") or opt.startswith("-D"):
            raise _fail(path, "options", f"{opt!r} is not allowed",
                        "list compiler flags such as \"-ftz=true\"; parameters go in [params]")

    # params
    params: dict[str, Param] = {}
    for pname, spec in _expect(data, "params", dict, path, required=False, default={}).items():
        if not _PARAM_RE.match(pname):
            raise _fail(path, f"params.{pname}", "not an upper-case C identifier",
                        "rename it, e.g. ITERS or GROUP_SIZE")
        if isinstance(spec, int) and not isinstance(spec, bool):
            spec = {"default": spec}
        if not isinstance(spec, dict):
            raise _fail(path, f"params.{pname}", f"expected a table, found {spec!r}",
                        f'write {pname} = {{ default = 1, description = "..." }}')
        default = _expect(spec, "default", int, path, f"params.{pname}.")
        extra = set(spec) - {"default", "description", "define"}
        if extra:
            raise _fail(path, f"params.{pname}.{sorted(extra)[0]}", "unknown key",
                        "a parameter has default, description and define")
        params[pname] = Param(pname, default,
                              _expect(spec, "description", str, path, f"params.{pname}.",
                                      required=False, default=""),
                              _expect(spec, "define", bool, path, f"params.{pname}.",
                                      required=False, default=True))
    allowed = set(params) | set(_LAUNCH_NAMES)

    # variants
    variants: dict[str, Variant] = {}
    for vname, spec in _expect(data, "variants", dict, path, required=False, default={}).items():
        where = f"variants.{vname}."
        if not isinstance(spec, dict):
            raise _fail(path, f"variants.{vname}", "expected a table",
                        f"write [variants.{vname}] with params = {{...}}")
        vparams = _expect(spec, "params", dict, path, where, required=False, default={})
        for pname, value in vparams.items():
            if pname not in params:
                raise _fail(path, f"{where}params.{pname}", "not declared under [params]",
                            "declare it or fix the name")
            if isinstance(value, bool) or not isinstance(value, int):
                raise _fail(path, f"{where}params.{pname}", f"expected an integer, found {value!r}",
                            "fix the value")
        variants[vname] = Variant(
            vname, MappingProxyType(dict(vparams)),
            _expect(spec, "target", str, path, where, required=False, default=target),
            _expect(spec, "description", str, path, where, required=False, default=""),
        )

    # sweep
    sweep = None
    if "sweep" in data:
        sw = _expect(data, "sweep", dict, path)
        grid: dict[str, tuple[int, ...]] = {}
        if "parameter" in sw:
            pname = _expect(sw, "parameter", str, path, "sweep.")
            grid[pname] = tuple(_expect(sw, "values", list, path, "sweep."))
        for pname, values in _expect(sw, "grid", dict, path, "sweep.", required=False,
                                     default={}).items():
            if not isinstance(values, list):
                raise _fail(path, f"sweep.grid.{pname}", "expected a list of integers",
                            f"write {pname} = [1, 2, 4]")
            grid[pname] = tuple(values)
        if not grid:
            raise _fail(path, "sweep", "no swept parameter",
                        'write parameter = "NAME" and values = [...], or [sweep.grid]')
        for pname, values in grid.items():
            if pname not in params:
                raise _fail(path, "sweep.parameter", f"{pname!r} is not declared under [params]",
                            "declare it or fix the name")
            if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                raise _fail(path, f"sweep values of {pname}", f"expected integers, found "
                            f"{list(values)!r}", "list integer values")
        sweep = Sweep(MappingProxyType(grid))
    elif kind == "dynamic":
        raise _fail(path, "sweep", "a dynamic family needs a sweep",
                    'add [sweep] with parameter = "NAME" and values = [...]')

    # work
    work = _expect(data, "work", dict, path, required=False, default={})
    for key, expr in work.items():
        _check_expr(expr, allowed, path, f"work.{key}")

    # launch
    launch = _expect(data, "launch", dict, path)
    if "threads_per_block" in launch and "block" in launch:
        raise _fail(path, "launch", "both threads_per_block and block given", "keep one of them")
    block_value = launch.get("block", launch.get("threads_per_block"))
    if block_value is None:
        raise _fail(path, "launch.threads_per_block", "missing",
                    "add threads_per_block = 256 or block = [16, 16]")
    block = _dims(block_value, path, "launch.block", set(params))
    blocks = None
    if "blocks" in launch:
        blocks = _dims(launch["blocks"], path, "launch.blocks",
                       set(params) | {"sms", "threads_per_block"})
    per_sm = launch.get("blocks_per_sm")
    if per_sm is not None:
        _check_expr(per_sm, set(params) | {"sms", "threads_per_block"}, path,
                    "launch.blocks_per_sm")
    if blocks is None and per_sm is None:
        raise _fail(path, "launch", "neither blocks nor blocks_per_sm given",
                    "add blocks_per_sm = 8 or blocks = \"ceil(N/256)\"")
    shared = launch.get("shared_bytes", 0)
    _check_expr(shared, allowed, path, "launch.shared_bytes")
    extra = set(launch) - {"threads_per_block", "block", "blocks", "blocks_per_sm", "shared_bytes"}
    if extra:
        raise _fail(path, f"launch.{sorted(extra)[0]}", "unknown key",
                    "use threads_per_block/block, blocks/blocks_per_sm, shared_bytes")
    launch_spec = LaunchSpec(block, blocks, per_sm, shared)

    # args
    args: list[ArgSpec] = []
    for i, spec in enumerate(_expect(data, "args", list, path)):
        where = f"args[{i}]."
        if not isinstance(spec, dict):
            raise _fail(path, f"args[{i}]", "expected a table", "write [[args]] entries")
        aname = _expect(spec, "name", str, path, where)
        akind = _expect(spec, "kind", str, path, where)
        dtype = _expect(spec, "dtype", str, path, where)
        if dtype not in DTYPES:
            raise _fail(path, f"{where}dtype", f"{dtype!r} is not supported",
                        f"use one of {', '.join(DTYPES)}")
        if akind == "buffer":
            elements = spec.get("elements")
            _check_expr(elements, allowed, path, f"{where}elements")
            init = _expect(spec, "init", str, path, where, required=False, default="zeros")
            if init not in INITS:
                raise _fail(path, f"{where}init", f"{init!r} is not an initialisation",
                            f"use one of {', '.join(INITS)}")
            init_value = spec.get("init_value")
            if init_value is not None:
                _check_expr(init_value, allowed, path, f"{where}init_value")
            if init in ("fill", "random_int") and init_value is None:
                raise _fail(path, f"{where}init_value", "missing", f"init = {init!r} needs it")
            stride = spec.get("stride")
            if init == "chase":
                if stride is None:
                    raise _fail(path, f"{where}stride", "missing",
                                "init = \"chase\" needs stride (elements between hops)")
                _check_expr(stride, allowed, path, f"{where}stride")
            args.append(ArgSpec(aname, "buffer", dtype, elements, None, init, init_value, stride,
                                bool(spec.get("output", False))))
        elif akind == "scalar":
            value = spec.get("value", 0)
            _check_expr(value, allowed, path, f"{where}value")
            args.append(ArgSpec(aname, "scalar", dtype, None, value))
        else:
            raise _fail(path, f"{where}kind", f"{akind!r} is not an argument kind",
                        'use "buffer" or "scalar"')
        extra = set(spec) - {"name", "kind", "dtype", "elements", "value", "init", "init_value",
                             "stride", "output", "description"}
        if extra:
            raise _fail(path, f"{where}{sorted(extra)[0]}", "unknown key",
                        "see kernels/SIDECAR.md for argument keys")
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise _fail(path, "args", "duplicate argument names", "give every argument its own name")

    # validation
    val = _expect(data, "validation", dict, path)
    vkind = _expect(val, "kind", str, path, "validation.")
    if vkind not in VALIDATIONS:
        raise _fail(path, "validation.kind", f"{vkind!r} is not a validation",
                    f"use one of {', '.join(VALIDATIONS)}")
    vbuffer = _expect(val, "buffer", str, path, "validation.", required=vkind != "none")
    if vbuffer is not None and vbuffer not in [a.name for a in args if a.kind == "buffer"]:
        raise _fail(path, "validation.buffer", f"{vbuffer!r} is not a buffer argument",
                    "name one of the [[args]] buffers")
    expected = val.get("expected")
    if vkind == "equals":
        if expected is None:
            raise _fail(path, "validation.expected", "missing", "kind = \"equals\" needs it")
        _check_expr(expected, allowed, path, "validation.expected")
    reference = _expect(val, "reference", str, path, "validation.", required=vkind == "reference")
    validation = Validation(vkind, vbuffer, expected, reference,
                            float(val.get("rtol", 1e-5)), float(val.get("atol", 0.0)))

    references = _expect(data, "references", list, path, required=False, default=[])
    region = _expect(data, "purity_region", str, path, required=False, default="loop")
    if region not in REGIONS:
        raise _fail(path, "purity_region", f"{region!r} is not a region",
                    f"use one of {', '.join(REGIONS)}")
    return KernelFamily(
        name=name, kind=kind, source=source, entry=entry, component=component, target=target,
        description=description, archs=tuple(archs), params=MappingProxyType(params),
        launch_spec=launch_spec, args=tuple(args), validation=validation,
        sidecar_path=path.resolve(), target_note=target_note, options=tuple(options),
        variants=MappingProxyType(variants), sweep=sweep,
        work_spec=MappingProxyType(dict(work)), references=tuple(str(r) for r in references),
        purity_region=region,
    )


def default_kernels_dir() -> Path:
    """``$PERFML_KERNELS_DIR`` if set, else the kernels shipped in the package (``perfml/kernels/cuda``)."""
    env = os.environ.get(KERNELS_DIR_ENV)
    if env:
        return Path(env)
    from importlib import resources

    return Path(str(resources.files("perfml.kernels") / "cuda"))


def load_catalog(root: Path | None = None) -> dict[str, KernelFamily]:
    """Every family under ``root`` (default :func:`default_kernels_dir`), sorted by name."""
    directory = Path(root) if root is not None else default_kernels_dir()
    if not directory.is_dir():
        raise KernelSidecarError(
            f"kernels directory {directory} does not exist; run from a perfml checkout or set "
            f"{KERNELS_DIR_ENV} to the directory holding the .cu/.toml pairs"
        )
    families = {}
    for sidecar in sorted(directory.glob("*.toml")):
        fam = load_family(sidecar)
        families[fam.name] = fam
    return families


def get_family(name: str, root: Path | None = None) -> KernelFamily:
    """One family by name."""
    catalog = load_catalog(root)
    if name not in catalog:
        raise UnknownKernelError(
            f"no kernel family {name!r}; known: {', '.join(catalog) or '(none)'}"
        )
    return catalog[name]


def iter_kernels(catalog: Mapping[str, KernelFamily]) -> list[KernelSpec]:
    """All kernels (variants expanded) of a catalog, in name order."""
    return [k for fam in catalog.values() for k in fam.kernels()]


def get_kernel(name: str, root: Path | None = None) -> KernelSpec:
    """One kernel by name: ``family`` or ``family.variant``."""
    family, _, _variant = name.partition(".")
    fam = get_family(family, root)
    for k in fam.kernels():
        if k.name == name:
            return k
    raise UnknownKernelError(
        f"no kernel {name!r}; {family} has {', '.join(k.name for k in fam.kernels())}"
    )
