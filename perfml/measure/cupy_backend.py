"""A backend that compiles and times kernels on a real GPU through CuPy.

* **Compilation**: ``cupy.RawModule(code=source, options=family.compile_options(params))``;
  the options tuple (``-D`` constants included) is the cache key, as in CuPy's own
  kernel cache. Errors become :class:`~perfml.errors.KernelCompileError` with the log.
* **Arguments and validation**: host arguments come from
  ``perfml.kernels.reference.build_arguments`` and outputs are checked by
  ``perfml.kernels.reference.validate`` (shared with every other driver) on one launch
  *before* timing; a wrong output raises :class:`KernelValidationError` and nothing is
  timed.
* **Timing** (``timing``, :mod:`perfml.measure.kernel_timing`): ``"cuda-events"``,
  ``cupyx.profiler.benchmark`` (CUDA events around every repetition, ``n_warmup`` untimed
  launches first, ``max_duration`` as a cap; the GPU times are recorded, the CPU times
  are not); or ``"kernel-duration"``, each repetition's kernel duration from CUPTI's
  activity records, with the same warm-up, cap and one synchronize per repetition.
* **Cycles**: a family whose sidecar declares an output buffer named ``cycles`` (64-bit
  ``clock64()`` spans written by the kernel) reports the largest span of the
  validation launch.
* **Clocks and energy**: through NVML (``nvidia-ml-py``) where installed: the SM and
  memory clocks right after timing, and the board energy counter
  (``nvmlDeviceGetTotalEnergyConsumption``, mJ) read before and after the timed
  repetitions. The counter updates every few tens of milliseconds, so energies of
  short points are coarse; a zero difference is recorded as unknown.

CuPy and NVML are imported when a backend is created, never at import time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfml.measure.backend import Backend, DeviceInfo, KernelValidationError, Launch, Measurement
from perfml.errors import DeviceUnavailableError, KernelCompileError, KernelFaultError, PerfmlError
from perfml.kernels.options import check_compile_options
from perfml.measure.kernel_timing import DEFAULT_TIMING, KernelDurationTimer, check_timing

__all__ = ["CupyBackend"]

_NO_GPU_HINT = (
    "run on a machine with an NVIDIA GPU and a CuPy wheel matching its driver "
    "(`pip install 'perfml[gpu]'`, i.e. cupy-cuda13x and nvidia-ml-py), or run from "
    "recorded results with `--backend replay --replay RESULTS`"
)

#: dynamic shared memory a kernel may use without opting in (CUDA: 48 KiB)
_DEFAULT_DYNAMIC_SHARED = 48 * 1024

_ATTRIBUTES = (
    "num_regs",
    "shared_size_bytes",
    "local_size_bytes",
    "const_size_bytes",
    "max_threads_per_block",
)


def _import_cupy():
    try:
        import cupy
    except ImportError as exc:
        raise DeviceUnavailableError(f"CuPy is not installed ({exc}); {_NO_GPU_HINT}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, no device
        raise DeviceUnavailableError(f"CuPy sees no CUDA device ({exc}); {_NO_GPU_HINT}") from None
    if count < 1:
        raise DeviceUnavailableError(f"CuPy sees no CUDA device; {_NO_GPU_HINT}")
    return cupy


def _cuda_error_types(cupy) -> tuple[type, ...]:
    """CuPy's exceptions for a failing CUDA driver or runtime call (those it has)."""
    cuda = getattr(cupy, "cuda", None)
    found = (getattr(getattr(cuda, "driver", None), "CUDADriverError", None),
             getattr(getattr(cuda, "runtime", None), "CUDARuntimeError", None))
    return tuple(t for t in found if isinstance(t, type) and issubclass(t, BaseException))


def _out_of_memory_types(cupy) -> tuple[type, ...]:
    """Out-of-memory exceptions: the host's ``MemoryError`` and CuPy's ``OutOfMemoryError``."""
    oom = getattr(getattr(getattr(cupy, "cuda", None), "memory", None), "OutOfMemoryError", None)
    return (MemoryError,) + ((oom,) if isinstance(oom, type) and issubclass(oom, BaseException) else ())


def cupy_device_available() -> bool:
    """Whether CuPy is importable and sees at least one device (used to skip GPU tests)."""
    try:
        _import_cupy()
    except DeviceUnavailableError:
        return False
    return True


