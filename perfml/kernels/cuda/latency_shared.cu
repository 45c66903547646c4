// Shared memory latency by pointer chasing (seed 000 Section III, property P1).
// One thread builds a ring of shared-memory addresses (stride STRIDE_WORDS) and follows
// it: HOPS x REPS dependent ld.shared, timed with clock64().
#ifndef SMEM_WORDS
#define SMEM_WORDS 4096
#endif
#ifndef STRIDE_WORDS
#define STRIDE_WORDS 33
#endif
#ifndef HOPS
#define HOPS 512
#endif
#ifndef REPS
#define REPS 32
#endif

extern "C" __global__ void latency_shared(long long* cycles, int* out, int zero) {
  __shared__ unsigned ring[SMEM_WORDS];
  if (threadIdx.x != 0) return;
  const unsigned base = (unsigned)__cvta_generic_to_shared(ring);
#pragma unroll 1
  for (int i = 0; i < SMEM_WORDS; ++i) ring[i] = base + 4u * ((i + STRIDE_WORDS) % SMEM_WORDS);
  unsigned p = base + (unsigned)zero;
  const long long t0 = clock64();
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < HOPS; ++i) {
      asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory");
    }
  }
  const long long t1 = clock64();
  cycles[0] = t1 - t0;      // cycles for HOPS*REPS dependent loads
  out[0] = (int)(p == 1u);  // never 1: shared addresses are word aligned
}
