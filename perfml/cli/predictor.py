"""``perfml train``, ``perfml predict`` and ``perfml tune``: the learned predictor for users."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

DataHome = typer.Option(None, "--data-home", help="Directory with the shared datasets tables (default: $PERFML_DATA_HOME or ../shared/datasets).")


def train(
    out: Path = typer.Option(..., "--out", help="Model directory to create."),
    data_home: Optional[Path] = DataHome,
    source: Optional[list[str]] = typer.Option(None, "--source", help="Train only on rows of this source (repeatable): a source of runtimes.csv.gz or neusight-2025 (the operators). Default: every source."),
    corpus: Optional[list[str]] = typer.Option(None, "--corpus", help="Train only this sub-model (repeatable): described, undescribed or dlops. Default: all three."),
    dlops_rows: Optional[int] = typer.Option(None, "--dlops-rows", help="Train the operator model on a stratified subsample of about this many rows (seed --seed): each (board, op) keeps its share of the rows, and at least one; default: every row."),
    seed: int = typer.Option(0, "--seed", help="Random seed (subsample and learners), 0 to 2**32 - 1."),
    n_jobs: Optional[int] = typer.Option(None, "--n-jobs", help="Threads of the operator learner (default: its own)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing perfml model directory (never anything else)."),
    card: Optional[Path] = typer.Option(None, "--card", help="A model card (Markdown) to store in the directory as MODEL_CARD.md (hashed with the rest)."),
    sweep: Optional[list[Path]] = typer.Option(None, "--sweep", help="A sweep result set (`perfml sweep run --out DIR`) whose microbenchmark rows join training (repeatable)."),
    measured: Optional[list[Path]] = typer.Option(None, "--measured", help="A board you measured with perfml's tools (a folder as experiments/measure_board_on_device.sh writes: sweep result set and/or dlops_torch.csv): its application kernels join the described sub-models' training rows, its operator calls the dlops ones (repeatable)."),
    exclude_board: Optional[list[str]] = typer.Option(None, "--exclude-board", help="Leave this board's rows out of training (repeatable): the board is then unseen, and its measurements can check the predictions."),
    calibrated_tier: bool = typer.Option(True, "--calibrated-tier/--no-calibrated-tier", help="Also train the calibrated-tier sub-models (dlops-calibrated and described-calibrated: each board characterized from its own add calls or vectorAdd runs), which answer `perfml predict --calibration`. Default: on."),
    wave_scaling: str = typer.Option("default", "--wave-scaling", help="Wave scaling as a candidate baseline of the two application sub-models: default (on for undescribed, off for described), off, on, or auto (kept where an inner leave-one-board-out finds it helps)."),
) -> None:
    """Train one sub-model per corpus of the data home, each with its interval calibration.

    Sub-models: ``described`` (the nine applications of runtimes.csv.gz), ``undescribed``
    (Rodinia and other kernels known only from measurements) and ``dlops`` (the
    deep-learning operators of dlops_runtimes.csv.gz). Each one's prediction intervals are
    calibrated by leave-one-board-out cross-validation (one more fit per training board)
    per kernel group / op class and stored in its hashed manifest; the held-out-board
    MAPE, share within 0.8-1.2, coverage of the 90% interval and its mean width are
    printed per corpus and group.
    """
    import time

    from perfml.errors import DatasetSchemaError

    card_text = None
    if card is not None:  # read now: it may lie inside the directory being replaced
        from perfml._files import not_a_file

        why = not_a_file(card)
        if why is not None:
            raise DatasetSchemaError(f"--card {card}: {why}; give a Markdown file")
        try:
            card_text = Path(card).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetSchemaError(f"--card {card}: cannot be read as UTF-8 text ({exc.__class__.__name__}); give a Markdown file") from None

    from perfml.learned.bundle import save_bundle
    from perfml.learned.persistence import replace_directory_check
    from perfml.learned.training import (architecture_fold_count, corpus_figures, corpus_rows, fit_corpus,
                                         launch_fold_count, with_sweep_rows)

    choices = {"default": None, "off": False, "on": True, "auto": "auto"}
    if wave_scaling not in choices:
        from perfml.errors import InvalidValueError

        raise InvalidValueError(f"--wave-scaling must be default, off, on or auto, got {wave_scaling!r}")
    waves = choices[wave_scaling]
    if not 0 <= seed <= 2**32 - 1:  # numpy's generators and xgboost take no other
        from perfml.errors import InvalidValueError

        raise InvalidValueError(f"--seed must be a whole number from 0 to 2**32 - 1 (4294967295), got {seed}")
    replace_directory_check(out, overwrite=overwrite)  # refuse before minutes of training
    from perfml._progress import progress
    from perfml.cli import quiet_requested

    from perfml.cli._home import entry_data_home

    data_home = entry_data_home(data_home)  # resolved once, here at the entry point
    from perfml.learned.training import measured_board_rows

    measured_rows = [measured_board_rows(folder) for folder in measured or ()]  # bad input fails first
    rows = corpus_rows(data_home, sources=source, corpora=corpus, dlops_max_rows=dlops_rows, random_state=seed,
                       exclude_boards=exclude_board or (), measured=measured_rows)
    if sweep:  # microbenchmark kernels are known by their measurements: the undescribed sub-model's rows
        if corpus and "undescribed" not in corpus:
            from perfml.errors import InvalidValueError

            raise InvalidValueError("--sweep: sweep rows train the undescribed sub-model, which --corpus left out; "
                                    "add --corpus undescribed or drop --sweep")
        import pandas as pd

        rows["undescribed"] = with_sweep_rows(rows.get("undescribed", pd.DataFrame()), sweep)
    from perfml.learned.tiers import CALIBRATED_TIER, data_corpus
    from perfml.learned.training import calibrated_tier_rows

    jobs = dict(rows)  # sub-model name -> its training rows
    left_out = {}  # calibrated-tier sub-model -> boards without calibration runs
    not_trained = {}  # calibrated-tier sub-model -> why it was not trained
    if calibrated_tier:
        for name, (corpus_name, *_) in CALIBRATED_TIER.items():
            if corpus_name in rows:
                kept, left_out[name] = calibrated_tier_rows(name, rows[corpus_name])
                if kept["board"].nunique() >= 2:
                    jobs[name] = kept
                else:
                    not_trained[name] = (f"{name}: not trained: it needs boards with calibration runs "
                                         f"({', '.join(CALIBRATED_TIER[name][2])}) to learn from, at least 2, and the "
                                         f"rows have {kept['board'].nunique()}")
    parts, figures, seconds, calibrated = {}, {}, {}, {}
    launch_folds = {name: launch_fold_count(name, rt) for name, rt in jobs.items()}
    arch_folds = {name: architecture_fold_count(rt) for name, rt in jobs.items()}
    total = sum(1 + r["board"].nunique() + launch_folds[name] + arch_folds[name] for name, r in jobs.items()) + 1
    with progress("training", total=total, quiet=quiet_requested()) as advance:
        for name, rt in jobs.items():
            t0 = time.perf_counter()
            model, calibration, oof = fit_corpus(name, rt, data_home=data_home, random_state=seed, n_jobs=n_jobs,
                                                 wave_scaling=waves,
                                                 progress=lambda b, name=name: advance(f"{name}: calibrated without {b}"),
                                                 launch_progress=lambda i, name=name: advance(
                                                     f"{name}: unmeasured launch fold {i + 1}/{launch_folds[name]}"),
                                                 architecture_progress=lambda a, name=name: advance(
                                                     f"{name}: calibrated without the {a} boards"))
            seconds[name] = time.perf_counter() - t0
            advance(f"{name}: fitted")
            extra = {"training_rows": len(rt), "training_sources": sorted(set(rt["source"].astype(str))),
                     "training_boards": sorted(rt["board"].astype(str).unique()), "fit_seconds": seconds[name]}
            if calibration is not None:
                extra["intervals"] = calibration
            if oof is not None:
                figures[name] = corpus_figures(name, rt, oof)
            parts[name] = (model, rt, extra)
            calibrated[name] = calibration is not None
        top = {"training_sources": sorted({s for rt in rows.values() for s in rt["source"].astype(str)}),
               "excluded_boards": list(exclude_board or ()),
               "measured_boards": {str(folder): sorted({b for part in parts.values() for b in part["board"].astype(str)})
                                   for folder, parts in zip(measured or (), measured_rows)},
               "dlops_max_rows": dlops_rows, "seed": seed, "fit_seconds": seconds, "figures": figures}
        save_bundle(parts, out, overwrite=overwrite, extra=top,
                    extra_files={"MODEL_CARD.md": card_text} if card_text is not None else None)
        advance("saved")
    for name, rt in jobs.items():
        tier = (f"; calibrated tier: each board characterized from its own {', '.join(CALIBRATED_TIER[name][2])} runs, "
                "which are not scored") if name in CALIBRATED_TIER else ""
        if left_out.get(name):
            tier += f"; boards without such runs left out: {', '.join(left_out[name])}"
        how = ("fit + leave-one-board-out calibration" if calibrated[name] else
               "fit only: an interval is calibrated by leave-one-board-out over at least 3 boards, so this "
               "sub-model's predictions have no lower_ms/upper_ms")
        typer.echo(f"{name}: trained on {len(rt)} rows of {rt['board'].nunique()} boards and "
                   f"{rt['op' if data_corpus(name) == 'dlops' else 'app_id'].nunique()} "
                   f"kernels in {seconds[name]:.1f} s ({how}{tier})")
        for f in figures.get(name, ()):
            width = f["mean_relative_width"]
            width = f"{width:.3f}" if width is not None else "unbounded (too few rows for a 90% interval on some board)"
            typer.echo(f"  {name} {f['group']}: {f['rows']} rows, leave-one-board-out MAPE {f['mape']:.2f}%, "
                       f"{f['in_band']:.1f}% within 0.8-1.2; 90% interval covers {f['coverage']:.1f}% of held-out-board "
                       f"rows, mean relative width {width}")
        launch = (parts[name][2].get("intervals") or {}).get("unmeasured_launch")
        if launch is not None:
            held = launch["held_out_board"]
            width = held["mean_relative_width"]
            width = f"{width:.3f}" if width is not None else "unbounded (too few rows on some board)"
            typer.echo(f"  {name} unmeasured launch: {launch['n']} rows held out with their block size "
                       f"({launch['protocol']}), MAPE {launch['mape']:.2f}%, {launch['in_band']:.1f}% within 0.8-1.2; "
                       f"their {held['level']:.0%} interval, calibrated on the other boards' such rows, covers "
                       f"{100 * held['coverage']:.1f}%{_per_kernel_range(held)}, mean relative width {width}")
        unseen = (parts[name][2].get("intervals") or {}).get("unseen_architecture")
        if unseen is not None:
            held = unseen["held_out_architecture"]
            width = held["mean_relative_width"]
            width = f"{width:.3f}" if width is not None else "unbounded (too few rows on some architecture)"
            per = ", ".join(f"{a} {100 * c:.1f}%" for a, c in held["per_architecture"].items())
            typer.echo(f"  {name} unseen architecture: {unseen['n']} rows, each architecture held out "
                       f"({unseen['protocol']}), MAPE {unseen['mape']:.2f}%, {unseen['in_band']:.1f}% within 0.8-1.2; "
                       f"their {held['level']:.0%} interval, calibrated on the other architectures' rows, covers "
                       f"{100 * held['coverage']:.1f}% ({per}), mean relative width {width}")
    for line in not_trained.values():
        typer.echo(line)
    typer.echo(f"saved to {out}")


def _per_kernel_range(held: dict) -> str:
    """" (per kernel 86.9-90.6%)" of an unmeasured-launch entry's held-out coverage ("" without kernels)."""
    per = list((held.get("per_kernel") or {}).values())
    return f" (per kernel {100 * min(per):.1f}-{100 * max(per):.1f}%)" if per else ""


