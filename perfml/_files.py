"""One way to read and write the versioned TOML and JSON files of perfml.

Convention
----------
Every file format perfml reads or writes names itself in two top-level keys::

    format = "perfml-<kind>"     # e.g. "perfml-experiment", "perfml-cumapz"
    version = 1                  # an integer; a reader lists the versions it knows

A reader refuses a file of another format or of a version it does not know, with a
one-line typed error naming the file, what was expected, what was found and the fix.
Files written before this convention are still read: a version under the old key
``schema_version`` (board registry, kernel sidecars, sweep result manifests) and a
version inside the format name (``format = "perfml-cumapz/1"``) are accepted; a
reader may also accept a file without ``format`` (``require_format=False``) or
without a version (``default_version=``) where such files exist in the wild.

Every failure to read is an error of the caller's choosing (a subclass of
:class:`~perfml.errors.PerfmlError`, :class:`~perfml.errors.FileFormatError` by
default): a missing file, a directory given as a file, an unreadable file, text
that is not UTF-8, malformed TOML or JSON, a top level that is not a table, a wrong
or missing format name, a missing or unknown version.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perfml._safe_output import write_text_atomic
from perfml.errors import FileFormatError, PerfmlError

__all__ = [
    "FORMAT_KEY",
    "LEGACY_VERSION_KEYS",
    "VERSION_KEY",
    "check_versioned",
    "not_a_file",
    "read_versioned",
    "write_json",
]

FORMAT_KEY = "format"
VERSION_KEY = "version"
#: older names of the version key, still accepted on reading
LEGACY_VERSION_KEYS = ("schema_version",)


def _syntax(path: Any, syntax: str | None) -> str:
    if syntax is not None:
        return syntax
    suffix = Path(str(getattr(path, "name", path))).suffix.lower()
    if suffix in (".toml", ".json"):
        return suffix[1:]
    raise FileFormatError(f"{path}: cannot tell whether it is TOML or JSON from its name; "
                          "name it *.toml or *.json")


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as a file ("does not exist", "is a FIFO, not a regular file", ...); None if it can.

    Opening a FIFO for reading blocks until something writes to it, so every file a user
    names is checked with this before it is opened (a named pipe given by mistake would
    hang the command instead of failing).
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    # (perfml._safe_output names the kinds of an output path the same way; a sibling module)
    kind = next((name for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                                         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
                 if test(mode)), "a special file")
    return f"is {kind}, not a regular file"


def _read_text(path: Any, fmt: str, error: type[PerfmlError]) -> str:
    """The UTF-8 text of ``path`` (a path or an importlib.resources Traversable)."""
    want = f"a {fmt!r} file"
    try:
        if isinstance(path, (str, os.PathLike)):
            p = Path(path)
            why = not_a_file(p)
            if why == "is a directory":
                raise error(f"{p}: is a directory, expected {want}; pass the file itself")
            if why is not None and why != "does not exist":
                raise error(f"{p}: {why}, expected {want}")
            return p.read_text(encoding="utf-8")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: file does not exist, expected {want}; check the path") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, expected {want}; pass the file itself") from None
    except PermissionError:
        raise error(f"{path}: permission denied reading {want}; make it readable") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: is not UTF-8 text ({exc.reason} at byte {exc.start}), expected "
                    f"{want}; is it the right file?") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc}), expected {want}") from None


#: Deepest nesting of tables and arrays a file perfml reads may have. perfml's own files
#: nest at most 8 levels (a booster's trees); the limit is fixed here rather than left to
#: the interpreter's recursion limit, which other libraries raise, so a deep file is
#: refused the same way on every machine.
MAX_NESTING = 64


def _nesting(value: Any) -> int:
    """How many tables and arrays deep ``value`` is (iterative: deep input cannot recurse)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


class _JSONValueError(ValueError):
    """A JSON document that parses but cannot be meant (the caller names the file)."""


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice: ``json`` keeps the last silently (TOML refuses it too)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _JSONValueError(f"key {key!r} is given twice in one object; keep one (JSON readers "
                                  "differ on which one wins)")
        out[key] = value
    return out


