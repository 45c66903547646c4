"""Sweep result sets: one directory, append-only Parquet parts, a versioned manifest.

Layout of a result set directory::

    RESULTS/
      manifest.json             format, schema_version, device fingerprint, synthetic flag
      plans.json                per spec: its planned point ids and its kernels' fingerprints
      faults.jsonl              points whose kernel raised a CUDA error (when any did)
      part-00000-1a2b3c4d.parquet
      part-00001-5e6f7a8b.parquet
      ...

* **Append-only.** Each flush of measured rows becomes a new part file, written to a
  temporary name in the same directory, fsynced and hard-linked into place, so a part is
  either complete or absent and no existing file is ever rewritten (``os.link`` fails
  rather than overwrite). A writer killed mid-write leaves at most a hidden
  ``.part-*.parquet.tmp``, which is never read and is removed (and reported) by the
  next ``--resume``.
* **Typed failures.** An OS error while writing (disk full, read-only file system,
  permissions, a file where a directory is expected) is a
  :class:`~perfml.errors.ResultWriteError` naming the path and the fix.
* **Versioned.** ``manifest.json`` and every part (Parquet key-value metadata
  ``perfml.schema_version``) carry :data:`SCHEMA_VERSION`; a reader meeting any other
  version raises :class:`~perfml.errors.ResultSchemaError` instead of guessing.
* **One device per set.** The manifest records the device fingerprint
  (:attr:`DeviceInfo.fingerprint`); appending measurements from another device raises
  :class:`~perfml.errors.MixedDeviceError`, as pyperf refuses to merge runs from
  different machines.
* **One timing per set.** The manifest names how every launch of the set was timed
  (``timing``: :data:`perfml.measure.kernel_timing.TIMINGS`; a manifest without it was
  timed with CUDA events, the only timing before the choice existed); resuming with
  another timing raises :class:`~perfml.errors.MixedTimingError`.
* **Self-describing rows.** Every row repeats the device metadata, versions and schema
  version, so a row copied out of its set still says where it came from.
* **Resumable.** Rows are keyed by ``point_id`` (spec name + launch key); a resumed
  sweep skips the points already present, so rows are neither lost nor duplicated. It
  continues exactly the sweep it interrupted: ``plans.json`` records what each spec planned
  and the sha256 of its kernels' sidecar and CUDA source, and a resume whose spec plans
  other points, or whose kernel changed, is refused (:meth:`ResultSet.record_plans`);
  ``perfml characterize`` refuses a set whose plans it does not hold every point of
  (:meth:`ResultSet.missing_points`; sets written before ``plans.json`` are not checked).
* **One writer.** A sweep holds an ``flock`` on the manifest while appending
  (:meth:`ResultSet.writing`); it dies with the process, so no stale lock survives a crash.

A manifest rather than metadata in the first part keeps the device check cheap and
makes an empty (just created, nothing measured yet) set well-defined.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import math
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfml._files import parse_table
from perfml.measure.backend import DeviceInfo, Measurement, canonical_json
from perfml.measure.kernel_timing import DEFAULT_TIMING, TIMINGS, check_timing
from perfml.errors import (
    InvalidValueError,
    MixedDeviceError,
    MixedTimingError,
    ResultFileExistsError,
    ResultSchemaError,
    ResultWriteError,
)

__all__ = [
    "FORMAT",
    "FAULTS_NAME",
    "MANIFEST_NAME",
    "PLANS_NAME",
    "SCHEMA_VERSION",
    "ResultSet",
    "make_row",
    "point_id",
    "result_schema",
]

#: temporary files a writer leaves only when killed mid-write (removed on --resume)
STALE_PATTERNS = (".part-*.parquet.tmp", ".manifest.json.*.tmp", ".plans.json.*.tmp")
#: the version of the row schema and directory layout written by this perfml
SCHEMA_VERSION = 1
FORMAT = "perfml-sweep-results"
MANIFEST_NAME = "manifest.json"
#: points whose kernel raised a CUDA error (one JSON object per line; ``--resume`` skips them)
FAULTS_NAME = "faults.jsonl"
#: per spec, the points its sweep planned and the fingerprints of its kernels (ResultSet.record_plans)
PLANS_NAME = "plans.json"
_PLANS_FORMAT = "perfml-sweep-plans"
_SCHEMA_KEY = b"perfml.schema_version"


_ERRNO_FIX = {
    errno.ENOSPC: "the disk is full: free space or choose another --out directory",
    errno.EDQUOT: "the disk quota is exhausted: free space or choose another --out directory",
    errno.EROFS: "the file system is read-only: choose a writable --out directory",
    errno.EACCES: "permission denied: choose an --out directory you may write to",
    errno.EPERM: "permission denied: choose an --out directory you may write to",
    errno.EISDIR: "a directory is in the way where a file is expected: choose another --out",
    errno.ENOTDIR: "a file is in the way where a directory is expected: --out must name a directory",
    errno.EEXIST: "a file is in the way where a directory is expected: --out must name a directory",
}


def _write_error(path: Path, exc: OSError, doing: str) -> ResultWriteError:
    """A one-line :class:`ResultWriteError` for an OS error while writing results."""
    fix = _ERRNO_FIX.get(exc.errno or 0, "check the path and the file system, then re-run with --resume")
    reason = exc.strerror or str(exc)
    return ResultWriteError(f"cannot {doing} {path} ({reason}); {fix}; nothing half-written was kept")


def _fsync_dir(path: Path) -> None:
    """Make a rename/link in ``path`` durable (best effort where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_durably(tmp: Path, data: bytes) -> None:
    """Write ``data`` to ``tmp`` and fsync it (the caller links it into place)."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def result_schema():  # -> pyarrow.Schema
    """The Arrow schema of a result row (imported lazily: pyarrow is heavy)."""
    import pyarrow as pa

    f64, i64 = pa.float64(), pa.int64()
    return pa.schema(
        [
            ("schema_version", pa.int32()),
            ("point_id", pa.string()),
            ("spec", pa.string()),
            ("family", pa.string()),
            ("kernel", pa.string()),
            ("target", pa.string()),
            ("kind", pa.string()),
            ("component", pa.string()),
            ("backend", pa.string()),
            ("synthetic", pa.bool_()),
            ("measured_at", pa.timestamp("us", tz="UTC")),
            ("params_json", pa.string()),
            ("launch_key", pa.string()),
            ("grid_x", i64),
            ("grid_y", i64),
            ("grid_z", i64),
            ("block_x", i64),
            ("block_y", i64),
            ("block_z", i64),
            ("shared_mem_bytes", i64),
            ("threads", i64),
            # repetition statistics (seconds)
            ("n", pa.int32()),
            ("warmup", pa.int32()),
            ("time_min_s", f64),
            ("time_median_s", f64),
            ("time_mean_s", f64),
            ("time_std_s", f64),
            ("time_cv", f64),
            ("times_s", pa.list_(f64)),
            ("cv_threshold", f64),
            ("noisy", pa.bool_()),
            ("validated", pa.bool_()),
            # in-kernel cycles, clocks and energy (null where unavailable)
            ("cycles", i64),
            ("sm_clock_mhz", f64),
            ("mem_clock_mhz", f64),
            ("energy_j", f64),
            ("power_w", f64),
            # work per launch (from the sidecar's `work` section) and derived throughput
            ("work_json", pa.string()),
            ("instructions", f64),
            ("flops", f64),
            ("bytes", f64),
            ("instructions_per_s", f64),
            ("flops_per_s", f64),
            ("bytes_per_s", f64),
            ("instructions_per_cycle_per_sm", f64),
            # kernel attributes (cupy RawKernel.attributes)
            ("num_regs", i64),
            ("shared_size_bytes", i64),
            ("local_size_bytes", i64),
            ("const_size_bytes", i64),
            ("max_threads_per_block", i64),
            # device and software metadata
            ("device_name", pa.string()),
            ("compute_capability", pa.string()),
            ("sms", pa.int32()),
            ("total_memory_bytes", i64),
            ("max_sm_clock_mhz", f64),
            ("max_mem_clock_mhz", f64),
            ("driver_version", pa.string()),
            ("cuda_runtime_version", pa.string()),
            ("cupy_version", pa.string()),
            ("perfml_version", pa.string()),
        ]
    )


def point_id(spec: str, launch_key: str) -> str:
    """Row identity within a result set: which spec measured which launch."""
    return hashlib.sha256(f"{spec}\n{launch_key}".encode()).hexdigest()[:24]


def _per_second(count: float | None, seconds: float) -> float | None:
    return None if count is None else count / seconds


def make_row(
    measurement: Measurement,
    device: DeviceInfo,
    *,
    spec: str,
    kernel: str = "",
    target: str = "",
    kind: str = "",
    component: str = "",
    work: Mapping[str, float | None] | None = None,
    work_per_thread: Mapping[str, float] | None = None,
    cv_threshold: float = 0.05,
    synthetic: bool = False,
    measured_at: _dt.datetime | None = None,
) -> dict[str, Any]:
    """Flatten one measurement into a result row (a dict matching :func:`result_schema`).

    ``work`` holds totals per launch: ``instructions``, ``flops``, ``bytes`` (any may be
    missing); ``work_per_thread`` is the sidecar's whole ``[work]`` section, stored as JSON
    (``work_json``) for quantities without a column of their own (``hops``, ...). Throughputs are computed from the median time; instructions per cycle per
    SM uses the NVML SM clock where measured, else the device's maximum SM clock.
    """
    from perfml import __version__

    launch = measurement.launch
    work = dict(work or {})
    median = measurement.median_s
    clock = measurement.sm_clock_mhz or device.max_sm_clock_mhz
    instructions = work.get("instructions")
    ipc_sm = None
    if instructions is not None and clock and device.sms:
        ipc_sm = instructions / (median * clock * 1e6 * device.sms)
    attrs = measurement.kernel_attributes
    cv = measurement.cv
    return {
        "schema_version": SCHEMA_VERSION,
        "point_id": point_id(spec, launch.key),
        "spec": spec,
        "family": launch.family,
        "kernel": kernel or launch.family,
        "target": target,
        "kind": kind,
        "component": component,
        "backend": device.backend,
        "synthetic": bool(synthetic),
        "measured_at": measured_at or _dt.datetime.now(_dt.UTC),
        "params_json": launch.params_json,
        "launch_key": launch.key,
        "grid_x": launch.grid[0],
        "grid_y": launch.grid[1],
        "grid_z": launch.grid[2],
        "block_x": launch.block[0],
        "block_y": launch.block[1],
        "block_z": launch.block[2],
        "shared_mem_bytes": launch.shared_mem,
        "threads": launch.threads,
        "n": measurement.n,
        "warmup": launch.warmup,
        "time_min_s": measurement.min_s,
        "time_median_s": median,
        "time_mean_s": measurement.mean_s,
        "time_std_s": measurement.std_s,
        "time_cv": cv,
        "times_s": list(measurement.times_s),
        "cv_threshold": cv_threshold,
        "noisy": bool(cv > cv_threshold),
        "validated": measurement.validated,
        "cycles": measurement.cycles,
        "sm_clock_mhz": measurement.sm_clock_mhz,
        "mem_clock_mhz": measurement.mem_clock_mhz,
        "energy_j": measurement.energy_j,
        "power_w": measurement.power_w,
        "work_json": canonical_json(dict(work_per_thread or {})),
        "instructions": instructions,
        "flops": work.get("flops"),
        "bytes": work.get("bytes"),
        "instructions_per_s": _per_second(instructions, median),
        "flops_per_s": _per_second(work.get("flops"), median),
        "bytes_per_s": _per_second(work.get("bytes"), median),
        "instructions_per_cycle_per_sm": ipc_sm,
        "num_regs": attrs.get("num_regs"),
        "shared_size_bytes": attrs.get("shared_size_bytes"),
        "local_size_bytes": attrs.get("local_size_bytes"),
        "const_size_bytes": attrs.get("const_size_bytes"),
        "max_threads_per_block": attrs.get("max_threads_per_block"),
        "device_name": device.name,
        "compute_capability": device.compute_capability,
        "sms": device.sms,
        "total_memory_bytes": device.total_memory_bytes,
        "max_sm_clock_mhz": device.max_sm_clock_mhz,
        "max_mem_clock_mhz": device.max_mem_clock_mhz,
        "driver_version": device.driver_version,
        "cuda_runtime_version": device.cuda_runtime_version,
        "cupy_version": device.cupy_version,
        "perfml_version": __version__,
    }


def _manifest_device(device, manifest: Path) -> DeviceInfo:
    """The manifest's ``device`` entry, checked: the device is what resuming and replay compare."""
    fix = "the manifest was edited or damaged; measure the set again, or restore manifest.json"
    if not isinstance(device, dict):
        raise ResultSchemaError(f"{manifest}: expected a 'device' object, found {type(device).__name__}; {fix}")
    name, cc, sms = device.get("name"), device.get("compute_capability"), device.get("sms")
    if not (isinstance(name, str) and name and isinstance(cc, str) and cc
            and isinstance(sms, int) and not isinstance(sms, bool) and sms > 0):
        raise ResultSchemaError(f"{manifest}: the 'device' entry needs name and compute_capability (text) and "
                                f"sms (a whole number > 0), found name={name!r}, compute_capability={cc!r}, "
                                f"sms={sms!r}; {fix}")
    for key, kind, low, high in _DEVICE_FIELDS:
        value = device.get(key)
        if value is None and key != "total_memory_bytes":
            continue
        if kind is str:
            ok = isinstance(value, str)
        else:
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                  and low <= value <= high and (kind is float or float(value).is_integer()))
        if not ok:
            what = "text" if kind is str else f"a {'whole ' if kind is int else ''}number in [{low:g}, {high:g}]"
            raise ResultSchemaError(f"{manifest}: the 'device' entry has {key} = {value!r}, expected {what}; {fix}")
    try:
        return DeviceInfo.from_dict(device)
    except (TypeError, ValueError) as exc:
        raise ResultSchemaError(f"{manifest}: unreadable 'device' entry ({exc}); {fix}") from None


