"""``perfml boards``: list the board registry and show one board with its sources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register", "boards_app"]

boards_app = typer.Typer(
    name="boards",
    help="GPU board registry: specifications with their sources.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``boards`` command group to the perfml CLI."""
    app.add_typer(boards_app, name="boards")


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@boards_app.command("list")
def list_command() -> None:
    """List every board: name, architecture, CC, SMs, cores, boost clock, bandwidth."""
    from rich.console import Console
    from rich.table import Table

    from perfml.boards import list_boards, peak_bandwidth
    from perfml.errors import MissingBoardParameterError

    table = Table(title="perfml board registry")
    for header, justify in (
        ("name", "left"),
        ("architecture", "left"),
        ("CC", "right"),
        ("SMs", "right"),
        ("cores", "right"),
        ("boost MHz", "right"),
        ("bandwidth GB/s", "right"),
    ):
        table.add_column(header, justify=justify, no_wrap=header == "name")  # type: ignore[arg-type]
    for board in list_boards():
        try:
            bandwidth = f"{peak_bandwidth(board) / 1e9:.1f}"
        except MissingBoardParameterError:
            bandwidth = "-"
        table.add_row(
            board.name,
            _fmt(board.architecture),
            _fmt(board.compute_capability),
            _fmt(board.sms),
            _fmt(board.total_cores),
            _fmt(board.boost_clock_mhz),
            bandwidth,
        )
    console = Console()
    console.print(table)
    _print_user_files(console)


def _print_user_files(console: Any, board: str | None = None) -> None:
    """Say which boards come from the user's boards files ($PERFML_BOARDS, --boards)."""
    from rich.markup import escape

    from perfml.boards._registry import default_registry

    registry = default_registry()
    for file in registry.user_files:
        names = [name for name, origin in registry.origin.items() if origin == file]
        if board is None:
            # a path is copied from here: never wrapped at the terminal width, never coloured
            console.print(f"from your boards file {escape(file)}: {escape(', '.join(names)) or 'no board'}",
                          soft_wrap=True, highlight=False)
        elif board in names:
            console.print(f"defined in your boards file {escape(file)}", soft_wrap=True, highlight=False)


@boards_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="Board name or alias, e.g. GTX-680 or 'Tesla K20c'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show every field of one board with value, unit, source and alternatives."""
    from perfml.boards import get_board

    board = get_board(name)
    if as_json:
        from perfml.cli._output import print_json

        print_json(board.to_dict())
        return

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{board.name}: {board.full_name}", show_lines=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("unit")
    table.add_column("source / notes / alternatives", overflow="fold", ratio=1)
    for field_name, value, unit, source in board.spec_items():
        details = [escape(source or "")]
        if field_name in board.notes:
            details.append(f"[italic]note:[/italic] {escape(board.notes[field_name])}")
        for alt in board.alternatives.get(field_name, ()):
            note = f" ({escape(alt.note)})" if alt.note else ""
            details.append(f"[yellow]alt:[/yellow] {escape(_fmt(alt.value))} - {escape(alt.source)}{note}")
        table.add_row(field_name, escape(_fmt(value)), unit, "\n".join(details))
    table.add_row("total_cores", _fmt(board.total_cores), "cores", "derived: sms x fp32_cores_per_sm")
    spec_fields = {f for f, *_ in board.spec_items()}
    for key, alts in board.alternatives.items():
        if key in spec_fields:
            continue
        for alt in alts:
            note = f" ({escape(alt.note)})" if alt.note else ""
            table.add_row(
                key, "", "", f"[yellow]alt:[/yellow] {escape(_fmt(alt.value))} - {escape(alt.source)}{note}"
            )
    console = Console()
    _print_user_files(console, board.name)
    if board.aliases:
        console.print(f"aliases: {escape(', '.join(board.aliases))}")
    console.print(table)


@boards_app.command("from-properties")
def from_properties_command(
    properties: Annotated[Path, typer.Argument(help="JSON object of the device's cudaGetDeviceProperties values "
                                                     "(CuPy's key names), e.g. sweeps/results/H200/device_properties.json.")],
    name: Annotated[str, typer.Option("--name", help="The board's name in your query rows, e.g. My-GPU.")],
    out: Annotated[str, typer.Option("--out", help="Boards file to write (then: perfml --boards FILE ...).")],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing file.")] = False,
) -> None:
    """Write a boards file (docs/boards.md) for a GPU perfml does not ship, from its recorded CUDA properties."""
    from perfml._safe_output import check_output_path, write_text_atomic
    from perfml.boards._user_file import boards_file_from_properties

    check_output_path(out, overwrite=overwrite, option="--out", inputs={"PROPERTIES": properties})
    text, missing = boards_file_from_properties(properties, name=name)
    write_text_atomic(out, text, overwrite=overwrite, option="--out")
    typer.echo(f"wrote board {name!r} to {out}; use it with `perfml --boards {out} ...`")
    for field in missing:
        typer.echo(f"warning: not given by the device, add it with its source: {field}", err=True)
