"""``perfml report``: print the side-by-side table of the latest run of experiments from MLflow."""

from __future__ import annotations

from typing import Optional

import typer


def report(
    experiment: Optional[str] = typer.Option(None, "--experiment", help="Experiment name (default: every perfml experiment)."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Print the latest run's summary table of each experiment, read back from MLflow."""
    from perfml.experiments.tracking import latest_summaries

    tables = latest_summaries(experiment)
    if as_json:
        from perfml.cli._output import frame_records, print_json

        print_json({name: frame_records(table) for name, table in tables.items()})
        return
    from perfml.cli._output import print_table

    for name, table in tables.items():
        print_table(table, title=f"{name} (latest MLflow run)")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