#: the top-level keys :meth:`ResultSet.create` writes into a manifest
_MANIFEST_KEYS = frozenset({"format", "schema_version", "created", "synthetic", "timing", "device", "fingerprint"})


def _check_manifest_fingerprint(fingerprint, device: DeviceInfo, manifest: Path) -> None:
    """The manifest's ``fingerprint`` is its ``device`` entry's identity, written with it by
    :meth:`ResultSet.create`: one edited without the other left the set's identity ambiguous
    (the device entry was used, the fingerprint ignored, and a part's rows were blamed)."""
    if fingerprint is None:  # sets written before the fingerprint was stored
        return
    expected = device.fingerprint
    if isinstance(fingerprint, dict) and fingerprint == expected:
        return
    if isinstance(fingerprint, dict):
        found = "; ".join(f"{k}: {fingerprint.get(k)!r} there, {expected.get(k)!r} in 'device'"
                          for k in sorted(set(fingerprint) | set(expected)) if fingerprint.get(k) != expected.get(k))
    else:
        found = f"{fingerprint!r}, expected an object"
    raise ResultSchemaError(f"{manifest}: the 'fingerprint' entry disagrees with the 'device' entry ({found}); "
                            "perfml writes the two together, so one of them was edited: restore manifest.json, "
                            "or measure the set again")