class _Nvml:
    """The few NVML reads the backend needs; every method returns ``None`` on failure."""

    def __init__(self, pci_bus_id: str | None, index: int, *, enabled: bool = True) -> None:
        self._nv = None
        self._handle = None
        if not enabled:
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                self._handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
            except Exception:
                self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nv = pynvml
        except Exception:  # not installed, no driver, no permission
            self._nv = None

    def _call(self, name: str, *args: Any) -> Any:
        if self._nv is None:
            return None
        try:
            return getattr(self._nv, name)(self._handle, *args)
        except Exception:
            return None

    def clock_mhz(self, which: str, maximum: bool = False) -> float | None:
        if self._nv is None:
            return None
        kind = getattr(self._nv, f"NVML_CLOCK_{which}")
        value = self._call("nvmlDeviceGetMaxClockInfo" if maximum else "nvmlDeviceGetClockInfo", kind)
        return None if value is None else float(value)

    def energy_mj(self) -> int | None:
        value = self._call("nvmlDeviceGetTotalEnergyConsumption")
        return None if value is None else int(value)

    def driver_version(self) -> str | None:
        if self._nv is None:
            return None
        try:
            value = self._nv.nvmlSystemGetDriverVersion()
        except Exception:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    def close(self) -> None:
        if self._nv is not None:
            try:
                self._nv.nvmlShutdown()
            except Exception:
                pass
            self._nv = None


def _version(code: int) -> str:
    """CUDA's integer versions (12040) as text (12.4)."""
    return f"{code // 1000}.{(code % 1000) // 10}"


