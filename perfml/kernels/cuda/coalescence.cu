// Global memory coalescence (seed 001 Table 2, "DRAM: Coalescence", Fig. 2). Threads
// form groups of TH_GROUP_SIZE consecutive lanes; a group reads consecutive words of
// its own 128-byte line, so one warp-wide load touches 32 / TH_GROUP_SIZE lines
// (TH_GROUP_SIZE = 32: fully coalesced; 1: one line per thread). Loads are
// ld.volatile (L1 bypassed, kept although dead); every line is read once per launch.
#ifndef TH_GROUP_SIZE
#define TH_GROUP_SIZE 32
#endif
#ifndef ITERS
#define ITERS 128
#endif
#ifndef REPS
#define REPS 2
#endif

#define LINES_PER_WARP (32 / TH_GROUP_SIZE)

extern "C" __global__ void coalescence(unsigned* buf, unsigned* out, int zero) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = tid >> 5;
  const unsigned warps = (gridDim.x * blockDim.x) >> 5;
  // warp chunk: ITERS steps x LINES_PER_WARP lines x 32 words
  unsigned* p = buf + (size_t)warp * (ITERS * LINES_PER_WARP * 32)
                + (lane / TH_GROUP_SIZE) * 32 + (lane % TH_GROUP_SIZE);
  asm("mov.b64 %0, %0;" : "+l"(p));  // opaque base: unrolled offsets stay immediates
  const size_t step = (size_t)warps * (ITERS * LINES_PER_WARP * 32);
  unsigned v = tid + (unsigned)zero;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p + i * (LINES_PER_WARP * 32)) : "memory");
    }
    p += step;
  }
  if (v == 0xffffffffu) out[tid] = v;  // never true: keeps the loads alive
}
