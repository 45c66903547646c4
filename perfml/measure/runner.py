"""Run planned sweeps through a backend into a result set.

The runner is backend-agnostic: the same loop measures on a GPU
(:class:`~perfml.measure.CupyBackend`) or serves recorded results
(:class:`~perfml.measure.ReplayBackend`). It

* opens or creates the result set (refusing to overwrite, or to mix devices),
* skips the points already stored when resuming,
* writes measured rows in append-only batches, flushing what was measured even when a
  point fails or the run is interrupted, so a later ``--resume`` neither loses nor
  repeats a row,
* stops a spec when its time budget is spent (``--resume`` continues it),
* stops at a kernel that raises a CUDA error (:class:`~perfml.errors.KernelFaultError`:
  the process's CUDA context may be lost), after recording the point as faulted in the
  set, so that ``--resume`` skips it instead of faulting again,
* counts noisy points (coefficient of variation above the spec's threshold) and says
  what to do about them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfml.measure.backend import Backend, KernelValidationError
from perfml.errors import (KernelCompileError, KernelFaultError, MissingKernelRecordsError, PerfmlError,
                           SweepFailedPointsError)
from perfml.measure.kernel_timing import DEFAULT_TIMING
from perfml.measure.store import MANIFEST_NAME, ResultSet, make_row, point_id
from perfml.measure.spec import DEFAULT_MAX_POINTS, PlannedPoint, SweepPlan, SweepSpec, plan_specs

__all__ = ["SweepFailedPointsError", "SweepReport", "run_plans", "run_sweeps"]



#: called after every point: (spec name, points done in this spec, points in the spec)
ProgressCallback = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SweepReport:
    """What one spec's run did."""

    spec: str
    planned: int
    measured: int = 0
    already_done: int = 0
    skipped_budget: int = 0
    noisy: int = 0
    failed: tuple[tuple[str, str], ...] = ()  # (launch key, error)
    elapsed_s: float = 0.0

    @property
    def complete(self) -> bool:
        return self.measured + self.already_done == self.planned

    def advice(self, cv_threshold: float) -> list[str]:
        """Actionable lines for the user (pyperf-style)."""
        lines = []
        if self.noisy:
            lines.append(
                f"{self.spec}: {self.noisy} point(s) have a coefficient of variation above "
                f"{cv_threshold:.0%}; lock the clocks (`nvidia-smi -lgc <MHz>`), close other "
                "GPU work, raise `repetitions`, and re-run those points to a new --out"
            )
        if self.skipped_budget:
            lines.append(
                f"{self.spec}: time budget spent with {self.skipped_budget} point(s) left; "
                "re-run with --resume to continue, or raise time_budget_s"
            )
        if self.failed:
            lines.append(
                f"{self.spec}: {len(self.failed)} point(s) failed (first: {self.failed[0][1]}); "
                "they were not recorded and a --resume run retries them"
            )
        return lines


