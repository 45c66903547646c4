"""Hong & Kim MWP/CWP analytical model of GPU kernel execution time.

The model of S. Hong and H. Kim (ISCA 2009) estimates the cycles a kernel takes from two
kinds of parallelism in a streaming multiprocessor (SM):

* MWP, *memory warp parallelism*: how many warps can have a memory request in flight at
  once, limited by the memory latency over the departure delay between requests, by the
  share of the peak bandwidth one SM gets, and by the number of active warps N;
* CWP, *computation warp parallelism*: how many warps can compute while one warp waits
  for memory.

Comparing the two picks one of three cases (memory bound, compute bound, not enough
warps), each with its own closed form for the execution cycles.

The equations are those of the slides of seed 002
(``../shared/seeds/002_018e9370bc0d26c6.txt``, lines 189-306), which restate the paper;
the docstring of every function names the slide line and the paper's quantity. CWP and the
synchronization cost are not on the slides and come from the paper (Section 3).
The repository holds the slides only: the paper's values quoted here (GTX 280, 8800 GT)
are to be checked against the paper before they are cited elsewhere.

All equation functions accept floats or NumPy arrays (they broadcast), so one code path
serves a single kernel (:func:`evaluate`) and a table of kernels (:class:`HongKimModel`).

References
----------
.. [1] S. Hong and H. Kim, "An analytical model for a GPU architecture with memory-level
   and thread-level parallelism awareness", Proc. 36th International Symposium on Computer
   Architecture (ISCA), pp. 152-163, 2009.
.. [2] H. Kim, "Performance Analysis Models and Tools" (slides), seed 002 of perfml.

Layout
------
* :mod:`._equations` -- the equations, pure functions with their slide lines;
* :mod:`._hardware` -- :class:`HongKimHardware` and the boards of
  ``perfml/data/hongkim_hardware.toml`` (numbers with sources);
* :mod:`._kernel` -- :class:`HongKimKernel`, the input columns and their domain;
* :mod:`._evaluate` -- :func:`evaluate` and :class:`HongKimResult`;
* :mod:`._estimator` -- :class:`HongKimModel`, the scikit-learn regressor.
"""

from perfml.closed_form.hongkim._equations import (
    CASES,
    active_sms,
    bw_per_warp,
    comp_cycles,
    computation_warp_parallelism,
    cycles_per_instruction,
    departure_delay,
    exec_cycles_app,
    mem_cycles,
    mem_latency,
    mem_latency_uncoal,
    mem_weights,
    memory_warp_parallelism,
    mwp_peak_bw,
    mwp_without_bw,
    repetitions,
    synch_cost,
)
from perfml.closed_form.hongkim._estimator import HongKimModel
from perfml.closed_form.hongkim._evaluate import HongKimResult, evaluate
from perfml.closed_form.hongkim._hardware import HongKimHardware
from perfml.closed_form.hongkim._kernel import (
    FEATURE_COLUMNS,
    OPTIONAL_FEATURE_COLUMNS,
    HongKimKernel,
)

__all__ = [
    "FEATURE_COLUMNS",
    "OPTIONAL_FEATURE_COLUMNS",
    "CASES",
    "HongKimHardware",
    "HongKimKernel",
    "HongKimResult",
    "HongKimModel",
    "evaluate",
    "mem_weights",
    "mem_latency_uncoal",
    "mem_latency",
    "departure_delay",
    "mwp_without_bw",
    "bw_per_warp",
    "mwp_peak_bw",
    "memory_warp_parallelism",
    "comp_cycles",
    "mem_cycles",
    "computation_warp_parallelism",
    "active_sms",
    "repetitions",
    "exec_cycles_app",
    "synch_cost",
    "cycles_per_instruction",
]
