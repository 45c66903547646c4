"""Sweep result sets shared between GPU hosts through an MLflow tracking server.

``perfml sweep run ... --tracking-uri URI`` calls :func:`log_result_set`: the result set
(its ``manifest.json`` with the device fingerprint and its Parquet parts, under the
run's ``results/`` artifacts) and, when one can be built from it, its characterization
(``characterization.json``) become one MLflow run of the experiment
:data:`EXPERIMENT`, tagged ``perfml.kind=sweep``, ``perfml.board``,
``perfml.fingerprint`` (:func:`fingerprint_id`), ``perfml.host`` and
``perfml.synthetic``.

``perfml sweep pull --board B --out DIR`` calls :func:`pull_result_set`: it takes the
latest finished run of board B and rebuilds the result set in DIR (a new directory), so
``perfml sweep run --backend replay --replay DIR`` and ``perfml characterize DIR`` use it
as if it had been measured here. Two hosts whose devices carry the same board name but
different fingerprints (SM count, memory, compute capability) are never mixed: with
several fingerprints for a board, pull asks for ``--fingerprint`` and names them, as
pyperf refuses to merge results from different machines.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

from perfml.errors import PerfmlError, ResultFileExistsError, SharedSweepError

__all__ = ["EXPERIMENT", "fingerprint_id", "log_result_set", "pull_result_set"]

#: MLflow experiment holding the shared sweeps.
EXPERIMENT = "perfml-sweeps"
_ARTIFACTS = "results"


def fingerprint_id(fingerprint: dict) -> str:
    """A short stable name of a device fingerprint: the first 12 hex digits of its SHA-256."""
    text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _client(tracking_uri: str | None, *, read_only: bool = False):
    from perfml._mlflow import check_reachable, check_store_exists, configure_http, tracking_uri as default_uri

    configure_http()
    uri = tracking_uri or default_uri()
    if read_only:  # first: a store that is not there has nothing to read, whatever else is wrong with its path
        check_store_exists(uri, "no sweep to pull", "pass --tracking-uri (or set MLFLOW_TRACKING_URI) to the store "
                           "`perfml sweep run --tracking-uri` logged the sweeps to")
    check_reachable(uri)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri), uri


def _characterization(path: Path, board: str | None):
    """The characterization of the set, or None with the reason when none can be built from it."""
    from perfml.characterize import characterize_results

    try:
        return characterize_results(path, board=board), ""
    except PerfmlError as exc:
        return None, str(exc)


def log_result_set(path, *, tracking_uri: str | None = None, board: str | None = None,
                   characterize: bool = True) -> str:
    """Log the result set at ``path`` as one MLflow run; return the run id.

    Parameters
    ----------
    path : path-like
        A result set directory written by ``perfml sweep run``.
    tracking_uri : str, optional
        MLflow tracking URI (default: ``MLFLOW_TRACKING_URI`` or MLflow's default).
    board : str, optional
        Board tag (default: the device name in the manifest).
    characterize : bool
        Also log the characterization built from the set, when one can be built.

    Raises
    ------
    TrackingStoreError
        If the server does not answer.
    """
    from perfml.boards import check_board_is_device
    from perfml.measure.store import FAULTS_NAME, MANIFEST_NAME, PLANS_NAME, ResultSet

    rs = ResultSet.open(path)
    if board is not None:  # the tag `sweep pull --board` finds: never another board's measurements
        check_board_is_device(board, rs.device.name, f"the result set {path}")
    client, uri = _client(tracking_uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(EXPERIMENT)
    fp = rs.device.fingerprint
    board = board or rs.device.name
    tags = {"perfml.kind": "sweep", "perfml.board": board, "perfml.fingerprint": fingerprint_id(fp),
            "perfml.device": rs.device.name, "perfml.host": socket.gethostname(),
            "perfml.synthetic": str(rs.synthetic).lower(), "perfml.timing": rs.timing}
    run = client.create_run(exp_id, run_name=f"{board}-{socket.gethostname()}", tags=tags)
    run_id = run.info.run_id
    status = "FAILED"
    try:
        for key, value in fp.items():
            client.log_param(run_id, f"fingerprint.{key}", value)
        with tempfile.TemporaryDirectory(prefix="perfml-sweep-log-") as tmp:
            staged = Path(tmp) / _ARTIFACTS
            staged.mkdir()
            # only the committed files: never a hidden temporary part of an interrupted writer
            # with what the sweeps planned and which points faulted: a pulled set is checked for
            # missing points as the measured one is (perfml characterize refuses an incomplete set)
            extra = [rs.path / name for name in (PLANS_NAME, FAULTS_NAME) if (rs.path / name).is_file()]
            for item in [rs.path / MANIFEST_NAME, *extra, *rs.parts()]:
                shutil.copy2(item, staged / item.name)
            client.log_artifacts(run_id, str(staged), _ARTIFACTS)
        rows = rs.read()
        client.log_metric(run_id, "rows", float(len(rows)))
        if characterize:
            ch, why = _characterization(rs.path, None)
            if ch is not None:
                client.log_text(run_id, ch.to_json(), "characterization.json")
            client.set_tag(run_id, "perfml.characterization", "yes" if ch is not None else f"no: {why}"[:4000])
        status = "FINISHED"
    finally:
        client.set_terminated(run_id, status)
    return run_id


def _describe(run) -> str:
    p, t = run.data.params, run.data.tags
    return (f"{t.get('perfml.fingerprint')} ({t.get('perfml.device')}, {p.get('fingerprint.sms')} SMs, "
            f"{p.get('fingerprint.total_memory_bytes')} bytes, cc {p.get('fingerprint.compute_capability')}, "
            f"host {t.get('perfml.host')})")


def pull_result_set(board: str, out, *, tracking_uri: str | None = None, fingerprint: str | None = None,
                    timing: str | None = None) -> Path:
    """Rebuild in ``out`` (a new directory) the latest result set of ``board`` logged to MLflow.

    ``fingerprint`` (an id from :func:`fingerprint_id`, or a prefix of one) chooses
    between the devices that measured ``board``; it is required when there are several.
    ``timing`` (:data:`perfml.measure.kernel_timing.TIMINGS`) takes only the sets timed so
    (the run's ``perfml.timing`` tag; a run logged before the tag existed was timed with
    CUDA events): one host may log a board's sweeps both ways.

    Raises
    ------
    SharedSweepError
        No sweep of ``board`` (the known boards are named), several fingerprints and none
        chosen (they are named), or a run whose artifacts do not form a result set.
    ResultFileExistsError
        If ``out`` exists and is not an empty directory.
    """
    from perfml.boards import same_board
    from perfml.measure.kernel_timing import DEFAULT_TIMING, check_timing
    from perfml.measure.store import ResultSet

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ResultFileExistsError(f"{out} already exists; pass a new --out directory (perfml never overwrites results)")
    if timing is not None:
        check_timing(timing)  # before the server is asked
    client, uri = _client(tracking_uri, read_only=True)
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = []
    if exp is not None:
        runs = client.search_runs([exp.experiment_id], filter_string="attributes.status = 'FINISHED' and tags.`perfml.kind` = 'sweep'",
                                  order_by=["attributes.start_time DESC"], max_results=5000)
    mine = [r for r in runs if same_board(r.data.tags.get("perfml.board") or "", board)]  # a name, an alias or the device's name
    if not mine:
        known = sorted({r.data.tags.get("perfml.board", "?") for r in runs})
        raise SharedSweepError(f"no finished sweep of board {board!r} in {uri}; boards with sweeps: "
                               f"{', '.join(known) or 'none'}; log one with `perfml sweep run ... --tracking-uri URI`")
    if timing is not None:
        def timing_of(run) -> str:  # a run logged before the tag existed was timed with CUDA events
            return run.data.tags.get("perfml.timing") or DEFAULT_TIMING

        timed = {timing_of(r) for r in mine}
        mine = [r for r in mine if timing_of(r) == timing]
        if not mine:
            raise SharedSweepError(f"no finished sweep of board {board!r} timed with {timing} in {uri}; its sweeps "
                                   f"were timed with {', '.join(sorted(timed))}: drop --timing, or log one measured "
                                   f"with `perfml sweep run ... --timing {timing} --tracking-uri URI`")
    latest: dict[str, object] = {}
    for r in mine:  # newest first
        latest.setdefault(r.data.tags.get("perfml.fingerprint", ""), r)
    if fingerprint is not None:
        chosen = [fp for fp in latest if fp.startswith(fingerprint)]
        if len(chosen) != 1:
            raise SharedSweepError(
                f"--fingerprint {fingerprint!r} matches {len(chosen)} of the device fingerprints of {board!r}; "
                f"expected one of: {'; '.join(_describe(r) for r in latest.values())}")
        run = latest[chosen[0]]
    elif len(latest) > 1:
        raise SharedSweepError(
            f"board {board!r} was measured on {len(latest)} devices with different fingerprints, which perfml never "
            f"mixes: {'; '.join(_describe(r) for r in latest.values())}; choose one with --fingerprint")
    else:
        run = next(iter(latest.values()))
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".perfml-pull-", dir=out.parent) as tmp:
        client.download_artifacts(run.info.run_id, _ARTIFACTS, tmp)
        staged = Path(tmp) / _ARTIFACTS
        try:
            rs = ResultSet.open(staged)
            rs.read()
        except PerfmlError as exc:
            raise SharedSweepError(f"run {run.info.run_id} of board {board!r} does not hold a readable result set ({exc}); "
                                   "log the sweep again") from None
        if fingerprint_id(rs.device.fingerprint) != run.data.tags.get("perfml.fingerprint"):
            raise SharedSweepError(f"run {run.info.run_id}: its manifest's fingerprint differs from its tag; log the sweep again")
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        if "characterization.json" in names:
            client.download_artifacts(run.info.run_id, "characterization.json", str(staged))
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(staged, out)
    return out
