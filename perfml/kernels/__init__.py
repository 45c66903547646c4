"""Kernel catalog, offline compilation, SASS disassembly and purity checks.

``cuda/<family>.cu`` + ``cuda/<family>.toml`` (see ``cuda/SIDECAR.md``; shipped as
package data) are the data. This package models a sidecar (:mod:`perfml.kernels.family`,
:mod:`perfml.kernels.launch`), reads and checks one (:mod:`perfml.kernels.sidecar`, with
the compiler-option allow-list of :mod:`perfml.kernels.options`), collects a directory
of them (:mod:`perfml.kernels.catalog`), compiles them without a GPU
(:mod:`perfml.kernels.compile`), parses the SASS (:mod:`perfml.kernels.sass`) and
measures the share of target instructions in the timed region (:mod:`perfml.kernels.purity`).
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
