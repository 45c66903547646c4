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
    """Entry point of the ``perfml`` console script; returns the exit status.

    Usage errors are reported by Typer (exit 2); a :class:`PerfmlError` becomes one
    line on stderr and its ``exit_code`` (2), never a traceback.
    """
    try:
        app(args=argv, prog_name="perfml")
    except PerfmlError as exc:
        typer.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
