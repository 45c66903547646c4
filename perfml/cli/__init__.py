"""perfml's command line: a thin Typer layer over the library.

Each topic lives in its own module (``perfml/cli/<topic>.py``) exposing
``register(app)``; heavy libraries (cupy, xgboost, mlflow) are imported inside the
commands that need them so that ``perfml --help`` is instant and works without a GPU.

Failures, by kind (the exit status in brackets):

* a :class:`~perfml.errors.PerfmlError` (bad input, a missing resource) and a usage
  error (unknown option or value) print one line ``error: ...`` on stderr [2];
* a foreign exception of a known family (OS errors such as a full disk, a read-only
  file system or a directory given as a file; truncated gzip data; pandas, pyarrow,
  xgboost, Optuna, MLflow and SQLAlchemy errors) is translated by
  :func:`perfml.cli._errors.translate` into a typed one-line error naming the file and
  the fix [2];
* Ctrl-C prints ``interrupted`` [130]; SIGTERM (``kill``, ``timeout``, Slurm) runs the same
  clean-up and prints ``terminated`` [143, 128 + the signal number, as a shell reports it];
* anything else is a bug in perfml: one line ``internal error: ...`` [1], and the
  traceback only with ``perfml --debug ...`` or ``PERFML_DEBUG=1``.

Never a traceback otherwise. ``perfml --quiet ...`` silences progress bars
(:mod:`perfml._progress`), which are also off when stderr is not a terminal.
"""

from __future__ import annotations

import contextlib

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import typer
try:  # typer >= 0.2x vendors click as typer._click; older typer uses click itself
    from typer._click import exceptions as _cx
    from typer._click.globals import get_current_context as _current_context
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as _cx
    from click import get_current_context as _current_context
from typer.core import TyperGroup

from perfml.errors import PerfmlError


class _Escaped(Exception):
    """Carries a foreign exception out of click, which would swallow some of them."""

    def __init__(self, exc: BaseException, debug: bool) -> None:
        super().__init__(exc)
        self.exc = exc
        self.debug = debug


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so that every command's Ctrl-C clean-up runs for it too
    (:func:`terminate_as_interrupt`), told apart at the end by its exit status."""


class _Interrupted(Exception):
    """Ctrl-C or SIGTERM (``terminated``), carried past click's ``Aborted!``."""

    def __init__(self, terminated: bool = False):
        super().__init__()
        self.terminated = terminated


def _was_terminated(exc: BaseException) -> bool:
    """Whether an interrupt reaching :func:`main` was SIGTERM (directly, carried, or under click's Abort)."""
    return (isinstance(exc, _Terminated) or getattr(exc, "terminated", False)
            or isinstance(exc.__cause__, _Terminated) or isinstance(exc.__context__, _Terminated))


class _PerfmlGroup(TyperGroup):
    """The root group: lets no foreign exception reach click's handlers.

    click turns ``EOFError`` (a truncated gzip stream) and ``KeyboardInterrupt`` into
    a bare "Aborted!"; here they, and every other foreign exception, are wrapped and
    handed to :func:`main` while the ``--debug`` flag is still known.
    """

    def invoke(self, ctx: typer.Context):  # noqa: ANN201 - click signature
        try:
            return super().invoke(ctx)
        except (_cx.ClickException, typer.Exit, typer.Abort, PerfmlError):
            raise
        except KeyboardInterrupt as exc:
            raise _Interrupted(terminated=isinstance(exc, _Terminated)) from None
        except Exception as exc:
            raise _Escaped(exc, debug=bool(ctx.params.get("debug"))) from exc


app = typer.Typer(
    name="perfml",
    cls=_PerfmlGroup,
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
    "tune",
    "experiment",
    "report",
)


def _register_topics() -> None:
    for topic in _TOPICS:
        name = f"perfml.cli.{topic}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(app)


_register_topics()


@app.callback()
def _root(
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars (they are also off when stderr is not a terminal)."),
    debug: bool = typer.Option(False, "--debug", help="Print the traceback of an internal error (also PERFML_DEBUG=1)."),
    boards: list[Path] = typer.Option(
        [], "--boards", metavar="FILE",
        help="Your own boards file (layout of perfml/data/boards.toml, every value with its source; "
             "docs/boards.md): its boards join the registry for this command. Repeatable; read after "
             "the files of $PERFML_BOARDS (os.pathsep-separated).",
    ),
) -> None:
    """Predict CUDA kernel runtimes on measured and unseen GPU boards."""
    _use_board_files(boards)


def _use_board_files(files: list[Path]) -> None:
    """Use the boards files of ``$PERFML_BOARDS`` and ``--boards`` for this command (tuning
    workers get them through ``$PERFML_BOARDS``). They are read now, so a bad file stops the
    command before it does anything."""
    from perfml.boards._registry import BOARDS_ENV, use_board_files

    named = [part for part in os.environ.get(BOARDS_ENV, "").split(os.pathsep) if part.strip()]
    use_board_files([*named, *files])


