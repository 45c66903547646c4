"""Benchmark of the default predictor: training time on the full data, prediction throughput.

Prints figures; asserts nothing. Run:

    python experiments/bench_predictor.py [--data-home DIR] [--repeats 3] [--model models/default]

Training uses the rows `perfml train` uses by default (every runtime of runtimes.csv.gz in
the default GPU configuration: described apps and Rodinia kernels; one fit, without the
leave-one-board-out interval calibration, which costs one more fit per board); prediction
throughput is measured on those same rows (features + booster), in rows per second, for
the first call after fit (which builds the per-board lookups of the fitted feature state)
and the best of ``--repeats`` later calls; the single-query latency is measured both for the regressor and for the whole query path
(`perfml.learned.queries.predict_queries`: checks, basis, roofline floor, interval).

The operator corpus (dlops_runtimes.csv.gz) is timed the same way: one fit of the default
:class:`perfml.learned.operators.OperatorRegressor` on every operator row (``--dlops-rows N``
for a seeded subsample), batch throughput on those rows, and one operator query. Last, the
shipped bundle (``--model``): application rows and one operator row through
``perfml predict``'s whole path (:func:`perfml.learned.bundle.predict_any`, with intervals).
The application queries are timed on a board out of training (``UNSEEN_BOARD``), where the
model answers; a run a training board ran is answered with its measurement
(:func:`perfml.learned.queries.measured_on_board`, the model not run) and timed apart. Then
a query file of ``BATCH_QUERY_ROWS`` application rows goes through the same path at once.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

#: a board of a training architecture (Kepler) that no training row ran: its queries take the model's path
UNSEEN_BOARD = "GTX-780"
#: rows of the many-row query file timed through the bundle
BATCH_QUERY_ROWS = 20_000


def _best_batch_seconds(model, rows, repeats: int) -> float:
    """Best of ``repeats`` wall-clock times of ``model.predict(rows)`` (every prediction finite)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        pred = model.predict(rows)
        times.append(time.perf_counter() - t0)
    assert np.all(np.isfinite(pred))
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dlops-rows", type=int, default=None, help="subsample the operator rows (default: all)")
    parser.add_argument("--model", default="models/default", help="a saved bundle for the end-to-end query latency")
    args = parser.parse_args()

    import xgboost

    from perfml.learned.regressors import RuntimeRegressor
    from perfml.learned.training import training_runtimes

    from perfml.datasets import DataHome, find_data_home

    home = DataHome(find_data_home(args.data_home))  # an entry point: resolves the data home itself
    rt = training_runtimes(home)
    print(f"machine: {_cpu_model()}, {os.cpu_count()} cores; xgboost {xgboost.__version__}")
    print(f"data: {len(rt)} runtimes, {rt['board'].nunique()} boards, {rt['app_id'].nunique()} apps")
    t0 = time.perf_counter()
    # the Amaris sub-models of `perfml train` (perfml.learned.training.make_corpus_model)
    model = RuntimeRegressor(learner="xgboost", target="residual", data_home=home, compute_rate="issue").fit(rt, rt["measured_ms"])
    fit_s = time.perf_counter() - t0
    print(f"training time (features + xgboost, n_jobs={model.n_jobs}): {fit_s:.1f} s")
    # The first prediction after fit (or after loading a model) builds the per-board lookups
    # of the fitted feature state (medians over the other boards, ...); later ones reuse them.
    t0 = time.perf_counter()
    model.predict(rt)
    cold = time.perf_counter() - t0
    print(f"prediction, first call (builds the per-board lookups): {len(rt)} rows in {cold:.2f} s = {len(rt) / cold:,.0f} rows/s")
    best = _best_batch_seconds(model, rt, args.repeats)
    print(f"batch prediction: {len(rt)} rows in {best:.2f} s (best of {args.repeats}) = {len(rt) / best:,.0f} rows/s (target >= 100,000)")
    one = rt.head(1)
    print(f"single-row latency (regressor): {_latency_ms(lambda: model.predict(one)):.1f} ms")
    from perfml.learned.queries import predict_queries

    # a training run of its own board is answered with its measurement (perfml.learned.queries.measured_on_board),
    # the model is not run: the same kernel and size on a board out of training times the model's path
    measured = one[["board", "app_id", "input_size"]].astype(str)
    query = measured.assign(board=UNSEEN_BOARD)
    warm = _latency_ms(lambda: predict_queries(model, query, "bench"))
    print(f"single-query latency (query path, no interval calibration; {UNSEEN_BOARD}, out of training): {warm:.1f} ms "
          "(target < 50)")
    print(f"single-query latency, a run its board ran in training (answered with the measurement): "
          f"{_latency_ms(lambda: predict_queries(model, measured, 'bench')):.1f} ms")
    # as `perfml predict` on a freshly loaded model: the lookups for the query's board are built first
    model.features_._group_caches = {}
    t0 = time.perf_counter()
    predict_queries(model, query, "bench")
    print(f"single-query latency, first query after loading (query path): {(time.perf_counter() - t0) * 1e3:.1f} ms")
    _operators(home, args)
    _bundle(home, args)


