// Peak packed half-precision fma throughput: fma.rn.f16x2 (two FP16 fmas per
// instruction), available from sm_53; HFMA2 in SASS (ptxas also issues some as
// HFMA2.MMA, the same operation on the other FMA pipe).
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void fp16x2_fma(unsigned* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  // packed halves: b = (1.0, 1.0), c = (0.0, 0.0) built from the run-time zero
  const unsigned b = 0x3c003c00u + (unsigned)zero;
  const unsigned c = (unsigned)zero;
  unsigned x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = 0x3c003c00u + ((threadIdx.x + k) & 0xff);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
        asm volatile("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x[k]) : "r"(b), "r"(c));
      }
    }
  }
  unsigned acc = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc ^= x[k];
  if (acc == 0xffffffffu) out[gid] = acc;  // never true in practice: keeps the work alive
}
