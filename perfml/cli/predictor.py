"""``perfml train``, ``perfml predict`` and ``perfml tune``: the learned predictor for users."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

DataHome = typer.Option(None, "--data-home", help="Directory with the shared datasets tables (default: $PERFML_DATA_HOME or ../shared/datasets).")


def train(
    out: Path = typer.Option(..., "--out", help="Model directory to create."),
    data_home: Optional[Path] = DataHome,
    source: Optional[str] = typer.Option(None, "--source", help="Train only on runtimes of this source (default: every source of runtimes.csv.gz, described and undescribed kernels)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing perfml model directory (never anything else)."),
    card: Optional[Path] = typer.Option(None, "--card", help="A model card (Markdown) to store in the directory as MODEL_CARD.md (hashed with the rest)."),
    sweep: Optional[list[Path]] = typer.Option(None, "--sweep", help="A sweep result set (`perfml sweep run --out DIR`) whose microbenchmark rows join training (repeatable)."),
) -> None:
    """Train the default predictor (transfer baseline + xgboost residual) on every kernel of runtimes.csv.gz.

    The prediction intervals are calibrated by leave-one-board-out cross-validation (one
    more fit per training board) and stored in the manifest; the held-out-board coverage
    of the 90% interval is printed per kernel group. The deep-learning operator corpus
    (dlops_runtimes.csv.gz) is not used.
    """
    import time

    from perfml.errors import DatasetSchemaError

    card_text = None
    if card is not None:  # read now: it may lie inside the directory being replaced
        try:
            card_text = Path(card).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetSchemaError(f"--card {card}: cannot be read as UTF-8 text ({exc.__class__.__name__}); give a Markdown file") from None

    from perfml.learned.persistence import replace_directory_check, save_model
    from perfml.learned.training import fit_default, training_runtimes, with_sweep_rows

    replace_directory_check(out, overwrite=overwrite)  # refuse before minutes of training
    from perfml._progress import progress
    from perfml.cli import quiet_requested

    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    rt = with_sweep_rows(training_runtimes(data_home, source=source), sweep or ())
    n_boards = rt["board"].nunique()
    with progress("training", total=2 + n_boards, quiet=quiet_requested()) as advance:
        t0 = time.perf_counter()
        model, calibration, oof = fit_default(rt, data_home=data_home, progress=lambda b: advance(f"calibrated without {b}"))
        seconds = time.perf_counter() - t0
        advance("saving")
        extra = {"training_rows": len(rt), "training_source": source,
                 "training_boards": sorted(rt["board"].unique()), "fit_seconds": seconds}
        if calibration is not None:
            extra["intervals"] = calibration
        save_model(model, out, overwrite=overwrite, training_rows=rt,
                   extra_files={"MODEL_CARD.md": card_text} if card_text is not None else None, extra=extra)
        advance("saved")
    typer.echo(f"trained on {len(rt)} runtimes of {n_boards} boards and {rt['app_id'].nunique()} kernels "
               f"in {seconds:.1f} s (fit + leave-one-board-out calibration); saved to {out}")
    if oof is not None:
        _echo_coverage(rt, oof)


def _echo_coverage(rt, oof) -> None:
    """Print leave-one-board-out MAPE and held-out-board coverage of the 90% interval per kernel group."""
    import numpy as np

    from perfml.learned.intervals import held_out_board_coverage, kernel_group

    groups = kernel_group(rt["app_id"])
    y = rt["measured_ms"].to_numpy(dtype=float)
    for g in ("described", "undescribed"):
        m = groups == g
        if not m.any():
            continue
        ape = np.abs(oof[m] / y[m] - 1.0)
        cov = held_out_board_coverage(oof[m], y[m], rt["board"].to_numpy()[m], 0.90)
        typer.echo(f"{g} kernels: {int(m.sum())} rows, leave-one-board-out MAPE {100 * ape.mean():.2f}%, "
                   f"{100 * np.mean(ape <= 0.2):.1f}% within 0.8-1.2; 90% interval covers {100 * cov['coverage']:.1f}% "
                   f"of held-out-board rows, mean relative width {cov['mean_relative_width']:.3f}")


def predict(
    model: Path = typer.Option(..., "--model", help="Model directory written by `perfml train`."),
    queries: Path = typer.Option(..., "--queries", help="CSV with board, app_id, input_size (+ launch and any other columns of runtimes.csv, carried through)."),
    output: Path = typer.Option(..., "--output", help="CSV to write (a regular file): the queries plus predicted_ms, lower_ms, upper_ms, basis, clamped_to_bound, extrapolated, extrapolation."),
    data_home: Optional[Path] = DataHome,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file (regular files only)."),
    reference: Optional[Path] = typer.Option(None, "--reference", help="CSV of your own measurements (query columns + time_ms) on boards you have; the same runs on other boards are predicted from them."),
    level: float = typer.Option(0.90, "--level", help="Nominal level of the lower_ms/upper_ms interval (0.50 to 0.99, steps of 0.01)."),
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

    from perfml.learned.intervals import check_level
    from perfml.learned.queries import read_reference

    check_level(level)
    check_output_path(output, overwrite=overwrite)  # refuse early, before loading the model
    original = read_query_csv(queries)
    ref = read_reference(reference) if reference is not None else None
    from perfml.cli._home import entry_data_home

    reg = load_model(model, data_home=entry_data_home(data_home))  # resolved once, here at the entry point
    if characterization is not None or calibration is not None:
        _use_target(reg, original, characterization, calibration)
    result = predict_queries(reg, original, str(queries), reference=ref,
                             reference_where=f"--reference {reference}", level=level)
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
