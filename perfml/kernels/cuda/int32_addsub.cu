// Peak 32-bit integer add/sub throughput (seed 001 Table 1, "32-bit Integer Simple").
// On sm_70+ there is no two-input integer add: add.s32/sub.s32 become IADD3 with RZ as
// third input (or IMAD.IADD / VIADD when ptxas balances pipes). CHAINS independent
// chains; every add uses the chain's own previous value and a run-time operand, so ptxas
// cannot merge two adds of a chain into one IADD3 (x + b + b would need b+b first, and
// b is different per step: b, then the chain value itself).
#ifndef OP
#define OP 0  // 0: add.s32, 1: sub.s32
#endif
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void int32_addsub(int* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int x[CHAINS];
  int y[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) {
    x[k] = threadIdx.x + k;
    y[k] = zero + k + 1;
  }
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
        // alternate the destination so each add depends on the previous result:
        // x = x op y ; y = y op x  (Fibonacci-like, nothing to re-associate)
#if OP == 0
        if (i & 1) asm volatile("add.s32 %0, %0, %1;" : "+r"(y[k]) : "r"(x[k]));
        else       asm volatile("add.s32 %0, %0, %1;" : "+r"(x[k]) : "r"(y[k]));
#else
        if (i & 1) asm volatile("sub.s32 %0, %0, %1;" : "+r"(y[k]) : "r"(x[k]));
        else       asm volatile("sub.s32 %0, %0, %1;" : "+r"(x[k]) : "r"(y[k]));
#endif
      }
    }
  }
  int acc = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc ^= x[k] ^ y[k];
  if (acc == -1) out[gid] = acc;  // never true in practice: keeps the work alive
}