def _bounded_int(text: str) -> int | float:
    """A JSON integer; one too large for a float (no count or size perfml reads comes near) is refused."""
    # the length first: Python refuses to convert more than 4300 digits, in words about its own settings
    value = int(text) if len(text.lstrip("-")) <= 301 else math.inf
    if abs(value) > 1e300:
        raise _JSONValueError(f"the integer {text[:12]}... ({len(text.lstrip('-'))} digits) is too large for "
                              "any value perfml reads; fix the number")
    return value


def parse_table(text: str, path: Any, syntax: str, what: str, error: type[PerfmlError],
                *, non_finite: bool = False) -> dict:
    """Parse ``text`` as TOML or JSON (``syntax``) and return its top-level table.

    ``error`` names ``path`` and the fix for bad syntax, JSON's ``NaN`` / ``Infinity``
    (unless ``non_finite``: a reader that checks every value itself, and names the field,
    may take them), a top level that is not a table, and nesting deeper than
    :data:`MAX_NESTING`.
    """
    too_deep = (f"{path}: not valid {syntax.upper()} for perfml (nested too deeply: more than "
                f"{MAX_NESTING} levels of tables or arrays); give the file perfml wrote, or one in "
                "its documented layout")
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write, as in the CSV inputs
    try:
        if syntax == "toml":
            data: Any = tomllib.loads(text)
        else:
            data = json.loads(text, parse_constant=None if non_finite else _refuse_constant,
                              object_pairs_hook=_object_without_duplicates, parse_int=_bounded_int)
    except _JSONValueError as exc:
        raise error(f"{path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc}); fix the syntax") from None
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column "
                    f"{exc.colno}); fix the syntax") from None
    except ValueError as exc:
        raise error(f"{path}: not valid JSON ({exc}); fix the value") from None
    except RecursionError:
        raise error(too_deep) from None
    if _nesting(data) > MAX_NESTING:  # first: what the interpreter could not parse is refused so too
        raise error(too_deep)
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object at the top level (a {what} document), "
                    f"found a JSON {type(data).__name__}")
    return data


def read_json_object(path: str | os.PathLike, what: str, *, error: type[PerfmlError] = FileFormatError) -> dict[str, Any]:
    """A JSON file holding one object (no format or version of perfml's own, e.g. recorded
    device properties), read with the checks of :func:`read_versioned`: ``error`` naming the
    file for an unreadable file, bad syntax, ``NaN`` / ``Infinity``, deep nesting or a
    top level that is not an object."""
    return parse_table(_read_text(path, what, error), path, "json", what, error)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_versioned(data: Mapping[str, Any], where: Any, format_name: str,
                    supported_versions: Iterable[int], *, error: type[PerfmlError] = FileFormatError,
                    require_format: bool = True, default_version: int | None = None,
                    label: str | None = None) -> int:
    """Check the format name and version of an already-parsed document; return the version.

    Parameters
    ----------
    data : mapping
        The parsed document.
    where : str or path
        Named in the error messages (the file).
    format_name : str
        The expected ``format`` value, e.g. ``"perfml-experiment"``.
    supported_versions : iterable of int
        The versions this reader knows.
    error : type, default FileFormatError
        The PerfmlError subclass to raise.
    require_format : bool, default True
        Refuse a document without a ``format`` key.
    default_version : int, optional
        Version assumed when the document carries none; ``None`` refuses such files.
    label : str, optional
        What the file is, in words (``"characterization"``); default ``format_name``.

    Raises
    ------
    PerfmlError
        ``error``, on a wrong or missing format name or a missing or unknown version.
    """
    supported = tuple(supported_versions)
    want = f"format = {format_name!r} with version in {list(supported)}"
    found_format = data.get(FORMAT_KEY)
    version: Any = data.get(VERSION_KEY)
    version_key = VERSION_KEY
    for key in LEGACY_VERSION_KEYS:
        if version is None and key in data:
            version, version_key = data[key], key
    if isinstance(found_format, str) and "/" in found_format:  # "perfml-cumapz/1"
        base, _, tail = found_format.rpartition("/")
        if tail.isdigit():
            found_format = base
            if version is None:
                version = int(tail)
    if found_format is None:
        if require_format:
            raise error(f"{where}: missing `{FORMAT_KEY} = {format_name!r}`; expected {want}; "
                        "add the key at the top of the file")
    elif found_format != format_name:
        raise error(f"{where}: unsupported format {data.get(FORMAT_KEY)!r}, expected {want}; "
                    "is it the right file?")
    if version is None:
        if default_version is None:
            keys = " or ".join(f"`{k} = N`" for k in (VERSION_KEY, *LEGACY_VERSION_KEYS))
            raise error(f"{where}: missing {keys}; expected {want}; add the "
                        "version the file was written for")
        version = default_version
    if isinstance(version, bool) or not isinstance(version, int) or version not in supported:
        raise error(f"{where}: unknown {label or format_name} {version_key} {version!r} (format "
                    f"{format_name!r}), this perfml reads version(s) {list(supported)}; upgrade "
                    "perfml or rewrite the file")
    return version


