"""Every backend against the shared conformance suite, plus backend-specific behaviour.

The replay recording and the synthetic backend are synthetic (see tests/conftest.py);
the CuPy backend runs only where a GPU is visible (``gpu`` marker).
"""

from __future__ import annotations

import math

import pytest
from conftest import SYNTHETIC_DEVICE, SyntheticBackend

from perfml.measure import (
    CupyBackend,
    DeviceInfo,
    Launch,
    Measurement,
    ReplayBackend,
    ReplayMissError,
    make_backend,
)
from perfml.errors import DeviceUnavailableError, PerfmlError, ResultSchemaError
from perfml.testing.backend_conformance import CHECKS, check_backend

BACKENDS = ["synthetic", "replay", pytest.param("cupy", marks=pytest.mark.gpu)]


def _cupy_launches(backend):
    """Default launches of the real catalog's static families (few, short)."""
    from perfml.kernels.catalog import load_catalog
    from perfml.measure.spec import parse_spec, plan_spec

    catalog = load_catalog()
    names = [n for n, f in catalog.items() if f.kind == "static"][:3]
    spec = parse_spec(
        {"name": "gpu-conformance", "repetitions": 3, "warmup": 1,
         "families": [{"name": n} for n in names]}
    )
    plan = plan_spec(spec, catalog, sms=backend.device_info().sms)
    return [p.launch for p in plan.points][:4]


@pytest.fixture(params=BACKENDS)
def backend_and_launches(request, synthetic_recording):
    if request.param == "synthetic":
        replay = ReplayBackend(synthetic_recording)
        return SyntheticBackend(), replay.launches()[:6]
    if request.param == "replay":
        backend = ReplayBackend(synthetic_recording)
        return backend, backend.launches()[:6]
    backend = CupyBackend()
    return backend, _cupy_launches(backend)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_backend_conformance(backend_and_launches, check, tmp_path):
    backend, launches = backend_and_launches
    check(backend, launches, tmp_path)


def test_check_backend_runs_the_whole_suite(synthetic_recording, tmp_path):
    """The packaged entry point passes a conforming backend and names a broken one's check."""
    backend = ReplayBackend(synthetic_recording)
    check_backend(backend, backend.launches()[:3], tmp_path / "ok")

    class Unvalidated(ReplayBackend):
        def run(self, launch):
            import dataclasses

            return dataclasses.replace(super().run(launch), validated=False)

    broken = Unvalidated(synthetic_recording)
    with pytest.raises(AssertionError, match="check_output_validated_before_timing"):
        check_backend(broken, broken.launches()[:3], tmp_path / "broken")


# -- the data model ------------------------------------------------------------------------
def test_launch_key_ignores_repetitions_and_orders_params():
    a = Launch("f", {"B": 2, "A": 1}, grid=4, block=(32, 2), repetitions=5)
    b = Launch("f", {"A": 1, "B": 2}, grid=(4, 1, 1), block=(32, 2, 1), repetitions=50)
    assert a.key == b.key and a.digest == b.digest
    assert a.grid == (4, 1, 1) and a.block == (32, 2, 1)
    assert a.threads == 256 and a.params_json == '{"A":1,"B":2}'


def test_launch_rejects_bad_dimensions():
    with pytest.raises(ValueError):
        Launch("f", grid=(0,), block=32)
    with pytest.raises(ValueError):
        Launch("f", repetitions=0)


def test_measurement_statistics():
    m = Measurement(Launch("f"), times_s=(1.0, 2.0, 3.0), energy_j=3.0)
    assert (m.min_s, m.median_s, m.mean_s, m.n) == (1.0, 2.0, 2.0, 3)
    assert math.isclose(m.std_s, 1.0) and math.isclose(m.cv, 0.5)
    assert math.isclose(m.power_w, 0.5)
    with pytest.raises(ValueError):
        Measurement(Launch("f"), times_s=())
    with pytest.raises(ValueError):
        Measurement(Launch("f"), times_s=(1.0, -1.0))


def test_device_fingerprint_ignores_clocks_versions_and_uuid():
    other = DeviceInfo(**{**SYNTHETIC_DEVICE.to_dict(), "driver_version": "9", "uuid": "x",
                          "max_sm_clock_mhz": 5.0})
    assert other.fingerprint == SYNTHETIC_DEVICE.fingerprint
    assert DeviceInfo.from_dict(SYNTHETIC_DEVICE.to_dict()) == SYNTHETIC_DEVICE