def predict(
    model: Path = typer.Option(..., "--model", help="Model directory written by `perfml train`."),
    queries: Path = typer.Option(..., "--queries", help="CSV of application rows (board, app_id, input_size: the columns of runtimes.csv) and/or operator rows (board, op and its dims: the columns of dlops_runtimes.csv), without time columns; other columns are carried through."),
    # text, not Path: Path("out/") drops the slash that says a directory was meant
    output: str = typer.Option(..., "--output", help="File to write (a regular file; CSV, or .csv.gz/.bz2/.xz compressed, .parquet, .json): the queries plus predicted_ms, lower_ms, upper_ms, basis, clamped_to_bound, extrapolated, extrapolation, tier (spec or calibrated)."),
    data_home: Optional[Path] = DataHome,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file (regular files only)."),
    reference: Optional[Path] = typer.Option(None, "--reference", help="CSV of your own measurements (query columns + time_ms; application or operator rows) on boards you have; the same runs on other boards are predicted from them."),
    level: float = typer.Option(0.90, "--level", help="Nominal level of the lower_ms/upper_ms interval (0.50 to 0.99, steps of 0.01)."),
    characterization: Optional[Path] = typer.Option(None, "--characterization", help="Characterization of the target board (from `perfml characterize`); the queries must all be of that board."),
    calibration: Optional[Path] = typer.Option(None, "--calibration", help="Runtime rows (any kernel of known work) measured on the target board, with time_ms, or a sweep result-set folder of the target (its application kernels: e.g. the `calibration` spec): calibrates its characterization."),
    profile: Optional[Path] = typer.Option(None, "--profile", help="Profiler counters of the --reference runs: an `ncu --csv` export (details or raw page) or an `nvprof --csv` metrics/events export (docs/profile_import.md)."),
) -> None:
    """Predict runtimes (ms) for the queries, row for row; boards may be unseen (specs from the registry).

    A row with ``app_id`` is an application kernel (nine described apps, Rodinia, or your
    own with ``--reference``); a row with ``op`` is a deep-learning operator (bmm, linear,
    element-wise, softmax, ln, conv, with its dimensions). Each goes to the model
    directory's sub-model for its corpus; the output keeps the rows' order and columns.

    With ``--characterization`` or ``--calibration`` (the calibrated tier), that file is
    the only thing of the target board the prediction uses, and a corpus whose model has a
    calibrated-tier sub-model (``dlops-calibrated``: give the target's element-wise ``add``
    calls; ``described-calibrated``: its ``vectorAdd`` runs) is answered by it.

    Rows beyond the training range are flagged in the ``extrapolated`` column; a bad row
    stops everything and nothing is written.
    """
    from perfml._csv_header import file_rows
    from perfml._safe_output import check_output_path, table_format
    from perfml.learned.bundle import (
        load_predictor,
        predict_any,
        read_reference_any,
        reference_measured_warnings,
        reference_repeat_warnings,
        reference_unasked_warnings,
    )
    from perfml.learned.queries import read_query_csv, write_predictions

    from perfml.learned.intervals import check_level

    check_level(level)
    check_output_path(output, overwrite=overwrite,  # refuse early, before loading the model
                      inputs={"--queries": queries, "--reference": reference, "--calibration": calibration,
                              "--characterization": characterization, "--profile": profile},
                      input_dirs={"--model": model, "--calibration": calibration, "--characterization": characterization})
    table_format(output)
    original = read_query_csv(queries)
    where = file_rows(str(queries), original)  # rows named by the lines they are on
    ref = read_reference_any(reference) if reference is not None else None
    if ref is not None:
        for warning in (reference_repeat_warnings(ref, f"--reference {reference}")
                        + reference_unasked_warnings(ref, original, f"--reference {reference}")):
            typer.echo(f"warning: {warning}", err=True)
    from perfml.learned.profile_import import (
        describe_profile,
        read_reference_profile,
        use_reference_profile,
        with_profiled_work,
    )

    # profiler counters describe application kernels: they attach to the reference's application rows
    prof = read_reference_profile(profile, ref[0] if ref is not None else None, reference) if profile is not None else None
    if prof is not None:  # the work it counted carries the user's own kernels (queries.predict_queries)
        ref = (with_profiled_work(ref[0], prof), *ref[1:])
    from perfml.cli._home import entry_data_home

    bundle = load_predictor(model, data_home=entry_data_home(data_home))  # resolved once, here at the entry point
    if ref is not None:
        for warning in reference_measured_warnings(bundle, ref, f"--reference {reference}"):
            typer.echo(f"warning: {warning}", err=True)
    if characterization is not None or calibration is not None:
        from perfml.learned.target_characterization import use_target

        for warning in use_target(bundle, original, where, characterization=characterization,
                                  calibration=calibration):
            typer.echo(f"warning: {warning}", err=True)
    if prof is not None:
        warnings = [use_reference_profile(reg, prof) for reg in bundle.amaris_models]
        warning = warnings[0] if warnings and all(warnings) else None  # a warning only when no sub-model uses it
        typer.echo(f"warning: {warning}" if warning else describe_profile(prof), err=True)
    result = predict_any(bundle, original, where, reference=ref,
                         reference_where=f"--reference {reference}", level=level)
    write_predictions(result, output, overwrite=overwrite)
    for warning in result.attrs.get("warnings", ()):
        typer.echo(f"warning: {warning}", err=True)
    n_extra = int(result["extrapolated"].sum())
    note = f" ({n_extra} beyond the training range: see column extrapolated)" if n_extra else ""
    typer.echo(f"wrote {len(result)} predictions to {output}{note}")


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("predict")(predict)
