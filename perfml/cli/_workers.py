"""Start N local worker processes of one ``perfml`` command and wait for them all.

Used by ``perfml tune --n-workers N``: each worker is ``python -m perfml --quiet tune
... --worker-id K --json``, a process of its own (Optuna's RDB storage is shared
between processes, not threads of one interpreter held by the GIL). The storage URL
travels in ``PERFML_TUNE_STORAGE`` so that a password in it is not on any worker's
command line; the workers run the perfml package this process imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from perfml.errors import StudyError

__all__ = ["run_workers", "threads_per_worker"]


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def threads_per_worker(n_workers: int, cores: int | None = None) -> int:
    """The learner threads each of ``n_workers`` processes gets: the cores this process may
    use (``os.sched_getaffinity``, else ``os.cpu_count``) divided among them, at least 1.

    Each worker's xgboost runs OpenMP threads; more threads than cores make them spin
    against each other (two 2-thread training jobs on 2 cores took 4.2x the CPU time of
    one alone, `experiments/results/train_default.txt`).
    """
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # not on Linux
            cores = os.cpu_count() or 1
    return max(1, int(cores) // max(1, int(n_workers)))


def run_workers(argv: list[str], n_workers: int, *, first_worker_id: int, storage_url: str) -> list[dict]:
    """Run ``perfml <argv> --worker-id K --json`` for K in ``first_worker_id`` .. ``+ n_workers - 1``.

    Returns one record per worker (``worker_id``, ``exit_code``, ``n_trials`` it saw in
    the study when it stopped). Waits for every worker; Ctrl-C stops them all.

    Raises
    ------
    StudyError
        If a worker exits with an error (its last stderr line is quoted, the password of
        any URL masked) or is killed; the other workers' trials stay in the study.
    """
    from perfml._secrets import mask_credentials

    package_root = str(Path(__file__).resolve().parents[2])
    from perfml.boards._registry import BOARDS_ENV, user_board_files

    env = dict(os.environ, PERFML_TUNE_STORAGE=storage_url,
               PYTHONPATH=package_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if user_board_files():  # the boards of $PERFML_BOARDS and --boards, for the workers too
        env[BOARDS_ENV] = os.pathsep.join(user_board_files())
    procs = []
    with tempfile.TemporaryDirectory(prefix="perfml-workers-") as tmp:
        try:
            for k in range(n_workers):
                worker = first_worker_id + k
                out = open(Path(tmp) / f"{worker}.out", "w+b")  # noqa: SIM115 - closed below
                err = open(Path(tmp) / f"{worker}.err", "w+b")  # noqa: SIM115 - closed below
                cmd = [sys.executable, "-m", "perfml", "--quiet", *argv, "--worker-id", str(worker), "--json"]
                procs.append((worker, subprocess.Popen(cmd, stdout=out, stderr=err, env=env), out, err))
            for _, proc, _, _ in procs:
                proc.wait()
        finally:
            for _, proc, _, _ in procs:  # Ctrl-C or an error here: no orphan keeps working
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(timeout=30)
        reports, failures = [], []
        for worker, proc, out, err in procs:
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
            out.close()
            err.close()
            record = {"worker_id": worker, "exit_code": proc.returncode}
            try:
                record["n_trials"] = json.loads(stdout)["n_trials"]
            except (ValueError, KeyError, TypeError):
                pass
            reports.append(record)
            if proc.returncode < 0:
                failures.append(f"worker {worker} was killed by signal {-proc.returncode}")
            elif proc.returncode != 0:
                failures.append(f"worker {worker} exited with {proc.returncode} ({mask_credentials(_last_line(stderr))})")
    if failures:
        raise StudyError(
            f"{len(failures)} of {n_workers} tuning workers failed: {'; '.join(failures)}; the trials of the others are in "
            "the study: fix the cause and run `perfml tune` again with the same --storage and --study to continue it"
        )
    return reports
