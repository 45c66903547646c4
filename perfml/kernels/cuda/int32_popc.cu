// Peak population-count throughput (seed 001 Table 1, "32-bit Integer Pop-count").
// Each popc reads the previous result of its chain (values shrink quickly; that does
// not change the issue rate of POPC).
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void int32_popc(unsigned* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = threadIdx.x * 2654435761u + (unsigned)zero + k;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
        asm volatile("popc.b32 %0, %0;" : "+r"(x[k]));
      }
    }
  }
  unsigned acc = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc ^= x[k];
  if (acc == 0xffffffffu) out[gid] = acc;  // never true: keeps the work alive
}
