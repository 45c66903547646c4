"""How finely CUPTI's kernel durations resolve time: the clock behind ``--timing kernel-duration``.

``perfml sweep run --timing kernel-duration`` times each launch by its CUPTI activity record
(:class:`perfml.measure.kernel_timing.KernelDurationTimer`): ``end - start`` in ns on the
GPU's timestamp clock. The smallest kernels of the nine applications take 1.2-3.1 us on an
H100 by these durations (``experiments/results/kernel_duration_check.txt``), so whether the
clock ticks every nanosecond or every microsecond decides whether such a time means
anything. This script measures it.

``--measure DIR`` (on a GPU, with CuPy and cupti-python) launches, one at a time with a
synchronize after each as a sweep does:

* ``empty``: a kernel that does nothing (1 block of 32 threads), ``--repeats`` times: the
  shortest duration CUPTI reports and its spread;
* ``spin``: a kernel that busy-waits on ``clock64()`` for ``cycles`` SM cycles, once per
  ``cycles`` in 0, ``--step``, 2 ``--step``, ... up to ``--max-cycles``: a true duration that
  grows in steps far finer than a microsecond, so the reported durations show the clock's
  quantum as the gaps between them;
* ``spin-fixed``: the spin kernel at ``--fixed-cycles``, ``--repeats`` times: the jitter of one
  duration.

It writes every record's raw ``start_ns`` / ``end_ns`` to ``DIR/spans.csv.gz`` and the machine
to ``DIR/meta.json``. Without ``--measure`` it reads such a folder (no GPU needed) and prints:

* per kernel: records, duration min / median / 99th percentile / max, distinct durations;
* the greatest common divisor of every duration and of every timestamp's offset from the
  first start (a clock that ticks every q ns gives multiples of q);
* the spin sweep's gaps between consecutive distinct durations (most frequent first), the
  steps between clusters of durations at most ``--merge-ns`` apart, and a
  least-squares line ``duration = a + b * cycles`` with its residuals (b in ns per cycle,
  1 / b the SM clock in GHz).

Usage: PYTHONPATH=. python experiments/cupti_resolution.py [DIR]
       (default sweeps/results/archive/H100-SXM-cupti-resolution)
       PYTHONPATH=. python experiments/cupti_resolution.py --measure DIR  (on a GPU)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent.parent
DEFAULT = HERE / "sweeps" / "results" / "archive" / "H100-SXM-cupti-resolution"
COLUMNS = ("kernel", "cycles", "start_ns", "end_ns")

_SOURCE = r"""
extern "C" __global__ void perfml_empty() {}
extern "C" __global__ void perfml_spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


def measure(out: Path, *, repeats: int, step: int, max_cycles: int, fixed_cycles: int, warmup: int = 20) -> None:
    """Launch the three groups on the current GPU and write their raw CUPTI spans (see the module docstring)."""
    import importlib.metadata as metadata

    import cupy as cp

    from perfml.measure.kernel_timing import KernelDurationTimer

    out.mkdir(parents=True, exist_ok=False)  # a recording is never overwritten
    module = cp.RawModule(code=_SOURCE)
    empty, spin = module.get_function("perfml_empty"), module.get_function("perfml_spin")
    sync = cp.cuda.Device().synchronize
    timer = KernelDurationTimer()
    rows: list[tuple[str, int, int, int]] = []

    def run(name: str, kernel, entry: str, cycles: list[int]) -> None:
        for c in cycles[:warmup]:
            kernel((1,), (32,), (np.int64(c),) if entry == "perfml_spin" else ())
        sync()
        timer.discard()
        for c in cycles:
            kernel((1,), (32,), (np.int64(c),) if entry == "perfml_spin" else ())
            sync()
        spans = timer.spans(entry, len(cycles))
        rows.extend((name, c, s, e) for c, (s, e) in zip(cycles, spans))

    try:
        run("empty", empty, "perfml_empty", [0] * repeats)
        run("spin", spin, "perfml_spin", list(range(0, max_cycles + 1, step)))
        run("spin-fixed", spin, "perfml_spin", [fixed_cycles] * repeats)
    finally:
        timer.close()
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(out / "spans.csv.gz", index=False)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    meta = {"device": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
            "compute_capability": f"{props['major']}.{props['minor']}",
            "driver_cuda_version": cp.cuda.runtime.driverGetVersion(),
            "cupy": cp.__version__, "cupti-python": metadata.version("cupti-python"),
            "launch": "1 block of 32 threads, a device synchronize after each launch",
            "repeats": repeats, "step_cycles": step, "max_cycles": max_cycles, "fixed_cycles": fixed_cycles,
            "warmup": warmup, "source": "synthetic microbenchmark (this script), measured by CUPTI activity records"}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {len(rows)} spans to {out / 'spans.csv.gz'}")


def read_spans(folder: Path) -> pd.DataFrame:
    """The spans of a ``--measure`` folder, with ``duration_ns``; a typed stop if a column is missing."""
    spans = pd.read_csv(folder / "spans.csv.gz")
    missing = [c for c in COLUMNS if c not in spans.columns]
    if missing:
        raise SystemExit(f"{folder / 'spans.csv.gz'}: columns {missing} missing; expected {list(COLUMNS)}")
    spans["duration_ns"] = spans["end_ns"] - spans["start_ns"]
    if (spans["duration_ns"] < 0).any():
        raise SystemExit(f"{folder / 'spans.csv.gz'}: a span ends before it starts")
    if spans.empty:
        raise SystemExit(f"{folder / 'spans.csv.gz'}: no spans; measure again with --measure")
    return spans


