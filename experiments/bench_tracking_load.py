"""Load on an MLflow tracking server: concurrent clients logging runs of 100 metrics each.

Not a test: it prints figures. Each of ``--clients`` processes (default 8) loops for
``--seconds`` (default 60): create a run, log 100 metrics in one ``log_batch``, end
the run; the latency of a run is the time of those three calls. At the end every run
is read back (status FINISHED, all 100 metrics with the values sent) and the script
prints runs/s, p50/p99 latency per run and whether everything arrived.

    python experiments/bench_tracking_load.py                       # starts PostgreSQL + mlflow server
    python experiments/bench_tracking_load.py --tracking-uri http://127.0.0.1:5000   # takes a server

Without ``--tracking-uri`` it starts the throw-away PostgreSQL cluster and ``mlflow
server`` of tests/lab_fixtures.py on 127.0.0.1 (both stopped at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_METRICS = 100


def _value(client: int, i: int, k: int) -> float:
    return client * 1_000_000 + i * 1000 + k + 0.5


def _client(uri: str, experiment_id: str, client: int, seconds: float, ready, go, queue) -> None:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    mlflow_client = MlflowClient(tracking_uri=uri)
    ready.release()
    go.wait(timeout=600)
    deadline = time.time() + seconds  # the clock starts when every client is ready (imports done)
    latencies, runs, errors = [], [], 0
    i = 0
    while time.time() < deadline:
        t0 = time.perf_counter()
        try:
            run = mlflow_client.create_run(experiment_id, run_name=f"c{client}-{i}", tags={"bench.client": str(client), "bench.i": str(i)})
            now = int(time.time() * 1000)
            mlflow_client.log_batch(run.info.run_id, metrics=[Metric(f"m{k:03d}", _value(client, i, k), now, 0)
                                                              for k in range(N_METRICS)])
            mlflow_client.set_terminated(run.info.run_id, "FINISHED")
        except Exception:  # noqa: BLE001 - counted and reported
            errors += 1
        else:
            latencies.append(time.perf_counter() - t0)
            runs.append((run.info.run_id, client, i))
        i += 1
    queue.put((latencies, runs, errors))


def _verify(uri: str, experiment_id: str, runs: list) -> tuple[int, int]:
    """(runs that arrived complete, metrics that arrived with the value sent)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found, token = {}, None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        found.update({r.info.run_id: r for r in page})
        token = page.token
        if not token:
            break
    complete, metrics = 0, 0
    for run_id, c, i in runs:
        run = found.get(run_id)
        if run is None:
            continue
        ok = sum(run.data.metrics.get(f"m{k:03d}") == _value(c, i, k) for k in range(N_METRICS))
        metrics += ok
        complete += ok == N_METRICS and run.info.status == "FINISHED"
    return complete, metrics


@contextlib.contextmanager
def _server(uri: str | None):
    if uri:
        yield uri
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from lab_fixtures import MlflowServer, postgres_cluster

    with postgres_cluster() as pg, tempfile.TemporaryDirectory(prefix="perfml-bench-") as tmp:
        server = MlflowServer(pg.url(pg.new_database("mlflow")), Path(tmp) / "artifacts", Path(tmp) / "server.log")
        server.start()
        try:
            yield server.uri
        finally:
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", help="a running server (default: start PostgreSQL + mlflow server here)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    with _server(args.tracking_uri) as uri:
        from mlflow.tracking import MlflowClient

        experiment_id = MlflowClient(tracking_uri=uri).create_experiment(f"bench-load-{int(time.time())}")
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        ready, go = ctx.Semaphore(0), ctx.Event()
        procs = [ctx.Process(target=_client, args=(uri, experiment_id, c, args.seconds, ready, go, queue))
                 for c in range(args.clients)]
        for p in procs:
            p.start()
        for _ in procs:
            if not ready.acquire(timeout=300):
                raise SystemExit("a client did not start within 300 s")
        go.set()
        results = [queue.get(timeout=args.seconds + 300) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        latencies = np.array([x for r in results for x in r[0]])
        runs = [x for r in results for x in r[1]]
        errors = sum(r[2] for r in results)
        t0 = time.perf_counter()
        complete, metrics = _verify(uri, experiment_id, runs)
        print(f"server {uri}, {args.clients} clients, {args.seconds:g} s, {N_METRICS} metrics per run (one log_batch)")
        print(f"runs logged: {len(runs)} ({len(runs) / args.seconds:.1f} runs/s, {len(runs) * N_METRICS / args.seconds:.0f} metrics/s), "
              f"failed requests: {errors}")
        if len(latencies):
            print(f"latency per run (create + log_batch + end): p50 {np.percentile(latencies, 50) * 1e3:.1f} ms, "
                  f"p99 {np.percentile(latencies, 99) * 1e3:.1f} ms, max {latencies.max() * 1e3:.1f} ms")
        print(f"read back in {time.perf_counter() - t0:.1f} s: {complete}/{len(runs)} runs complete, "
              f"{metrics}/{len(runs) * N_METRICS} metrics with the value sent")
        return 0 if runs and complete == len(runs) and metrics == len(runs) * N_METRICS and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
