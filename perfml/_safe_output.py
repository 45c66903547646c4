"""Writing output files and directories without destroying what is not perfml's.

Rules every writer here follows:

* **Regular files only.** An existing output path must be a regular file; a device
  node (``/dev/full``), FIFO, socket or directory is refused with
  :class:`~perfml.errors.UnsafeOutputError`. A symbolic link is refused too (it is not
  resolved): following it would write wherever the link points, which the user did not
  name; give the link's target instead.
* **Never overwrite silently.** An existing file is replaced only with ``overwrite=True``
  (:class:`~perfml.errors.ResultFileExistsError` otherwise).
* **Atomic.** Content goes to a temporary file in the same directory, which then
  replaces the target with :func:`os.replace`; a failure (disk full, read-only file
  system, a killed process) leaves the old file, and no temporary file, behind. Without
  ``overwrite`` the finished file is put in place with :func:`os.link` (POSIX ``link(2)``
  fails on an existing name), so a file another program created there while perfml was
  writing is refused, not replaced; a file system without hard links falls back to the
  check just before :func:`os.replace`.
* **The user's umask.** The new file gets mode ``0o666 & ~umask``, as ``open()`` would
  give it (a bare :func:`tempfile.mkstemp` would leave it ``0o600``).

Directories (model directories) are replaced by :func:`replace_directory`: only a
directory the caller recognizes as its own may be replaced, never ``/``, the home
directory, the working directory or one of its parents.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from perfml.errors import OutputWriteError, ResultFileExistsError, UnsafeOutputError

__all__ = [
    "check_output_path",
    "atomic_output",
    "write_bytes_atomic",
    "write_text_atomic",
    "write_dataframe_atomic",
    "table_format",
    "current_umask",
    "replace_directory",
    "make_staging_directory",
]


def current_umask() -> int:
    """The process umask.

    Read from ``/proc/self/status`` where Linux offers it (no change to the process);
    elsewhere set and restored at once with :func:`os.umask`.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def check_output_path(path, *, overwrite: bool = False, option: str = "--output", inputs=None,
                      input_dirs=None) -> Path:
    """Check that ``path`` may be written as a regular file; return it as a :class:`Path`.

    ``inputs``: ``{option: path}`` of the files the command reads; an output that is one of
    them is refused even with ``overwrite`` (``--overwrite --output q.csv --queries q.csv``
    replaced the user's queries with the predictions). ``input_dirs``: ``{option: path}``
    of directories the command reads as a whole (a model directory); an output anywhere
    under one is refused: ``--output MODEL/perfml-model.json --overwrite`` replaced the
    model's manifest, and a new file there made the directory no saved model any more.

    Raises
    ------
    UnsafeOutputError
        If ``path`` exists and is not a regular file (device, FIFO, socket, directory,
        symbolic link), or its parent exists and is not a directory, or it is an input,
        or it lies in an input directory, or it ends with a path separator.
    ResultFileExistsError
        If ``path`` is an existing regular file and ``overwrite`` is False.
    """
    if not str(path).strip():  # Path("") is ".", the working directory
        raise UnsafeOutputError(f"{option} is empty; give the name of the file to write")
    if str(path).endswith(("/", os.sep)):  # Path("out/") is Path("out"): a file would be written where a folder was meant
        raise UnsafeOutputError(f"{option} {path} ends with {str(path)[-1]!r}, so it names a directory; give the name "
                                f"of the file to write (for example {Path(path) / 'predictions.csv'})")
    path = Path(path)
    for name, given in (input_dirs or {}).items():
        if given is not None and _is_under(path, given):
            raise UnsafeOutputError(f"{option} {path} lies in the directory given as {name} ({given}), which the "
                                    f"command reads; writing there would change it: choose a file outside it")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise UnsafeOutputError(f"a parent of {path} is not a directory, so it cannot be written; choose another {option}") from None
    except OSError as exc:
        raise OutputWriteError(f"cannot inspect {path} ({exc.strerror}); choose another {option}") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeOutputError(
                f"{path} is a symbolic link; perfml writes only regular files and does not follow links: "
                f"give the link's target ({os.path.realpath(path)}) or another {option}"
            )
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeOutputError(
                f"{path} is {_kind(st.st_mode)}, not a regular file; perfml writes only regular files: choose another {option}"
            )
        for name, given in (inputs or {}).items():
            if given is not None and _same_file(path, given):
                raise UnsafeOutputError(
                    f"{option} {path} is the file given as {name}; writing it would replace what the command reads "
                    f"(--overwrite included): choose another {option}"
                )
        if not overwrite:
            raise ResultFileExistsError(f"{path} exists; choose another {option} or pass --overwrite to replace it")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise UnsafeOutputError(f"{parent} is not a directory, so {path} cannot be written; choose another {option}")
    return path