# -- replay --------------------------------------------------------------------------------
def test_replay_serves_the_recorded_times(synthetic_recording):
    from perfml.measure.store import ResultSet

    frame = ResultSet.open(synthetic_recording).read()
    backend = ReplayBackend(synthetic_recording)
    assert len(backend) == len(frame)
    row = frame.iloc[0]
    launch = next(l for l in backend.launches() if l.key == row["launch_key"])
    m = backend.run(launch)
    assert list(m.times_s) == list(row["times_s"])
    assert m.kernel_attributes["num_regs"] == row["num_regs"]
    assert backend.synthetic is True
    assert backend.device_info().fingerprint == SYNTHETIC_DEVICE.fingerprint
    assert backend.device_info().backend == "replay"


def test_replay_miss_says_what_to_do(synthetic_recording):
    backend = ReplayBackend(synthetic_recording)
    with pytest.raises(ReplayMissError, match="record it on a GPU"):
        backend.run(Launch("divergence", {"GROUP_SIZE": 3, "ITERS": 128}, grid=16, block=128))


def test_replay_of_a_directory_without_results(tmp_path):
    with pytest.raises(ResultSchemaError, match="not a perfml result set"):
        ReplayBackend(tmp_path)


def test_make_backend():
    with pytest.raises(PerfmlError, match="--replay DIR"):
        make_backend("replay")
    with pytest.raises(PerfmlError, match="unknown backend"):
        make_backend("opencl")


# -- cupy ----------------------------------------------------------------------------------
def test_cupy_backend_without_gpu_says_what_to_do():
    from perfml.measure import cupy_device_available

    if cupy_device_available():
        pytest.skip("a GPU is visible here")
    with pytest.raises(DeviceUnavailableError, match="--backend replay"):
        CupyBackend()


@pytest.mark.gpu
def test_cupy_device_info_matches_cupy():
    import cupy

    backend = CupyBackend()
    info = backend.device_info()
    assert info.sms == cupy.cuda.Device(0).attributes["MultiProcessorCount"]
    assert info.cupy_version == cupy.__version__
    assert info.backend == "cupy"
    assert info.l2_cache_bytes == cupy.cuda.Device(0).attributes["L2CacheSize"] > 0
    assert DeviceInfo.from_dict(info.to_dict()) == info  # kept in the manifest


@pytest.mark.gpu
def test_cupy_records_kernel_attributes():
    backend = CupyBackend()
    m = backend.run(_cupy_launches(backend)[0])
    assert m.kernel_attributes["num_regs"] > 0
    assert m.validated


def _shipped_family_names():
    from perfml.kernels.catalog import load_catalog

    return sorted(load_catalog())


@pytest.mark.gpu
@pytest.mark.parametrize("family", _shipped_family_names())
def test_every_shipped_family_runs_and_validates_on_the_gpu(family):
    """Default launch of each shipped kernel: compiled, validated, launched again and timed.

    The backend launches a kernel several times on the same buffers (validation, warm-up,
    repetitions); a kernel that is not idempotent faults on the second launch (the first
    H100 run found latency_global doing so) and poisons the process's CUDA context.
    """
    from perfml.kernels.catalog import load_catalog
    from perfml.measure.spec import parse_spec, plan_spec

    catalog = load_catalog()
    backend = CupyBackend(catalog=catalog)
    spec = parse_spec({"name": "gpu-every-family", "repetitions": 3, "warmup": 1,
                       "families": [{"name": family}]})
    launch = plan_spec(spec, catalog, sms=backend.device_info().sms).points[0].launch
    m = backend.run(launch)
    assert m.validated and m.n == 3
    assert all(t > 0 for t in m.times_s)


# -- the CuPy backend's plumbing, against a stand-in for CuPy --------------------------------
class _FakeKernel:
    """Stands in for cupy.RawKernel: records launches, leaves outputs untouched."""

    attributes = {"num_regs": 40, "shared_size_bytes": 0, "local_size_bytes": 0,
                  "const_size_bytes": 0, "max_threads_per_block": 1024, "ptx_version": 90}

    def __init__(self):
        self.launches = []

    def __call__(self, grid, block, args, *, shared_mem=0):
        self.launches.append((grid, block, len(args), shared_mem))


