"""Benchmark of the default predictor: training time on the full data, prediction throughput.

Prints figures; asserts nothing. Run:

    python experiments/bench_predictor.py [--data-home DIR] [--repeats 3]

Training uses the rows `perfml train` uses by default (every runtime of runtimes.csv.gz in
the default GPU configuration: described apps and Rodinia kernels; one fit, without the
leave-one-board-out interval calibration, which costs one more fit per board); prediction
throughput is measured on those same rows (features + booster), in rows per second; the
single-query latency is measured both for the regressor and for the whole query path
(`perfml.learned.queries.predict_queries`: checks, basis, roofline floor, interval).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import xgboost

    from perfml.learned.regressors import RuntimeRegressor
    from perfml.learned.training import training_runtimes

    from perfml.datasets import DataHome, find_data_home

    home = DataHome(find_data_home(args.data_home))  # an entry point: resolves the data home itself
    rt = training_runtimes(home)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; xgboost {xgboost.__version__}")
    print(f"data: {len(rt)} runtimes, {rt['board'].nunique()} boards, {rt['app_id'].nunique()} apps")
    t0 = time.perf_counter()
    model = RuntimeRegressor(learner="xgboost", target="residual", data_home=home).fit(rt, rt["measured_ms"])
    fit_s = time.perf_counter() - t0
    print(f"training time (features + xgboost, n_jobs={model.n_jobs}): {fit_s:.1f} s")
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        pred = model.predict(rt)
        times.append(time.perf_counter() - t0)
    assert np.all(np.isfinite(pred))
    best = min(times)
    print(f"prediction: {len(rt)} rows in {best:.2f} s (best of {args.repeats}) = {len(rt) / best:,.0f} rows/s")
    one = rt.head(1)
    t0 = time.perf_counter()
    for _ in range(20):
        model.predict(one)
    print(f"single-row latency (regressor): {(time.perf_counter() - t0) / 20 * 1e3:.1f} ms")
    from perfml.learned.queries import predict_queries

    query = one[["board", "app_id", "input_size"]].astype(str)
    t0 = time.perf_counter()
    for _ in range(20):
        predict_queries(model, query, "bench")
    print(f"single-query latency (query path, no interval calibration): {(time.perf_counter() - t0) / 20 * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