def _is_under(path: Path, directory) -> bool:
    """Whether ``path`` (existing or not) lies in ``directory`` or below it, links resolved."""
    try:
        top = Path(directory).resolve()
        return top.is_dir() and top in Path(path).resolve().parents
    except (OSError, RuntimeError):  # unresolvable (a link loop): no directory the command could read
        return False


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # absent, unreadable: not the same file as an existing output
        return False


@contextlib.contextmanager
def atomic_output(path, *, overwrite: bool = False, option: str = "--output") -> Iterator[Path]:
    """Context manager yielding a temporary path that replaces ``path`` on success.

    The temporary file lies in the target's directory (so :func:`os.replace` is atomic);
    it is removed on any error. The target is checked before writing and again just
    before the replacement (it must still be absent or a regular file).
    """
    path = check_output_path(path, overwrite=overwrite, option=option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise OutputWriteError(f"cannot create a file in {path.parent} ({exc.strerror}); choose another {option}") from None
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask())
        check_output_path(path, overwrite=overwrite, option=option)  # still a regular file (or absent)?
        if overwrite:
            os.replace(tmp, path)
        else:
            _put_if_absent(tmp, path, option)
    except OSError as exc:
        raise OutputWriteError(
            f"writing {path} failed ({exc.strerror or exc}); nothing was written: free space or choose another {option}"
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


#: errors of os.link on a file system (or for a file) that has no hard links
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS}


def _put_if_absent(tmp: Path, path: Path, option: str) -> None:
    """Give the finished ``tmp`` the name ``path`` only if no file has it: between the last
    check and a plain :func:`os.replace` another program (a second ``perfml predict`` with
    the same ``--output``) could write ``path``, and the replace would destroy its file."""
    try:
        os.link(tmp, path)  # atomic, and fails if path exists; tmp is removed by the caller
    except FileExistsError:
        raise ResultFileExistsError(
            f"{path} was created by another program while perfml was writing it; it was left as it is and nothing "
            f"was written: choose another {option}, or pass --overwrite to replace it"
        ) from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        os.replace(tmp, path)  # no hard links here: the check just before is the guard


def write_bytes_atomic(path, data: bytes, *, overwrite: bool = False, option: str = "--output") -> Path:
    """Write ``data`` to the regular file ``path`` atomically (see :func:`atomic_output`)."""
    with atomic_output(path, overwrite=overwrite, option=option) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def write_text_atomic(path, text: str, *, overwrite: bool = False, encoding: str = "utf-8", option: str = "--output") -> Path:
    """Write ``text`` to the regular file ``path`` atomically (see :func:`atomic_output`)."""
    return write_bytes_atomic(path, text.encode(encoding), overwrite=overwrite, option=option)


#: compressions of a CSV output by its name's last suffix (those of the standard library, which
#: pandas also reads a query file with)
CSV_COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}
#: suffixes of table formats perfml does not write (a CSV under such a name would be misread)
_OTHER_TABLE_FORMATS = (".xlsx", ".xls", ".xlsm", ".ods", ".tsv", ".tab", ".feather", ".arrow", ".orc", ".avro",
                        ".h5", ".hdf", ".hdf5", ".pkl", ".pickle", ".npy", ".npz", ".sqlite", ".db",
                        ".zip", ".zst", ".7z", ".tar")


