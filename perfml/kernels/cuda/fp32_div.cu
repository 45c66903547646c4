// FP32 division throughput (seed 001 Table 1, "32-bit FP Complex": div, div.ftz,
// div.approx, div.approx.ftz). There is no divide instruction: every form is a sequence
// around MUFU.RCP. The divisor is 1 at run time, so values never reach denormals and the
// IEEE div.rn never leaves its inline fast path (FCHK passes). Two chains divide each
// other (x = x / y; y = y / x), all values 1 at run time, so ptxas cannot hoist the
// reciprocal of a loop-invariant divisor out of the loop.
#ifndef OP
#define OP 0  // 0: div.approx.ftz.f32, 1: div.full.ftz.f32, 2: div.rn.f32
#endif
#ifndef ITERS
#define ITERS 128
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 64
#endif

extern "C" __global__ void fp32_div(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  float x[CHAINS];
  float y[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) {
    x[k] = 1.0f + (float)zero * (float)(threadIdx.x + k);  // 1 at run time
    y[k] = 1.0f + (float)zero * (float)k;                  // 1 at run time
  }
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
#if OP == 0
        if (i & 1) asm volatile("div.approx.ftz.f32 %0, %0, %1;" : "+f"(y[k]) : "f"(x[k]));
        else       asm volatile("div.approx.ftz.f32 %0, %0, %1;" : "+f"(x[k]) : "f"(y[k]));
#elif OP == 1
        if (i & 1) asm volatile("div.full.ftz.f32 %0, %0, %1;" : "+f"(y[k]) : "f"(x[k]));
        else       asm volatile("div.full.ftz.f32 %0, %0, %1;" : "+f"(x[k]) : "f"(y[k]));
#else
        if (i & 1) asm volatile("div.rn.f32 %0, %0, %1;" : "+f"(y[k]) : "f"(x[k]));
        else       asm volatile("div.rn.f32 %0, %0, %1;" : "+f"(x[k]) : "f"(y[k]));
#endif
      }
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k] + y[k];
  if (acc == -1.0f) out[gid] = acc;  // never true: keeps the work alive
}
