"""How a sweep times a launch: CUDA events, or kernel durations from CUPTI (perfml.measure.kernel_timing).

No GPU here: CUPTI is stood in for by a fake ``cupti`` module that delivers activity
records as the real one does (in buffers, through the registered callback, on a flush).
The GPU tests at the end run the real thing where a GPU and cupti-python are present.
"""

from __future__ import annotations

import json
import sys
import types

import pytest
from conftest import SYNTHETIC_DEVICE, DurationTimedBackend, SyntheticBackend

from perfml.errors import (
    DeviceUnavailableError,
    InvalidValueError,
    MissingKernelRecordsError,
    MixedTimingError,
    PerfmlError,
    ResultSchemaError,
)
from perfml.measure import ReplayBackend, ResultSet, make_backend
from perfml.measure.kernel_timing import DEFAULT_TIMING, TIMINGS, KernelDurationTimer


class FakeCupti:
    """Stands in for ``cupti.cupti``: a launch leaves a kernel record; a flush hands the records to the callback."""

    class ActivityKind:
        CONCURRENT_KERNEL = 10
        MEMCPY = 1

    def __init__(self, durations_ns=(1000,)):
        self.durations_ns = list(durations_ns)
        self.pending: list = []
        self.completed = None
        self.enabled: set = set()
        self.clock_ns = 0
        self.drop_every = 0  # deliver no record for every n-th launch (a lost record)
        self._launches = 0

    def activity_register_callbacks(self, requested, completed):
        assert self.completed is None, "callbacks are registered once per process"
        size, limit = requested()
        assert size > 0 and limit == 0
        self.completed = completed

    def activity_enable(self, kind):
        self.enabled.add(kind)

    def activity_disable(self, kind):
        self.enabled.discard(kind)

    def activity_flush_all(self, flag):
        if self.pending:
            self.completed(list(self.pending))
            self.pending.clear()

    def launch(self, name, kind=None):
        """One kernel on the 'GPU': a record of its start and end, if kernel activity is on."""
        self._launches += 1
        d = self.durations_ns[(self._launches - 1) % len(self.durations_ns)]
        start = self.clock_ns + 500
        self.clock_ns = start + d
        if self.drop_every and self._launches % self.drop_every == 0:
            return
        if self.ActivityKind.CONCURRENT_KERNEL in self.enabled:
            self.pending.append(types.SimpleNamespace(kind=kind or self.ActivityKind.CONCURRENT_KERNEL,
                                                      name=name, start=start, end=start + d))


@pytest.fixture
def fake_cupti():
    return FakeCupti(durations_ns=(2000, 3000, 4000))


def test_the_timed_launches_durations_are_returned_and_the_warm_ups_are_not(fake_cupti):
    timer = KernelDurationTimer(fake_cupti)
    got = timer.time(lambda: fake_cupti.launch("vectorAdd"), lambda: None, "vectorAdd",
                     n_repeat=4, n_warmup=2, max_duration_s=None)
    # launches 1-2 are the warm-ups (2000, 3000 ns); 3-6 are timed: 4000, 2000, 3000, 4000 ns, in launch order
    assert got == pytest.approx((4e-6, 2e-6, 3e-6, 4e-6))
    timer.close()
    assert fake_cupti.ActivityKind.CONCURRENT_KERNEL not in fake_cupti.enabled


def test_spans_are_the_records_raw_integer_start_and_end_in_launch_order(fake_cupti):
    """The raw GPU timestamps (ns), unrounded, for a study of the clock; durations are their differences."""
    timer = KernelDurationTimer(fake_cupti)
    timer.discard()
    for _ in range(3):
        fake_cupti.launch("spin")
    spans = timer.spans("spin", 3)
    assert spans == ((500, 2500), (3000, 6000), (6500, 10500))
    assert all(isinstance(v, int) for span in spans for v in span)
    for _ in range(3):
        fake_cupti.launch("spin")
    assert timer.durations("spin", 3) == pytest.approx((2e-6, 3e-6, 4e-6))


def test_kernel_activity_stays_on_until_the_last_timer_of_the_process_closes(fake_cupti):
    first, second = KernelDurationTimer(fake_cupti), KernelDurationTimer(fake_cupti)  # callbacks registered once
    first.close()
    assert fake_cupti.ActivityKind.CONCURRENT_KERNEL in fake_cupti.enabled
    assert second.time(lambda: fake_cupti.launch("k"), lambda: None, "k", n_repeat=2, n_warmup=0,
                       max_duration_s=None) == pytest.approx((2e-6, 3e-6))
    second.close()
    second.close()  # closing twice is harmless
    assert fake_cupti.ActivityKind.CONCURRENT_KERNEL not in fake_cupti.enabled


