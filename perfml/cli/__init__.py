"""perfml's command line: a thin Typer layer over the library.

Each topic lives in its own module (``perfml/cli/<topic>.py``) exposing
``register(app)``; heavy libraries (cupy, xgboost, mlflow) are imported inside the
commands that need them so that ``perfml --help`` is instant and works without a GPU.
Every :class:`~perfml.errors.PerfmlError` becomes a one-line message on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import typer

from perfml.errors import PerfmlError

app = typer.Typer(
    name="perfml",
    help="Predict CUDA kernel runtimes on measured and unseen GPU boards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Topic modules, registered in this order when present.
_TOPICS = (
    "boards",
    "closed_form",
    "kernels",
    "sweep",
    "characterize",
    "diagnose",
    "cumapz",
    "predictor",
    "experiment",
    "report",
)


def _register_topics() -> None:
    for topic in _TOPICS:
        name = f"perfml.cli.{topic}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(app)


_register_topics()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``perfml`` console script."""
    try:
        app(args=argv, standalone_mode=False)
    except PerfmlError as exc:
        typer.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except typer.Exit as exc:  # pragma: no cover - raised by typer for --help etc.
        return exc.exit_code
    except typer.Abort:  # pragma: no cover
        typer.echo("aborted", err=True)
        return 1
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return 2
        raise
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
