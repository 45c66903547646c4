#!/usr/bin/env bash
# Measure the visible GPU end to end, as sweeps/results/<board>/ records it: the machine
# (nvidia-smi), every shipped microbenchmark spec and its characterization
# (characterize_this_gpu.py), the deep-learning operator calls of CONFIGS with NeuSight's
# protocol (measure_dlops_torch.py) and the GPU tests. Each stage has its own time limit
# (SIGINT: the stage flushes what it measured; a re-run with the same OUT resumes).
#
#   bash experiments/measure_board_on_device.sh BOARD OUT CONFIGS
#
# BOARD: registry name (perfml boards); OUT: result folder; CONFIGS: from
# `python experiments/dlops_measurement_configs.py --out CONFIGS` (default seed: the calls
# every measured board shares). Needs python3 with CuPy, PyTorch, NumPy, pandas, pyarrow.
set -u
BOARD=$1; OUT=$2; CONFIGS=$3
# The logs are written beside OUT and join it at the end: the result store takes only a new or
# empty --out for a new set (a logs/ folder made in OUT first stopped every spec, H200 2026-11-28)
LOGS=$(mktemp -d)
clocks() { nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; }
{ date -u; nvidia-smi; nvidia-smi -q; clocks; } > "$LOGS/env.txt" 2>&1
t0=$(date +%s)
PYTHONPATH=. timeout -s INT "${SWEEP_S:-240}" python3 experiments/characterize_this_gpu.py \
    --out "$OUT" --board "$BOARD" > "$LOGS/sweeps.log" 2>&1
echo "sweeps: exit $? after $(( $(date +%s) - t0 )) s"; t0=$(date +%s)
timeout -s INT "${OPS_S:-220}" python3 experiments/measure_dlops_torch.py --configs "$CONFIGS" \
    --board "$BOARD" --out "$OUT/dlops_torch.csv" > "$LOGS/ops.log" 2>&1
echo "operators: exit $? after $(( $(date +%s) - t0 )) s"; t0=$(date +%s)
# --without-data-home: the modules that read ../shared/datasets when collected are skipped,
# as a GPU machine may not have it (without the option that is a collection error)
PYTHONPATH=. timeout "${TEST_S:-90}" python3 -m pytest -m gpu -q -p no:cacheprovider \
    --without-data-home > "$LOGS/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s"
clocks >> "$LOGS/env.txt" 2>&1
tail -n 3 "$LOGS/sweeps.log" "$LOGS/ops.log" "$LOGS/gpu_tests.log"
# a re-run's logs keep the earlier run's beside them (env.txt.~1~, ...), never overwriting them
mkdir -p "$OUT/logs" && cp -r --backup=numbered "$LOGS/." "$OUT/logs/" && rm -rf "$LOGS"
