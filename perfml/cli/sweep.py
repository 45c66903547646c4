"""``perfml sweep plan|run``: microbenchmark sweeps from specs (shipped in ``perfml/data/sweeps``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from perfml.errors import PerfmlError
from perfml.measure.spec import DEFAULT_MAX_POINTS

sweep_app = typer.Typer(
    help="Plan and run microbenchmark sweeps (specs shipped in perfml/data/sweeps, or your own).",
    no_args_is_help=True,
)

_SPECS_HELP = "Sweep spec files or directories (default: the specs shipped in perfml/data/sweeps)."
_KERNELS_DIR_HELP = (
    "Directory of .cu/.toml pairs to use instead of the shipped kernels "
    "(default: $PERFML_KERNELS_DIR, else the kernels inside the perfml package)."
)
_MAX_POINTS_HELP = "Refuse a spec that expands to more points than this (counted before expanding)."


def _catalog(kernels_dir: Path | None):
    from perfml.cli.kernels import resolve_kernels_dir
    from perfml.kernels.catalog import load_catalog

    return load_catalog(resolve_kernels_dir(kernels_dir))


def _specs(paths: list[Path] | None):
    from perfml.measure.spec import default_spec_paths, load_specs

    chosen = list(paths or default_spec_paths())
    if not chosen:
        raise PerfmlError("no sweep specs given and none shipped in perfml/data/sweeps; pass SPEC files")
    return load_specs(chosen)


def _board(name: str | None) -> Any:
    if name is None:
        return None
    from perfml import boards

    return boards.get_board(name)


@sweep_app.command("plan")
def plan(
    specs: Annotated[list[Path] | None, typer.Argument(help=_SPECS_HELP)] = None,
    board: Annotated[
        str, typer.Option("--board", help="Registry board to plan for (SMs, peaks).")
    ] = "H100-SXM",
    sms: Annotated[
        int | None,
        typer.Option("--sms", min=1, help="SM count; overrides the board's, no peaks then."),
    ] = None,
    points: Annotated[bool, typer.Option("--points", help="List every planned point.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    kernels_dir: Annotated[
        Path | None, typer.Option("--kernels-dir", help=_KERNELS_DIR_HELP)
    ] = None,
    max_points: Annotated[
        int, typer.Option("--max-points", min=1, help=_MAX_POINTS_HELP)
    ] = DEFAULT_MAX_POINTS,
) -> None:
    """Print the planned points and the estimated time of each spec."""
    from perfml.cli.kernels import strict_json
    from perfml.measure.spec import plan_specs

    named = _board(board)  # an unknown --board is an error even where --sms replaces its SM count
    reg = None if sms else named
    n_sms = sms or int(reg.sms)
    plans = plan_specs(_specs(specs), _catalog(kernels_dir), sms=n_sms, board=reg,
                       max_points=max_points)
    total = sum(p.estimated_s for p in plans)
    if json_:
        doc = {
            "board": None if sms else board,
            "sms": n_sms,
            "estimated_s": total,
            "specs": [
                {
                    "name": p.spec.name,
                    "path": str(p.spec.path) if p.spec.path else None,
                    "points": len(p.points),
                    "estimated_s": p.estimated_s,
                    "worst_case_s": p.worst_case_s,
                    "time_budget_s": p.spec.time_budget_s,
                    "over_budget": p.over_budget,
                    "launches": [
                        {
                            "kernel": pt.kernel,
                            "params": dict(pt.launch.params),
                            "grid": list(pt.launch.grid),
                            "block": list(pt.launch.block),
                            "shared_bytes": pt.launch.shared_mem,
                            "estimated_s": pt.estimated_s,
                        }
                        for pt in p.points
                    ]
                    if points
                    else None,
                }
                for p in plans
            ],
        }
        typer.echo(strict_json(doc, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    where = f"{board}, {n_sms} SMs" if reg is not None else f"{n_sms} SMs, no peaks: 1 ms per launch"
    table = Table("spec", "points", "estimated", "worst case", "budget", "", title=f"sweep plan ({where})")
    for p in plans:
        flag = "[red]over budget[/]" if p.over_budget else ""
        table.add_row(
            p.spec.name, str(len(p.points)), f"{p.estimated_s:.1f} s", f"{p.worst_case_s:.0f} s",
            f"{p.spec.time_budget_s:.0f} s", flag,
        )
    budget = sum(p.spec.time_budget_s for p in plans)
    worst = sum(p.worst_case_s for p in plans)
    table.add_row("total", str(sum(len(p.points) for p in plans)), f"{total:.1f} s", f"{worst:.0f} s",
                  f"{budget:.0f} s", "")
    console.print(table)
    if points:
        for p in plans:
            for pt in p.points:
                console.print(
                    f"{p.spec.name}  {pt.kernel}  {pt.launch.params_json}  grid={pt.launch.grid} "
                    f"block={pt.launch.block}  ~{pt.estimated_s * 1e3:.1f} ms"
                )


def _default_out(device_name: str) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "device"
    return Path("results") / slug


@sweep_app.command("run")
def run(
    specs: Annotated[list[Path] | None, typer.Argument(help=_SPECS_HELP)] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Result set directory (default results/<device>)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the result set in --out, skipping stored points.")
    ] = False,
    backend: Annotated[
        str, typer.Option("--backend", help="cupy (a GPU) or replay (recorded results).")
    ] = "cupy",
    replay: Annotated[
        Path | None, typer.Option("--replay", help="Result set to serve with --backend replay.")
    ] = None,
    device: Annotated[int | None, typer.Option("--device", min=0, help="CUDA device ordinal, with --backend cupy "
                                                "(default 0).")] = None,
    board: Annotated[
        str | None, typer.Option("--board", help="Registry board of the device: time estimates and the MLflow board tag (the device's own board when the registry knows the device).")
    ] = None,
    timing: Annotated[
        str | None,
        typer.Option("--timing", help="How each launch is timed: cuda-events (default; CUDA events around the "
                     "launch, launch overhead included) or kernel-duration (the kernel's time on the GPU from "
                     "CUPTI activity records, as nvprof reports it and the data home's application runtimes "
                     "are; needs cupti-python). A replay serves its recording's timing."),
    ] = None,
    flush_every: Annotated[
        int, typer.Option("--flush-every", min=1, help="Points per appended Parquet part.")
    ] = 16,
    kernels_dir: Annotated[
        Path | None, typer.Option("--kernels-dir", help=_KERNELS_DIR_HELP)
    ] = None,
    max_points: Annotated[
        int, typer.Option("--max-points", min=1, help=_MAX_POINTS_HELP)
    ] = DEFAULT_MAX_POINTS,
    tracking_uri: Annotated[
        str | None,
        typer.Option("--tracking-uri", help="Also log the result set (and its characterization) as an MLflow run "
                     "tagged with the board and device fingerprint, e.g. http://127.0.0.1:5000."),
    ] = None,
) -> None:
    """Measure the specs' points into an append-only result set."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from perfml.measure import make_backend
    from perfml.measure.runner import run_sweeps

    from perfml.errors import InvalidValueError

    if backend == "replay" and device is not None:  # ignored before: the recording was served whatever it named
        raise InvalidValueError(f"--device {device} selects a GPU for --backend cupy; --backend {backend} serves the "
                                "set of --replay, measured on its own device: leave --device out")
    if backend == "cupy" and replay is not None:
        raise InvalidValueError(f"--replay {replay} is read by --backend replay only; with --backend cupy the "
                                "points are measured: add --backend replay, or leave --replay out")
    loaded = _specs(specs)
    reg = _board(board)
    if replay is not None and out is not None and Path(replay).resolve() == Path(out).resolve():
        raise InvalidValueError(f"--out {out} is the set --replay serves; replayed rows would be appended to the "
                                "measurements they copy: write the replay to another --out")
    if tracking_uri is not None:
        # before any point is measured: a store found unusable after the sweep (hours on a GPU) stopped the
        # command at its end, its results kept but not logged
        from perfml._mlflow import check_reachable, configure_http

        configure_http()
        check_reachable(tracking_uri)
    catalog = _catalog(kernels_dir)  # one catalog for planning and for the backend
    console = Console(stderr=True)
    with make_backend(backend, replay=str(replay) if replay else None, device=0 if device is None else device,
                      catalog=catalog, timing=timing) as be:
        if board is not None:  # --board names this device's results (MLflow tag, estimates): never another board
            from perfml.boards import check_board_is_device

            check_board_is_device(board, be.device_info().name, f"this sweep (--backend {backend})")
        target = out or _default_out(be.device_info().name)
        from perfml._progress import progress_enabled
        from perfml.cli import quiet_requested

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # one rule for every long command: silent with --quiet or off a terminal
            disable=not progress_enabled(quiet=quiet_requested()),
        ) as bar:
            tasks: dict[str, Any] = {}

            def progress(spec: str, done: int, total: int) -> None:
                if spec not in tasks:
                    tasks[spec] = bar.add_task(spec, total=total)
                bar.update(tasks[spec], completed=done)

            try:
                result_set, reports = run_sweeps(
                    loaded, be, target, resume=resume, catalog=catalog, board=reg,
                    flush_every=flush_every, progress=progress, max_points=max_points,
                    on_stale=lambda removed: console.print(
                        f"[yellow]removed {len(removed)} stale temporary file(s) left by an "
                        f"interrupted sweep: {', '.join(p.name for p in removed)}[/]"
                    ),
                )
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what was measured is stored; say how to go on
                if Path(target).is_dir():
                    console.print(f"the points measured so far are stored in {target}; measure the rest with "
                                  f"`perfml sweep run ... --out {target} --resume`", highlight=False)
                raise
    thresholds = {s.name: s.cv_threshold for s in loaded}
    for r in reports:
        console.print(
            f"{r.spec}: {r.measured} measured, {r.already_done} already stored, "
            f"{r.skipped_budget} left (budget), {r.noisy} noisy, {len(r.failed)} failed "
            f"in {r.elapsed_s:.1f} s"
        )
        for line in r.advice(thresholds[r.spec]):
            console.print(f"[yellow]{line}[/]")
    console.print(f"results in {result_set.path}")
    if tracking_uri is not None:
        from perfml.lab.sweeps import log_result_set

        try:
            run_id = log_result_set(result_set.path, tracking_uri=tracking_uri, board=board)
        except KeyboardInterrupt:  # the set is whole; only its MLflow run (marked FAILED) is missing
            console.print(f"the result set {result_set.path} is complete but was not logged to MLflow; log it with "
                          f"`perfml sweep run ... --out {result_set.path} --resume --tracking-uri {tracking_uri}`",
                          highlight=False)
            raise
        console.print(f"logged as MLflow run {run_id}")
    failed = sum(len(r.failed) for r in reports)
    if failed:
        from perfml.measure.runner import SweepFailedPointsError

        raise SweepFailedPointsError(
            f"{failed} point(s) failed to compile or validate and were not recorded; fix them "
            f"and re-run with --resume --out {result_set.path}"
        )


@sweep_app.command("pull")
def pull(
    board: Annotated[str, typer.Option("--board", help="Board whose latest logged result set to bring back.")],
    out: Annotated[Path, typer.Option("--out", help="New directory for the result set.")],
    tracking_uri: Annotated[
        str | None, typer.Option("--tracking-uri", help="MLflow tracking URI (default: MLFLOW_TRACKING_URI).")
    ] = None,
    fingerprint: Annotated[
        str | None, typer.Option("--fingerprint", help="Device fingerprint id (or a prefix) when several devices measured the board.")
    ] = None,
    timing: Annotated[
        str | None, typer.Option("--timing", help="Only sets timed so: cuda-events or kernel-duration (default: the "
                                 "latest, however timed).")
    ] = None,
) -> None:
    """Bring back a result set logged with `sweep run --tracking-uri`, for replay and characterization."""
    from perfml.lab.sweeps import pull_result_set

    path = pull_result_set(board, out, tracking_uri=tracking_uri, fingerprint=fingerprint, timing=timing)
    typer.echo(f"result set of {board} in {path}; replay it with `perfml sweep run SPEC --backend replay --replay {path}`")


def register(app: typer.Typer) -> None:
    app.add_typer(sweep_app, name="sweep")