def gap_counts(durations_ns: np.ndarray, top: int = 6) -> list[tuple[int, int]]:
    """(gap, how often) between consecutive distinct durations, the most frequent first."""
    distinct = np.unique(durations_ns.astype(np.int64))
    gaps = np.diff(distinct)
    values, counts = np.unique(gaps, return_counts=True)
    order = np.lexsort((values, -counts))
    return [(int(values[i]), int(counts[i])) for i in order[:top]]


def clock_steps(durations_ns: np.ndarray, merge_ns: int) -> np.ndarray:
    """Steps (ns) between the clusters of distinct durations, a cluster being durations at most ``merge_ns``
    apart: a clock that ticks every q ns and whose timestamps are converted to ns with rounding reports
    durations in clusters a few ns wide, q apart."""
    distinct = np.unique(durations_ns.astype(np.int64))
    if len(distinct) < 2:
        return np.array([], dtype=np.int64)
    starts = np.concatenate([[True], np.diff(distinct) > merge_ns])
    return np.diff(distinct[starts])


def line_fit(cycles: np.ndarray, durations_ns: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Least-squares ``duration = a + b * cycles``: (a ns, b ns per cycle, residuals ns)."""
    b, a = np.polyfit(cycles.astype(float), durations_ns.astype(float), 1)
    return float(a), float(b), durations_ns - (a + b * cycles)


def report(folder: Path, merge_ns: int = 2) -> None:
    spans = read_spans(folder)
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        print(f"{folder.name}: {meta.get('device')} (CC {meta.get('compute_capability')}), driver CUDA "
              f"{meta.get('driver_cuda_version')}, CuPy {meta.get('cupy')}, cupti-python {meta.get('cupti-python')}; "
              f"{meta.get('launch')}")
    print("\nkernel        records  distinct   min ns  median ns   p99 ns   max ns")
    for kernel, group in spans.groupby("kernel", sort=False):
        d = group["duration_ns"].to_numpy()
        print(f"{kernel:<12} {len(d):>8} {len(np.unique(d)):>9} {d.min():>8.0f} {np.median(d):>10.0f} "
              f"{np.quantile(d, 0.99):>8.0f} {d.max():>8.0f}")

    durations = spans["duration_ns"].to_numpy(dtype=np.int64)
    offsets = np.concatenate([spans["start_ns"].to_numpy(np.int64), spans["end_ns"].to_numpy(np.int64)])
    offsets = offsets - offsets.min()
    print(f"\ngreatest common divisor of every duration: {int(np.gcd.reduce(durations[durations > 0]))} ns; "
          f"of every timestamp's offset from the first: {int(np.gcd.reduce(offsets[offsets > 0]))} ns")

    sweep = spans[spans["kernel"] == "spin"]
    if len(sweep) >= 3:
        cycles = sweep["cycles"].to_numpy(np.int64)
        d = sweep["duration_ns"].to_numpy(np.int64)
        print(f"\nspin sweep: {len(d)} launches, cycles {cycles.min()}..{cycles.max()} step "
              f"{int(np.median(np.diff(np.sort(cycles))))}, {len(np.unique(d))} distinct durations")
        print("  gaps between consecutive distinct durations (ns: count): "
              + ", ".join(f"{g}: {n}" for g, n in gap_counts(d)))
        steps = clock_steps(d, merge_ns)
        if len(steps):
            print(f"  distinct durations at most {merge_ns} ns apart merged: {len(steps) + 1} clusters, steps between "
                  f"them median {np.median(steps):.0f} ns, 5-95 % {np.quantile(steps, 0.05):.0f}.."
                  f"{np.quantile(steps, 0.95):.0f} ns, min {steps.min()} ns")
        a, b, resid = line_fit(cycles, d)
        clock = f"{1 / b:.3f} GHz" if b > 0 else "not positive"
        print(f"  least squares: duration = {a:.1f} ns + {b:.4f} ns x cycles (SM clock {clock}); "
              f"residuals: std {resid.std():.1f} ns, 5-95 % {np.quantile(resid, 0.05):.1f}..{np.quantile(resid, 0.95):.1f} ns")
    fixed = spans[spans["kernel"] == "spin-fixed"]
    if len(fixed):
        d = fixed["duration_ns"].to_numpy(np.int64)
        vals, counts = np.unique(d, return_counts=True)
        top = np.argsort(-counts)[:5]
        print(f"\nspin-fixed at {int(fixed['cycles'].iloc[0])} cycles: std {d.std():.1f} ns, range {d.min()}..{d.max()} ns; "
              "most frequent durations (ns: count): " + ", ".join(f"{vals[i]}: {counts[i]}" for i in top))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT, help="a --measure folder to report")
    parser.add_argument("--measure", type=Path, help="measure on this machine's GPU into this new folder")
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--step", type=int, default=5, help="spin sweep step, SM cycles")
    parser.add_argument("--max-cycles", type=int, default=20000)
    parser.add_argument("--fixed-cycles", type=int, default=2000)
    parser.add_argument("--merge-ns", type=int, default=2,
                        help="durations at most this far apart count as one clock step (the report)")
    args = parser.parse_args()
    if args.measure is not None:
        measure(args.measure, repeats=args.repeats, step=args.step, max_cycles=args.max_cycles,
                fixed_cycles=args.fixed_cycles)
        report(args.measure, args.merge_ns)
    else:
        report(args.folder, args.merge_ns)


if __name__ == "__main__":
    main()
