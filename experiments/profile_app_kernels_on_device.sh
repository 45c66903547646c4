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
#
# BOARD: registry name (perfml boards); OUT: folder for apps.ncu-rep, apps_details.csv
# (`ncu --import --csv`, the default details page), apps_raw.csv (`--page raw`) and logs.
# Clocks are left as found (--clock-control none). Needs ncu and python3 with CuPy, NumPy,
# pandas, pyarrow; the sweep's own timings under ncu are thrown away (profiling replays
# every launch), the timings to use are those of the uninstrumented result set.
set -u
BOARD=$1; OUT=$2
mkdir -p "$OUT"
work=$(mktemp -d)
# the shipped spec with one timed launch and no warm-up per point (same launches), and no
# time budget (ncu's replay makes every launch slower than the spec's estimate)
cp perfml/data/sweeps/applications.toml "$work/applications.toml"
for setting in "repetitions = 1" "warmup = 0" "time_budget_s = 100000" "max_point_s = 100000"; do
    key=${setting%% =*}
    grep -q "^$key = " "$work/applications.toml" || { echo "the applications spec has no top-level '$key' to set; update this script"; exit 2; }
    sed -i "s/^$key = .*/$setting/" "$work/applications.toml"
done
metrics=$(PYTHONPATH=. python3 -c "from perfml.learned.profile_import import COUNTERS as C; \
print(','.join(sorted({n for c in C.values() for n, _ in c.ncu} | {'device__attribute_display_name', 'gpu__time_duration.sum'})))")
kernels=$(PYTHONPATH=. python3 -c "import tomllib; s = tomllib.load(open('$work/applications.toml', 'rb')); \
print('|'.join(f['name'] for f in s['families']))")
{ date -u; ncu --version; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > "$OUT/env.txt" 2>&1
t0=$(date +%s)
PYTHONPATH=. timeout -s INT "${NCU_S:-240}" ncu --clock-control none --target-processes all \
    --kernel-name "regex:^(${kernels})\$" --metrics "$metrics" --export "$OUT/apps" --force-overwrite \
    python3 experiments/characterize_this_gpu.py --one-spec "$work/applications.toml" --out "$work/rs" \
    --board "$BOARD" > "$OUT/ncu.log" 2>&1
echo "ncu: exit $? after $(( $(date +%s) - t0 )) s"
ncu --import "$OUT/apps.ncu-rep" --csv > "$OUT/apps_details.csv" 2> "$OUT/import.log"
ncu --import "$OUT/apps.ncu-rep" --csv --page raw > "$OUT/apps_raw.csv" 2>> "$OUT/import.log"
echo "exports: $(wc -l < "$OUT/apps_details.csv") details lines, $(wc -l < "$OUT/apps_raw.csv") raw lines"
t0=$(date +%s)
PYTHONPATH=. timeout "${TEST_S:-120}" python3 -m pytest -m gpu -q -p no:cacheprovider \
    --without-data-home > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(( $(date +%s) - t0 )) s"
tail -n 4 "$OUT/ncu.log" "$OUT/import.log" "$OUT/gpu_tests.log"
rm -rf "$work"
