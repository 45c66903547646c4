// Memory access size (seed 001 Table 2, "DRAM: Access size"): copy one large array into
// another with BYTES-wide elements per thread (1, 2, 4, 8 or 16 bytes: u8, u16, u32,
// v2.u32, v4.u32). Warp w copies its own chunks of ITERS x 32 elements (coalesced),
// offsets are unrolled immediates; each trip moves to a fresh chunk. Plain (not
// read-only/.nc) loads: the array is read through L1/L2 like any global data.
#ifndef BYTES
#define BYTES 4
#endif
#ifndef ITERS
#define ITERS 256
#endif
#ifndef REPS
#define REPS 2
#endif

#if BYTES == 1
typedef unsigned char elem_t;
#elif BYTES == 2
typedef unsigned short elem_t;
#elif BYTES == 4
typedef unsigned int elem_t;
#elif BYTES == 8
typedef uint2 elem_t;
#elif BYTES == 16
typedef uint4 elem_t;
#else
#error "BYTES must be 1, 2, 4, 8 or 16"
#endif

extern "C" __global__ void access_size(const elem_t* src, elem_t* dst) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = tid >> 5;
  const unsigned warps = (gridDim.x * blockDim.x) >> 5;
  size_t off = (size_t)warp * (ITERS * 32) + lane;
  const size_t step = (size_t)warps * (ITERS * 32);
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
    size_t o = off;
    asm("mov.b64 %0, %0;" : "+l"(o));  // opaque offset: unrolled offsets stay immediates
    const elem_t* s = src + o;
    elem_t* d = dst + o;
#pragma unroll
    for (int i = 0; i < ITERS; ++i) d[i * 32] = s[i * 32];
    off += step;
  }
}
