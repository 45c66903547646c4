// Shared memory bank conflicts (seed 001 Table 2, "Shared memory: Bank conflicts";
// seed 000 F_SHMEM). Lane l reads word (l % WAYS) * 32 + l / WAYS of a row block: lanes
// l / WAYS share a bank and sit in WAYS different rows, so every ld.shared of a warp is
// a WAYS-way bank conflict (WAYS = 1: conflict free, 32: all lanes in one bank). The
// loads are volatile; the row block shifts by one row per unrolled step (immediate offset).
#ifndef WAYS
#define WAYS 1
#endif
#ifndef ITERS
#define ITERS 512
#endif
#ifndef REPS
#define REPS 64
#endif
#ifndef SHIFT_ROWS
#define SHIFT_ROWS 8
#endif

extern "C" __global__ void bank_conflicts(unsigned* out, int zero) {
  __shared__ unsigned tile[(32 + SHIFT_ROWS) * 32];
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  for (int j = threadIdx.x; j < (32 + SHIFT_ROWS) * 32; j += blockDim.x) tile[j] = (unsigned)zero;
  __syncthreads();
  const unsigned word = (lane % WAYS) * 32u + lane / WAYS;
  const unsigned base = (unsigned)__cvta_generic_to_shared(tile + word);
  unsigned v = tid;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + (i % SHIFT_ROWS) * 128) : "memory");
    }
  }
  if (v == 0xffffffffu) out[tid] = v;  // never true: keeps the loads alive
}