def _fake_cupy(monkeypatch):
    """A minimal module with the CuPy API the backend uses (no GPU involved)."""
    import sys
    import types

    import numpy as np

    kernel = _FakeKernel()
    compiled = []
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "0.0-fake"
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {
            "name": b"Fake GPU (synthetic)", "major": 9, "minor": 0, "multiProcessorCount": 4,
            "totalGlobalMem": 1 << 30, "clockRate": 1_500_000, "memoryClockRate": 2_000_000,
            "uuid": b"\x01\x02",
        },
        driverGetVersion=lambda: 12040,
        runtimeGetVersion=lambda: 12030,
    )

    class Device:
        pci_bus_id = "0000:00:00.0"

        def __init__(self, i=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return None

        def synchronize(self):
            pass

    class RawModule:
        def __init__(self, code, options=()):
            compiled.append(tuple(options))

        def get_function(self, name):
            return kernel

    class CUDADriverError(RuntimeError):
        """Stands in for cupy_backends.cuda.api.driver.CUDADriverError."""

    class OutOfMemoryError(MemoryError):
        """Stands in for cupy.cuda.memory.OutOfMemoryError (a MemoryError, as CuPy's)."""

    cupy.cuda = types.SimpleNamespace(runtime=runtime, Device=Device,
                                      driver=types.SimpleNamespace(CUDADriverError=CUDADriverError),
                                      memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError))
    cupy.RawModule = RawModule
    cupy.asarray = np.asarray
    cupy.asnumpy = np.asarray
    cupyx = types.ModuleType("cupyx")
    profiler = types.ModuleType("cupyx.profiler")

    def benchmark(func, args=(), kwargs={}, n_repeat=10, *, n_warmup=1, max_duration=None,
                  devices=None, name=None):
        for _ in range(n_warmup + n_repeat):
            func(*args, **kwargs)
        return types.SimpleNamespace(gpu_times=np.full((1, n_repeat), 1e-3))

    profiler.benchmark = benchmark
    cupyx.profiler = profiler
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setitem(sys.modules, "cupyx.profiler", profiler)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: clocks and energy unknown
    return kernel, compiled


def _reference_or_stub(monkeypatch):
    """The kernels' shared argument builder and validator, or a stub while it is missing."""
    import importlib.util
    import sys
    import types

    import numpy as np

    if importlib.util.find_spec("perfml.kernels.reference") is not None:
        return
    stub = types.ModuleType("perfml.kernels.reference")
    stub.build_arguments = lambda fam, params, launch, random_state=0: {
        "out": np.zeros(fam.buffer_elements("out", params, launch), np.float32),
        "zero": np.int32(0)}

    def validate(fam, params, launch, inputs, outputs):
        from perfml.errors import PerfmlError

        if not (outputs["out"] == inputs["out"]).all():
            raise PerfmlError("the never-true store fired")

    stub.validate = validate
    monkeypatch.setitem(sys.modules, "perfml.kernels.reference", stub)


def test_cupy_backend_plumbing_with_a_stand_in(monkeypatch, synthetic_catalog):
    """Compile once per option set, validate before timing, record what CuPy returns."""
    kernel, compiled = _fake_cupy(monkeypatch)
    _reference_or_stub(monkeypatch)
    from perfml.measure.spec import parse_spec, plan_spec

    backend = CupyBackend(catalog=synthetic_catalog)
    info = backend.device_info()
    assert (info.name, info.compute_capability, info.sms) == ("Fake GPU (synthetic)", "9.0", 4)
    assert info.driver_version == "12.4" and info.cuda_runtime_version == "12.3"
    assert info.max_sm_clock_mhz == 1500.0 and info.uuid == "0102"
    spec = parse_spec({"name": "fake", "repetitions": 5, "warmup": 2,
                       "families": [{"name": "syn_fp32"}, {"name": "divergence"}]})
    launches = [p.launch for p in plan_spec(spec, synthetic_catalog, sms=4).points]
    m = backend.run(launches[0])
    assert m.validated and m.n == 5 and m.times_s == (1e-3,) * 5
    assert m.kernel_attributes["num_regs"] == 40 and "ptx_version" not in m.kernel_attributes
    assert m.energy_j is None and m.sm_clock_mhz is None and m.cycles is None
    assert len(kernel.launches) == 1 + 2 + 5  # validation launch, warm-up, timed
    assert kernel.launches[0] == ((16, 1, 1), (256, 1, 1), 2, 0)
    backend.run(launches[0])
    assert len(compiled) == 1  # compiled once, cached by its options
    assert any(o.startswith("-DOP=0") for o in compiled[0])
    for launch in launches[1:]:
        backend.run(launch)
    assert len(compiled) == len(launches)


def test_cupy_backend_refuses_to_time_a_wrong_output(monkeypatch, synthetic_catalog):
    import sys

    import numpy as np

    from perfml.measure import KernelValidationError

    kernel, _ = _fake_cupy(monkeypatch)
    _reference_or_stub(monkeypatch)
    # the never-true store "fired": every output element changed
    monkeypatch.setattr(sys.modules["cupy"], "asnumpy", lambda a: np.asarray(a) + 1)
    backend = CupyBackend(catalog=synthetic_catalog)
    launch = Launch("syn_dram", {"ITERS": 64}, grid=32, block=256)
    with pytest.raises(KernelValidationError, match="not timed"):
        backend.run(launch)
    assert len(kernel.launches) == 1  # only the validation launch ran


