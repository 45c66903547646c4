"""Kernel catalog, offline compilation, SASS disassembly and purity checks.

``kernels/<family>.cu`` + ``kernels/<family>.toml`` (see ``kernels/SIDECAR.md``) are the
data; this package reads them (:mod:`perfml.kernels.catalog`), compiles them without a GPU
(:mod:`perfml.kernels.compile`), parses the SASS (:mod:`perfml.kernels.sass`) and measures the
share of target instructions in the timed region (:mod:`perfml.kernels.purity`).
"""

from perfml.kernels.catalog import (
    KernelFamily,
    KernelSidecarError,
    KernelSpec,
    LaunchConfig,
    UnknownKernelError,
    get_family,
    get_kernel,
    iter_kernels,
    load_catalog,
)

__all__ = [
    "KernelFamily",
    "KernelSidecarError",
    "KernelSpec",
    "LaunchConfig",
    "UnknownKernelError",
    "get_family",
    "get_kernel",
    "iter_kernels",
    "load_catalog",
]
