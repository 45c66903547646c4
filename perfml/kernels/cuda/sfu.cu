// Special-function-unit throughput (seed 001 Table 1, "32-bit FP Transcendental op.":
// sin, cos, exp, rsqrt, rcp, log). The .approx.ftz PTX forms map to one MUFU
// instruction each, except sin/cos, which first scale the argument by 1/(2 pi)
// (FMUL.RZ) because MUFU.SIN/COS take revolutions on sm_70+. rcp alternates the sign
// (free operand modifier) so that ptxas cannot cancel rcp(rcp(x)).
#ifndef OP
#define OP 2  // 0 sin, 1 cos, 2 ex2, 3 lg2, 4 rsqrt, 5 rcp (all .approx.ftz.f32)
#endif
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 32
#endif

extern "C" __global__ void sfu(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  float x[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) x[k] = 0.5f + (float)(threadIdx.x + k + zero) * 1e-3f;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
#if OP == 0
        asm volatile("sin.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
#elif OP == 1
        asm volatile("cos.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
#elif OP == 2
        asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
#elif OP == 3
        asm volatile("lg2.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
#elif OP == 4
        asm volatile("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x[k]));
#else
        // rcp(rcp(x)) would be folded to x by ptxas; the negation rides free on the
        // MUFU operand (MUFU.RCP d, -s) and makes consecutive steps not cancel.
        asm volatile("{.reg .f32 t; neg.f32 t, %0; rcp.approx.ftz.f32 %0, t;}" : "+f"(x[k]));
#endif
      }
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc += x[k];
  if (acc == -1.0f) out[gid] = acc;  // never true (NaN/inf compare false): keeps work alive
}
