"""Where the measured data live: :class:`DataHome`, resolved once at the entry point.

The *data home* is a directory with the tables of ``shared/datasets`` (same file
names and schema). A :class:`DataHome` is made once by the entry point (the CLI, or a
test fixture) and handed down to estimators and feature groups; it reads each table
once and keeps it.

Finding the directory is the entry point's job: :func:`find_data_home` tries, in
order, an explicit argument (``--data-home``), the ``PERFML_DATA_HOME`` environment
variable, and the ``shared/datasets`` directory beside the repository checkout or a
parent of the working directory. It is the *only* function of perfml that reads that
variable or searches parent folders, and only entry points call it (``perfml.cli``,
scripts under ``experiments/``, test fixtures). A library function given
``data_home=None`` raises :class:`~perfml.errors.DataHomeError` saying what to pass:
nothing below the command line searches. perfml never copies these files into its
own repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from perfml.datasets._tables import SCHEMAS, read_table
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


def find_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """Return the data home directory, checked to exist and to hold the tables.

    This is the entry point's resolver (the CLI calls it, tests call it through a
    fixture); it is the only place that reads ``$PERFML_DATA_HOME`` or searches the
    folders around the checkout.

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
        if not str(data_home).strip():  # Path("") is the current folder: never meant
            raise DataHomeError("--data-home is empty; pass the directory holding the shared datasets tables "
                                "(e.g. ../shared/datasets), or leave the option out")
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
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise DataHomeError(
            f"data home {str(path)!r} (from {origin}) {what}; "
            "point it at a directory holding the shared datasets tables (e.g. ../shared/datasets)"
        )
    if not (path / _MARKER).is_file():
        raise DataHomeError(
            f"data home {str(path)!r} (from {origin}) has no {_MARKER}; "
            "point it at a directory holding the shared datasets tables (e.g. ../shared/datasets)"
        )
    return path.resolve()


MISSING_HINT = (
    "pass data_home=perfml.datasets.DataHome(PATH) or a path; the command line resolves it from "
    f"--data-home, ${ENV_VAR} or ../shared/datasets (perfml.datasets.find_data_home)"
)


def _missing(what: str) -> DataHomeError:
    return DataHomeError(f"{what} needs a data home, got data_home=None; {MISSING_HINT}")


def check_data_home(data_home, owner: str) -> None:
    """Raise :class:`~perfml.errors.DataHomeError` if ``data_home`` is None (an estimator's ``fit`` calls it).

    Estimators keep ``data_home=None`` as their constructor default (scikit-learn stores
    parameters as given) and check it here, at fit time, with their own name.
    """
    if data_home is None:
        raise _missing(owner)


def resolve_data_home(data_home, *, what: str = "this function") -> Path:
    """The data home directory of ``data_home`` (a :class:`DataHome` or a path).

    Raises
    ------
    DataHomeError
        If ``data_home`` is None (library code never searches for it; the entry point
        resolves it with :func:`find_data_home`) or the directory holds no tables.
    """
    if isinstance(data_home, DataHome):
        return data_home.path
    if data_home is None:
        raise _missing(what)
    return find_data_home(data_home)


