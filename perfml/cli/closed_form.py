"""CLI of the closed-form models: ``fit-lambda``, ``evaluate``, ``bsp-table2``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

DataHome = typer.Option(None, "--data-home", help="Directory with the shared datasets tables (default: $PERFML_DATA_HOME or ../shared/datasets).")


def fit_lambda(
    data_home: Optional[Path] = DataHome,
    source: Optional[str] = typer.Option(None, "--source", help="Keep only runtimes of this `source` (BSPGPU, gpuperfpredict-nca, ...)."),
    board: Optional[str] = typer.Option(None, "--board", help="Keep only this board."),
    app: Optional[str] = typer.Option(None, "--app", help="Keep only this app_id."),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON list."),
) -> None:
    """Fit the BSP lambda per (board, app) over the selected runtimes (seed 003 eq. 3)."""
    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    from perfml.evaluation.closed_form import describable_runtimes
    from perfml.evaluation.metrics import within_band
    from perfml.closed_form.bsp import BSPModel

    import pandas as pd

    rt = describable_runtimes(data_home, source=source, board=board, app_id=app)
    model = BSPModel(data_home=data_home).fit(rt, rt["measured_ms"])
    pred = model.predict(rt)
    rows = []
    for (b, a), part in rt.assign(predicted_ms=pred).groupby(["board", "app_id"], sort=True):
        rows.append(
            {
                "board": b,
                "app_id": a,
                "lambda": float(model.lambda_.loc[(b, a)]),
                "n_sizes": int(model.n_sizes_.loc[(b, a)]),
                "within_band": within_band(part["predicted_ms"], part["measured_ms"]),
            }
        )
    frame = pd.DataFrame(rows)
    if as_json:
        from perfml.cli._output import print_json

        print_json(frame)
    else:
        from perfml.cli._output import print_table

        print_table(frame, title="BSP lambda per (board, app); within_band = share of T_k/T_m in [0.8, 1.2]")


def evaluate(
    model: str = typer.Option(..., "--model", help="bsp | hongkim | roofline"),
    data_home: Optional[Path] = DataHome,
    source: Optional[str] = typer.Option(None, "--source"),
    protocol: str = typer.Option("size-cv", "--protocol", help="size-cv | reference-board | in-sample, or any protocol of `perfml experiment` (leave-one-board-out, ...): the rows it holds out are scored; BSP fits its lambda on the others (hongkim and roofline fit nothing)"),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON: {overall, per_board, per_app}."),
) -> None:
    """Score a closed-form model on the runtimes it can describe."""
    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    from perfml.evaluation.closed_form import evaluate_closed_form

    result = evaluate_closed_form(model, data_home=data_home, source=source, protocol=protocol)
    if as_json:
        from perfml.cli._output import frame_records, print_json

        print_json({k: frame_records(v) for k, v in result.items() if k != "predictions"}
                   | {"model": model, "protocol": protocol})
        return
    from perfml.cli._output import print_table

    how = protocol if model == "bsp" else f"{protocol} rows, closed form, nothing fitted"
    print_table(result["overall"], title=f"{model} ({how}): overall")
    print_table(result["per_board"], title=f"{model}: per board")
    print_table(result["per_app"], title=f"{model}: per app")


def bsp_table2(
    data_home: Optional[Path] = DataHome,
    runs: str = typer.Option("script", "--runs", help="script (the cells the upstream R scripts averaged) | curated | gpuperfpredict"),
    bands: bool = typer.Option(False, "--bands", help="Also print the share within 0.8-1.2 per board and app (lambda from GTX-680, and per board)."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Reproduce Table II of seed 003 (lambda per board and app) from the raw runtimes."""
    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    from perfml.experiments.bsp_table2 import band_shares, reproduce_table2

    table = reproduce_table2(runs, data_home)
    shares = band_shares(data_home, runs=runs) if bands else None  # the runs of the table (always curated before)
    if as_json:
        from perfml.cli._output import frame_records, print_json

        print_json({"runs": runs, "table2": frame_records(table),
                    "bands": frame_records(shares) if shares is not None else None})
        return
    from perfml.cli._output import print_table

    covered = table[table["covered"]]
    print_table(table.drop(columns=["runs"]), title=f"Seed 003 Table II vs lambda fitted on {runs} runs")
    print(f"{int(covered['within_tolerance'].sum())}/{len(covered)} covered cells within 10% of Table II "
          f"(max |diff| {covered['rel_diff'].abs().max():.1%}); {int((~table['covered']).sum())} cells have no data")
    if shares is not None:
        print_table(shares, title=f"Share of T_k/T_m within [0.8, 1.2] ({runs} runs)")


def predict_lambda_command(
    board: str = typer.Option(..., "--board", help="A registry board; its own runtimes are never used."),
    app: Optional[list[str]] = typer.Option(None, "--app", help="App ids (repeatable; default: all described apps)."),
    size: Optional[list[int]] = typer.Option(None, "--size", help="Input sizes for T_k (repeatable; default: the median measured size)."),
    data_home: Optional[Path] = DataHome,
    source: Optional[str] = typer.Option(None, "--source"),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON list."),
) -> None:
    """Predict lambda(board, app) for a board with no runtimes, and the BSP T_k that follows."""
    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    from perfml.learned.lambda_unseen import predict_lambda

    frame = predict_lambda(board, app, size, data_home=data_home, source=source)
    if as_json:
        from perfml.cli._output import print_json

        print_json(frame)
    else:
        from perfml.cli._output import print_table

        print_table(frame, title=f"BSP lambda for {frame['board'].iloc[0]} (unseen) and T_k in ms")


def register(app: typer.Typer) -> None:
    app.command("predict-lambda")(predict_lambda_command)
    app.command("fit-lambda")(fit_lambda)
    app.command("evaluate")(evaluate)
    app.command("bsp-table2")(bsp_table2)
