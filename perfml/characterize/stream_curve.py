"""The streaming-time curve of a board: how long moving N bytes takes, measured at every size.

One achieved DRAM bandwidth (:mod:`perfml.characterize.calibrate`) describes only the
large calls. Below them the time a streaming kernel takes is set by other parts of the
memory system: the L2 (a working set that fits is served faster than DRAM), the number of
bytes in flight needed to cover the latency (Little's law: a small call cannot keep enough
requests outstanding, so its achieved bandwidth is below the peak), and at the bottom the
launch floor. The curve keeps all of that as measured: knots ``(bytes, seconds)`` of one
streaming kernel (element-wise ``add``: 3 tensors of B*H float32; ``vectorAdd``: its
``dram_bytes_total``), the median time per distinct byte count, made non-decreasing in
bytes (moving more bytes cannot take less time; :meth:`StreamCurve.from_samples`).

Used as the memory roof of a roofline (Williams et al. [1]_) whose roof is the board's
*achieved* time per byte count instead of a datasheet bandwidth: a call that must move
``b`` compulsory bytes takes at least about as long as the streaming kernel took to move
``b`` bytes on the same board, ``T_memory(b) = curve(b)``.

Between knots the time is interpolated linearly in ``log bytes -> log seconds`` (a
power law per segment). Outside the knots:

* below the smallest: the smallest call's time (the floor; a call cannot be faster than
  the launch and the smallest transfer measured),
* above the largest: the time grows in proportion to the bytes at the largest call's
  achieved bandwidth (the DRAM-bound regime, ``T = b / (b_max / T(b_max))``), when that call
  is DRAM-bound: it moves :data:`~perfml.characterize.limits.L2_FACTOR` x the board's L2 or
  more. A smaller largest call is bound in part by the launch, the latency or the L2, and its
  ``b / T`` is no DRAM rate: given the board's L2 and DRAM bandwidth, the time is then the
  largest call's plus the further bytes at the rate of its bytes above the launch floor
  (the smallest call's time), at most the board's DRAM bandwidth:
  ``T = T(b_max) + (b - b_max) / min(b_max / (T(b_max) - T(b_min)), bandwidth)``; at the
  bandwidth where the floor is more than half the largest call's time
  (:data:`FLOOR_DOMINATED`: the difference is then mostly noise). (Charged the ``b / T`` of a
  curve of small ``add`` calls, all at the launch floor, a 1.2 GB ``mul`` on an H100 took 14
  ms, 86 GB/s, 35x its measured 0.40 ms.)

File form (the optional ``stream_curve`` field of a characterization, see
:mod:`perfml.characterize.characterization`)::

    {"kernel": "add", "tier": "calibrated", "bytes": [...], "seconds": [...],
     "source": "...", "statistic": "..."}

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfml.errors import InvalidValueError, ResultSchemaError

__all__ = ["MIN_KNOTS", "STREAM_CURVE_TIERS", "StreamCurve"]

#: fewest distinct byte counts a curve is built from
MIN_KNOTS = 3
#: tiers a curve can come from (the tiers of :mod:`perfml.characterize.values` that observe the board)
STREAM_CURVE_TIERS = ("measured", "calibrated")


#: a largest call taking less than this times the smallest one's is mostly launch floor: its rate
#: above the floor is not measured (a curve of calls at 21-23 us gave 1.9 TB/s on an H100 for it)
FLOOR_DOMINATED = 2.0

#: significant digits kept of a pooled knot's time (far below any measurement's precision)
POOLED_DIGITS = 12


def _round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """``values`` (finite, positive) rounded to ``digits`` significant decimal digits."""
    return np.array([float(f"{v:.{digits}g}") for v in np.asarray(values, dtype=float)])


@dataclass(frozen=True)
class StreamCurve:
    """Time (s) of one streaming kernel against the bytes it moved, on one board (module docstring).

    Parameters
    ----------
    kernel : str
        The streaming kernel the knots were measured with (``add``, ``vectorAdd``).
    bytes : tuple of float
        Strictly increasing, positive byte counts.
    seconds : tuple of float
        Positive time at each byte count.
    tier : {"measured", "calibrated"}
    source : str
        Where the knots come from (file, rows, statistic).
    statistic : str
        How each knot was formed (e.g. the median time per distinct byte count).

    Raises
    ------
    InvalidValueError
        Fewer than :data:`MIN_KNOTS` knots, lengths differ, bytes not strictly increasing,
        a value not finite and positive, or an unknown tier.
    """

    kernel: str
    bytes: tuple[float, ...]
    seconds: tuple[float, ...]
    tier: str = "calibrated"
    source: str = ""
    statistic: str = ""

    def __post_init__(self) -> None:
        b = tuple(float(v) for v in self.bytes)
        s = tuple(float(v) for v in self.seconds)
        if len(b) != len(s):
            raise InvalidValueError(
                f"stream curve: {len(b)} byte counts but {len(s)} times; give one time per byte count"
            )
        if len(b) < MIN_KNOTS:
            raise InvalidValueError(
                f"stream curve: {len(b)} knot(s), need at least {MIN_KNOTS} distinct byte counts "
                "(measure the streaming kernel at more sizes)"
            )
        bad = [v for v in (*b, *s) if not (math.isfinite(v) and v > 0)]
        if bad:
            raise InvalidValueError(
                f"stream curve: byte counts and times must be finite and positive, found {bad[0]!r}"
            )
        if any(later <= earlier for earlier, later in zip(b, b[1:])):
            raise InvalidValueError("stream curve: byte counts must be strictly increasing (one knot per size)")
        if self.tier not in STREAM_CURVE_TIERS:
            raise InvalidValueError(
                f"stream curve: tier {self.tier!r} is not one of {', '.join(STREAM_CURVE_TIERS)}"
            )
        object.__setattr__(self, "bytes", b)
        object.__setattr__(self, "seconds", s)

    @classmethod
    def from_samples(cls, nbytes, seconds, **kwargs: Any) -> StreamCurve:
        """A curve from raw samples: the median time of each distinct byte count, made non-decreasing.

        Moving more bytes with the same kernel cannot take less time, so a knot below a
        smaller call's knot is measurement noise (or a shape that happened to run faster),
        not a property of the board. The medians are therefore fitted by weighted isotonic
        regression in ``log bytes -> log seconds`` (pool adjacent violators, scikit-learn's
        ``IsotonicRegression``; weight = samples at that size): runs of violating knots
        take their weighted geometric mean, every other knot is kept as measured.
        """
        nbytes = np.asarray(nbytes, dtype=float)
        seconds = np.asarray(seconds, dtype=float)
        keep = np.isfinite(nbytes) & np.isfinite(seconds) & (nbytes > 0) & (seconds > 0)
        nbytes, seconds = nbytes[keep], seconds[keep]
        import pandas as pd
        from sklearn.isotonic import IsotonicRegression

        groups = pd.Series(seconds).groupby(nbytes, sort=True)  # one pass, not a mask per knot
        medians, counts = groups.median(), groups.size()
        knots, measured = medians.index.to_numpy(dtype=float), medians.to_numpy(dtype=float)
        fitted = measured
        if len(knots) > 1:
            log_fit = IsotonicRegression(increasing=True).fit_transform(
                np.log(knots), np.log(measured), sample_weight=counts.to_numpy(dtype=float))
            pooled = ~np.isclose(log_fit, np.log(measured), rtol=0.0, atol=1e-12)
            # untouched knots keep their exact median; a pooled one is a weighted mean whose
            # last bits depend on the numpy build's summation order, so it is rounded to
            # POOLED_DIGITS significant digits, and those bits no longer reach the curve nor
            # the models trained on features of it (1 ulp moved the calibrated operator
            # model's trees between installs)
            fitted = np.where(pooled, _round_significant(np.exp(log_fit), POOLED_DIGITS), measured)
        return cls(bytes=tuple(knots), seconds=tuple(float(v) for v in fitted), **kwargs)

    def time_s(self, nbytes, *, l2_bytes: float | None = None, bandwidth: float | None = None) -> np.ndarray:
        """Time (s) to stream ``nbytes`` (array-like) on the board; NaN where ``nbytes`` is not positive.

        ``l2_bytes`` and ``bandwidth`` (B/s): the board's L2 size and DRAM bandwidth (its
        achieved one where known, else the datasheet's), for the sizes above a largest knot that
        is not DRAM-bound (module docstring); without them every curve is taken as reaching DRAM.
        """
        from perfml.characterize.limits import L2_FACTOR

        x = np.asarray(nbytes, dtype=float)
        lx = np.log(np.where(x > 0, x, 1.0))
        kb, ks = np.log(self.bytes), np.log(self.seconds)
        inside = np.interp(lx, kb, ks)  # clamped to the end knots' times outside
        reaches_dram = not (l2_bytes is not None and bandwidth is not None and math.isfinite(bandwidth)
                            and bandwidth > 0 and self.bytes[-1] < L2_FACTOR * float(l2_bytes))
        if reaches_dram:
            above = ks[-1] + (lx - kb[-1])  # DRAM-bound beyond the largest call: time proportional to bytes
        else:  # the largest call's time, then the further bytes at its rate above the floor, at most the bandwidth
            above_floor = self.seconds[-1] - self.seconds[0]
            measured = self.seconds[-1] >= FLOOR_DOMINATED * self.seconds[0]
            rate = min(self.bytes[-1] / above_floor if measured else math.inf, float(bandwidth))
            above = np.log(self.seconds[-1] + np.clip(np.where(x > 0, x, 1.0) - self.bytes[-1], 0.0, None) / rate)
        out = np.exp(np.where(lx > kb[-1], above, inside))
        return np.where(np.isfinite(x) & (x > 0), out, np.nan)

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "tier": self.tier, "bytes": list(self.bytes), "seconds": list(self.seconds),
                "source": self.source, "statistic": self.statistic}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamCurve:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ResultSchemaError
            Not an object, or a field missing or of the wrong type.
        InvalidValueError
            Knots out of range (see the class).
        """
        if not isinstance(data, Mapping):
            raise ResultSchemaError(f"characterization field 'stream_curve' must be a JSON object, found "
                                    f"{type(data).__name__}; rebuild the file with `perfml characterize`")
        for key, kind in (("kernel", str), ("bytes", list), ("seconds", list)):
            if not isinstance(data.get(key), kind):
                raise ResultSchemaError(
                    f"characterization field 'stream_curve.{key}' must be a JSON "
                    f"{'string' if kind is str else 'array'}, found {type(data.get(key)).__name__}; rebuild the "
                    "file with `perfml characterize --from-runtimes`"
                )
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (*data["bytes"], *data["seconds"])):
            raise ResultSchemaError("characterization field 'stream_curve': bytes and seconds must be numbers")
        return cls(kernel=data["kernel"], bytes=tuple(data["bytes"]), seconds=tuple(data["seconds"]),
                   tier=str(data.get("tier", "calibrated")), source=str(data.get("source", "")),
                   statistic=str(data.get("statistic", "")))
