"""``perfml diagnose``: criteria, potential speedups and hints of one measured kernel.

``perfml diagnose --board B --app APP_ID [--size N] [--json]`` diagnoses one profiled
kernel (seed 000 Sections IV-VI); ``perfml diagnose twins`` prints the check on kernel
twins that differ by one optimization (:mod:`perfml.diagnosis.twins`).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Optional

import typer

__all__ = ["diagnose_app", "register"]

diagnose_app = typer.Typer(
    name="diagnose",
    help="Fine-grained criteria model (seed 000): criteria, potential speedups, hints.",
    invoke_without_command=True,
    no_args_is_help=False,
)

DataHome = Annotated[
    Optional[str],
    typer.Option("--data-home", help="Directory with the dataset tables (default: $PERFML_DATA_HOME, ../shared/datasets)."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
#: the overall PotentialSpeedup is said to lie outside the criteria beyond this factor of theirs
UNEXPLAINED = 2.0


def register(app: typer.Typer) -> None:
    """Add the ``diagnose`` command group to the perfml CLI."""
    app.add_typer(diagnose_app, name="diagnose")


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isnan(x):
            return "-"
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}f}"
    return str(x)


def _load_characterization(path: str | None, board: str | None = None) -> Any:
    if path is None:
        return None
    from perfml.characterize import load_characterization

    return load_characterization(path, board=board)


@diagnose_app.callback()
def diagnose_command(
    ctx: typer.Context,
    board: Annotated[Optional[str], typer.Option("--board", help="Board name, e.g. Tesla-K40.")] = None,
    app_id: Annotated[Optional[str], typer.Option("--app", help="App id, e.g. matMul_gpu_uncoalesced.")] = None,
    size: Annotated[Optional[int], typer.Option("--size", help="Input size N (default: largest profiled).")] = None,
    block_dir: Annotated[str, typer.Option("--block-dir", help="Profiled launch directory.")] = "block_16",
    data_home: DataHome = None,
    characterization: Annotated[
        Optional[str],
        typer.Option("--characterization", help="Characterization JSON (perfml characterize); default F = 1."),
    ] = None,
    allow_missing: Annotated[
        bool,
        typer.Option("--allow-missing", help="Report criteria whose metrics are empty as 'missing' instead of failing."),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Diagnose one measured kernel: criteria, potential speedups and hints."""
    if ctx.invoked_subcommand is not None:
        return
    if board is None or app_id is None:
        raise typer.BadParameter("--board and --app are required (or use `perfml diagnose twins`)")
    from perfml.cli._home import entry_data_home
    from perfml.diagnosis import diagnose

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    d = diagnose(
        board,
        app_id,
        size,
        data_home=data_home,
        block_dir=block_dir,
        characterization=_load_characterization(characterization, board),
        strict=not allow_missing,
    )
    if as_json:
        from perfml.cli._output import print_json

        print_json(d.to_dict())
        return
    _print_diagnosis(d)


