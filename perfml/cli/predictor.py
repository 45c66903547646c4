"""``perfml train``, ``perfml predict`` and ``perfml tune``: the learned predictor for users."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

DataHome = typer.Option(None, "--data-home", help="Directory with the shared datasets tables (default: $PERFML_DATA_HOME or ../shared/datasets).")


def train(
    out: Path = typer.Option(..., "--out", help="Model directory to create."),
    data_home: Optional[Path] = DataHome,
    source: Optional[str] = typer.Option(None, "--source", help="Train only on runtimes of this source."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing perfml model directory (never anything else)."),
    card: Optional[Path] = typer.Option(None, "--card", help="A model card (Markdown) to store in the directory as MODEL_CARD.md (hashed with the rest)."),
) -> None:
    """Train the default predictor (hybrid xgboost on the BSP baseline) on every described runtime."""
    import time

    from perfml.errors import DatasetSchemaError

    card_text = None
    if card is not None:  # read now: it may lie inside the directory being replaced
        try:
            card_text = Path(card).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetSchemaError(f"--card {card}: cannot be read as UTF-8 text ({exc.__class__.__name__}); give a Markdown file") from None

    from perfml.evaluation.closed_form import describable_runtimes
    from perfml.learned.persistence import replace_directory_check, save_model
    from perfml.learned.regressors import RuntimeRegressor

    replace_directory_check(out, overwrite=overwrite)  # refuse before minutes of training
    from perfml._progress import progress
    from perfml.cli import quiet_requested

    with progress("training", total=2, quiet=quiet_requested()) as advance:
        rt = describable_runtimes(data_home, source=source)
        t0 = time.perf_counter()
        model = RuntimeRegressor(learner="xgboost", target="residual", data_home=data_home).fit(rt, rt["measured_ms"])
        seconds = time.perf_counter() - t0
        advance("saving")
        save_model(model, out, overwrite=overwrite, training_rows=rt,
                   extra_files={"MODEL_CARD.md": card_text} if card_text is not None else None,
                   extra={"training_rows": len(rt), "training_source": source,
                          "training_boards": sorted(rt["board"].unique()), "fit_seconds": seconds})
        advance("saved")
    typer.echo(f"trained on {len(rt)} runtimes of {rt['board'].nunique()} boards and {rt['app_id'].nunique()} apps "
               f"in {seconds:.1f} s; saved to {out}")


def predict(
    model: Path = typer.Option(..., "--model", help="Model directory written by `perfml train`."),
    queries: Path = typer.Option(..., "--queries", help="CSV with board, app_id, input_size (+ launch columns)."),
    output: Path = typer.Option(..., "--output", help="CSV to write (a regular file): the queries plus predicted_ms, extrapolated, extrapolation."),
    data_home: Optional[Path] = DataHome,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file (regular files only)."),
    characterization: Optional[Path] = typer.Option(None, "--characterization", help="Characterization of the target board (from `perfml characterize`); the queries must all be of that board."),
    calibration: Optional[Path] = typer.Option(None, "--calibration", help="Runtime rows (any kernel of known work) measured on the target board, with time_ms: calibrates its characterization."),
) -> None:
    """Predict runtimes (ms) for the queries, row for row; boards may be unseen (specs from the registry).

    With ``--characterization`` or ``--calibration`` (the calibrated tier), that file is
    the only thing of the target board the prediction uses.

    Rows beyond the training range are flagged in the ``extrapolated`` column; a bad row
    stops everything and nothing is written.
    """
    from perfml._safe_output import check_output_path
    from perfml.learned.persistence import load_model
    from perfml.learned.queries import predict_queries, read_query_csv, write_predictions

    check_output_path(output, overwrite=overwrite)  # refuse early, before loading the model
    original = read_query_csv(queries)
    reg = load_model(model, data_home=data_home)
    if characterization is not None or calibration is not None:
        _use_target(reg, original, characterization, calibration)
    result = predict_queries(reg, original, str(queries))
    write_predictions(result, output, overwrite=overwrite)
    n_extra = int(result["extrapolated"].sum())
    note = f" ({n_extra} beyond the training range: see column extrapolated)" if n_extra else ""
    typer.echo(f"wrote {len(result)} predictions to {output}{note}")


def _use_target(reg, queries, characterization: Optional[Path], calibration: Optional[Path]) -> None:
    """Give the model the target board's characterization (read, or calibrated from runtimes)."""
    from perfml.errors import InvalidValueError
    from perfml.learned.target_characterization import calibrate_target, use_target_characterization

    if characterization is not None and calibration is not None:
        raise InvalidValueError("give --characterization or --calibration, not both (a calibration builds a characterization)")
    boards = queries["board"].astype(str) if "board" in queries else []
    if characterization is not None:
        from perfml.characterize import load_characterization

        ch, where = load_characterization(characterization), str(characterization)
    else:
        ch, where = calibrate_target(calibration, boards), f"the calibration of {calibration}"
    for warning in use_target_characterization(reg, ch, boards, where):
        typer.echo(f"warning: {warning}", err=True)


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("predict")(predict)
