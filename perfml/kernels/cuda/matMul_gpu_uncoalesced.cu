// Matrix multiplication, global memory only, uncoalesced (BSPGPU/gpuperfpredict app
// matMul_gpu_uncoalesced, "MMGU"; seed 003 Fig. 3, optimisation #1). Thread (x, y) of
// block (bx, by) computes P[j][i] with j = bx*TILE + x: consecutive lanes walk different
// rows of M and P (stride N), so neither the M loads nor the P store coalesce.
// Row-major N x N matrices; launch TILE x TILE threads, ceil(N/TILE)^2 blocks.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matMul_gpu_uncoalesced(float* Pd, const float* Md, const float* Nd, int N) {
  const int j = blockIdx.x * TILE + threadIdx.x;  // row of P and M
  const int i = blockIdx.y * TILE + threadIdx.y;  // column of P and N
  if (j >= N || i >= N) return;
  float p = 0.0f;
  for (int k = 0; k < N; ++k) p += Md[(size_t)j * N + k] * Nd[(size_t)k * N + i];
  Pd[(size_t)j * N + i] = p;
}
