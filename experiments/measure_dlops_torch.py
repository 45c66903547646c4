"""Measure deep-learning operator latencies on the visible GPU with NeuSight's protocol.

The rows of ``dlops_runtimes.csv`` were measured by the NeuSight authors with PyTorch
(``neusight/Dataset/collect.py``, summarised in the datasets README, sections "Operator
semantics" and "Units and measurement"). This script repeats that protocol on the GPU it
runs on, for the operator configurations of a configuration file (columns ``op, B, M, N,
K, H``; written by ``experiments/dlops_measurement_configs.py``), so that a board absent
from the corpus can be measured the same way and compared with perfml's predictions:

* operators and tensors as NeuSight: ``bmm`` = ``torch.bmm`` of randn (B,M,N) x (B,N,K);
  ``linear`` = ``nn.Linear(N, K, bias=True)`` on randn (B,M,N); binary element-wise ops on
  two (B,H) tensors and the ``*u`` ops with a scalar drawn from (0, 1], on ``torch.zeros``
  as NeuSight did; ``relu`` / ``gelu`` (exact erf) / ``tanh``; ``ln`` = ``nn.LayerNorm(H)``;
  ``softmax`` = ``nn.Softmax(dim=1)``; FP32 with TF32 off;
* timing: 25 back-to-back calls on the same tensors, each bracketed by CUDA events and
  followed by a synchronize; the latency is the mean of the 5 fastest (``time_ms``).

Rows are appended to ``--out`` as they are measured (a CSV with the columns of
``dlops_runtimes.csv`` that apply), so an interrupted run keeps what it measured and a
re-run with the same ``--out`` skips the configurations already there. ``source`` is
``perfml-measured``: these are measurements made by this script, never NeuSight's.

    python3 experiments/measure_dlops_torch.py --configs CONFIGS.csv --board H100-SXM \
        --out dlops_H100-SXM.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

CALLS = 25
FASTEST = 5
DIMS = ("B", "M", "N", "K", "H")
COLUMNS = ("source", "board", "device_name", "op", *DIMS, "dtype", "time_ms", "time_ms_median",
           "calls", "torch_version", "cuda_version", "cudnn_version", "config_id")
BINARY = {"add": "add", "mul": "mul", "pow": "pow", "div": "div"}
SCALAR = {"addu": "add", "mulu": "mul", "powu": "pow", "divu": "div"}


def _int(value: str) -> int | None:
    return None if value in ("", "nan", "NaN", None) else int(float(value))


def build_call(torch, op: str, dims: dict[str, int | None], device: str, seed: int):
    """The operator call of one configuration (NeuSight's semantics), ready to time."""
    g = torch.Generator(device=device).manual_seed(seed)
    B, M, N, K, H = (dims[d] for d in DIMS)
    if op == "bmm":
        x = torch.randn(B, M, N, generator=g, device=device)
        y = torch.randn(B, N, K, generator=g, device=device)
        return lambda: torch.bmm(x, y)
    if op == "linear":
        layer = torch.nn.Linear(N, K, bias=True).to(device)
        x = torch.randn(B, M, N, generator=g, device=device)
        return lambda: layer(x)
    if op in BINARY:
        fn = getattr(torch, BINARY[op])
        x = torch.zeros(B, H, device=device)
        y = torch.zeros(B, H, device=device)
        return lambda: fn(x, y)
    if op in SCALAR:
        fn = getattr(torch, SCALAR[op])
        c = float(1.0 - torch.rand(1, generator=g, device=device).item())  # (0, 1]
        x = torch.zeros(B, H, device=device)
        return lambda: fn(x, c)
    unary = {"relu": torch.nn.ReLU(), "gelu": torch.nn.GELU(), "tanh": torch.tanh,
             "ln": torch.nn.LayerNorm(H) if H else None, "softmax": torch.nn.Softmax(dim=1)}
    if op in unary and unary[op] is not None:
        module = unary[op]
        if isinstance(module, torch.nn.Module):
            module = module.to(device)
        x = torch.zeros(B, H, device=device) if op not in ("ln", "softmax") else \
            torch.randn(B, H, generator=g, device=device)
        return lambda: module(x)
    raise ValueError(f"unknown or incomplete operator configuration: op={op!r} dims={dims}")


def time_call(torch, call, device: str) -> list[float]:
    """25 calls, each between two CUDA events and followed by a synchronize (ms)."""
    times = []
    if device == "cpu":  # for checking the script without a GPU only
        for _ in range(CALLS):
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1e3)
        return times
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(CALLS):
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--board", required=True, help="registry name of the GPU measured")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (script check only)")
    args = parser.parse_args(argv)

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.set_grad_enabled(False)
    device = args.device
    device_name = torch.cuda.get_device_name() if device == "cuda" else "CPU (script check, not a GPU)"
    with open(args.configs, newline="") as f:
        configs = list(csv.DictReader(f))
    done: set[str] = set()
    if args.out.exists():
        with open(args.out, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != list(COLUMNS):
                parser.error(f"{args.out} is not a file this script wrote (columns {reader.fieldnames}); "
                             "choose another --out")
            rows = list(reader)
        others = {(r["board"], r["device_name"]) for r in rows} - {(args.board, device_name)}
        if others:
            parser.error(f"{args.out} holds rows of {sorted(others)}, not of {args.board} ({device_name}); "
                         "measure each GPU into a file of its own")
        done = {r["config_id"] for r in rows}
    new_file = not args.out.exists()
    fixed = {"source": "perfml-measured", "board": args.board, "device_name": device_name,
             "dtype": "float32", "calls": CALLS, "torch_version": torch.__version__,
             "cuda_version": torch.version.cuda or "",
             "cudnn_version": torch.backends.cudnn.version() if device == "cuda" else ""}
    measured = failed = 0
    t_start = time.monotonic()
    with open(args.out, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new_file:
            writer.writeheader()
        try:
            for i, cfg in enumerate(configs):
                cid = cfg["config_id"]
                if cid in done:
                    continue
                dims = {d: _int(cfg.get(d, "")) for d in DIMS}
                try:
                    call = build_call(torch, cfg["op"], dims, device, seed=i)
                    times = sorted(time_call(torch, call, device))
                except Exception as exc:  # out of memory, unsupported shape: say so, go on
                    failed += 1
                    print(f"config {cid} ({cfg['op']} {dims}) failed: {exc!r}"[:300], flush=True)
                    if device == "cuda":
                        torch.cuda.empty_cache()
                    continue
                fastest = times[:FASTEST]
                row = dict(fixed, op=cfg["op"], config_id=cid,
                           time_ms=f"{sum(fastest) / len(fastest):.6g}",
                           time_ms_median=f"{times[len(times) // 2]:.6g}",
                           **{d: ("" if v is None else v) for d, v in dims.items()})
                writer.writerow(row)
                measured += 1
                if measured % 200 == 0:
                    f.flush()
                    print(f"{measured} measured, {failed} failed, {time.monotonic() - t_start:.0f} s",
                          flush=True)
                del call
        except KeyboardInterrupt:
            print("interrupted: rows measured so far are kept; re-run to continue", flush=True)
            return 130
    print(f"done: {measured} measured, {failed} failed, {len(done)} already there, "
          f"{time.monotonic() - t_start:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