def quiet_requested() -> bool:
    """Whether progress should be silent: ``perfml --quiet`` was given, or ``$PERFML_QUIET`` is set.

    The environment is read here, in the CLI; :mod:`perfml._progress` only takes ``quiet``.
    """
    if os.environ.get("PERFML_QUIET", "").strip().lower() not in ("", "0", "false", "no"):
        return True
    ctx = _current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("quiet"))


def _debug_wanted(flag: bool) -> bool:
    return flag or os.environ.get("PERFML_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _usage_line(exc: _cx.ClickException) -> str:
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        return f"error: {message} (see `{ctx.command_path} --help`)"
    return f"error: {message}"


def _empty_option_value(group, args: list[str]) -> str | None:
    """The message for an option given an empty value (``--out ""``, ``--model=``), else None.

    An empty path became the working directory (typer reads ``Path("")`` as ``.``): ``sweep
    run --out ""`` wrote its result set there, ``predict --model ""`` read the directory the
    user stood in as a model, ``sweep run ""`` took it for a spec directory. No option or
    argument of perfml takes an empty value, so each is refused here, for every command at
    once. The options of the command the arguments name (and of the groups above it) are
    read from click's public attributes (``commands``, ``params``, ``opts``, ``is_flag``).
    """
    path, options, named = _named_command(group, args)
    owner = {opt: where for opt, (_, where) in options.items()}  # option -> the command it belongs to
    required = {opt for opt, (param, _) in options.items() if getattr(param, "required", False)}
    previous = None
    for token in args:
        if token == "--":  # what follows is positional
            break
        name = None
        if token.startswith("--") and "=" in token and token.split("=", 1)[1] == "":
            name = token.split("=", 1)[0]
        elif token == "" and previous is not None:
            name = previous
        if name in owner:  # "leave it out" only where that is allowed: --name of boards from-properties is required
            fix = "it is required" if name in required else "or leave the option out"
            return f"{name} is empty: give it a value, {fix} (see `{owner[name]} --help`)"
        if token == "":  # a positional argument: an empty path was the working directory too
            command = " ".join(path)
            fix = "or leave it out" if _optional_arguments(named) else "it is required"
            return f"an argument of `{command}` is empty: give it a value, {fix} (see `{command} --help`)"
        previous = token
    return None


def _optional_arguments(command) -> bool:
    """Whether every positional argument of ``command`` (a click command) may be left out."""
    arguments = [p for p in command.params if not (getattr(p, "opts", None) or ["-"])[0].startswith("-")]
    return all(not getattr(p, "required", False) for p in arguments)


def _named_command(group, args: list[str]) -> tuple[list[str], dict, object]:
    """The command path ``args`` name, the value-taking options of it and of the groups above
    it (option string -> (its click parameter, the command path it belongs to)), and the
    named click command itself."""
    command, path = group, ["perfml"]
    options = _value_options(command, path)
    for token in args:
        sub = getattr(command, "commands", {}).get(token)
        if sub is None:
            if not hasattr(command, "commands"):
                break
            continue  # a group's own option (`perfml --boards F predict ...`) or its value
        command = sub
        path.append(token)
        options.update(_value_options(command, path))
    return path, options, command


def _value_options(command, path: list[str]) -> dict[str, tuple]:
    """The options of ``command`` that take a value (not flags): option -> (parameter, the command's path)."""
    return {opt: (p, " ".join(path)) for p in command.params if not getattr(p, "is_flag", False)
            for opt in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())) if opt.startswith("-")}


def _repeated_option(group, args: list[str]) -> str | None:
    """The message for an option given twice that takes one value (``--calibration A
    --calibration B``), else None.

    click keeps the last value: the first file was dropped without a word (A's rows were
    never read, and only B's warnings were shown). An option declared to take several
    values (``multiple``) may repeat. Read from click's command tree as
    :func:`_empty_option_value` reads it.
    """
    _, options, _ = _named_command(group, args)
    seen: dict[int, str] = {}
    tokens = iter(args)
    for token in tokens:
        if token == "--":  # what follows is positional
            break
        name = token.split("=", 1)[0] if token.startswith("--") else token
        if name not in options:
            continue
        param, where = options[name]
        if "=" not in token:
            next(tokens, None)  # the option's value, whatever it reads like
        if getattr(param, "multiple", False) or getattr(param, "nargs", 1) != 1:
            continue
        if id(param) in seen:
            first = seen[id(param)]
            also = "" if first == name else f" (as {first})"
            return (f"{name} is given twice{also}; it takes one value, and only the last would be read: give it "
                    f"once (see `{where} --help`)")
        seen[id(param)] = name
    return None


#: a run of this many characters without a space in a message is shortened when printed
LONG_TOKEN = 300


