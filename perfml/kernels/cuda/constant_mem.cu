// Constant memory read throughput (seed 001 Table 1, "Constant mem.": load).
// CHAINS chains each add CONST_WORDS/CHAINS distinct __constant__ words per loop trip;
// the word offsets are template-recursion immediates, the adds are inline PTX
// (ld.const + add.rn.f32) so nothing is re-associated or hoisted. On sm_75/sm_80 every
// add reads its word directly as an operand (FADD d, a, c[0x3][off]); on sm_90 ptxas
// loads pairs of words into uniform registers (ULDC.64) and adds them (FADD d, a, URn).
// The __constant__ array is zero-initialised at module load; no host data is needed.
#ifndef CONST_WORDS
#define CONST_WORDS 1024
#endif
#ifndef CHAINS
#define CHAINS 2
#endif
#ifndef REPS
#define REPS 64
#endif

__constant__ float cwords[CONST_WORDS];

template <int I>
__device__ __forceinline__ void cadd(float& acc) {
  asm volatile("{.reg .f32 t; ld.const.f32 t, [cwords+%1]; add.rn.f32 %0, %0, t;}"
               : "+f"(acc) : "n"(I * 4));
}
// binary template recursion: depth log2(N), N steps with compile-time offsets B..B+N-1
template <int B, int N>
struct ConstSeq {
  static __device__ __forceinline__ void run(float& acc) {
    ConstSeq<B, N / 2>::run(acc);
    ConstSeq<B + N / 2, N - N / 2>::run(acc);
  }
};
template <int B>
struct ConstSeq<B, 1> {
  static __device__ __forceinline__ void run(float& acc) { cadd<B>(acc); }
};
template <int K>
struct Chains {  // chain K adds words [K*W, (K+1)*W)
  static __device__ __forceinline__ void run(float* acc) {
    Chains<K - 1>::run(acc);
    ConstSeq<(K - 1) * (CONST_WORDS / CHAINS), CONST_WORDS / CHAINS>::run(acc[K - 1]);
  }
};
template <>
struct Chains<0> {
  static __device__ __forceinline__ void run(float*) {}
};

extern "C" __global__ void constant_mem(float* out, int zero) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc[k] = (float)(tid + k + zero);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) Chains<CHAINS>::run(acc);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) s += acc[k];
  if (s == -1.0f) out[tid] = s;  // never true: keeps the work alive
}
