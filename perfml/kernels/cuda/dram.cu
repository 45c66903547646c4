// DRAM load / store throughput (seed 001 Table 1, "DRAM": load, store; Section 3.1).
// Warp w of the grid streams through its own chunks of ITERS lines of 128 bytes
// (lane l reads word l of each line: fully coalesced); chunk offsets are compile-time
// immediates of the unrolled loop. Every line is touched exactly once per launch, so no
// access can hit L1 or L2 (the buffer is REPS x ITERS x 4 bytes per thread, far larger
// than any L2); loads are ld.volatile (LDG.E.STRONG.SYS: not cached in L1, not
// removed by ptxas although the loaded value is dead).
#ifndef OP
#define OP 0  // 0: load, 1: store
#endif
#ifndef ITERS
#define ITERS 1024
#endif
#ifndef REPS
#define REPS 2
#endif

extern "C" __global__ void dram(unsigned* buf, unsigned* out, int zero) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
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
    for (int i = 0; i < ITERS; ++i) {
#if OP == 0
      asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p + i * 32) : "memory");
#else
      asm volatile("st.global.u32 [%0], %1;" :: "l"(p + i * 32), "r"(v) : "memory");
#endif
    }
    p += step;
  }
  if (v == 0xffffffffu) out[tid] = v;  // never true (buffer holds zeros / tid): keeps loads alive
}
