// Peak throughput of 32-bit integer bit operations (seed 001 Table 1, "32-bit Integer
// Bit operations": clz, brev, bfi, bfe). Only brev has its own SASS instruction on
// sm_70+; clz is FLO + IADD3 (31 - position), bfe is SHF + SGXT and bfi a shift + LOP3,
// so those variants target the instruction sequence ptxas emits (see the sidecar).
// The field position and length of bfe/bfi are compile-time constants (BF_POS, BF_LEN).
#ifndef OP
#define OP 1  // 0: clz.b32, 1: brev.b32, 2: bfi.b32, 3: bfe.u32
#endif
#ifndef BF_POS
#define BF_POS 3
#endif
#ifndef BF_LEN
#define BF_LEN 17
#endif
#ifndef ITERS
#define ITERS 256
#endif
#ifndef CHAINS
#define CHAINS 4
#endif
#ifndef REPS
#define REPS 64
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

extern "C" __global__ void int32_bitops(unsigned* out, int zero) {
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x[CHAINS];
  unsigned y[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) {
    x[k] = threadIdx.x * 2654435761u + k;
    y[k] = (unsigned)zero + 0x9e3779b9u * (k + 1);
  }
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) {
#if OP == 0
        asm volatile("clz.b32 %0, %0;" : "+r"(x[k]));
#elif OP == 1
        asm volatile("brev.b32 %0, %0;" : "+r"(x[k]));
#elif OP == 2
        // x and y alternate as destination so every bfi depends on the previous one
        if (i & 1) asm volatile("bfi.b32 %0, %1, %0, " STR(BF_POS) ", " STR(BF_LEN) ";" : "+r"(y[k]) : "r"(x[k]));
        else       asm volatile("bfi.b32 %0, %1, %0, " STR(BF_POS) ", " STR(BF_LEN) ";" : "+r"(x[k]) : "r"(y[k]));
#else
        asm volatile("bfe.u32 %0, %0, " STR(BF_POS) ", " STR(BF_LEN) ";" : "+r"(x[k]));
#endif
      }
    }
  }
  unsigned acc = 0;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) acc ^= x[k] ^ y[k];
  if (acc == 0xffffffffu) out[gid] = acc;  // never true in practice: keeps the work alive
}