def _operators(home, args) -> None:
    """Training time, batch throughput and single-row latency of the operator model."""
    from perfml.learned.operators import OperatorRegressor
    from perfml.learned.training import operator_training_rows

    ops = operator_training_rows(home, max_rows=args.dlops_rows)
    print(f"operators: {len(ops)} rows, {ops['board'].nunique()} boards, {ops['op'].nunique()} ops")
    t0 = time.perf_counter()
    model = OperatorRegressor(data_home=home, n_jobs=2).fit(ops, ops["measured_ms"].to_numpy())
    print(f"operators: training time (features + xgboost, n_jobs=2): {time.perf_counter() - t0:.1f} s")
    best = _best_batch_seconds(model, ops, args.repeats)
    print(f"operators: batch prediction {len(ops)} rows in {best:.2f} s (best of {args.repeats}) = {len(ops) / best:,.0f} rows/s")
    one = ops.head(1)
    print(f"operators: single-row latency (regressor): {_latency_ms(lambda: model.predict(one)):.1f} ms")


def _bundle(home, args) -> None:
    """One application row and one operator row through the whole `perfml predict` path of a saved bundle."""
    import pandas as pd

    from perfml.learned.bundle import load_predictor, predict_any

    t0 = time.perf_counter()
    bundle = load_predictor(args.model, data_home=home)
    print(f"bundle {args.model}: loaded in {(time.perf_counter() - t0) * 1e3:.0f} ms")
    measured = pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": ["1048576"]})
    app = measured.assign(board=UNSEEN_BOARD)
    op = pd.DataFrame({"board": ["A100-PCIe-40GB"], "op": ["bmm"], "B": ["8"], "M": ["512"], "N": ["64"], "K": ["512"]})
    for name, query in ((f"application row ({UNSEEN_BOARD}, out of training)", app),
                        ("application row (a GTX-980 run of its training rows: its measurement)", measured),
                        ("operator row", op)):
        first = time.perf_counter()
        predict_any(bundle, query, "bench")
        first = (time.perf_counter() - first) * 1e3
        warm = _latency_ms(lambda: predict_any(bundle, query, "bench"))
        print(f"bundle: single-query latency, {name} (perfml predict path, with interval): first {first:.1f} ms, "
              f"then {warm:.1f} ms (target < 50)")
    # a file of many query rows: vectorAdd at 14 sizes on 5 boards (the shipped model's and four
    # others), repeated to BATCH_QUERY_ROWS rows, through the whole path (checks, flags, intervals)
    sizes = [str(2**k) for k in range(10, 24)]
    rows = pd.DataFrame([{"board": b, "app_id": "vectorAdd", "input_size": n}
                         for b in ("GTX-780", "GTX-980", "Tesla-K40", "H100-SXM", "A100-40GB") for n in sizes])
    many = pd.concat([rows] * (BATCH_QUERY_ROWS // len(rows) + 1), ignore_index=True).head(BATCH_QUERY_ROWS)
    t0 = time.perf_counter()
    predict_any(bundle, many, "bench")
    seconds = time.perf_counter() - t0
    print(f"bundle: {len(many):,} application query rows (perfml predict path, with interval): {seconds:.2f} s "
          f"= {len(many) / seconds:,.0f} rows/s")
    if "dlops-calibrated" in bundle.models:  # the calibrated tier: the target's add calls calibrate it first
        import tempfile

        from perfml.datasets import load_dlops_runtimes
        from perfml.learned.target_characterization import use_target

        rt = load_dlops_runtimes(home)
        adds = rt[(rt["board"] == "A100-PCIe-40GB") & (rt["op"] == "add")][["board", "op", "B", "H", "time_ms"]]
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/adds.csv"
            adds.to_csv(path, index=False)

            def calibrated():
                use_target(bundle, op, "bench", calibration=path)
                return predict_any(bundle, op, "bench")

            print(f"bundle: single-query latency, operator row with --calibration of {len(adds)} add calls "
                  f"(calibration + prediction): {_latency_ms(calibrated):.1f} ms (target < 50)")


def _cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``), else the platform's processor or machine.

    The figures depend on it: the same commit measured 3x apart on two machines of the
    same 2-core kind (experiments/results/bench_predictor.txt).
    """
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _latency_ms(call, repeats: int = 20) -> float:
    """Mean wall time of ``call`` in milliseconds, after one warm-up call."""
    call()
    t0 = time.perf_counter()
    for _ in range(repeats):
        call()
    return (time.perf_counter() - t0) / repeats * 1e3


if __name__ == "__main__":
    main()