def _shortened(line: str) -> str:
    """``line`` with every run of more than :data:`LONG_TOKEN` non-space characters cut to its
    ends: a message quotes the user's bad value, and a 400 kB board name is no help on a terminal."""
    if len(line) <= LONG_TOKEN:
        return line
    words = line.split(" ")
    return " ".join(w if len(w) <= LONG_TOKEN else f"{w[:60]}...[{len(w) - 80} characters]...{w[-20:]}" for w in words)


def _say(line: str) -> None:
    """Print one line on stderr, with the password of any URL in it masked and very long values shortened."""
    from perfml._secrets import mask_credentials

    typer.echo(_shortened(mask_credentials(line)), err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``perfml`` console script; returns the exit status.

    See the module docstring for how each kind of failure is reported.
    """
    from perfml.boards._registry import restore_board_files, user_board_files

    boards_before = user_board_files()
    try:
        with terminate_as_interrupt():
            return _main(argv)
    finally:  # `--boards` holds for this command only, also when main() is called in-process
        restore_board_files(boards_before)


@contextlib.contextmanager
def terminate_as_interrupt():
    """While a command runs, SIGTERM stops it as Ctrl-C does (``terminated``, exit 143).

    ``kill``, ``timeout``, Slurm and ``docker stop`` send SIGTERM, which ended the process at
    once: a sweep lost the points measured since its last flush, and ``experiment run`` left
    its MLflow run RUNNING for ever. Ctrl-C raises ``KeyboardInterrupt``, which every command
    turns into a final flush (sweeps) or a FAILED run (experiments, tuning); SIGTERM now does
    the same (raised as :class:`_Terminated`, a ``KeyboardInterrupt``); :func:`main` then
    says ``terminated`` and exits 143 (128 + SIGTERM), where Ctrl-C exits 130, so that a
    scheduler's log tells the two apart. Left as it is outside the main thread (an
    in-process caller's own threads).

    A ``KeyboardInterrupt`` (Ctrl-C or SIGTERM) raised while a finalizer runs is swallowed
    by Python ("Exception ignored in ... __del__"): a SIGTERM that landed in xgboost's
    ``DMatrix.__del__`` during ``perfml train`` was lost and training went on. While a
    command runs, such a swallowed interrupt is delivered again 10 ms later, in whatever
    code runs then (``sys.unraisablehook``, a one-shot SIGALRM timer).
    """
    import signal
    import sys

    swallowed = [KeyboardInterrupt]  # the kind of the last interrupt a finalizer swallowed

    def terminate(signum, frame):  # noqa: ARG001 - signal handler signature
        raise _Terminated

    def deliver_again(signum, frame):  # noqa: ARG001 - signal handler signature
        raise swallowed[0]

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread
        yield
        return
    previous_alarm = signal.signal(signal.SIGALRM, deliver_again)
    previous_hook = sys.unraisablehook

    def unraisable(info):
        if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
            swallowed[0] = info.exc_type
            signal.setitimer(signal.ITIMER_REAL, 0.01)  # deliver it again, outside the finalizer
            return
        previous_hook(info)

    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGALRM, previous_alarm)
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> int:
    """:func:`main` without the restoring of the registry's boards files."""
    from perfml.cli._errors import internal_error_line, translate

    command = typer.main.get_command(app)
    given = sys.argv[1:] if argv is None else list(argv)
    refused = _empty_option_value(command, given) or _repeated_option(command, given)
    if refused is not None:
        _say(f"error: {refused}")
        return 2
    try:
        # Outside standalone mode click *returns* the code of ``typer.Exit(code)`` instead of
        # exiting: it is the command's status (kernels check exits 1 on an impure kernel).
        status = command.main(args=argv, prog_name="perfml", standalone_mode=False)
    except PerfmlError as exc:
        _say(f"error: {exc}")
        return exc.exit_code
    except _cx.NoArgsIsHelpError as exc:
        exc.show()
        return exc.exit_code
    except _cx.ClickException as exc:
        _say(_usage_line(exc))
        return 2
    except (_Interrupted, KeyboardInterrupt, typer.Abort) as exc:
        if _was_terminated(exc):
            typer.echo("terminated", err=True)
            return 143
        typer.echo("interrupted", err=True)
        return 130
    except _Escaped as escaped:
        exc = escaped.exc
        if isinstance(exc, BrokenPipeError):  # `perfml ... | head`: the reader left, say nothing
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the closed pipe until exit
            return 1
        typed = translate(exc)
        if typed is not None:
            _say(f"error: {typed}")
            return typed.exit_code
        if _debug_wanted(escaped.debug):
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        _say(internal_error_line(exc))
        return 1
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Exception as exc:  # raised outside a command (while parsing): same rules
        typed = translate(exc)
        if typed is not None:
            _say(f"error: {typed}")
            return typed.exit_code
        if _debug_wanted(False):
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        _say(internal_error_line(exc))
        return 1
    return status if isinstance(status, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
