// Loop unrolling (seed 001 Table 2, "ALU: Loop unrolling"): the same TOTAL x REPS FFMAs
// (CHAINS chains) run in a loop unrolled UNROLL times, so the share of loop overhead
// (counter, compare, branch) falls as UNROLL grows; purity of the loop body rises with it.
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef TOTAL
#define TOTAL 65536
#endif

#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_PRAGMA(n) DO_PRAGMA(unroll n)

extern "C" __global__ void unrolling(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float b = 1.0f + (float)zero;
  const float c = 0.5f * (float)zero;
  float x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = (float)(threadIdx.x + k);
UNROLL_PRAGMA(UNROLL)
  for (int i = 0; i < TOTAL; ++i) {
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)
      asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[k]) : "f"(b), "f"(c));
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k];
  if (acc == -1.0f) out[gid] = acc;  // never true: keeps the work alive
}
