"""``perfml characterize``: characterization functions and per-board peaks from sweeps."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from perfml.errors import PerfmlError

_PROBES = (0.125, 0.25, 0.5, 0.75, 1.0)


def _fmt(value: float | None, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def characterize(
    results: Annotated[
        Path | None,
        typer.Argument(help="Result set directory written by `perfml sweep run`."),
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the characterization as JSON.")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the characterization (JSON) to FILE.")
    ] = None,
    board: Annotated[
        str | None,
        typer.Option("--board", help="Registry name of the measured board (for % of spec)."),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option("--reference", help="Use a paper's reference data instead (e.g. GTX-980)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")] = False,
) -> None:
    """Build F_Divergence, F_SHMEM, F_DRAMThr, F_ARITHThr and per-class peaks."""
    from perfml.characterize import characterize_results, reference_characterization

    if (results is None) == (reference is None):
        raise PerfmlError("give either RESULTS (a result set directory) or --reference BOARD")
    if reference is not None:
        ch = reference_characterization(reference)
    else:
        ch = characterize_results(results, board=board)
    if out is not None:
        ch.save(out, overwrite=force)
    if json_:
        from perfml.cli._output import print_json

        print_json(ch.to_dict(), sort_keys=True)
        return
    _print(ch, out)


def _print(ch, out: Path | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    tag = " [bold red](synthetic data)[/]" if ch.synthetic else ""
    console.print(f"[bold]{ch.board}[/] characterization from {ch.source}{tag}")
    functions = Table("function", "samples", *(f"f({p:g})" for p in _PROBES), "source")
    for name, fn in ch.functions.items():
        functions.add_row(
            f"F_{name}",
            str(fn.n_samples),
            *(f"{fn(p):.3f}" for p in _PROBES),
            fn.source if fn.n_samples else "identity (not measured)",
        )
    console.print(functions)
    if ch.summary:
        summary = Table("class", "kind", "achieved/cycle/SM", "achieved/s", "spec/s", "of spec", "nJ/op")
        for s in ch.summary:
            summary.add_row(
                s.name,
                s.kind,
                _fmt(s.achieved_per_cycle_per_sm),
                _fmt(s.achieved_per_s),
                _fmt(s.spec_per_s),
                _fmt(s.fraction_of_spec, ".1%"),
                _fmt(s.nj_per_op),
            )
        console.print(summary)
    if out is not None:
        console.print(f"written to {out}")


def register(app: typer.Typer) -> None:
    app.command("characterize")(characterize)