class CupyBackend(Backend):
    """Compile, validate and time kernel launches on one CUDA device with CuPy.

    Parameters
    ----------
    device : int
        CUDA device ordinal.
    catalog : mapping, optional
        Kernel families by name; defaults to :func:`perfml.kernels.catalog.load_catalog`.
    random_state : int
        Seed for random buffer initialisations (passed to ``build_arguments``).
    use_nvml : bool
        Read clocks and energy through NVML when it is installed.

    Raises
    ------
    DeviceUnavailableError
        CuPy is missing or sees no device; the message says what to do instead.
    """

    name = "cupy"
    synthetic = False

    def __init__(
        self,
        *,
        device: int = 0,
        catalog: Mapping[str, Any] | None = None,
        random_state: int = 0,
        use_nvml: bool = True,
        timing: str = DEFAULT_TIMING,
    ) -> None:
        self.timing = check_timing(timing)
        self._cupy = _import_cupy()
        if catalog is None:
            from perfml.kernels.catalog import load_catalog

            catalog = load_catalog()
        self.device = int(device)
        self.catalog = catalog
        self.random_state = random_state
        self._kernels: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._dev = self._cupy.cuda.Device(self.device)
        pci = None
        try:
            pci = self._dev.pci_bus_id
        except Exception:
            pass
        # before NVML: a missing cupti-python fails here with nothing to release
        self._durations = KernelDurationTimer() if self.timing == "kernel-duration" else None
        self._nvml = _Nvml(pci, self.device, enabled=use_nvml)
        self._info: DeviceInfo | None = None

    # -- device ------------------------------------------------------------------------
    def device_info(self) -> DeviceInfo:
        if self._info is not None:
            return self._info
        cupy = self._cupy
        props = cupy.cuda.runtime.getDeviceProperties(self.device)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        uuid = props.get("uuid", b"")
        uuid = uuid.hex() if isinstance(uuid, (bytes, bytearray)) else str(uuid)
        clock_khz = props.get("clockRate")
        mem_khz = props.get("memoryClockRate")
        self._info = DeviceInfo(
            name=name,
            compute_capability=f"{props['major']}.{props['minor']}",
            sms=int(props["multiProcessorCount"]),
            total_memory_bytes=int(props["totalGlobalMem"]),
            max_sm_clock_mhz=self._nvml.clock_mhz("SM", maximum=True)
            or (clock_khz / 1000 if clock_khz else None),
            max_mem_clock_mhz=self._nvml.clock_mhz("MEM", maximum=True)
            or (mem_khz / 1000 if mem_khz else None),
            driver_version=self._nvml.driver_version()
            or _version(cupy.cuda.runtime.driverGetVersion()),
            cuda_runtime_version=_version(cupy.cuda.runtime.runtimeGetVersion()),
            cupy_version=str(cupy.__version__),
            uuid=uuid,
            backend=self.name,
            l2_cache_bytes=int(props["l2CacheSize"]) if props.get("l2CacheSize") else None,
        )
        return self._info

    # -- compilation ---------------------------------------------------------------------
    def _kernel(self, family: Any, params: Mapping[str, int]):
        options = check_compile_options(family.compile_options(params), str(family.sidecar_path))
        key = (family.name, options)
        if key not in self._kernels:
            try:
                module = self._cupy.RawModule(code=family.read_source(), options=options)
                function = module.get_function(family.entry)
                function.attributes  # noqa: B018 - loads the module: compile errors surface here
                self._kernels[key] = function
            except Exception as exc:  # cupy.cuda.compiler.CompileException, CUDADriverError
                raise KernelCompileError(
                    f"{family.name}: compiling {family.source_path} with {' '.join(options)} "
                    f"failed: {exc}; check the source with `perfml kernels check {family.name}`"
                ) from exc
        return self._kernels[key]

    # -- running -------------------------------------------------------------------------
    def run(self, launch: Launch) -> Measurement:
        family = self.catalog.get(launch.family)
        if family is None:
            raise PerfmlError(f"unknown kernel family {launch.family!r} in the catalog")
        try:
            return self._run(family, launch)
        except _out_of_memory_types(self._cupy) as exc:
            # the point's buffers do not fit (device or host): a failed point, not a lost sweep
            raise KernelValidationError(
                f"{family.name} {launch.params_json} (grid {launch.grid}, block {launch.block}): its buffers do not "
                f"fit in the free memory ({exc.__class__.__name__}: {exc}); not timed, recorded as failed: leave "
                "the point out of the spec, or measure it on a board with more memory"
            ) from exc
        except _cuda_error_types(self._cupy) as exc:
            raise KernelFaultError(
                f"{family.name} {launch.params_json} (grid {launch.grid}, block {launch.block}) raised a "
                f"CUDA error on the GPU: {exc}. The CUDA context of this process may be lost, so nothing "
                "more is run in it; fix the kernel (compute-sanitizer finds illegal addresses), then "
                "measure it again",
                launch_key=launch.key,
            ) from exc

    def _run(self, family, launch: Launch) -> Measurement:
        """Validate, then time, one launch (:meth:`run` turns CUDA errors into KernelFaultError)."""
        import numpy as np
        from cupyx.profiler import benchmark

        from perfml.kernels.catalog import LaunchConfig
        from perfml.kernels.reference import build_arguments, validate

        cupy = self._cupy

        params = dict(launch.params)
        cfg = LaunchConfig(launch.grid, launch.block, launch.shared_mem)
        with self._dev:
            kernel = self._kernel(family, params)
            if cfg.shared_bytes > _DEFAULT_DYNAMIC_SHARED:
                # above 48 KiB of dynamic shared memory a kernel must opt in
                kernel.max_dynamic_shared_size_bytes = cfg.shared_bytes
            # name -> numpy array (buffers) or numpy scalar (scalars), in call order
            host_args = build_arguments(family, params, cfg, random_state=self.random_state)
            dev_args = tuple(
                cupy.asarray(v) if isinstance(v, np.ndarray) else v for v in host_args.values()
            )
            # one launch to validate (and to read cycles) before anything is timed
            kernel(cfg.grid, cfg.block, dev_args, shared_mem=cfg.shared_bytes)
            self._dev.synchronize()
            outputs = {
                spec.name: cupy.asnumpy(arg)
                for spec, arg in zip(family.args, dev_args)
                if spec.kind == "buffer" and spec.output
            }
            try:
                validate(family, params, cfg, host_args, outputs)
            except PerfmlError as exc:
                raise KernelValidationError(
                    f"{family.name} {launch.params_json}: output check failed ({exc}); not timed"
                ) from exc
            cycles = None
            if "cycles" in outputs and outputs["cycles"].size:
                cycles = int(outputs["cycles"].max())

            energy0 = self._nvml.energy_mj()
            if self._durations is not None:
                times = self._durations.time(
                    lambda: kernel(cfg.grid, cfg.block, dev_args, shared_mem=cfg.shared_bytes),
                    self._dev.synchronize, family.entry, n_repeat=launch.repetitions, n_warmup=launch.warmup,
                    max_duration_s=launch.max_duration_s)
            else:
                result = benchmark(
                    kernel,
                    (cfg.grid, cfg.block, dev_args),
                    kwargs={"shared_mem": cfg.shared_bytes},
                    n_repeat=launch.repetitions,
                    n_warmup=launch.warmup,
                    max_duration=launch.max_duration_s,
                    devices=(self.device,),
                )
                times = tuple(float(t) for t in result.gpu_times[0])
            energy1 = self._nvml.energy_mj()
            sm_clock = self._nvml.clock_mhz("SM")
            mem_clock = self._nvml.clock_mhz("MEM")
        energy = None
        if energy0 is not None and energy1 is not None and energy1 > energy0:
            # the counter also covers the warm-up launches; scale to the timed ones
            share = len(times) / (len(times) + launch.warmup)
            energy = (energy1 - energy0) / 1000.0 * share
        attrs = kernel.attributes
        return Measurement(
            launch=launch,
            times_s=times,
            cycles=cycles,
            sm_clock_mhz=sm_clock,
            mem_clock_mhz=mem_clock,
            energy_j=energy,
            kernel_attributes={k: int(attrs[k]) for k in _ATTRIBUTES if k in attrs},
            validated=True,
        )

    def close(self) -> None:
        self._kernels.clear()
        self._nvml.close()
        if self._durations is not None:
            self._durations.close()
