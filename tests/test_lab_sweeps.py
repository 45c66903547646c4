"""Sweeps from many hosts through a real MLflow tracking server (issue 13).

No GPU: two "hosts" replay synthetic recordings (tests/conftest.py, every row
``synthetic=True``) of a device with the same name but different fingerprints (8 and
16 GiB of memory); each logs its result set with ``perfml sweep run --tracking-uri``,
and ``perfml sweep pull`` brings each back, apart, for replay.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from conftest import SYNTHETIC_DEVICE, SYNTHETIC_SPEC, DurationTimedBackend, SyntheticBackend
from lab_fixtures import mlflow_server, postgres  # noqa: F401 - fixtures
from perfml.lab.sweeps import fingerprint_id
from perfml.measure.store import ResultSet

pytestmark = pytest.mark.slow

BOARD = SYNTHETIC_DEVICE.name
HOSTS = {"a": SYNTHETIC_DEVICE,
         "b": dataclasses.replace(SYNTHETIC_DEVICE, total_memory_bytes=16 << 30, uuid="synthetic-1")}


def _spec_file(path):
    lines = [f'name = "{SYNTHETIC_SPEC["name"]}"', "repetitions = 8", "warmup = 1", "time_budget_s = 60",
             "cv_threshold = 0.05"]
    for fam in SYNTHETIC_SPEC["families"]:
        lines += ["", "[[families]]", f'name = "{fam["name"]}"']
        if "params" in fam:
            lines.append("params = { " + ", ".join(f"{k} = {v}" for k, v in fam["params"].items()) + " }")
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(path):
    frame = ResultSet.open(path).read()
    return frame.sort_values("point_id").reset_index(drop=True)[["point_id", "time_median_s", "time_min_s"]]


def test_two_hosts_log_their_sweeps_and_each_pulls_back_apart(mlflow_server, synthetic_catalog, tmp_path,
                                                              monkeypatch, capsys):
    from perfml.cli import main
    from perfml.measure.runner import run_sweeps
    from perfml.measure.spec import parse_spec

    monkeypatch.setenv("PERFML_KERNELS_DIR", str(next(iter(synthetic_catalog.values())).sidecar_path.parent))
    spec = _spec_file(tmp_path / "synthetic_suite.toml")
    logged = {}
    for host, device in HOSTS.items():
        recording = tmp_path / f"synthetic-recording-{host}"
        run_sweeps([parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")], SyntheticBackend(device), recording,
                   catalog=synthetic_catalog, flush_every=5)
        measured = tmp_path / f"synthetic-host-{host}"
        assert main(["sweep", "run", str(spec), "--backend", "replay", "--replay", str(recording), "--out", str(measured),
                     "--tracking-uri", mlflow_server.uri]) == 0
        logged[host] = measured
    assert fingerprint_id(HOSTS["a"].fingerprint) != fingerprint_id(HOSTS["b"].fingerprint)
    capsys.readouterr()

    # two fingerprints for one board: pull refuses to choose, and names both
    refused = tmp_path / "synthetic-pulled-any"
    assert main(["sweep", "pull", "--board", BOARD, "--out", str(refused), "--tracking-uri", mlflow_server.uri]) == 2
    err = capsys.readouterr().err
    assert all(fingerprint_id(d.fingerprint) in err for d in HOSTS.values()) and "--fingerprint" in err
    assert not refused.exists()

    for host, device in HOSTS.items():
        fp = fingerprint_id(device.fingerprint)
        pulled = tmp_path / f"synthetic-pulled-{host}"
        assert main(["sweep", "pull", "--board", BOARD, "--out", str(pulled), "--tracking-uri", mlflow_server.uri,
                     "--fingerprint", fp[:8]]) == 0
        rs = ResultSet.open(pulled)
        assert rs.device.fingerprint == device.fingerprint and rs.synthetic
        pd.testing.assert_frame_equal(_rows(pulled), _rows(logged[host]))
        # the pulled set replays: the same times come out again
        replayed = tmp_path / f"synthetic-replayed-{host}"
        assert main(["sweep", "run", str(spec), "--backend", "replay", "--replay", str(pulled), "--out", str(replayed)]) == 0
        pd.testing.assert_frame_equal(_rows(replayed), _rows(logged[host]))
    a, b = (_rows(tmp_path / f"synthetic-pulled-{h}") for h in HOSTS)
    assert len(a) == len(b)  # same points, kept apart by fingerprint

    # the runs carry the board and the fingerprint as tags
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.uri)
    runs = client.search_runs([client.get_experiment_by_name("perfml-sweeps").experiment_id])
    assert sorted(r.data.tags["perfml.fingerprint"] for r in runs) == sorted(fingerprint_id(d.fingerprint) for d in HOSTS.values())
    assert {r.data.tags["perfml.board"] for r in runs} == {BOARD} and all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags["perfml.timing"] for r in runs} == {"cuda-events"}  # how the launches were timed
    assert all({"results/manifest.json"} <= {a.path for a in client.list_artifacts(r.info.run_id, "results")} for r in runs)


def test_pull_of_an_unknown_board_or_into_a_used_directory_is_refused(mlflow_server, tmp_path, capsys):
    from perfml.cli import main

    assert main(["sweep", "pull", "--board", "No-Such-Board", "--out", str(tmp_path / "x"),
                 "--tracking-uri", mlflow_server.uri]) == 2
    assert "no finished sweep of board 'No-Such-Board'" in capsys.readouterr().err
    used = tmp_path / "used"
    used.mkdir()
    (used / "keep.txt").write_text("mine")
    assert main(["sweep", "pull", "--board", BOARD, "--out", str(used), "--tracking-uri", mlflow_server.uri]) == 2
    assert (used / "keep.txt").read_text() == "mine"


def test_one_host_logs_both_timings_and_pull_takes_the_one_asked_for(mlflow_server, synthetic_catalog, tmp_path,
                                                                     monkeypatch, capsys):
    """A host logs a board's sweep between CUDA events and again by kernel durations: `sweep pull --timing`
    brings back the set timed so, without it the latest; a timing nobody logged is refused, naming those there."""
    from perfml.cli import main
    from perfml.measure.runner import run_sweeps
    from perfml.measure.spec import parse_spec

    monkeypatch.setenv("PERFML_KERNELS_DIR", str(next(iter(synthetic_catalog.values())).sidecar_path.parent))
    device = dataclasses.replace(SYNTHETIC_DEVICE, name="Synthetic GPU, two timings (synthetic data)")
    spec = _spec_file(tmp_path / "synthetic_suite.toml")
    for backend in (SyntheticBackend(device), DurationTimedBackend(device)):  # the events set first, so it is the older
        recording = tmp_path / f"rec-{backend.__class__.__name__}"
        run_sweeps([parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")], backend, recording, catalog=synthetic_catalog)
        assert main(["sweep", "run", str(spec), "--backend", "replay", "--replay", str(recording), "--out",
                     str(tmp_path / f"logged-{backend.__class__.__name__}"), "--tracking-uri", mlflow_server.uri]) == 0
    pulled = {}
    for timing in ("cuda-events", "kernel-duration", None):
        pulled[timing] = tmp_path / f"pulled-{timing}"
        assert main(["sweep", "pull", "--board", device.name, "--out", str(pulled[timing]), "--tracking-uri",
                     mlflow_server.uri, *(["--timing", timing] if timing else [])]) == 0
    assert [ResultSet.open(pulled[t]).timing for t in ("cuda-events", "kernel-duration", None)] == [
        "cuda-events", "kernel-duration", "kernel-duration"]
    capsys.readouterr()
    only_events = dataclasses.replace(SYNTHETIC_DEVICE, name="Synthetic GPU, events only (synthetic data)")
    recording = tmp_path / "rec-events-only"
    run_sweeps([parse_spec(SYNTHETIC_SPEC, where="synthetic-spec")], SyntheticBackend(only_events), recording,
               catalog=synthetic_catalog)
    assert main(["sweep", "run", str(spec), "--backend", "replay", "--replay", str(recording), "--out",
                 str(tmp_path / "logged-events-only"), "--tracking-uri", mlflow_server.uri]) == 0
    capsys.readouterr()
    refused = tmp_path / "pulled-refused"
    assert main(["sweep", "pull", "--board", only_events.name, "--out", str(refused), "--tracking-uri",
                 mlflow_server.uri, "--timing", "kernel-duration"]) == 2
    assert "timed with kernel-duration" in (err := capsys.readouterr().err) and "were timed with cuda-events" in err
    assert not refused.exists()
