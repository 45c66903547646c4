"""Shared fixtures: GPU skipping, a synthetic kernel catalog, a synthetic backend.

Everything generated here is synthetic and says so: the catalog's families are named
``syn_*`` (or the dynamic family names the characterization expects) and described as
synthetic, the backend's device is "Synthetic GPU (synthetic data)", its rows carry
``synthetic=True`` and the recordings live in directories named ``*synthetic*``.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# -- Hypothesis profiles -------------------------------------------------------------------
# "ci" (the default): derandomized, so every run of the suite draws the same examples and a
# failure is reproducible; "dev": random exploration with more examples, for hunting bugs:
#   HYPOTHESIS_PROFILE=dev python -m pytest tests/test_hongkim.py
# A failure prints a reproduction blob (@reproduce_failure) in both.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", derandomize=False, deadline=None, print_blob=True,
                          max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from perfml.measure import Backend, DeviceInfo, Launch, Measurement


# -- GPU tests -----------------------------------------------------------------------------
@functools.cache
def _gpu_available() -> bool:
    from perfml.measure import cupy_device_available

    return cupy_device_available()


def pytest_addoption(parser):
    parser.addoption(
        "--without-data-home", action="store_true", default=False,
        help="skip the test modules that read the shared datasets (../shared/datasets) when none is "
             "found, e.g. `pytest -m gpu --without-data-home` on a GPU machine; without it a missing "
             "data home is a collection error, so a run cannot lose those modules silently")


_SKIP_WITHOUT_DATA_HOME = False


def pytest_configure(config):
    global _SKIP_WITHOUT_DATA_HOME
    _SKIP_WITHOUT_DATA_HOME = config.getoption("--without-data-home")


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``gpu`` when CuPy is missing or sees no device."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU visible to CuPy (marked `gpu`)")
    for item in gpu_items:
        item.add_marker(skip)


# -- a synthetic kernel catalog ------------------------------------------------------------
_CU = 'extern "C" __global__ void {name}(float* out, int zero) {{ /* synthetic test kernel */ }}\n'

_COMMON = """
schema_version = 1
name = "{name}"
kind = "{kind}"
source = "{name}.cu"
entry = "{name}"
component = "{component}"
target = "{target}"
description = "SYNTHETIC test family: never compiled, served by the synthetic backend"
archs = ["sm_90"]

[[args]]
name = "out"
kind = "buffer"
dtype = "float32"
elements = "threads"
init = "zeros"
output = true

[[args]]
name = "zero"
kind = "scalar"
dtype = "int32"
value = 0

[validation]
kind = "untouched"
buffer = "out"
"""

SYNTHETIC_FAMILIES = {
    "syn_fp32": ("static", "FPU", "FFMA", """
[params]
OP = 2
ITERS = 256

[variants.add]
params = { OP = 0 }
target = "FADD"

[variants.fma]
params = { OP = 2 }
target = "FFMA"

[work]
target_instructions = "ITERS"
flops = "ITERS * (1 + (OP == 2))"
bytes = 0

[launch]
threads_per_block = 256
blocks_per_sm = 4
"""),
    "syn_dram": ("static", "DRAM", "LDG", """
[params]
ITERS = 64

[work]
target_instructions = "ITERS"
flops = 0
bytes = "ITERS * 16"

[launch]
threads_per_block = 256
blocks_per_sm = 8
"""),
    "divergence": ("dynamic", "SM scheduler", "FFMA", """
[params]
GROUP_SIZE = 32
ITERS = 128

[sweep]
parameter = "GROUP_SIZE"
values = [1, 2, 4, 8, 16, 32]

[work]
target_instructions = "ITERS"
flops = "2 * ITERS"
bytes = 0

[launch]
threads_per_block = 128
blocks_per_sm = 4
"""),
    "bank_conflicts": ("dynamic", "Shared memory", "LDS", """
