"""The compiler options perfml passes to nvcc or NVRTC: an allow-list, nothing else.

A sidecar's ``options`` come from a file, and a file may come from anyone; an option
such as ``-ccbin=/tmp/script`` or ``--compiler-bindir`` makes nvcc run a program of the
file's choosing. So every option is matched, whole, against the flags a microbenchmark
needs, and anything else is refused with :class:`~perfml.errors.KernelOptionError`.

What a sidecar may list (:data:`SIDECAR_OPTIONS`):

* optimisation: ``-O0`` .. ``-O3``, ``--use_fast_math``, ``--extra-device-vectorization``,
  ``--restrict``;
* floating point: ``--ftz=``, ``--prec-div=``, ``--prec-sqrt=``, ``--fmad=`` with
  ``true`` or ``false``;
* diagnostics: ``-lineinfo`` / ``--generate-line-info``, ``-Xptxas=-v`` /
  ``--ptxas-options=-v``, ``--resource-usage``;
* ``-std=c++NN`` (11, 14, 17, 20), ``--maxrregcount=N`` (1 to 255 registers).

Each long flag may also be written with one dash, as nvcc accepts. What perfml adds
itself (:data:`GENERATED_OPTIONS`) is also checked before a compiler runs:
``-DNAME=VALUE`` with an upper-case C identifier and an integer value (from the
sidecar's ``[params]``), and the target architecture (``-arch=sm_NN``,
``--gpu-architecture=sm_NN|compute_NN``, ``-code=sm_NN``). A sidecar may not set
those two itself: parameters go in ``[params]`` and architectures in ``archs``.
Options are one token each and reach the compiler as an argument list, never through
a shell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from perfml.errors import KernelOptionError

__all__ = [
    "GENERATED_OPTIONS",
    "SIDECAR_OPTIONS",
    "check_compile_options",
    "check_sidecar_options",
]

_BOOL = r"(?:true|false)"

#: (pattern, how it is written in messages) of the flags a sidecar may list
SIDECAR_OPTIONS: tuple[tuple[str, str], ...] = (
    (r"-O[0-3]", "-O0..-O3"),
    (r"--?use_fast_math", "--use_fast_math"),
    (r"--?extra-device-vectorization", "--extra-device-vectorization"),
    (r"--?restrict", "--restrict"),
    (rf"--?ftz={_BOOL}", "--ftz=true|false"),
    (rf"--?prec-div={_BOOL}", "--prec-div=true|false"),
    (rf"--?prec-sqrt={_BOOL}", "--prec-sqrt=true|false"),
    (rf"--?fmad={_BOOL}", "--fmad=true|false"),
    (r"-lineinfo|--generate-line-info", "-lineinfo"),
    (r"-Xptxas=-v|--ptxas-options=-v", "-Xptxas=-v"),
    (r"--?resource-usage", "--resource-usage"),
    (r"--?std=c\+\+(?:11|14|17|20)", "-std=c++11|14|17|20"),
    (r"--?maxrregcount=(?:[1-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])",
     "--maxrregcount=1..255"),
)

#: (pattern, how it is written in messages) of the flags perfml adds itself
GENERATED_OPTIONS: tuple[tuple[str, str], ...] = (
    (r"-D[A-Z][A-Z0-9_]{0,63}=-?[0-9]{1,20}", "-DNAME=INTEGER"),
    (r"-arch=(?:sm|compute)_[0-9]{2,3}[a-z]?", "-arch=sm_NN"),
    (r"--gpu-architecture=(?:sm|compute)_[0-9]{2,3}[a-z]?", "--gpu-architecture=sm_NN"),
    (r"-code=sm_[0-9]{2,3}[a-z]?", "-code=sm_NN"),
)

_SIDECAR_RE = re.compile("|".join(f"(?:{p})" for p, _ in SIDECAR_OPTIONS))
_ALL_RE = re.compile("|".join(f"(?:{p})" for p, _ in SIDECAR_OPTIONS + GENERATED_OPTIONS))


def _allowed(table: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(shown for _, shown in table)


def check_sidecar_options(options: Iterable[object], where: str) -> tuple[str, ...]:
    """The sidecar's ``options`` if every one is on :data:`SIDECAR_OPTIONS`.

    Parameters
    ----------
    options : iterable
        The ``options`` list of a sidecar.
    where : str
        The sidecar file, for the message.

    Raises
    ------
    KernelOptionError
        Naming the sidecar, the refused option and the allowed set.
    """
    out = []
    for opt in options:
        if not isinstance(opt, str) or not _SIDECAR_RE.fullmatch(opt):
            hint = ""
            if isinstance(opt, str) and opt.startswith("-D"):
                hint = "; declare compile-time constants under [params] instead"
            elif isinstance(opt, str) and ("arch" in opt or opt.startswith("-code")):
                hint = "; list architectures under `archs` instead"
            raise KernelOptionError(
                f"{where}: options: {opt!r} is not an allowed compiler option{hint}; "
                f"allowed: {_allowed(SIDECAR_OPTIONS)}"
            )
        out.append(opt)
    return tuple(out)


def check_compile_options(options: Iterable[object], where: str = "compile options") -> tuple[str, ...]:
    """``options`` if every one is a sidecar flag or a perfml-generated ``-D``/architecture flag.

    Called right before nvcc or NVRTC runs, so no path into the compiler skips the
    allow-list.

    Raises
    ------
    KernelOptionError
        Naming the refused option and the allowed set.
    """
    out = []
    for opt in options:
        if not isinstance(opt, str) or not _ALL_RE.fullmatch(opt):
            raise KernelOptionError(
                f"{where}: {opt!r} is not an allowed compiler option; allowed: "
                f"{_allowed(SIDECAR_OPTIONS + GENERATED_OPTIONS)}"
            )
        out.append(opt)
    return tuple(out)
