// L2 load / store throughput (seed 001 Table 1, "L2": load, store; Section 3.1).
// Warp w repeatedly accesses the same ITERS lines of 128 bytes (coalesced), its slot
// w % L2_SLOTS of a footprint of L2_SLOTS x ITERS x 128 bytes (1 MiB by default) that
// fits in the L2 of every target board. Loads are ld.volatile (LDG.E.STRONG.SYS: they
// bypass L1 and are served by L2 after the first trip); stores are st.global.cg.
#ifndef OP
#define OP 0  // 0: load, 1: store
#endif
#ifndef ITERS
#define ITERS 1024
#endif
#ifndef REPS
#define REPS 16
#endif
#ifndef L2_SLOTS
#define L2_SLOTS 8
#endif

extern "C" __global__ void l2_cache(unsigned* buf, unsigned* out, int zero) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned slot = (tid >> 5) % L2_SLOTS;
  unsigned* p = buf + (size_t)slot * (ITERS * 32) + lane;
  asm("mov.b64 %0, %0;" : "+l"(p));  // opaque base: unrolled offsets stay immediates
  unsigned v = tid + (unsigned)zero;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#if OP == 0
      asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p + i * 32) : "memory");
#else
      asm volatile("st.global.cg.u32 [%0], %1;" :: "l"(p + i * 32), "r"(v) : "memory");
#endif
    }
  }
  if (v == 0xffffffffu) out[tid] = v;  // never true: keeps the loads alive
}