def test_records_of_other_kernels_are_left_out_and_mangled_names_match(fake_cupti):
    timer = KernelDurationTimer(fake_cupti)
    timer.discard()
    fake_cupti.launch("_Z9vectorAddPKfS0_Pfi")  # C++ linkage: mangled
    fake_cupti.launch("vectorAddx")  # another kernel whose name starts alike
    fake_cupti.launch("_Z10vectorAddxPf")
    fake_cupti.launch("vectorAdd", kind=fake_cupti.ActivityKind.MEMCPY)  # not a kernel record
    assert len(timer.durations("vectorAdd", 1)) == 1


def test_fewer_records_than_launches_is_an_error_not_a_shorter_sample(fake_cupti):
    timer = KernelDurationTimer(fake_cupti)
    fake_cupti.drop_every = 3
    with pytest.raises(MissingKernelRecordsError, match=r"2 kernel record\(s\) of dotProd for 3 timed launch"):
        timer.time(lambda: fake_cupti.launch("dotProd"), lambda: None, "dotProd",
                   n_repeat=3, n_warmup=0, max_duration_s=None)


def test_the_wall_time_cap_stops_the_repetitions_as_cupy_benchmark_does(fake_cupti):
    timer = KernelDurationTimer(fake_cupti)
    ticks = iter(range(100))
    got = timer.time(lambda: fake_cupti.launch("k"), lambda: None, "k", n_repeat=50, n_warmup=1,
                     max_duration_s=3.0, clock=lambda: float(next(ticks)))
    assert len(got) == 3  # the clock passes 3 s after the third timed launch


def test_without_cupti_python_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # import cupti -> ImportError
    with pytest.raises(DeviceUnavailableError, match=r"pip install cupti-python.*--timing cuda-events"):
        KernelDurationTimer()


# -- the result set records its timing --------------------------------------------------------
def test_a_set_names_its_timing_and_a_set_without_one_was_timed_with_events(tmp_path):
    rs = ResultSet.create(tmp_path / "dur", SYNTHETIC_DEVICE, synthetic=True, timing="kernel-duration")
    assert json.loads((tmp_path / "dur" / "manifest.json").read_text())["timing"] == "kernel-duration"
    assert ResultSet.open(rs.path).timing == "kernel-duration"
    old = ResultSet.create(tmp_path / "old", SYNTHETIC_DEVICE, synthetic=True)
    manifest = json.loads((old.path / "manifest.json").read_text())
    del manifest["timing"]  # a set recorded before the choice existed
    (old.path / "manifest.json").write_text(json.dumps(manifest))
    assert ResultSet.open(old.path).timing == DEFAULT_TIMING == "cuda-events"
    manifest["timing"] = "stopwatch"
    (old.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ResultSchemaError, match="timing = 'stopwatch', expected one of 'cuda-events', 'kernel-duration'"):
        ResultSet.open(old.path)
    with pytest.raises(InvalidValueError, match="--timing 'stopwatch' is not a timing perfml knows"):
        ResultSet.create(tmp_path / "new", SYNTHETIC_DEVICE, timing="stopwatch")
    manifest["timing"] = ["kernel-duration"]  # not text: refused, not a TypeError
    (old.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ResultSchemaError, match=r"timing = \['kernel-duration'\], expected one of"):
        ResultSet.open(old.path)
    assert set(TIMINGS) == {"cuda-events", "kernel-duration"}


def test_a_sweep_records_its_backends_timing_and_a_resume_with_another_is_refused(tmp_path, synthetic_catalog):
    from conftest import SYNTHETIC_SPEC

    from perfml.measure.runner import run_sweeps
    from perfml.measure.spec import parse_spec

    spec = parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")
    out = tmp_path / "set"
    rs, _ = run_sweeps([spec], DurationTimedBackend(), out, catalog=synthetic_catalog)
    assert rs.timing == "kernel-duration"
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(MixedTimingError, match=r"timed with kernel-duration .* this sweep times with cuda-events; "
                                                r"one set holds one timing: resume it with --timing kernel-duration"):
        run_sweeps([spec], SyntheticBackend(), out, resume=True, catalog=synthetic_catalog)
    assert sorted(p.name for p in out.iterdir()) == before  # nothing written
    # a replay serves the recording's timing, and refuses to call it another
    replay = ReplayBackend(out)
    assert replay.timing == "kernel-duration"
    copy, _ = run_sweeps([spec], replay, tmp_path / "copy", catalog=synthetic_catalog)
    assert copy.timing == "kernel-duration"
    with pytest.raises(PerfmlError, match="was timed with kernel-duration, and a replay serves its recorded times"):
        make_backend("replay", replay=str(out), timing="cuda-events")
    assert make_backend("replay", replay=str(out), timing="kernel-duration").timing == "kernel-duration"


