# Sourced by the *_on_device.sh scripts (bash): record the machine in $WORK/logs/env.txt and
# put the libcupti that cupti-python loads (libcupti.so.13: the one beside PyTorch's CUDA
# wheels, else the toolkit's) on LD_LIBRARY_PATH. Needs WORK set and $WORK/logs made.
{ date -u; nvidia-smi; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv; } \
    > "$WORK/logs/env.txt" 2>&1
LIB=$(dirname "$(find /opt /usr/local -name 'libcupti.so.13*' 2>/dev/null | sort | head -n 1)" 2>/dev/null)
[ -n "$LIB" ] && export LD_LIBRARY_PATH="$LIB:${LD_LIBRARY_PATH:-}"
echo "libcupti from: ${LIB:-not found}" | tee -a "$WORK/logs/env.txt"