def read_versioned(path: str | os.PathLike | Any, format_name: str,
                   supported_versions: Iterable[int], *, error: type[PerfmlError] = FileFormatError,
                   syntax: str | None = None, require_format: bool = True,
                   default_version: int | None = None, label: str | None = None) -> dict[str, Any]:
    """Read a versioned TOML or JSON file and return its top-level table.

    Parameters
    ----------
    path : path or importlib.resources Traversable
        The file; ``.toml`` or ``.json`` tells the syntax unless ``syntax`` is given.
    format_name, supported_versions, error, require_format, default_version, label
        See :func:`check_versioned`.
    syntax : {"toml", "json"}, optional

    Returns
    -------
    dict
        The parsed document (``format`` and ``version`` keys included).

    Raises
    ------
    PerfmlError
        ``error``, naming the file, the expected format and version, what was found
        and the fix.
    """
    kind = _syntax(path, syntax)
    text = _read_text(path, format_name, error)
    data = parse_table(text, path, kind, format_name, error)
    check_versioned(data, path, format_name, supported_versions, error=error,
                    require_format=require_format, default_version=default_version, label=label)
    return data


def _no_nan(value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise FileFormatError(f"{where}: cannot write the non-finite number {value!r} as JSON; "
                              "replace it with null or a finite value")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _no_nan(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _no_nan(v, f"{where}[{i}]")


def write_json(path: str | os.PathLike, data: Mapping[str, Any], format_name: str, version: int,
               *, overwrite: bool = False, error: type[PerfmlError] = FileFormatError) -> Path:
    """Write ``data`` as a versioned JSON file (``format`` and ``version`` first).

    The JSON is strict (no NaN or Infinity); an existing file is replaced only with
    ``overwrite=True``, and only if it is a regular file. The writing is
    :func:`perfml._safe_output.write_text_atomic`'s: a temporary file in the same directory
    put in place at the end, so a crash never leaves half a file, and, without
    ``overwrite``, put in place only if no file has the name by then (a file another
    program wrote meanwhile is kept).

    Raises
    ------
    PerfmlError
        ``error`` if the file exists (without ``overwrite``) or is not a regular file,
        or cannot be written; FileFormatError for a non-finite number.
    """
    path = Path(path)
    doc = {FORMAT_KEY: format_name, VERSION_KEY: version,
           **{k: v for k, v in data.items() if k not in (FORMAT_KEY, VERSION_KEY)}}
    _no_nan(doc, str(path))
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise error(f"{path} exists; choose another file or pass overwrite")
        if not path.is_file() or path.is_symlink():
            raise error(f"{path} is not a regular file; perfml writes only regular files")
    text = json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n"
    try:
        return write_text_atomic(path, text, overwrite=overwrite, option="file")
    except PerfmlError as exc:  # created meanwhile, made a link or a directory meanwhile, or cannot be written
        raise error(str(exc)) from None