[params]
WAYS = 1
ITERS = 128

[sweep]
parameter = "WAYS"
values = [1, 2, 4, 8, 16, 32]

[work]
target_instructions = "ITERS"
flops = 0
bytes = "ITERS * 4"

[launch]
threads_per_block = 128
blocks_per_sm = 4
"""),
    "occupancy": ("dynamic", "Streaming Multi-processor", "FFMA", """
[params]
OP = 0
WARPS = 8
SM_PCT = 100
ITERS = 64

[variants.alu]
params = { OP = 0 }
target = "FFMA"

[variants.mem]
params = { OP = 1 }
target = "LDG"

[sweep.grid]
WARPS = [1, 2, 4, 8]
SM_PCT = [50, 100]

[work]
target_instructions = "ITERS"
flops = "ITERS * 2 * (OP == 0)"
bytes = "ITERS * 4 * (OP == 1)"

[launch]
threads_per_block = "WARPS * 32"
blocks = "max(1, sms * SM_PCT // 100)"
"""),
    "syn_latency": ("latency", "Memory latency", "LDG", """
[params]
HOPS = 64
REPS = 4

[work]
target_instructions = "HOPS * REPS"
hops = "HOPS * REPS"

[launch]
threads_per_block = 1
blocks = 1
"""),
    "syn_noisy": ("static", "ALU", "IADD3", """
[params]
ITERS = 16

[work]
target_instructions = "ITERS"
flops = 0
bytes = 0

