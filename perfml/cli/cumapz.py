"""``perfml cumapz``: CuMAPz factors and MPE of a kernel description.

``perfml cumapz DESCRIPTION`` analyses a description (a .toml path or a shipped name);
``perfml cumapz list`` lists the shipped descriptions; ``perfml cumapz validate-seed004``
correlates MPE with the measured times of seed 004 (Tables I-III);
``perfml cumapz transpose-sequence`` checks the Sec. 6.1 transpose steps.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

__all__ = ["register", "cumapz_app"]


class _DefaultToAnalyze(TyperGroup):
    """A group whose first argument, when it is not a subcommand, is a description."""

    def parse_args(self, ctx, args):  # noqa: ANN001, ANN201 - click signature
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["analyze", *args]
        return super().parse_args(ctx, args)


cumapz_app = typer.Typer(
    name="cumapz",
    cls=_DefaultToAnalyze,
    help="CuMAPz (Kim & Shrivastava 2011): memory performance factors and MPE of a kernel "
    "description. Usage: perfml cumapz DESCRIPTION [--board B] [--json].",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``cumapz`` command group to the perfml CLI."""
    app.add_typer(cumapz_app, name="cumapz")


BoardOpt = Annotated[str, typer.Option("--board", "-b", help="Board registry name.")]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option("--param", help="Supply or override a board field, FIELD=VALUE "
                 "(e.g. memory_channels=8). Repeatable."),
]
PolicyOpt = Annotated[
    str,
    typer.Option("--no-buffer-policy", help="Eq. 2 with no fetch reference: 'literal' "
                 "(lat_hiding = 0, as printed) or 'one' (count one load)."),
]
MaxAccessesOpt = Annotated[
    int | None,
    typer.Option("--max-accesses", min=1, help="Most element accesses (threads x memory "
                 "references) to emulate; larger analyses are refused before they start. "
                 "Default 2^26."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a description [params] value, NAME=INT "
                 "(e.g. MAX=512). Repeatable."),
]


def _device(board: str, params: list[str] | None):
    from perfml.boards import get_board
    from perfml.cumapz.device import device_from_board, parse_param_overrides

    return device_from_board(get_board(board), parse_param_overrides(params))


def _parse_sets(items: list[str] | None) -> dict[str, int]:
    from perfml.errors import KernelDescriptionError

    out: dict[str, int] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if key and key in out:
            raise KernelDescriptionError(f"--set {key} is given more than once; only one value would be used: "
                                         "give each name once")
        try:
            out[key] = int(value)
        except ValueError:
            sep = ""
        if not sep or not key:
            raise KernelDescriptionError(f"--set expects NAME=INTEGER (e.g. MAX=512), found {item!r}")
    return out


def _factor_table(rows: list[dict[str, Any]], title: str, first: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title))
    cols = [first, "data_reuse", "lat_hiding", "bw_util", "ch_skew", "shm_eff", "branch_eff", "mpe"]
    extra = [c for c in rows[0] if c not in cols] if rows else []
    for c in cols + extra:
        table.add_column(c, justify="left" if c == first else "right")
    for r in rows:
        table.add_row(*(f"{r[c]:.4g}" if isinstance(r[c], float) else escape(str(r[c]))
                        for c in cols + extra))
    Console(width=200).print(table)


