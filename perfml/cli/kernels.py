"""``perfml kernels``: list the kernel catalog and check purity offline.

``perfml kernels list`` prints the families and their kernels; ``perfml kernels check``
compiles every kernel for sm_75, sm_80 and sm_90 (no GPU needed), disassembles it and
prints the purity table; it exits with status 1 if a static kernel is below 0.99 or a
kernel fails to compile. ``--json`` prints only a JSON list, one object per kernel and
architecture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

kernels_app = typer.Typer(
    name="kernels",
    help="The microbenchmark and application kernel catalog (kernels/*.cu + *.toml).",
    no_args_is_help=True,
)

_JSON_KEYS = ("kernel", "family", "kind", "arch", "target", "purity", "n_target",
              "n_instructions", "region", "kernel_purity", "passed", "error", "histogram")


def resolve_kernels_dir(option: Path | None) -> Path | None:
    """``--kernels-dir``, else ``$PERFML_KERNELS_DIR``, else None (the shipped kernels).

    The environment is read here, in the CLI, and passed down as an argument: library
    code never reads it.
    """
    import os

    from perfml.kernels.catalog import KERNELS_DIR_ENV

    if option is not None:
        return option
    env = os.environ.get(KERNELS_DIR_ENV)
    return Path(env) if env else None


def resolve_cache_dir(option: Path | None) -> Path | None:
    """``--cache-dir``, else ``$PERFML_CACHE_DIR``, else ``$XDG_CACHE_HOME/perfml/cubin``, else None."""
    import os

    from perfml.kernels.compile import CACHE_DIR_ENV

    if option is not None:
        chosen, origin = option, "--cache-dir"
    elif os.environ.get(CACHE_DIR_ENV):
        chosen, origin = Path(os.environ[CACHE_DIR_ENV]), f"${CACHE_DIR_ENV}"
    elif os.environ.get("XDG_CACHE_HOME"):
        chosen, origin = Path(os.environ["XDG_CACHE_HOME"]) / "perfml" / "cubin", "$XDG_CACHE_HOME"
    else:
        return None
    if chosen.exists() and not chosen.is_dir():  # mkdir said "already exists; choose a new path"
        from perfml.errors import UnsafeOutputError

        raise UnsafeOutputError(f"{chosen} (from {origin}) is a file, not a directory; the compiled-kernel cache is "
                                "a directory: give a directory's path")
    return chosen


def resolve_cuda_home() -> str | None:
    """The CUDA toolkit directory of ``$CUDA_HOME`` (or ``$CUDA_PATH``), read here in the CLI and passed down."""
    import os

    for name in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(name):
            return os.environ[name]
    return None


def strict_json(value, indent: int | None = 2) -> str:
    """JSON that every parser accepts (the CLI's one strict printer, :func:`perfml.cli._output.to_json`)."""
    from perfml.cli._output import to_json

    return to_json(value, indent=indent)


def _check_choices(option: str, given: list[str] | None, valid) -> None:
    from perfml.errors import UnknownChoiceError

    valid = list(valid)
    unknown = [g for g in (given or []) if g not in valid]
    if unknown:
        raise UnknownChoiceError(
            f"{option} {', '.join(map(repr, unknown))} is not known; expected one of "
            f"{', '.join(valid) or '(none)'}"
        )


def _select(families: list[str] | None, kinds: list[str] | None, root: Path | None):
    from perfml.kernels.catalog import KINDS, UnknownKernelError, load_catalog

    _check_choices("--kind", kinds, KINDS)
    catalog = load_catalog(resolve_kernels_dir(root))
    if families:
        unknown = [f for f in families if f not in catalog]
        if unknown:
            raise UnknownKernelError(
                f"--family {', '.join(map(repr, unknown))} is not in the catalog; expected one "
                f"of {', '.join(catalog) or '(none)'}"
            )
        catalog = {name: catalog[name] for name in families}
    if kinds:
        catalog = {n: f for n, f in catalog.items() if f.kind in kinds}
    return catalog


_KERNELS_DIR_HELP = (
    "Directory of .cu/.toml pairs to use instead of the shipped kernels "
    "(default: $PERFML_KERNELS_DIR, else the kernels inside the perfml package)."
)


@kernels_app.command("list")
def list_kernels(
    kind: Optional[list[str]] = typer.Option(
        None, "--kind",
        help="static, dynamic, latency or application (repeatable).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON list."),
    kernels_dir: Optional[Path] = typer.Option(
        None, "--kernels-dir",
        help=_KERNELS_DIR_HELP,
    ),
) -> None:
    """List kernel families, their kernels (variants), targets and sweeps."""
    catalog = _select(None, kind, kernels_dir)
    rows = []
    for fam in catalog.values():
        for k in fam.kernels():
            rows.append({
                "kernel": k.name,
                "family": fam.name,
                "kind": fam.kind,
                "component": fam.component,
                "target": k.target,
                "archs": list(fam.archs),
                "params": dict(k.params),
                "sweep": {p: list(v) for p, v in fam.sweep.grid.items()} if fam.sweep else None,
            })
    if as_json:
        typer.echo(strict_json(rows, indent=1))
        return
    width = max((len(r["kernel"]) for r in rows), default=6)
    typer.echo(f"{'kernel':<{width}}  {'kind':<11} {'component':<16} {'target':<11} sweep")
    for r in rows:
        sweep = ", ".join(f"{p}={v}" for p, v in (r["sweep"] or {}).items())
        typer.echo(f"{r['kernel']:<{width}}  {r['kind']:<11} {r['component']:<16} "
                   f"{r['target']:<11} {sweep}")
    typer.echo(f"{len(catalog)} families, {len(rows)} kernels")


@kernels_app.command("check")
def check(
    arch: Optional[list[str]] = typer.Option(
        None, "--arch",
        help="Architecture(s) to check (repeatable; default sm_75, sm_80, sm_90).",
    ),
    family: Optional[list[str]] = typer.Option(
        None, "--family",
        help="Only these families (repeatable).",
    ),
    kind: Optional[list[str]] = typer.Option(
        None, "--kind",
        help="Only these kinds (repeatable).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON list of results."),
    compiler: str = typer.Option(
        "auto", "--compiler",
        help="auto (nvcc, else NVRTC), nvcc or nvrtc.",
    ),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir",
        help="Cubin cache (default $PERFML_CACHE_DIR, else $XDG_CACHE_HOME/perfml/cubin, else ~/.cache/perfml/cubin).",
    ),
    workers: Optional[int] = typer.Option(
        None, "--workers", min=1,
        help="Parallel compilations (default: CPU count, at most 4).",
    ),
    kernels_dir: Optional[Path] = typer.Option(
        None, "--kernels-dir",
        help=_KERNELS_DIR_HELP,
    ),
    sweep: bool = typer.Option(
        False, "--sweep",
        help="Also check every sweep point of dynamic and application families (default: their default parameters only).",
    ),
) -> None:
    """Compile every kernel offline, disassemble it and report its purity.

    Purity = target-class SASS instructions / all instructions of the timed region (the
    body of the kernel's largest innermost loop; see kernels/SIDECAR.md). Exits 1 if a
    static kernel is below 0.99 on an architecture or any kernel fails to compile.
    """
    from perfml.kernels.catalog import iter_kernels
    from perfml.kernels.purity import DEFAULT_ARCHS, STATIC_THRESHOLD, check_kernels

    catalog = _select(family, kind, kernels_dir)
    known_archs = sorted({a for fam in catalog.values() for a in fam.archs})
    _check_choices("--arch", arch, known_archs)
    archs = tuple(arch) if arch else DEFAULT_ARCHS
    kernels = ([k for fam in catalog.values() for k in fam.sweep_kernels()] if sweep
               else iter_kernels(catalog))
    results = check_kernels(kernels, archs, cache_dir=resolve_cache_dir(cache_dir),
                            compiler=compiler, workers=workers, cuda_home=resolve_cuda_home())
    if not results:  # "0 checks, 0 failed" read as a pass
        from perfml.errors import InvalidValueError

        raise InvalidValueError(
            f"no kernel of the selection is built for {', '.join(archs)} (the families' archs: "
            f"{', '.join(known_archs) or 'none'}); give --arch of those, or add the architectures to the sidecars")
    failed = [r for r in results if not r.passed]
    if as_json:
        typer.echo(strict_json([{k: r.to_dict()[k] for k in _JSON_KEYS} for r in results],
                               indent=1))
    else:
        by_kernel: dict[str, dict[str, object]] = {}
        for r in results:
            by_kernel.setdefault(r.kernel, {"kind": r.kind, "target": r.target})[r.arch] = r
        width = max((len(k) for k in by_kernel), default=6)
        header = f"{'kernel':<{width}}  {'kind':<11} {'target':<11} " + " ".join(
            f"{a:>8}" for a in archs)
        typer.echo(header)
        for name, row in by_kernel.items():
            cells = []
            for a in archs:
                r = row.get(a)
                if r is None:
                    cells.append(f"{'-':>8}")
                elif r.purity is None:
                    cells.append(f"{'ERROR':>8}")
                else:
                    mark = "" if r.passed else "!"
                    cells.append(f"{100 * r.purity:>7.2f}{mark or '%'}")
            typer.echo(f"{name:<{width}}  {row['kind']:<11} {row['target']:<11} "
                       + " ".join(cells))
        for r in failed:
            why = r.error or f"purity {r.purity:.4f} < {STATIC_THRESHOLD}"
            typer.echo(f"FAILED {r.kernel} {r.arch}: {why}", err=True)
        typer.echo(f"{len(results)} checks, {len(failed)} failed "
                   f"(static kernels must reach {100 * STATIC_THRESHOLD:.0f}%)")
    if failed:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Attach ``perfml kernels`` to the main app."""
    app.add_typer(kernels_app, name="kernels")
