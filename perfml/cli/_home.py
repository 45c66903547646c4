"""The data home of a command, resolved once at its entry and handed down.

Library code never searches for the data home (a ``data_home=None`` raises
:class:`perfml.errors.DataHomeError`); every command that reads the shared tables calls
:func:`entry_data_home` once with its ``--data-home`` value and passes the result down.
"""

from __future__ import annotations

__all__ = ["entry_data_home"]


def entry_data_home(data_home=None):
    """``--data-home`` (or ``$PERFML_DATA_HOME``, or ``../shared/datasets``) as a :class:`perfml.datasets.DataHome`.

    Raises
    ------
    DataHomeError
        If no data home is found or the directory holds no tables.
    """
    from perfml.datasets import DataHome, find_data_home

    if isinstance(data_home, DataHome):
        return data_home
    return DataHome(find_data_home(data_home), board_check=_registry_check)


def _registry_check(name) -> str | None:
    """None if the registry (with the command's ``--boards`` files) knows board ``name``, else why not."""
    from perfml.boards import get_board
    from perfml.errors import UnknownBoardError

    try:
        get_board(name)
    except UnknownBoardError as exc:
        return str(exc)
    return None
