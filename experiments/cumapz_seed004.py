"""CuMAPz on seed 004: Spearman(MPE, 1/time) over the Tables I-III variants, and the
Sec. 6.1 transpose sequence.

Kim & Shrivastava (2011) report an average correlation of 0.96 on their benchmarks.
This script computes MPE for each shipped seed 004 variant description
(perfml/descriptions/cumapz/seed004_*.toml) on the Tesla C1060 of the board registry,
pairs it with the measured time recorded in perfml/data/seed004_tables.toml (with the
seed line of every value) and prints the Spearman rank correlation with performance
(1 / time), for both readings of eq. (2) when a version has no fetch reference
('literal': lat_hiding = 0 as printed; 'one': one load). Nothing is tuned per variant.

Usage: python experiments/cumapz_seed004.py [--json] [--board Tesla-C1060]
(the same numbers: perfml cumapz validate-seed004 [--no-buffer-policy one] [--json])
"""

from __future__ import annotations

import argparse
import json

from perfml.boards import get_board
from perfml.cumapz import device_from_board
from perfml.cumapz.seed004 import transpose_sequence, validate_seed004


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--board", default="Tesla-C1060")
    args = parser.parse_args()
    device = device_from_board(get_board(args.board))
    out = {
        "validation": {p: validate_seed004(device, no_buffer_policy=p) for p in ("literal", "one")},
        "transpose": {p: transpose_sequence(device, no_buffer_policy=p) for p in ("literal", "one")},
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    lit = out["validation"]["literal"]
    one = out["validation"]["one"]
    print(f"Seed 004 motivating example on {lit['board']}: {lit['n_variants']} variants")
    print(f"{'variant':34s} {'table':>5s} {'line':>4s} {'time_ms':>9s} {'MPE literal':>12s} {'MPE one':>9s}")
    by_one = {v["variant"]: v for v in one["variants"]}
    for v in lit["variants"]:
        print(f"{v['variant']:34s} {v['table']:>5s} {v['seed_line']:4d} {v['time_ms']:9.2f} "
              f"{v['mpe']:12.4f} {by_one[v['variant']]['mpe']:9.4f}")
    for name, res in (("literal", lit), ("one", one)):
        print(f"Spearman(MPE, 1/time), no_buffer_policy={name}: {res['spearman']:.3f} over all "
              f"{res['n_variants']}; {res['spearman_shared_only']:.3f} over the shared-memory "
              f"versions; Pearson {res['pearson']:.3f}; "
              f"{sum(not d['tie'] for d in res['discordant_pairs'])} discordant pairs + "
              f"{sum(d['tie'] for d in res['discordant_pairs'])} MPE ties")
    print("\nTranspose sequence (Sec. 6.1), 2048x2048:")
    for name in ("literal", "one"):
        t = out["transpose"][name]
        steps = ", ".join(f"{s['description'].split('_', 2)[2]} {s['mpe']:.4g}"
                          + ("" if s["agrees"] is None else (" ok" if s["agrees"] else " WRONG"))
                          for s in t["steps"])
        print(f"  {name}: {steps}")


if __name__ == "__main__":
    main()
