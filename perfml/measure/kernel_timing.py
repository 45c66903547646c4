"""How a sweep times a launch: CUDA events around it, or the kernel's own duration (CUPTI).

A result set is timed one way throughout, named in its manifest (``timing``):

``cuda-events`` (the default, and every set recorded before the choice existed)
    ``cupyx.profiler.benchmark``: a CUDA event recorded before and after each launch. The
    span holds the kernel's duration plus the host's launch and event overhead: on one H100
    machine 10.86 us more than Nsight Compute's duration, at every size
    (``experiments/results/event_overhead.txt``).
``kernel-duration``
    The kernel's start and end on the GPU, from CUPTI's activity records
    (``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL``, read through NVIDIA's ``cupti-python``).
    This is the time nvprof reports, and the data home's application runtimes are nvprof
    kernel durations (Amaris et al. measured with nvprof): a board calibrated from such a
    sweep has the launch floor and small-call times the nine applications' training boards
    have. The GPU's timestamp clock behind them ticks every 32 ns on an H100 and an H200
    (``experiments/cupti_resolution.py``; ``experiments/results/cupti_resolution.txt``).

References
----------
NVIDIA, CUPTI: Activity API (``cuptiActivityEnable``, ``cuptiActivityFlushAll``,
``CUpti_ActivityKernel``: ``start`` and ``end`` in ns on the GPU's timestamp clock);
``cupti-python`` (pip), the binding used here.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from perfml.errors import DeviceUnavailableError, MissingKernelRecordsError

__all__ = ["DEFAULT_TIMING", "TIMINGS", "KernelDurationTimer", "MissingKernelRecordsError", "check_timing"]

#: timing name -> what a recorded time holds
TIMINGS: dict[str, str] = {
    "cuda-events": "CUDA events around each launch (cupyx.profiler.benchmark): kernel plus host launch overhead",
    "kernel-duration": "the kernel's duration on the GPU (CUPTI activity records, as nvprof reports it)",
}
DEFAULT_TIMING = "cuda-events"

_CUPTI_HINT = ("--timing kernel-duration reads CUPTI activity records through NVIDIA's cupti-python: "
               "`pip install cupti-python` (its major version the CUDA driver's), or time with "
               "--timing cuda-events")


def check_timing(timing: str) -> str:
    """``timing`` if it names a timing of :data:`TIMINGS`; else a typed error naming them."""
    from perfml.errors import InvalidValueError

    if not isinstance(timing, str) or timing not in TIMINGS:  # a list or object: not hashable, not a timing
        raise InvalidValueError(f"--timing {timing!r} is not a timing perfml knows; expected one of "
                                f"{', '.join(TIMINGS)}")
    return timing


def _import_cupti():
    try:
        from cupti import cupti  # noqa: PLC0415 - optional, imported when a timer is made
    except ImportError as exc:
        raise DeviceUnavailableError(f"{_CUPTI_HINT} ({exc})") from None
    return cupti


def _matches(record_name: str, entry: str) -> bool:
    """A kernel record's name is ``entry``'s: ``extern "C"``, or Itanium-mangled ``_Z<len><entry><parameters>``
    (the length prefix keeps ``add`` from matching ``addx``)."""
    return record_name == entry or record_name.startswith(f"_Z{len(entry)}{entry}")


class KernelDurationTimer:
    """Kernel durations of the launches made between :meth:`discard` and :meth:`durations`.

    CUPTI delivers activity records in buffers, through two callbacks registered once per
    process; the timer keeps (name, start, end) of each kernel record, copied at once (the
    buffer is CUPTI's again after the callback returns). Concurrent-kernel records are used:
    they do not serialize the kernels, unlike ``CUPTI_ACTIVITY_KIND_KERNEL``.

    Parameters
    ----------
    cupti_module : module, optional
        ``cupti.cupti``; tests pass a stand-in (no GPU here).
    """

    #: cupti module -> [its record list, open timers] (CUPTI takes one pair of callbacks per
    #: process; kernel activity stays on until the last open timer closes)
    _registered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __init__(self, cupti_module=None) -> None:
        self._cupti = cupti_module if cupti_module is not None else _import_cupti()
        key = self._cupti
        if key not in KernelDurationTimer._registered:
            records: list = []
            kernel_kind = self._kernel_kind()

            def buffer_requested():
                return 8 * 1024 * 1024, 0  # 8 MiB, no record limit

            def buffer_completed(activities):
                for a in activities:
                    if getattr(a, "kind", None) == kernel_kind:
                        records.append((str(a.name), int(a.start), int(a.end)))

            try:
                self._cupti.activity_register_callbacks(buffer_requested, buffer_completed)
            except Exception as exc:  # cupti.cuptiError: the driver's CUPTI does not match
                raise DeviceUnavailableError(f"CUPTI refused the activity callbacks ({exc}); {_CUPTI_HINT}") from None
            KernelDurationTimer._registered[key] = [records, 0]
        self._shared = KernelDurationTimer._registered[key]
        self._records = self._shared[0]
        try:
            self._cupti.activity_enable(self._kernel_kind())
        except Exception as exc:
            raise DeviceUnavailableError(f"CUPTI could not record kernel activity ({exc}); {_CUPTI_HINT}") from None
        self._shared[1] += 1
        self._enabled = True

    def _kernel_kind(self):
        return self._cupti.ActivityKind.CONCURRENT_KERNEL

    def discard(self) -> None:
        """Flush and drop every record so far (the warm-up launches'); call after a synchronize."""
        self._cupti.activity_flush_all(1)
        self._records.clear()

    def spans(self, entry: str, launched: int) -> tuple[tuple[int, int], ...]:
        """``(start, end)`` in ns on the GPU's timestamp clock of the ``launched`` launches of kernel ``entry``
        since :meth:`discard`, in launch order (the raw CUPTI fields, for a study of the clock itself:
        ``experiments/cupti_resolution.py``).

        Call after the device has finished them (a synchronize). Records of other kernels
        (none in a sweep's process) are left out; fewer records of ``entry`` than launches
        is an error rather than a silently shorter sample (the sweep records the point as
        failed and goes on; ``--resume`` retries it).
        """
        self._cupti.activity_flush_all(1)
        mine = [(start, end) for name, start, end in self._records if _matches(name, entry)]
        self._records.clear()
        if len(mine) != launched:
            raise MissingKernelRecordsError(
                f"CUPTI returned {len(mine)} kernel record(s) of {entry} for {launched} timed launch(es): the "
                f"durations cannot be matched to the launches, so the point is not recorded; `--resume` times it "
                f"again (if it keeps failing, measure into a new --out with --timing cuda-events)")
        bad = [(s, e) for s, e in mine if e < s]
        if bad:
            raise MissingKernelRecordsError(
                f"CUPTI returned a kernel record of {entry} that ends before it starts ({bad[0]}), so the point is "
                "not recorded; `--resume` times it again")
        return tuple(sorted(mine))  # by start: the launch order

    def durations(self, entry: str, launched: int) -> tuple[float, ...]:
        """The durations in seconds of the ``launched`` launches of kernel ``entry`` since :meth:`discard`
        (:meth:`spans`' ends less starts, in launch order)."""
        return tuple((end - start) * 1e-9 for start, end in self.spans(entry, launched))

    def time(self, launch: Callable[[], None], synchronize: Callable[[], None], entry: str, *,
             n_repeat: int, n_warmup: int, max_duration_s: float | None, clock=None) -> tuple[float, ...]:
        """Warm up, then time up to ``n_repeat`` launches (fewer once ``max_duration_s`` of wall time has passed).

        Each timed launch is followed by a synchronize, as ``cupyx.profiler.benchmark``
        synchronizes each repetition, so the two timings see the same sequence of launches.
        """
        import time as _time

        clock = clock or _time.perf_counter
        for _ in range(n_warmup):
            launch()
        synchronize()
        self.discard()
        start, launched = clock(), 0
        while launched < n_repeat:
            launch()
            synchronize()
            launched += 1
            if max_duration_s is not None and clock() - start >= max_duration_s:
                break
        return self.durations(entry, launched)

    def close(self) -> None:
        """Stop recording kernel activity once no other timer of the process needs it (the callbacks stay registered)."""
        if self._enabled:
            self._enabled = False
            self._shared[1] -= 1
            try:
                self._cupti.activity_flush_all(1)
                if self._shared[1] == 0:
                    self._cupti.activity_disable(self._kernel_kind())
            finally:
                self._records.clear()
