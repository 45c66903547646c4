"""The conformance suite every backend passes (cf. scikit-learn's estimator checks).

Each ``check_*`` takes a backend, a few launches the backend can serve and a scratch
directory, and asserts one property of the ``run(launch) -> Measurement`` contract
(an :class:`AssertionError` says which). ``tests/test_backends.py`` runs every check
against every backend (CuPy on a GPU, replay, the synthetic test double); a user's
own backend is checked the same way::

    from perfml.testing.backend_conformance import check_backend
    check_backend(MyBackend(), launches, tmp_path)

or with pytest, one test per check::

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
    def test_my_backend(check, tmp_path):
        check(MyBackend(), launches, tmp_path)

Only the standard library and perfml are needed (no pytest).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from perfml.errors import PerfmlError
from perfml.measure import Backend, DeviceInfo, Launch, Measurement

__all__ = ["CHECKS", "check_backend"]


@contextlib.contextmanager
def _raises(kind: type[BaseException]) -> Iterator[None]:
    try:
        yield
    except kind:
        return
    raise AssertionError(f"expected {kind.__name__} to be raised")

KNOWN_ATTRIBUTES = {
    "num_regs",
    "shared_size_bytes",
    "local_size_bytes",
    "const_size_bytes",
    "max_threads_per_block",
}


def check_is_backend(backend: Backend, launches: list[Launch], tmp_path) -> None:
    assert isinstance(backend, Backend)
    assert isinstance(backend.name, str) and backend.name


def check_device_info(backend: Backend, launches, tmp_path) -> None:
    info = backend.device_info()
    assert isinstance(info, DeviceInfo)
    assert info.name
    assert re.fullmatch(r"\d+\.\d+", info.compute_capability), info.compute_capability
    assert info.sms > 0
    assert set(info.fingerprint) == {"name", "compute_capability", "sms", "total_memory_bytes"}
    assert backend.device_info().fingerprint == info.fingerprint  # stable


def check_run_returns_measurement_of_the_launch(backend: Backend, launches, tmp_path) -> None:
    assert launches, "the conformance suite needs at least one launch"
    for launch in launches:
        m = backend.run(launch)
        assert isinstance(m, Measurement)
        assert m.launch.key == launch.key


def check_statistics_are_consistent(backend: Backend, launches, tmp_path) -> None:
    for launch in launches:
        m = backend.run(launch)
        assert m.n == len(m.times_s) >= 1
        assert all(t > 0 for t in m.times_s)
        assert m.min_s <= m.median_s <= max(m.times_s)
        assert m.min_s <= m.mean_s <= max(m.times_s)
        assert m.std_s >= 0 and m.cv >= 0


def check_output_validated_before_timing(backend: Backend, launches, tmp_path) -> None:
    for launch in launches:
        assert backend.run(launch).validated is True


def check_optional_fields_typed(backend: Backend, launches, tmp_path) -> None:
    for launch in launches:
        m = backend.run(launch)
        assert m.cycles is None or (isinstance(m.cycles, int) and m.cycles >= 0)
        assert m.sm_clock_mhz is None or m.sm_clock_mhz > 0
        assert m.energy_j is None or m.energy_j >= 0
        assert set(m.kernel_attributes) <= KNOWN_ATTRIBUTES
        assert all(isinstance(v, int) and v >= 0 for v in m.kernel_attributes.values())


def check_measurement_is_immutable(backend: Backend, launches, tmp_path) -> None:
    m = backend.run(launches[0])
    with _raises(dataclasses.FrozenInstanceError):
        m.times_s = (1.0,)  # type: ignore[misc]
    with _raises(TypeError):
        m.kernel_attributes["num_regs"] = 1  # type: ignore[index]


def check_unknown_family_is_a_perfml_error(backend: Backend, launches, tmp_path) -> None:
    with _raises(PerfmlError):
        backend.run(Launch(family="no_such_family_anywhere", grid=1, block=32))


def check_context_manager(backend: Backend, launches, tmp_path) -> None:
    with backend as b:
        assert b is backend


def check_runs_through_the_sweep_runner(backend: Backend, launches, tmp_path) -> None:
    """Everything above the seam works on this backend: rows land in a result set."""
    from perfml.measure.store import ResultSet
    from perfml.measure.runner import run_plans
    from perfml.measure.spec import PlannedPoint, SweepPlan, SweepSpec, FamilyRun

    spec = SweepSpec(name="conformance", families=(FamilyRun(name="any"),), time_budget_s=600)
    points = tuple(PlannedPoint(spec="conformance", launch=l) for l in launches)
    plan = SweepPlan(spec=spec, points=points, estimated_s=0.0)
    rs = ResultSet.create(
        tmp_path / "conformance-results",
        backend.device_info(),
        synthetic=bool(getattr(backend, "synthetic", False)),
    )
    (report,) = run_plans([plan], backend, rs)
    assert report.measured == len(launches) and report.complete
    frame = rs.read()
    assert len(frame) == len(launches)
    assert set(frame["launch_key"]) == {l.key for l in launches}


CHECKS = [
    check_is_backend,
    check_device_info,
    check_run_returns_measurement_of_the_launch,
    check_statistics_are_consistent,
    check_output_validated_before_timing,
    check_optional_fields_typed,
    check_measurement_is_immutable,
    check_unknown_family_is_a_perfml_error,
    check_context_manager,
    check_runs_through_the_sweep_runner,
]


def check_backend(
    backend: Backend, launches: Sequence[Launch], tmp_path: str | os.PathLike[str]
) -> None:
    """Run every check of :data:`CHECKS` on ``backend``; the first failure raises.

    Parameters
    ----------
    backend : Backend
        The backend under test.
    launches : sequence of Launch
        A few launches the backend can serve (at least one).
    tmp_path : path-like
        An empty scratch directory (a result set is written under it).

    Raises
    ------
    AssertionError
        Naming the check that failed.
    """
    for check in CHECKS:
        scratch = Path(tmp_path) / check.__name__
        scratch.mkdir(parents=True, exist_ok=True)
        try:
            check(backend, list(launches), scratch)
        except AssertionError as exc:
            raise AssertionError(f"{check.__name__}: {exc}") from exc
