"""Progress of long work (experiment folds, tuning trials, training, sweeps) on stderr.

One small API::

    with progress("tuning xgboost", total=20, quiet=quiet) as advance:
        for trial in trials:
            ...
            advance(f"trial {trial}: MAPE 12.3%")   # one step done, new description

The bar is drawn with Rich on **stderr**, so ``--json`` output on stdout stays clean.
It is silent when ``quiet`` is true (the caller decides: the CLI passes
:func:`perfml.cli.quiet_requested`, which honours ``perfml --quiet`` and ``$PERFML_QUIET``;
this module never reads the environment), or when the stream is not a terminal (a pipe, a file, CI logs); the callback still
counts its calls (:attr:`Advance.count`, :attr:`Advance.last`), so code that reports
progress behaves the same either way. Rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import IO, Iterator

__all__ = ["Advance", "progress", "progress_enabled"]


def progress_enabled(stream: IO | None = None, *, quiet: bool = False) -> bool:
    """Whether a progress bar would be drawn on ``stream`` (default: stderr)."""
    if quiet:
        return False
    stream = sys.stderr if stream is None else stream
    if stream is None or getattr(stream, "closed", False):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


class Advance:
    """The callback handed out by :func:`progress`: ``advance(description, step=1)``.

    Attributes
    ----------
    count : int
        Steps advanced so far.
    last : str or None
        The latest description.
    """

    def __init__(self, bar=None, task=None) -> None:
        self._bar = bar
        self._task = task
        self.count = 0
        self.last: str | None = None

    def __call__(self, description: str | None = None, step: int = 1) -> None:
        self.count += step
        if description is not None:
            self.last = description
        if self._bar is not None:
            fields = {"description": description} if description is not None else {}
            self._bar.update(self._task, advance=step, **fields)


@contextmanager
def progress(description: str, *, total: int | None = None, quiet: bool = False,
             stream: IO | None = None) -> Iterator[Advance]:
    """Show a progress bar (or a spinner when ``total`` is None) while the block runs.

    Parameters
    ----------
    description : str
        What is being done, shown left of the bar until the first ``advance``.
    total : int, optional
        Number of steps, when known.
    quiet : bool
        Draw nothing (``perfml --quiet``).
    stream : file, optional
        Where to draw (default: stderr); nothing is drawn unless it is a terminal.

    Yields
    ------
    Advance
        Call it after each step: ``advance("fold 3 of hybrid_xgboost")``.
    """
    stream = sys.stderr if stream is None else stream
    if not progress_enabled(stream, quiet=quiet):
        yield Advance()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield Advance(bar, task)
