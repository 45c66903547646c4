// Peak FP32 add / mul / fma throughput (seed 001 Table 1, "32-bit FP Simple").
// Each thread runs CHAINS independent dependency chains; the inner loop is fully
// unrolled so the timed loop body is ITERS*CHAINS inline-PTX instructions plus the
// loop counter. Operands derive from threadIdx and the runtime zero `zero`, so the
// compiler cannot fold them; the never-true store keeps the chains alive.
#ifndef OP
#define OP 2  // 0: add.rn.f32, 1: mul.rn.f32, 2: fma.rn.f32
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

extern "C" __global__ void fp32_simple(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float b = 1.0f + (float)zero;   // 1 at run time
  const float c = 0.5f * (float)zero;   // 0 at run time
  float x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = (float)(threadIdx.x + k);

#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
#if OP == 0
        asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x[k]) : "f"(c));
#elif OP == 1
        asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x[k]) : "f"(b));
#else
        asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[k]) : "f"(b), "f"(c));
#endif
      }
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k];
  if (acc == -1.0f) out[gid] = acc;  // never true: keeps the work alive
}
