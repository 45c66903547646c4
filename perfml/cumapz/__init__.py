"""CuMAPz: memory performance estimation of CUDA kernels (Kim & Shrivastava 2011).

A kernel is given as a description (:mod:`perfml.cumapz.description`): launch sizes,
global references, shared memory buffers with their fetch/access pairs, loops and
branches. :func:`emulate` generates the addresses of every half-warp and
:func:`analyze` turns them into the factors of equations (1)-(7) and the memory
performance estimate MPE of equation (8). Shipped example descriptions (the motivating
example of the paper and the matrix-transpose sequence of its Sec. 6.1) are listed by
:func:`list_examples`.
"""

from perfml.cumapz.description import (
    FORMAT,
    KernelDescription,
    load_description,
    parse_description,
)
from perfml.cumapz.device import CumapzDevice, device_from_board
from perfml.cumapz.emulator import MemoryTrace, emulate
from perfml.cumapz.examples import example_path, list_examples, resolve_description
from perfml.cumapz.mpe import CumapzResult, analyze, analyze_on_board, mpe

__all__ = [
    "FORMAT",
    "KernelDescription",
    "load_description",
    "parse_description",
    "CumapzDevice",
    "device_from_board",
    "MemoryTrace",
    "emulate",
    "CumapzResult",
    "analyze",
    "analyze_on_board",
    "mpe",
    "example_path",
    "list_examples",
    "resolve_description",
]
