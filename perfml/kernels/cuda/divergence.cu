// Thread divergence (seed 001 Table 2, "SM scheduler: Thread divergence"; seed 000
// F_Divergence). The lanes of a warp form groups of GROUP_SIZE consecutive lanes; group g
// runs its FFMA chain under `if (lane / GROUP_SIZE == p)` for p = 0..31, so a warp
// serialises 32 / GROUP_SIZE paths while every thread does the same useful work
// (WORK FFMAs per trip). GROUP_SIZE = 32: no divergence; 1: 32-way divergence.
#ifndef GROUP_SIZE
#define GROUP_SIZE 4
#endif
#ifndef WORK
#define WORK 32
#endif
#ifndef REPS
#define REPS 64
#endif

// Path P: the PTX comment carries P as an immediate, so the 32 otherwise identical
// guarded bodies cannot be merged into one unconditional body by the compiler.
template <int P>
__device__ __forceinline__ void path(float& x, float b, float c, int group) {
  if (group == P) {
#pragma unroll
    for (int i = 0; i < WORK; ++i)
      asm volatile("fma.rn.f32 %0, %0, %1, %2; // path %3" : "+f"(x) : "f"(b), "f"(c), "n"(P));
  }
}
template <int P>
struct Paths {
  static __device__ __forceinline__ void run(float& x, float b, float c, int group) {
    Paths<P - 1>::run(x, b, c, group);
    path<P - 1>(x, b, c, group);
  }
};
template <>
struct Paths<0> {
  static __device__ __forceinline__ void run(float&, float, float, int) {}
};

extern "C" __global__ void divergence(float* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const int group = (threadIdx.x & 31) / GROUP_SIZE;
  const float b = 1.0f + (float)zero;
  const float c = 0.5f * (float)zero;
  float x = (float)threadIdx.x;
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
    Paths<32>::run(x, b, c, group);
  }
  if (x == -1.0f) out[gid] = x;  // never true: keeps the work alive
}
