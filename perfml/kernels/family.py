"""The sidecar model: a kernel family, its parameters, variants, sweep, arguments and checks.

These frozen dataclasses mirror the keys of ``perfml/kernels/cuda/SIDECAR.md``;
:mod:`perfml.kernels.sidecar` builds them from a TOML file and
:mod:`perfml.kernels.catalog` collects them. Sidecar expressions (launch dimensions,
buffer sizes, work) are evaluated here, always through the bounded expression
sidecar dialect of :mod:`perfml._expr`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml.errors import KernelSidecarError
from perfml._expr import ExpressionError
from perfml._expr import evaluate_sidecar as evaluate
from perfml.kernels.launch import LaunchConfig

__all__ = [
    "DTYPES",
    "INITS",
    "KINDS",
    "PARAM_LIMIT",
    "REGIONS",
    "SCHEMA_VERSION",
    "VALIDATIONS",
    "ArgSpec",
    "KernelFamily",
    "KernelSpec",
    "LaunchSpec",
    "Param",
    "Sweep",
    "Validation",
    "Variant",
]

#: version of the sidecar schema this module reads
SCHEMA_VERSION = 1
#: allowed values of ``kind``
KINDS = ("static", "dynamic", "latency", "application")
#: allowed ``dtype`` values of arguments (numpy names)
DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64")
#: allowed ``init`` values of buffer arguments
INITS = ("zeros", "ones", "fill", "arange", "random", "random_int", "chase", "chase_random")
#: allowed ``validation.kind`` values
VALIDATIONS = ("untouched", "equals", "reference", "finite", "none")
#: environment variable that overrides the kernels directory
#: allowed ``purity_region`` values (see kernels/SIDECAR.md, "Purity")
REGIONS = ("loop", "target_loop", "kernel")


def read_cuda_source(source_path: Path, sidecar: Path) -> str:
    """The text of a family's ``.cu`` file; :class:`KernelSidecarError` naming that file (not the
    sidecar) if it is not UTF-8 text or cannot be read."""
    try:
        text = source_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KernelSidecarError(f"{source_path} (the source of {sidecar.name}): not UTF-8 text ({exc.reason} at byte "
                                 f"{exc.start}); save the CUDA source as UTF-8") from None
    except OSError as exc:
        raise KernelSidecarError(f"{source_path} (the source of {sidecar.name}): cannot be read "
                                 f"({exc.strerror or exc}); check the file") from None
    _refuse_file_includes(text, source_path)
    return text


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]*)[>"]', re.MULTILINE)


def _refuse_file_includes(text: str, source_path: Path) -> None:
    """Refuse an ``#include`` of a file: a ``"..."`` include, or a ``<...>`` one by path.

    A kernel source is compiled as it is (kernels/SIDECAR.md: no ``#include`` of project
    headers), and its fingerprint (``--resume``) and the compile cache hash the ``.cu`` text
    alone: an included file outside the kernels folder was compiled, and its edits reached
    neither the cache key nor the fingerprint (a stale cubin, a resumed sweep of another
    kernel). A toolkit header by name (``#include <cuda_fp16.h>``) stays allowed.
    """
    for match in _INCLUDE.finditer(text):
        bracket, name = match.groups()
        if bracket == '"' or name.startswith("/") or ".." in name.replace("\\", "/").split("/"):
            line = text.count("\n", 0, match.start()) + 1
            raise KernelSidecarError(
                f"{source_path}, line {line}: #include {bracket}{name}{'>' if bracket == '<' else bracket} includes a "
                "file; a kernel source holds its device code itself (kernels/SIDECAR.md): paste the code in, or "
                "include toolkit headers by name only (#include <cuda_fp16.h>)")


#: the fix a failed sidecar expression names: the values come from the sweep spec (a grid
#: value of 0 divides by zero as surely as a wrong formula does)
_FIX = "fix the expression, or choose parameter values it accepts (a sweep spec's params and launch)"


@dataclass(frozen=True)
class Param:
    """A compile-time constant of a family (``-DNAME=value``).

    ``minimum`` / ``maximum`` (the sidecar's ``min`` / ``max``) and ``choices`` (its
    ``values``) are the values the kernel is written for; ``None`` means no bound.
    """

    name: str
    default: int
    description: str = ""
    define: bool = True  # False: launch/argument-only, not passed as -D (e.g. an input size)
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[int, ...] | None = None

    def accepted(self) -> str:
        """The declared values in words (``"1 to 8"``, ``"one of 0, 1, 2"``, ``"any integer"``)."""
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        if self.minimum is not None and self.maximum is not None:
            return f"{self.minimum} to {self.maximum}"
        if self.minimum is not None:
            return f">= {self.minimum}"
        if self.maximum is not None:
            return f"<= {self.maximum}"
        return f"any integer of magnitude <= {PARAM_LIMIT}"

    def problem(self, value: int) -> str | None:
        """Why ``value`` is not a value of this parameter, or ``None``.

        A compile-time constant (``define``) that the sidecar does not bound is held to a
        32-bit ``int``: the kernels count with ``int`` (``for (int r = 0; r < REPS; ++r)``),
        and ilp's REPS = 100000000000 was planned (its estimate capped at the point limit)
        for a loop whose counter overflows before it ends (helper probe). A sidecar whose
        kernel counts further declares its ``max``.
        """
        if abs(value) > PARAM_LIMIT:
            return f"{value} is beyond a 64-bit integer"
        if self.define and self.maximum is None and self.choices is None and abs(value) > INT32_MAX:
            return (f"{value} is beyond a 32-bit int, which the kernels' counters hold (a sidecar whose kernel "
                    "takes more declares the parameter's max)")
        if ((self.choices is not None and value not in self.choices)
                or (self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)):
            return f"{value} is not {self.accepted()}"
        return None


#: the largest magnitude of a parameter value: it is a ``-D`` constant and an expression
#: operand, both 64-bit integers (a larger value was planned and failed at compile time)
PARAM_LIMIT = 2**63 - 1

#: the largest compile-time constant of a parameter without a declared ``max`` (:meth:`Param.problem`)
INT32_MAX = 2**31 - 1


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
    stride: str | int | None = None  # "chase", "chase_random": distance in elements between hop slots
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
        return read_cuda_source(self.source_path, self.sidecar_path)

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
                try:  # true / false are not numbers here (int(True) == 1 passed before)
                    as_int = None if isinstance(value, bool) else int(value)
                except (TypeError, ValueError, OverflowError):
                    as_int = None
                if as_int is None or as_int != value:
                    raise KernelSidecarError(
                        f"{self.name}: parameter {name} must be an integer, found {value!r}"
                    )
                value = as_int
            problem = self.params[name].problem(int(value))
            if problem:  # the kernel is written for its declared values (CHAINS = 0 or -1 was planned)
                raise KernelSidecarError(
                    f"{self.name}: parameter {name} = {problem}, the values its kernel is written for "
                    f"(declared in {self.sidecar_path} [params]); choose one of them"
                )
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

    def evaluate(self, expr: str | int | float, names: Mapping[str, Any], key: str,
                 error: type[Exception] = KernelSidecarError) -> int | float:
        """One sidecar expression, through the bounded expression evaluator.

        Every sidecar expression (launch dimensions, buffer sizes, scalar values, work,
        fill values, expected outputs) is evaluated here, so its cost is bounded by the
        evaluator and any failure (a bad expression, an overflow, a non-finite result)
        is one typed ``error`` naming the sidecar and the key.
        """
        try:
            value = evaluate(expr, names)
            finite = math.isfinite(value)
        except (ExpressionError, ArithmeticError, ValueError, TypeError) as exc:
            raise error(f"{self.sidecar_path}: {key}: {exc}; {_FIX}") from exc
        if not finite:
            raise error(f"{self.sidecar_path}: {key} = {expr!r} gives {value}, expected a "
                        f"finite number; {_FIX}")
        return value

    def _int(self, expr: str | int, names: Mapping[str, Any], key: str) -> int:
        value = self.evaluate(expr, names, key)
        if value != int(value) or value < 0:
            negative = [f"{n} = {v}" for n, v in names.items() if isinstance(v, (int, float)) and v < 0]
            if value < 0 and negative:  # the parameter is the mistake, not the sidecar's expression
                raise KernelSidecarError(
                    f"{self.name}: {key} = {expr!r} gives {value} with {', '.join(negative)}; "
                    "a negative parameter has no launch: give a positive value"
                )
            fix = ("a negative value has no launch: give one >= 0" if value < 0
                   else "wrap the expression in ceil() or int()")  # rounding cannot mend a negative value
            raise KernelSidecarError(
                f"{self.sidecar_path}: {key} = {expr!r} gives {value}, expected a non-negative integer; {fix}"
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
        per_sm = self._int(self.launch_spec.blocks_per_sm, names, "launch.blocks_per_sm")
        if per_sm < 1:  # was planned as 1 block per SM, silently
            raise KernelSidecarError(
                f"{self.sidecar_path}: launch.blocks_per_sm = {self.launch_spec.blocks_per_sm!r} gives {per_sm}; "
                "a launch needs at least 1 block per SM: give blocks_per_sm >= 1 (or blocks = ...)")
        return (per_sm * sms, 1, 1)

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
        value = self.evaluate(spec.value if spec.value is not None else 0,
                              self.expression_names(params, launch), f"args.{spec.name}.value")
        return float(value) if spec.dtype.startswith("float") else int(value)

    def check_at_defaults(self, sms: int = 1) -> None:
        """Evaluate the launch, the ``[work]`` keys and the ``[[args]]`` at the default parameters.

        A sidecar whose own defaults give no launch (0 or 2048 threads per block), divide by
        zero, or use a name a key cannot see (``sms`` in ``[work]``) loaded, was listed by
        ``perfml kernels list``, and failed only when a sweep was planned, where the message
        blamed the spec. Checked at load (on a one-SM device: ``sms`` is a device's), each
        failure names the sidecar and the key. An int32 scalar beyond int32 is refused too.
        """
        cfg = self.launch(None, sms=sms)
        problem = cfg.cuda_limit_violation()
        if problem:
            raise KernelSidecarError(f"{self.sidecar_path}: [launch] at the default parameters: {problem}; fix the "
                                     "sidecar's launch")
        self.work(None, cfg)
        for arg in self.args:
            if arg.kind == "buffer" and arg.elements is not None:
                self.buffer_elements(arg, None, cfg)
            elif arg.kind == "scalar":
                value = self.scalar_value(arg, None, cfg)
                if arg.dtype == "int32" and not -(2**31) <= value < 2**31:
                    raise KernelSidecarError(f"{self.sidecar_path}: args.{arg.name}.value gives {value}, beyond an "
                                             "int32; give a value in [-2**31, 2**31 - 1] or make the argument int64")

    def work(self, params: Mapping[str, int] | None, launch: LaunchConfig) -> dict[str, float]:
        """Per-thread work of one launch (``[work]`` expressions evaluated), each count >= 0.

        A negative count (flops, bytes, instructions) was written to the result set as a
        negative rate; it is an error in the sidecar, named with the key and the launch.
        """
        names = self.expression_names(params, launch)
        out = {}
        for key, expr in self.work_spec.items():
            value = float(self.evaluate(expr, names, f"work.{key}"))
            if value < 0:
                raise KernelSidecarError(
                    f"{self.sidecar_path}: work.{key} = {expr!r} gives {value:g} at {dict(params or {})}, expected "
                    "a count >= 0 (work per thread); fix the expression or the parameter's range")
            out[key] = value
        return out
