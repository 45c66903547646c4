// Global memory latency by pointer chasing (seed 000 Section III, property P1: "the
// real latency of memory accesses for each memory level"): L1, L2 and DRAM variants.
// One thread follows a ring of CHASE_ELEMS / STRIDE_ELEMS pointers (in random order:
// init = "chase_random"); every load depends on the previous one. The host fills `chain`
// with byte offsets; the kernel first walks the ring once turning offsets into addresses (also warming the
// caches when WARM = 1), then times HOPS x REPS dependent loads with clock64().
// CACHE 0: ld.global.ca (L1-cached), 1: ld.global.cg (L2 only).
#ifndef CHASE_ELEMS
#define CHASE_ELEMS 2048
#endif
#ifndef STRIDE_ELEMS
#define STRIDE_ELEMS 16
#endif
#ifndef CACHE
#define CACHE 0
#endif
#ifndef WARM
#define WARM 1
#endif
#ifndef HOPS
#define HOPS 512
#endif
#ifndef REPS
#define REPS 32
#endif

extern "C" __global__ void latency_global(unsigned long long* chain, long long* cycles, int* out, int zero) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const unsigned long long base = (unsigned long long)chain;
  // 1. offsets -> addresses along the ring (one walk). The backend launches a kernel
  // several times on the same buffers (validation, warm-up, timed repetitions), so the
  // walk must be idempotent: an element already holding an address (>= base; offsets
  // are < CHASE_ELEMS * 8 bytes, far below any device address) is read back as its
  // offset. Without this the second launch added base twice and faulted (seen on an
  // H100: CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the context for every later kernel).
  const unsigned long long span = (unsigned long long)CHASE_ELEMS * sizeof(unsigned long long);
  unsigned long long off = 0;
  const int ring = CHASE_ELEMS / STRIDE_ELEMS;
#pragma unroll 1
  for (int h = 0; h < ring; ++h) {
    unsigned long long* q = (unsigned long long*)(base + off);
    const unsigned long long stored = *q;
    const unsigned long long next = stored >= span ? stored - base : stored;
    *q = base + next;
    off = next;
  }
  __threadfence_block();
  unsigned long long p = base + (unsigned long long)zero;
#if WARM
#pragma unroll 1
  for (int h = 0; h < ring; ++h) {
#if CACHE == 0
    asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory");
#else
    asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
#endif
  }
#endif
  // 2. timed chase
  const long long t0 = clock64();
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < HOPS; ++i) {
#if CACHE == 0
      asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory");
#else
      asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
#endif
    }
  }
  const long long t1 = clock64();
  cycles[0] = t1 - t0;      // cycles for HOPS*REPS dependent loads
  out[0] = (int)(p == 0ull);  // 0 unless the ring was broken
}
