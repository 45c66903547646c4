"""``perfml characterize``: a board's characterization from sweeps, a paper, or runtimes.

* ``perfml characterize RESULTS`` (measured tier: functions and per-class peaks of a sweep);
* ``perfml characterize --reference GTX-980`` (published tier: seed 001 tables);
* ``perfml characterize --from-runtimes FILE --board B [--source S]`` (calibrated tier:
  achieved DRAM bandwidth, FP32 throughput and launch floor from runtimes of kernels of
  known work; see :mod:`perfml.characterize.calibrate`);
* ``perfml characterize --board B`` (every tier perfml has for B: registry spec,
  published tables, committed calibration; :func:`perfml.characterize.board_characterization`).
"""

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
        str | None, typer.Option("--out", help="Write the characterization (JSON) to FILE.")
    ] = None,
    board: Annotated[
        str | None,
        typer.Option("--board", help="Registry name of the measured board (for % of spec)."),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option("--reference", help="Use a paper's reference data instead (e.g. GTX-980)."),
    ] = None,
    force: Annotated[bool, typer.Option("--overwrite", "--force", help="Replace an existing --out file (a regular file only).")] = False,
    from_runtimes: Annotated[
        Path | None,
        typer.Option(
            "--from-runtimes",
            help="CSV of runtime rows (columns of runtimes.csv or dlops_runtimes.csv), or a sweep result-set "
            "folder (its application kernels, e.g. the `calibration` spec): calibrate --board from its kernels "
            "of known work.",
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", help="With --from-runtimes: keep only rows of this `source` column value."),
    ] = None,
    allow_incomplete: Annotated[
        bool,
        typer.Option("--allow-incomplete", help="Characterize a result set whose sweeps left planned points "
                     "unmeasured (time budget, interrupt, failed points); refused otherwise."),
    ] = False,
) -> None:
    """Build F_Divergence, F_SHMEM, F_DRAMThr, F_ARITHThr, per-class peaks and tiered values."""
    from perfml.characterize import characterize_results, reference_characterization

    given = [x for x in (results, reference, from_runtimes) if x is not None]
    # options that do nothing where they are given are refused, not ignored (probe 37)
    if source is not None and from_runtimes is None:
        raise PerfmlError("--source applies to --from-runtimes only; leave it out or give --from-runtimes FILE")
    if allow_incomplete and results is None:
        raise PerfmlError("--allow-incomplete applies to a result set (RESULTS) only; leave it out")
    if reference is not None and board is not None:
        raise PerfmlError(f"--board does not apply to --reference (the reference data are of {reference}); "
                          f"give one of them: --reference {reference}, or --board {board}")
    if not given and board:  # everything perfml knows about the board, every tier
        from perfml.characterize import board_characterization

        ch = board_characterization(board)
        if out is not None:
            ch.save(out, overwrite=force)
        if json_:
            typer.echo(ch.to_json(), nl=False)
        else:
            _print(ch, out)
        return
    if len(given) != 1:
        raise PerfmlError(
            "give exactly one of RESULTS (a result set directory), --reference BOARD or "
            "--from-runtimes FILE --board BOARD (or only --board BOARD: every tier perfml has for it)"
        )
    folder = results if results is not None else from_runtimes
    from perfml.measure.store import MANIFEST_NAME

    is_set = folder is not None and Path(folder).is_dir() and (
        (Path(folder) / MANIFEST_NAME).exists() or any(Path(folder).glob("part-*.parquet")))
    if out is not None and is_set and Path(out).resolve().parent.is_relative_to(Path(folder).resolve()):
        # --overwrite replaced the set's own manifest or a part, which then read as "changed outside perfml"
        raise PerfmlError(f"--out {out} lies inside the result set {folder}; write the characterization "
                          "outside it (a result set holds only what its sweeps wrote)")
    if from_runtimes is not None:
        from perfml.characterize.calibrate import calibrate_from_runtimes

        if not board:
            raise PerfmlError("--from-runtimes needs --board BOARD (the board the rows were measured on)")
        command = f"perfml characterize --from-runtimes {from_runtimes} --board {board}"
        if source is not None:
            command += f" --source {source}"
        ch = calibrate_from_runtimes(from_runtimes, board, source=source, command=command)  # its warnings: printed below
    elif reference is not None:
        ch = reference_characterization(reference)
    else:
        ch = characterize_results(results, board=board, allow_incomplete=allow_incomplete)
    if out is not None:
        ch.save(out, overwrite=force, inputs={"--from-runtimes": from_runtimes})
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
    if ch.values:
        values = Table("quantity", "tier", "value", "unit", "bound", "source")
        for v in ch.values:
            values.add_row(v.quantity, v.tier, f"{v.value:.4g}", v.unit, v.bound, v.source)
        console.print(values)
    if ch.stream_curve is not None:
        curve = ch.stream_curve
        probes = [b for b in (1e4, 1e6, 1e8, 1e10) if curve.bytes[0] <= b <= 10 * curve.bytes[-1]]
        table = Table("stream curve", "tier", "sizes", "bytes", *(f"time at {b:.0e} B" for b in probes), "source")
        table.add_row(curve.kernel, curve.tier, str(len(curve.bytes)), f"{curve.bytes[0]:.3g} .. {curve.bytes[-1]:.3g}",
                      *(f"{1e6 * t:.4g} us" for t in curve.time_s(probes)), curve.source)
        console.print(table)
    errors = Console(stderr=True)  # warnings on stderr, as every other command writes them
    for warning in ch.warnings + tuple(w for v in ch.values for w in v.warnings):
        errors.print(f"[yellow]warning:[/] {warning}")
    if out is not None:
        console.print(f"written to {out}")


def register(app: typer.Typer) -> None:
    app.command("characterize")(characterize)
