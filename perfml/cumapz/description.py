"""The kernel description CuMAPz takes as input, and its TOML reader.

CuMAPz does not read CUDA source: the programmer gives "thread and grid dimension;
memory references in the program; loops and branches that have memory references;
and shared memory references" (Kim & Shrivastava 2011, Sec. 5, Fig. 4). A
description holds exactly that:

* ``[launch]``: grid and block sizes (expressions of ``[params]``), optionally a
  re-interpretation of the block index (diagonal block ordering, Sec. 6.1) and the
  registers per thread used for occupancy;
* ``[let]``: named sub-expressions (``row``, ``col``) evaluated in order;
* ``[arrays]``: global memory arrays and their element size in bytes;
* ``[[loops]]``: loops that contain memory references (``start``, ``stop``, ``step``);
* ``[buffers.NAME]``: shared memory arrays with their shape and element size, each
  with ``[[buffers.NAME.fetch]]`` data fetch / access reference pairs (the global
  index fetched and the shared index it is stored at) and optional
  ``[[buffers.NAME.access]]`` shared references that are not paired with a fetch;
* ``[[refs]]``: the global memory references in program order, each with its array,
  index, ``kind`` (read / write), optional guard ``when`` (an existing branch) and
  the loops it is nested in.

Indices are expressions of ``bx, by, tx, ty`` (block and thread index), ``gx, gy``
(grid size), ``bdx, bdy`` (block size), the loop variables, ``[params]`` and
``[let]`` names; see the ``cumapz`` dialect of :mod:`perfml._expr` for the accepted syntax.

The file starts with ``format = "perfml-cumapz"`` and ``version = 1`` (the older
``format = "perfml-cumapz/1"`` is still read); other versions are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable

from perfml._expr import CUMAPZ, Expression, ExpressionError
from perfml._files import check_versioned, read_versioned
from perfml.errors import KernelDescriptionError

Expr = Expression  # the name the description's fields use

__all__ = [
    "FORMAT",
    "KernelDescription",
    "GlobalArray",
    "Loop",
    "SharedBuffer",
    "FetchPair",
    "SharedAccess",
    "GlobalRef",
    "load_description",
    "parse_description",
]

#: the format name of a description file, and the versions this reader accepts
FORMAT = "perfml-cumapz"
VERSIONS = (1,)

BUILTIN_NAMES = frozenset({"bx", "by", "tx", "ty", "gx", "gy", "bdx", "bdy"})


@dataclass(frozen=True)
class GlobalArray:
    """A global memory array; ``elem_bytes`` is the size of one element."""

    name: str
    elem_bytes: int


@dataclass(frozen=True)
class Loop:
    """A loop containing memory references: ``for var in range(start, stop, step)``."""

    name: str
    start: Expr
    stop: Expr
    step: Expr


@dataclass(frozen=True)
class FetchPair:
    """A data fetch reference (global ``array[index]``) paired with its access
    reference (shared ``buffer[at]``): Kim & Shrivastava 2011, Sec. 5, Fig. 2 line 7."""

    array: str
    index: Expr
    at: tuple[Expr, ...]
    when: Expr | None
    loops: tuple[str, ...]


@dataclass(frozen=True)
class SharedAccess:
    """A shared memory reference that is not paired with a data fetch (temporary storage)."""

    at: tuple[Expr, ...]
    kind: str
    when: Expr | None
    loops: tuple[str, ...]


@dataclass(frozen=True)
class SharedBuffer:
    """A shared memory array: shape (row-major), element size, fetch pairs, accesses."""

    name: str
    elem_bytes: int
    shape: tuple[Expr, ...]
    fetches: tuple[FetchPair, ...]
    accesses: tuple[SharedAccess, ...]


@dataclass(frozen=True)
class GlobalRef:
    """A global memory reference of the kernel, in program order."""

    name: str
    array: str
    index: Expr
    kind: str
    when: Expr | None
    loops: tuple[str, ...]


@dataclass(frozen=True)
class KernelDescription:
    """Everything CuMAPz needs to emulate the memory accesses of one kernel version."""

    name: str
    title: str
    source: str
    params: dict[str, int]
    grid: tuple[Expr, Expr]
    block: tuple[Expr, Expr]
    block_index: dict[str, Expr]
    registers_per_thread: int | None
    let: dict[str, Expr]
    arrays: dict[str, GlobalArray]
    loops: dict[str, Loop]
    buffers: dict[str, SharedBuffer]
    refs: tuple[GlobalRef, ...]
    path: str | None = field(default=None, compare=False)

    def with_params(self, overrides: dict[str, int]) -> "KernelDescription":
        """A copy with some ``[params]`` replaced (e.g. a smaller ``MAX``)."""
        unknown = sorted(set(overrides) - set(self.params))
        if unknown:
            raise KernelDescriptionError(
                f"description {self.name!r} has no parameter(s) {', '.join(unknown)}; "
                f"its parameters are {', '.join(sorted(self.params)) or '(none)'}"
            )
        for key, value in overrides.items():
            _check_param_range(value, f"--set {key}")
        from dataclasses import replace

        return replace(self, params={**self.params, **overrides})


#: the range of a ``[params]`` value: a CUDA ``int`` (a larger one overflowed the analysis with a
#: message naming neither the file nor the parameter)
PARAM_RANGE = (-(2**31), 2**31 - 1)


def _check_param_range(value: int, where: str) -> None:
    if not PARAM_RANGE[0] <= value <= PARAM_RANGE[1]:
        raise KernelDescriptionError(f"{where}: {value} is outside a CUDA int's range [{PARAM_RANGE[0]}, "
                                     f"{PARAM_RANGE[1]}]; give a value within it")


def _where_in(path: str | None) -> Callable[[str], str]:
    """Return ``part -> "file: part"`` for error messages."""
    return lambda part: f"{path or '<description>'}: {part}"


def _table(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise KernelDescriptionError(f"{where}: expected a table, found {type(raw).__name__}")
    return raw


def _check_keys(raw: dict[str, Any], allowed: set[str], required: set[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise KernelDescriptionError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed keys are "
            f"{', '.join(sorted(allowed))}"
        )
    missing = sorted(required - set(raw))
    if missing:
        raise KernelDescriptionError(f"{where}: missing required key(s) {', '.join(missing)}")


def _pos_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise KernelDescriptionError(f"{where}: expected a positive integer, found {value!r}")
    return value


def _exprs(raw: Any, n: int | None, where: str) -> tuple[Expr, ...]:
    if not isinstance(raw, list) or not raw or (n is not None and len(raw) != n):
        want = f"a list of {n} expressions" if n else "a non-empty list of expressions"
        raise KernelDescriptionError(f"{where}: expected {want}, found {raw!r}")
    return tuple(compile_expr(v, f"{where}[{i}]") for i, v in enumerate(raw))


def _loop_names(raw: Any, loops: dict[str, Loop], where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise KernelDescriptionError(f"{where}: 'loops' must be a list of loop names, found {raw!r}")
    for name in raw:
        if name not in loops:
            raise KernelDescriptionError(
                f"{where}: loop {name!r} is not defined; defined loops are "
                f"{', '.join(loops) or '(none)'}; add a [[loops]] entry named {name!r}"
            )
    return tuple(raw)


def _kind(raw: Any, where: str) -> str:
    if raw not in ("read", "write"):
        raise KernelDescriptionError(f"{where}: 'kind' must be 'read' or 'write', found {raw!r}")
    return raw


def compile_expr(text: Any, where: str) -> Expression:
    """Parse one expression of a description (``cumapz`` dialect of :mod:`perfml._expr`).

    Raises
    ------
    KernelDescriptionError
        If it is not a number or an expression string, or the expression is malformed.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise KernelDescriptionError(
            f"{where}: expected an expression string or a number, found {text!r}"
        )
    try:
        return CUMAPZ.parse(text).at(where)
    except ExpressionError as exc:
        raise KernelDescriptionError(f"{where}: {exc}") from None


