"""Purity: the share of the timed region's SASS instructions that belong to the target class.

Seed 001 (Section 3) calls it accuracy: "the number of useful ("pure") instructions for a
given component microbenchmarking over the total number of the microbenchmark
instructions", 99.99% for its suite. Here it is measured statically:

* compile the kernel offline for an architecture (:mod:`perfml.kernels.compile`);
* disassemble it (:mod:`perfml.kernels.sass`);
* the **timed region** is the body of the innermost loop with the most instructions, from
  the backward branch's target label through the branch itself (so loop counter, compare
  and branch count against the purity); a kernel without a loop uses its whole body
  (minus the trailing self-branch and NOP padding). A sidecar may choose
  ``purity_region = "target_loop"`` (the innermost loop holding the most target-class
  instructions) or ``"kernel"``;
* purity = target-class instructions in the region / all instructions in the region.

Static kernels must reach :data:`STATIC_THRESHOLD` on every architecture they apply to.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from perfml.errors import KernelCompileError
from perfml.kernels.family import KernelFamily, KernelSpec
from perfml.kernels.compile import Cubin, ToolchainMissingError, compile_many, find_nvdisasm
from perfml.kernels.sass import (
    SassFunction,
    disassemble,
    find_loops,
    innermost_loops,
    opcode_class,
)

__all__ = [
    "DEFAULT_ARCHS",
    "STATIC_THRESHOLD",
    "PurityResult",
    "check_kernels",
    "region_purity",
]

#: minimum purity of a static kernel
STATIC_THRESHOLD = 0.99
#: architectures checked by default
DEFAULT_ARCHS = ("sm_75", "sm_80", "sm_90")


@dataclass(frozen=True)
class PurityResult:
    """Purity of one kernel on one architecture."""

    kernel: str
    family: str
    kind: str
    arch: str
    target: str
    purity: float | None
    n_target: int
    n_instructions: int
    region: str  # "loop 0x00c0-0x1f30" or "kernel"
    kernel_purity: float | None  # same ratio over the whole kernel, for context
    passed: bool
    histogram: Mapping[str, int] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict:
        out = asdict(self)
        out["histogram"] = dict(self.histogram)
        return out


def region_purity(
    func: SassFunction, target: str, arch: str, region: str = "loop"
) -> tuple[float, int, int, str, float, dict[str, int]]:
    """Purity of ``target`` in the timed region of ``func``.

    ``region`` is ``"loop"`` (the innermost loop with the most instructions),
    ``"target_loop"`` (the innermost loop with the most target-class instructions) or
    ``"kernel"`` (the whole kernel); a kernel without a loop always uses ``"kernel"``.
    Returns ``(purity, n_target, n_region, region label, kernel_purity, histogram)``.
    """
    patterns = opcode_class(target, arch)

    def is_target(ins) -> bool:
        return any(p.matches(ins) for p in patterns)

    loops = innermost_loops(find_loops(func)) if region != "kernel" else []
    if loops:
        if region == "target_loop":
            def key(lp):
                return (sum(1 for i in lp.instructions if is_target(i)), len(lp.instructions),
                        -lp.start)
        else:
            def key(lp):
                return (len(lp.instructions), -lp.start)
        loop = max(loops, key=key)
        region = loop.instructions
        label = f"loop 0x{loop.start:04x}-0x{loop.end:04x}"
    else:
        region = func.body()
        label = "kernel"
    n_target = sum(1 for i in region if is_target(i))
    body = func.body()
    kernel_purity = sum(1 for i in body if is_target(i)) / len(body) if body else 0.0
    hist = dict(sorted(func.histogram(region).items(), key=lambda kv: (-kv[1], kv[0])))
    return (n_target / len(region) if region else 0.0, n_target, len(region), label,
            kernel_purity, hist)


def _passes(kind: str, purity: float | None) -> bool:
    if purity is None:
        return False
    return purity >= STATIC_THRESHOLD if kind == "static" else True


def check_kernels(
    kernels: Iterable[KernelSpec],
    archs: Sequence[str] = DEFAULT_ARCHS,
    *,
    cache_dir: Path | None = None,
    compiler: str = "auto",
    workers: int | None = None,
    cuda_home: Path | str | None = None,
) -> list[PurityResult]:
    """Compile, disassemble and measure every kernel on every architecture it applies to.

    ``cuda_home`` is the CUDA toolkit directory searched for nvcc and nvdisasm after
    PATH (the CLI passes ``$CUDA_HOME`` / ``$CUDA_PATH``). A kernel that fails to
    compile yields a result with ``purity=None``, ``passed=False`` and the compiler
    message in ``error``.

    Raises
    ------
    ToolchainMissingError
        If no compiler or no nvdisasm is installed.
    """
    todo: list[tuple[KernelSpec, str]] = []
    for k in kernels:
        for arch in archs:
            if arch in k.family.archs:
                todo.append((k, arch))
    jobs = [(k.family.source_path, arch, k.compile_options()) for k, arch in todo]
    cubins = compile_many(jobs, cache_dir=cache_dir, compiler=compiler, workers=workers, cuda_home=cuda_home)
    nvdisasm = find_nvdisasm(cuda_home)

    def measure(item: tuple[tuple[KernelSpec, str], Cubin | KernelCompileError]) -> PurityResult:
        (k, arch), cubin = item
        fam: KernelFamily = k.family
        base = dict(kernel=k.name, family=fam.name, kind=fam.kind, arch=arch, target=k.target)
        try:
            if isinstance(cubin, KernelCompileError):
                raise cubin
            funcs = disassemble(cubin.path, nvdisasm=nvdisasm)
            if fam.entry not in funcs:
                raise KernelCompileError(
                    f"{fam.entry} not found in the SASS of {fam.source} ({arch}); "
                    f"functions: {', '.join(funcs) or '(none)'}"
                )
            purity, n_t, n, region, kpur, hist = region_purity(
                funcs[fam.entry], k.target, arch, fam.purity_region
            )
        except ToolchainMissingError:
            raise
        except KernelCompileError as exc:
            return PurityResult(**base, purity=None, n_target=0, n_instructions=0, region="",
                                kernel_purity=None, passed=False, error=str(exc))
        return PurityResult(**base, purity=purity, n_target=n_t, n_instructions=n,
                            region=region, kernel_purity=kpur,
                            passed=_passes(fam.kind, purity), histogram=hist)

    n_workers = workers or max(1, min(4, os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        results = list(pool.map(measure, zip(todo, cubins)))
    return results
