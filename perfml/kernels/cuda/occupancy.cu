// Device occupancy (seed 001 Table 2, "Streaming Multi-processor: Device occupancy";
// seed 000 THROUGHPUT/OCCUPANCY). The sweep sets the active warps per SM (one block of
// WARPS warps per SM) and the share of active SMs (SM_PCT); both are launch parameters,
// the code does not change. OP 0: one FFMA chain per thread (latency-bound at low
// occupancy); OP 1: a DRAM stream like the `dram` family (bandwidth vs occupancy).
#ifndef OP
#define OP 0
#endif
#ifndef ITERS
#define ITERS 1024
#endif
#ifndef REPS
#define REPS 16
#endif

extern "C" __global__ void occupancy(unsigned* buf, unsigned* out, int zero) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
#if OP == 0
  const float b = 1.0f + (float)zero;
  const float c = 0.5f * (float)zero;
  float x = (float)threadIdx.x;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i)
      asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(b), "f"(c));
  }
  if (x == -1.0f) out[tid] = 1u;  // never true: keeps the work alive
#else
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = tid >> 5;
  const unsigned warps = (gridDim.x * blockDim.x) >> 5;
  unsigned* p = buf + (size_t)warp * (ITERS * 32) + lane;
  asm("mov.b64 %0, %0;" : "+l"(p));  // opaque base: unrolled offsets stay immediates
  const size_t step = (size_t)warps * (ITERS * 32);
  unsigned v = tid + (unsigned)zero;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i)
      asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p + i * 32) : "memory");
    p += step;
  }
  if (v == 0xffffffffu) out[tid] = v;  // never true: keeps the loads alive
#endif
}
