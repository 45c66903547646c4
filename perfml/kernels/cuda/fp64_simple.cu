// Peak FP64 add / fma throughput (seed 001 Table 1, "64-bit FP Simple": add, sub).
#ifndef OP
#define OP 0  // 0: add.rn.f64, 1: fma.rn.f64
#endif
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 16
#endif

extern "C" __global__ void fp64_simple(double* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const double b = 1.0 + (double)zero;  // 1 at run time
  const double c = 0.5 * (double)zero;  // 0 at run time
  double x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = (double)(threadIdx.x + k);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
#if OP == 0
        asm volatile("add.rn.f64 %0, %0, %1;" : "+d"(x[k]) : "d"(c));
#else
        asm volatile("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x[k]) : "d"(b), "d"(c));
#endif
      }
    }
  }
  double acc = 0.0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k];
  if (acc == -1.0) out[gid] = acc;  // never true: keeps the work alive
}
