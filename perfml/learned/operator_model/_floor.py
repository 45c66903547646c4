"""The launch floor of an operator call: what a call with (almost) no work takes.

NeuSight's latencies are CUDA events around one PyTorch call (shared/datasets README,
NeuSight section, "Measurement"): the host's dispatch, the kernel launch(es) and the event
pair are in every time, so the smallest calls take 0.024-0.06 ms however little they move.
The roofline bound of a call of a few hundred elements is nanoseconds. A residual over the
bound alone, ``log(T / T_bound)``, must then carry a factor of 10^3-10^5 that depends on the
call's size, and a tree cannot extrapolate it past the sizes it was trained on: before
this, ``add`` of an 8 x 10 tensor was predicted at 3e-5 to 2e-4 ms on the five boards.

So the operator model's base time is latency plus work at the roof,

    T_base = T_floor(op) + T_bound,

the form of Hockney's model of a transfer, ``t = t_0 + n / r_inf`` [1]_ (start-up time plus
the work at the asymptotic rate), and the learned residual is ``log(T / T_base)``: close to
0 for a call at the floor as for one at the roof, so what lies beyond the training sizes is
carried by the physics, not by a tree's last leaf.

Estimation (:class:`LaunchFloor`, training rows only): a call whose spec roofline bound is
below :data:`WORK_FREE_MS` (1 us, under a 20th of the smallest floor in the corpus) is
*work-free*; the floor of an operator on a board is the median time of its work-free calls
there (at least :data:`MIN_CALLS` of them), and the operator's floor is the median over the
training boards that have one (at least :data:`MIN_BOARDS`). An operator without one (no
call small enough, e.g. conv, whose cuDNN calls cost 0.1-0.3 ms however small) takes the
smallest floor of the others: one kernel launch, the least any call costs. The floor is a
property of the host and driver as much as of the board (the P100 machine's ``add`` floor is
0.044 ms against 0.026 ms on the P4, T4 and A100), so a board never seen gets the training
boards' median; its own floor enters only at the calibrated tier, through its ``add`` calls.

Measured under leave-one-board-out over the five NeuSight GPUs (spec-only operator model,
every row; ``python experiments/launch_floor.py``, ``experiments/results/launch_floor.txt``):
MAPE 25.01 % -> 21.78 % (EW 21.37 -> 15.33, Softmax 31.38 -> 19.58, LN 17.39 -> 15.30, BMM
26.61 -> 25.53), the P4 26.03 -> 15.93 %, the T4 25.02 -> 17.10 %, the A100 23.32 -> 22.60 %;
the V100, whose floors lie above the median, 26.93 -> 29.67 %. The 90 % interval is narrower
(mean relative width 1.12 -> 1.03) and covers 88.3 % of held-out-board rows (89.2 % before),
but not the P100's small element-wise and softmax calls: that host's floors are 1.7x the
other four's, which no interval calibrated on the other four foresees (P100 coverage EW
86.6 -> 42.1 %, Softmax 83.0 -> 15.6 %; every other board 96-100 % on both). A call below
every training size, which the model of before put at 1e-5 to 4e-4 ms (``add`` of 8 x 10 floats:
0.00003 ms on the A100, whose smallest ``add`` took 0.026 ms), is now predicted near its
board's floor (0.032 ms).

References
----------
.. [1] R. W. Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
   Parallel Computing 20(3), 389-398, 1994 (``t = t_0 + n / r_inf``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perfml.errors import ModelFormatError

__all__ = ["MIN_BOARDS", "MIN_CALLS", "WORK_FREE_MS", "LaunchFloor"]

#: a call whose spec roofline bound is below this (ms) is work-free: its time is the floor
WORK_FREE_MS = 1e-3
#: work-free calls an operator needs on a board for that board's floor
MIN_CALLS = 5
#: boards with a floor an operator needs for its own floor (else the smallest floor)
MIN_BOARDS = 2


class LaunchFloor:
    """Per-operator launch floor (ms) learned from training rows (module docstring).

    Attributes (after :meth:`fit`)
    ------------------------------
    floors_ms_ : dict
        Operator -> floor in ms (median over the training boards of the median time of
        the operator's work-free calls on each).
    fallback_ms_ : float or None
        The smallest of ``floors_ms_``, for an operator without a floor of its own; None
        when no operator has one (then the floor is 0 and the base time is the bound).
    """

    def fit(self, ops, boards, time_ms, bound_ms) -> "LaunchFloor":
        frame = pd.DataFrame({
            "op": pd.Series(ops).astype(str).to_numpy(),
            "board": pd.Series(boards).astype(str).to_numpy(),
            "t": np.asarray(time_ms, dtype=float),
            "bound": np.asarray(bound_ms, dtype=float),
        })
        work_free = frame[frame["bound"] < WORK_FREE_MS]
        per_board = work_free.groupby(["op", "board"])["t"].agg(["size", "median"])
        per_board = per_board[per_board["size"] >= MIN_CALLS]["median"]
        per_op = per_board.groupby(level="op").agg(["median", "size"])
        per_op = per_op[per_op["size"] >= MIN_BOARDS]["median"]
        self.floors_ms_ = {str(op): float(v) for op, v in per_op.items()}
        self.fallback_ms_ = min(self.floors_ms_.values()) if self.floors_ms_ else None
        return self

    def floor_ms(self, ops) -> np.ndarray:
        """The floor (ms) of every row's operator; 0 where the model has none at all."""
        ops = pd.Series(ops).astype(str)
        codes, names = pd.factorize(ops)
        fallback = 0.0 if self.fallback_ms_ is None else self.fallback_ms_
        per_name = np.array([self.floors_ms_.get(name, fallback) for name in names] + [fallback], dtype=float)
        return per_name[codes]

    # -- file form (the model manifest's ``launch_floor`` entry) ------------------------
    def to_dict(self) -> dict:
        return {"floors_ms": dict(sorted(self.floors_ms_.items())), "fallback_ms": self.fallback_ms_,
                "work_free_ms": WORK_FREE_MS, "min_calls": MIN_CALLS, "min_boards": MIN_BOARDS}

    @classmethod
    def from_dict(cls, entry, where: str) -> "LaunchFloor":
        """Rebuild from :meth:`to_dict`'s entry; a ModelFormatError naming ``where`` if it is malformed."""

        def bad(why: str) -> ModelFormatError:
            return ModelFormatError(f"{where}: its 'launch_floor' entry {why}; retrain the model with `perfml train`")

        def positive(value) -> bool:
            return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and value > 0)

        if not isinstance(entry, dict) or not isinstance(entry.get("floors_ms"), dict):
            raise bad("must be an object with a 'floors_ms' object")
        floors = entry["floors_ms"]
        if not all(isinstance(op, str) and op and positive(v) for op, v in floors.items()):
            raise bad("must map operator names to positive finite milliseconds")
        fallback = entry.get("fallback_ms")
        if fallback is None and floors or fallback is not None and not positive(fallback):
            raise bad("must have a positive 'fallback_ms' (the smallest floor), or none with no floors")
        floor = cls()
        floor.floors_ms_ = {op: float(v) for op, v in floors.items()}
        floor.fallback_ms_ = None if fallback is None else float(fallback)
        return floor
