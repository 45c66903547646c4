"""Measure the shipped microbenchmark sweeps on the visible GPU and characterize it.

What ``perfml sweep run`` + ``perfml characterize RESULTS`` do, in one resumable script
that needs only the library (NumPy, pandas, pyarrow, CuPy; no typer, MLflow or xgboost),
so it runs on a bare GPU machine with ``PYTHONPATH`` pointing at the checkout:

    PYTHONPATH=. python3 experiments/characterize_this_gpu.py --out sweeps/results/H100-SXM \
        --board H100-SXM

* Each spec is run in a process of its own, into one append-only result set
  (``--resume`` semantics: a point already stored is skipped), so a spec that breaks does
  not cost the others: a kernel fault (``CUDA_ERROR_ILLEGAL_ADDRESS``) poisons the CUDA
  context of its process for every later kernel, as the first H100 run of this script
  showed. The error is printed and the script goes on. Specs run in the order given by ``--specs``
  (default: every shipped spec, the application kernels last: they are the longest and
  are an evaluation set, not a characterization input).
* SIGINT (``timeout -s INT``) is passed on to the running spec, which flushes what it
  measured before the script stops.
* ``--timing kernel-duration`` times each launch by the kernel's duration from CUPTI
  (``perfml sweep run --timing``; needs ``cupti-python``) instead of CUDA events.
* After the sweeps, the result set is characterized (measured tier) and the
  characterization written beside it as ``characterization.json`` (never overwriting).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path


def _spec_order(paths: list[Path]) -> list[Path]:
    """Shipped specs with the application kernels last (longest, evaluation only)."""
    return sorted(paths, key=lambda p: (p.stem == "applications", p.stem))


def _measure_one(path: Path, out: Path, board_name: str | None, device: int, timing: str) -> int:
    """Run one spec into ``out`` (the child process's work)."""
    from perfml import boards
    from perfml.errors import KernelFaultError
    from perfml.kernels.catalog import load_catalog
    from perfml.measure import make_backend
    from perfml.measure.runner import run_sweeps
    from perfml.measure.spec import load_specs

    board = boards.get_board(board_name) if board_name else None
    catalog = load_catalog()
    (spec,) = load_specs([path])
    with make_backend("cupy", device=device, catalog=catalog, timing=timing) as backend:
        print(f"device: {json.dumps(backend.device_info().to_dict(), default=str)}", flush=True)
        try:
            _, reports = run_sweeps([spec], backend, out, resume=True, catalog=catalog, board=board)
        except KeyboardInterrupt:
            print(f"{path.stem}: interrupted (measured points were flushed; re-run to resume)", flush=True)
            return 130
        except KernelFaultError as exc:  # recorded in the set: a re-run skips the point
            print(f"{path.stem}: {exc}", flush=True)
            return 1
    failed = 0
    for r in reports:
        print(f"{r.spec}: {r.measured} measured, {r.already_done} already stored, "
              f"{r.skipped_budget} left (budget), {r.noisy} noisy, {len(r.failed)} failed "
              f"in {r.elapsed_s:.1f} s", flush=True)
        for key, err in r.failed[:5]:
            print(f"  failed {key}: {err[:400]}", flush=True)
        failed += len(r.failed)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="result set directory (resumed if it exists)")
    parser.add_argument("--board", default=None, help="registry name of the GPU (default: from the device name)")
    parser.add_argument("--specs", nargs="*", default=None, help="spec names (file stems) to run, in order")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--timing", default="cuda-events", choices=["cuda-events", "kernel-duration"],
                        help="how each launch is timed (perfml sweep run --timing; kernel-duration needs cupti-python)")
    parser.add_argument("--one-spec", type=Path, default=None, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args(argv)
    if args.one_spec is not None:
        return _measure_one(args.one_spec, args.out, args.board, args.device, args.timing)

    from perfml.characterize import characterize_results
    from perfml.measure.spec import default_spec_paths

    shipped = {p.stem: p for p in default_spec_paths()}
    if args.specs:
        unknown = [s for s in args.specs if s not in shipped]
        if unknown:
            parser.error(f"unknown spec(s) {unknown}; shipped: {sorted(shipped)}")
        paths = [shipped[s] for s in args.specs]
    else:
        paths = _spec_order(list(shipped.values()))
    failures = 0
    for path in paths:
        start = time.monotonic()
        command = [sys.executable, __file__, "--out", str(args.out), "--device", str(args.device),
                   "--timing", args.timing, "--one-spec", str(path)] + (["--board", args.board] if args.board else [])
        child = subprocess.Popen(command)
        try:
            rc = child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)  # let it flush what it measured
            child.wait(timeout=60)
            print(f"interrupted during {path.stem}; re-run to resume", flush=True)
            return 130
        if rc != 0:
            failures += 1
            print(f"{path.stem}: exit code {rc} after {time.monotonic() - start:.1f} s", flush=True)
    target = args.out / "characterization.json"
    try:
        ch = characterize_results(args.out, board=args.board)
        if target.exists():
            target = args.out / f"characterization-{time.strftime('%Y%m%dT%H%M%S')}.json"
        ch.save(target)
        print(f"characterization written to {target}", flush=True)
    except Exception:
        failures += 1
        print("characterization FAILED", flush=True)
        traceback.print_exc()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
