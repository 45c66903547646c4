"""How far two measurements of the same board lie apart: sweep points and characterizations.

    python experiments/characterization_repeat.py sweeps/results/H200 sweeps/results/archive/H200-run3 --board H200

For two result sets of the same board model (the same shipped specs, measured on two cards or
two days), prints

* per spec, the ratio of the second set's median time to the first's over the points both
  hold (median and range), and how many points each flags noisy;
* each measured and calibrated value of the two characterizations (``perfml characterize`` of
  each folder now), second / first;
* the two streaming curves, time by time.

Nothing is fitted; the figures are the floor under any prediction error on that board.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def spec_ratios(first, second):
    """Rows (spec, points, median ratio, min, max, noisy in first, noisy in second)."""
    both = first.merge(second, on="point_id", suffixes=("", "_2"))
    rows = []
    for spec, group in both.groupby("spec", sort=True):
        ratio = group["time_median_s_2"] / group["time_median_s"]
        rows.append((spec, len(group), float(ratio.median()), float(ratio.min()), float(ratio.max()),
                     int(group["noisy"].sum()), int(group["noisy_2"].sum())))
    return rows


def _key(value) -> tuple:
    """A value's identity across two sets: quantity, unit, tier and what measured it (the family
    or kernel: fp32_throughput comes from fp32_simple and from fp32_div)."""
    what = dict(value.provenance or {}).get("family_or_kernel")
    return value.quantity, value.unit, value.tier, what


def value_ratios(first, second):
    """Rows (quantity, unit, tier, family or kernel, first value, second value, ratio) of the
    measured and calibrated tiers."""
    theirs = {_key(v): v.value for v in second.values}
    rows = []
    for v in first.values:
        if v.tier in ("measured", "calibrated") and _key(v) in theirs:
            other = theirs[_key(v)]
            rows.append((*_key(v), v.value, other, other / v.value if v.value else float("nan")))
    return rows


def main(argv: list[str] | None = None) -> int:
    from perfml.characterize.build import characterize_results
    from perfml.measure.store import ResultSet

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--board", required=True, help="registry name of the board both sets measured")
    args = parser.parse_args(argv)

    first, second = ResultSet.open(args.first).read(), ResultSet.open(args.second).read()
    print(f"# {args.first} ({len(first)} points) vs {args.second} ({len(second)} points), board {args.board}")
    print("\n## Sweep points: second / first median time")
    print(f"{'spec':16s} {'points':>6s} {'median':>7s} {'min':>6s} {'max':>6s} {'noisy 1st':>9s} {'noisy 2nd':>9s}")
    for spec, n, med, lo, hi, n1, n2 in spec_ratios(first, second):
        print(f"{spec:16s} {n:6d} {med:7.3f} {lo:6.3f} {hi:6.3f} {n1:9d} {n2:9d}")

    ch1 = characterize_results(args.first, board=args.board)
    ch2 = characterize_results(args.second, board=args.board)
    print("\n## Characterization values (perfml characterize of each set): second / first")
    ratios = []
    for quantity, unit, tier, what, a, b, ratio in value_ratios(ch1, ch2):
        ratios.append(ratio)
        print(f"{quantity:24s} {unit:22s} {tier:10s} {str(what or ''):20s} {a:12.5g} {b:12.5g} {ratio:7.3f}")
    if ratios:
        spread = np.abs(np.asarray(ratios) - 1)
        print(f"{len(ratios)} values: median |ratio - 1| {np.median(spread):.4f}, largest {spread.max():.4f}")
    c1, c2 = ch1.stream_curve, ch2.stream_curve
    if c1 is not None and c2 is not None and list(c1.bytes) == list(c2.bytes):
        print("\n## Streaming curve (calibration spec's vectorAdd): second / first time per size")
        for nbytes, t1, t2 in zip(c1.bytes, c1.seconds, c2.seconds, strict=True):
            print(f"{nbytes:14.4g} B {t1 * 1e3:10.5f} ms {t2 * 1e3:10.5f} ms {t2 / t1:7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
