"""Every backend against the shared conformance suite, plus backend-specific behaviour.

The replay recording and the synthetic backend are synthetic (see tests/conftest.py);
the CuPy backend runs only where a GPU is visible (``gpu`` marker).
"""

from __future__ import annotations

import math

import pytest
from backend_conformance import CHECKS
from conftest import SYNTHETIC_DEVICE, SyntheticBackend

from perfml.backends import (
    CupyBackend,
    DeviceInfo,
    Launch,
    Measurement,
    ReplayBackend,
    ReplayMissError,
    make_backend,
)
from perfml.errors import DeviceUnavailableError, PerfmlError, ResultSchemaError

BACKENDS = ["synthetic", "replay", pytest.param("cupy", marks=pytest.mark.gpu)]


def _cupy_launches(backend):
    """Default launches of the real catalog's static families (few, short)."""
    from perfml.kernels.catalog import load_catalog
    from perfml.sweeps.spec import parse_spec, plan_spec

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
    from perfml.sweeps.results import ResultSet

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
    from perfml.backends import cupy_device_available

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


@pytest.mark.gpu
def test_cupy_records_kernel_attributes():
    backend = CupyBackend()
    m = backend.run(_cupy_launches(backend)[0])
    assert m.kernel_attributes["num_regs"] > 0
    assert m.validated
