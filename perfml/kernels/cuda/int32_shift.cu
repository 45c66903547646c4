// Peak 32-bit shift throughput (seed 001 Table 1, "32-bit Integer Shift": shl, shr).
// The shift amount is a run-time value (zero + 5), so ptxas emits the funnel shifter
// SHF.L.U32 / SHF.R.U32.HI instead of folding a constant shift into IMAD.SHL.
#ifndef OP
#define OP 0  // 0: shl.b32, 1: shr.u32
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

extern "C" __global__ void int32_shift(unsigned* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned s = (unsigned)zero + 5u;  // 5 at run time
  unsigned x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = threadIdx.x * 2654435761u + k;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
#if OP == 0
        asm volatile("shl.b32 %0, %0, %1;" : "+r"(x[k]) : "r"(s));
#else
        asm volatile("shr.u32 %0, %0, %1;" : "+r"(x[k]) : "r"(s));
#endif
      }
    }
  }
  unsigned acc = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc ^= x[k];
  if (acc == 0xffffffffu) out[gid] = acc;  // never true in practice: keeps the work alive
}
