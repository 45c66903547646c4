// 32-bit integer remainder throughput (seed 001 Table 1, "32-bit Integer Remainder").
// GPUs have no integer divide instruction: rem.s32 by a run-time divisor is a sequence
// (IABS, IMAD.HI.U32 by a reciprocal computed once outside the loop, IMAD, two
// conditional corrections, sign fix-up, SEL). The target is that sequence (REM_SEQ).
#ifndef ITERS
#define ITERS 128
#endif
#ifndef CHAINS
#define CHAINS 2
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void int32_rem(int* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const int d = zero + 7;  // divisor, 7 at run time
  int x[CHAINS];
  int y[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) {
    x[k] = threadIdx.x * 7919 + k;
    y[k] = zero + 1000003 * (k + 1);
  }
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
        asm volatile("rem.s32 %0, %0, %1;" : "+r"(x[k]) : "r"(d));
      }
    }
  }
  int acc = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc ^= x[k] ^ y[k];
  if (acc == -1) out[gid] = acc;  // never true in practice: keeps the work alive
}
