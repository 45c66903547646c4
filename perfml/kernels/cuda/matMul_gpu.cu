// Matrix multiplication, global memory only, coalesced (app matMul_gpu, "MMGC"; seed 003
// Section V-A, optimisation #2). Thread x of a block walks the columns: the N loads and
// the P store of a warp are consecutive words; the M load is a broadcast.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matMul_gpu(float* Pd, const float* Md, const float* Nd, int N) {
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  if (row >= N || col >= N) return;
  float p = 0.0f;
  for (int k = 0; k < N; ++k) p += Md[(size_t)row * N + k] * Nd[(size_t)k * N + col];
  Pd[(size_t)row * N + col] = p;
}
