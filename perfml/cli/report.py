"""``perfml report``: print the side-by-side table of the latest run of experiments from MLflow."""

from __future__ import annotations

from typing import Optional

import typer


def report(
    experiment: Optional[str] = typer.Option(None, "--experiment", help="Experiment name (default: every perfml experiment)."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Print the latest run's summary table of each experiment, read back from MLflow.

    Where an experiment has models of both tiers (spec-only and calibrated, issue 11 §3),
    the tiers of each model family are also set side by side, overall and per board
    (JSON keys ``<name>:tiers`` and ``<name>:per_board_tiers``).
    """
    from perfml.experiments.tiers import per_board_tiers, tier_table
    from perfml.experiments.tracking import latest_per_board, latest_summaries

    tables = latest_summaries(experiment)
    extra = {}
    with_tiers = [name for name, table in tables.items() if tier_table(table) is not None]
    boards = latest_per_board(experiment) if with_tiers else {}
    for name in with_tiers:
        extra[f"{name}:tiers"] = tier_table(tables[name])
        if name in boards:
            pb = per_board_tiers(boards[name], tables[name])
            if pb is not None:
                extra[f"{name}:per_board_tiers"] = pb
    if as_json:
        from perfml.cli._output import frame_records, print_json

        print_json({name: frame_records(table) for name, table in {**tables, **extra}.items()})
        return
    from perfml.cli._output import print_table

    for name, table in tables.items():
        print_table(table, title=f"{name} (latest MLflow run)")
        if f"{name}:tiers" in extra:
            print_table(extra[f"{name}:tiers"], title=f"{name}: spec-only and calibrated side by side (MAPE %, share in [0.8, 1.2])")
        if f"{name}:per_board_tiers" in extra:
            print_table(extra[f"{name}:per_board_tiers"], title=f"{name}: MAPE (%) per board, family/tier")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
