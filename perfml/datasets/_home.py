"""Where the measured data live.

The *data home* is a directory with the tables of ``shared/datasets`` (same file
names and schema). It is chosen, in order, by an explicit argument (``--data-home``),
the ``PERFML_DATA_HOME`` environment variable, or the ``shared/datasets`` directory
beside the repository checkout (so a fresh clone works without any setting).
perfml never copies these files into its own repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from perfml.errors import DataHomeError

ENV_VAR = "PERFML_DATA_HOME"

# Every data home has at least this table; it identifies a directory as one.
_MARKER = "runtimes.csv.gz"


def _default_candidates() -> list[Path]:
    repo_root = Path(__file__).resolve().parents[2]
    candidates = [repo_root.parent / "shared" / "datasets", repo_root / "shared" / "datasets"]
    cwd = Path.cwd().resolve()
    for base in (cwd, *cwd.parents):
        candidates.append(base.parent / "shared" / "datasets")
        candidates.append(base / "shared" / "datasets")
    return candidates


def resolve_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """Return the data home directory, checked to exist and to hold the tables.

    Parameters
    ----------
    data_home : path-like, optional
        Explicit directory. When omitted, ``$PERFML_DATA_HOME`` is used, then the
        ``shared/datasets`` directory beside the repository.

    Raises
    ------
    DataHomeError
        If the directory does not exist or holds no ``runtimes.csv.gz``.
    """
    if data_home is not None:
        return _checked(Path(data_home).expanduser(), "--data-home")
    env = os.environ.get(ENV_VAR)
    if env:
        return _checked(Path(env).expanduser(), f"${ENV_VAR}")
    for candidate in _default_candidates():
        if (candidate / _MARKER).is_file():
            return candidate.resolve()
    raise DataHomeError(
        "no data home found: expected a directory with runtimes.csv.gz beside the repository "
        f"(../shared/datasets); pass --data-home DIR or set {ENV_VAR}=DIR"
    )


def _checked(path: Path, origin: str) -> Path:
    if not path.is_dir():
        raise DataHomeError(
            f"data home {str(path)!r} (from {origin}) does not exist; "
            "point it at a directory holding the shared datasets tables (e.g. ../shared/datasets)"
        )
    if not (path / _MARKER).is_file():
        raise DataHomeError(
            f"data home {str(path)!r} (from {origin}) has no {_MARKER}; "
            "point it at a directory holding the shared datasets tables (e.g. ../shared/datasets)"
        )
    return path.resolve()