def parse_description(raw: dict[str, Any], path: str | None = None) -> KernelDescription:
    """Validate a parsed TOML document and build a :class:`KernelDescription`.

    Every problem raises :class:`~perfml.errors.KernelDescriptionError` naming the
    file, the entry and what is missing or wrong.
    """
    try:
        return _parse_description(raw, path)
    except ExpressionError as exc:  # an undefined name found by Expression.check_names
        raise KernelDescriptionError(str(exc)) from None


def _parse_description(raw: dict[str, Any], path: str | None) -> KernelDescription:
    w = _where_in(path)
    _check_keys(
        raw,
        {"format", "version", "name", "title", "source", "params", "launch", "let", "arrays", "loops",
         "buffers", "refs"},
        {"format", "name", "launch", "arrays", "refs"},
        w("top level"),
    )
    check_versioned(raw, w("format"), FORMAT, VERSIONS, error=KernelDescriptionError)
    params_raw = _table(raw.get("params", {}), w("[params]"))
    params: dict[str, int] = {}
    for key, value in params_raw.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise KernelDescriptionError(f"{w(f'[params] {key}')}: expected an integer, found {value!r}")
        _check_param_range(value, w(f"[params] {key}"))
        if key in BUILTIN_NAMES:
            raise KernelDescriptionError(f"{w(f'[params] {key}')}: {key!r} is a reserved index name")
        params[key] = value

    launch = _table(raw["launch"], w("[launch]"))
    _check_keys(launch, {"grid", "block", "block_index", "registers_per_thread"}, {"grid", "block"},
                w("[launch]"))
    grid = _exprs(launch["grid"], 2, w("[launch] grid"))
    block = _exprs(launch["block"], 2, w("[launch] block"))
    param_names = set(params)
    for e in (*grid, *block):
        e.check_names(param_names)
    block_index_raw = _table(launch.get("block_index", {}), w("[launch] block_index"))
    _check_keys(block_index_raw, {"bx", "by"}, set(), w("[launch] block_index"))
    block_index = {
        k: compile_expr(v, w(f"[launch] block_index.{k}")) for k, v in block_index_raw.items()
    }
    for e in block_index.values():
        e.check_names(param_names | {"bx", "by", "gx", "gy"})
    regs = launch.get("registers_per_thread")
    registers = None if regs is None else _pos_int(regs, w("[launch] registers_per_thread"))

    loops: dict[str, Loop] = {}
    for i, lraw in enumerate(raw.get("loops", [])):
        lw = w(f"[[loops]] #{i + 1}")
        lraw = _table(lraw, lw)
        _check_keys(lraw, {"name", "start", "stop", "step"}, {"name", "stop"}, lw)
        name = lraw["name"]
        if not isinstance(name, str) or not name.isidentifier() or name in BUILTIN_NAMES | param_names:
            raise KernelDescriptionError(f"{lw}: invalid or clashing loop name {name!r}")
        loop = Loop(
            name,
            compile_expr(lraw.get("start", 0), f"{lw} start"),
            compile_expr(lraw["stop"], f"{lw} stop"),
            compile_expr(lraw.get("step", 1), f"{lw} step"),
        )
        for e in (loop.start, loop.stop, loop.step):
            e.check_names(param_names)
        loops[name] = loop

    known = set(BUILTIN_NAMES) | param_names | set(loops)
    let: dict[str, Expr] = {}
    for key, value in _table(raw.get("let", {}), w("[let]")).items():
        if key in known:
            raise KernelDescriptionError(f"{w(f'[let] {key}')}: {key!r} clashes with another name")
        e = compile_expr(value, w(f"[let] {key}"))
        e.check_names(known)
        let[key] = e
        known.add(key)

    arrays: dict[str, GlobalArray] = {}
    for key, value in _table(raw["arrays"], w("[arrays]")).items():
        aw = w(f"[arrays] {key}")
        value = _table(value, aw)
        _check_keys(value, {"elem_bytes"}, {"elem_bytes"}, aw)
        arrays[key] = GlobalArray(key, _pos_int(value["elem_bytes"], f"{aw} elem_bytes"))
    if not arrays:
        raise KernelDescriptionError(f"{w('[arrays]')}: at least one global array is needed")

    buffer_names = set(raw.get("buffers", {}) if isinstance(raw.get("buffers"), dict) else ())

    def _array(name: Any, where: str) -> str:
        if name in buffer_names and name not in arrays:
            raise KernelDescriptionError(
                f"{where}: {name!r} is a shared memory buffer, not a global array; a global "
                "reference names the global array it reads or writes (under [arrays]), and the "
                "buffer serves it through its [[buffers.NAME.fetch]] pairs"
            )
        if name not in arrays:
            raise KernelDescriptionError(
                f"{where}: references undefined global array {name!r}; defined arrays are "
                f"{', '.join(arrays)}; add it under [arrays] with its elem_bytes"
            )
        return name

    def _when(value: Any, where: str) -> Expr | None:
        if value is None:
            return None
        e = compile_expr(value, f"{where} when")
        e.check_names(known)
        return e

    buffers: dict[str, SharedBuffer] = {}
    for bname, braw in _table(raw.get("buffers", {}), w("[buffers]")).items():
        bw = w(f"[buffers.{bname}]")
        braw = _table(braw, bw)
        _check_keys(braw, {"elem_bytes", "shape", "fetch", "access"}, {"elem_bytes", "shape"}, bw)
        shape = _exprs(braw["shape"], None, f"{bw} shape")
        for e in shape:
            e.check_names(param_names)
        fetches = []
        for i, fraw in enumerate(braw.get("fetch", [])):
            fw = f"{bw} fetch #{i + 1}"
            fraw = _table(fraw, fw)
            _check_keys(fraw, {"array", "index", "at", "when", "loops"}, {"array", "index", "at"}, fw)
            f = FetchPair(
                _array(fraw["array"], fw),
                compile_expr(fraw["index"], f"{fw} index"),
                _exprs(fraw["at"], len(shape), f"{fw} at"),
                _when(fraw.get("when"), fw),
                _loop_names(fraw.get("loops"), loops, fw),
            )
            for e in (f.index, *f.at):
                e.check_names(known)
            fetches.append(f)
        accesses = []
        for i, araw in enumerate(braw.get("access", [])):
            aw = f"{bw} access #{i + 1}"
            araw = _table(araw, aw)
            _check_keys(araw, {"at", "kind", "when", "loops"}, {"at", "kind"}, aw)
            a = SharedAccess(
                _exprs(araw["at"], len(shape), f"{aw} at"),
                _kind(araw["kind"], aw),
                _when(araw.get("when"), aw),
                _loop_names(araw.get("loops"), loops, aw),
            )
            for e in a.at:
                e.check_names(known)
            accesses.append(a)
        buffers[bname] = SharedBuffer(
            bname, _pos_int(braw["elem_bytes"], f"{bw} elem_bytes"), shape, tuple(fetches),
            tuple(accesses),
        )

    refs = []
    refs_raw = raw["refs"]
    if not isinstance(refs_raw, list) or not refs_raw:
        raise KernelDescriptionError(f"{w('[[refs]]')}: at least one global memory reference is needed")
    for i, rraw in enumerate(refs_raw):
        rw = w(f"[[refs]] #{i + 1}")
        rraw = _table(rraw, rw)
        _check_keys(rraw, {"name", "array", "index", "kind", "when", "loops"}, {"array", "index", "kind"}, rw)
        array = _array(rraw["array"], rw)
        r = GlobalRef(
            str(rraw.get("name", f"{array}[{rraw['index']}]")),
            array,
            compile_expr(rraw["index"], f"{rw} index"),
            _kind(rraw["kind"], rw),
            _when(rraw.get("when"), rw),
            _loop_names(rraw.get("loops"), loops, rw),
        )
        r.index.check_names(known)
        refs.append(r)

    name = raw["name"]
    if not isinstance(name, str) or not name:
        raise KernelDescriptionError(f"{w('name')}: expected a non-empty string")
    return KernelDescription(
        name=name,
        title=str(raw.get("title", name)),
        source=str(raw.get("source", "")),
        params=params,
        grid=(grid[0], grid[1]),
        block=(block[0], block[1]),
        block_index=block_index,
        registers_per_thread=registers,
        let=let,
        arrays=arrays,
        loops=loops,
        buffers=buffers,
        refs=tuple(refs),
        path=path,
    )


def load_description(path: str | Path) -> KernelDescription:
    """Read a CuMAPz description from a TOML file.

    Raises
    ------
    KernelDescriptionError
        If the file is missing, is not valid TOML, or the description is malformed.
    """
    from perfml._files import not_a_file

    p = Path(path)
    why = not_a_file(p)
    if why is not None and why != "is a directory":  # a directory: read_versioned says so
        raise KernelDescriptionError(
            f"description file {str(p)!r} {why}; pass a path to a .toml file or one "
            "of the shipped names (see `perfml cumapz list`)"
        )
    raw = read_versioned(p, FORMAT, VERSIONS, error=KernelDescriptionError, syntax="toml")
    return parse_description(raw, str(p))
