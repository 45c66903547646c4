// Shared memory load / store throughput (seed 001 Table 1, "L1/Shared mem.": load,
// store). Each warp owns SMEM_ROWS rows of 32 words; lane l accesses word l of a row
// (no bank conflicts), rows cycle through the unrolled loop with immediate offsets.
// Accesses are volatile so ptxas neither drops dead loads nor merges repeated stores.
#ifndef OP
#define OP 0  // 0: ld.shared, 1: st.shared
#endif
#ifndef ITERS
#define ITERS 1024
#endif
#ifndef REPS
#define REPS 64
#endif
#ifndef SMEM_ROWS
#define SMEM_ROWS 8
#endif
#ifndef TPB
#define TPB 256
#endif

extern "C" __global__ void __launch_bounds__(TPB) shared_mem(unsigned* out, int zero) {
  __shared__ unsigned tile[(TPB / 32) * SMEM_ROWS * 32];
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  unsigned v = tid + (unsigned)zero;
  for (int j = threadIdx.x; j < (TPB / 32) * SMEM_ROWS * 32; j += blockDim.x) tile[j] = (unsigned)zero;
  __syncthreads();
  const unsigned base =
      (unsigned)__cvta_generic_to_shared(tile + warp * (SMEM_ROWS * 32) + lane);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#if OP == 0
      asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + (i % SMEM_ROWS) * 128) : "memory");
#else
      asm volatile("st.volatile.shared.u32 [%0], %1;" :: "r"(base + (i % SMEM_ROWS) * 128), "r"(v) : "memory");
#endif
    }
  }
  if (v == 0xffffffffu) out[tid] = v;  // never true: keeps the loads alive
}