class _LosesOneRecord(DurationTimedBackend):
    """CUPTI lost the records of the third point (a stand-in: no GPU here)."""

    def run(self, launch):
        if self.calls == 2:
            self.calls += 1
            raise MissingKernelRecordsError("CUPTI returned 2 kernel record(s) of syn for 3 timed launch(es)")
        return super().run(launch)


def test_a_point_whose_kernel_records_are_missing_fails_alone_and_a_resume_times_it(tmp_path, synthetic_catalog):
    from conftest import SYNTHETIC_SPEC

    from perfml.measure.runner import run_sweeps
    from perfml.measure.spec import parse_spec

    spec = parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")
    out = tmp_path / "set"
    rs, (report,) = run_sweeps([spec], _LosesOneRecord(), out, catalog=synthetic_catalog)
    assert len(report.failed) == 1 and "kernel record(s)" in report.failed[0][1]
    assert report.measured == report.planned - 1 == len(rs.read())
    _, (again,) = run_sweeps([spec], DurationTimedBackend(), out, resume=True, catalog=synthetic_catalog)
    assert (again.measured, again.already_done, again.failed) == (1, report.planned - 1, ())


def test_the_rows_of_a_duration_timed_set_say_so_and_its_launch_floor_matches_nvprofs(tmp_path, synthetic_catalog):
    """The calibration reads the rows' source: a duration-timed sweep's floor is a kernel duration, the
    timing of the nine apps' nvprof training floors (no warning); an events-timed one's is not."""
    from conftest import SYNTHETIC_SPEC

    from perfml.characterize.calibrate import CUPTI_DURATION_TIMING, launch_timing, timing_kind
    from perfml.measure.runner import run_sweeps
    from perfml.measure.runtime_rows import sweep_runtime_rows
    from perfml.measure.spec import parse_spec

    spec = parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")
    rs, _ = run_sweeps([spec], DurationTimedBackend(), tmp_path / "set", catalog=synthetic_catalog)
    rows = sweep_runtime_rows(rs, board="H100-SXM")
    assert set(rows["source"]) == {"sweep-kernel-duration-synthetic"}
    label = launch_timing("runtimes", rows["source"])
    assert label == CUPTI_DURATION_TIMING
    assert timing_kind(label) == timing_kind(launch_timing("runtimes", rows["source"].map(lambda _: "gpuperfpredict-nca")))
    events = launch_timing("runtimes", rows["source"].map(lambda _: "sweep"))
    assert timing_kind(events) != timing_kind(label)


def test_an_unknown_timing_on_the_command_line_exits_2_naming_the_choices(tmp_path, synthetic_recording, capsys):
    from perfml.cli import main

    status = main(["sweep", "run", "--backend", "replay", "--replay", str(synthetic_recording), "--out",
                   str(tmp_path / "o"), "--timing", "wallclock"])
    assert status == 2
    assert "--timing 'wallclock' is not a timing perfml knows; expected one of cuda-events, kernel-duration" in (
        capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


# -- on a GPU ---------------------------------------------------------------------------------
@pytest.mark.gpu
def test_kernel_durations_on_the_gpu_are_shorter_than_the_event_times_of_the_same_launch():
    """The same vectorAdd launch timed both ways on one device: each duration is positive and the
    median duration is below the median time between events, which adds the launch overhead."""
    pytest.importorskip("cupti", reason="--timing kernel-duration needs cupti-python")
    from perfml.measure import CupyBackend, Launch

    launch = Launch("vectorAdd", {"N": 1 << 16, "TPB": 256}, grid=256, block=256, repetitions=20, warmup=3)
    events = CupyBackend().run(launch)
    durations = CupyBackend(timing="kernel-duration").run(launch)
    assert durations.n == 20 and min(durations.times_s) > 0
    assert durations.median_s < events.median_s


@pytest.mark.gpu
def test_a_duration_timed_sweep_on_the_gpu_writes_a_set_that_says_so(tmp_path):
    pytest.importorskip("cupti", reason="--timing kernel-duration needs cupti-python")
    from perfml.cli import main

    spec = tmp_path / "cal.toml"
    spec.write_text('version = 1\nname = "cal-small"\nrepetitions = 5\nwarmup = 1\n[[families]]\nname = "vectorAdd"\n'
                    'params = { N = [1024, 1048576], TPB = [256] }\n')
    out = tmp_path / "cal"
    assert main(["sweep", "run", str(spec), "--out", str(out), "--timing", "kernel-duration"]) == 0
    assert ResultSet.open(out).timing == "kernel-duration"
    assert len(ResultSet.open(out).read()) == 2