@dataclass
class _Buffer:
    result_set: ResultSet
    flush_every: int
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one part, exactly once.

        The rows leave the buffer before the write: an interrupt landing after the part was
        written but before the buffer was emptied had the final flush of :func:`run_plans`
        write them again (a point stored twice, a set nothing could read). If the write
        itself is interrupted, the rows it did not store go back to the buffer.
        """
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        try:
            self.result_set.append(rows)
        except BaseException:
            try:
                stored = self.result_set.completed_point_ids()
            except Exception:  # a set that cannot be read now: keep every row for the final flush
                stored = set()
            self.rows = [r for r in rows if r.get("point_id") not in stored] + self.rows
            raise


def run_plans(
    plans: Sequence[SweepPlan],
    backend: Backend,
    result_set: ResultSet,
    *,
    flush_every: int = 16,
    progress: ProgressCallback | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_stale: Callable[[list[Path]], None] | None = None,
    catalog: Mapping[str, Any] | None = None,
) -> list[SweepReport]:
    """Measure every planned point not yet in ``result_set``.

    Rows are written in batches of ``flush_every``; whatever was measured is written
    before an exception (including ``KeyboardInterrupt``) propagates. The set's writer
    lock is held throughout, so two sweeps never append to one set at once. Temporary
    files a killed writer left behind are removed first and passed to ``on_stale``. What
    each spec plans, and the fingerprints of its kernels in ``catalog`` (sidecar and CUDA
    source), is recorded in the set first (:meth:`ResultSet.record_plans`): a resume of a
    changed spec or kernel is refused, and ``perfml characterize`` knows what is missing.
    """
    device = backend.device_info()
    result_set.check_device(device)
    result_set.check_timing(getattr(backend, "timing", DEFAULT_TIMING))
    synthetic = bool(getattr(backend, "synthetic", False))
    buffer = _Buffer(result_set, max(1, flush_every))
    reports: list[SweepReport] = []
    with result_set.writing():
        # read under the lock: read before it, a second --resume that waited for the first
        # measured every point again, and the set held each twice (unusable)
        done = result_set.completed_point_ids()
        faulted = result_set.faulted_points()
        removed = result_set.remove_stale()  # temp files of a killed writer: never results
        result_set.record_plans({plan.spec.name: {"points": [point_id(plan.spec.name, p.launch.key) for p in plan.points],
                                                  "kernels": _kernel_fingerprints(plan, catalog),
                                                  "measurement": {"repetitions": plan.spec.repetitions,
                                                                  "warmup": plan.spec.warmup}} for plan in plans})
        if removed and on_stale is not None:
            on_stale(removed)
        try:
            for plan in plans:
                reports.append(
                    _run_plan(plan, backend, device, buffer, done, synthetic, progress, clock, faulted)
                )
        finally:
            buffer.flush()
    return reports


def _kernel_fingerprints(plan: SweepPlan, catalog: Mapping[str, Any] | None) -> dict[str, str]:
    """Per kernel family of the plan, sha256 of its sidecar (:func:`~perfml.kernels.sidecar.fingerprint_text`:
    the parameters' declared values left out) and CUDA source (families without files: none)."""
    import hashlib

    from perfml.kernels.sidecar import fingerprint_text

    out: dict[str, str] = {}
    for family in sorted({p.launch.family for p in plan.points}):
        entry = (catalog or {}).get(family)
        sidecar = getattr(entry, "sidecar_path", None)
        if sidecar is None:
            continue
        raw = Path(sidecar).read_bytes()
        try:
            text = fingerprint_text(raw.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:  # not a sidecar perfml loaded; hashed as it is
            text = raw
        digest = hashlib.sha256(text)
        source = getattr(entry, "source_path", None)
        if source is not None and Path(source).is_file():
            digest.update(b"\0" + Path(source).read_bytes())
        out[family] = digest.hexdigest()[:16]
    return out


def _run_plan(plan, backend, device, buffer, done, synthetic, progress, clock, faulted=None) -> SweepReport:
    spec: SweepSpec = plan.spec
    start = clock()
    measured = already = skipped = noisy = 0
    failed: list[tuple[str, str]] = []
    total = len(plan.points)
    for i, point in enumerate(plan.points):
        pid = point_id(spec.name, point.launch.key)
        if pid in done:
            already += 1
        elif faulted and pid in faulted:
            failed.append((point.launch.key, f"faulted in an earlier run ({faulted[pid].get('error', '')[:200]}); "
                                             "not run again: remove its line from faults.jsonl to retry"))
        elif clock() - start > spec.time_budget_s:
            skipped += 1
        else:
            try:
                measurement = backend.run(point.launch)
            except (KernelValidationError, KernelCompileError, MissingKernelRecordsError) as exc:
                failed.append((point.launch.key, str(exc)))
            except KernelFaultError as exc:
                path = buffer.result_set.record_fault(pid, point.launch.key, str(exc))
                raise KernelFaultError(
                    f"{exc} The point is recorded as faulted in {path}; the points measured before it "
                    f"are kept, and `--resume` continues with the others (in a new process).",
                    launch_key=point.launch.key,
                ) from exc
            else:
                row = _row(point, measurement, device, spec, synthetic)
                buffer.add(row)
                done.add(pid)
                measured += 1
                noisy += int(row["noisy"])
        if progress is not None:
            progress(spec.name, i + 1, total)
    return SweepReport(
        spec=spec.name,
        planned=total,
        measured=measured,
        already_done=already,
        skipped_budget=skipped,
        noisy=noisy,
        failed=tuple(failed),
        elapsed_s=clock() - start,
    )


def _row(point: PlannedPoint, measurement, device, spec: SweepSpec, synthetic: bool) -> dict[str, Any]:
    return make_row(
        measurement,
        device,
        spec=spec.name,
        kernel=point.kernel,
        target=point.target,
        kind=point.kind,
        component=point.component,
        work=point.work,
        work_per_thread=point.work_per_thread,
        cv_threshold=spec.cv_threshold,
        synthetic=synthetic,
    )


def run_sweeps(
    specs: Sequence[SweepSpec],
    backend: Backend,
    out: str | os.PathLike[str],
    *,
    resume: bool = False,
    catalog: Mapping[str, Any] | None = None,
    board: Any = None,
    flush_every: int = 16,
    progress: ProgressCallback | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
    on_stale: Callable[[list[Path]], None] | None = None,
) -> tuple[ResultSet, list[SweepReport]]:
    """Plan ``specs`` for the backend's device and run them into ``out``.

    Parameters
    ----------
    specs : sequence of SweepSpec
    backend : Backend
    out : path-like
        Result set directory. Must not hold a result set unless ``resume``.
    resume : bool
        Continue an existing result set: points already stored are skipped.
    catalog : mapping, optional
        Kernel families by name: the one catalog both planning and the backend use.
        Defaults to the backend's own (``backend.catalog``), else
        :func:`perfml.kernels.catalog.load_catalog`. A backend holding a different
        catalog is refused.
    board : Board, optional
        Registry entry, only used for time estimates.
    max_points : int
        Refuse a spec expanding to more points (see :func:`~perfml.measure.spec.plan_spec`).

    Raises
    ------
    ResultFileExistsError
        ``out`` holds a result set and ``resume`` is false.
    MixedDeviceError
        ``out`` holds results of another device.
    """
    if catalog is None:
        catalog = getattr(backend, "catalog", None)
    if catalog is None:
        from perfml.kernels.catalog import load_catalog

        catalog = load_catalog()
    backend_catalog = getattr(backend, "catalog", None)
    if backend_catalog is not None and backend_catalog is not catalog:
        raise PerfmlError(
            "the backend was created with another kernel catalog than the one given to "
            "run_sweeps; create it with make_backend(..., catalog=catalog) so planning and "
            "measuring use one catalog"
        )
    device = backend.device_info()
    plans = plan_specs(specs, catalog, sms=device.sms, board=board, max_points=max_points)
    synthetic = bool(getattr(backend, "synthetic", False))
    out = Path(out)
    new_set = not (resume and (out / MANIFEST_NAME).exists())
    check_replayable = getattr(backend, "check_replayable", None)
    if check_replayable is not None:  # a recording that cannot serve the sweep is refused before the set is made
        kernels: dict[str, str] = {}
        for plan in plans:
            kernels.update(_kernel_fingerprints(plan, catalog))
        check_replayable([p.launch for plan in plans for p in plan.points] if new_set else [], kernels)
    folder_existed = out.exists()
    timing = getattr(backend, "timing", DEFAULT_TIMING)
    result_set = ResultSet.open_or_create(out, device, resume=resume, synthetic=synthetic, timing=timing)
    try:
        reports = run_plans(plans, backend, result_set, flush_every=flush_every, progress=progress,
                            on_stale=on_stale, catalog=catalog)
    except BaseException:
        if new_set:  # failed before measuring anything: leave no manifest-only set behind
            result_set.discard_if_empty(remove_directory=not folder_existed)
        raise
    return result_set, reports