@cumapz_app.command("analyze")
def analyze_command(
    description: Annotated[str, typer.Argument(help="A .toml description or a shipped name.")],
    board: BoardOpt = "Tesla-C1060",
    param: ParamOpt = None,
    set_: SetOpt = None,
    no_buffer_policy: PolicyOpt = "literal",
    max_accesses: MaxAccessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Factors (eq. 1-7) and MPE (eq. 8) of one kernel description."""
    from perfml.cumapz import analyze, resolve_description

    desc = resolve_description(description)
    sets = _parse_sets(set_)
    if sets:
        desc = desc.with_params(sets)
    result = analyze(desc, _device(board, param), no_buffer_policy=no_buffer_policy,
                     max_accesses=max_accesses)
    if as_json:
        from perfml.cli._output import print_json

        print_json(result.to_dict())
        return
    row = {k: v for k, v in result.to_dict().items()
           if k in ("description", "data_reuse", "lat_hiding", "bw_util", "ch_skew", "shm_eff",
                    "branch_eff", "mpe")}
    _factor_table([row], f"CuMAPz on {result.board}: {desc.title}", "description")
    c = result.counts
    typer.echo(
        f"grid {c['grid']} block {c['block']}, occupancy {c['occupancy_pct']:.0f}%, "
        f"n_shm_load {c['n_shm_load']}, n_blk_to_check {c['n_blk_to_check']}; "
        f"buffered accesses {c['n_buffered_accesses']}, global bytes requested/transferred "
        f"{c['bytes_access']}/{c['bytes_tr']}"
    )


@cumapz_app.command("list")
def list_command() -> None:
    """List the shipped example descriptions."""
    from perfml.cumapz import list_examples, resolve_description

    for name in list_examples():
        typer.echo(f"{name:36s} {resolve_description(name).title}")


@cumapz_app.command("validate-seed004")
def validate_command(
    board: BoardOpt = "Tesla-C1060",
    param: ParamOpt = None,
    set_: SetOpt = None,
    no_buffer_policy: PolicyOpt = "literal",
    max_accesses: MaxAccessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Spearman correlation of MPE with 1/time over the seed 004 variants (Tables I-III)."""
    from perfml.cumapz.seed004 import validate_seed004

    out = validate_seed004(_device(board, param), no_buffer_policy=no_buffer_policy,
                           params=_parse_sets(set_), max_accesses=max_accesses)
    if as_json:
        from perfml.cli._output import print_json

        print_json(out)
        return
    rows = [{"variant": v["variant"], **{k: v[k] for k in (
        "data_reuse", "lat_hiding", "bw_util", "ch_skew", "shm_eff", "branch_eff", "mpe")},
        "time_ms": v["time_ms"], "table": v["table"], "seed_line": v["seed_line"]}
        for v in out["variants"]]
    _factor_table(rows, f"Seed 004 variants on {out['board']} (measured times: Tables I-III)",
                  "variant")
    typer.echo(
        f"Spearman(MPE, 1/time) over {out['n_variants']} variants: {out['spearman']:.3f} "
        f"(shared-memory variants only: {out['spearman_shared_only']:.3f}; "
        f"Pearson {out['pearson']:.3f}); no_buffer_policy={out['no_buffer_policy']}"
    )
    bad = out["discordant_pairs"]
    typer.echo(f"{len(bad)} measured-order pairs that MPE does not order the same way:")
    for d in bad:
        tie = " (MPE tie)" if d["tie"] else ""
        typer.echo(f"  {d['faster']} ({d['faster_ms']} ms, MPE {d['faster_mpe']:.4g}) faster than "
                   f"{d['slower']} ({d['slower_ms']} ms, MPE {d['slower_mpe']:.4g}){tie}")


@cumapz_app.command("transpose-sequence")
def transpose_command(
    board: BoardOpt = "Tesla-C1060",
    param: ParamOpt = None,
    set_: SetOpt = None,
    no_buffer_policy: PolicyOpt = "literal",
    max_accesses: MaxAccessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """MPE along the Sec. 6.1 transpose steps, each compared with the paper's direction."""
    from perfml.cumapz.seed004 import transpose_sequence

    out = transpose_sequence(_device(board, param), no_buffer_policy=no_buffer_policy,
                             params=_parse_sets(set_), max_accesses=max_accesses)
    if as_json:
        from perfml.cli._output import print_json

        print_json(out)
        return
    rows = [{k: s[k] for k in ("description", "data_reuse", "lat_hiding", "bw_util", "ch_skew",
                               "shm_eff", "branch_eff", "mpe")}
            | {"paper": s["paper_direction"] or "-", "MPE moved": s["mpe_direction"] or "-"}
            for s in out["steps"]]
    _factor_table(rows, f"Transpose sequence (Sec. 6.1) on {out['board']}", "description")
    typer.echo("every step moves in the paper's direction" if out["all_agree"]
               else "some steps disagree with the paper's direction")
