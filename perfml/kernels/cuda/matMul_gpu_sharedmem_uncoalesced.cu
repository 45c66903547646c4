// Tiled matrix multiplication through shared memory with uncoalesced global loads (app
// matMul_gpu_sharedmem_uncoalesced, "MMSU"; seed 003 optimisation #3). Thread x indexes
// rows, so the TILE x TILE tiles are loaded (and P stored) with a stride of N words
// between consecutive lanes.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matMul_gpu_sharedmem_uncoalesced(float* Pd, const float* Md, const float* Nd, int N) {
  __shared__ float Ms[TILE][TILE + 1];
  __shared__ float Ns[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.x * TILE + tx;
  const int col = blockIdx.y * TILE + ty;
  float p = 0.0f;
  for (int m = 0; m < (N + TILE - 1) / TILE; ++m) {
    const int kc = m * TILE + ty;  // column of M read by this thread
    const int kr = m * TILE + tx;  // row of N read by this thread
    Ms[tx][ty] = (row < N && kc < N) ? Md[(size_t)row * N + kc] : 0.0f;
    Ns[tx][ty] = (kr < N && col < N) ? Nd[(size_t)kr * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) p += Ms[tx][k] * Ns[k][ty];
    __syncthreads();
  }
  if (row < N && col < N) Pd[(size_t)row * N + col] = p;
}
