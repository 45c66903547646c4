"""Reading and checking one kernel sidecar (``<family>.toml``) into a :class:`KernelFamily`.

Every key is checked against ``perfml/kernels/cuda/SIDECAR.md``; a problem is a
:class:`~perfml.errors.KernelSidecarError` naming the file, the key and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfml._files import parse_table
from perfml.errors import KernelPathError, KernelSidecarError
from perfml._expr import ExpressionError
from perfml._expr import names_in_sidecar as names_in
from perfml.kernels.family import (
    DTYPES,
    INITS,
    KINDS,
    PARAM_LIMIT,
    REGIONS,
    SCHEMA_VERSION,
    VALIDATIONS,
    ArgSpec,
    KernelFamily,
    LaunchSpec,
    Param,
    Sweep,
    Validation,
    Variant,
    read_cuda_source,
)
from perfml.kernels.launch import LAUNCH_NAMES as _LAUNCH_NAMES
from perfml.kernels.options import check_sidecar_options

__all__ = ["MAX_SWEEP_POINTS", "WORK_KEYS", "fingerprint_text", "load_family"]

#: most points a sidecar's own [sweep] may expand to (`kernels check --sweep` compiles each)
MAX_SWEEP_POINTS = 1024

#: the counts a [work] table may give, per thread per launch (perfml/kernels/cuda/SIDECAR.md);
#: the result set's rates (instructions, flops, bytes per second) and the characterization
#: read them by these names, so a misspelt key (``flop``) left its column NaN in silence
WORK_KEYS = frozenset({
    "target_instructions", "unit_instructions", "issued_ffma_per_warp", "flops", "int_ops", "sfu_ops",
    "bytes", "dram_bytes", "l2_bytes", "shared_bytes", "constant_bytes", "global_loads", "global_stores",
    "shared_loads", "shared_wavefronts_per_warp", "lines_per_warp_load", "barriers", "hops", "warp_paths",
})

_TOP_KEYS = {
    "schema_version", "name", "kind", "source", "entry", "component", "target", "target_note",
    "description", "archs", "options", "params", "variants", "sweep", "work", "launch", "args",
    "validation", "references", "purity_region", "model",
}
_PARAM_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ARCH_RE = re.compile(r"^sm_\d{2,3}[a-z]?$")
#: Compute capability majors run to 12 (Blackwell) in 2026; a few generations of headroom,
#: while sm_999 (a typo) is refused instead of compiled for nothing. The registry holds a
#: board to the same limit (``perfml.boards._registry.MAX_CC_MAJOR``; a sibling package, not
#: imported: tests/test_kernels_hardening.py checks that the two agree).
_MAX_ARCH_MAJOR = 20


#: a parameter's declared values inside its inline table (``min = 1, `` / ``, max = 8`` /
#: ``values = [0, 1], ``), as :func:`fingerprint_text` leaves them out
_DECLARED_VALUES = re.compile(r"\b(?:min|max) = [-+]?\d+, |\bvalues = \[[^\]\n]*\], "
                              r"|, (?:min|max) = [-+]?\d+(?= \})|, values = \[[^\]\n]*\](?= \})")


def fingerprint_text(text: str) -> str:
    """A sidecar's text as the kernel fingerprint of a recording reads it (``plans.json``):
    without the values its parameters declare in their ``[params]`` inline tables.

    Declaring ``min = 1`` changes which values a sweep may plan, not the kernel a recorded
    value ran: hashed, it made every recording of the family unreplayable ("another version
    of kernel vectorAdd"). Every other byte of the sidecar counts, and a declaration written
    in another form (a ``[params.NAME]`` table) counts too: the check errs towards refusing.
    """
    out, in_params = [], False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("["):
            in_params = stripped.split("#")[0].strip() == "[params]"
        elif in_params and "{" in line:
            line = _DECLARED_VALUES.sub("", line)
        out.append(line)
    return "".join(out)


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
    if isinstance(expr, int) and abs(expr) > PARAM_LIMIT:  # an expression's own literals are held to int64
        raise _fail(path, key, f"{expr} is beyond a 64-bit integer", f"give a number of magnitude <= {PARAM_LIMIT}")
    try:
        unknown = names_in(expr) - allowed
    except ExpressionError as exc:
        raise _fail(path, key, str(exc), "fix the expression") from exc
    if unknown:
        launch_names = [name for name in _LAUNCH_NAMES if name in allowed]
        fix = (f"declare them under [params] or use one of {', '.join(launch_names)}" if launch_names
               else "declare them under [params]")
        if "sms" in unknown:  # the device's SM count is known where the grid is sized, not per launch
            fix += "; sms (the device's SM count) is known only in launch.blocks, launch.blocks_per_sm and " \
                   "launch.shared_bytes"
        raise _fail(path, key, f"unknown name(s) {', '.join(sorted(unknown))} in {expr!r}", fix)


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


def _parse_params(data: Mapping[str, Any], path: Path) -> dict[str, Param]:
    """``[params]``: upper-case names, integer defaults, optional description and define."""
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
        where = f"params.{pname}."
        default = _expect(spec, "default", int, path, where)
        extra = set(spec) - {"default", "description", "define", "min", "max", "values"}
        if extra:
            raise _fail(path, f"params.{pname}.{sorted(extra)[0]}", "unknown key",
                        "a parameter has default, description, define, and min / max or values")
        low = _expect(spec, "min", int, path, where, required=False)
        high = _expect(spec, "max", int, path, where, required=False)
        choices = _expect(spec, "values", list, path, where, required=False)
        if choices is not None:
            if low is not None or high is not None:
                raise _fail(path, f"params.{pname}", "gives both values and min / max",
                            "keep values (a list of the accepted values) or min / max (a range)")
            if not choices or any(isinstance(v, bool) or not isinstance(v, int) for v in choices):
                raise _fail(path, f"params.{pname}.values", f"expected a list of integers, found {choices!r}",
                            "write e.g. values = [0, 1, 2]")
            choices = tuple(choices)
        if low is not None and high is not None and low > high:
            raise _fail(path, f"params.{pname}", f"min = {low} is above max = {high}", "swap them")
        param = Param(pname, default,
                      _expect(spec, "description", str, path, where, required=False, default=""),
                      _expect(spec, "define", bool, path, where, required=False, default=True),
                      low, high, choices)
        for key, value in (("min", low), ("max", high), *(("values", v) for v in choices or ())):
            if value is not None and abs(value) > PARAM_LIMIT:
                raise _fail(path, f"params.{pname}.{key}", f"{value} is beyond a 64-bit integer",
                            f"give a value of magnitude <= {PARAM_LIMIT}")
        problem = param.problem(default)
        if problem:
            raise _fail(path, f"params.{pname}.default", problem, "give a default among the declared values")
        params[pname] = param
    return params


def _parse_variants(data: Mapping[str, Any], path: Path, params: Mapping[str, Param],
                    target: str) -> dict[str, Variant]:
    """``[variants.NAME]``: parameter sets over declared parameters."""
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
            problem = params[pname].problem(value)
            if problem:
                raise _fail(path, f"{where}params.{pname}", problem,
                            f"give a value among the declared ones, or widen params.{pname}")
        variants[vname] = Variant(
            vname, MappingProxyType(dict(vparams)),
            _expect(spec, "target", str, path, where, required=False, default=target),
            _expect(spec, "description", str, path, where, required=False, default=""),
        )
    return variants


def _parse_sweep(data: Mapping[str, Any], path: Path, params: Mapping[str, Param],
                 kind: str) -> Sweep | None:
    """``[sweep]`` (one parameter) or ``[sweep.grid]`` (a product); bounded in size."""
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
            for value in values:
                problem = params[pname].problem(value)
                if problem:
                    raise _fail(path, f"sweep values of {pname}", problem,
                                f"list only values among the declared ones, or widen params.{pname}")
        n_points = math.prod(len(v) for v in grid.values())
        if n_points > MAX_SWEEP_POINTS:
            raise _fail(path, "sweep", f"expands to {n_points} points, more than "
                        f"{MAX_SWEEP_POINTS}", "sweep fewer values here and put larger grids in "
                        "a sweep spec (perfml sweep plan --max-points N)")
        sweep = Sweep(MappingProxyType(grid))
    elif kind == "dynamic":
        raise _fail(path, "sweep", "a dynamic family needs a sweep",
                    'add [sweep] with parameter = "NAME" and values = [...]')
    return sweep


def _parse_launch(data: Mapping[str, Any], path: Path, params: Mapping[str, Param],
                  allowed: set[str]) -> LaunchSpec:
    """``[launch]``: block, blocks or blocks_per_sm, shared_bytes (expressions)."""
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
    _check_expr(shared, allowed | {"sms"}, path, "launch.shared_bytes")
    extra = set(launch) - {"threads_per_block", "block", "blocks", "blocks_per_sm", "shared_bytes"}
    if extra:
        raise _fail(path, f"launch.{sorted(extra)[0]}", "unknown key",
                    "use threads_per_block/block, blocks/blocks_per_sm, shared_bytes")
    launch_spec = LaunchSpec(block, blocks, per_sm, shared)
    return launch_spec


def _parse_args(data: Mapping[str, Any], path: Path, allowed: set[str]) -> list[ArgSpec]:
    """``[[args]]``: buffers and scalars in call order."""
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
            if init in ("chase", "chase_random"):
                if stride is None:
                    raise _fail(path, f"{where}stride", "missing",
                                f"init = \"{init}\" needs stride (elements between hops)")
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
    return args


def _parse_validation(data: Mapping[str, Any], path: Path, args: list[ArgSpec],
                      allowed: set[str]) -> Validation:
    """``[validation]``: how a launch's output is checked before timing."""
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
    tolerances = []
    for key, default in (("rtol", 1e-5), ("atol", 0.0)):
        value = _expect(val, key, (int, float), path, "validation.", required=False, default=default)
        if not (math.isfinite(value) and value >= 0):
            raise _fail(path, f"validation.{key}", f"{value!r} is not a finite tolerance >= 0",
                        "give a tolerance such as 1e-5 (an infinite one switches the check off)")
        tolerances.append(float(value))
    unknown = sorted(set(val) - {"kind", "buffer", "expected", "reference", "rtol", "atol"})
    if unknown:
        raise _fail(path, f"validation.{unknown[0]}", "unknown key",
                    "the keys are kind, buffer, expected, reference, rtol, atol (kernels/SIDECAR.md)")
    return Validation(vkind, vbuffer, expected, reference, *tolerances)


def _inside(sidecar: Path, name: str, root: Path) -> Path:
    """``root / name`` if it is a regular file inside ``root`` (symlinks resolved).

    A sidecar is data; the files it names must be the kernels directory's own, so an
    absolute path, a ``..`` step or a symlink leading out of ``root`` is refused.
    """
    where = f"{sidecar}: source"
    fix = f"name a .cu file inside {root} (a plain file name such as \"{sidecar.stem}.cu\")"
    rel = Path(name)
    if not name or rel.is_absolute() or rel.drive or ".." in rel.parts:
        raise KernelPathError(f"{where}: {name!r} leaves the kernels directory; {fix}")
    candidate = root / rel
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise KernelPathError(f"{where}: {candidate} does not exist; {fix}") from None
    if not resolved.is_relative_to(root.resolve()):
        raise KernelPathError(
            f"{where}: {name!r} resolves to {resolved}, outside the kernels directory; {fix}"
        )
    if not resolved.is_file():
        raise KernelPathError(f"{where}: {candidate} is not a regular file; {fix}")
    return resolved


def load_family(sidecar: Path, *, root: Path | None = None) -> KernelFamily:
    """Parse and check one sidecar.

    Parameters
    ----------
    sidecar : Path
        The ``<family>.toml`` file.
    root : Path, optional
        The kernels directory the sidecar's files must stay inside (default: the
        sidecar's own directory).

    Raises
    ------
    KernelSidecarError
        Naming the file, the key and the fix, if anything is malformed.
    KernelOptionError
        An ``options`` entry is not an allowed compiler flag (see :mod:`perfml.kernels.options`).
    KernelPathError
        ``source`` is absolute, climbs out with ``..`` or is a symlink leading outside.
    """
    path = Path(sidecar)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KernelSidecarError(f"{path}: is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                 "save the sidecar as UTF-8") from None
    except OSError as exc:
        raise KernelSidecarError(f"{path}: cannot read sidecar ({exc})") from exc
    data = parse_table(text, path, "toml", "kernel sidecar", KernelSidecarError)

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
    source_path = _inside(path, source, Path(root) if root is not None else path.parent)
    entry = _expect(data, "entry", str, path)
    text = read_cuda_source(source_path, path)
    if not re.search(r'extern\s+"C"\s+__global__\s+(?:[\w:]+\s+|__launch_bounds__\([^)]*\)\s+)*'
                     + re.escape(entry) + r"\s*\(", text):
        raise _fail(path, "entry", f'no `extern "C" __global__ void {entry}(` in {source}',
                    "declare the kernel extern \"C\" or fix the entry name")
    component = _expect(data, "component", str, path)
    target = _expect(data, "target", str, path)
    from perfml.kernels.sass import OPCODE_CLASSES

    if target not in OPCODE_CLASSES:  # found only by `kernels check`: list, plan and run took it
        raise _fail(path, "target", f"{target!r} is no purity target perfml knows",
                    f"use one of {', '.join(sorted(OPCODE_CLASSES))} (perfml.kernels.sass.OPCODE_CLASSES)")
    description = _expect(data, "description", str, path)
    target_note = _expect(data, "target_note", str, path, required=False, default="")
    archs = _expect(data, "archs", list, path)
    if not archs:  # nothing to compile or check: `kernels check` reported "0 checks, 0 failed"
        raise _fail(path, "archs", "is empty", 'list the architectures the kernel is built for, e.g. ["sm_80", "sm_90"]')
    for arch in archs:
        if not isinstance(arch, str) or not _ARCH_RE.match(arch):
            raise _fail(path, "archs", f"{arch!r} is not an architecture", 'write e.g. "sm_90"')
        digits = re.sub(r"[a-z]$", "", arch)[len("sm_"):]  # "sm_90a" -> "90": major 9, minor 0
        if not 1 <= int(digits[:-1]) <= _MAX_ARCH_MAJOR:
            raise _fail(path, "archs", f"{arch!r} is compute capability {int(digits[:-1])}.{digits[-1]}, "
                        f"beyond any GPU (majors 1 to {_MAX_ARCH_MAJOR})", 'write e.g. "sm_90"')
    if len(set(archs)) != len(archs):
        raise _fail(path, "archs", f"{archs!r} names an architecture twice", "list each once")
    options = check_sidecar_options(
        _expect(data, "options", list, path, required=False, default=[]), str(path)
    )

    params = _parse_params(data, path)
    # [work], [[args]] and [validation] are evaluated per launch, without the device's SM count
    allowed = set(params) | set(_LAUNCH_NAMES) - {"sms"}
    variants = _parse_variants(data, path, params, target)
    sweep = _parse_sweep(data, path, params, kind)

    work = _expect(data, "work", dict, path, required=False, default={})
    for key, expr in work.items():
        if key not in WORK_KEYS:
            import difflib

            close = difflib.get_close_matches(key, sorted(WORK_KEYS), n=1)
            raise _fail(path, f"work.{key}", "is not a work count perfml reads",
                        (f"did you mean {close[0]!r}? " if close else "") + f"use one of {', '.join(sorted(WORK_KEYS))}")
        _check_expr(expr, allowed, path, f"work.{key}")
    launch_spec = _parse_launch(data, path, params, allowed)
    args = _parse_args(data, path, allowed)
    validation = _parse_validation(data, path, args, allowed)

    references = _expect(data, "references", list, path, required=False, default=[])
    region = _expect(data, "purity_region", str, path, required=False, default="loop")
    if region not in REGIONS:
        raise _fail(path, "purity_region", f"{region!r} is not a region",
                    f"use one of {', '.join(REGIONS)}")
    family = KernelFamily(
        name=name, kind=kind, source=source, entry=entry, component=component, target=target,
        description=description, archs=tuple(archs), params=MappingProxyType(params),
        launch_spec=launch_spec, args=tuple(args), validation=validation,
        sidecar_path=path.resolve(), target_note=target_note, options=tuple(options),
        variants=MappingProxyType(variants), sweep=sweep,
        work_spec=MappingProxyType(dict(work)), references=tuple(str(r) for r in references),
        purity_region=region,
    )
    family.check_at_defaults()
    return family