#: the manifest's device fields beyond name, compute capability and SMs: (key, kind, low, high);
#: a device reports no L2 over 4 GiB, no memory over 64 TiB, no clock over 100 GHz
_DEVICE_FIELDS = (
    ("total_memory_bytes", int, 0, 2.0 ** 46),
    ("l2_cache_bytes", int, 1, 2.0 ** 32),
    ("max_sm_clock_mhz", float, 1e-9, 1e5),
    ("max_mem_clock_mhz", float, 1e-9, 1e5),
    ("driver_version", str, 0, 0),
    ("cuda_runtime_version", str, 0, 0),
    ("cupy_version", str, 0, 0),
    ("uuid", str, 0, 0),
    ("backend", str, 0, 0),
)


@dataclass(frozen=True)
class ResultSet:
    """A result set directory (see the module docstring for the layout).

    Use :meth:`create` for a new set and :meth:`open` for an existing one; the
    constructor does no I/O.
    """

    path: Path
    device: DeviceInfo
    synthetic: bool = False
    created: str = ""
    timing: str = DEFAULT_TIMING

    # -- construction -------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike[str], device: DeviceInfo, *, synthetic: bool = False,
               timing: str = DEFAULT_TIMING) -> ResultSet:
        """Start a new result set; refuses to reuse a directory that already holds one."""
        check_timing(timing)
        path = Path(path)
        manifest = path / MANIFEST_NAME
        if not manifest.exists() and path.is_dir() and any(path.glob("part-*.parquet")):
            # --resume reached here too, and was told to pass --resume
            raise ResultFileExistsError(
                f"{path} holds measured parts but no {MANIFEST_NAME} (removed, or the set was copied without it), "
                f"so neither a new set nor --resume can use it: restore {MANIFEST_NAME}, or choose another --out "
                "directory (perfml never overwrites results)"
            )
        if manifest.exists():
            raise ResultFileExistsError(
                f"{path} already holds a result set; pass --resume to continue it, "
                "or choose another --out directory (perfml never overwrites results)"
            )
        if path.is_dir() and any(path.iterdir()):  # another tool's files: a result set gets its own folder
            raise ResultFileExistsError(
                f"{path} holds other files and no result set; choose a new or empty --out directory"
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _write_error(path, exc, "create the result directory") from None
        if not path.is_dir():
            raise _write_error(path, OSError(errno.ENOTDIR, "not a directory"),
                               "create the result directory")
        created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        data = {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "created": created,
            "synthetic": bool(synthetic),
            "timing": timing,
            "device": device.to_dict(),
            "fingerprint": device.fingerprint,
        }
        tmp = path / f".{MANIFEST_NAME}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            _write_durably(tmp, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
            os.link(tmp, manifest)  # fails rather than overwrite
            _fsync_dir(path)
        except FileExistsError:
            raise ResultFileExistsError(
                f"{manifest} appeared while creating the result set; choose another --out"
            ) from None
        except OSError as exc:
            raise _write_error(manifest, exc, "write") from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        return cls(path=path, device=device, synthetic=bool(synthetic), created=created, timing=timing)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ResultSet:
        """Open an existing result set, rejecting unknown formats and schema versions."""
        path = Path(path)
        manifest = path / MANIFEST_NAME
        if not manifest.is_file():
            raise ResultSchemaError(
                f"{path} is not a perfml result set: expected {MANIFEST_NAME} in it; "
                "create one with `perfml sweep run SPEC --out DIR`"
            )
        try:
            text = manifest.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ResultSchemaError(f"{manifest} is not valid JSON (not UTF-8 text: {exc.reason} at byte {exc.start})") from None
        data = parse_table(text, manifest, "json", "result set manifest", ResultSchemaError)
        if data.get("format") != FORMAT:
            raise ResultSchemaError(
                f"{manifest}: expected format {FORMAT!r}, found {data.get('format')!r}"
            )
        _check_version(data.get("schema_version"), str(manifest))
        synthetic = data.get("synthetic", False)
        if not isinstance(synthetic, bool):  # "false" read as true
            raise ResultSchemaError(f"{manifest}: synthetic = {synthetic!r}, expected true or false; the manifest "
                                    "was edited or damaged: restore manifest.json")
        unknown = sorted(set(data) - _MANIFEST_KEYS)
        if unknown:  # perfml writes none of them: a hand edit, or another tool's file
            raise ResultSchemaError(f"{manifest}: unknown key(s) {unknown}; a manifest holds "
                                    f"{', '.join(sorted(_MANIFEST_KEYS))}. The manifest was edited or damaged: "
                                    "restore manifest.json")
        timing = data.get("timing", DEFAULT_TIMING)
        try:
            check_timing(timing)
        except InvalidValueError:
            raise ResultSchemaError(f"{manifest}: timing = {timing!r}, expected one of {', '.join(map(repr, TIMINGS))}; "
                                    "the manifest was edited or damaged: restore manifest.json") from None
        device = _manifest_device(data.get("device"), manifest)
        _check_manifest_fingerprint(data.get("fingerprint"), device, manifest)
        return cls(
            path=path,
            device=device,
            synthetic=synthetic,
            created=str(data.get("created", "")),
            timing=timing,
        )

    @classmethod
    def open_or_create(
        cls, path: str | os.PathLike[str], device: DeviceInfo, *, resume: bool, synthetic: bool = False,
        timing: str = DEFAULT_TIMING,
    ) -> ResultSet:
        """What ``perfml sweep run --out PATH [--resume]`` does with PATH.

        Without ``resume`` an existing set is an error (never overwrite); with ``resume``
        an existing set must have been measured on the same device, with the same timing.
        """
        path = Path(path)
        if resume and (path / MANIFEST_NAME).exists():
            rs = cls.open(path)
            rs.check_device(device)
            rs.check_timing(timing)
            return rs
        return cls.create(path, device, synthetic=synthetic, timing=timing)

    # -- checks -----------------------------------------------------------------
    def check_device(self, device: DeviceInfo) -> None:
        """Raise :class:`MixedDeviceError` unless ``device`` matches this set's fingerprint."""
        mine, theirs = self.device.fingerprint, device.fingerprint
        if mine != theirs:
            diff = ", ".join(
                f"{k}: {mine.get(k)!r} here vs {theirs.get(k)!r} now"
                for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)
            )
            raise MixedDeviceError(
                f"{self.path} holds results from another device ({diff}); "
                "write this device's results to a new --out directory"
            )

    def check_timing(self, timing: str) -> None:
        """Raise :class:`MixedTimingError` unless ``timing`` is how this set's launches were timed."""
        if timing != self.timing:
            raise MixedTimingError(
                f"{self.path} was timed with {self.timing} ({TIMINGS[self.timing]}), this sweep times with "
                f"{timing}; one set holds one timing: resume it with --timing {self.timing}, or write to a "
                "new --out directory")

    @contextlib.contextmanager
    def writing(self) -> Iterator[ResultSet]:
        """Hold the set's writer lock (``flock`` on the manifest) while appending.

        Two sweeps appending to one set at once are refused; the lock dies with its
        process, so a crashed sweep never leaves a stale lock behind for ``--resume``.
        """
        import fcntl

        with open(self.path / MANIFEST_NAME, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ResultFileExistsError(
                    f"another perfml sweep is writing to {self.path}; wait for it to finish "
                    "or choose another --out directory"
                ) from None
            try:
                yield self
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- parts ------------------------------------------------------------------
    def parts(self) -> list[Path]:
        """The part files, in order; a part that is not a regular file (a FIFO would block
        every reader, a folder has no rows) is refused, naming it."""
        parts = sorted(self.path.glob("part-*.parquet"))
        for part in parts:
            self._refuse_special(part)
        return parts

    def append(self, rows: Iterable[Mapping[str, Any]]) -> Path | None:
        """Write ``rows`` as a new part file; returns its path (``None`` for no rows)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = list(rows)
        if not rows:
            return None
        for row in rows:
            if row.get("synthetic", False) != self.synthetic:
                raise ResultSchemaError(
                    f"row synthetic={row.get('synthetic')} does not match the result set "
                    f"(synthetic={self.synthetic}); keep synthetic and measured data apart"
                )
            self.check_device(
                DeviceInfo(
                    name=row["device_name"],
                    compute_capability=row["compute_capability"],
                    sms=row["sms"],
                    total_memory_bytes=row["total_memory_bytes"],
                )
            )
        schema = result_schema().with_metadata({_SCHEMA_KEY: str(SCHEMA_VERSION).encode()})
        table = pa.Table.from_pylist(rows, schema=schema)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        data = sink.getvalue().to_pybytes()
        index = len(self.parts())
        while True:
            final = self.path / f"part-{index:05d}-{uuid.uuid4().hex[:8]}.parquet"
            tmp = self.path / f".{final.name}.tmp"
            try:
                _write_durably(tmp, data)  # complete and on disk before it gets its name
                os.link(tmp, final)  # fails instead of overwriting
                _fsync_dir(self.path)
                break
            except FileExistsError:  # pragma: no cover - uuid collision
                index += 1
            except OSError as exc:
                raise _write_error(final, exc, "write the result part") from None
            finally:
                with contextlib.suppress(OSError):
                    tmp.unlink(missing_ok=True)
        return final

    def stale_files(self) -> list[Path]:
        """Temporary files a killed writer left behind (never results: parts are linked whole)."""
        return sorted(p for pattern in STALE_PATTERNS for p in self.path.glob(pattern))

    def remove_stale(self) -> list[Path]:
        """Delete :meth:`stale_files` (call with the writer lock held); returns what was removed."""
        removed = []
        for stale in self.stale_files():
            try:
                stale.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _write_error(stale, exc, "remove the stale temporary file") from None
            removed.append(stale)
        return removed

    def discard_if_empty(self, *, remove_directory: bool) -> bool:
        """Remove this set's manifest when it holds no measurement at all (no part, no fault
        record), and its directory with ``remove_directory`` when that is then empty.

        For a sweep that created the set and failed before its first point: left behind, the
        manifest-only set made the same command refuse to run again ("already holds a result
        set; pass --resume"). Anything measured, or any other file, is kept, and so is a set
        another sweep holds the writer lock of (a ``--resume`` of the new set started beside
        the sweep that created it: removing the manifest under it lost all it measured).
        Returns whether the manifest was removed.
        """
        try:
            with self.writing():  # another sweep writing to it (it resumed the new set) keeps it
                if self.parts() or (self.path / FAULTS_NAME).exists():
                    return False
                self.remove_stale()
                with contextlib.suppress(FileNotFoundError):
                    (self.path / PLANS_NAME).unlink()  # what the failed sweep planned: perfml's own record
                with contextlib.suppress(FileNotFoundError):
                    (self.path / MANIFEST_NAME).unlink()
        except (ResultFileExistsError, FileNotFoundError):
            return False
        if remove_directory:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when empty
        return True

    def read(self):  # -> pandas.DataFrame
        """All rows of all parts, checked against the schema version."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = []
        first_part: dict[str, Path] = {}
        for part in self.parts():
            try:
                meta = pq.read_schema(part).metadata or {}
                found = meta.get(_SCHEMA_KEY)
                _check_version(int(found) if found is not None else None, str(part))
                table = pq.read_table(part)
            except (OSError, ValueError, pa.ArrowException) as exc:
                raise _unreadable(part, exc) from None
            self._check_part(table.to_pandas(), part, first_part)
            tables.append(table)
        if not tables:
            return result_schema().empty_table().to_pandas()
        table = pa.concat_tables(tables, promote_options="default")
        versions = set(table.column("schema_version").to_pylist())
        for v in versions:
            _check_version(v, str(self.path))
        return table.to_pandas()

    def _check_part(self, rows, part: Path, first_part: dict[str, Path]) -> None:
        """Refuse a part that :meth:`append` would not have written into this set: rows of
        another device or of the other kind (synthetic / measured), a point already stored
        in another part, or a measured quantity no measurement gives (a time that is not
        finite and positive, a negative count, clock or throughput). Such a part was copied
        in from another set or edited by hand; used, it gave another board's figures under
        this set's name, or dropped values silently."""
        fix = "move the part out of the result set and re-run with --resume, or restore the set"
        mine = {"device_name": self.device.name, "compute_capability": self.device.compute_capability,
                "sms": self.device.sms, "total_memory_bytes": self.device.total_memory_bytes}
        for column, expected in mine.items():
            if expected is None:
                continue
            if column not in rows:  # a part without its device columns could be anyone's
                raise ResultSchemaError(f"{part} has no {column} column: every row perfml writes names its device; "
                                        f"the part was edited or comes from elsewhere; {fix}")
            other = rows[column][rows[column] != expected]
            if len(other):
                found, expected = (v.tolist() if hasattr(v, "tolist") else v for v in (other.iloc[0], expected))  # no np.int64(...), as below
                raise MixedDeviceError(f"{part} holds rows with {column} = {found!r}, but the set was "
                                       f"measured on {self.device.name!r} ({column} = {expected!r}): the part comes "
                                       f"from another device's result set (or manifest.json's device entry was edited); {fix}")
        if "synthetic" in rows and (rows["synthetic"].astype(bool) != self.synthetic).any():
            raise ResultSchemaError(f"{part} holds {'measured' if self.synthetic else 'synthetic'} rows in a "
                                    f"{'synthetic' if self.synthetic else 'measured'} result set; {fix}")
        for point in rows.get("point_id", ()):
            if point in first_part:
                raise ResultSchemaError(f"point {point} is stored twice, in {first_part[point].name} and {part.name} "
                                        f"of {self.path} (a sweep stores each point once); {fix}")
            first_part[point] = part
        for column, positive, required in _MEASURED_COLUMNS:
            if column not in rows:
                continue
            values = rows[column]
            bad = _out_of_range(values, positive=positive, required=required)
            if bad is not None:
                row, shown = rows.iloc[bad], values.iloc[bad]
                shown = shown.tolist() if hasattr(shown, "tolist") else shown  # numpy value -> plain number or list
                kind = "a finite number > 0" if positive else "a finite number >= 0"
                raise ResultSchemaError(f"{part}: point {row.get('point_id', '?')} ({row.get('family', '?')}) has "
                                        f"{column} = {shown!r}, expected {kind}: no measurement gives it, "
                                        f"so the part was edited or damaged; {fix}")
        if "times_s" in rows:
            self._check_summaries(rows, part, fix)

    @staticmethod
    def _check_summaries(rows, part: Path, fix: str) -> None:
        """The summary times of a row are those of its repetitions (``times_s``), as :func:`make_row`
        computes them: a median edited x10 passed, and characterization reads the median."""
        import numpy as np

        times = [np.asarray(t if t is not None else [], dtype=float) for t in rows["times_s"]]
        for column, summary in (("time_min_s", np.min), ("time_median_s", np.median), ("time_mean_s", np.mean)):
            if column not in rows:
                continue
            stored = rows[column].to_numpy(dtype=float)
            expected = np.array([summary(t) if t.size else np.nan for t in times])
            with np.errstate(invalid="ignore"):
                off = np.isfinite(stored) & np.isfinite(expected) & ~np.isclose(stored, expected, rtol=1e-9, atol=0.0)
            if off.any():
                k = int(np.flatnonzero(off)[0])
                row = rows.iloc[k]
                raise ResultSchemaError(
                    f"{part}: point {row.get('point_id', '?')} ({row.get('family', '?')}) has {column} = "
                    f"{float(stored[k])!r}, but its repetitions (times_s) give {float(expected[k])!r}: the part "
                    f"was edited or damaged; {fix}")

    # -- faults -----------------------------------------------------------------
    def record_fault(self, point: str, launch_key: str, error: str) -> Path:
        """Append a faulted point to :data:`FAULTS_NAME` (call with the writer lock held).

        A kernel that raised a CUDA error would raise it again, in a fresh process too,
        and may take the process's CUDA context with it; ``--resume`` skips the points
        listed here (and reports them) until their line is removed.
        """
        line = json.dumps({"point_id": point, "launch_key": launch_key, "error": error,
                           "at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}) + "\n"
        path = self.path / FAULTS_NAME
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _write_error(path, exc, "record the faulted point") from None
        return path

    @staticmethod
    def _refuse_special(path: Path) -> None:
        """A record file of the set that is not a regular file (a FIFO blocks its reader) is refused."""
        from perfml._files import not_a_file

        why = not_a_file(path)
        if why is not None:
            raise ResultSchemaError(f"{path} {why}; perfml writes it as a regular file, so it was put there "
                                    "outside perfml: move it out of the result set")

    def faulted_points(self) -> dict[str, dict]:
        """``point_id`` -> its :data:`FAULTS_NAME` record (the last, if listed twice)."""
        path = self.path / FAULTS_NAME
        if not path.exists():
            return {}
        self._refuse_special(path)
        out = {}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record.get("error", ""), str) or not isinstance(record["point_id"], str):
                    raise TypeError
                out[str(record["point_id"])] = record
            except (ValueError, KeyError, TypeError, AttributeError):
                raise ResultSchemaError(
                    f"{path}, line {n}: not a fault record (a JSON object with a text point_id and error); "
                    "fix or delete the line"
                ) from None
        return out

    # -- plans ------------------------------------------------------------------
    def plans(self) -> dict[str, dict]:
        """Per spec, what its sweep planned: ``{"points": [point_id, ...], "kernels": {family: fingerprint}}``.

        Empty for a set written before perfml recorded plans.
        """
        path = self.path / PLANS_NAME
        if not path.exists():
            return {}
        self._refuse_special(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            specs = raw["specs"] if raw.get("format") == _PLANS_FORMAT else None
            ok = isinstance(specs, dict) and all(
                isinstance(v, dict) and isinstance(v.get("points"), list) and isinstance(v.get("kernels"), dict)
                and all(isinstance(p, str) for p in v["points"]) for v in specs.values())
        except (OSError, UnicodeDecodeError, ValueError, AttributeError, KeyError, TypeError):
            ok = False
        if not ok:
            raise ResultSchemaError(f"{path}: not the plan record perfml writes ({_PLANS_FORMAT}); restore it, or "
                                    "delete it to read the set without knowing what its sweeps planned")
        return specs

    def record_plans(self, planned: Mapping[str, Mapping[str, Any]]) -> None:
        """Record what each spec plans (call with the writer lock held), refusing a change.

        ``planned``: spec name -> ``{"points": [...], "kernels": {family: fingerprint}}``. A
        spec this set already measured under another plan (other points: its grid or a
        parameter changed) or with other kernels (a sidecar or CUDA source edited since: the
        same point ids would then hold two kernels' times, or recorded times another kernel's
        work) is refused; so a ``--resume`` continues exactly the sweep it interrupted. So is
        one whose ``measurement`` (repetitions, warm-up launches) changed: the resumed points
        were timed otherwise than the first ones, without a word (helper probe); plans
        recorded before it was kept are not compared.
        """
        known = self.plans()
        for spec, plan in planned.items():
            before = known.get(spec)
            if before is None:
                continue
            if sorted(before["points"]) != sorted(plan["points"]):
                raise ResultSchemaError(
                    f"{self.path}: spec {spec!r} now plans other points ({len(plan['points'])}) than when this set "
                    f"measured it ({len(before['points'])}): its grid, parameters or launches changed; measure the "
                    "changed spec into a new --out (or give it another name)")
            changed = sorted(k for k in set(before["kernels"]) & set(plan["kernels"])
                             if before["kernels"][k] != plan["kernels"][k])
            if changed:
                raise ResultSchemaError(
                    f"{self.path}: the kernel(s) {', '.join(changed)} of spec {spec!r} changed (sidecar or CUDA "
                    "source) since this set measured them; a set holds one version of a kernel: restore it, or "
                    "measure into a new --out")
            was, now = before.get("measurement"), plan.get("measurement")
            if isinstance(was, dict) and isinstance(now, dict) and was != now:
                shown = ", ".join(f"{k} {was.get(k)} -> {now.get(k)}" for k in sorted(set(was) | set(now))
                                  if was.get(k) != now.get(k))
                raise ResultSchemaError(
                    f"{self.path}: spec {spec!r} now times its points otherwise than when this set measured it "
                    f"({shown}); a set's points are timed alike: restore the spec's values, or measure into a new --out")
        merged = {**known, **{k: {"points": sorted(v["points"]), "kernels": dict(v["kernels"]),
                                  **({"measurement": dict(v["measurement"])} if "measurement" in v else {})}
                              for k, v in planned.items()}}
        data = json.dumps({"format": _PLANS_FORMAT, "version": 1, "specs": merged}, indent=1, sort_keys=True)
        path = self.path / PLANS_NAME
        tmp = self.path / f".{PLANS_NAME}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            _write_durably(tmp, data.encode())
            os.replace(tmp, path)
            _fsync_dir(self.path)
        except OSError as exc:
            raise _write_error(path, exc, "record the sweep plans") from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    def missing_points(self) -> dict[str, int]:
        """Per spec, how many of its planned points the set holds no row of (faulted points excepted).

        A sweep stopped by its time budget, by an interrupt, or with points that failed to
        compile leaves them; a characterization of such a set normalizes each function by the
        largest intensity *measured*, so it would differ without a word.
        """
        plans = self.plans()
        if not plans:
            return {}
        done = self.completed_point_ids() | set(self.faulted_points())
        return {spec: n for spec, plan in plans.items() if (n := len(set(plan["points"]) - done))}

    def completed_point_ids(self) -> set[str]:
        """``point_id`` of every row already stored (what a resumed sweep skips)."""
        import pyarrow.parquet as pq

        import pyarrow as pa

        done: set[str] = set()
        for part in self.parts():
            try:
                done.update(pq.read_table(part, columns=["point_id"]).column(0).to_pylist())
            except (OSError, ValueError, pa.ArrowException) as exc:
                raise _unreadable(part, exc) from None
        return done


#: (column, must be > 0 rather than >= 0, required in every row): the measured quantities
#: of a row as :func:`make_row` writes them; ``times_s`` is checked element by element.
_MEASURED_COLUMNS: tuple[tuple[str, bool, bool], ...] = (
    ("n", True, True),
    ("times_s", True, True),
    ("time_min_s", True, True),
    ("time_median_s", True, True),
    ("time_mean_s", True, True),
    ("time_std_s", False, False),
    ("time_cv", False, False),
    ("cycles", False, False),
    ("sm_clock_mhz", True, False),
    ("mem_clock_mhz", True, False),
    ("energy_j", False, False),
    ("power_w", False, False),
    ("instructions", False, False),
    ("flops", False, False),
    ("bytes", False, False),
    ("instructions_per_s", False, False),
    ("flops_per_s", False, False),
    ("bytes_per_s", False, False),
    ("instructions_per_cycle_per_sm", False, False),
)


def _out_of_range(values, *, positive: bool, required: bool) -> int | None:
    """Position of the first value that is not a finite number > 0 (``positive``) or >= 0
    (missing values pass unless ``required``); a list cell (``times_s``) must be non-empty
    and hold such numbers only."""
    import math

    def ok(v: Any, inner: bool = False) -> bool:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return not (required or inner)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return math.isfinite(v) and (v > 0 if positive else v >= 0)
        if inner or isinstance(v, (bool, str, bytes, Mapping)):  # a column retyped by hand
            return False
        try:
            items = list(v)
        except TypeError:
            return False
        return bool(items) and all(ok(i, inner=True) for i in items)

    for position, value in enumerate(values):
        if not ok(value.item() if hasattr(value, "item") and getattr(value, "ndim", 1) == 0 else value):
            return position
    return None


def _unreadable(part: Path, exc: Exception) -> ResultSchemaError:
    if isinstance(exc, ResultSchemaError):
        return exc
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ResultSchemaError(
        f"{part} is not a readable result part ({first}); perfml writes parts whole, so it was "
        "changed outside perfml: move it out of the result set and re-run with --resume"
    )


def _check_version(found: Any, where: str) -> None:
    # exactly the integer: true and 1.0 compare equal to 1 in Python (and were read as version 1)
    if type(found) is not int or found != SCHEMA_VERSION:
        raise ResultSchemaError(
            f"{where}: unknown result schema version {found!r}; this perfml reads version "
            f"{SCHEMA_VERSION}. Upgrade perfml, or re-run the sweep to a new --out directory"
        )