def _print_diagnosis(d: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    info = d.to_dict()
    console.print(
        f"[bold]{d.app_id}[/bold] on [bold]{d.board}[/bold] (CC {info['compute_capability']}), "
        f"N = {d.input_size}, {d.block_dir}, kernel {d.kernel}"
    )
    console.print(f"characterization: {info['characterization']}")
    table = Table(title="criteria (seed 000 Sec. IV) and potential speedups (Sec. V)")
    for col in ("criterion", "value", "status", "potential speedup", "note"):
        table.add_column(col, justify="right" if col in ("value", "potential speedup") else "left")
    for name, c in info["criteria"].items():
        table.add_row(name, _fmt(c["value"]), c["status"] + (" (approx.)" if c["approximate"] else ""),
                      _fmt(c["potential_speedup"], 2), c["note"])
    console.print(table)
    pot = info["potential_speedup"]
    if pot["value"] is None:
        console.print("overall PotentialSpeedup: not computable (MEMTHR or ARITHTHR missing)")
    else:
        console.print(
            f"overall PotentialSpeedup (Sec. V): [bold]{_fmt(pot['value'], 2)}x[/bold] ({pot['bound']}-bound; "
            f"MEMTHR {_fmt(pot['memthr'])}, ARITHTHR {_fmt(pot['ariththr'])})"
        )
        explained = pot["explained_by_criteria"]
        if isinstance(pot["value"], float) and isinstance(explained, float) and pot["value"] > UNEXPLAINED * explained:
            console.print(
                f"  the criteria account for {_fmt(explained, 2)}x of it together; the other "
                f"{_fmt(pot['value'] / explained, 1)}x lies outside them: the kernel runs far below the DRAM and FP32 "
                "roofs for a reason no criterion measures (latency, cache bandwidth, work other than FP32 flops)"
            )
    if d.hints:
        console.print("hints, by potential gain:")
        for i, h in enumerate(d.hints, 1):
            console.print(f"  {i}. {h.text}")
    missing = [name for name, c in info["criteria"].items() if c["status"] == "missing"]
    if missing:  # a hint list without them is no clean bill of health (--allow-missing)
        console.print(f"missing on this profile, so neither judged nor hinted: {', '.join(missing)} "
                      f"({len(missing)} of {len(info['criteria'])} criteria)")
    if not d.hints:
        judged = "of the criteria computed, none" if missing else "no criterion"
        console.print(f"hints: {judged} promises more than 5 %")
    if d.unsupported:
        console.print(f"unsupported on this profile: {', '.join(d.unsupported)}")


@diagnose_app.command("twins")
def twins_command(
    data_home: DataHome = None,
    as_json: AsJson = False,
    cases_csv: Annotated[
        Optional[str], typer.Option("--cases-csv", help="Also write the per-size cases to this CSV file (must not exist, "
                                    "unless --overwrite).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --cases-csv file.")] = False,
) -> None:
    """Kernel twins (uncoalesced -> coalesced): criterion improvement and predicted vs measured speedup."""
    from perfml._safe_output import check_output_path, write_dataframe_atomic
    from perfml.diagnosis.twins import twin_check, twin_summary

    if cases_csv is not None:  # refuse before the work: never overwrite, only regular files
        check_output_path(cases_csv, overwrite=overwrite, option="--cases-csv")
    from perfml.cli._home import entry_data_home

    cases, table = twin_check(entry_data_home(data_home))  # resolved once, here at the entry point
    summary = twin_summary(table)
    if cases_csv is not None:
        write_dataframe_atomic(cases, cases_csv, overwrite=overwrite, option="--cases-csv")
    if as_json:
        from perfml.cli._output import frame_records, print_json

        print_json({"table": frame_records(table), "summary": summary})
        return
    _print_twins(table, summary)


def _print_twins(table: Any, summary: dict[str, float]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=220)
    t = Table(title="twin check: unoptimized -> optimized, block_16, medians over sizes")
    cols = [
        ("pair", "pair"), ("board", "board"), ("cc", "CC"), ("n_sizes", "sizes"),
        ("criterion", "criterion"), ("crit_unopt", "unopt"), ("crit_opt", "opt"),
        ("a_L2_GRANULARITY", "(a) L2"), ("a_L1_GRANULARITY", "(a) L1"), ("a_SHMEMEFFICIENCY", "(a) SHMEM"),
        ("n_predicted", "n pred"), ("predicted_potential", "pred. potential"),
        ("predicted_targeted", "pred. L2 SP"), ("inverse_targeted", "1/L2"),
        ("measured_speedup", "measured"), ("ratio", "pred/meas"), ("bound", "bound"),
        ("kernel_matched", "same code"),
    ]
    for key, header in cols:
        t.add_column(header)
    for row in table.to_dict(orient="records"):
        cells = []
        for key, _ in cols:
            v = row.get(key)
            cells.append(_fmt(v, 2) if isinstance(v, float) else ("" if v is None else str(v)))
        t.add_row(*cells)
    console.print(t)
    console.print(
        f"(a) holds for {summary['a_holds_share']:.0%} of {summary['cases']} (pair, board) cases; "
        f"predicted potential >= measured speedup in {summary['potential_ge_measured_share']:.0%}; "
        f"median predicted/measured {summary['median_ratio']:.2f}; the targeted criterion's own "
        f"potential speedup >= measured in {summary['targeted_ge_measured_share']:.0%}"
    )
