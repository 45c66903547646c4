#!/usr/bin/env bash
# Time the calibration and application kernels both ways on one GPU machine, one after the
# other: by each kernel's duration from CUPTI (perfml sweep run --timing kernel-duration, the
# timing of nvprof and of the data home's application runtimes) and between CUDA events (the
# default), then run the GPU tests. experiments/event_overhead.py compares the two sets.
#
#   bash experiments/kernel_duration_on_device.sh BOARD OUT
#
# BOARD: registry name; OUT: folder for sets.tgz (both result sets) and logs.tgz. Needs
# python3 with CuPy, NumPy, pandas, pyarrow and cupti-python (PYTHONPATH may add it).
set -u
BOARD=$1; OUT=$2
WORK=$(mktemp -d); mkdir -p "$WORK/logs" "$OUT"
source "$(dirname "$0")/device_env.sh"  # env.txt, and libcupti on LD_LIBRARY_PATH
python3 -c "from cupti import cupti; import importlib.metadata as m; print('cupti-python', m.version('cupti-python'))" 2>&1 | tee -a "$WORK/logs/env.txt"
for timing in kernel-duration cuda-events; do
    t0=$(date +%s)
    PYTHONPATH=".:${PYTHONPATH:-}" timeout -s INT "${SWEEP_S:-150}" python3 experiments/characterize_this_gpu.py \
        --out "$WORK/sets/$BOARD-$timing" --board "$BOARD" --specs calibration applications --timing "$timing" \
        > "$WORK/logs/sweeps-$timing.log" 2>&1
    echo "$timing sweeps: exit $? after $(( $(date +%s) - t0 )) s"
    tail -n 4 "$WORK/logs/sweeps-$timing.log"
done
t0=$(date +%s)
PYTHONPATH=".:${PYTHONPATH:-}" timeout "${TEST_S:-150}" python3 -m pytest -m gpu -q -p no:cacheprovider \
    --without-data-home > "$WORK/logs/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s"
tail -n 5 "$WORK/logs/gpu_tests.log"
tar -czf "$OUT/sets.tgz" -C "$WORK" sets
tar -czf "$OUT/logs.tgz" -C "$WORK" logs
