"""The kernel catalog: CUDA sources in ``kernels/`` described by TOML sidecars.

Every microbenchmark or application kernel lives in ``kernels/<family>.cu`` next to a
sidecar ``kernels/<family>.toml`` that declares its parameters (compile-time
constants passed as ``-DNAME=value``), the instruction class or memory level it
exercises, its launch configuration, its arguments and how its output is validated.
The schema is documented in ``kernels/SIDECAR.md``. This module collects a directory
of sidecars; the model lives in :mod:`perfml.kernels.family`, the parsing in
:mod:`perfml.kernels.sidecar`, resolved launches in :mod:`perfml.kernels.launch`; their
names are re-exported here.

The catalog is data, in the spirit of BabelStream/mixbench: the driver (a backend in
:mod:`perfml.measure`) reads a :class:`KernelFamily`, compiles ``source_path`` with
:meth:`KernelFamily.compile_options`, launches ``entry`` with :meth:`KernelFamily.launch`
and builds its arguments from :attr:`KernelFamily.args`.

Examples
--------
>>> from perfml.kernels.catalog import load_catalog
>>> fam = load_catalog()["fp32_simple"]                     # doctest: +SKIP
>>> fam.compile_options({"ITERS": 512})                     # doctest: +SKIP
('-std=c++17', '-DCHAINS=4', '-DITERS=512', '-DOP=2', '-DREPS=64')
"""

from __future__ import annotations


from collections.abc import Mapping
from pathlib import Path

from perfml.errors import KernelSidecarError, UnknownKernelError
from perfml.kernels.family import (
    DTYPES,
    INITS,
    KINDS,
    REGIONS,
    SCHEMA_VERSION,
    VALIDATIONS,
    ArgSpec,
    KernelFamily,
    KernelSpec,
    LaunchSpec,
    Param,
    Sweep,
    Validation,
    Variant,
)
from perfml.kernels.launch import LaunchConfig
from perfml.kernels.sidecar import load_family

#: environment variable the CLI reads for a user's kernels directory (never read here)
KERNELS_DIR_ENV = "PERFML_KERNELS_DIR"

__all__ = [
    "DTYPES",
    "INITS",
    "KERNELS_DIR_ENV",
    "REGIONS",
    "SCHEMA_VERSION",
    "KINDS",
    "VALIDATIONS",
    "KernelSidecarError",
    "UnknownKernelError",
    "Param",
    "Variant",
    "Sweep",
    "ArgSpec",
    "Validation",
    "LaunchSpec",
    "LaunchConfig",
    "KernelSpec",
    "KernelFamily",
    "default_kernels_dir",
    "load_family",
    "load_catalog",
    "get_family",
    "get_kernel",
    "iter_kernels",
]


def default_kernels_dir() -> Path:
    """The kernels shipped in the package (``perfml/kernels/cuda``), through importlib.resources.

    A user's own directory is passed explicitly (``load_catalog(root)``); the CLI turns
    ``--kernels-dir`` or ``$PERFML_KERNELS_DIR`` into that argument, library code never
    reads the environment.
    """
    from importlib import resources

    return Path(str(resources.files("perfml.kernels") / "cuda"))


def load_catalog(root: Path | str | None = None) -> dict[str, KernelFamily]:
    """Every family under ``root`` (default :func:`default_kernels_dir`), sorted by name.

    Parameters
    ----------
    root : path, optional
        A directory of ``<family>.cu`` + ``<family>.toml`` pairs. ``None``: the shipped kernels.

    Raises
    ------
    KernelSidecarError
        ``root`` is not a directory, holds no sidecar, or a sidecar in it is malformed.
    """
    directory = Path(root) if root is not None else default_kernels_dir()
    if not directory.is_dir():
        state = "is a file, not a directory" if directory.exists() else "does not exist"
        raise KernelSidecarError(
            f"kernels directory {directory} {state}; pass --kernels-dir DIR (or set "
            f"{KERNELS_DIR_ENV}) naming a directory of <family>.cu/<family>.toml pairs"
        )
    sidecars = sorted(directory.glob("*.toml"))
    if not sidecars:
        raise KernelSidecarError(
            f"kernels directory {directory} holds no <family>.toml sidecars; pass the directory "
            "of your .cu/.toml pairs (see perfml/kernels/cuda/SIDECAR.md)"
        )
    families = {}
    for sidecar in sidecars:
        fam = load_family(sidecar, root=directory)
        families[fam.name] = fam
    return families


def get_family(name: str, root: Path | None = None) -> KernelFamily:
    """One family by name."""
    catalog = load_catalog(root)
    if name not in catalog:
        raise UnknownKernelError(
            f"no kernel family {name!r}; known: {', '.join(catalog) or '(none)'}"
        )
    return catalog[name]


def iter_kernels(catalog: Mapping[str, KernelFamily]) -> list[KernelSpec]:
    """All kernels (variants expanded) of a catalog, in name order."""
    return [k for fam in catalog.values() for k in fam.kernels()]


def get_kernel(name: str, root: Path | None = None) -> KernelSpec:
    """One kernel by name: ``family`` or ``family.variant``."""
    family, _, _variant = name.partition(".")
    fam = get_family(family, root)
    for k in fam.kernels():
        if k.name == name:
            return k
    raise UnknownKernelError(
        f"no kernel {name!r}; {family} has {', '.join(k.name for k in fam.kernels())}"
    )
