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
mkdir -p "$OUT/logs"
clocks() { nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; }
{ date -u; nvidia-smi; nvidia-smi -q; clocks; } > "$OUT/logs/env.txt" 2>&1
t0=$(date +%s)
PYTHONPATH=. timeout -s INT "${SWEEP_S:-240}" python3 experiments/characterize_this_gpu.py \
    --out "$OUT" --board "$BOARD" > "$OUT/logs/sweeps.log" 2>&1
echo "sweeps: exit $? after $(( $(date +%s) - t0 )) s"; t0=$(date +%s)
timeout -s INT "${OPS_S:-220}" python3 experiments/measure_dlops_torch.py --configs "$CONFIGS" \
    --board "$BOARD" --out "$OUT/dlops_torch.csv" > "$OUT/logs/ops.log" 2>&1
echo "operators: exit $? after $(( $(date +%s) - t0 )) s"; t0=$(date +%s)
# --without-data-home: the modules that read ../shared/datasets when collected are skipped,
# as a GPU machine may not have it (without the option that is a collection error)
PYTHONPATH=. timeout "${TEST_S:-90}" python3 -m pytest -m gpu -q -p no:cacheprovider \
    --without-data-home > "$OUT/logs/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s"
clocks >> "$OUT/logs/env.txt" 2>&1
tail -n 3 "$OUT/logs/sweeps.log" "$OUT/logs/ops.log" "$OUT/logs/gpu_tests.log"