def test_cupy_backend_compile_errors_are_typed(monkeypatch, synthetic_catalog):
    import sys

    from perfml.errors import KernelCompileError

    _fake_cupy(monkeypatch)
    _reference_or_stub(monkeypatch)

    class Broken:
        def __init__(self, code, options=()):
            raise RuntimeError("nvrtc: error: identifier 'x' is undefined")

    monkeypatch.setattr(sys.modules["cupy"], "RawModule", Broken)
    backend = CupyBackend(catalog=synthetic_catalog)
    with pytest.raises(KernelCompileError, match="identifier 'x' is undefined"):
        backend.run(Launch("syn_dram", {"ITERS": 64}, grid=32, block=256))


def _second_point_raises(monkeypatch, make_error):
    """A two-point spec on the fake CuPy whose second point's first (validation) launch raises
    ``make_error(cupy)``; the fake is installed with ``monkeypatch``."""
    import sys

    from perfml.measure.spec import parse_spec

    kernel, _ = _fake_cupy(monkeypatch)
    _reference_or_stub(monkeypatch)
    error = make_error(sys.modules["cupy"])
    launches_per_point = 1 + 2 + 5  # validation, warm-up, repetitions
    calls = {"n": 0}
    original = type(kernel).__call__

    def failing(self, grid, block, args, *, shared_mem=0):
        calls["n"] += 1
        if calls["n"] == launches_per_point + 1:
            raise error
        return original(self, grid, block, args, shared_mem=shared_mem)

    monkeypatch.setattr(type(kernel), "__call__", failing)
    return parse_spec({"name": "two-points", "repetitions": 5, "warmup": 2,
                       "families": [{"name": "syn_fp32"}, {"name": "divergence"}]})


def test_a_kernel_fault_is_recorded_and_resume_skips_it(monkeypatch, synthetic_catalog, tmp_path):
    """A CUDA error (the first H100 run: CUDA_ERROR_ILLEGAL_ADDRESS) stops the sweep with a typed error,
    keeps what was measured, records the point, and a resumed run skips it instead of faulting again."""
    from perfml.errors import KernelFaultError
    from perfml.measure.runner import run_sweeps
    from perfml.measure.store import FAULTS_NAME, ResultSet

    spec = _second_point_raises(monkeypatch, lambda cupy: cupy.cuda.driver.CUDADriverError(
        "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"))
    out = tmp_path / "set"
    with pytest.raises(KernelFaultError, match="ILLEGAL_ADDRESS.*faulted in .*faults.jsonl.*--resume") as info:
        run_sweeps([spec], CupyBackend(catalog=synthetic_catalog), out, catalog=synthetic_catalog)
    faulted_key = info.value.launch_key
    rs = ResultSet.open(out)
    assert len(rs.read()) == 1  # the point measured before the fault is kept
    assert list(rs.faulted_points().values())[0]["launch_key"] == faulted_key
    assert (out / FAULTS_NAME).exists()

    _, reports = run_sweeps([spec], CupyBackend(catalog=synthetic_catalog), out, resume=True, catalog=synthetic_catalog)
    (report,) = reports
    assert report.already_done == 1
    assert [k for k, _ in report.failed] == [faulted_key]
    assert "faulted in an earlier run" in report.failed[0][1]
    assert report.measured == report.planned - 2
    assert faulted_key not in set(ResultSet.open(out).read()["launch_key"])


def test_a_point_that_does_not_fit_in_memory_fails_alone(monkeypatch, synthetic_catalog, tmp_path):
    """Out of device (or host) memory at one point: that point is recorded as failed with a
    message saying why, and the sweep goes on (before, the error stopped the whole sweep, and
    a resumed run stopped at the same point again)."""
    from perfml.measure.runner import run_sweeps
    from perfml.measure.store import ResultSet

    spec = _second_point_raises(monkeypatch, lambda cupy: cupy.cuda.memory.OutOfMemoryError(
        "Out of memory allocating 1,717,986,918 bytes (allocated so far: 0 bytes)."))
    out = tmp_path / "set"
    _, (report,) = run_sweeps([spec], CupyBackend(catalog=synthetic_catalog), out, catalog=synthetic_catalog)
    ((key, why),) = report.failed
    assert "do not fit in the free memory" in why and "OutOfMemoryError" in why and "more memory" in why
    assert report.measured == report.planned - 1
    assert key not in set(ResultSet.open(out).read()["launch_key"])


def test_a_faults_file_that_is_not_json_lines_is_a_typed_error(tmp_path, synthetic_recording):
    import shutil

    from perfml.measure.store import FAULTS_NAME, ResultSet

    copy = tmp_path / "set"
    shutil.copytree(synthetic_recording, copy)
    (copy / FAULTS_NAME).write_text('{"point_id": "a"}\nnot json\n')
    with pytest.raises(ResultSchemaError, match="line 2"):
        ResultSet.open(copy).faulted_points()