[launch]
threads_per_block = 64
blocks_per_sm = 1
"""),
}


def write_synthetic_catalog(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, (kind, component, target, body) in SYNTHETIC_FAMILIES.items():
        (root / f"{name}.cu").write_text(_CU.format(name=name))
        header = _COMMON.format(name=name, kind=kind, component=component, target=target)
        (root / f"{name}.toml").write_text(textwrap.dedent(header) + textwrap.dedent(body))
    return root


@pytest.fixture(scope="session")
def synthetic_catalog(tmp_path_factory):
    from perfml.kernels.catalog import load_catalog

    return load_catalog(write_synthetic_catalog(tmp_path_factory.mktemp("synthetic_kernels")))


SYNTHETIC_SPEC = {
    "version": 1,
    "name": "synthetic-suite",
    "description": "SYNTHETIC spec for tests",
    "repetitions": 8,
    "warmup": 1,
    "time_budget_s": 60,
    "cv_threshold": 0.05,
    "families": [
        {"name": "syn_fp32"},
        {"name": "syn_dram", "params": {"ITERS": [32, 64]}},
        {"name": "divergence"},
        {"name": "bank_conflicts"},
        {"name": "occupancy"},
        {"name": "syn_latency"},
        {"name": "syn_noisy"},
    ],
}


@pytest.fixture
def synthetic_spec():
    from perfml.measure.spec import parse_spec

    return parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")


# -- a synthetic backend -------------------------------------------------------------------
SYNTHETIC_DEVICE = DeviceInfo(
    name="Synthetic GPU (synthetic data)",
    compute_capability="9.0",
    sms=4,
    total_memory_bytes=8 << 30,
    max_sm_clock_mhz=1000.0,
    max_mem_clock_mhz=2000.0,
    driver_version="0.0-synthetic",
    cuda_runtime_version="0.0",
    cupy_version="synthetic",
    uuid="synthetic-0",
    backend="synthetic",
)


class SyntheticBackend(Backend):
    """Deterministic made-up timings with a simple model; ``synthetic = True``.

    Time of a launch = work / rate, where divergence costs 32 / GROUP_SIZE, bank
    conflicts cost WAYS, ``occupancy`` reaches full rate from a quarter of its largest
    load (WARPS x SM_PCT) on, ``syn_latency`` reports 500 cycles per hop, and ``syn_noisy``
    gets a 30 % spread (to trip the noise flag); every other point gets a 0.5 %
    deterministic spread.
    """

    name = "synthetic"
    synthetic = True

    def __init__(self, device: DeviceInfo = SYNTHETIC_DEVICE) -> None:
        self._device = device
        self.calls = 0

    def device_info(self) -> DeviceInfo:
        return self._device

    def run(self, launch: Launch) -> Measurement:
        from perfml.errors import PerfmlError

        if launch.family not in SYNTHETIC_FAMILIES:
            raise PerfmlError(f"synthetic backend has no family {launch.family!r}")
        self.calls += 1
        p = launch.params
        ops = launch.threads * p.get("ITERS", 1)
        base = ops / 1e12 + 2e-6
        if launch.family == "divergence":
            base *= 32 / p["GROUP_SIZE"]
        if launch.family == "bank_conflicts":
            base *= p["WAYS"]
        if launch.family == "occupancy":  # throughput saturates at a quarter of the largest load
            x = p["WARPS"] * p["SM_PCT"] / 800
            base = ops / (1e12 * min(1.0, 4 * x))
        seed = int(hashlib.sha256(launch.key.encode()).hexdigest()[:8], 16)
        rng = np.random.default_rng(seed)
        spread = 0.3 if launch.family == "syn_noisy" else 0.005
        times = base * (1 + spread * rng.standard_normal(launch.repetitions))
        times = np.clip(times, base * 0.1, None)
        cycles = int(base * 1e9)
        if launch.family == "syn_latency":
            cycles = 500 * p["HOPS"] * p["REPS"]
        return Measurement(
            launch=launch,
            times_s=tuple(times),
            cycles=cycles,
            sm_clock_mhz=1000.0,
            mem_clock_mhz=2000.0,
            energy_j=None if launch.family == "syn_noisy" else 50.0 * float(times.sum()),
            kernel_attributes={"num_regs": 32, "shared_size_bytes": 0, "local_size_bytes": 0,
                               "const_size_bytes": 0, "max_threads_per_block": 1024},
            validated=True,
        )


class DurationTimedBackend(SyntheticBackend):
    """The synthetic backend, its launches said to be timed by kernel durations (``perfml sweep run --timing
    kernel-duration``): what a result set records of its timing, with no GPU."""

    timing = "kernel-duration"


class CrashAfter(Backend):
    """Wraps a backend and raises ``RuntimeError`` on the (k+1)-th run: a simulated crash."""

    def __init__(self, inner: Backend, k: int) -> None:
        self.inner, self.k, self.calls = inner, k, 0
        self.name = inner.name
        self.synthetic = getattr(inner, "synthetic", False)

    def device_info(self) -> DeviceInfo:
        return self.inner.device_info()

    def run(self, launch: Launch) -> Measurement:
        if self.calls >= self.k:
            raise RuntimeError(f"simulated crash after {self.k} points")
        self.calls += 1
        return self.inner.run(launch)


@pytest.fixture
def synthetic_backend():
    return SyntheticBackend()


@pytest.fixture(scope="session")
def synthetic_recording(tmp_path_factory, synthetic_catalog):
    """A result set recorded from the synthetic backend: ``synthetic-recording/``."""
    from perfml.measure.runner import run_sweeps
    from perfml.measure.spec import parse_spec

    out = tmp_path_factory.mktemp("rec") / "synthetic-recording"
    spec = parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")
    run_sweeps([spec], SyntheticBackend(), out, catalog=synthetic_catalog, flush_every=5)
    return out


def finite(value) -> bool:
    return value is not None and math.isfinite(value)


# -- the data home, resolved once (as the CLI does) ----------------------------------------
@functools.cache
def shared_data_home():
    """The shared datasets as one :class:`perfml.datasets.DataHome` (found like the CLI finds it).

    Tests are entry points: they resolve the data home here, once, and pass it down
    (library code given ``data_home=None`` raises). Module-level test data use this
    function; test functions use the ``data_home`` fixture.
    """
    from perfml.datasets import DataHome, find_data_home
    from perfml.errors import DataHomeError

    try:
        return DataHome(find_data_home())
    except DataHomeError as err:
        if _SKIP_WITHOUT_DATA_HOME:  # opt-in only: by default the collection error stands
            pytest.skip(f"no data home (--without-data-home): {err}", allow_module_level=True)
        raise DataHomeError(f"{err}; or run pytest with --without-data-home to skip the tests that need it") from err


def data_home_path():
    """The shared datasets' directory, or None only under ``--without-data-home``.

    For tests that skip themselves (``needs_data_home``) instead of the whole module: as
    :func:`shared_data_home`, a missing data home is an error unless the option was given.
    """
    try:
        return shared_data_home().path
    except pytest.skip.Exception:
        return None


def experiment_script(name: str):
    """``experiments/<name>.py`` imported as a module (the scripts are not a package), once per call."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs_data_home():
    """A ``skipif`` marker for tests that read the shared datasets (skipped only under ``--without-data-home``)."""
    return pytest.mark.skipif(data_home_path() is None, reason="no data home (--without-data-home)")


