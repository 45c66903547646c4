// Matrix sum C = A + B, uncoalesced (app matrix_sum_normal, "MAU"): thread x indexes
// rows, so consecutive lanes touch words N apart. TILE x TILE threads per block,
// ceil(N/TILE)^2 blocks.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matrix_sum_normal(float* C, const float* A, const float* B, int N) {
  const int row = blockIdx.x * TILE + threadIdx.x;
  const int col = blockIdx.y * TILE + threadIdx.y;
  if (row >= N || col >= N) return;
  const size_t idx = (size_t)row * N + col;
  C[idx] = A[idx] + B[idx];
}
