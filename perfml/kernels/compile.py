"""Offline compilation of kernel sources to cubins, with a content-addressed cache.

No GPU is needed: ``nvcc -cubin -arch=sm_XX`` (preferred) or NVRTC through
``cuda-python`` (``pip install cuda-python nvidia-cuda-nvrtc``) produce a cubin that
:mod:`perfml.kernels.sass` disassembles. Cubins are cached under
``<cache_dir>/<sha256 of compiler id, arch, options and source>.cubin``, so a second
``perfml kernels check`` only disassembles.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from perfml.errors import KernelCompileError, ToolchainMissingError
from perfml.kernels.options import check_compile_options

__all__ = [
    "CACHE_DIR_ENV",
    "Cubin",
    "ToolchainMissingError",
    "compile_cubin",
    "compile_many",
    "default_cache_dir",
    "find_nvcc",
    "find_nvdisasm",
    "nvrtc_available",
    "toolchain",
]

#: environment variable that overrides the cubin cache directory
CACHE_DIR_ENV = "PERFML_CACHE_DIR"


@dataclass(frozen=True)
class Cubin:
    """A compiled kernel image on disk."""

    path: Path
    arch: str
    options: tuple[str, ...]
    compiler: str
    cached: bool


def default_cache_dir() -> Path:
    """``~/.cache/perfml/cubin``; the CLI passes ``--cache-dir`` or ``$PERFML_CACHE_DIR`` instead."""
    return Path.home() / ".cache" / "perfml" / "cubin"


def _cuda_homes(cuda_home: str | Path | None = None) -> list[Path]:
    """``cuda_home`` first (the CLI passes ``$CUDA_HOME`` / ``$CUDA_PATH``), then ``/usr/local/cuda*``."""
    out = [Path(cuda_home)] if cuda_home else []
    out += [Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)]
    return out


def _find_tool(name: str, cuda_home: str | Path | None = None) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for home in _cuda_homes(cuda_home):
        candidate = home / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@cache
def find_nvcc(cuda_home: str | Path | None = None) -> str | None:
    """Path of ``nvcc`` (PATH, ``cuda_home/bin``, ``/usr/local/cuda*/bin``), or None.

    ``cuda_home`` is the toolkit directory the caller chose (the CLI passes ``$CUDA_HOME``
    or ``$CUDA_PATH``); library code never reads the environment.
    """
    return _find_tool("nvcc", cuda_home)


@cache
def find_nvdisasm(cuda_home: str | Path | None = None) -> str | None:
    """Path of ``nvdisasm``: PATH, ``cuda_home/bin``, CUDA installs, or the ``nvidia-cuda-nvdisasm`` wheel."""
    found = _find_tool("nvdisasm", cuda_home)
    if found:
        return found
    try:
        import nvidia  # namespace package of the NVIDIA pip wheels
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(root).glob("*/bin/nvdisasm"), reverse=True):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


@cache
def nvrtc_available() -> bool:
    """True if ``cuda-python`` can load an NVRTC library."""
    try:
        from cuda.bindings import nvrtc  # type: ignore[import-not-found]

        err, _major, _minor = nvrtc.nvrtcVersion()
        return int(err) == 0
    except Exception:  # noqa: BLE001 - any failure means "not usable"
        return False


@cache
def _nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


def _nvrtc_version() -> str:
    from cuda.bindings import nvrtc  # type: ignore[import-not-found]

    _err, major, minor = nvrtc.nvrtcVersion()
    return f"nvrtc {major}.{minor}"


def toolchain(cuda_home: str | Path | None = None) -> dict[str, str | None]:
    """What is installed: nvcc path and version, NVRTC, nvdisasm path (``cuda_home``: see :func:`find_nvcc`)."""
    nvcc = find_nvcc(cuda_home)
    return {
        "nvcc": nvcc,
        "nvcc_version": _nvcc_version(nvcc) if nvcc else None,
        "nvrtc": _nvrtc_version() if nvrtc_available() else None,
        "nvdisasm": find_nvdisasm(cuda_home),
    }


def _pick_compiler(compiler: str, cuda_home: str | Path | None = None) -> str:
    if compiler not in ("auto", "nvcc", "nvrtc"):
        raise KernelCompileError(f"compiler must be auto, nvcc or nvrtc, found {compiler!r}")
    if compiler in ("auto", "nvcc") and find_nvcc(cuda_home):
        return "nvcc"
    if compiler in ("auto", "nvrtc") and nvrtc_available():
        return "nvrtc"
    raise ToolchainMissingError(
        "no CUDA compiler found: install the CUDA toolkit (nvcc on PATH, in /usr/local/cuda, or CUDA_HOME set for perfml) or "
        "`pip install cuda-python nvidia-cuda-nvrtc`"
        + (f" (requested {compiler})" if compiler != "auto" else "")
    )


def _nvcc_compile(src: Path, out: Path, arch: str, options: Sequence[str], cuda_home=None) -> None:
    cmd = [find_nvcc(cuda_home) or "nvcc", "-cubin", f"-arch={arch}", "-o", str(out), *options, str(src)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise KernelCompileError(f"nvcc could not run ({exc}): {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        raise KernelCompileError(
            f"nvcc failed for {src.name} ({arch}, {' '.join(options)}):\n{proc.stderr.strip()}"
        )


def _nvrtc_compile(source: str, name: str, arch: str, options: Sequence[str]) -> bytes:
    from cuda.bindings import nvrtc  # type: ignore[import-not-found]

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if int(err) != 0:
        raise KernelCompileError(f"nvrtcCreateProgram failed for {name}: {err}")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in options)]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(err) != 0:
            _e, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise KernelCompileError(
                f"NVRTC failed for {name} ({arch}, {' '.join(options)}):\n"
                f"{log.decode(errors='replace').strip()}"
            )
        _e, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        if int(err) != 0:
            raise KernelCompileError(f"nvrtcGetCUBIN failed for {name}: {err}")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile_cubin(
    source: str | Path,
    arch: str,
    options: Sequence[str] = (),
    *,
    name: str = "kernel.cu",
    cache_dir: Path | None = None,
    compiler: str = "auto",
    cuda_home: str | Path | None = None,
) -> Cubin:
    """Compile CUDA source (text or a path) for ``arch`` into a cached cubin.

    Parameters
    ----------
    source : str or Path
        The CUDA text, or a path to a ``.cu`` file.
    arch : str
        ``sm_75``, ``sm_80``, ``sm_90``, ...
    options : sequence of str
        Compiler options, e.g. :meth:`KernelFamily.compile_options`.
    cache_dir : Path, optional
        Where cubins are kept (default :func:`default_cache_dir`).
    compiler : {"auto", "nvcc", "nvrtc"}
        ``auto`` prefers nvcc and falls back to NVRTC.
    cuda_home : path-like, optional
        CUDA toolkit directory searched for ``nvcc`` after PATH (the CLI passes
        ``$CUDA_HOME`` / ``$CUDA_PATH``); ``/usr/local/cuda*`` is searched in any case.

    Raises
    ------
    KernelOptionError
        If an option is not on the allow-list of :mod:`perfml.kernels.options`
        (checked before any compiler runs; the command is an argument list, no shell).
    ToolchainMissingError
        If no compiler is installed.
    KernelCompileError
        If compilation fails; the message carries the compiler log.
    """
    options = check_compile_options(
        options, f"compiling {source.name if isinstance(source, Path) else name}"
    )  # before any compiler runs
    if isinstance(source, Path):
        name = source.name
        text = source.read_text(encoding="utf-8")
    else:
        text = source
    which = _pick_compiler(compiler, cuda_home)
    version = _nvcc_version(find_nvcc(cuda_home) or "nvcc") if which == "nvcc" else _nvrtc_version()
    key = hashlib.sha256(
        "\0".join([which, version, arch, *options, text]).encode()
    ).hexdigest()
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{key}.cubin"
    if out.is_file() and out.stat().st_size > 0:
        return Cubin(out, arch, options, which, True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        tmp_out = Path(tmp) / "k.cubin"
        if which == "nvcc":
            src = Path(tmp) / name
            src.write_text(text, encoding="utf-8")
            _nvcc_compile(src, tmp_out, arch, options, cuda_home)
        else:
            tmp_out.write_bytes(_nvrtc_compile(text, name, arch, options))
        os.replace(tmp_out, out)  # atomic: concurrent checks never see half a cubin
    return Cubin(out, arch, options, which, False)


def compile_many(
    jobs: Sequence[tuple[str | Path, str, Sequence[str]]],
    *,
    cache_dir: Path | None = None,
    compiler: str = "auto",
    workers: int | None = None,
    cuda_home: str | Path | None = None,
) -> list[Cubin | KernelCompileError]:
    """Compile ``(source, arch, options)`` jobs in parallel (threads running nvcc).

    Returns one :class:`Cubin` or the :class:`KernelCompileError` per job, in order, so
    one broken kernel does not hide the others. A missing toolchain is raised at once.
    """
    _pick_compiler(compiler, cuda_home)
    if workers is None:
        workers = max(1, min(4, (os.cpu_count() or 2)))

    def one(job: tuple[str | Path, str, Sequence[str]]) -> Cubin | KernelCompileError:
        src, arch, opts = job
        try:
            return compile_cubin(src, arch, opts, cache_dir=cache_dir, compiler=compiler, cuda_home=cuda_home)
        except ToolchainMissingError:
            raise
        except KernelCompileError as exc:
            return exc

    if workers == 1 or len(jobs) <= 1:
        return [one(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))
