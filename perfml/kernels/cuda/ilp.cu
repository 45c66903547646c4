// Instruction-level parallelism (seed 001 Table 2, "ALU: ILP"): CHAINS independent FFMA
// dependency chains per thread, interleaved, with few warps per SM (launch: one
// 128-thread block per SM, one warp per scheduler), so throughput grows with CHAINS
// until the pipeline is full. The work per loop trip is TOTAL FFMAs for every CHAINS
// (TOTAL = 840 is divisible by 1..8).
#ifndef CHAINS
#define CHAINS 1
#endif
#ifndef TOTAL
#define TOTAL 840
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void ilp(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float b = 1.0f + (float)zero;
  const float c = 0.5f * (float)zero;
  float x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = (float)(threadIdx.x + k);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < TOTAL / CHAINS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k)
        asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[k]) : "f"(b), "f"(c));
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k];
  if (acc == -1.0f) out[gid] = acc;  // never true: keeps the work alive
}
