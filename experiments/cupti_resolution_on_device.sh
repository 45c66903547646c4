#!/usr/bin/env bash
# On one GPU machine: measure the CUPTI clock's resolution (experiments/cupti_resolution.py
# --measure), then run the GPU tests at this tree.
#
#   bash experiments/cupti_resolution_on_device.sh BOARD OUT
#
# BOARD: registry name (names the folder, BOARD-cupti-resolution); OUT: folder for
# resolution.tgz (spans.csv.gz, meta.json) and logs.tgz. Needs python3 with CuPy, NumPy,
# pandas and cupti-python (PYTHONPATH may add it).
set -u
BOARD=$1; OUT=$2
WORK=$(mktemp -d); mkdir -p "$WORK/logs" "$OUT"
source "$(dirname "$0")/device_env.sh"  # env.txt, and libcupti on LD_LIBRARY_PATH
t0=$(date +%s)
PYTHONPATH=".:${PYTHONPATH:-}" timeout "${MEASURE_S:-120}" python3 experiments/cupti_resolution.py \
    --measure "$WORK/$BOARD-cupti-resolution" > "$WORK/logs/resolution.log" 2>&1
echo "resolution: exit $? after $(( $(date +%s) - t0 )) s"
cat "$WORK/logs/resolution.log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv >> "$WORK/logs/env.txt" 2>&1
t0=$(date +%s)
PYTHONPATH=".:${PYTHONPATH:-}" timeout "${TEST_S:-150}" python3 -m pytest -m gpu -q -p no:cacheprovider \
    --without-data-home > "$WORK/logs/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s"
tail -n 5 "$WORK/logs/gpu_tests.log"
tar -czf "$OUT/resolution.tgz" -C "$WORK" "$BOARD-cupti-resolution"
tar -czf "$OUT/logs.tgz" -C "$WORK" logs