def nca_every_third_size(boards, apps):
    """The gpuperfpredict-nca runtimes of ``boards`` x ``apps``, every 3rd input size (quick learned-model tests)."""
    from perfml.evaluation.closed_form import describable_runtimes

    rt = describable_runtimes(source="gpuperfpredict-nca", data_home=shared_data_home())
    rt = rt[rt.board.isin(boards) & rt.app_id.isin(apps)]
    keep = rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 3 == 0
    return rt[keep].reset_index(drop=True)


def vectoradd_at_a_measured_and_an_unmeasured_block(rows, board="GTX-970"):
    """Two query rows (text cells, as read from a file) of vectorAdd at a size of ``rows``: block 256 (measured) and 128."""
    import pandas as pd

    n = int(rows[(rows.app_id == "vectorAdd") & (rows.block_x == 256)].iloc[0].input_size)
    base = {"board": board, "app_id": "vectorAdd", "input_size": str(n), "block_y": "1", "grid_y": "1"}
    return pd.DataFrame([{**base, "block_x": "256", "grid_x": str(n // 256)},
                         {**base, "block_x": "128", "grid_x": str(n // 128)}])


@pytest.fixture(scope="session")
def data_home():
    """The shared datasets as a :class:`perfml.datasets.DataHome` (found like the CLI finds it)."""
    return shared_data_home()


@pytest.fixture(scope="module")
def monkeypatch_module():
    """A monkeypatch for module-scoped fixtures (e.g. faster learner defaults for one test module)."""
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(scope="session")
def three_board_train(tmp_path_factory):
    """``perfml train`` of the nine apps' NCA runs of three boards (GTX-680, GTX-970, Tesla-K20: two
    architectures), described sub-model only, small xgboost: (bundle path, what it printed).

    Trained once for the tests of what ``perfml train`` records and prints.
    """
    import contextlib
    import io

    from perfml.cli import main
    from perfml.learned import regressors

    home = shared_data_home()
    out = tmp_path_factory.mktemp("three_board_train") / "m"
    left_out = ["GTX-750", "GTX-980", "GTX-Titan", "GTX-Titan-Black", "Quadro-K5200", "Tesla-K40"]
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
        mp.setitem(regressors._DEFAULTS, "xgboost", {**regressors._DEFAULTS["xgboost"], "n_estimators": 20, "max_depth": 3})
        code = main(["--quiet", "train", "--out", str(out), "--corpus", "described", "--source", "gpuperfpredict-nca",
                     "--no-calibrated-tier", "--n-jobs", "1", "--data-home", str(home.path),
                     *[a for b in left_out for a in ("--exclude-board", b)]])
    assert code == 0, printed.getvalue()
    return out, printed.getvalue()
