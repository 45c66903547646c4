#!/usr/bin/env bash
# Profile perfml's application kernels on the visible GPU with Nsight Compute, as a user
# would profile their own kernels for `perfml predict --reference R.csv --profile P.csv`:
# every point of the shipped `applications` spec (the launches of the recorded result sets
# in sweeps/results/<board>/), one validation launch and one timed launch each, under
#
#   ncu --metrics <the Nsight Compute names perfml maps, read from perfml itself>
#
# then the report exported as both CSV pages that --profile accepts, and the GPU tests.
#
#   bash experiments/profile_app_kernels_on_device.sh BOARD OUT
#   SPEC=calibration bash experiments/profile_app_kernels_on_device.sh BOARD OUT
#
# BOARD: registry name (perfml boards); OUT: folder for apps.ncu-rep, apps_details.csv
# (`ncu --import --csv`, the default details page), apps_raw.csv (`--page raw`) and logs.
# SPEC: another shipped spec of application kernels (default `applications`); its files are
# named after it (calibration.ncu-rep, calibration_details.csv, ...). The `calibration` spec
# profiled so gives the kernel durations of the launches whose CUDA-event times the result
# set holds: both timings of one board.
# Clocks are left as found (--clock-control none). Needs ncu and python3 with CuPy, NumPy,
# pandas, pyarrow; the sweep's own timings under ncu are thrown away (profiling replays
# every launch), the timings to use are those of the uninstrumented result set.
set -u
BOARD=$1; OUT=$2
SPEC=${SPEC:-applications}
PREFIX=$([ "$SPEC" = applications ] && echo apps || echo "$SPEC")
mkdir -p "$OUT"
work=$(mktemp -d)
# the shipped spec with one timed launch and no warm-up per point (same launches), and no
# time budget (ncu's replay makes every launch slower than the spec's estimate)
cp "perfml/data/sweeps/$SPEC.toml" "$work/spec.toml" || exit 2
for setting in "repetitions = 1" "warmup = 0" "time_budget_s = 100000" "max_point_s = 100000"; do
    key=${setting%% =*}
    grep -q "^$key = " "$work/spec.toml" || { echo "the $SPEC spec has no top-level '$key' to set; update this script"; exit 2; }
    sed -i "s/^$key = .*/$setting/" "$work/spec.toml"
done
metrics=$(PYTHONPATH=. python3 -c "from perfml.learned.profile_import import COUNTERS as C; \
print(','.join(sorted({n for c in C.values() for n, _ in c.ncu + c.ncu_alternative} | {'device__attribute_display_name', 'gpu__time_duration.sum'})))")
kernels=$(PYTHONPATH=. python3 -c "import tomllib; s = tomllib.load(open('$work/spec.toml', 'rb')); \
print('|'.join(f['name'] for f in s['families']))")
{ date -u; ncu --version; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
PYTHONPATH=. timeout -s INT "${NCU_S:-240}" ncu --clock-control none --target-processes all \
    --kernel-name "regex:^(${kernels})\$" --metrics "$metrics" --export "$OUT/$PREFIX" --force-overwrite \
    python3 experiments/characterize_this_gpu.py --one-spec "$work/spec.toml" --out "$work/rs" \
    --board "$BOARD" > "$OUT/ncu.log" 2>&1
echo "ncu: exit $? after $(( $(date +%s) - t0 )) s"
ncu --import "$OUT/$PREFIX.ncu-rep" --csv > "$OUT/${PREFIX}_details.csv" 2> "$OUT/import.log"
ncu --import "$OUT/$PREFIX.ncu-rep" --csv --page raw > "$OUT/${PREFIX}_raw.csv" 2>> "$OUT/import.log"
echo "exports: $(wc -l < "$OUT/${PREFIX}_details.csv") details lines, $(wc -l < "$OUT/${PREFIX}_raw.csv") raw lines"
t0=$(date +%s)
PYTHONPATH=. timeout "${TEST_S:-120}" python3 -m pytest -m gpu -q -p no:cacheprovider \
    --without-data-home > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s"
tail -n 4 "$OUT/ncu.log" "$OUT/import.log" "$OUT/gpu_tests.log"
rm -rf "$work"