def table_format(path, option: str = "--output") -> tuple[str, str | None]:
    """(format, compression) :func:`write_dataframe_atomic` writes ``path`` in, by its name.

    ``*.parquet``: Parquet; ``*.json``: JSON records; ``*.gz``, ``*.bz2``, ``*.xz``: CSV so
    compressed; any other name: CSV.

    Raises
    ------
    UnsafeOutputError
        For a name of another format (``.xlsx``, ``.tsv``, ``.zip``, ...): a CSV written
        under it would not be what its name says.
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return "parquet", None
    if suffix == ".json":
        return "json", None
    if suffix in CSV_COMPRESSIONS:
        return "csv", CSV_COMPRESSIONS[suffix]
    if suffix in _OTHER_TABLE_FORMATS:
        raise UnsafeOutputError(
            f"{option} {path}: perfml does not write {suffix} files; name it .csv (comma-separated), .csv.gz, "
            ".csv.bz2 or .csv.xz (compressed), .parquet or .json")
    return "csv", None


def write_dataframe_atomic(frame, path, *, overwrite: bool = False, option: str = "--output") -> Path:
    """Write a DataFrame atomically in the format its name says (:func:`table_format`)."""
    path = Path(path)
    kind, compression = table_format(path, option)
    with atomic_output(path, overwrite=overwrite, option=option) as tmp:
        if kind == "parquet":
            frame.to_parquet(tmp, index=False)
        elif kind == "json":
            # 15 decimals, pandas' most (its default, 10, wrote 1.2e-11 ms as 0)
            tmp.write_text(frame.to_json(orient="records", indent=2, double_precision=15))
        else:
            # a fixed gzip time stamp: the same predictions give the same bytes
            frame.to_csv(tmp, index=False, compression={"method": compression, "mtime": 0}
                         if compression == "gzip" else compression)
    return path


# -- directories --------------------------------------------------------------------------
def _protected(path: Path) -> str | None:
    """Why ``path`` must never be replaced as a whole (None when it may be)."""
    try:
        real = path.resolve()
    except OSError:
        return None
    if real == Path(real.anchor):
        return "the root directory"
    if real == Path.home().resolve():
        return "your home directory"
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        return "the working directory or one of its parents"
    return None


def make_staging_directory(target, *, option: str = "--out") -> Path:
    """A new empty directory beside ``target`` (same file system), mode ``0o777 & ~umask``."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        os.chmod(staging, 0o777 & ~current_umask())
    except OSError as exc:
        raise OutputWriteError(f"cannot create a directory in {target.parent} ({exc.strerror}); choose another {option}") from None
    return staging


def replace_directory(staging, target, *, overwrite: bool, is_own: Callable[[Path], str | None],
                      what: str = "directory", option: str = "--out") -> Path:
    """Move the finished ``staging`` directory to ``target``.

    An existing ``target`` is replaced only when ``overwrite`` is True **and** ``is_own``
    returns None for it (``is_own`` returns why the directory is not the caller's, e.g.
    "it has no perfml-model.json"). The old directory is first renamed aside, the new one
    renamed into place, and only then the old one deleted, so a failure leaves the old
    directory in place. ``staging`` is removed on any failure.

    Raises
    ------
    ResultFileExistsError
        ``target`` exists and ``overwrite`` is False.
    UnsafeOutputError
        ``target`` is a symbolic link, a file, a protected directory or not the caller's.
    OutputWriteError
        The operating system refused a rename.
    """
    staging, target = Path(staging), Path(target)
    aside = None
    try:
        if os.path.lexists(target):
            st = os.lstat(target)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafeOutputError(f"{target} is a symbolic link; perfml replaces only a {what} it wrote itself: choose another {option}")
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafeOutputError(f"{target} is {_kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else 'a file'}, "
                                        f"not a {what}; perfml will not replace it: choose another {option}")
            if not overwrite:
                raise ResultFileExistsError(f"{target} exists; choose another {option} directory or pass --overwrite to replace it")
            why = _protected(target)
            if why is None:
                why = is_own(target)
            if why is not None:
                raise UnsafeOutputError(f"refusing to replace {target}: it is not a {what} ({why}); --overwrite replaces only a "
                                        f"{what} perfml wrote: choose another {option}")
            aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.rename(target, aside / "old")
        os.rename(staging, target)
    except OSError as exc:
        if aside is not None and (aside / "old").exists() and not os.path.lexists(target):
            os.rename(aside / "old", target)
        raise OutputWriteError(f"cannot move the new {what} to {target} ({exc.strerror}); nothing was replaced") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    return target