class DataHome:
    """A data home directory whose tables are read once and kept.

    Parameters
    ----------
    path : path-like
        Directory with the shared datasets tables (checked to hold ``runtimes.csv.gz``).
    tables : dict of str to DataFrame, optional
        Tables given in memory instead of read from ``path`` (keys are the short names
        of :data:`perfml.datasets.SCHEMAS`, e.g. ``"profiles_nca"``): a user's own
        profiles or runtimes, or a test's altered copy.
    board_check : callable, optional
        ``board_check(name)`` returns None for a board name the caller knows and otherwise
        the reason it does not (the registry's closest names). Every table read from
        ``path`` that has a ``board`` column is checked with it, so an unknown board is
        told with the file and row it is in (the command line passes the registry's check,
        :func:`perfml.cli._home.entry_data_home`); without it, board names are not checked
        here (this layer does not know the registry).

    Examples
    --------
    >>> from perfml.datasets import DataHome, find_data_home
    >>> home = DataHome(find_data_home())            # doctest: +SKIP
    >>> home.table("runtimes").shape                  # doctest: +SKIP
    """

    def __init__(self, path, *, tables=None, board_check=None):
        if not isinstance(path, (str, os.PathLike)):
            raise DataHomeError(f"DataHome takes the data home's folder as a path, got {type(path).__name__}; "
                                "e.g. DataHome(perfml.datasets.find_data_home())")
        self.path = _checked(Path(path).expanduser(), "DataHome")
        self._board_check = board_check
        self._tables = {name: self._checked_table(name, frame) for name, frame in dict(tables or {}).items()}

    def _checked_table(self, name, frame):
        """An in-memory table, held to its schema as a file of the data home is (it was used unchecked)."""
        import pandas as pd

        from perfml.datasets._schema import validate
        from perfml.errors import DatasetSchemaError

        if name not in SCHEMAS:
            raise DatasetSchemaError(f"DataHome: no table is called {name!r}; the tables are {', '.join(SCHEMAS)}")
        if not isinstance(frame, pd.DataFrame):
            raise DatasetSchemaError(f"DataHome: table {name!r} must be a pandas DataFrame with the columns of "
                                     f"shared/datasets/{SCHEMAS[name].file}, got {type(frame).__name__}")
        where = f"in-memory table {name!r}"
        table = validate(frame, SCHEMAS[name], where)
        self.check_boards(table, where)
        return table

    def __repr__(self) -> str:
        return f"DataHome({str(self.path)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, DataHome) and other.path == self.path and other._tables.keys() == self._tables.keys() \
            and all(other._tables[k] is v for k, v in self._tables.items())

    def __hash__(self) -> int:
        return hash(self.path)

    def __copy__(self) -> "DataHome":
        return self

    def __deepcopy__(self, memo) -> "DataHome":
        # A handle on shared, read-only tables: scikit-learn's clone() must not copy the cache.
        return self

    def table(self, name: str):
        """The validated table ``name`` (a fresh copy: callers may modify it); read on first use only."""
        if name not in self._tables:
            table = read_table(name, self.path)
            self.check_boards(table, self.path / SCHEMAS[name].file)
            self._tables[name] = table
        return self._tables[name].copy()

    def check_boards(self, table, path) -> None:
        """Raise :class:`~perfml.errors.DatasetSchemaError` at the first row of ``table`` (read from
        ``path``) whose board the ``board_check`` does not know; nothing without a check."""
        if self._board_check is None or "board" not in table.columns:
            return
        from perfml.errors import DatasetSchemaError

        for board in table["board"].drop_duplicates():
            why = self._board_check(board)
            if why:
                line = int((table["board"] == board).to_numpy().argmax()) + 2
                raise DatasetSchemaError(f"{path}: row {line} (line of the CSV), column board: {why}; if the file "
                                         "was edited, restore it from shared/datasets")

    def with_tables(self, **tables) -> "DataHome":
        """A new DataHome on the same directory with some tables replaced by in-memory frames."""
        new = DataHome(self.path, tables=tables, board_check=self._board_check)  # checks the given tables
        new._tables = {**self._tables, **new._tables}
        return new


def as_data_home(data_home, *, what: str = "this function") -> DataHome:
    """``data_home`` as a :class:`DataHome`: passed through, or wrapped from a path.

    Raises
    ------
    DataHomeError
        If ``data_home`` is None: library code never searches for the data home; the
        entry point resolves it once with :func:`find_data_home` and passes it down.
    """
    if isinstance(data_home, DataHome):
        return data_home
    if data_home is None:
        raise _missing(what)
    return DataHome(find_data_home(data_home))
