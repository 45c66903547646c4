// Matrix sum C = A + B, coalesced (app matrix_sum_coalesced, "MAC"): thread x indexes
// columns, so a warp reads and writes consecutive words.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matrix_sum_coalesced(float* C, const float* A, const float* B, int N) {
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  if (row >= N || col >= N) return;
  const size_t idx = (size_t)row * N + col;
  C[idx] = A[idx] + B[idx];
}
